// SPDX-License-Identifier: GPL-2.0-or-later
//
// What a screen reader finds in the window: every control it can reach has a name and a description (the
// description says what the control does, not its name again), and the charts say in words what they draw.
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "QueueView.h"
#include "SourceDropArea.h"
#include "TimeSeriesChart.h"
#include "WindowFixtures.h"

#include <QAccessible>
#include <QLocale>
#include <QScopeGuard>
#include <QAbstractButton>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace SaneCopy;
using sanecopy::JobState;

class TestAccessibility : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void everyControlHasANameAndADescription()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.sourceArea()->addSources({QFile::encodeName(dir.path())});
        Device stick = Test::stickAt(dir.path());
        w.destinationPicker()->setDevices({stick});
        // A copy running and one finished on a stick, so each kind of row button is there.
        w.queueView()->setEjectAvailable(true);
        w.model()->addJob(1, QStringLiteral("a → STICK"), dir.path(), dir.path(), QStringLiteral("sdb1"), true);
        w.model()->onFinished(1, true, false, 10, 1, 0);
        w.model()->addJob(2, QStringLiteral("b → STICK"), dir.path(), dir.path(), QStringLiteral("sdb1"), true);
        JobProgress p;
        p.jobId = 2;
        p.state = int(JobState::Running);
        p.totalBytes = 100;
        p.durableBytes = 10;
        w.model()->onProgress(p);
        // A row added to the shown list is shown by its layout once events run.
        QTRY_VERIFY(w.queueView()->rowFor(1) && w.queueView()->rowFor(1)->isVisible() && w.queueView()->rowFor(2) &&
                    w.queueView()->rowFor(2)->isVisible());

        int checked = 0;
        QStringList missing, seen;
        for (QWidget *c : w.findChildren<QWidget *>()) {
            if (!c->isVisibleTo(&w) || !(c->focusPolicy() & Qt::TabFocus) || !c->isEnabled() ||
                c->inherits("QScrollBar") || c->inherits("QMenu"))
                continue;
            QAccessibleInterface *a = QAccessible::queryAccessibleInterface(c);
            QVERIFY(a);
            const QString name = a->text(QAccessible::Name);
            const QString description = a->text(QAccessible::Description);
            if (name.isEmpty() || description.isEmpty() || description == name)
                missing << QStringLiteral("%1 (%2): name \"%3\", description \"%4\"")
                               .arg(QString::fromUtf8(c->metaObject()->className()), c->objectName(), name,
                                    description);
            ++checked;
            seen << name;
        }
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QLatin1Char('\n'))));
        QVERIFY2(checked >= 15, qPrintable(seen.join(QLatin1String(", ")))); // the top's 11, a row's buttons, ...
    }

    void theChartsSayWhatTheyDraw()
    {
        QLocale::setDefault(QLocale::c()); // the numbers as written below, whatever the machine's LANG
        auto restore = qScopeGuard([] { QLocale::setDefault(QLocale::system()); });
        TimeSeriesChart chart(QStringLiteral("Throughput"), QStringLiteral("MiB/s"), 1024.0 * 1024.0);
        const int device = chart.addSeries(QStringLiteral("on the device"), Qt::green);
        const int cache = chart.addSeries(QStringLiteral("into the page cache"), Qt::red);
        QAccessibleInterface *a = QAccessible::queryAccessibleInterface(&chart);
        QVERIFY(a);
        QCOMPARE(a->role(), QAccessible::Chart);
        QCOMPARE(a->text(QAccessible::Name), QStringLiteral("Throughput"));
        chart.addSample(device, 1.0, 8.5 * 1024 * 1024);
        chart.addSample(cache, 1.0, 16 * 1024 * 1024);
        QCOMPARE(a->text(QAccessible::Description),
                 QStringLiteral("Throughput: on the device 8.5 MiB/s, into the page cache 16.0 MiB/s"));
        chart.addSample(device, 2.0, 0);
        QVERIFY(a->text(QAccessible::Description).startsWith(QStringLiteral("Throughput: on the device 0.0 MiB/s")));
    }
};

QTEST_MAIN(TestAccessibility)
#include "TestAccessibility.moc"
