// SPDX-License-Identifier: GPL-2.0-or-later
// The whole window, offscreen: command-line flows, a real copy through the GUI code path, and the queue rows.
#include "CommandLine.h"
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "JobModel.h"
#include "Translations.h"
#include "MainWindow.h"
#include "PlanDialog.h"
#include "QueueView.h"
#include "QuestionDialogs.h"
#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QMenu>
#include <QSystemTrayIcon>
#include <QPlainTextEdit>
#include <QMenuBar>
#include <QTimer>
#include <QToolButton>
#include "SourceDropArea.h"
#include "WindowFixtures.h"
#include "DurableProgressBar.h"
#include "fault_syscalls.h"

#include <QFile>
#include <QProcess>
#include <QMimeData>
#include <cstdio>
#include <QScopeGuard>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <QLabel>
#include <QTreeWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

// Clicks the button whose text starts with |start|; fails the test when there is none.
void clickButton(const QList<QAbstractButton *> &buttons, const QString &start)
{
    for (QAbstractButton *b : buttons) {
        if (b->text().startsWith(start)) {
            b->click();
            return;
        }
    }
    QFAIL(qPrintable(QStringLiteral("no button \"%1\"").arg(start)));
}

// |path| made with |data| in it.
bool writeFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

// |path| made with |bytes| in it and modified at |when|.
bool writeDated(const QString &path, const QByteArray &bytes, const QDateTime &when)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size())
        return false;
    f.flush(); // else the bytes land at close and take the time with them
    return f.setFileTime(when, QFileDevice::FileModificationTime);
}

QByteArray readBytes(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// src/photos/a, b and c.jpg, and out/photos/a.jpg (older than the source's) and b.jpg (newer).
bool makePhotos(const QDir &d, const QDateTime &old, const QDateTime &recent)
{
    const std::pair<const char *, std::pair<QByteArray, QDateTime>> files[] = {
        {"src/photos/a.jpg", {"new a", recent}},  {"src/photos/b.jpg", {"new b", old}},
        {"src/photos/c.jpg", {"new c", recent}},  {"out/photos/a.jpg", {"old", old}},
        {"out/photos/b.jpg", {"older!", recent}},
    };
    if (!d.mkpath(QStringLiteral("src/photos")) || !d.mkpath(QStringLiteral("out/photos")))
        return false;
    for (const auto &[name, what] : files)
        if (!writeDated(d.filePath(QLatin1String(name)), what.first, what.second))
            return false;
    return true;
}

// `sanecopy --to DIR/out DIR/|name|`, as a second start hands it to the window.
void copyFromCommandLine(MainWindow &w, const QTemporaryDir &dir, const QString &name)
{
    CommandLine cmd;
    cmd.files = {QFile::encodeName(dir.filePath(name))};
    cmd.destination = QFile::encodeName(dir.filePath(QStringLiteral("out")));
    w.applyCommandLine(cmd);
}

// Plans a copy of |source| to |destination| in |w| and, once the plan dialog shows, picks |answer| for the names
// already taken. nullptr when no dialog came or it offers no such answer.
PlanDialog *planWithAnswer(MainWindow &w, const QString &source, const QString &destination, const QString &answer)
{
    w.sourceArea()->addSources({QFile::encodeName(source)});
    w.destinationPicker()->setDestination(destination);
    w.startCopy();
    PlanDialog *dialog = nullptr;
    if (!QTest::qWaitFor([&] { return (dialog = w.findChild<PlanDialog *>()) != nullptr; }, 10000))
        return nullptr;
    const int index = dialog->takenChoice()->findText(answer);
    if (index < 0)
        return nullptr;
    dialog->takenChoice()->setCurrentIndex(index);
    return dialog;
}

// An 8 MiB tmpfs as the stick, beside src/, in a folder of its own. Mounted in this process's own mount namespace,
// it goes with the process even if the test fails. Needs root.
struct SmallStick {
    SmallStick()
    {
        mounted = ::unshare(CLONE_NEWNS) == 0 && ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                  d.mkpath(QStringLiteral("stick")) && d.mkpath(QStringLiteral("src")) &&
                  ::mount("sanecopy-test", stick.constData(), "tmpfs", 0, "size=8m") == 0;
    }
    ~SmallStick()
    {
        if (mounted)
            ::umount2(stick.constData(), MNT_DETACH);
    }
    bool write(const QString &name, qint64 size, char fill = 'x') const
    {
        QFile f(d.filePath(name));
        return f.open(QIODevice::WriteOnly) && f.write(QByteArray(size, fill)) == size;
    }

    QTemporaryDir dir {QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX")};
    QDir d {dir.path()};
    QByteArray stick = QFile::encodeName(d.filePath(QStringLiteral("stick")));
    bool mounted = false;
};

class TestMainWindow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        loadTranslations(qApp, {QStringLiteral("en")}); // the English counts ("1 file"), as sanecopy loads them
    }

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
        // No stick plugged in: nothing is guessed for the user (not the home folder), and Copy waits.
        w.destinationPicker()->setDevices({});
        QCOMPARE(w.destinationPicker()->destination(), QString());
        QVERIFY(!w.copyButton()->isEnabled());
        Device stick;
        stick.mountPoint = QStringLiteral("/media/anna/STICK");
        stick.name = QStringLiteral("STICK");
        stick.removable = true;
        w.destinationPicker()->setDevices({stick}); // the one stick: chosen
        QCOMPARE(w.destinationPicker()->destination(), QStringLiteral("/media/anna/STICK"));
        QVERIFY(w.copyButton()->isEnabled());
    }

    void destinationOnTheCommandLineStartsAtOnce()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QVERIFY(writeFile(dir.filePath(QStringLiteral("movie.mkv")), QByteArray(3 << 20, 'm')));
        MainWindow w;
        w.show();
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        copyFromCommandLine(w, dir, QStringLiteral("movie.mkv"));
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

    // Two sticks plugged in: "Every stick at once" copies the same files onto both, a row each; it is offered,
    // never chosen for the user, and a move is refused (a file goes to one place).
    void everyStickAtOnceCopiesOntoEach()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkpath(QStringLiteral("a"));
        QDir(dir.path()).mkpath(QStringLiteral("b"));
        QVERIFY(writeFile(dir.filePath(QStringLiteral("talk.pdf")), QByteArray(2 << 20, 't')));
        MainWindow w;
        w.show();
        w.destinationPicker()->setDevices({Test::stickAt(dir.filePath(QStringLiteral("a")), QStringLiteral("A")),
                                           Test::stickAt(dir.filePath(QStringLiteral("b")), QStringLiteral("B"))});
        QVERIFY(w.destinationPicker()->destinations().isEmpty()); // two sticks: nothing guessed
        QComboBox *list = w.destinationPicker()->list();
        const int every = list->findText(QStringLiteral("Every stick at once (2 sticks)"));
        QVERIFY(every >= 0);
        list->setCurrentIndex(every);
        QCOMPARE(w.destinationPicker()->destinations(),
                 QStringList({dir.filePath(QStringLiteral("a")), dir.filePath(QStringLiteral("b"))}));
        w.sourceArea()->addSources({QFile::encodeName(dir.filePath(QStringLiteral("talk.pdf")))});
        QVERIFY(w.copyButton()->isEnabled());
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        w.moveBox()->setChecked(true);
        w.copyButton()->click();
        QVERIFY(w.hint()->text().contains(QStringLiteral("A move goes to one place")));
        QCOMPARE(queued.count(), 0);
        w.moveBox()->setChecked(false);
        w.copyButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(queued.count(), 2, 10000);
        QCOMPARE(w.model()->rowCount(), 2);
        for (int row = 0; row < 2; ++row)
            QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(row).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        for (const QString &stick : {QStringLiteral("a"), QStringLiteral("b")}) {
            QFile copy(dir.filePath(stick + QStringLiteral("/talk.pdf")));
            QVERIFY(copy.open(QIODevice::ReadOnly));
            QCOMPARE(copy.readAll(), QByteArray(2 << 20, 't'));
        }
    }

    void enterStartsTheCopyAndCtrlQQuits()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QVERIFY(writeFile(dir.filePath(QStringLiteral("a.txt")), "a"));
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        QTest::keyClick(&w, Qt::Key_Return); // nothing to copy yet: nothing happens
        QCOMPARE(queued.count(), 0);
        QVERIFY(!w.clearFinishedButton()->isEnabled());
        w.sourceArea()->addSources({QFile::encodeName(dir.filePath(QStringLiteral("a.txt")))});
        w.destinationPicker()->setDestination(dir.filePath(QStringLiteral("out")));
        w.destinationPicker()->list()->setFocus();
        QTest::keyClick(w.destinationPicker()->list(), Qt::Key_Return);
        QVERIFY(queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QVERIFY(w.clearFinishedButton()->isEnabled()); // something to clear now
        QTest::keyClick(&w, Qt::Key_Q, Qt::ControlModifier);
        QTRY_VERIFY(!w.isVisible());
    }

    void inTheBackgroundTheTrayShowsBytesOnTheDeviceAndTheEndEndsIt()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        // Big enough to be durable in several steps (writeback windows), so a tooltip midway can be checked.
        QVERIFY(writeFile(dir.filePath(QStringLiteral("big.bin")), QByteArray(40 << 20, 'b')));
        auto slow = sanecopy::test::SlowSeam::to_watch(); // 256 KiB every 20 ms: about 3 s for the file
        MainWindow w;
        w.show();
        QSignalSpy done(&w, &MainWindow::backgroundCopiesDone);
        copyFromCommandLine(w, dir, QStringLiteral("big.bin"));
        QTRY_VERIFY(w.model()->anyRunning() && w.model()->rowCount() == 1);
        w.keepCopyingInBackground();
        QVERIFY(!w.isVisible());
        QVERIFY(w.trayIcon());
        QVERIFY2(w.trayIcon()->toolTip().contains(QStringLiteral("1 copy, ")) &&
                     w.trayIcon()->toolTip().contains(QStringLiteral("% on the device")),
                 qPrintable(w.trayIcon()->toolTip()));
        // The percentage follows the copy's bytes on the device (it once read "1 %", the count, all along): each
        // progress update, after the tray's own handler (connected first), the tooltip and the fraction it shows.
        QList<QPair<QString, double>> seen;
        connect(w.model(), &JobModel::dataChanged, this, [&] {
            seen.append({w.trayIcon()->toolTip(), w.model()->index(0).data(JobModel::DurableFractionRole).toDouble()});
        });
        QVERIFY(done.wait(20000)); // the copy's end ends the background
        bool midway = false;
        for (const auto &[tip, fraction] : std::as_const(seen)) {
            if (fraction < 0.2 || fraction > 0.9 || !tip.contains(QStringLiteral("1 copy, ")))
                continue;
            const int shown = tip.section(QStringLiteral("1 copy, "), 1).section(QLatin1Char(' '), 0, 0).toInt();
            QVERIFY2(qAbs(shown - int(100 * fraction)) <= 2, qPrintable(tip));
            midway = true;
        }
        QVERIFY2(midway, "no progress update between 20 % and 90 % was seen");
        QVERIFY(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool());
        QCOMPARE(w.backgroundStatus(), QStringLiteral("SaneCopy: done"));
    }

    void arrowingThroughDestinationsOpensNoDialog()
    {
        MainWindow w;
        w.show();
        QComboBox *list = w.destinationPicker()->list();
        list->setFocus();
        for (int i = 0; i < list->count() + 2; ++i) {
            QTest::keyClick(list, Qt::Key_Down);
            QVERIFY(!QApplication::activeModalWidget());
        }
        for (int i = 0; i < list->count(); ++i)
            QVERIFY(!list->itemData(i).toString().isEmpty()); // every entry is a place to copy to
        // The folder dialog is one button away, and only there.
        w.destinationPicker()->browseButton()->click();
        QTRY_VERIFY(w.destinationPicker()->findChild<QFileDialog *>());
        w.destinationPicker()->findChild<QFileDialog *>()->reject();
    }

    void helpSaysWhatAndWhichVersion()
    {
        MainWindow w;
        QStringList menus;
        QAction *about = nullptr;
        for (QAction *menu : w.menuBar()->actions()) {
            menus << menu->text();
            for (QAction *a : menu->menu()->actions())
                if (a->text() == QStringLiteral("&About SaneCopy"))
                    about = a;
        }
        QCOMPARE(menus.first(), QStringLiteral("&File"));
        QCOMPARE(menus.last(), QStringLiteral("&Help"));
        QVERIFY(about);
        QTimer::singleShot(0, &w, [] {
            auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget());
            QVERIFY(box);
            QVERIFY(box->text().contains(QStringLiteral(SANECOPY_VERSION)));
            QVERIFY(box->text().contains(QStringLiteral("version 2 or later")));
            box->accept();
        });
        about->trigger();
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
        auto *box = w.findChild<PlanDialog *>();
        QVERIFY(box);
        box->reject();
        QCOMPARE(queued.count(), 0);
        QVERIFY(QDir(dir.filePath(QStringLiteral("out"))).isEmpty());
    }

    void copyWhatFitsCopiesWhatFitsAndCancelKeepsTheList()
    {
        if (::geteuid() != 0)
            QSKIP("SKIP: needs root to mount a small tmpfs in a private mount namespace");
        SmallStick s;
        QVERIFY(s.mounted);
        const QDir &d = s.d;
        const QByteArray &stick = s.stick;
        QVERIFY(s.d.mkpath(QStringLiteral("src/c")));
        QVERIFY(s.write(QStringLiteral("src/a.bin"), 5 << 20));
        QVERIFY(s.write(QStringLiteral("src/b.bin"), 5 << 20)); // no room left for this one
        for (int i = 0; i < 3; ++i)
            QVERIFY(s.write(QStringLiteral("src/c/f%1").arg(i), 100 << 10));
        MainWindow w;
        w.show();
        const PathList sources {QFile::encodeName(d.filePath(QStringLiteral("src/a.bin"))),
                                QFile::encodeName(d.filePath(QStringLiteral("src/b.bin"))),
                                QFile::encodeName(d.filePath(QStringLiteral("src/c")))};
        w.sourceArea()->addSources(sources);
        w.destinationPicker()->setDestination(QFile::decodeName(stick));
        QSignalSpy problems(&w, &MainWindow::problemsShown);
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        auto buttonOf = [&](const QString &start) -> QPushButton * {
            auto *box = w.findChild<PlanDialog *>();
            for (QAbstractButton *b : box ? box->buttons() : QList<QAbstractButton *>())
                if (b->text().startsWith(start))
                    return qobject_cast<QPushButton *>(b);
            return nullptr;
        };
        w.startCopy();
        QVERIFY(problems.wait(10000));
        QVERIFY(problems.first()
                    .first()
                    .toStringList()
                    .join(QLatin1Char(' '))
                    .contains(QStringLiteral("not enough space")));
        QVERIFY(!buttonOf(QStringLiteral("Copy the Rest"))); // it would copy nothing
        QVERIFY(buttonOf(QStringLiteral("Cancel")));
        buttonOf(QStringLiteral("Cancel"))->click();
        QTRY_VERIFY(!w.findChild<PlanDialog *>());
        QCOMPARE(w.sourceArea()->sources(), sources); // the list is kept
        w.startCopy();
        QVERIFY(problems.wait(10000));
        QPushButton *fits = buttonOf(QStringLiteral("Copy What Fits"));
        QVERIFY(fits);
        QVERIFY2(fits->text().contains(QStringLiteral("4 of the files")), qPrintable(fits->text()));
        fits->click();
        QVERIFY(queued.count() == 1 || queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::FinishedRole).toBool(), 20000);
        QVERIFY(QFile::exists(d.filePath(QStringLiteral("stick/a.bin"))));
        QVERIFY(!QFile::exists(d.filePath(QStringLiteral("stick/b.bin"))));
        for (int i = 0; i < 3; ++i)
            QCOMPARE(QFileInfo(d.filePath(QStringLiteral("stick/c/f%1").arg(i))).size(), qint64(100 << 10));
        const QStringList left = w.model()->index(0).data(JobModel::ProblemsRole).toStringList();
        QCOMPARE(left.size(), 1);
        QVERIFY2(left.first().contains(QStringLiteral("b.bin")) && left.first().contains(QStringLiteral("no room")),
                 qPrintable(left.first()));
        QVERIFY(w.sourceArea()->sources().isEmpty()); // queued: the list is free again
    }

    void theSpaceLineFollowsTheChoiceForNamesTaken()
    {
        if (::geteuid() != 0)
            QSKIP("SKIP: needs root to mount a small tmpfs in a private mount namespace");
        SmallStick s;
        QVERIFY(s.mounted);
        const QDir &d = s.d;
        // An update of a 5 MiB file already on an 8 MiB stick, and a new 1 MiB file: in full it needs 6 MiB of
        // the 3 free; skipping the old one, 1 MiB; replacing it, both 5 MiB files for a moment.
        QVERIFY(s.write(QStringLiteral("stick/film.mkv"), 5 << 20, 'o'));
        QVERIFY(s.write(QStringLiteral("src/film.mkv"), 5 << 20, 'n'));
        QVERIFY(s.write(QStringLiteral("src/notes.txt"), 1 << 20, 't'));
        MainWindow w;
        w.show();
        QSignalSpy problems(&w, &MainWindow::problemsShown);
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        w.sourceArea()->addSources({QFile::encodeName(d.filePath(QStringLiteral("src/film.mkv"))),
                                    QFile::encodeName(d.filePath(QStringLiteral("src/notes.txt")))});
        w.destinationPicker()->setDestination(QFile::decodeName(s.stick));
        w.startCopy();
        QVERIFY(problems.wait(10000));
        auto *dialog = w.findChild<PlanDialog *>();
        QVERIFY(dialog && dialog->takenChoice());
        auto *list = dialog->findChild<QPlainTextEdit *>(QStringLiteral("problems"));
        auto goButton = [&]() -> QString {
            for (QAbstractButton *b : dialog->buttons())
                if (b->text().startsWith(QStringLiteral("Copy")) && b->isVisibleTo(dialog))
                    return b->text();
            return QString();
        };
        auto choose = [&](const QString &text) {
            dialog->takenChoice()->setCurrentIndex(dialog->takenChoice()->findText(text));
        };
        // Asked one by one: counted in full.
        QVERIFY2(list->isVisibleTo(dialog) && list->toPlainText().contains(QStringLiteral("not enough space")),
                 qPrintable(list->toPlainText()));
        QVERIFY2(goButton().startsWith(QStringLiteral("Copy What Fits")), qPrintable(goButton()));
        choose(QStringLiteral("Replace them"));
        QVERIFY(list->toPlainText().contains(QStringLiteral("not enough space")));
        choose(QStringLiteral("Skip them"));
        QVERIFY2(!list->isVisibleTo(dialog), qPrintable(list->toPlainText()));
        QCOMPARE(goButton(), QStringLiteral("Copy (1 file)"));
        QVERIFY(!dialog->findChild<QLabel *>(QStringLiteral("headline"))->text().contains(QStringLiteral("can't")));
        choose(QStringLiteral("Ask for each file"));
        QVERIFY(list->isVisibleTo(dialog) && goButton().startsWith(QStringLiteral("Copy What Fits")));
        choose(QStringLiteral("Skip them"));
        clickButton(dialog->buttons(), QStringLiteral("Copy (1 file)"));
        QVERIFY(queued.count() == 1 || queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QCOMPARE(QFileInfo(d.filePath(QStringLiteral("stick/notes.txt"))).size(), qint64(1 << 20));
        QFile old(d.filePath(QStringLiteral("stick/film.mkv")));
        QVERIFY(old.open(QIODevice::ReadOnly));
        QCOMPARE(old.read(1), QByteArray("o")); // skipped, as chosen
        QVERIFY(w.model()
                    ->index(0)
                    .data(JobModel::ProblemsRole)
                    .toStringList()
                    .join(QString())
                    .contains(QStringLiteral("film.mkv")));
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
        QString detail, escape;
        connect(w.questions(), &QuestionDialogs::dialogShown, this, [&](QMessageBox *box) {
            ++dialogs;
            detail = box->informativeText();
            escape = box->escapeButton() ? box->escapeButton()->text() : QString();
            box->checkBox()->setChecked(true);
            for (QAbstractButton *b : box->buttons())
                if (b->text().contains(QStringLiteral("Overwrite")))
                    b->click();
        });
        copyFromCommandLine(w, dir, QStringLiteral("src/tree"));
        // The plan lists the three names already taken first; "Ask for each file" is its default.
        PlanDialog *plan = nullptr;
        QTRY_VERIFY((plan = w.findChild<PlanDialog *>()) != nullptr);
        QVERIFY(plan->takenList() && plan->takenList()->topLevelItemCount() == 3);
        QVERIFY(plan->askForEach());
        clickButton(plan->buttons(), QStringLiteral("Copy (3 files)"));
        QTRY_VERIFY_WITH_TIMEOUT(
            w.model()->rowCount() == 1 && w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QCOMPARE(dialogs, 1); // asked once, applied to all three
        // Sizes, dates and which is newer; Escape skips the file, it never cancels the copy.
        QVERIFY2(detail.contains(QStringLiteral("Existing: 3 bytes, modified ")) &&
                     detail.contains(QStringLiteral("same")),
                 qPrintable(detail));
        QCOMPARE(escape, QStringLiteral("&Skip"));
        for (const char *name : {"a", "b", "c"}) {
            QFile f(dir.filePath(QStringLiteral("out/tree/") + QLatin1String(name)));
            QVERIFY(f.open(QIODevice::ReadOnly));
            QCOMPARE(f.readAll(), QByteArray("new"));
        }
    }

    void thePlanListsNamesAlreadyTakenAndOneAnswerSettlesThem()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir d(dir.path());
        const QDateTime old = QDateTime::currentDateTime().addDays(-3),
                        recent = QDateTime::currentDateTime().addSecs(-60);
        QVERIFY(makePhotos(d, old, recent));
        MainWindow w;
        w.show();
        int asked = 0;
        connect(w.questions(), &QuestionDialogs::dialogShown, this, [&](QMessageBox *box) {
            ++asked;
            box->reject();
        });
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        auto plan = [&](const QString &answer) {
            return planWithAnswer(w, d.filePath(QStringLiteral("src/photos")), d.filePath(QStringLiteral("out")),
                                  answer);
        };

        // Each taken name with both sides' size and time, and which is newer.
        PlanDialog *dialog = plan(QStringLiteral("Skip them"));
        QVERIFY(dialog);
        QTreeWidget *taken = dialog->takenList();
        QCOMPARE(taken->topLevelItemCount(), 2);
        QCOMPARE(taken->topLevelItem(0)->text(0), QStringLiteral("photos/a.jpg"));
        QCOMPARE(taken->topLevelItem(0)->text(1),
                 QStringLiteral("5 bytes · ") + QLocale().toString(recent, QLocale::NarrowFormat));
        QCOMPARE(taken->topLevelItem(0)->text(2),
                 QStringLiteral("3 bytes · ") + QLocale().toString(old, QLocale::NarrowFormat));
        QCOMPARE(taken->topLevelItem(0)->text(3), QStringLiteral("this copy"));
        QCOMPARE(taken->topLevelItem(1)->text(3), QStringLiteral("the one there"));
        QVERIFY(dialog->findChild<QLabel *>(QStringLiteral("headline"))->text().contains(QStringLiteral("2 files")));
        // No problems: no list of them.
        QVERIFY(!dialog->findChild<QPlainTextEdit *>(QStringLiteral("problems"))->isVisibleTo(dialog));
        clickButton(dialog->buttons(), QStringLiteral("Copy (1 file)")); // the two others are skipped
        QVERIFY(queued.count() == 1 || queued.wait(10000));
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        auto contents = [&](const QString &name) { return readBytes(d.filePath(name)); };
        QCOMPARE(contents(QStringLiteral("out/photos/a.jpg")), QByteArray("old")); // skipped, as answered once
        QCOMPARE(contents(QStringLiteral("out/photos/b.jpg")), QByteArray("older!"));
        QCOMPARE(contents(QStringLiteral("out/photos/c.jpg")), QByteArray("new c"));
        QCOMPARE(asked, 0); // nothing asked file by file

        // The same with "Replace them": replaced, still without a question.
        dialog = plan(QStringLiteral("Replace them"));
        QVERIFY(dialog);
        QCOMPARE(dialog->takenList()->topLevelItemCount(), 3);
        clickButton(dialog->buttons(), QStringLiteral("Copy (3 files)"));
        QTRY_VERIFY_WITH_TIMEOUT(
            w.model()->rowCount() == 2 && w.model()->index(1).data(JobModel::SafeToUnplugRole).toBool(), 20000);
        QCOMPARE(contents(QStringLiteral("out/photos/a.jpg")), QByteArray("new a"));
        QCOMPARE(contents(QStringLiteral("out/photos/b.jpg")), QByteArray("new b"));
        QCOMPARE(asked, 0);
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
        QCOMPARE(w.sourceArea()->sources(), PathList {name});
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

    void aFinishedJobIsOneLineWithDetailsAndCanBeCleared()
    {
        JobModel model;
        QueueView view(&model);
        view.resize(700, 400);
        view.show();
        model.addJob(1, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        model.addJob(2, QStringLiteral("b → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        QCoreApplication::processEvents(); // a layout shows what it was given once the event loop runs
        JobRow *done = view.rowFor(1);
        QVERIFY(done->bar()->isVisible());
        QVERIFY(!done->safeToUnplug()->isVisible());
        model.onFileDone(1, QStringLiteral("/src/a"), QStringLiteral("/media/STICK/a"));
        model.onFinished(1, true, false, 10, 1, 0);
        QCoreApplication::processEvents();
        QVERIFY(!done->bar()->isVisible()); // its result is in words, on the bar's line
        QVERIFY(done->result()->isVisible());
        QVERIFY(done->result()->toolTip().startsWith(QStringLiteral("Done: ")));
        QVERIFY(done->safeToUnplug()->isVisible());
        QVERIFY(done->detailsButton()->isVisible() && done->clearButton()->isVisible());
        QVERIFY(!view.rowFor(2)->clearButton()->isVisible()); // still running
        done->detailsButton()->click();
        auto *text = done->findChild<QPlainTextEdit *>();
        QVERIFY(text);
        QCOMPARE(text->toPlainText(), QStringLiteral("Copied: /src/a → /media/STICK/a"));
        // A cancelled one keeps its bar, which says so.
        model.onFinished(2, false, true, 0, 0, 0);
        QCoreApplication::processEvents();
        QVERIFY(view.rowFor(2)->bar()->isVisible());
        QCOMPARE(view.rowFor(2)->bar()->outcome(), QStringLiteral("Cancelled"));
        view.clearFinished();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(!view.rowFor(1) && !view.rowFor(2));
    }

    void cancelPressedLeavesNeitherPauseNorResume()
    {
        // A copy that is cancelling, as a stalled share keeps one for a while, must not offer Pause or Resume.
        JobModel model;
        QueueView view(&model);
        view.resize(700, 400);
        view.show();
        model.addJob(1, QStringLiteral("a → NAS"), QStringLiteral("/mnt/nas"), QStringLiteral("/mnt/nas"), QString(),
                     false);
        SaneCopy::JobProgress p;
        p.jobId = 1;
        p.state = int(sanecopy::JobState::Running);
        p.totalBytes = 1000;
        p.writtenBytes = 400;
        p.durableBytes = 300;
        model.onProgress(p);
        QCoreApplication::processEvents();
        JobRow *row = view.rowFor(1);
        QVERIFY(row->pauseButton()->isVisible() && row->pauseButton()->isEnabled());
        row->cancelButton()->click();
        QVERIFY(!row->cancelButton()->isEnabled());
        QVERIFY(!row->pauseButton()->isEnabled());
        model.onProgress(p); // the job is still running until it stops: the row is refreshed meanwhile
        QCoreApplication::processEvents();
        QVERIFY(!row->pauseButton()->isEnabled());
        p.state = int(sanecopy::JobState::Paused); // and one that was paused is not offered Resume
        model.onProgress(p);
        QCoreApplication::processEvents();
        QVERIFY(!row->pauseButton()->isEnabled());
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
