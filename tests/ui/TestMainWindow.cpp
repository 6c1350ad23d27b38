// SPDX-License-Identifier: GPL-2.0-or-later
// The whole window, offscreen: command-line flows, a real copy through the GUI code path, and the queue rows.
#include "CommandLine.h"
#include "DestinationPicker.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "QueueView.h"
#include "QuestionDialogs.h"
#include <QCheckBox>
#include <QToolButton>
#include "SourceDropArea.h"
#include "DurableProgressBar.h"

#include <QFile>
#include <QProcess>
#include <QMimeData>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestMainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void filesWithoutDestinationAreQueuedAndAsk()
    {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        CommandLine cmd;
        cmd.files = {"/var/tmp/a.iso", "/var/tmp/b"};
        w.applyCommandLine(cmd);
        QCOMPARE(w.sourceArea()->sources(), cmd.files);
        QCOMPARE(w.model()->rowCount(), 0); // nothing starts before a destination is chosen
        QVERIFY(w.hint()->text().contains(QStringLiteral("Choose where to copy 2 items")));
    }

    void destinationOnTheCommandLineStartsAtOnce()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QFile f(dir.filePath(QStringLiteral("movie.mkv")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(3 << 20, 'm'));
        f.close();
        MainWindow w;
        w.show();
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        CommandLine cmd;
        cmd.files = {QFile::encodeName(f.fileName())};
        cmd.destination = QFile::encodeName(dir.filePath(QStringLiteral("out")));
        w.applyCommandLine(cmd);
        QVERIFY(queued.wait(10000));
        QCOMPARE(w.model()->rowCount(), 1);
        const QModelIndex row = w.model()->index(0);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QCOMPARE(w.model()->index(0).data(JobModel::DurableFractionRole).toDouble(), 1.0);
        QVERIFY(row.data(JobModel::TitleRole).toString().contains(QStringLiteral("movie.mkv")));
        QFile copy(dir.filePath(QStringLiteral("out/movie.mkv")));
        QVERIFY(copy.open(QIODevice::ReadOnly));
        QCOMPARE(copy.readAll(), QByteArray(3 << 20, 'm'));
        // The row shows the finished state: full bar, no pause or cancel any more.
        JobRow *jobRow = w.queueView()->rowFor(w.model()->jobIdAt(0));
        QVERIFY(jobRow);
        QCOMPARE(jobRow->bar()->durable(), 1.0);
        QVERIFY(!jobRow->pauseButton()->isVisible());
        QVERIFY(!jobRow->cancelButton()->isVisible());
    }

    void problemsAreShownBeforeTheFirstByte()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        MainWindow w;
        w.show();
        QSignalSpy problems(&w, &MainWindow::problemsShown);
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        w.sourceArea()->addSources({QFile::encodeName(dir.filePath(QStringLiteral("does-not-exist")))});
        w.destinationPicker()->setDestination(dir.filePath(QStringLiteral("out")));
        w.startCopy();
        QVERIFY(problems.wait(10000));
        QVERIFY(problems.first().first().toStringList().first().contains(QStringLiteral("does-not-exist")));
        QCOMPARE(queued.count(), 0);
        // The dialog offers no "copy the rest": there is nothing to copy. Closing it queues nothing.
        auto *box = w.findChild<QMessageBox *>();
        QVERIFY(box);
        box->reject();
        QCOMPARE(queued.count(), 0);
        QVERIFY(QDir(dir.filePath(QStringLiteral("out"))).isEmpty());
    }

    void conflictDialogAppliesToAll()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir d(dir.path());
        d.mkpath(QStringLiteral("src/tree"));
        d.mkpath(QStringLiteral("out/tree"));
        for (const char *name : {"a", "b", "c"}) {
            for (const QString &where : {QStringLiteral("src/tree/"), QStringLiteral("out/tree/")}) {
                QFile f(dir.filePath(where + QLatin1String(name)));
                QVERIFY(f.open(QIODevice::WriteOnly));
                f.write(where.startsWith(QLatin1String("src")) ? "new" : "old");
            }
        }
        MainWindow w;
        w.show();
        int dialogs = 0;
        connect(w.questions(), &QuestionDialogs::dialogShown, this, [&](QMessageBox *box) {
            ++dialogs;
            box->checkBox()->setChecked(true);
            for (QAbstractButton *b : box->buttons())
                if (b->text().contains(QStringLiteral("Overwrite")))
                    b->click();
        });
        CommandLine cmd;
        cmd.files = {QFile::encodeName(dir.filePath(QStringLiteral("src/tree")))};
        cmd.destination = QFile::encodeName(dir.filePath(QStringLiteral("out")));
        w.applyCommandLine(cmd);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->rowCount() == 1 && w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QCOMPARE(dialogs, 1); // asked once, applied to all three
        for (const char *name : {"a", "b", "c"}) {
            QFile f(dir.filePath(QStringLiteral("out/tree/") + QLatin1String(name)));
            QVERIFY(f.open(QIODevice::ReadOnly));
            QCOMPARE(f.readAll(), QByteArray("new"));
        }
    }

    // regression: a dropped name that is not UTF-8 must arrive with its own bytes, not as U+FFFD
    void nonUtf8NameDroppedAndCopiedWithVerify()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        const QByteArray root = QFile::encodeName(dir.path());
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        const QByteArray name = root + "/caf\xe9 \"x\"\n.bin";
        {
            QFile f;
            QVERIFY(f.open(::fopen(name.constData(), "w"), QIODevice::WriteOnly, QFileDevice::AutoCloseHandle));
            f.write(QByteArray(2 << 20, 'c'));
        }
        MainWindow w;
        w.show();
        QMimeData mime;
        mime.setData(QStringLiteral("text/uri-list"), "file://" + name.toPercentEncoding("/") + "\r\n");
        QVERIFY(w.sourceArea()->addDropped(&mime));
        QCOMPARE(w.sourceArea()->sources(), PathList{name});
        w.destinationPicker()->setDestination(dir.filePath(QStringLiteral("out")));
        w.verifyBox()->setChecked(true);
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        w.startCopy();
        QVERIFY(queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        struct stat st {};
        QCOMPARE(::stat((root + "/out/caf\xe9 \"x\"\n.bin").constData(), &st), 0);
        QCOMPARE(qint64(st.st_size), qint64(2 << 20));
        // QTemporaryDir removes by QString and can't name these: remove them by their bytes.
        ::unlink((root + "/out/caf\xe9 \"x\"\n.bin").constData());
        ::unlink(name.constData());
    }

    void moveWithChecksumsFromTheWindow()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir d(dir.path());
        QVERIFY(d.mkpath(QStringLiteral("src/sub")) && d.mkdir(QStringLiteral("out")));
        for (const char *name : {"src/a.txt", "src/sub/b.txt"}) {
            QFile f(d.filePath(QLatin1String(name)));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray("contents of ") + name);
        }
        MainWindow w;
        w.show();
        w.sourceArea()->addSources({QFile::encodeName(d.filePath(QStringLiteral("src")))});
        w.destinationPicker()->setDestination(d.filePath(QStringLiteral("out")));
        w.moveBox()->setChecked(true);
        w.manifestBox()->setChecked(true);
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        w.startCopy();
        QVERIFY(queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        // Moved: the sources and their folders are gone, the copies are there.
        QVERIFY(!d.exists(QStringLiteral("src")));
        QVERIFY(QFile::exists(d.filePath(QStringLiteral("out/src/sub/b.txt"))));
        // And the checksums check with the stock tool.
        QProcess check;
        check.setWorkingDirectory(d.filePath(QStringLiteral("out")));
        check.start(QStringLiteral("sha256sum"), {QStringLiteral("-c"), QStringLiteral("SHA256SUMS")});
        QVERIFY(check.waitForFinished(10000));
        QCOMPARE(check.exitCode(), 0);
        QCOMPARE(check.readAllStandardOutput().count("OK"), 2);
    }

    void aNewJobIsScrolledIntoView()
    {
        JobModel model;
        QueueView view(&model);
        view.resize(500, 150); // room for about one row
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        for (quint64 id = 1; id <= 4; ++id) {
            model.addJob(id, QStringLiteral("job %1").arg(id), QStringLiteral("/d"), {}, {}, false);
            QCoreApplication::processEvents();
        }
        JobRow *last = view.rowFor(4);
        QVERIFY(last);
        // The newest row lies inside the viewport once the layout has settled.
        QTRY_VERIFY(view.viewport()->rect().contains(
            QRect(last->mapTo(view.viewport(), QPoint(0, 0)), last->size()).adjusted(0, 0, -1, -1)));
        QVERIFY(!view.viewport()->rect().contains(view.rowFor(1)->mapTo(view.viewport(), QPoint(0, 0))));
    }

    void ejectFollowsWhetherItCanWork()
    {
        JobModel model;
        QueueView view(&model);
        model.addJob(1, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        model.onFinished(1, true, false, 10, 1, 0);
        auto ejectShown = [&] {
            for (QToolButton *b : view.rowFor(1)->findChildren<QToolButton *>())
                if (b->text() == QueueView::tr("Eject"))
                    return !b->isHidden();
            return false;
        };
        view.setEjectAvailable(false); // no UDisks2: the button could only fail
        QVERIFY(!ejectShown());
        view.setEjectAvailable(true); // it came up later: the row already shown offers Eject now
        QVERIFY(ejectShown());
    }

    void rendersOffscreen()
    {
        MainWindow w;
        w.resize(900, 700);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QImage img = w.grab().toImage();
        QCOMPARE(img.size(), QSize(900, 700) * img.devicePixelRatio());
        QVERIFY(w.copyButton()->isVisible());
        QVERIFY(!w.copyButton()->isEnabled()); // nothing to copy yet
    }
};

QTEST_MAIN(TestMainWindow)
#include "TestMainWindow.moc"
