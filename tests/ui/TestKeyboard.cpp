// SPDX-License-Identifier: GPL-2.0-or-later
//
// The window by keyboard alone, offscreen: Tab visits the controls in reading order, and the main path (add a
// file through the file dialog, pick the stick, start, pause, resume, cancel; Eject on a finished copy of a
// stick) needs no mouse. Every key goes to the widget that has the focus, as a real key press would.
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "QueueView.h"
#include "SourceDropArea.h"
#include "WindowFixtures.h"
#include "fault_syscalls.h"

#include <QAccessible>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QLineEdit>
#include <QListWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolButton>

using namespace SaneCopy;
using sanecopy::JobState;
using SaneCopy::Test::stickAt;

namespace {

// What a screen reader calls the widget: its accessible name, or for a button its text without the '&'. (A
// combo box's accessible Name is its current entry on Linux, where its label comes as a relation: its own
// accessibleName is the one to compare.)
QString nameOf(QWidget *w)
{
    if (!w)
        return {};
    if (!w->accessibleName().isEmpty())
        return w->accessibleName();
    QAccessibleInterface *a = QAccessible::queryAccessibleInterface(w);
    return a ? a->text(QAccessible::Name) : QString();
}

QWidget *focused() { return QApplication::focusWidget(); }

// Tab from where the focus is until a widget named |name| has it; false after |most| presses.
bool tabTo(const QString &name, int most = 30)
{
    for (int i = 0; i < most; ++i) {
        if (nameOf(focused()) == name)
            return true;
        QTest::keyClick(focused(), Qt::Key_Tab);
    }
    return nameOf(focused()) == name;
}

// Once a file dialog is up and active, types |path| where its focus is (the file name) and presses Enter, as a
// user would; |typedInto| gets the focused widget's object name. Polls, because the dialog may be modal and its
// own event loop runs meanwhile.
void answerFileDialog(const QString &path, QString *typedInto)
{
    auto *poll = new QTimer;
    QObject::connect(poll, &QTimer::timeout, poll, [poll, path, typedInto] {
        auto *dialog = qobject_cast<QFileDialog *>(QApplication::activeWindow());
        if (!dialog || !dialog->isVisible() || !dialog->focusWidget())
            return;
        poll->stop();
        poll->deleteLater();
        *typedInto = dialog->focusWidget()->objectName();
        QTest::keyClicks(dialog->focusWidget(), path);
        QTest::keyClick(dialog->focusWidget(), Qt::Key_Return);
    });
    poll->start(50);
}

} // namespace

class TestKeyboard : public QObject {
    Q_OBJECT

    // From the list of files: Tab to "Add files…", Space; the file dialog opens with the focus on the file name;
    // |source| typed, Enter.
    static void addFileByKeyboard(MainWindow &w, const QString &source)
    {
        QVERIFY(tabTo(QStringLiteral("Add files…")));
        QString typedInto;
        answerFileDialog(source, &typedInto);
        QTest::keyClick(focused(), Qt::Key_Space);
        QTRY_COMPARE(w.sourceArea()->sources(), PathList {QFile::encodeName(source)});
        QCOMPARE(typedInto, QStringLiteral("fileNameEdit"));
        // On a desktop the window manager gives the window back its activation when the dialog goes; the offscreen
        // platform has none. The focus within the window stayed where it was.
        w.activateWindow();
        QTRY_VERIFY(w.isActiveWindow());
        QCOMPARE(nameOf(focused()), QStringLiteral("Add files…"));
    }

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void tabVisitsTheControlsInReadingOrder()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        // Something to copy and somewhere to: then every control of the top is enabled, and Tab stops at each.
        w.sourceArea()->addSources({QFile::encodeName(dir.path())});
        w.destinationPicker()->setDevices({stickAt(dir.path())});
        w.sourceArea()->findChild<QListWidget *>()->setFocus();
        QStringList seen;
        for (int i = 0; i < 13; ++i) {
            seen << nameOf(focused());
            QTest::keyClick(focused(), Qt::Key_Tab);
        }
        const QStringList expected {
            QStringLiteral("Files to copy"),   QStringLiteral("Add files…"),  QStringLiteral("Add folder…"),
            QStringLiteral("Clear"),           QStringLiteral("Destination"), QStringLiteral("Browse…"),
            QStringLiteral("Refresh"),         QStringLiteral("Verify"),      QStringLiteral("Move"),
            QStringLiteral("Write checksums"), QStringLiteral("Copy"),
            QStringLiteral("Copies"),        // Clear Finished has nothing to clear: skipped
            QStringLiteral("Files to copy"), // and round again
        };
        QCOMPARE(seen, expected);
    }

    void theMainPathByKeyboardAlone()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("stick"));
        const QString source = dir.filePath(QStringLiteral("big.bin"));
        {
            QFile f(source);
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write(QByteArray(40 << 20, 'k')) == 40 << 20);
        }
        auto slow = sanecopy::test::SlowSeam::to_watch(); // about 3 s for the file: time to pause and cancel
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        // A stick is plugged in (listed as the watcher would list it); the user starts at the list of files.
        w.destinationPicker()->setDevices({stickAt(dir.filePath(QStringLiteral("stick")))});
        w.sourceArea()->findChild<QListWidget *>()->setFocus();

        addFileByKeyboard(w, source);
        if (QTest::currentTestFailed())
            return;

        // The stick: in the destination list, arrows pick an entry (the stick is first).
        QVERIFY(tabTo(QStringLiteral("Destination")));
        QTest::keyClick(focused(), Qt::Key_End);
        QTest::keyClick(focused(), Qt::Key_Home);
        QCOMPARE(w.destinationPicker()->destination(), dir.filePath(QStringLiteral("stick")));

        // Copy, by Tab past the choices, then Space.
        QSignalSpy queued(&w, &MainWindow::jobQueued);
        QVERIFY(tabTo(QStringLiteral("Copy")));
        QTest::keyClick(focused(), Qt::Key_Space);
        QVERIFY(queued.wait(10000));
        QTRY_VERIFY(w.model()->rowCount() == 1 && w.model()->anyRunning());
        auto state = [&] { return JobState(w.model()->index(0).data(JobModel::StateRole).toInt()); };

        // Into the copy's row, once it runs (queued, its Pause is not yet enabled): Pause, then the same button (now
        // Resume) again.
        QTRY_COMPARE(state(), JobState::Running);
        QVERIFY2(tabTo(QStringLiteral("Pause")), qPrintable(nameOf(focused()) + QStringLiteral(": ") +
                                                            w.model()->index(0).data(JobModel::StatusRole).toString()));
        QTest::keyClick(focused(), Qt::Key_Space);
        QTRY_COMPARE(state(), JobState::Paused);
        QCOMPARE(nameOf(focused()), QStringLiteral("Resume"));
        QTest::keyClick(focused(), Qt::Key_Space);
        QTRY_COMPARE(state(), JobState::Running);

        // Cancel: the next stop.
        QTest::keyClick(focused(), Qt::Key_Tab);
        QCOMPARE(nameOf(focused()), QStringLiteral("Cancel"));
        QTest::keyClick(focused(), Qt::Key_Space);
        QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::FinishedRole).toBool(), 20000);
        QCOMPARE(state(), JobState::Cancelled);
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("stick/big.bin"))));
    }

    void ejectIsOneTabAndSpaceAwayOnAFinishedStick()
    {
        JobModel model;
        QueueView view(&model);
        view.setEjectAvailable(true);
        model.addJob(1, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                     QStringLiteral("sdb1"), true);
        model.onFinished(1, true, false, 10, 1, 0);
        view.show();
        view.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&view));
        QSignalSpy eject(&view, &QueueView::ejectRequested);
        // The finished row's buttons in order: Eject, Details…, Clear.
        QList<QToolButton *> buttons;
        for (QToolButton *b : view.rowFor(1)->findChildren<QToolButton *>())
            if (b->isVisibleTo(&view) && b->focusPolicy() & Qt::TabFocus)
                buttons << b;
        QVERIFY(!buttons.isEmpty());
        buttons.first()->setFocus();
        QCOMPARE(nameOf(focused()), QStringLiteral("Eject"));
        QTest::keyClick(focused(), Qt::Key_Tab);
        QCOMPARE(nameOf(focused()), QStringLiteral("Details…"));
        QTest::keyClick(focused(), Qt::Key_Tab);
        QCOMPARE(nameOf(focused()), QStringLiteral("Clear"));
        QTest::keyClick(focused(), Qt::Key_Backtab);
        QTest::keyClick(focused(), Qt::Key_Backtab);
        QTest::keyClick(focused(), Qt::Key_Space);
        QCOMPARE(eject.count(), 1);
        QCOMPARE(eject.first().first().toULongLong(), quint64(1));
    }
};

QTEST_MAIN(TestKeyboard)
#include "TestKeyboard.moc"
