// SPDX-License-Identifier: GPL-2.0-or-later
//
// Dolphin's network folders (smb://, sftp://, webdav://…) are URLs, not paths, and the engine copies what it can
// open as a file. kio-fuse, KDE's FUSE bridge to KIO, mounts such a URL as a folder of its own: SaneCopy asks it
// for that folder over D-Bus and copies through it, so its chunks and syncs reach the server as on any mount.
// Without kio-fuse there is no safe way to copy a URL: the user is told in one sentence how to get one, and
// nothing is copied through a temporary download (what KIO would do with a program that takes only paths).
#pragma once

#include "CommandLine.h"

#include <QDBusConnection>

namespace SaneCopy {

struct LocalFolderForUrl {
    QByteArray path; // where kio-fuse shows the URL; empty when it can't
    QString problem; // then why, in one sentence a user can act on
};

// Asks kio-fuse (org.kde.KIOFuse, D-Bus-activated where it is installed) for the local path of |url|. Waits up to
// |timeoutMs|, running the event loop meanwhile: kio-fuse may have to log in to the server first.
LocalFolderForUrl localPathForNetworkUrl(const QByteArray &url, const QDBusConnection &bus, int timeoutMs = 60000);

// Turns every network URL of |cmd| into the local path kio-fuse gives it (files, then the destination). What
// can't be turned is left out of the copy and said in cmd.problems.
void resolveNetworkUrls(CommandLine &cmd, const QDBusConnection &bus, int timeoutMs = 60000);

} // namespace SaneCopy
