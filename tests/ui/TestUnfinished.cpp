// SPDX-License-Identifier: GPL-2.0-or-later
//
// Unfinished copies survive: the journal of the window's queue (JobJournal), the question at the next start
// (UnfinishedDialog), and the whole way: a window killed mid-copy, started again, resumed to the same tree.
//
// The killed window is this binary run again with --child-copy: a real MainWindow copying through a slowed-down
// syscall seam, so the kill lands mid-file without a throttled device.
#include "CommandLine.h"
#include "JobJournal.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "MessageBar.h"
#include "UnfinishedDialog.h"
#include "fault_syscalls.h"

#include <QApplication>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <unistd.h>

using namespace SaneCopy;

namespace {

constexpr qint64 MiB = 1024 * 1024;

void writePattern(const QString &path, qint64 size, int seed)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray block(64 * 1024, '\0');
    for (qint64 done = 0; done < size; done += block.size()) {
        for (int i = 0; i < block.size(); ++i)
            block[i] = char((i * 31 + seed * 7 + done / block.size()) & 0xff);
        f.write(block.constData(), qMin<qint64>(block.size(), size - done));
    }
}

// a-big (published before the kill), b-big (the one the kill lands in), a folder of small files with a mode
// of its own, and a link.
void makeTree(const QString &src)
{
    QVERIFY(QDir().mkpath(src + QStringLiteral("/sub")));
    writePattern(src + QStringLiteral("/a-big.bin"), 6 * MiB, 1);
    writePattern(src + QStringLiteral("/b-big.bin"), 16 * MiB, 2);
    for (int i = 0; i < 30; ++i)
        writePattern(src + QStringLiteral("/sub/f%1").arg(i), 1000 + i * 97, i + 3);
    QVERIFY(::chmod(QFile::encodeName(src + QStringLiteral("/sub")).constData(), 0750) == 0);
    QVERIFY(::symlink("a-big.bin", QFile::encodeName(src + QStringLiteral("/link")).constData()) == 0);
}

qint64 sizeOf(const QString &path) { return QFileInfo(path).exists() ? QFileInfo(path).size() : -1; }

QStringList filesIn(const QString &folder, const QString &pattern)
{
    QStringList out;
    QDirIterator it(folder, {pattern}, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext())
        out << it.next();
    return out;
}

// Every entry of |src| at |dst|: the same kind, bytes, link target and permission bits.
void compareTrees(const QString &src, const QString &dst)
{
    QDirIterator it(src, QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    int entries = 0;
    while (it.hasNext()) {
        const QString a = it.next();
        const QString b = dst + a.mid(src.size());
        struct stat sa {}, sb {};
        QVERIFY2(::lstat(QFile::encodeName(b).constData(), &sb) == 0, qPrintable(b));
        QVERIFY(::lstat(QFile::encodeName(a).constData(), &sa) == 0);
        QCOMPARE(sb.st_mode, sa.st_mode);
        if (S_ISREG(sa.st_mode)) {
            QFile fa(a), fb(b);
            QVERIFY(fa.open(QIODevice::ReadOnly) && fb.open(QIODevice::ReadOnly));
            QVERIFY2(fa.readAll() == fb.readAll(), qPrintable(b));
        } else if (S_ISLNK(sa.st_mode)) {
            char ta[256] = {}, tb[256] = {};
            QVERIFY(::readlink(QFile::encodeName(a).constData(), ta, sizeof ta - 1) > 0);
            QVERIFY(::readlink(QFile::encodeName(b).constData(), tb, sizeof tb - 1) > 0);
            QCOMPARE(QByteArray(tb), QByteArray(ta));
        }
        ++entries;
    }
    QCOMPARE(entries, 34);
    QVERIFY(filesIn(dst, QStringLiteral("*.part")).isEmpty());
}

// The window of --child-copy: copies SRC into DEST through a seam that moves 256 KiB every 20 ms (12.8 MB/s).
int childCopy(int argc, char **argv)
{
    QApplication app(argc, argv);
    auto slow = sanecopy::test::SlowSeam::to_watch();
    MainWindow window;
    window.show();
    window.applyCommandLine(parseCommandLine({"--to", argv[3], argv[2]}, QFile::encodeName(QDir::currentPath())));
    return QApplication::exec();
}

} // namespace

class TestUnfinished : public QObject {
    Q_OBJECT

    QTemporaryDir base_ {QStringLiteral("/var/tmp/sanecopy-unfinished-XXXXXX")};
    QString src_, out_, state_;

private:
    // A window in another process copies src_ into out_ and is killed (SIGKILL) inside b-big.bin, with a-big.bin
    // published. Leaves the record it made.
    void killAWindowMidCopy()
    {
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedChannels);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--child-copy"), src_, out_});
        QVERIFY(child.waitForStarted());
        const QString part = out_ + QStringLiteral("/src/.b-big.bin.part");
        QTRY_VERIFY_WITH_TIMEOUT(sizeOf(part) >= 3 * MiB, 30000);
        child.kill(); // no clean-up runs: what a crash leaves
        QVERIFY(child.waitForFinished());
        QVERIFY(QFile::exists(out_ + QStringLiteral("/src/a-big.bin")));
        QVERIFY(!QFile::exists(out_ + QStringLiteral("/src/b-big.bin")));
        QCOMPARE(filesIn(state_, QStringLiteral("*.json")).size(), 1);
    }

    UnfinishedDialog *offer(MainWindow &w)
    {
        QSignalSpy offered(&w, &MainWindow::unfinishedOffered);
        w.offerUnfinished();
        if (!offered.wait(10000) || offered.first().first().toInt() != 1)
            return nullptr;
        return w.findChild<UnfinishedDialog *>();
    }

private Q_SLOTS:
    void init()
    {
        QVERIFY(base_.isValid());
        const QString run = base_.filePath(QString::number(QDateTime::currentMSecsSinceEpoch()));
        src_ = run + QStringLiteral("/src");
        out_ = run + QStringLiteral("/out");
        state_ = run + QStringLiteral("/state");
        QVERIFY(QDir().mkpath(out_));
        makeTree(src_);
        qputenv("XDG_STATE_HOME", QFile::encodeName(state_));
    }

    void journalHoldsWhatItRecords()
    {
        JobJournal running(state_ + QStringLiteral("/j"));
        const QByteArray odd("/tmp/caf\xe9 \"x\"\n/y"); // not UTF-8, with a quote and a line break
        const QString key = running.record({{}, {odd, "/b"}, "/media/STICK", true, true, true, true, {}, 1, true});
        QVERIFY2(!key.isEmpty(), qPrintable(running.errorString()));
        {
            // Another window does not get a copy a live window holds.
            JobJournal other(state_ + QStringLiteral("/j"));
            QVERIFY(other.claimUnfinished().isEmpty());
        }
        running.release(key); // as when its process dies
        JobJournal next(state_ + QStringLiteral("/j"));
        const QList<JournalEntry> found = next.claimUnfinished();
        QCOMPARE(found.size(), 1);
        QCOMPARE(found.first().key, key);
        QCOMPARE(found.first().sources, PathList({odd, "/b"}));
        QCOMPARE(found.first().destination, QByteArray("/media/STICK"));
        QVERIFY(found.first().verify && found.first().renameInvalid && found.first().move && found.first().manifest);
        QVERIFY(found.first().queued.isValid());
        QCOMPARE(found.first().conflict, 1); // the plan's one answer for names already taken
        QVERIFY(found.first().fitToSpace);   // "Copy What Fits" stays that when resumed
        // Claimed: a third one does not get it either, and forget() takes both files away.
        QVERIFY(JobJournal(state_ + QStringLiteral("/j")).claimUnfinished().isEmpty());
        next.forget(key);
        QVERIFY(QDir(state_ + QStringLiteral("/j")).entryList(QDir::Files).isEmpty());
    }

    void journalLeavesARecordItCannotReadAlone()
    {
        const QString folder = state_ + QStringLiteral("/j");
        QVERIFY(QDir().mkpath(folder));
        QFile future(folder + QStringLiteral("/x.json"));
        QVERIFY(future.open(QIODevice::WriteOnly));
        future.write(R"({"version": 99, "sources": ["/a"], "destination": "/b"})");
        future.close();
        JobJournal journal(folder);
        QVERIFY(journal.claimUnfinished().isEmpty());
        QVERIFY(future.exists());
    }

    void killedWindowIsResumedToTheSameTree()
    {
        killAWindowMidCopy();
        sanecopy::test::FaultSyscalls counting; // counts the bytes the resumed copy moves
        sanecopy::ScopedSyscalls seam(counting);
        MainWindow w;
        w.show();
        UnfinishedDialog *dialog = offer(w);
        QVERIFY(dialog);
        QCOMPARE(dialog->list()->count(), 1);
        QCOMPARE(dialog->list()->item(0)->checkState(), Qt::Checked);
        QVERIFY(dialog->list()->item(0)->text().contains(out_));
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        dialog->resumeButton()->click();
        QVERIFY(queued.wait(10000));
        const QModelIndex row = w.model()->index(0);
        QVERIFY(row.data(JobModel::TitleRole).toString().contains(QStringLiteral("resumed")));
        QTRY_VERIFY_WITH_TIMEOUT(row.data(JobModel::FinishedRole).toBool(), 60000);
        QVERIFY2(row.data(JobModel::ProblemsRole).toStringList().isEmpty(),
                 qPrintable(row.data(JobModel::ProblemsRole).toStringList().join(QLatin1Char('\n'))));
        QVERIFY(row.data(JobModel::SafeToUnplugRole).toBool());
        compareTrees(src_, out_ + QStringLiteral("/src"));
        // Of the 22 MiB tree, a-big.bin was taken as done and b-big.bin went on from its part file.
        QVERIFY2(counting.moved.load() < quint64(14 * MiB), qPrintable(QString::number(counting.moved.load())));
        // The folder the killed window created owner-only got its mode when the resumed copy was done.
        QCOMPARE(QFileInfo(out_ + QStringLiteral("/src")).permissions(), QFileInfo(src_).permissions());
        // Finished: its record is gone.
        QVERIFY(QDir(state_ + QStringLiteral("/sanecopy/jobs")).entryList(QDir::Files).isEmpty());
    }

    void discardRemovesThePartFilesOnly()
    {
        killAWindowMidCopy();
        MainWindow w;
        w.show();
        UnfinishedDialog *dialog = offer(w);
        QVERIFY(dialog);
        QSignalSpy discarded(&w, &MainWindow::unfinishedDiscarded);
        dialog->discardButton()->click();
        QVERIFY(discarded.wait(10000));
        QCOMPARE(discarded.first().first().toLongLong(), 1);
        QVERIFY(filesIn(out_, QStringLiteral("*.part")).isEmpty());
        QVERIFY(QFile::exists(out_ + QStringLiteral("/src/a-big.bin"))); // finished: kept
        QCOMPARE(sizeOf(src_ + QStringLiteral("/b-big.bin")), 16 * MiB); // sources: never touched
        QVERIFY(QDir(state_ + QStringLiteral("/sanecopy/jobs")).entryList(QDir::Files).isEmpty());
        QCOMPARE(w.model()->rowCount(), 0);
    }

    void laterKeepsItForTheNextStart()
    {
        killAWindowMidCopy();
        {
            MainWindow w;
            w.show();
            UnfinishedDialog *dialog = offer(w);
            QVERIFY(dialog);
            dialog->laterButton()->click();
            QCOMPARE(w.model()->rowCount(), 0);
        }
        QVERIFY(QFile::exists(out_ + QStringLiteral("/src/.b-big.bin.part")));
        QCOMPARE(JobJournal().claimUnfinished().size(), 1);
    }

    // A copy started with the window is not covered: the question waits in the window, and Review opens it.
    void aRunningCopyIsNotCoveredByTheQuestion()
    {
        killAWindowMidCopy();
        const QString other = out_ + QStringLiteral("-now");
        QVERIFY(QDir().mkpath(other));
        auto slow = sanecopy::test::SlowSeam::to_watch();
        MainWindow w;
        w.show();
        w.applyCommandLine(parseCommandLine({"--to", QFile::encodeName(other), QFile::encodeName(src_)}, "/"));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->anyRunning(), 30000);
        QSignalSpy offered(&w, &MainWindow::unfinishedOffered);
        w.offerUnfinished();
        QVERIFY(offered.wait(10000));
        QCOMPARE(offered.first().first().toInt(), 1);
        QVERIFY(!w.findChild<UnfinishedDialog *>());
        MessageBar *bar = w.messageBar();
        QVERIFY(bar->isVisible());
        QVERIFY2(bar->text().contains(QStringLiteral("unfinished")), qPrintable(bar->text()));
        QPushButton *review = nullptr;
        for (QPushButton *b : bar->buttons())
            if (b->text().contains(QStringLiteral("Review")))
                review = b;
        QVERIFY(review);
        review->click();
        QTRY_VERIFY(w.findChild<UnfinishedDialog *>() && w.findChild<UnfinishedDialog *>()->isVisible());
        QVERIFY(!bar->isVisible());
        w.findChild<UnfinishedDialog *>()->laterButton()->click();
        w.bridge()->cancel(w.model()->index(0).data(JobModel::JobIdRole).toULongLong());
        QTRY_VERIFY_WITH_TIMEOUT(!w.model()->anyRunning(), 30000);
    }

    void closingWithACopyRunningAsksAndStopsToFinishLater()
    {
        auto slow = sanecopy::test::SlowSeam::to_watch();
        {
            MainWindow w;
            w.show();
            w.applyCommandLine(parseCommandLine({"--to", QFile::encodeName(out_), QFile::encodeName(src_)}, "/"));
            QTRY_VERIFY_WITH_TIMEOUT(sizeOf(out_ + QStringLiteral("/src/.b-big.bin.part")) >= 1 * MiB, 30000);
            QVERIFY(!w.close()); // asks first
            auto *box = w.findChild<QMessageBox *>();
            QVERIFY(box);
            QPushButton *later = nullptr;
            for (QAbstractButton *b : box->buttons())
                if (b->text().contains(QStringLiteral("Later")))
                    later = qobject_cast<QPushButton *>(b);
            QVERIFY(later);
            later->click();
            QTRY_VERIFY(!w.isVisible());
        }
        // The window went with the copy unfinished: the part file and the record stay for the next start.
        QVERIFY(QFile::exists(out_ + QStringLiteral("/src/.b-big.bin.part")));
        QCOMPARE(JobJournal().claimUnfinished().size(), 1);
    }
};

int main(int argc, char **argv)
{
    if (argc == 4 && qstrcmp(argv[1], "--child-copy") == 0)
        return childCopy(argc, argv);
    QApplication app(argc, argv);
    TestUnfinished test;
    return QTest::qExec(&test, argc, argv);
}

#include "TestUnfinished.moc"
