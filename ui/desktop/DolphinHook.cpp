// SPDX-License-Identifier: GPL-2.0-or-later
#include "DolphinHook.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

namespace SaneCopy {

namespace {

const QLatin1String kMenuFile("io.github.sanecopy.SaneCopy.desktop");

QString absoluteEnv(const char *name)
{
    const QString value = qEnvironmentVariable(name);
    return QDir::isAbsolutePath(value) ? value : QString();
}

} // namespace

DolphinHook::DolphinHook(QString xdgDataHome) : dataHome_(std::move(xdgDataHome)) {}

bool DolphinHook::insideFlatpak(const QString &root)
{
    return QFileInfo::exists(QDir(root).filePath(QStringLiteral(".flatpak-info")));
}

QString DolphinHook::hostDataHome(bool inFlatpak)
{
    QString home = absoluteEnv("HOST_XDG_DATA_HOME");
    if (home.isEmpty() && !inFlatpak)
        home = absoluteEnv("XDG_DATA_HOME");
    if (home.isEmpty())
        home = QDir::homePath() + QLatin1String("/.local/share");
    return QDir::cleanPath(home);
}

QString DolphinHook::menuPath() const
{
    return QDir(dataHome_).filePath(QLatin1String("kio/servicemenus/") + kMenuFile);
}

bool DolphinHook::isInstalled() const { return QFileInfo::exists(menuPath()); }

QByteArray DolphinHook::menuContents()
{
    // Type and X-KDE-ServiceTypes are what KF5 (Debian 12's Dolphin 22.12) matches service menus by; KF6 ignores
    // them and goes by MimeType. all/all covers files and folders; X-KDE-Protocols=file keeps the entry off
    // remote and virtual folders, whose items %F could only hand over as downloaded temporary copies.
    // %F gives each selected item as an argument of its own, with no shell in between.
    return QByteArrayLiteral(
        "# SaneCopy (flatpak): \"Safe Copy To…\" and \"Safe Move To…\" in Dolphin's context menu. Written by "
        "SaneCopy's\n"
        "# Settings > Add to Dolphin's context menu; Settings > Remove from Dolphin's context menu deletes it.\n"
        "[Desktop Entry]\n"
        "Type=Service\n"
        "X-KDE-ServiceTypes=KonqPopupMenu/Plugin\n"
        "MimeType=all/all;\n"
        "X-KDE-Protocols=file\n"
        "Actions=safeCopyTo;safeMoveTo;\n"
        "X-KDE-Priority=TopLevel\n"
        "\n"
        "[Desktop Action safeCopyTo]\n"
        "Name=Safe Copy To…\n"
        "Icon=io.github.sanecopy.SaneCopy\n"
        "Exec=flatpak run io.github.sanecopy.SaneCopy %F\n"
        "\n"
        "[Desktop Action safeMoveTo]\n"
        "Name=Safe Move To…\n"
        "Icon=io.github.sanecopy.SaneCopy\n"
        "Exec=flatpak run io.github.sanecopy.SaneCopy --move %F\n");
}

bool DolphinHook::install()
{
    error_.clear();
    const QString path = menuPath();
    const QString dir = QFileInfo(path).absolutePath();
    if (!QDir().mkpath(dir)) {
        error_ = QStringLiteral("could not create the folder %1").arg(dir);
        return false;
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        error_ = file.errorString();
        return false;
    }
    const QByteArray contents = menuContents();
    if (file.write(contents) != contents.size()) {
        error_ = file.errorString();
        file.cancelWriting();
        return false;
    }
    // On the temporary file, before the rename: the menu never appears without its executable bit.
    file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                        QFileDevice::ReadGroup | QFileDevice::ExeGroup | QFileDevice::ReadOther |
                        QFileDevice::ExeOther);
    if (!file.commit()) {
        error_ = file.errorString();
        return false;
    }
    return true;
}

bool DolphinHook::uninstall()
{
    error_.clear();
    QFile file(menuPath());
    if (!file.exists())
        return true;
    if (!file.remove()) {
        error_ = file.errorString();
        return false;
    }
    return true;
}

} // namespace SaneCopy
