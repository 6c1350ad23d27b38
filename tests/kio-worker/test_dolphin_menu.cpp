// SPDX-License-Identifier: GPL-2.0-or-later
//
// The service menus in a file's and a folder's context menu, built by the code Dolphin builds its menu with:
// KFileItemActions::addActionsTo over the selection's KFileItemListProperties (Dolphin's DolphinContextMenu
// does exactly this), reading the menus from a user's data folder as an install puts them there. Choosing
// "Safe Copy To…" goes through KIO's own launcher (ApplicationLauncherJob), as a click in Dolphin does, and a
// stand-in sanecopy records what it was started with.
#include "catch.h"
#include "context_menu.h"

#include <KFileItem>
#include <KFileItemActions>
#include <KFileItemListProperties>

#include <QAction>
#include <QApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMenu>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QWidget>

#include <memory>

namespace {

const QString kSafeCopyTo = QString::fromUtf8("Safe Copy To\xE2\x80\xA6");
const QString kSafeMoveTo = QString::fromUtf8("Safe Move To\xE2\x80\xA6");
const QString kOpenAsTarget = QStringLiteral("Open as Safe Copy Target");

// A user's home for the test: XDG_DATA_HOME holds the two menus (executable, as KIO's launcher demands of a
// menu that root does not own), XDG_CONFIG_HOME is empty (no kservicemenurc hides an entry), and PATH starts
// with a stand-in sanecopy.
class MenuHome {
public:
    MenuHome()
    {
        REQUIRE(tmp.isValid());
        const QString menus = path(QStringLiteral("data/kio/servicemenus"));
        REQUIRE(QDir().mkpath(menus));
        REQUIRE(QDir().mkpath(path(QStringLiteral("config"))));
        REQUIRE(QDir().mkpath(path(QStringLiteral("bin"))));
        for (const char *menu : {SAFE_COPY_MENU, SAFE_MOVE_MENU, OPEN_TARGET_MENU}) {
            const QString from = QString::fromUtf8(menu);
            const QString to = menus + QLatin1Char('/') + QFileInfo(from).fileName();
            REQUIRE(QFile::copy(from, to));
            REQUIRE(QFile::setPermissions(to, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
        }
        REQUIRE(QFile::link(QStringLiteral(FAKE_PROGRAM), path(QStringLiteral("bin/sanecopy"))));
        qputenv("XDG_DATA_HOME", QFile::encodeName(path(QStringLiteral("data"))));
        qputenv("XDG_CONFIG_HOME", QFile::encodeName(path(QStringLiteral("config"))));
        qputenv("PATH", QFile::encodeName(path(QStringLiteral("bin"))) + ':' + qgetenv("PATH"));
        qputenv("RECORD_ARGV_TO", QFile::encodeName(record()));
        // KIO's launcher asks systemd over the session bus for a scope first; plain fork/exec keeps the test
        // independent of the machine's session.
        qputenv("_KDE_APPLICATIONS_AS_FORKING", "1");
        REQUIRE(QDir().mkpath(path(QStringLiteral("items/folder with space"))));
        QFile file(path(QStringLiteral("items/caf\xC3\xA9 file.txt")));
        REQUIRE(file.open(QIODevice::WriteOnly));
        file.write("some bytes\n");
    }

    QString path(const QString &rel) const { return tmp.path() + QLatin1Char('/') + rel; }
    QString record() const { return path(QStringLiteral("argv.jsonl")); }
    QString file() const { return path(QString::fromUtf8("items/caf\xC3\xA9 file.txt")); }
    QString folder() const { return path(QStringLiteral("items/folder with space")); }

private:
    QTemporaryDir tmp {QDir::tempPath() + QStringLiteral("/sanecopy-dolphin-menu-XXXXXX")};
};

} // namespace

TEST_CASE("Dolphin's context menu of a file lists Safe Copy To, not Open as Safe Copy Target")
{
    MenuHome home;
    ContextMenu m({home.file()});
    CHECK(findAction(m.menu, kSafeCopyTo) != nullptr);
    CHECK(findAction(m.menu, kSafeMoveTo) != nullptr);
    CHECK(findAction(m.menu, kOpenAsTarget) == nullptr);
}

TEST_CASE("Dolphin's context menu of a folder lists Safe Copy To and Open as Safe Copy Target")
{
    MenuHome home;
    ContextMenu m({home.folder()});
    QAction *copy = findAction(m.menu, kSafeCopyTo);
    QAction *open = findAction(m.menu, kOpenAsTarget);
    REQUIRE(copy != nullptr);
    REQUIRE(open != nullptr);
    // TopLevel: in the menu itself, not in an "Actions" submenu a user has to find.
    CHECK(m.menu.actions().contains(copy));
    CHECK(m.menu.actions().contains(open));
}

TEST_CASE("Choosing Safe Copy To on a file and a folder starts sanecopy with exactly those paths")
{
    MenuHome home;
    ContextMenu m({home.file(), home.folder()});
    QAction *copy = findAction(m.menu, kSafeCopyTo);
    REQUIRE(copy != nullptr);
    copy->trigger();

    // The launcher forks inside trigger() and reports through queued signals; an error would open a modal
    // message box (KDialogJobUiDelegate), which is read and closed here instead of hanging the test.
    QString modalText;
    QDeadlineTimer deadline(30000);
    while (!QFile::exists(home.record()) && !deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        if (QWidget *modal = QApplication::activeModalWidget()) {
            for (const QObject *child : modal->findChildren<QObject *>())
                modalText += child->property("text").toString() + QLatin1Char(' ');
            modal->close();
            break;
        }
    }
    INFO(modalText.toStdString());
    REQUIRE(modalText.isEmpty());
    // The stand-in writes its line before it exits; wait for the whole line.
    QByteArray line;
    while (!deadline.hasExpired()) {
        QFile f(home.record());
        if (f.open(QIODevice::ReadOnly) && (line = f.readAll()).endsWith('\n'))
            break;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
    }
    REQUIRE(line.endsWith('\n'));
    const QJsonArray argv = QJsonDocument::fromJson(line).array();
    REQUIRE(argv.size() == 3);
    CHECK(QByteArray::fromHex(argv[0].toString().toLatin1()).endsWith("/sanecopy"));
    // One argument a selected item, in the selection's order, byte for byte.
    CHECK(QByteArray::fromHex(argv[1].toString().toLatin1()) == QFile::encodeName(home.file()));
    CHECK(QByteArray::fromHex(argv[2].toString().toLatin1()) == QFile::encodeName(home.folder()));
}
