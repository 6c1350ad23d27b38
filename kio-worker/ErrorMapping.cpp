// SPDX-License-Identifier: GPL-2.0-or-later
#include "ErrorMapping.h"

#include <KIO/Global>

#include <cerrno>

namespace SaneCopyKio {

int fallbackError(FileOp op)
{
    switch (op) {
    case FileOp::Stat:
        return KIO::ERR_CANNOT_STAT;
    case FileOp::List:
        return KIO::ERR_CANNOT_ENTER_DIRECTORY;
    case FileOp::Read:
        return KIO::ERR_CANNOT_READ;
    case FileOp::Write:
        return KIO::ERR_CANNOT_WRITE;
    case FileOp::Mkdir:
        return KIO::ERR_CANNOT_MKDIR;
    case FileOp::Remove:
        return KIO::ERR_CANNOT_DELETE;
    case FileOp::RemoveDir:
        return KIO::ERR_CANNOT_RMDIR;
    case FileOp::Rename:
        return KIO::ERR_CANNOT_RENAME;
    case FileOp::Chmod:
        return KIO::ERR_CANNOT_CHMOD;
    case FileOp::SetTime:
        return KIO::ERR_CANNOT_SETTIME;
    case FileOp::Symlink:
        return KIO::ERR_CANNOT_SYMLINK;
    }
    return KIO::ERR_UNKNOWN;
}

int kioErrorFor(FileOp op, int err, bool targetIsDir)
{
    const bool writes = op != FileOp::Stat && op != FileOp::List && op != FileOp::Read;
    switch (err) {
    case 0:
        return 0;
    case ECANCELED:
        return KIO::ERR_USER_CANCELED;
    case ENOENT:
        return KIO::ERR_DOES_NOT_EXIST;
    case ENOTDIR:
        // Listing a file is its own mistake; elsewhere a file in the middle of a path means there is no such path.
        return op == FileOp::List ? KIO::ERR_IS_FILE : KIO::ERR_DOES_NOT_EXIST;
    case ENOSPC:
    case EDQUOT:
        return KIO::ERR_DISK_FULL;
    case EACCES:
    case EPERM:
        return op == FileOp::Write ? KIO::ERR_WRITE_ACCESS_DENIED : KIO::ERR_ACCESS_DENIED;
    case EROFS:
        return writes ? KIO::ERR_WRITE_ACCESS_DENIED : fallbackError(op);
    case EEXIST:
        return targetIsDir ? KIO::ERR_DIR_ALREADY_EXIST : KIO::ERR_FILE_ALREADY_EXIST;
    case ENOTEMPTY:
        // rmdir of a full folder; rename onto one.
        return op == FileOp::Rename ? KIO::ERR_DIR_ALREADY_EXIST : fallbackError(op);
    case EISDIR:
        return op == FileOp::Rename ? KIO::ERR_DIR_ALREADY_EXIST : KIO::ERR_IS_DIRECTORY;
    case EXDEV:
        // KIO answers ERR_UNSUPPORTED_ACTION from rename() with copy + delete, which is what a move across
        // filesystems is.
        return op == FileOp::Rename ? KIO::ERR_UNSUPPORTED_ACTION : fallbackError(op);
    case EFBIG:
        // The engine says EFBIG before the first byte when the file is larger than the filesystem stores (FAT32),
        // and the kernel says it at the 4 GiB mark.
        return op == FileOp::Write ? KIO::ERR_FILE_TOO_LARGE_FOR_FAT32 : fallbackError(op);
    case ELOOP:
        return KIO::ERR_CYCLIC_LINK;
    case ENAMETOOLONG:
        return KIO::ERR_MALFORMED_URL;
    default:
        return fallbackError(op);
    }
}

KioError kioErrorForStatus(FileOp op, int err, const QString &path, const QString &detail, bool targetIsDir)
{
    const int code = kioErrorFor(op, err, targetIsDir);
    if (code == fallbackError(op) && !detail.isEmpty())
        return {KIO::ERR_WORKER_DEFINED, path + QLatin1String(": ") + detail};
    return {code, path};
}

} // namespace SaneCopyKio
