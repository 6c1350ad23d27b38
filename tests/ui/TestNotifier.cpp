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
        QCOMPARE(done.summary, QStringLiteral("Safe to unplug")); // the headline, on a stick
        QVERIFY(done.body.contains(QStringLiteral("1.0 MiB")));
        const NotificationText fixed = notificationFor(QStringLiteral("a → home"), true, false, 1 << 20, false);
        QVERIFY(!fixed.summary.contains(QStringLiteral("unplug")) && !fixed.body.contains(QStringLiteral("unplug")));
        // With the job's summary line: the time and the average rate too.
        const NotificationText detailed =
            notificationFor(QStringLiteral("a.iso → STICK"), true, false, 1 << 20, true,
                            QStringLiteral("1.0 MiB in 1 file on the device in 3 s (341.3 KiB/s)"));
        QVERIFY(detailed.body.contains(QStringLiteral("in 3 s (341.3 KiB/s)")));
        const NotificationText cancelled = notificationFor(QStringLiteral("a"), false, true, 0, true);
        QVERIFY(cancelled.summary.contains(QStringLiteral("cancelled")));
        QVERIFY(cancelled.body.contains(QStringLiteral("nothing left to write")));
        const NotificationText failed = notificationFor(QStringLiteral("a"), false, false, 0, true);
        QVERIFY(failed.summary.contains(QStringLiteral("problems")));
    }
};

QTEST_GUILESS_MAIN(TestNotifier)
#include "TestNotifier.moc"
