// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy [--move] [--to DEST] [FILE...]
//   files, no --to: the window opens with them queued and asks where to copy them (Dolphin's "Safe Copy To…");
//   --to DEST:       copying starts at once;
//   nothing:         an empty window waits for a drop.
//   --move:          Move is chosen (Safe Move: sources go once their copies are on the device).
// Arguments are taken as the bytes the process got (see Paths.h), not as text.
#pragma once

#include "Paths.h"

#include <QString>

namespace SaneCopy {

struct CommandLine {
    PathList files;         // absolute
    QByteArray destination; // empty: ask
    QString error;          // set when the arguments can't be used; the app prints it and exits with 2
    bool help = false;
    bool version = false;
    bool move = false;
    bool startNow() const { return !files.isEmpty() && !destination.isEmpty(); }
};

// |arguments| excludes the program name. Relative paths are made absolute against |workingDirectory|.
CommandLine parseCommandLine(const QList<QByteArray> &arguments, const QByteArray &workingDirectory);

} // namespace SaneCopy
