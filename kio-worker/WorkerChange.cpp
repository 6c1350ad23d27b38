// SPDX-License-Identifier: GPL-2.0-or-later
// Changing what is there: mkdir, del, rename, symlink, chmod and the times; each new or renamed name synced into its
// folder.
#include "SaneCopyWorker.h"
#include "WorkerSupport.h"

#include "FolderRun.h"
#include "UrlMapping.h"

#include "fd.h"
#include "sys.h"

#include <KIO/Global>
#include <KLocalizedString>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

using namespace SaneCopyKio;
using sanecopy::sys;
using sanecopy::UniqueFd;

KIO::WorkerResult SaneCopyWorker::mkdir(const QUrl &url, int permissions)
{
    const Resolved pathTarget = resolve(url, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    if (::mkdir(path.constData(), 0777) < 0)
        return failWith(FileOp::Mkdir, errno, path);
    if (permissions != -1 && ::chmod(path.constData(), mode_t(permissions)) < 0)
        return failWith(FileOp::Chmod, errno, path);
    syncParent(path);
    // KIO's CopyJob makes a dropped folder's folders before it copies their files: those may join the run.
    if (const sanecopy::Status s = run_->folderMade(toStd(path)); !s.ok())
        return failWithStatus(FileOp::Write, s, fromStd(s.path()));
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::del(const QUrl &url, bool isFile)
{
    const Resolved pathTarget = settleAndResolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    if (pathTarget.deviceRoot)
        return deviceIsNoFile();
    const QByteArray &path = pathTarget.path;
    // No sync here: KIO's DeleteJob removes a tree one entry at a time, and a sync per entry would make deleting
    // a folder of small files crawl; a removal left unwritten loses nothing.
    if (isFile) {
        if (sys().unlinkat(AT_FDCWD, path.constData(), 0) < 0)
            return failWith(FileOp::Remove, errno, path);
    } else if (sys().unlinkat(AT_FDCWD, path.constData(), AT_REMOVEDIR) < 0) {
        return failWith(FileOp::RemoveDir, errno, path);
    }
    return KIO::WorkerResult::pass();
}

namespace {

int plainRename(const QByteArray &from, const QByteArray &to)
{
    return sys().renameat2(AT_FDCWD, from.constData(), AT_FDCWD, to.constData(), 0) < 0 ? errno : 0;
}

// RENAME_NOREPLACE said |err|: on a filesystem that ignores case (FAT) "a" -> "A" finds the same file in the way,
// which is a rename all the same; a filesystem without RENAME_NOREPLACE (several FUSE ones) gets a check, then
// the rename. The errno that is left, 0 when renamed.
int renameNoReplaceRefused(const QByteArray &from, const QByteArray &to, const struct stat &st, int err)
{
    struct stat other {};
    const bool taken = ::lstat(to.constData(), &other) == 0;
    if (err == EEXIST && taken && other.st_dev == st.st_dev && other.st_ino == st.st_ino)
        return plainRename(from, to);
    if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP)
        return err;
    return taken ? EEXIST : plainRename(from, to);
}

} // namespace

KIO::WorkerResult SaneCopyWorker::rename(const QUrl &src, const QUrl &dest, KIO::JobFlags flags)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const ResolvedPair paths = resolvePair(src, dest, FileOp::Rename);
    if (paths.error)
        return *paths.error;
    const QByteArray &from = paths.from;
    const QByteArray &to = paths.to;
    const struct stat &st = paths.source;
    KIO::WorkerResult renamed = (flags & KIO::Overwrite) ? renameReplacing(from, to) : renameKeeping(from, to, st);
    if (!renamed.success())
        return renamed;
    syncParent(to);
    if (splitPath(from).first != splitPath(to).first)
        syncParent(from);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::renameReplacing(const QByteArray &from, const QByteArray &to)
{
    const int err = plainRename(from, to);
    if (err == 0)
        return KIO::WorkerResult::pass();
    return failWith(FileOp::Rename, err, err == EISDIR || err == ENOTEMPTY || err == ENOENT ? to : from);
}

KIO::WorkerResult SaneCopyWorker::renameKeeping(const QByteArray &from, const QByteArray &to, const struct stat &st)
{
    if (sys().renameat2(AT_FDCWD, from.constData(), AT_FDCWD, to.constData(), RENAME_NOREPLACE) == 0)
        return KIO::WorkerResult::pass();
    const int err = renameNoReplaceRefused(from, to, st, errno);
    if (err == EEXIST)
        return failExists(to);
    if (err)
        // The source was there a moment ago: a missing name now is the destination's folder.
        return failWith(FileOp::Rename, err, err == ENOENT || err == ENOTDIR ? to : from);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::symlink(const QString &target, const QUrl &dest, KIO::JobFlags flags)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(dest, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    const QByteArray linkTarget = encodeFileName(target);
    if (sys().symlinkat(linkTarget.constData(), AT_FDCWD, path.constData()) < 0) {
        if (errno != EEXIST)
            return failWith(FileOp::Symlink, errno, path);
        if (!(flags & KIO::Overwrite) || isDir(path))
            return failExists(path);
        if (sys().unlinkat(AT_FDCWD, path.constData(), 0) < 0)
            return failWith(FileOp::Symlink, errno, path);
        if (sys().symlinkat(linkTarget.constData(), AT_FDCWD, path.constData()) < 0)
            return failWith(FileOp::Symlink, errno, path);
    }
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::chmod(const QUrl &url, int permissions)
{
    const Resolved pathTarget = settleAndResolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    if (::chmod(path.constData(), mode_t(permissions)) < 0)
        return failWith(FileOp::Chmod, errno, path);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::setModificationTime(const QUrl &url, const QDateTime &mtime)
{
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    // KIO's CopyJob sets the times of the folders it made after the last file and before it reports the job
    // done: the folder run ends here, in this process and in any other that holds files for this device.
    const sanecopy::Status held = run_->end();
    FolderRun::waitForOthers(toStd(path));
    if (!held.ok()) {
        // CopyJob ignores a failed setModificationTime (FAT can't keep every time), so the loss is said as a
        // warning too, which the job's dialog shows.
        warning(i18n("A file of this copy is not on the device: %1", QString::fromStdString(held.message())));
        return failWithStatus(FileOp::Write, held, fromStd(held.path()));
    }
    struct timespec times[2] = {{0, UTIME_OMIT}, toTimespec(mtime)};
    if (sys().utimensat(AT_FDCWD, path.constData(), times, 0) < 0)
        return failWith(FileOp::SetTime, errno, path);
    // KIO's CopyJob sets the folders' times after their last file is done, so the copy's durability covers
    // these too only if they are written now.
    UniqueFd fd(sys().openat(AT_FDCWD, path.constData(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0));
    if (fd)
        sys().fsync(fd.get());
    return KIO::WorkerResult::pass();
}
