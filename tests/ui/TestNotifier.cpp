// SPDX-License-Identifier: GPL-2.0-or-later
#include "Notifier.h"

#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestNotifier : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void textSaysWhatHappened()
    {
        const NotificationText done = notificationFor(QStringLiteral("a.iso → STICK"), true, false, 1 << 20, true);
        QVERIFY(done.body.contains(QStringLiteral("Safe to unplug")));
        const NotificationText fixed = notificationFor(QStringLiteral("a → home"), true, false, 1 << 20, false);
        QVERIFY(!fixed.body.contains(QStringLiteral("unplug")));
        const NotificationText cancelled = notificationFor(QStringLiteral("a"), false, true, 0, true);
        QVERIFY(cancelled.summary.contains(QStringLiteral("cancelled")));
        QVERIFY(cancelled.body.contains(QStringLiteral("nothing left to write")));
        const NotificationText failed = notificationFor(QStringLiteral("a"), false, false, 0, true);
        QVERIFY(failed.summary.contains(QStringLiteral("problems")));
    }
};

QTEST_GUILESS_MAIN(TestNotifier)
#include "TestNotifier.moc"
