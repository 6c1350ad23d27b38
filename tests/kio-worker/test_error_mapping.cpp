// SPDX-License-Identifier: GPL-2.0-or-later
//
// errno -> KIO::Error for the sanecopy: worker, without KIO running.
#include "catch.h"

#include "ErrorMapping.h"

#include <KIO/Global>

#include <cerrno>

using namespace SaneCopyKio;

TEST_CASE("error mapping: the errors the issue names")
{
    CHECK(kioErrorFor(FileOp::Write, ENOSPC) == KIO::ERR_DISK_FULL);
    CHECK(kioErrorFor(FileOp::Write, EDQUOT) == KIO::ERR_DISK_FULL);
    CHECK(kioErrorFor(FileOp::Mkdir, ENOSPC) == KIO::ERR_DISK_FULL);
    CHECK(kioErrorFor(FileOp::Write, EACCES) == KIO::ERR_WRITE_ACCESS_DENIED);
    CHECK(kioErrorFor(FileOp::Write, EPERM) == KIO::ERR_WRITE_ACCESS_DENIED);
    CHECK(kioErrorFor(FileOp::Write, EROFS) == KIO::ERR_WRITE_ACCESS_DENIED);
    CHECK(kioErrorFor(FileOp::Write, EEXIST) == KIO::ERR_FILE_ALREADY_EXIST);
    CHECK(kioErrorFor(FileOp::Write, EEXIST, true) == KIO::ERR_DIR_ALREADY_EXIST);
    CHECK(kioErrorFor(FileOp::Mkdir, EEXIST, true) == KIO::ERR_DIR_ALREADY_EXIST);
    CHECK(kioErrorFor(FileOp::Stat, ENOENT) == KIO::ERR_DOES_NOT_EXIST);
    CHECK(kioErrorFor(FileOp::Read, ENOENT) == KIO::ERR_DOES_NOT_EXIST);
}

TEST_CASE("error mapping: the same errno means different things per operation")
{
    CHECK(kioErrorFor(FileOp::List, EACCES) == KIO::ERR_ACCESS_DENIED);
    CHECK(kioErrorFor(FileOp::Read, EACCES) == KIO::ERR_ACCESS_DENIED);
    CHECK(kioErrorFor(FileOp::List, ENOTDIR) == KIO::ERR_IS_FILE);
    CHECK(kioErrorFor(FileOp::Stat, ENOTDIR) == KIO::ERR_DOES_NOT_EXIST);
    CHECK(kioErrorFor(FileOp::Rename, EXDEV) == KIO::ERR_UNSUPPORTED_ACTION); // KIO then copies and deletes
    CHECK(kioErrorFor(FileOp::Rename, ENOTEMPTY) == KIO::ERR_DIR_ALREADY_EXIST);
    CHECK(kioErrorFor(FileOp::RemoveDir, ENOTEMPTY) == KIO::ERR_CANNOT_RMDIR);
    CHECK(kioErrorFor(FileOp::Write, EISDIR) == KIO::ERR_IS_DIRECTORY);
    CHECK(kioErrorFor(FileOp::Write, EFBIG) == KIO::ERR_FILE_TOO_LARGE_FOR_FAT32);
    CHECK(kioErrorFor(FileOp::Read, EROFS) == KIO::ERR_CANNOT_READ);
    CHECK(kioErrorFor(FileOp::Write, ECANCELED) == KIO::ERR_USER_CANCELED);
    CHECK(kioErrorFor(FileOp::Stat, ELOOP) == KIO::ERR_CYCLIC_LINK);
}

TEST_CASE("error mapping: anything else is the operation's own could-not")
{
    const std::pair<FileOp, int> fallbacks[] = {
        {FileOp::Stat, KIO::ERR_CANNOT_STAT},       {FileOp::List, KIO::ERR_CANNOT_ENTER_DIRECTORY},
        {FileOp::Read, KIO::ERR_CANNOT_READ},       {FileOp::Write, KIO::ERR_CANNOT_WRITE},
        {FileOp::Mkdir, KIO::ERR_CANNOT_MKDIR},     {FileOp::Remove, KIO::ERR_CANNOT_DELETE},
        {FileOp::RemoveDir, KIO::ERR_CANNOT_RMDIR}, {FileOp::Rename, KIO::ERR_CANNOT_RENAME},
        {FileOp::Chmod, KIO::ERR_CANNOT_CHMOD},     {FileOp::SetTime, KIO::ERR_CANNOT_SETTIME},
        {FileOp::Symlink, KIO::ERR_CANNOT_SYMLINK},
    };
    for (const auto &[op, code] : fallbacks) {
        CHECK(kioErrorFor(op, EIO) == code);
        CHECK(fallbackError(op) == code);
    }
}

TEST_CASE("error mapping: the text is the path, and a sentence only when there is no closer code")
{
    const QString path = QStringLiteral("/media/stick/movie.mkv");
    KioError full = kioErrorForStatus(FileOp::Write, ENOSPC, path, QStringLiteral("not enough space: needs 4 GiB"));
    CHECK(full.code == KIO::ERR_DISK_FULL);
    CHECK(full.text == path);
    KioError exists = kioErrorForStatus(FileOp::Write, EEXIST, path, QStringLiteral("already exists; not overwritten"));
    CHECK(exists.code == KIO::ERR_FILE_ALREADY_EXIST);
    CHECK(exists.text == path);
    KioError badName =
        kioErrorForStatus(FileOp::Write, EINVAL, path, QStringLiteral("has a character FAT can't store"));
    CHECK(badName.code == KIO::ERR_WORKER_DEFINED);
    CHECK(badName.text == path + QStringLiteral(": has a character FAT can't store"));
    KioError io = kioErrorForStatus(FileOp::Write, EIO, path);
    CHECK(io.code == KIO::ERR_CANNOT_WRITE);
    CHECK(io.text == path);
}
