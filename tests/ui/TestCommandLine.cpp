// SPDX-License-Identifier: GPL-2.0-or-later
#include "CommandLine.h"

#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestCommandLine : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parse_data()
    {
        QTest::addColumn<QList<QByteArray>>("args");
        QTest::addColumn<QList<QByteArray>>("files");
        QTest::addColumn<QByteArray>("destination");
        QTest::addColumn<bool>("startNow");
        QTest::addColumn<bool>("error");
        using L = QList<QByteArray>;
        QTest::newRow("nothing: empty window") << L {} << L {} << QByteArray() << false << false;
        QTest::newRow("files: ask where")
            << L {"a.iso", "/abs/b/"} << L {"/home/me/a.iso", "/abs/b"} << QByteArray() << false << false;
        QTest::newRow("--to: start at once") << L {"--to", "/media/STICK", "a.iso"} << L {"/home/me/a.iso"}
                                             << QByteArray("/media/STICK") << true << false;
        QTest::newRow("--to=") << L {"--to=/media/S", "x"} << L {"/home/me/x"} << QByteArray("/media/S") << true
                               << false;
        QTest::newRow("file URLs from a launcher")
            << L {"file:///tmp/with%20space", "file://localhost/tmp/caf%E9"} << L {"/tmp/with space", "/tmp/caf\xe9"}
            << QByteArray() << false << false;
        // regression: a name that is not UTF-8 must reach the engine as its own bytes
        QTest::newRow("raw non-UTF-8 bytes")
            << L {"/tmp/caf\xe9"} << L {"/tmp/caf\xe9"} << QByteArray() << false << false;
        // What Dolphin's %F passes for that name: the byte 0xE9 spelled as U+10FE69.
        QTest::newRow("KDE's spelling of it")
            << L {"/tmp/caf\xf4\x8f\xb9\xa9"} << L {"/tmp/caf\xe9"} << QByteArray() << false << false;
        QTest::newRow("a file named like an option, after --")
            << L {"--", "-x"} << L {"/home/me/-x"} << QByteArray() << false << false;
        QTest::newRow("--to without files") << L {"--to", "/x"} << L {} << QByteArray("/x") << false << true;
        QTest::newRow("unknown option") << L {"--bogus"} << L {} << QByteArray() << false << true;
    }
    void parse()
    {
        QFETCH(QList<QByteArray>, args);
        QFETCH(QList<QByteArray>, files);
        QFETCH(QByteArray, destination);
        QFETCH(bool, startNow);
        QFETCH(bool, error);
        const CommandLine cmd = parseCommandLine(args, "/home/me");
        QCOMPARE(!cmd.error.isEmpty(), error);
        if (error)
            return;
        QCOMPARE(cmd.files, files);
        QCOMPARE(cmd.destination, destination);
        QCOMPARE(cmd.startNow(), startNow);
    }

    void moveIsAnOption()
    {
        const CommandLine move = parseCommandLine({"--move", "a.iso"}, "/home/me");
        QVERIFY(move.error.isEmpty());
        QVERIFY(move.move);
        QCOMPARE(move.files, PathList {QByteArray("/home/me/a.iso")});
        QVERIFY(!parseCommandLine({"a.iso"}, "/home/me").move);
        // After "--" it is a file name like any other.
        const CommandLine file = parseCommandLine({"--", "--move"}, "/home/me");
        QVERIFY(!file.move);
        QCOMPARE(file.files, PathList {QByteArray("/home/me/--move")});
    }

    void versionAndHelpAreOptions()
    {
        const CommandLine version = parseCommandLine({"--version"}, "/home/me");
        QVERIFY(version.version && !version.help && version.error.isEmpty() && version.files.isEmpty());
        QVERIFY(parseCommandLine({"-h"}, "/home/me").help);
        QVERIFY(!parseCommandLine({"a.iso"}, "/home/me").version);
        // After "--", a file of that name.
        const CommandLine file = parseCommandLine({"--", "--version"}, "/home/me");
        QVERIFY(!file.version);
        QCOMPARE(file.files, PathList {QByteArray("/home/me/--version")});
    }

    void uriListDecodesToBytes()
    {
        const PathList paths = localPathsFromUriList("# a comment\r\nfile:///home/me/My%20Videos/caf%E9.mkv\r\n"
                                                     "smb://server/share/x\r\nfile://otherhost/x\r\n");
        QCOMPARE(paths, PathList {QByteArray("/home/me/My Videos/caf\xe9.mkv")});
    }
};

QTEST_GUILESS_MAIN(TestCommandLine)
#include "TestCommandLine.moc"
