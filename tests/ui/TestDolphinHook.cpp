// SPDX-License-Identifier: GPL-2.0-or-later
//
// The flatpak Dolphin hook: the service menu it writes into a temporary XDG data home, and its removal.
#include "DolphinHook.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace SaneCopy;

namespace {

// "[group]" -> key -> value, as the desktop entry spec reads a file: comments and blank lines skipped, the value
// is everything after the first '='.
QHash<QString, QHash<QString, QString>> parseDesktopFile(const QString &path)
{
    QHash<QString, QHash<QString, QString>> groups;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return groups;
    QString group;
    const QStringList lines = QString::fromUtf8(file.readAll()).split(QLatin1Char('\n'));
    for (const QString &line : lines) {
        if (line.isEmpty() || line.startsWith(QLatin1Char('#')))
            continue;
        if (line.startsWith(QLatin1Char('[')) && line.endsWith(QLatin1Char(']'))) {
            group = line.mid(1, line.size() - 2);
            groups[group];
            continue;
        }
        const qsizetype eq = line.indexOf(QLatin1Char('='));
        if (eq > 0)
            groups[group].insert(line.left(eq), line.mid(eq + 1));
    }
    return groups;
}

// Sets an environment variable for one scope; unset when |value| is null.
class ScopedEnv {
public:
    ScopedEnv(const char *name, const QString &value)
        : name_(name), old_(qgetenv(name)), had_(qEnvironmentVariableIsSet(name))
    {
        if (value.isNull())
            qunsetenv(name_);
        else
            qputenv(name_, value.toUtf8());
    }
    ~ScopedEnv()
    {
        if (had_)
            qputenv(name_, old_);
        else
            qunsetenv(name_);
    }
    ScopedEnv(const ScopedEnv &) = delete;
    ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
    const char *name_;
    QByteArray old_;
    bool had_;
};

} // namespace

class TestDolphinHook : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void installWritesTheServiceMenuWhereDolphinLooks()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QCOMPARE(hook.menuPath(),
                 home.filePath(QStringLiteral("kio/servicemenus/io.github.sanecopy.SaneCopy.desktop")));
        QVERIFY(!hook.isInstalled());

        QVERIFY2(hook.install(), qPrintable(hook.errorString()));
        QVERIFY(hook.isInstalled());
        QVERIFY(QFileInfo::exists(hook.menuPath()));
        QFile file(hook.menuPath());
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), DolphinHook::menuContents());
    }

    void menuKeys_data()
    {
        QTest::addColumn<QString>("group");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        const QString entry = QStringLiteral("Desktop Entry");
        const QString action = QStringLiteral("Desktop Action safeCopyTo");
        // KF5 finds service menus by these two; KF6 ignores them.
        QTest::newRow("type") << entry << QStringLiteral("Type") << QStringLiteral("Service");
        QTest::newRow("service type") << entry << QStringLiteral("X-KDE-ServiceTypes")
                                      << QStringLiteral("KonqPopupMenu/Plugin");
        // Files and folders alike; local ones only, as %F needs paths.
        QTest::newRow("mime types") << entry << QStringLiteral("MimeType") << QStringLiteral("all/all;");
        QTest::newRow("protocols") << entry << QStringLiteral("X-KDE-Protocols") << QStringLiteral("file");
        QTest::newRow("actions") << entry << QStringLiteral("Actions") << QStringLiteral("safeCopyTo;safeMoveTo;");
        QTest::newRow("action name") << action << QStringLiteral("Name") << QStringLiteral("Safe Copy To…");
        QTest::newRow("action icon") << action << QStringLiteral("Icon")
                                     << QStringLiteral("io.github.sanecopy.SaneCopy");
        QTest::newRow("action exec") << action << QStringLiteral("Exec")
                                     << QStringLiteral("flatpak run io.github.sanecopy.SaneCopy %F");
        const QString move = QStringLiteral("Desktop Action safeMoveTo");
        QTest::newRow("move name") << move << QStringLiteral("Name") << QStringLiteral("Safe Move To…");
        QTest::newRow("move exec") << move << QStringLiteral("Exec")
                                   << QStringLiteral("flatpak run io.github.sanecopy.SaneCopy --move %F");
    }

    void menuKeys()
    {
        QFETCH(QString, group);
        QFETCH(QString, key);
        QFETCH(QString, value);
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QVERIFY2(hook.install(), qPrintable(hook.errorString()));
        const auto groups = parseDesktopFile(hook.menuPath());
        QVERIFY2(groups.contains(group), qPrintable(group));
        QVERIFY2(groups.value(group).contains(key), qPrintable(key));
        QCOMPARE(groups.value(group).value(key), value);
    }

    // KIO runs the action of a service menu outside the system's folders only when the file is executable or
    // owned by root; without the bit, "Safe Copy To…" shows up in Dolphin and does nothing.
    void installedMenuIsExecutable()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QVERIFY2(hook.install(), qPrintable(hook.errorString()));
        QVERIFY(QFileInfo(hook.menuPath()).permissions().testFlag(QFileDevice::ExeOwner));
        QVERIFY(QFileInfo(hook.menuPath()).permissions().testFlag(QFileDevice::ReadOther));
    }

    void installReplacesAnEditedMenu()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QVERIFY(hook.install());
        {
            QFile file(hook.menuPath());
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            file.write("[Desktop Entry]\nExec=something else\n");
        }
        QVERIFY(hook.install());
        QFile file(hook.menuPath());
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), DolphinHook::menuContents());
        // Nothing else is left behind in the folder (no temporary file from the atomic replace).
        QCOMPARE(QDir(QFileInfo(hook.menuPath()).absolutePath()).entryList(QDir::Files | QDir::Hidden),
                 QStringList {QStringLiteral("io.github.sanecopy.SaneCopy.desktop")});
    }

    void uninstallRemovesOnlyItsOwnMenu()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QVERIFY(hook.install());
        const QString other = home.filePath(QStringLiteral("kio/servicemenus/other.desktop"));
        {
            QFile file(other);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write("[Desktop Entry]\nType=Service\n");
        }
        QVERIFY2(hook.uninstall(), qPrintable(hook.errorString()));
        QVERIFY(!hook.isInstalled());
        QVERIFY(!QFileInfo::exists(hook.menuPath()));
        QVERIFY(QFileInfo::exists(other));
    }

    void uninstallWithoutMenuSucceeds()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        DolphinHook hook(home.path());
        QVERIFY(hook.uninstall());
        QVERIFY(hook.errorString().isEmpty());
        QVERIFY(!QFileInfo::exists(home.filePath(QStringLiteral("kio"))));
    }

    // Permissions don't stop root, so the folder is blocked by a file of the same name instead.
    void installFailsWhenTheFolderCantBeMade()
    {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        {
            QFile blocker(home.filePath(QStringLiteral("kio")));
            QVERIFY(blocker.open(QIODevice::WriteOnly));
        }
        DolphinHook hook(home.path());
        QVERIFY(!hook.install());
        QVERIFY(!hook.errorString().isEmpty());
        QVERIFY(!hook.isInstalled());
    }

    void insideFlatpak()
    {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        QVERIFY(!DolphinHook::insideFlatpak(root.path()));
        QFile info(root.filePath(QStringLiteral(".flatpak-info")));
        QVERIFY(info.open(QIODevice::WriteOnly));
        info.close();
        QVERIFY(DolphinHook::insideFlatpak(root.path()));
    }

    void hostDataHome_data()
    {
        QTest::addColumn<bool>("inFlatpak");
        QTest::addColumn<QString>("hostXdgDataHome"); // null: unset
        QTest::addColumn<QString>("xdgDataHome");     // null: unset
        QTest::addColumn<QString>("expected");        // "~" stands for the home folder
        QTest::newRow("native: XDG_DATA_HOME")
            << false << QString() << QStringLiteral("/data/me") << QStringLiteral("/data/me");
        QTest::newRow("native: nothing set") << false << QString() << QString() << QStringLiteral("~/.local/share");
        QTest::newRow("native: relative XDG_DATA_HOME ignored")
            << false << QString() << QStringLiteral("relative/share") << QStringLiteral("~/.local/share");
        // Inside flatpak XDG_DATA_HOME is the app's private folder, which the host's Dolphin never reads.
        QTest::newRow("flatpak: private XDG_DATA_HOME ignored")
            << true << QString() << QStringLiteral("/home/me/.var/app/io.github.sanecopy.SaneCopy/data")
            << QStringLiteral("~/.local/share");
        QTest::newRow("flatpak: HOST_XDG_DATA_HOME")
            << true << QStringLiteral("/data/me/")
            << QStringLiteral("/home/me/.var/app/io.github.sanecopy.SaneCopy/data") << QStringLiteral("/data/me");
    }

    void hostDataHome()
    {
        QFETCH(bool, inFlatpak);
        QFETCH(QString, hostXdgDataHome);
        QFETCH(QString, xdgDataHome);
        QFETCH(QString, expected);
        const ScopedEnv host("HOST_XDG_DATA_HOME", hostXdgDataHome);
        const ScopedEnv own("XDG_DATA_HOME", xdgDataHome);
        expected = QDir::cleanPath(expected.replace(QLatin1Char('~'), QDir::homePath()));
        QCOMPARE(DolphinHook::hostDataHome(inFlatpak), expected);
    }
};

QTEST_GUILESS_MAIN(TestDolphinHook)
#include "TestDolphinHook.moc"
