// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy [--to DEST] [FILE...]
//   files, no --to: the window opens with them queued and asks where to copy them (Dolphin's "Safe Copy To…");
//   --to DEST:       copying starts at once;
//   nothing:         an empty window waits for a drop.
#pragma once

#include <QString>
#include <QStringList>

namespace SaneCopy {

struct CommandLine {
    QStringList files;   // absolute paths
    QString destination; // empty: ask
    QString error;       // set when the arguments can't be used; the app prints it and exits with 2
    bool startNow() const { return !files.isEmpty() && !destination.isEmpty(); }
};

// |arguments| includes the program name, as QCoreApplication::arguments() does. Relative paths are made
// absolute against |workingDirectory|. file:// URLs (as some launchers pass) are accepted too.
CommandLine parseCommandLine(const QStringList &arguments, const QString &workingDirectory);

} // namespace SaneCopy
