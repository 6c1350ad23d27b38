// SPDX-License-Identifier: GPL-2.0-or-later
#include "SaneCopyWorker.h"

#include "Devices.h"
#include "EngineJob.h"
#include "ExitCleanup.h"
#include "FolderRun.h"
#include "SaneCopyLogging.h"
#include "UrlMapping.h"

#include "background_closer.h"
#include "copy_job.h"
#include "device_probe.h"
#include "fd.h"
#include "stream_writer.h"
#include "sys.h"

#include <QCoreApplication>
#include <KIO/Global>
#include <KLocalizedString>

#include <QDateTime>
#include <QMimeDatabase>
#include <QUrl>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <vector>

using namespace SaneCopyKio;
using sanecopy::sys;
using sanecopy::UniqueFd;

// The plugin's metadata for KIO: the protocol and what it can do (sanecopy.json). The worker itself runs from
// kdemain() below.
class KIOPluginForMetaData : public QObject
{
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.kde.kio.worker.sanecopy" FILE "sanecopy.json")
};

extern "C" Q_DECL_EXPORT int kdemain(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    app.setApplicationName(QStringLiteral("kio_sanecopy"));
    if (argc != 4) {
        std::fprintf(stderr, "Usage: kio_sanecopy protocol domain-socket1 domain-socket2\n");
        return -1;
    }
    ExitCleanup::installHook();
    sanecopy::raise_open_file_limit(); // batches of small files hold a descriptor each (engine/sys.h)
    SaneCopyWorker worker(argv[2], argv[3]);
    worker.dispatchLoop();
    return 0;
}

namespace {

using namespace std::chrono_literals;
constexpr auto kProgressPeriod = 200ms;          // KIO passes progress on at about this rate anyway
constexpr std::size_t kReadBlock = 1024 * 1024;  // get(): one data() message per block

KIO::WorkerResult malformed(const QUrl &url)
{
    return KIO::WorkerResult::fail(KIO::ERR_MALFORMED_URL, url.toDisplayString());
}

std::string toStd(const QByteArray &bytes) { return std::string(bytes.constData(), std::size_t(bytes.size())); }
QByteArray fromStd(const std::string &s) { return QByteArray(s.data(), int(s.size())); }

std::pair<QByteArray, QByteArray> splitPath(const QByteArray &path)
{
    const int slash = path.lastIndexOf('/');
    if (slash <= 0)
        return {QByteArrayLiteral("/"), path.mid(slash + 1)};
    return {path.left(slash), path.mid(slash + 1)};
}

// fsync on the folder holding |path|, so a new or renamed name in it survives a pulled stick. Best effort: the
// operation itself succeeded, and KIO has no way to say "done, but maybe not durable".
void syncParent(const QByteArray &path)
{
    const QByteArray parent = splitPath(path).first;
    UniqueFd dir(sys().openat(AT_FDCWD, parent.constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (dir)
        sys().fsync(dir.get());
}

bool isDir(const QByteArray &path)
{
    struct stat st {};
    return ::lstat(path.constData(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct timespec toTimespec(const QDateTime &t)
{
    const qint64 ms = t.toMSecsSinceEpoch();
    struct timespec ts {};
    ts.tv_sec = time_t(ms / 1000);
    ts.tv_nsec = long(ms % 1000) * 1000000L;
    if (ts.tv_nsec < 0) {
        ts.tv_sec -= 1;
        ts.tv_nsec += 1000000000L;
    }
    return ts;
}

} // namespace

SaneCopyWorker::SaneCopyWorker(const QByteArray &poolSocket, const QByteArray &appSocket)
    : KIO::WorkerBase(QByteArrayLiteral("sanecopy"), poolSocket, appSocket)
    // Files come one at a time, a copy of a small one taking tens of milliseconds: a few closes overlap at most.
    , closer_(std::make_shared<sanecopy::BackgroundCloser>(16))
    , run_(std::make_unique<FolderRun>(closer_))
    , runCleanup_(std::make_unique<ExitCleanup>([this] { run_->shutdown(); }))
{
}

SaneCopyWorker::~SaneCopyWorker() = default;

KIO::WorkerResult SaneCopyWorker::settleRun()
{
    const sanecopy::Status s = run_->settle();
    if (s.ok())
        return KIO::WorkerResult::pass();
    return failWithStatus(FileOp::Write, s, fromStd(s.path()));
}

KIO::WorkerResult SaneCopyWorker::failWith(FileOp op, int err, const QByteArray &path)
{
    const KioError e = kioErrorForStatus(op, err, displayPath(path), QString(), err == EEXIST && isDir(path));
    qCDebug(SANECOPY_KIO) << "error" << e.code << e.text << "errno" << err;
    return KIO::WorkerResult::fail(e.code, e.text);
}

KIO::WorkerResult SaneCopyWorker::failExists(const QByteArray &path) { return failWith(FileOp::Write, EEXIST, path); }

SaneCopyWorker::Resolved SaneCopyWorker::resolve(const QUrl &url, bool creating)
{
    Resolved r;
    const auto onDevice = devicePathFromUrl(url);
    if (!onDevice) {
        r.path = localPathFromUrl(url);
        if (!r.path)
            r.error = malformed(url);
        return r;
    }
    const auto notHere = [] {
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED,
                                       i18n("Safe Copy lists the devices that are plugged in. Open one of them, "
                                            "or drop the files onto it."));
    };
    if (onDevice->device.isEmpty()) {
        r.error = notHere();
        return r;
    }
    for (const sanecopy::RemovableMount &d : removableDevicesNow()) {
        if (fromStd(d.name) == onDevice->device) {
            r.path = fromStd(d.mount_point) + onDevice->rest;
            r.deviceRoot = onDevice->rest.isEmpty();
            return r;
        }
    }
    // Pulled out or unmounted since the list was shown; or a new name beside the devices.
    r.error = creating && onDevice->rest.isEmpty() ? notHere()
                                                   : KIO::WorkerResult::fail(KIO::ERR_DOES_NOT_EXIST, url.toDisplayString());
    return r;
}

KIO::WorkerResult SaneCopyWorker::deviceIsNoFile()
{
    return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED,
                                   i18n("A device in Safe Copy can't be deleted, moved or renamed here. Unmount or "
                                        "eject it from the Places panel; rename its files inside it."));
}

KIO::WorkerResult SaneCopyWorker::statDeviceList()
{
    KIO::UDSEntry entry;
    entry.reserve(6);
    entry.fastInsert(KIO::UDSEntry::UDS_NAME, QStringLiteral("."));
    entry.fastInsert(KIO::UDSEntry::UDS_DISPLAY_NAME, i18n("Safe Copy"));
    entry.fastInsert(KIO::UDSEntry::UDS_FILE_TYPE, S_IFDIR);
    // Read-only: Dolphin then offers no "paste here" on the list itself, only on a device in it.
    entry.fastInsert(KIO::UDSEntry::UDS_ACCESS, 0555);
    entry.fastInsert(KIO::UDSEntry::UDS_MIME_TYPE, QStringLiteral("inode/directory"));
    entry.fastInsert(KIO::UDSEntry::UDS_ICON_NAME, QStringLiteral("io.github.sanecopy.SaneCopy"));
    statEntry(entry);
    return KIO::WorkerResult::pass();
}

bool SaneCopyWorker::fillDeviceEntry(KIO::UDSEntry &entry, const sanecopy::RemovableMount &device)
{
    const QString name = decodeFileName(fromStd(device.name));
    if (!fillEntry(entry, AT_FDCWD, fromStd(device.mount_point), name))
        return false;
    QString shown = name;
    struct statvfs vfs {};
    // fusefat reports a size of 0: unknown, not full.
    if (::statvfs(device.mount_point.c_str(), &vfs) == 0 && vfs.f_blocks > 0)
        shown = i18nc("a device in Safe Copy: its name, its free space", "%1 (%2 free)", name,
                      KIO::convertSize(KIO::filesize_t(vfs.f_bavail) * vfs.f_frsize));
    entry.fastInsert(KIO::UDSEntry::UDS_DISPLAY_NAME, shown);
    entry.fastInsert(KIO::UDSEntry::UDS_ICON_NAME, QStringLiteral("drive-removable-media-usb"));
    // A link to the mount point, as far as KIO's jobs are concerned: Delete or Cut on a device's folder in the
    // list then acts on the entry alone (refused below), instead of walking into the stick and removing every file
    // on it before the mount point itself refuses to go. Opening it and dropping onto it are unchanged.
    entry.replace(KIO::UDSEntry::UDS_LINK_DEST, QString::fromStdString(device.mount_point));
    return true;
}

KIO::WorkerResult SaneCopyWorker::listDevices()
{
    KIO::UDSEntry self;
    self.fastInsert(KIO::UDSEntry::UDS_NAME, QStringLiteral("."));
    self.fastInsert(KIO::UDSEntry::UDS_FILE_TYPE, S_IFDIR);
    self.fastInsert(KIO::UDSEntry::UDS_ACCESS, 0555);
    self.fastInsert(KIO::UDSEntry::UDS_MIME_TYPE, QStringLiteral("inode/directory"));
    listEntry(self);
    for (const sanecopy::RemovableMount &d : removableDevicesNow()) {
        KIO::UDSEntry entry;
        // A mount point that can't be stat'ed (a FUSE driver that died) is no place to copy to.
        if (fillDeviceEntry(entry, d))
            listEntry(entry);
        qCDebug(SANECOPY_KIO) << "device" << QString::fromStdString(d.name) << "at" << QString::fromStdString(d.mount_point);
    }
    return KIO::WorkerResult::pass();
}

QString SaneCopyWorker::userName(uid_t uid)
{
    auto it = users_.constFind(uid);
    if (it != users_.constEnd())
        return *it;
    struct passwd pw {};
    struct passwd *found = nullptr;
    std::vector<char> buf(16384);
    QString name = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found
        ? QString::fromLocal8Bit(pw.pw_name)
        : QString::number(uid);
    users_.insert(uid, name);
    return name;
}

QString SaneCopyWorker::groupName(gid_t gid)
{
    auto it = groups_.constFind(gid);
    if (it != groups_.constEnd())
        return *it;
    struct group gr {};
    struct group *found = nullptr;
    std::vector<char> buf(16384);
    QString name = ::getgrgid_r(gid, &gr, buf.data(), buf.size(), &found) == 0 && found
        ? QString::fromLocal8Bit(gr.gr_name)
        : QString::number(gid);
    groups_.insert(gid, name);
    return name;
}

bool SaneCopyWorker::fillEntry(KIO::UDSEntry &entry, int dirfd, const QByteArray &name, const QString &displayName)
{
    struct stat lst {};
    if (sys().fstatat(dirfd, name.constData(), &lst, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    struct stat st = lst;
    entry.reserve(12);
    entry.fastInsert(KIO::UDSEntry::UDS_NAME, displayName);
    if (S_ISLNK(lst.st_mode)) {
        std::vector<char> target(4096);
        const ssize_t n = sys().readlinkat(dirfd, name.constData(), target.data(), target.size());
        if (n >= 0)
            entry.fastInsert(KIO::UDSEntry::UDS_LINK_DEST, decodeFileName(QByteArray(target.data(), int(n))));
        // What a link points to is what the user sees and opens; a dangling link stays a link.
        if (sys().fstatat(dirfd, name.constData(), &st, 0) < 0)
            st = lst;
    }
    entry.fastInsert(KIO::UDSEntry::UDS_FILE_TYPE, st.st_mode & S_IFMT);
    entry.fastInsert(KIO::UDSEntry::UDS_ACCESS, st.st_mode & 07777);
    entry.fastInsert(KIO::UDSEntry::UDS_SIZE, st.st_size);
    entry.fastInsert(KIO::UDSEntry::UDS_MODIFICATION_TIME, st.st_mtim.tv_sec);
    entry.fastInsert(KIO::UDSEntry::UDS_ACCESS_TIME, st.st_atim.tv_sec);
    entry.fastInsert(KIO::UDSEntry::UDS_USER, userName(st.st_uid));
    entry.fastInsert(KIO::UDSEntry::UDS_GROUP, groupName(st.st_gid));
    entry.fastInsert(KIO::UDSEntry::UDS_DEVICE_ID, qlonglong(lst.st_dev));
    entry.fastInsert(KIO::UDSEntry::UDS_INODE, qlonglong(lst.st_ino));
    if (S_ISDIR(st.st_mode))
        entry.fastInsert(KIO::UDSEntry::UDS_MIME_TYPE, QStringLiteral("inode/directory"));
    // No UDS_LOCAL_PATH, deliberately: with it KIO's CopyJob would swap a sanecopy: destination for its
    // file: twin and copy with the file worker, past the engine.
    return true;
}

KIO::WorkerResult SaneCopyWorker::stat(const QUrl &url)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    if (const auto onDevice = devicePathFromUrl(url); onDevice && onDevice->device.isEmpty())
        return statDeviceList();
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    if (pathTarget.deviceRoot) {
        for (const sanecopy::RemovableMount &d : removableDevicesNow()) {
            KIO::UDSEntry entry;
            if (fromStd(d.mount_point) == *path && fillDeviceEntry(entry, d)) {
                statEntry(entry);
                return KIO::WorkerResult::pass();
            }
        }
    }
    const auto [dir, name] = splitPath(*path);
    UniqueFd dirfd(sys().openat(AT_FDCWD, dir.constData(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dirfd)
        return failWith(FileOp::Stat, errno, *path);
    KIO::UDSEntry entry;
    const QByteArray statName = name.isEmpty() ? QByteArrayLiteral(".") : name;
    if (!fillEntry(entry, dirfd.get(), statName, name.isEmpty() ? QStringLiteral("/") : decodeFileName(name)))
        return failWith(FileOp::Stat, errno, *path);
    statEntry(entry);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::mimetype(const QUrl &url)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    if (const auto onDevice = devicePathFromUrl(url); onDevice && onDevice->device.isEmpty()) {
        mimeType(QStringLiteral("inode/directory"));
        return KIO::WorkerResult::pass();
    }
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    struct stat st {};
    if (::stat(path->constData(), &st) < 0)
        return failWith(FileOp::Stat, errno, *path);
    if (S_ISDIR(st.st_mode)) {
        mimeType(QStringLiteral("inode/directory"));
        return KIO::WorkerResult::pass();
    }
    // The name and the first bytes, never the whole file: the default would get() all of it from a slow stick.
    QByteArray head;
    UniqueFd fd(sys().openat(AT_FDCWD, path->constData(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0));
    if (fd && S_ISREG(st.st_mode)) {
        head.resize(4096);
        const ssize_t n = sys().pread(fd.get(), head.data(), std::size_t(head.size()), 0);
        head.resize(n > 0 ? int(n) : 0);
    }
    const QString name = decodeFileName(splitPath(*path).second);
    mimeType(QMimeDatabase().mimeTypeForFileNameAndData(name, head).name());
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::listDir(const QUrl &url)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    if (const auto onDevice = devicePathFromUrl(url); onDevice && onDevice->device.isEmpty())
        return listDevices();
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    UniqueFd dir(sys().openat(AT_FDCWD, path->constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dir)
        return failWith(FileOp::List, errno, *path);
    std::vector<std::string> names;
    if (sys().list_dir(dir.get(), names) < 0)
        return failWith(FileOp::List, errno, *path);
    // "." describes the folder itself; KDirLister takes the view's root item from it.
    KIO::UDSEntry self;
    if (fillEntry(self, dir.get(), QByteArrayLiteral("."), QStringLiteral(".")))
        listEntry(self);
    for (const std::string &n : names) {
        const QByteArray name = fromStd(n);
        KIO::UDSEntry entry;
        // A name that vanished between reading the folder and stat'ing it is simply not listed.
        if (fillEntry(entry, dir.get(), name, decodeFileName(name)))
            listEntry(entry);
    }
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::mkdir(const QUrl &url, int permissions)
{
    const Resolved pathTarget = resolve(url, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    if (::mkdir(path->constData(), 0777) < 0)
        return failWith(FileOp::Mkdir, errno, *path);
    if (permissions != -1 && ::chmod(path->constData(), mode_t(permissions)) < 0)
        return failWith(FileOp::Chmod, errno, *path);
    syncParent(*path);
    // KIO's CopyJob makes a dropped folder's folders before it copies their files: those may join the run.
    if (const sanecopy::Status s = run_->folderMade(toStd(*path)); !s.ok())
        return failWithStatus(FileOp::Write, s, fromStd(s.path()));
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::del(const QUrl &url, bool isFile)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    if (pathTarget.deviceRoot)
        return deviceIsNoFile();
    const auto &path = pathTarget.path;
    // No sync here: KIO's DeleteJob removes a tree one entry at a time, and a sync per entry would make deleting
    // a folder of small files crawl; a removal left unwritten loses nothing.
    if (isFile) {
        if (sys().unlinkat(AT_FDCWD, path->constData(), 0) < 0)
            return failWith(FileOp::Remove, errno, *path);
    } else if (sys().unlinkat(AT_FDCWD, path->constData(), AT_REMOVEDIR) < 0) {
        return failWith(FileOp::RemoveDir, errno, *path);
    }
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::rename(const QUrl &src, const QUrl &dest, KIO::JobFlags flags)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved fromTarget = resolve(src);
    if (fromTarget.error)
        return *fromTarget.error;
    const Resolved toTarget = resolve(dest, true);
    if (toTarget.error)
        return *toTarget.error;
    if (fromTarget.deviceRoot || toTarget.deviceRoot)
        return deviceIsNoFile();
    const auto &from = fromTarget.path;
    const auto &to = toTarget.path;
    struct stat st {};
    if (::lstat(from->constData(), &st) < 0)
        return failWith(FileOp::Rename, errno, *from);
    if (flags & KIO::Overwrite) {
        if (sys().renameat2(AT_FDCWD, from->constData(), AT_FDCWD, to->constData(), 0) < 0)
            return failWith(FileOp::Rename, errno, errno == EISDIR || errno == ENOTEMPTY || errno == ENOENT ? *to : *from);
    } else if (sys().renameat2(AT_FDCWD, from->constData(), AT_FDCWD, to->constData(), RENAME_NOREPLACE) < 0) {
        int err = errno;
        struct stat other {};
        const bool taken = ::lstat(to->constData(), &other) == 0;
        if (err == EEXIST && taken && other.st_dev == st.st_dev && other.st_ino == st.st_ino) {
            // The same file under another case on a filesystem that ignores case (FAT): "a" -> "A" is a rename.
            err = sys().renameat2(AT_FDCWD, from->constData(), AT_FDCWD, to->constData(), 0) < 0 ? errno : 0;
        } else if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
            // No RENAME_NOREPLACE on this filesystem (several FUSE ones): check, then rename.
            if (taken)
                return failExists(*to);
            err = sys().renameat2(AT_FDCWD, from->constData(), AT_FDCWD, to->constData(), 0) < 0 ? errno : 0;
        }
        if (err == EEXIST)
            return failExists(*to);
        if (err)
            // The source was there a moment ago: a missing name now is the destination's folder.
            return failWith(FileOp::Rename, err, err == ENOENT || err == ENOTDIR ? *to : *from);
    }
    syncParent(*to);
    if (splitPath(*from).first != splitPath(*to).first)
        syncParent(*from);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::symlink(const QString &target, const QUrl &dest, KIO::JobFlags flags)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(dest, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    const QByteArray linkTarget = encodeFileName(target);
    if (sys().symlinkat(linkTarget.constData(), AT_FDCWD, path->constData()) < 0) {
        if (errno != EEXIST)
            return failWith(FileOp::Symlink, errno, *path);
        if (!(flags & KIO::Overwrite) || isDir(*path))
            return failExists(*path);
        if (sys().unlinkat(AT_FDCWD, path->constData(), 0) < 0)
            return failWith(FileOp::Symlink, errno, *path);
        if (sys().symlinkat(linkTarget.constData(), AT_FDCWD, path->constData()) < 0)
            return failWith(FileOp::Symlink, errno, *path);
    }
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::chmod(const QUrl &url, int permissions)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    if (::chmod(path->constData(), mode_t(permissions)) < 0)
        return failWith(FileOp::Chmod, errno, *path);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::setModificationTime(const QUrl &url, const QDateTime &mtime)
{
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    // KIO's CopyJob sets the times of the folders it made after the last file and before it reports the job
    // done: the folder run ends here, in this process and in any other that holds files for this device.
    const sanecopy::Status held = run_->end();
    FolderRun::waitForOthers(toStd(*path));
    if (!held.ok()) {
        // CopyJob ignores a failed setModificationTime (FAT can't keep every time), so the loss is said as a
        // warning too, which the job's dialog shows.
        warning(i18n("A file of this copy is not on the device: %1", QString::fromStdString(held.message())));
        return failWithStatus(FileOp::Write, held, fromStd(held.path()));
    }
    struct timespec times[2] = {{0, UTIME_OMIT}, toTimespec(mtime)};
    if (sys().utimensat(AT_FDCWD, path->constData(), times, 0) < 0)
        return failWith(FileOp::SetTime, errno, *path);
    // KIO's CopyJob sets the folders' times after their last file is done, so the copy's durability covers
    // these too only if they are written now.
    UniqueFd fd(sys().openat(AT_FDCWD, path->constData(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0));
    if (fd)
        sys().fsync(fd.get());
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::get(const QUrl &url)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    // O_NONBLOCK: a FIFO put where a file was must not hang the worker in open().
    UniqueFd fd(sys().openat(AT_FDCWD, path->constData(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0));
    if (!fd)
        return failWith(FileOp::Read, errno, *path);
    struct stat st {};
    if (sys().fstat(fd.get(), &st) < 0)
        return failWith(FileOp::Read, errno, *path);
    if (S_ISDIR(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_IS_DIRECTORY, displayPath(*path));
    if (!S_ISREG(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_CANNOT_OPEN_FOR_READING, displayPath(*path));
    sys().fcntl_setfl(fd.get(), O_RDONLY);
    sys().fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

    const uint64_t size = uint64_t(st.st_size);
    uint64_t pos = 0;
    bool ok = false;
    const qulonglong start = metaData(QStringLiteral("range-start")).toULongLong(&ok);
    if (ok && start > 0 && start < size) {
        canResume();
        pos = start;
    }
    QByteArray buffer(int(kReadBlock), Qt::Uninitialized);
    bool typed = false;
    totalSize(size);
    auto lastReport = std::chrono::steady_clock::now();
    for (;;) {
        if (wasKilled())
            return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(*path));
        const ssize_t n = sys().pread(fd.get(), buffer.data(), kReadBlock, off_t(pos));
        if (n < 0)
            return failWith(FileOp::Read, errno, *path);
        if (!typed) {
            // KIO wants the type before the first data; the first block is there to sniff it from.
            mimeType(QMimeDatabase().mimeTypeForFileNameAndData(decodeFileName(splitPath(*path).second),
                                                               buffer.left(int(n))).name());
            typed = true;
        }
        if (n == 0)
            break;
        data(buffer.left(int(n)));
        pos += uint64_t(n);
        const auto now = std::chrono::steady_clock::now();
        if (now - lastReport >= kProgressPeriod) {
            processedSize(pos);
            lastReport = now;
        }
    }
    data(QByteArray());
    processedSize(pos);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::put(const QUrl &url, int permissions, KIO::JobFlags flags)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(url, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    sanecopy::StreamOptions options;
    options.conflict = (flags & KIO::Overwrite) ? sanecopy::ConflictPolicy::Overwrite : sanecopy::ConflictPolicy::Refuse;
    if (permissions != -1)
        options.mode = mode_t(permissions);
    const QDateTime modified = QDateTime::fromString(metaData(QStringLiteral("modified")), Qt::ISODate);
    if (modified.isValid())
        options.mtime = toTimespec(modified);
    bool ok = false;
    const qulonglong size = metaData(QStringLiteral("size")).toULongLong(&ok);
    if (ok && size > 0)
        options.expected_size = size;
    options.closer = closer_;
    // KIO::Resume: go on where an interrupted put() stopped. Without the flag, a part file left behind is offered
    // to the job through canResume(); the sender then starts at its end, or at 0 if the job declines.
    if (const uint64_t left = sanecopy::StreamWriter::leftover_part_size(toStd(*path)); left > 0)
        options.resume = (flags & KIO::Resume) || canResume(KIO::filesize_t(left));

    qCDebug(SANECOPY_KIO) << "put" << displayPath(*path) << "through a stream writer";
    sanecopy::ProgressCounters counters;
    // One writer per device, across processes too (see EngineJob.cpp).
    sanecopy::JobSpec lane;
    lane.destination = toStd(*path);
    const sanecopy::JobControl noCancel;
    const sanecopy::UniqueFd deviceLock = sanecopy::lock_device(sanecopy::JobQueue::default_lane(lane), noCancel);
    auto created = sanecopy::StreamWriter::create(toStd(*path), options, counters);
    if (!created.ok()) {
        const sanecopy::Status &s = created.status();
        if (s.err() == EEXIST || s.err() == EISDIR)
            return failExists(*path);
        return failWithStatus(FileOp::Write, s, *path);
    }
    sanecopy::StreamWriter &writer = created.value();
    ExitCleanup onExit([&writer] { writer.abort(); });

    auto lastReport = std::chrono::steady_clock::now();
    auto report = [&] {
        processedSize(counters.durable_bytes.load());
        speed(static_cast<unsigned long>(counters.device_rate.load()));
    };
    for (;;) {
        if (wasKilled())
            return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(*path)); // |writer| removes its part file
        dataReq();
        QByteArray block;
        const int n = readData(block);
        if (n < 0)
            return KIO::WorkerResult::fail(KIO::ERR_CANNOT_WRITE, displayPath(*path));
        if (n == 0)
            break;
        if (sanecopy::Status s = writer.write(block.constData(), std::size_t(block.size())); !s)
            return failWithStatus(FileOp::Write, s, *path);
        const auto now = std::chrono::steady_clock::now();
        if (now - lastReport >= kProgressPeriod) {
            report();
            lastReport = now;
        }
    }
    if (sanecopy::Status s = writer.finish(); !s) {
        if (s.err() == EEXIST)
            return failExists(*path);
        return failWithStatus(FileOp::Write, s, *path);
    }
    report();
    qCDebug(SANECOPY_KIO) << "put done," << writer.bytes_durable() << "bytes on the device";
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::copy(const QUrl &src, const QUrl &dest, int /*permissions*/, KIO::JobFlags flags)
{
    const Resolved fromTarget = resolve(src);
    if (fromTarget.error)
        return *fromTarget.error;
    const Resolved toTarget = resolve(dest, true);
    if (toTarget.error)
        return *toTarget.error;
    if (fromTarget.deviceRoot || toTarget.deviceRoot)
        return deviceIsNoFile();
    const auto &from = fromTarget.path;
    const auto &to = toTarget.path;
    struct stat st {};
    if (::stat(from->constData(), &st) < 0)
        return failWith(FileOp::Read, errno, *from);
    // KIO's CopyJob makes folders with mkdir() and copies their files one by one; a folder here is a mistake.
    if (S_ISDIR(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_IS_DIRECTORY, displayPath(*from));
    const auto policy = (flags & KIO::Overwrite) ? sanecopy::ConflictPolicy::Overwrite : sanecopy::ConflictPolicy::Refuse;
    if (S_ISREG(st.st_mode)) {
        // A small file of a dropped folder: held, and on the device when the run settles (FolderRun.h).
        const sanecopy::Result<bool> held = run_->hold(toStd(*from), toStd(*to), policy);
        if (!held.ok()) {
            const sanecopy::Status &s = held.status();
            return failWithStatus(s.on_source() ? FileOp::Read : FileOp::Write, s, fromStd(s.path()));
        }
        if (held.value()) {
            totalSize(KIO::filesize_t(st.st_size));
            processedSize(KIO::filesize_t(st.st_size));
            return KIO::WorkerResult::pass();
        }
    }
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;

    sanecopy::JobSpec spec;
    spec.sources = {toStd(*from)};
    spec.destination = toStd(*to);
    spec.rule = sanecopy::DestinationRule::ExactTarget;
    // Permissions and modification time come from the source, as the engine always copies them.
    spec.conflict = policy;
    spec.closer = closer_;

    qCDebug(SANECOPY_KIO) << "copy" << displayPath(*from) << "->" << displayPath(*to) << "through the engine";
    uint64_t reportedTotal = 0;
    const EngineOutcome outcome = runEngineJob(spec, kProgressPeriod, [&](const sanecopy::ProgressCounters &c) {
        if (wasKilled())
            return false;
        const uint64_t total = c.total_bytes.load();
        if (total != reportedTotal) {
            totalSize(total);
            reportedTotal = total;
        }
        processedSize(c.durable_bytes.load());
        speed(static_cast<unsigned long>(c.device_rate.load()));
        return true;
    });
    if (wasKilled())
        return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(*to));
    // complete(), not ok(): a file the destination refused (a name FAT can't store) is a failed copy too.
    if (outcome.summary.complete()) {
        qCDebug(SANECOPY_KIO) << "copy done," << outcome.summary.bytes << "bytes on the device";
        return KIO::WorkerResult::pass();
    }

    if (!outcome.firstProblem)
        return KIO::WorkerResult::fail(KIO::ERR_CANNOT_WRITE, displayPath(*to));
    const sanecopy::JobEvent &problem = *outcome.firstProblem;
    // A pulled stick: KIO's own templates ("Could not write to file %1") would hide what happened.
    if (outcome.summary.device_removed)
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED, QString::fromStdString(problem.message));
    if (problem.kind == sanecopy::JobEvent::Kind::Skipped)
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED, QString::fromStdString(problem.message));
    const sanecopy::Status &s = problem.status;
    const QByteArray where = s.path().empty() ? *to : fromStd(s.path());
    if (s.on_destination() && (s.err() == EEXIST || s.err() == EISDIR))
        return failExists(*to);
    return failWithStatus(s.on_source() ? FileOp::Read : FileOp::Write, s, where);
}

KIO::WorkerResult SaneCopyWorker::failWithStatus(FileOp op, const sanecopy::Status &s, const QByteArray &path)
{
    // A pulled stick: KIO's own templates ("Could not write to file %1") would hide what happened.
    if (s.device_removed())
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED, QString::fromStdString(s.message()));
    const KioError e = kioErrorForStatus(op, s.err(), displayPath(path), QString::fromStdString(s.detail()));
    return KIO::WorkerResult::fail(e.code, e.text);
}

KIO::WorkerResult SaneCopyWorker::fileSystemFreeSpace(const QUrl &url)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    const Resolved pathTarget = resolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const auto &path = pathTarget.path;
    struct statvfs vfs {};
    if (::statvfs(path->constData(), &vfs) < 0)
        return failWith(FileOp::Stat, errno, *path);
    setMetaData(QStringLiteral("total"), QString::number(qulonglong(vfs.f_blocks) * vfs.f_frsize));
    setMetaData(QStringLiteral("available"), QString::number(qulonglong(vfs.f_bavail) * vfs.f_frsize));
    return KIO::WorkerResult::pass();
}

#include "SaneCopyWorker.moc"
