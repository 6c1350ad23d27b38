// SPDX-License-Identifier: GPL-2.0-or-later
#include "ConflictMemory.h"

#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestConflictMemory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void applyToAllIsPerJobAndPerKind()
    {
        ConflictMemory memory;
        QVERIFY(!memory.conflictAnswer(1));
        memory.rememberConflict(1, 2);
        QCOMPARE(*memory.conflictAnswer(1), 2);
        QVERIFY(!memory.conflictAnswer(2)); // another job asks again
        QVERIFY(!memory.errorAnswer(1));    // errors are a separate question
        memory.rememberError(1, 1);
        memory.forget(1);
        QVERIFY(!memory.conflictAnswer(1));
        QVERIFY(!memory.errorAnswer(1));
    }
};

QTEST_GUILESS_MAIN(TestConflictMemory)
#include "TestConflictMemory.moc"
