// SPDX-License-Identifier: GPL-2.0-or-later
#include "ErrorMapping.h"

#include <KIO/Global>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <optional>

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

namespace {

// The operation's own "could not" code, in a rule's table below.
constexpr int kOwnError = -1;

// One errno's KIO error: |code| during |op| (every operation when |op| is empty), |otherwise| during the others.
struct ErrnoRule {
    int err;
    int code;
    std::optional<FileOp> op = std::nullopt;
    int otherwise = kOwnError;
};

const ErrnoRule kRules[] = {
    {ECANCELED, KIO::ERR_USER_CANCELED},
    {ENOENT, KIO::ERR_DOES_NOT_EXIST},
    // Listing a file is its own mistake; elsewhere a file in the middle of a path means there is no such path.
    {ENOTDIR, KIO::ERR_IS_FILE, FileOp::List, KIO::ERR_DOES_NOT_EXIST},
    {ENOSPC, KIO::ERR_DISK_FULL},
    {EDQUOT, KIO::ERR_DISK_FULL},
    {EACCES, KIO::ERR_WRITE_ACCESS_DENIED, FileOp::Write, KIO::ERR_ACCESS_DENIED},
    {EPERM, KIO::ERR_WRITE_ACCESS_DENIED, FileOp::Write, KIO::ERR_ACCESS_DENIED},
    // rmdir of a full folder; rename onto one.
    {ENOTEMPTY, KIO::ERR_DIR_ALREADY_EXIST, FileOp::Rename},
    {EISDIR, KIO::ERR_DIR_ALREADY_EXIST, FileOp::Rename, KIO::ERR_IS_DIRECTORY},
    // KIO answers ERR_UNSUPPORTED_ACTION from rename() with copy + delete, which is what a move across
    // filesystems is.
    {EXDEV, KIO::ERR_UNSUPPORTED_ACTION, FileOp::Rename},
    // The engine says EFBIG before the first byte when the file is larger than the filesystem stores (FAT32),
    // and the kernel says it at the 4 GiB mark.
    {EFBIG, KIO::ERR_FILE_TOO_LARGE_FOR_FAT32, FileOp::Write},
    {ELOOP, KIO::ERR_CYCLIC_LINK},
    {ENAMETOOLONG, KIO::ERR_MALFORMED_URL},
};

bool writes(FileOp op) { return op != FileOp::Stat && op != FileOp::List && op != FileOp::Read; }

} // namespace

int kioErrorFor(FileOp op, int err, bool targetIsDir)
{
    if (err == 0)
        return 0;
    if (err == EROFS)
        return writes(op) ? KIO::ERR_WRITE_ACCESS_DENIED : fallbackError(op);
    if (err == EEXIST)
        return targetIsDir ? KIO::ERR_DIR_ALREADY_EXIST : KIO::ERR_FILE_ALREADY_EXIST;
    const auto rule =
        std::find_if(std::begin(kRules), std::end(kRules), [err](const ErrnoRule &r) { return r.err == err; });
    if (rule == std::end(kRules))
        return fallbackError(op);
    const int code = !rule->op || *rule->op == op ? rule->code : rule->otherwise;
    return code == kOwnError ? fallbackError(op) : code;
}

KioError kioErrorForStatus(FileOp op, int err, const QString &path, const QString &detail, bool targetIsDir)
{
    const int code = kioErrorFor(op, err, targetIsDir);
    if (code == fallbackError(op) && !detail.isEmpty())
        return {KIO::ERR_WORKER_DEFINED, path + QLatin1String(": ") + detail};
    return {code, path};
}

} // namespace SaneCopyKio
