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
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QStringList>("files");
        QTest::addColumn<QString>("destination");
        QTest::addColumn<bool>("startNow");
        QTest::addColumn<bool>("error");
        const QString cwd = QStringLiteral("/home/me");
        QTest::newRow("nothing: empty window") << QStringList{} << QStringList{} << QString() << false << false;
        QTest::newRow("files: ask where")
            << QStringList{QStringLiteral("a.iso"), QStringLiteral("/abs/b")}
            << QStringList{QStringLiteral("/home/me/a.iso"), QStringLiteral("/abs/b")} << QString() << false << false;
        QTest::newRow("--to: start at once")
            << QStringList{QStringLiteral("--to"), QStringLiteral("/media/STICK"), QStringLiteral("a.iso")}
            << QStringList{QStringLiteral("/home/me/a.iso")} << QStringLiteral("/media/STICK") << true << false;
        QTest::newRow("file URLs from a launcher")
            << QStringList{QStringLiteral("file:///tmp/with%20space")} << QStringList{QStringLiteral("/tmp/with space")}
            << QString() << false << false;
        QTest::newRow("--to without files") << QStringList{QStringLiteral("--to"), QStringLiteral("/x")} << QStringList{}
                                            << QStringLiteral("/x") << false << true;
        QTest::newRow("unknown option") << QStringList{QStringLiteral("--bogus")} << QStringList{} << QString() << false << true;
    }
    void parse()
    {
        QFETCH(QStringList, args);
        QFETCH(QStringList, files);
        QFETCH(QString, destination);
        QFETCH(bool, startNow);
        QFETCH(bool, error);
        const CommandLine cmd = parseCommandLine(QStringList{QStringLiteral("sanecopy")} + args, QStringLiteral("/home/me"));
        QCOMPARE(!cmd.error.isEmpty(), error);
        if (error)
            return;
        QCOMPARE(cmd.files, files);
        QCOMPARE(cmd.destination, destination);
        QCOMPARE(cmd.startNow(), startNow);
    }
};

QTEST_GUILESS_MAIN(TestCommandLine)
#include "TestCommandLine.moc"
