// SPDX-License-Identifier: GPL-2.0-or-later
// Looking, not writing: stat, mimetype, listDir and free space, of local folders and of the device list.
#include "SaneCopyWorker.h"
#include "WorkerSupport.h"

#include "Devices.h"
#include "SaneCopyLogging.h"
#include "UrlMapping.h"

#include "device_probe.h"
#include "fd.h"
#include "sys.h"

#include <KIO/Global>
#include <KLocalizedString>

#include <QMimeDatabase>

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/statvfs.h>
#include <vector>

using namespace SaneCopyKio;
using sanecopy::sys;
using sanecopy::UniqueFd;

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
        qCDebug(SANECOPY_KIO) << "device" << QString::fromStdString(d.name) << "at"
                              << QString::fromStdString(d.mount_point);
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
    const QByteArray &path = pathTarget.path;
    if (pathTarget.deviceRoot) {
        for (const sanecopy::RemovableMount &d : removableDevicesNow()) {
            KIO::UDSEntry entry;
            if (fromStd(d.mount_point) == path && fillDeviceEntry(entry, d)) {
                statEntry(entry);
                return KIO::WorkerResult::pass();
            }
        }
    }
    const auto [dir, name] = splitPath(path);
    UniqueFd dirfd(sys().openat(AT_FDCWD, dir.constData(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dirfd)
        return failWith(FileOp::Stat, errno, path);
    KIO::UDSEntry entry;
    const QByteArray statName = name.isEmpty() ? QByteArrayLiteral(".") : name;
    if (!fillEntry(entry, dirfd.get(), statName, name.isEmpty() ? QStringLiteral("/") : decodeFileName(name)))
        return failWith(FileOp::Stat, errno, path);
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
    const QByteArray &path = pathTarget.path;
    struct stat st {};
    if (::stat(path.constData(), &st) < 0)
        return failWith(FileOp::Stat, errno, path);
    if (S_ISDIR(st.st_mode)) {
        mimeType(QStringLiteral("inode/directory"));
        return KIO::WorkerResult::pass();
    }
    // The name and the first bytes, never the whole file: the default would get() all of it from a slow stick.
    QByteArray head;
    UniqueFd fd(sys().openat(AT_FDCWD, path.constData(), O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0));
    if (fd && S_ISREG(st.st_mode)) {
        head.resize(4096);
        const ssize_t n = sys().pread(fd.get(), head.data(), std::size_t(head.size()), 0);
        head.resize(n > 0 ? int(n) : 0);
    }
    const QString name = decodeFileName(splitPath(path).second);
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
    const QByteArray &path = pathTarget.path;
    UniqueFd dir(sys().openat(AT_FDCWD, path.constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dir)
        return failWith(FileOp::List, errno, path);
    std::vector<std::string> names;
    if (sys().list_dir(dir.get(), names) < 0)
        return failWith(FileOp::List, errno, path);
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

KIO::WorkerResult SaneCopyWorker::fileSystemFreeSpace(const QUrl &url)
{
    const Resolved pathTarget = settleAndResolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    struct statvfs vfs {};
    if (::statvfs(path.constData(), &vfs) < 0)
        return failWith(FileOp::Stat, errno, path);
    setMetaData(QStringLiteral("total"), QString::number(qulonglong(vfs.f_blocks) * vfs.f_frsize));
    setMetaData(QStringLiteral("available"), QString::number(qulonglong(vfs.f_bavail) * vfs.f_frsize));
    return KIO::WorkerResult::pass();
}
