// SPDX-License-Identifier: GPL-2.0-or-later
//
// The service menus as Dolphin runs them: each action's Exec line expanded by KIO::DesktopExecParser (what
// KIO's launcher uses), then started without a shell, as KIO does, against stand-ins for sanecopy and dolphin
// that record their argv. Paths with spaces, quotes, newlines, URL syntax and bytes that are not UTF-8 must
// arrive intact.
#include "catch.h"

#include "UrlMapping.h"

#include <KIO/DesktopExecParser>
#include <KService>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>

#include <ftw.h>
#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

using namespace SaneCopyKio;

namespace {

// Names as bytes: what is on disk.
const QByteArray kOddNames[] = {
    "plain",       "with space",  "quote\"d and 'single'", "new\nline", "hash#question?percent%41", "$HOME `x` \\ ;&|",
    "caf\xC3\xA9", "latin1-\xE9", "-starts-with-dash",
};

// The URL Dolphin holds for an item: the file worker's listing spells a name that is not UTF-8 the KDE way.
QUrl dolphinUrlFor(const QByteArray &dir, const QByteArray &name)
{
    return QUrl::fromLocalFile(decodeFileName(dir) + QLatin1Char('/') + decodeFileName(name));
}

KServiceAction onlyAction(const char *menuPath)
{
    KService menu(QString::fromUtf8(menuPath));
    REQUIRE(menu.isValid());
    const QList<KServiceAction> actions = menu.actions();
    REQUIRE(actions.size() == 1);
    return actions.first();
}

// The arguments KIO's launcher would start for an action with |exec| on |urls|. The parser resolves the
// program through PATH and returns nothing when it is not there, so the stand-ins must be on PATH first.
QStringList expand(const KServiceAction &action, const QString &exec, const QList<QUrl> &urls)
{
    const KService service(action.name(), exec, action.icon());
    KIO::DesktopExecParser parser(service, urls);
    const QStringList args = parser.resultingArguments();
    INFO(parser.errorMessage().toStdString());
    REQUIRE(!args.isEmpty());
    return args;
}

// A scratch folder that also goes when it holds names QDir can't spell (bytes that are not UTF-8).
class ScratchDir {
public:
    ScratchDir()
    {
        char templ[] = "/var/tmp/sanecopy-menu-test-XXXXXX";
        REQUIRE(::mkdtemp(templ));
        path_ = templ;
    }
    ~ScratchDir()
    {
        auto removeOne = [](const char *p, const struct stat *, int, FTW *) {
            ::remove(p);
            return 0;
        };
        ::nftw(path_.constData(), removeOne, 16, FTW_DEPTH | FTW_PHYS);
    }
    const QByteArray &path() const { return path_; }
    QString filePath(const char *name) const
    {
        return QFile::decodeName(path_) + QLatin1Char('/') + QLatin1String(name);
    }

private:
    QByteArray path_;
};

// Puts record_argv.py on PATH as |names|, for this process and what it starts.
void installStandIns(const ScratchDir &tmp, std::initializer_list<const char *> names)
{
    const QString bin = tmp.filePath("bin");
    QDir().mkpath(bin);
    for (const char *name : names) {
        const QString link = bin + QLatin1Char('/') + QLatin1String(name);
        QFile::remove(link);
        REQUIRE(QFile::link(QStringLiteral(FAKE_PROGRAM), link));
    }
    qputenv("PATH", QFile::encodeName(bin) + ':' + qgetenv("PATH"));
    qputenv("RECORD_ARGV_TO", QFile::encodeName(tmp.filePath("argv.jsonl")));
}

// Starts |args| as KIO's launcher does (QProcess, no shell) and returns the argv the stand-in recorded.
QList<QByteArray> runRecorded(const QStringList &args, const ScratchDir &tmp)
{
    const QString record = tmp.filePath("argv.jsonl");
    QFile::remove(record);
    QProcess p;
    p.setProcessChannelMode(QProcess::ForwardedChannels);
    p.start(args.first(), args.mid(1));
    REQUIRE(p.waitForFinished(30000));
    REQUIRE(p.exitStatus() == QProcess::NormalExit);
    REQUIRE(p.exitCode() == 0);

    QFile f(record);
    REQUIRE(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().split('\n');
    QList<QByteArray> argv;
    for (const QJsonValue &v : QJsonDocument::fromJson(lines.first()).array())
        argv.append(QByteArray::fromHex(v.toString().toLatin1()));
    return argv;
}

} // namespace

TEST_CASE("service menu Safe Copy To: each selected item is one argument of sanecopy, byte for byte")
{
    ScratchDir tmp;
    installStandIns(tmp, {"sanecopy"});
    QList<QUrl> urls;
    QList<QByteArray> expected;
    for (const QByteArray &name : kOddNames) {
        const QByteArray path = tmp.path() + '/' + name;
        REQUIRE(::mkdir(path.constData(), 0755) == 0);
        urls.append(dolphinUrlFor(tmp.path(), name));
        expected.append(path);
    }

    const KServiceAction action = onlyAction(SAFE_COPY_MENU);
    CHECK(action.text() == QString::fromUtf8("Safe Copy To\xE2\x80\xA6"));
    CHECK(action.exec() == QLatin1String("sanecopy %U"));
    const QStringList args = expand(action, action.exec(), urls);
    REQUIRE(args.size() == 1 + urls.size());
    CHECK(args.first().endsWith(QLatin1String("/bin/sanecopy"))); // the program itself, not "/bin/sh -c ..."

    const QList<QByteArray> argv = runRecorded(args, tmp);
    REQUIRE(argv.size() == 1 + expected.size());
    for (int i = 0; i < expected.size(); ++i) {
        INFO(expected[i].toHex().constData());
        // UTF-8 names arrive as they are. A name that is not UTF-8 arrives in KDE's spelling written as UTF-8
        // (Dolphin's process has no codec that turns it back); legacyBytesToRaw recovers the bytes.
        CHECK(legacyBytesToRaw(argv[i + 1]) == expected[i]);
        if (QString::fromUtf8(expected[i]).toUtf8() == expected[i])
            CHECK(argv[i + 1] == expected[i]);
    }
}

TEST_CASE("service menu Safe Move To: sanecopy --move, then each selected item as one argument")
{
    ScratchDir tmp;
    installStandIns(tmp, {"sanecopy"});
    const QByteArray path = tmp.path() + "/folder with space";
    REQUIRE(::mkdir(path.constData(), 0755) == 0);
    const QList<QUrl> urls {dolphinUrlFor(tmp.path(), "folder with space")};
    const KServiceAction action = onlyAction(SAFE_MOVE_MENU);
    CHECK(action.text() == QString::fromUtf8("Safe Move To\xE2\x80\xA6"));
    CHECK(action.exec() == QLatin1String("sanecopy --move %U"));
    const QList<QByteArray> argv = runRecorded(expand(action, action.exec(), urls), tmp);
    REQUIRE(argv.size() == 3);
    CHECK(argv[1] == "--move");
    CHECK(argv[2] == path);
}

TEST_CASE("service menus on a network folder: offered there, and sanecopy gets the URL itself, never a download")
{
    ScratchDir tmp;
    installStandIns(tmp, {"sanecopy"});
    for (const char *path : {SAFE_COPY_MENU, SAFE_MOVE_MENU}) {
        INFO(path);
        // Dolphin offers a menu where its X-KDE-Protocols names the folder's protocol.
        QFile file(QString::fromUtf8(path));
        REQUIRE(file.open(QIODevice::ReadOnly));
        QStringList protocols;
        for (const QByteArray &line : file.readAll().split('\n'))
            if (line.startsWith("X-KDE-Protocols="))
                protocols = QString::fromUtf8(line.mid(16)).split(QLatin1Char(','));
        for (const char *wanted : {"file", "smb", "sftp", "webdav"})
            CHECK(protocols.contains(QLatin1String(wanted)));

        // As Dolphin runs the action: the menu's own service (its protocols) with the action's Exec line.
        KService service(QString::fromUtf8(path));
        const KServiceAction action = onlyAction(path);
        service.setExec(action.exec());
        const QUrl url(QStringLiteral("smb://nas/photos/2024 trip"));
        KIO::DesktopExecParser parser(service, {url});
        const QStringList args = parser.resultingArguments();
        REQUIRE(!args.isEmpty());
        // The program itself (not kioexec, which would download the folder into a temporary one first), then
        // the URL as Dolphin shows it.
        CHECK(args.first().endsWith(QLatin1String("/bin/sanecopy")));
        CHECK(args.last() == url.toString());
    }
}

TEST_CASE("service menu Open as Safe Copy Target: dolphin gets the sanecopy: URL of exactly that folder")
{
    ScratchDir tmp;
    installStandIns(tmp, {"dolphin"});
    const KServiceAction action = onlyAction(OPEN_TARGET_MENU);
    CHECK(action.text() == QLatin1String("Open as Safe Copy Target"));
    // The helper by its installed absolute path, then %F. It is not installed yet: the build tree's takes its place.
    const QStringList execWords = action.exec().split(QLatin1Char(' '));
    REQUIRE(execWords.size() == 2);
    CHECK(execWords[0].startsWith(QLatin1Char('/')));
    CHECK(execWords[0].endsWith(QLatin1String("/sanecopy-open-target")));
    CHECK(execWords[1] == QLatin1String("%F"));
    const QString exec = QStringLiteral(OPEN_TARGET_HELPER) + QLatin1String(" %F");

    for (const QByteArray &name : kOddNames) {
        INFO(name.toHex().constData());
        const QByteArray path = tmp.path() + '/' + name;
        REQUIRE(::mkdir(path.constData(), 0755) == 0);
        const QStringList args = expand(action, exec, {dolphinUrlFor(tmp.path(), name)});
        REQUIRE(args.size() == 2);
        CHECK(args.first() == QStringLiteral(OPEN_TARGET_HELPER));
        const QList<QByteArray> argv = runRecorded(args, tmp);
        REQUIRE(argv.size() == 3);
        CHECK(argv[1] == "--new-window");
        CHECK(argv[2].startsWith("sanecopy:///"));
        const auto mapped = localPathFromUrl(QUrl::fromEncoded(argv[2], QUrl::StrictMode));
        REQUIRE(mapped.has_value());
        CHECK(*mapped == path);
    }
}
