// SPDX-License-Identifier: GPL-2.0-or-later
//
// From errno to KIO's error codes, as pure functions. Which code an errno becomes depends on what was being
// done: EACCES while writing is ERR_WRITE_ACCESS_DENIED, while listing ERR_ACCESS_DENIED. KIO words every code
// into its own sentence around a single argument ("Could not write to file %1."), so the text that goes with
// a code is the path, never a sentence; only ERR_WORKER_DEFINED carries a sentence of the worker's own.
#pragma once

#include <QString>

namespace SaneCopyKio {

enum class FileOp {
    Stat,  // stat, mimetype
    List,  // listDir
    Read,  // get, and the source side of a copy
    Write, // put, and the destination side of a copy
    Mkdir,
    Remove,    // del of a file
    RemoveDir, // del of a folder
    Rename,
    Chmod,
    SetTime,
    Symlink,
};

// The KIO::Error for |err| (an errno value) during |op|. |targetIsDir| says that the name in the way is a
// folder, for EEXIST (ERR_DIR_ALREADY_EXIST rather than ERR_FILE_ALREADY_EXIST). Errors with no closer
// meaning get the operation's own "could not" code (fallbackError).
int kioErrorFor(FileOp op, int err, bool targetIsDir = false);

// The operation's own "could not" code: ERR_CANNOT_WRITE for Write, ERR_CANNOT_MKDIR for Mkdir, ...
int fallbackError(FileOp op);

struct KioError {
    int code = 0;
    QString text;
};

// The code and text for an engine error on |path|: the text is the path. When the error has nothing closer
// than the operation's fallback and the engine said why in words (|detail|: "a name FAT can't store"), that
// sentence is more use to the user, so it goes out as ERR_WORKER_DEFINED with "path: detail".
KioError kioErrorForStatus(FileOp op, int err, const QString &path, const QString &detail = QString(),
                           bool targetIsDir = false);

} // namespace SaneCopyKio
