// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy [--move] [--to DEST] [FILE...]
//   files, no --to: the window opens with them queued and asks where to copy them (Dolphin's "Safe Copy To…");
//   --to DEST:       copying starts at once;
//   nothing:         an empty window waits for a drop.
//   --move:          Move is chosen (Safe Move: sources go once their copies are on the device).
// Arguments are taken as the bytes the process got (see Paths.h), not as text. An argument that reads as a network
// URL (smb://, sftp://: "Safe Copy To…" in one of Dolphin's network folders) and names no local path is kept
// apart, for NetworkUrls.h to turn into kio-fuse's local path.
#pragma once

#include "Paths.h"

#include <QString>
#include <QStringList>

namespace SaneCopy {

struct CommandLine {
    PathList files;                 // absolute
    QByteArray destination;         // empty: ask
    QList<QByteArray> networkFiles; // URLs, as given
    QByteArray networkDestination;  // a URL, as given
    QStringList problems;           // network URLs that could not be turned into paths, one sentence each
    QString error;                  // set when the arguments can't be used; the app prints it and exits with 2
    bool help = false;
    bool version = false;
    bool move = false;
    bool startNow() const { return !files.isEmpty() && !destination.isEmpty() && networkDestination.isEmpty(); }
    bool hasNetworkUrls() const { return !networkFiles.isEmpty() || !networkDestination.isEmpty(); }
};

// |arguments| excludes the program name. Relative paths are made absolute against |workingDirectory|.
CommandLine parseCommandLine(const QList<QByteArray> &arguments, const QByteArray &workingDirectory);

} // namespace SaneCopy
