// SPDX-License-Identifier: GPL-2.0-or-later
// JobModel fed as the engine feeds it, through the same slots, without an engine.
#include "JobModel.h"
#include "SystemMonitor.h"
#include "TimeSeriesChart.h"
#include "Translations.h"
#include "WindowFixtures.h"
#include "job_control.h"

#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;
using sanecopy::JobState;

class TestJobModel : public QObject {
    Q_OBJECT
private:
    static JobProgress progress(quint64 id, JobState state, qint64 total, qint64 durable, qint64 written,
                                double rate = 0, double eta = -1)
    {
        return Test::progressOf(id, state, total, durable, written, rate, eta);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        loadTranslations(qApp, {QStringLiteral("en")}); // the English counts ("1 file"), as sanecopy loads them
    }

    void progressUpdatesTheRow()
    {
        JobModel model;
        model.addJob(7, QStringLiteral("movie.mkv → STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("/media/STICK"), QStringLiteral("sdb1"), true);
        QSignalSpy changed(&model, &JobModel::dataChanged);
        model.onProgress(progress(7, JobState::Running, 1000, 250, 400, 40e6, 12));
        QCOMPARE(changed.count(), 1);
        const QModelIndex i = model.index(0);
        QCOMPARE(i.data(JobModel::DurableFractionRole).toDouble(), 0.25);
        QCOMPARE(i.data(JobModel::WrittenFractionRole).toDouble(), 0.4);
        QCOMPARE(i.data(JobModel::RateRole).toDouble(), 40e6);
        const QString status = i.data(JobModel::StatusRole).toString();
        QVERIFY2(status.contains(QStringLiteral("38.1 MiB/s")), qPrintable(status)); // as sanecp says it
        QVERIFY2(status.contains(QStringLiteral("12 s")), qPrintable(status));
        JobProgress named = progress(7, JobState::Running, 1000, 250, 400, 40e6, 12);
        named.currentFile = QStringLiteral("/home/me/Videos/holiday.mkv");
        model.onProgress(named);
        const QString withName = i.data(JobModel::StatusRole).toString();
        QVERIFY2(withName.endsWith(QStringLiteral(" · holiday.mkv")), qPrintable(withName));
        QVERIFY(!i.data(JobModel::SafeToUnplugRole).toBool());
    }

    void aStalledShareSaysSoInsteadOfARate()
    {
        JobModel model;
        model.addJob(8, QStringLiteral("big.iso → photos on nas"), QStringLiteral("/mnt/nas"),
                     QStringLiteral("/mnt/nas"), QString(), false);
        JobProgress p = progress(8, JobState::Running, 1000 << 20, 300 << 20, 310 << 20);
        p.stalledSeconds = 12;
        p.share = true;
        model.onProgress(p);
        const QString status = model.index(0).data(JobModel::StatusRole).toString();
        QVERIFY2(status.startsWith(QStringLiteral("The share is not responding (12 s).")), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("300.0 MiB of 1,000.0 MiB on the share")), qPrintable(status));
        QVERIFY2(!status.contains(QStringLiteral("left")), qPrintable(status)); // no ETA made up
        // It answers again: the usual line is back.
        model.onProgress(progress(8, JobState::Running, 1000 << 20, 320 << 20, 330 << 20, 10e6, 68));
        QVERIFY(!model.index(0).data(JobModel::StatusRole).toString().contains(QStringLiteral("not responding")));
    }

    void aShareRowSaysOnTheShare()
    {
        // A NAS is no device to the user: the row says where the bytes are, running, paused and done.
        JobModel model;
        model.addJob(10, QStringLiteral("photos → photos on nas"), QStringLiteral("/mnt/nas"),
                     QStringLiteral("/mnt/nas"), QString(), false);
        JobProgress p = progress(10, JobState::Running, 1000 << 20, 300 << 20, 310 << 20, 10e6, 70);
        p.share = true;
        model.onProgress(p);
        const auto status = [&] { return model.index(0).data(JobModel::StatusRole).toString(); };
        QVERIFY2(status().startsWith(QStringLiteral("300.0 MiB of 1,000.0 MiB on the share")), qPrintable(status()));
        p.state = int(JobState::Paused);
        model.onProgress(p);
        QCOMPARE(status(), QStringLiteral("Paused. 300.0 MiB of 1,000.0 MiB on the share."));
        p.state = int(JobState::Running);
        p.durableBytes = p.writtenBytes = p.totalBytes;
        model.onProgress(p);
        model.onFileDone(10, QStringLiteral("/src/a.jpg"), QStringLiteral("/mnt/nas/a.jpg"));
        model.onFinished(10, true, false, 1000 << 20, 1, 0);
        QVERIFY2(status().startsWith(QStringLiteral("Done: 1,000.0 MiB in 1 file on the share")), qPrintable(status()));
        QVERIFY2(!status().contains(QStringLiteral("device")), qPrintable(status()));
        QVERIFY2(!status().contains(QStringLiteral("unplug")), qPrintable(status()));

        // A stick's row is as it was.
        model.addJob(11, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        model.onProgress(progress(11, JobState::Running, 1000, 250, 400, 40e6, 12));
        const QString stick = model.index(1).data(JobModel::StatusRole).toString();
        QVERIFY2(stick.contains(QStringLiteral(" on the device")), qPrintable(stick));
    }

    void theThroughputChartSaysWhereTheBytesAre()
    {
        // The chart's durable line is named after where the unfinished copies go, as their rows are.
        JobModel model;
        TimeSeriesChart throughput(QStringLiteral("Throughput"), QStringLiteral("MiB/s"), 1 << 20);
        TimeSeriesChart dirty(QStringLiteral("Dirty memory"), QStringLiteral("MiB"), 1 << 20);
        SystemMonitor monitor(&model, &throughput, &dirty);
        const auto named = [&] {
            monitor.sample();
            return throughput.seriesName(0);
        };
        QCOMPARE(named(), QStringLiteral("on the device"));
        model.addJob(20, QStringLiteral("photos → photos on nas"), QStringLiteral("/mnt/nas"),
                     QStringLiteral("/mnt/nas"), QString(), false);
        JobProgress share = progress(20, JobState::Running, 1000, 100, 200, 10e6, 70);
        share.share = true;
        model.onProgress(share);
        QVERIFY(model.index(0).data(JobModel::ShareRole).toBool());
        QCOMPARE(named(), QStringLiteral("on the share"));
        QVERIFY2(throughput.textEquivalent().contains(QStringLiteral("on the share")),
                 qPrintable(throughput.textEquivalent()));
        model.addJob(21, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        model.onProgress(progress(21, JobState::Running, 1000, 250, 400, 40e6, 12));
        QVERIFY(!model.index(1).data(JobModel::ShareRole).toBool());
        QCOMPARE(named(), QStringLiteral("on the devices and shares"));
        model.onFinished(20, true, false, 1000, 1, 0);
        QCOMPARE(named(), QStringLiteral("on the device"));
        model.onFinished(21, true, false, 1000, 1, 0);
        QCOMPARE(named(), QStringLiteral("on the device")); // nothing going on: the last name stays
    }

    void cancelOnAStalledShareSaysWhyItTakes()
    {
        JobModel model;
        model.addJob(9, QStringLiteral("big.iso → photos on nas"), QStringLiteral("/mnt/nas"),
                     QStringLiteral("/mnt/nas"), QString(), false);
        model.onProgress(progress(9, JobState::Running, 1000 << 20, 300 << 20, 310 << 20, 10e6, 70));
        model.onCancelAsked(9);
        QCOMPARE(model.index(0).data(JobModel::StatusRole).toString(), QStringLiteral("Cancelling…"));
        // The share stops answering: a hard mount keeps the copy in the kernel, and the row says so.
        JobProgress p = progress(9, JobState::Running, 1000 << 20, 300 << 20, 310 << 20);
        p.stalledSeconds = 15;
        p.share = true;
        model.onProgress(p);
        const QString status = model.index(0).data(JobModel::StatusRole).toString();
        QVERIFY2(status.startsWith(QStringLiteral("Cancelling: the share has not answered for 15 s")),
                 qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("hard NFS mount")), qPrintable(status));
        model.onFinished(9, false, true, 300 << 20, 0, 0);
        QVERIFY2(model.index(0).data(JobModel::StatusRole).toString().startsWith(QStringLiteral("Cancelled.")),
                 qPrintable(model.index(0).data(JobModel::StatusRole).toString()));
        model.onCancelAsked(9); // too late: nothing changes
        QVERIFY(model.index(0).data(JobModel::StatusRole).toString().startsWith(QStringLiteral("Cancelled.")));
    }

    void fullCountIsNotHundredPercentBeforeTheEnd_data()
    {
        QTest::addColumn<bool>("finished");
        QTest::addColumn<double>("fraction");
        QTest::newRow("all bytes durable, final sync pending") << false << 0.999;
        QTest::newRow("finished") << true << 1.0;
    }
    // regression: a bar at 100 % while the final fdatasync still runs is the lie SaneCopy exists to end
    void fullCountIsNotHundredPercentBeforeTheEnd()
    {
        QFETCH(bool, finished);
        QFETCH(double, fraction);
        JobModel model;
        model.addJob(1, QStringLiteral("a"), QStringLiteral("/d"), {}, {}, false);
        model.onProgress(progress(1, JobState::Running, 100, 100, 100));
        if (finished)
            model.onFinished(1, true, false, 100, 1, 0);
        QVERIFY(model.index(0).data(JobModel::OutcomeRole).toString().isEmpty()); // running or done: a bar
        QCOMPARE(model.index(0).data(JobModel::DurableFractionRole).toDouble(), fraction);
    }

    void finishedOnRemovableSaysSafeToUnplug()
    {
        JobModel model;
        model.addJob(3, QStringLiteral("x"), QStringLiteral("/media/S"), QStringLiteral("/media/S"),
                     QStringLiteral("sdc1"), true);
        model.onProgress(progress(3, JobState::Running, 10, 10, 10));
        model.onFinished(3, true, false, 10, 1, 0);
        const QModelIndex i = model.index(0);
        QVERIFY(i.data(JobModel::SafeToUnplugRole).toBool());
        QVERIFY(i.data(JobModel::CanEjectRole).toBool());
        QVERIFY(i.data(JobModel::StatusRole).toString().contains(QStringLiteral("Safe to unplug")));
    }

    void cancelledSaysNothingIsLeftToWrite()
    {
        JobModel model;
        model.addJob(4, QStringLiteral("x"), QStringLiteral("/d"), {}, {}, false);
        model.onFinished(4, false, true, 0, 0, 0);
        const QModelIndex i = model.index(0);
        QVERIFY(!i.data(JobModel::SafeToUnplugRole).toBool());
        QVERIFY(i.data(JobModel::StatusRole).toString().contains(QStringLiteral("nothing left to write")));
        QCOMPARE(JobState(i.data(JobModel::StateRole).toInt()), JobState::Cancelled);
        QCOMPARE(i.data(JobModel::OutcomeRole).toString(), QStringLiteral("Cancelled"));
    }

    void pulledStickSaysTheDeviceWasRemovedNeverSafeToUnplug()
    {
        JobModel model;
        model.addJob(7, QStringLiteral("big.iso → STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("/media/STICK"), QStringLiteral("sdb1"), true);
        JobProgress p;
        p.jobId = 7;
        p.state = int(JobState::Running);
        p.totalBytes = 100 << 20;
        p.durableBytes = 30 << 20;
        p.writtenBytes = 33 << 20;
        model.onProgress(p);
        model.onFailed(7, QStringLiteral("/src/big.iso"),
                       QStringLiteral("/media/STICK/big.iso: the device was removed before the copy finished"));
        model.onDeviceRemoved(7);
        model.onFinished(7, false, false, 30 << 20, 0, 1);
        const QModelIndex i = model.index(0);
        const QString status = i.data(JobModel::StatusRole).toString();
        QVERIFY2(status.contains(QStringLiteral("device was removed")), qPrintable(status));
        QVERIFY2(status.contains(QStringLiteral("30.0 MiB of 100.0 MiB")), qPrintable(status));
        QVERIFY2(!status.contains(QStringLiteral("Safe to unplug")), qPrintable(status));
        QVERIFY(!i.data(JobModel::SafeToUnplugRole).toBool());
        QVERIFY(!i.data(JobModel::CanEjectRole).toBool()); // there is nothing left to eject
        QCOMPARE(JobState(i.data(JobModel::StateRole).toInt()), JobState::Failed);
        QCOMPARE(i.data(JobModel::OutcomeRole).toString(), QStringLiteral("Device removed at 30 %"));
    }

    // A tree of many files lists the first kFilesListed by name and counts the rest; problems are all listed.
    void theResultListsManyFilesByCount()
    {
        JobModel model;
        model.addJob(5, QStringLiteral("tree → STICK"), QStringLiteral("/media/STICK"), {}, {}, true);
        const qint64 files = JobModel::kFilesListed + 2;
        for (qint64 n = 0; n < files; ++n) {
            const QString name = QStringLiteral("/f%1").arg(n);
            model.onFileDone(5, QStringLiteral("/home/me") + name, QStringLiteral("/media/STICK") + name);
        }
        model.onFailed(5, QStringLiteral("/home/me/x"), QStringLiteral("/home/me/x: Input/output error"));
        model.onFinished(5, false, false, 0, files, 1);
        const QStringList results = model.index(0).data(JobModel::ResultsRole).toStringList();
        QCOMPARE(results.size(), int(JobModel::kFilesListed) + 2);
        QCOMPARE(results.first(), QStringLiteral("Copied: /home/me/f0 → /media/STICK/f0"));
        QVERIFY(results.at(results.size() - 2).startsWith(QStringLiteral("Failed: ")));
        QCOMPARE(results.last(), QStringLiteral("… and 2 more files copied, not listed here"));
    }

    void theResultSaysWhatHappenedFileByFile()
    {
        JobModel model;
        model.addJob(3, QStringLiteral("photos → STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("/media/STICK"), QStringLiteral("sdb1"), true);
        model.setVerify(3, true);
        JobProgress p = progress(3, JobState::Running, 80 << 20, 80 << 20, 80 << 20);
        p.elapsedSeconds = 2;
        model.onProgress(p);
        model.onFileDone(3, QStringLiteral("/home/me/a.jpg"), QStringLiteral("/media/STICK/photos/a.jpg"));
        model.onFileDone(3, QStringLiteral("/home/me/b:c.jpg"), QStringLiteral("/media/STICK/photos/b_c.jpg"));
        model.onSkipped(3, QStringLiteral("/home/me/d.jpg"),
                        QStringLiteral("/home/me/d.jpg: already exists at the destination"));
        model.onFinished(3, true, false, 80 << 20, 2, 0);
        const QModelIndex i = model.index(0);
        const QStringList results = i.data(JobModel::ResultsRole).toStringList();
        QCOMPARE(results.size(), 3);
        QCOMPARE(results.at(0), QStringLiteral("Copied: /home/me/a.jpg → /media/STICK/photos/a.jpg"));
        QCOMPARE(results.at(1), QStringLiteral("Renamed: /home/me/b:c.jpg → /media/STICK/photos/b_c.jpg"));
        QVERIFY(results.at(2).startsWith(QStringLiteral("Skipped: ")));
        const QString summary = i.data(JobModel::SummaryRole).toString();
        QVERIFY2(summary.contains(QStringLiteral("80.0 MiB in 2 files on the device in 2 s (40.0 MiB/s)")),
                 qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("1 renamed")) && summary.contains(QStringLiteral("1 skipped")),
                 qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("2 verified, read back from the device")), qPrintable(summary));
        QVERIFY(i.data(JobModel::StatusRole).toString().contains(summary));
        // Finished jobs can be cleared; a running one cannot.
        model.addJob(4, QStringLiteral("x"), QStringLiteral("/d"), {}, {}, false);
        QVERIFY(!model.removeFinished(4));
        QVERIFY(model.removeFinished(3));
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.jobIdAt(0), quint64(4));
    }

    void problemsAreCollectedPerJob()
    {
        JobModel model;
        model.addJob(5, QStringLiteral("a"), QStringLiteral("/d"), {}, {}, false);
        model.addJob(6, QStringLiteral("b"), QStringLiteral("/d"), {}, {}, false);
        model.onSkipped(5, QStringLiteral("/s/pipe"), QStringLiteral("/s/pipe: is a FIFO"));
        model.onFailed(6, QStringLiteral("/s/x"), QStringLiteral("/s/x: Input/output error"));
        QCOMPARE(model.index(0).data(JobModel::ProblemsRole).toStringList().size(), 1);
        QCOMPARE(model.index(1).data(JobModel::ProblemsRole).toStringList(),
                 QStringList {QStringLiteral("/s/x: Input/output error")});
    }

    void chartSumsCoverAllJobs()
    {
        JobModel model;
        model.addJob(1, QStringLiteral("a"), QStringLiteral("/d"), {}, {}, false);
        model.addJob(2, QStringLiteral("b"), QStringLiteral("/e"), {}, {}, false);
        model.onProgress(progress(1, JobState::Running, 100, 30, 50));
        model.onProgress(progress(2, JobState::Running, 100, 20, 25));
        QCOMPARE(model.totalDurableBytes(), qint64(50));
        QCOMPARE(model.totalWrittenBytes(), qint64(75));
        QVERIFY(model.anyRunning());
        // A resumed job's prefix was on the device before: progress shows it, the chart's sums leave it out.
        JobProgress resumed = progress(2, JobState::Running, 100, 40, 45);
        resumed.unwrittenBytes = 15;
        model.onProgress(resumed);
        QCOMPARE(model.totalDurableBytes(), qint64(30 + 40 - 15));
        QCOMPARE(model.totalWrittenBytes(), qint64(50 + 45 - 15));
        QCOMPARE(model.index(1).data(JobModel::DurableFractionRole).toDouble(), 0.40);
    }

    void anEndedJobHasNothingOnItsWay()
    {
        JobModel model;
        model.addJob(1, QStringLiteral("a"), QStringLiteral("/d"), {}, {}, false);
        model.onProgress(progress(1, JobState::Running, 100, 30, 45));
        QCOMPARE(model.index(0).data(JobModel::WrittenFractionRole).toDouble(), 0.45);
        model.onFinished(1, false, false, 30, 0, 1);
        QCOMPARE(model.index(0).data(JobModel::WrittenFractionRole).toDouble(),
                 model.index(0).data(JobModel::DurableFractionRole).toDouble());
    }
};

QTEST_MAIN(TestJobModel)
#include "TestJobModel.moc"
