// SPDX-License-Identifier: GPL-2.0-or-later
//
// One window per session: a second sanecopy hands its files to the first over D-Bus and exits 0. Runs a private
// dbus-daemon, never the user's session bus. The second sanecopy is this binary run again with --hand-over,
// which does what sanecopy's main() does first.
#include "JobModel.h"
#include "MainWindow.h"
#include "SingleInstance.h"
#include "SourceDropArea.h"

#include <QApplication>
#include <QDBusConnection>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <memory>
#include <vector>

#include "PrivateBus.h"

#include <fcntl.h>
#include <unistd.h>

using namespace SaneCopy;

class TestSingleInstance : public QObject {
    Q_OBJECT

    Test::PrivateBus bus_;
    QString address_;

    // The second sanecopy, with ARGS (hex-encoded on the way: QProcess passes arguments as text, and a name
    // that is not UTF-8 would not survive it); returns its exit code.
    int handOver(const QList<QByteArray> &bytes)
    {
        QStringList args;
        for (const QByteArray &b : bytes)
            args << QString::fromLatin1(b.toHex());
        QProcess second;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), address_);
        second.setProcessEnvironment(env);
        second.setProcessChannelMode(QProcess::ForwardedChannels);
        second.start(QCoreApplication::applicationFilePath(), QStringList {QStringLiteral("--hand-over")} + args);
        // The first window answers from this thread's event loop: wait with it running.
        QSignalSpy done(&second, &QProcess::finished);
        if (!done.wait(20000))
            return -1;
        return second.exitCode();
    }

    // sanecopy started N times at once, each with a file of its own (this binary run with --start, which does
    // what sanecopy's main() does).
    QList<int> startTogether(const QList<QByteArray> &files)
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), address_);
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        std::vector<std::unique_ptr<QProcess>> starts;
        for (const QByteArray &file : files) {
            starts.push_back(std::make_unique<QProcess>());
            starts.back()->setProcessEnvironment(env);
            starts.back()->setProcessChannelMode(QProcess::ForwardedChannels);
            starts.back()->start(
                QCoreApplication::applicationFilePath(),
                {QStringLiteral("--start"), QString::number(files.size()), QString::fromLatin1(file.toHex())});
        }
        QList<int> codes;
        for (auto &p : starts)
            codes << (p->waitForFinished(30000) && p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1);
        return codes;
    }

private Q_SLOTS:
    void initTestCase() { SANECOPY_START_PRIVATE_BUS(bus_, address_); }

    void aSecondStartHandsItsFilesToTheFirstWindow()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        const QByteArray odd = QFile::encodeName(dir.path()) + "/caf\xe9.txt"; // not UTF-8
        // Made from the bytes: QFile would store its text, U+FFFD for the \xe9.
        const int fd = ::open(odd.constData(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        QVERIFY(fd >= 0);
        QCOMPARE(::write(fd, "x", 1), ssize_t(1));
        ::close(fd);
        QDBusConnection bus = QDBusConnection::connectToBus(address_, QStringLiteral("first"));
        QVERIFY(bus.isConnected());
        {
            MainWindow w;
            SingleInstance instance(&w, bus);
            QVERIFY(instance.isPrimary());
            // Another window on the same bus is not the one.
            MainWindow other;
            QVERIFY(
                !SingleInstance(&other, QDBusConnection::connectToBus(address_, QStringLiteral("other"))).isPrimary());

            QCOMPARE(handOver({odd}), 0);
            QCOMPARE(w.sourceArea()->sources(), PathList {odd});
            QCOMPARE(w.model()->rowCount(), 0); // no destination given: the window asks for one

            QDir(dir.path()).mkdir(QStringLiteral("out"));
            QSignalSpy queued(&w, &MainWindow::jobQueued);
            QSignalSpy problems(&w, &MainWindow::problemsShown);
            QCOMPARE(handOver({"--to", QFile::encodeName(dir.filePath(QStringLiteral("out"))), odd}), 0);
            QTRY_VERIFY_WITH_TIMEOUT(queued.count() > 0 || problems.count() > 0, 10000);
            QVERIFY2(problems.isEmpty(), qPrintable(problems.value(0).value(0).toStringList().join(QLatin1Char('\n'))));
            QTRY_VERIFY_WITH_TIMEOUT(w.model()->index(0).data(JobModel::FinishedRole).toBool(), 20000);
            QVERIFY(::access((QFile::encodeName(dir.filePath(QStringLiteral("out"))) + "/caf\xe9.txt").constData(),
                             F_OK) == 0);
        }
        // The window is gone: nothing takes the files, and the second start opens its own window.
        QCOMPARE(handOver({odd}), 3);
        // QTemporaryDir removes by name as text, which misses these two.
        ::unlink(odd.constData());
        ::unlink((QFile::encodeName(dir.filePath(QStringLiteral("out"))) + "/caf\xe9.txt").constData());
    }

    void startsAtTheSameMomentEndInOneWindow()
    {
        // Four "Safe Copy To…" clicks in a row: each start looks for a window before it has made its own, so
        // several may find none. Whatever the timing, one window must end up with all four files.
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QList<QByteArray> files;
        for (int i = 0; i < 4; ++i) {
            files << QFile::encodeName(dir.filePath(QStringLiteral("f%1").arg(i)));
            QFile f(QFile::decodeName(files.last()));
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        for (int round = 0; round < 3; ++round) {
            const QList<int> codes = startTogether(files);
            QCOMPARE(codes.count(0), 3);       // handed over and gone
            QCOMPARE(codes.count(100 + 4), 1); // the window, holding all four
        }
    }
};

// What sanecopy's main() does, up to the window's own list; the one window waits for the other starts' files,
// then exits with 100 + how many it holds. Any other exit code is a start that neither handed over nor became
// the window.
static int startLikeSanecopy(int argc, char **argv)
{
    QApplication app(argc, argv);
    const int expected = QByteArray(argv[2]).toInt();
    const CommandLine cmd = parseCommandLine({QByteArray::fromHex(argv[3])}, "/");
    if (SingleInstance::handOver(cmd))
        return 0;
    MainWindow window;
    SingleInstance instance(&window);
    if (instance.lostTheName() && SingleInstance::handOver(cmd))
        return 0;
    if (!instance.isPrimary())
        return 2;
    window.applyCommandLine(cmd);
    // The exit code says how many arrived, also when some never did.
    (void)QTest::qWaitFor([&] { return window.sourceArea()->sources().size() >= expected; }, 20000);
    // Late hand-overs would still be answered: give a start that lost the name a moment to be turned away.
    QTest::qWait(300);
    return 100 + int(window.sourceArea()->sources().size());
}

int main(int argc, char **argv)
{
    if (argc >= 4 && qstrcmp(argv[1], "--start") == 0)
        return startLikeSanecopy(argc, argv);
    if (argc >= 2 && qstrcmp(argv[1], "--hand-over") == 0) {
        QCoreApplication app(argc, argv);
        QList<QByteArray> args;
        for (int i = 2; i < argc; ++i)
            args << QByteArray::fromHex(argv[i]);
        return SingleInstance::handOver(parseCommandLine(args, "/")) ? 0 : 3;
    }
    QApplication app(argc, argv);
    TestSingleInstance test;
    return QTest::qExec(&test, argc, argv);
}

#include "TestSingleInstance.moc"
