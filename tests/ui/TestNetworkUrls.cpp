// SPDX-License-Identifier: GPL-2.0-or-later
//
// Network URLs on sanecopy's command line (Dolphin's "Safe Copy To…" on an smb:// or sftp:// folder hands them
// over with %U): each goes through the folder kio-fuse mounts for it, or the user is told in one sentence how to
// get a safe copy there, and nothing is queued in its place. kio-fuse is a stand-in on a private session bus
// that answers as org.kde.KIOFuse does.
#include "CommandLine.h"
#include "NetworkUrls.h"
#include "PrivateBus.h"

#include <QDBusConnection>
#include <QDBusContext>
#include <QDir>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

using namespace SaneCopy;

namespace {

// kio-fuse's VFS interface: mountUrl(url) gives the local path, ROOT/scheme/authority/path, as kio-fuse lays its
// mount out; or refuses, as kio-fuse does when the server can't be reached.
class FakeKioFuse
    : public QObject
    , protected QDBusContext {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.kde.KIOFuse.VFS")
public:
    QString root = QStringLiteral("/run/user/1000/kio-fuse-Xy12");
    QStringList asked;
    QString refuseWith; // non-empty: every mount fails with this message

public Q_SLOTS:
    Q_SCRIPTABLE QString mountUrl(const QString &remoteUrl)
    {
        asked << remoteUrl;
        if (!refuseWith.isEmpty()) {
            sendErrorReply(QStringLiteral("org.kde.KIOFuse.VFS.Error.CannotMount"), refuseWith);
            return {};
        }
        const QUrl url(remoteUrl);
        return root + QLatin1Char('/') + url.scheme() + QLatin1Char('/') + url.authority() + url.path();
    }
};

// One sentence: it ends with a full stop and has none before (the URLs here have no dots).
bool oneSentence(const QString &text)
{
    return text.endsWith(QLatin1Char('.')) && !text.chopped(1).contains(QLatin1String(". "));
}

} // namespace

class TestNetworkUrls : public QObject {
    Q_OBJECT

    Test::PrivateBus bus_;
    QString address_;

    QDBusConnection client() { return QDBusConnection::connectToBus(address_, QStringLiteral("client")); }

private Q_SLOTS:
    void initTestCase() { SANECOPY_START_PRIVATE_BUS(bus_, address_); }

    void networkUrlsAreKeptApartFromPaths()
    {
        QTemporaryDir cwd;
        QVERIFY(cwd.isValid());
        const QByteArray here = QFile::encodeName(cwd.path());
        // A local folder that happens to be called "smb:" is a path, as it always was.
        QVERIFY(QDir(cwd.path()).mkpath(QStringLiteral("smb:/nas")));
        const CommandLine cmd = parseCommandLine(
            {"smb://nas/photos/a.jpg", "file:///tmp/b.txt", "smb:/nas", "--to", "sftp://me@box/home/me"}, here);
        QVERIFY(cmd.error.isEmpty());
        QCOMPARE(cmd.networkFiles, QList<QByteArray> {"smb://nas/photos/a.jpg"});
        QCOMPARE(cmd.files, (PathList {"/tmp/b.txt", here + "/smb:/nas"}));
        QCOMPARE(cmd.networkDestination, QByteArray("sftp://me@box/home/me"));
        QVERIFY(cmd.destination.isEmpty());
        QVERIFY(!cmd.startNow()); // not before the URLs have paths

        // Network files alone are files to copy: --to does not complain of none.
        const CommandLine only = parseCommandLine({"--to", "/media/me/STICK", "sftp://box/x"}, here);
        QVERIFY2(only.error.isEmpty(), qPrintable(only.error));
        QCOMPARE(only.networkFiles.size(), 1);
    }

    void eachUrlIsCopiedThroughItsKioFuseFolder()
    {
        QDBusConnection service = QDBusConnection::connectToBus(address_, QStringLiteral("kiofuse"));
        FakeKioFuse fuse;
        QVERIFY(
            service.registerObject(QStringLiteral("/org/kde/KIOFuse"), &fuse, QDBusConnection::ExportScriptableSlots));
        QVERIFY(service.registerService(QStringLiteral("org.kde.KIOFuse")));

        CommandLine cmd = parseCommandLine(
            {"smb://nas/photos/a.jpg", "sftp://me@box/home/me/b", "--to", "smb://nas/backup"}, "/home/me");
        resolveNetworkUrls(cmd, client(), 10000);
        QVERIFY2(cmd.problems.isEmpty(), qPrintable(cmd.problems.join(QLatin1Char('\n'))));
        QCOMPARE(cmd.files, (PathList {"/run/user/1000/kio-fuse-Xy12/smb/nas/photos/a.jpg",
                                       "/run/user/1000/kio-fuse-Xy12/sftp/me@box/home/me/b"}));
        QCOMPARE(cmd.destination, QByteArray("/run/user/1000/kio-fuse-Xy12/smb/nas/backup"));
        QVERIFY(cmd.networkFiles.isEmpty() && cmd.networkDestination.isEmpty());
        QVERIFY(cmd.startNow());
        QCOMPARE(fuse.asked,
                 (QStringList {QStringLiteral("smb://nas/photos/a.jpg"), QStringLiteral("sftp://me@box/home/me/b"),
                               QStringLiteral("smb://nas/backup")}));

        // kio-fuse runs but can't reach the server: said, with its reason, and nothing queued.
        fuse.refuseWith = QStringLiteral("The host nas is not reachable");
        CommandLine down = parseCommandLine({"smb://nas/photos/a.jpg"}, "/home/me");
        resolveNetworkUrls(down, client(), 10000);
        QVERIFY(down.files.isEmpty());
        QCOMPARE(down.problems.size(), 1);
        QVERIFY2(down.problems[0].contains(QLatin1String("smb://nas/photos/a.jpg")) &&
                     down.problems[0].contains(QLatin1String("The host nas is not reachable")),
                 qPrintable(down.problems[0]));
        QVERIFY2(oneSentence(down.problems[0]), qPrintable(down.problems[0]));
        service.unregisterService(QStringLiteral("org.kde.KIOFuse"));
        service.unregisterObject(QStringLiteral("/org/kde/KIOFuse"));
    }

    void withoutKioFuseOneSentenceSaysHowAndNothingIsQueued()
    {
        CommandLine cmd = parseCommandLine({"sftp://me@box/home/me/b", "--to", "/media/me/STICK"}, "/home/me");
        resolveNetworkUrls(cmd, client(), 10000);
        QVERIFY(cmd.files.isEmpty());
        QVERIFY(!cmd.startNow());
        QCOMPARE(cmd.problems.size(), 1);
        const QString said = cmd.problems[0];
        QVERIFY2(said.contains(QLatin1String("sftp://me@box/home/me/b")) && said.contains(QLatin1String("kio-fuse")) &&
                     said.contains(QLatin1String("mount")),
                 qPrintable(said));
        QVERIFY2(oneSentence(said), qPrintable(said));
    }
};

QTEST_MAIN(TestNetworkUrls)
#include "TestNetworkUrls.moc"
