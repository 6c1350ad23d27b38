// SPDX-License-Identifier: GPL-2.0-or-later
//
// "Safe Copy To…" in Dolphin for flatpak users. A flatpak can't give its KIO worker to the host's Dolphin
// (flatpak #4323), but Dolphin reads service menus from the user's own <XDG data home>/kio/servicemenus/, and a
// menu there can start the sandboxed app with `flatpak run io.github.sanecopy.SaneCopy %F`. This class writes and
// removes that one file. It is given the data home to work in, so tests run it on a temporary folder; inside the
// sandbox that is hostDataHome(), which the manifest's --filesystem=xdg-data/kio/servicemenus:create exposes.
#pragma once

#include <QByteArray>
#include <QString>

namespace SaneCopy {

class DolphinHook {
public:
    // |xdgDataHome|: the folder that holds kio/servicemenus/, e.g. ~/.local/share.
    explicit DolphinHook(QString xdgDataHome);

    // True inside a flatpak sandbox: flatpak puts /.flatpak-info at the sandbox's root. |root| is for tests.
    static bool insideFlatpak(const QString &root = QStringLiteral("/"));

    // The host's XDG data home, the one the host's Dolphin reads. Inside flatpak, XDG_DATA_HOME is the app's
    // private ~/.var/app/<id>/data; flatpak passes the host's value as HOST_XDG_DATA_HOME, and only when the
    // host set one, so the fallback is ~/.local/share (HOME is the real home in the sandbox). Outside flatpak it
    // is XDG_DATA_HOME, else ~/.local/share. Relative values are ignored, as the XDG base directory spec says.
    static QString hostDataHome(bool inFlatpak = insideFlatpak());

    // <data home>/kio/servicemenus/io.github.sanecopy.SaneCopy.desktop
    QString menuPath() const;
    bool isInstalled() const;

    // Writes the service menu, creating the folders it needs. The file is replaced atomically (a half-written
    // menu would be a broken Dolphin entry) and made executable: KIO shows a menu from the user's folder either
    // way, but runs its action only when the file is executable or owned by root
    // (KDesktopFile::isAuthorizedDesktopFile; "denied, not owned by root and executable flag not set").
    // Returns false, with errorString(), when the folder can't be made or the file can't be written.
    bool install();
    // Removes the service menu. True when it is gone afterwards, also when it was never there.
    bool uninstall();
    QString errorString() const { return error_; }

    // What install() writes. Pure, for tests.
    static QByteArray menuContents();

private:
    QString dataHome_;
    QString error_;
};

} // namespace SaneCopy
