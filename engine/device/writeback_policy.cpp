// SPDX-License-Identifier: GPL-2.0-or-later
// The policy that follows from the facts: each filesystem's name limits, and how its writeback is driven
// (windows, per-chunk syncs, none) and made durable; probe_device() puts the facts and the policy together.
#include "device_probe.h"

#include "i18n.h"
#include "probe_detail.h"

#include "fd.h"
#include "sys.h"

#include <cmath>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

namespace sanecopy {

using namespace probe_detail;

namespace {

// statfs f_type values from linux/magic.h and the filesystems' own sources.
constexpr unsigned long kTmpfsMagic = 0x01021994;
constexpr unsigned long kRamfsMagic = 0x858458f6;
constexpr unsigned long kExtMagic = 0xef53; // ext2, ext3 and ext4 share it
constexpr unsigned long kXfsMagic = 0x58465342;
constexpr unsigned long kBtrfsMagic = 0x9123683e;
constexpr unsigned long kF2fsMagic = 0xf2f52010;
constexpr unsigned long kMsdosMagic = 0x4d44; // vfat and msdos
constexpr unsigned long kExfatMagic = 0x2011bab0;
constexpr unsigned long kNtfsMagic = 0x5346544e;  // the old read-mostly ntfs driver
constexpr unsigned long kNtfs3Magic = 0x7366746e; // ntfs3
constexpr unsigned long kHfsMagic = 0x4244;
constexpr unsigned long kHfsplusMagic = 0x482b;
constexpr unsigned long kUdfMagic = 0x15013346;
constexpr unsigned long kJfsMagic = 0x3153464a;
constexpr unsigned long kReiserfsMagic = 0x52654973;
constexpr unsigned long kNilfsMagic = 0x3434;

constexpr std::string_view kLocalBlockTypes[] = {
    "ext2",  "ext3",  "ext4", "xfs",     "btrfs", "f2fs", "vfat",     "msdos",
    "exfat", "ntfs3", "hfs",  "hfsplus", "udf",   "jfs",  "reiserfs", "nilfs2",
};

constexpr unsigned long kLocalBlockMagics[] = {
    kExtMagic,   kXfsMagic, kBtrfsMagic,   kF2fsMagic, kMsdosMagic, kExfatMagic,    kNtfsMagic,
    kNtfs3Magic, kHfsMagic, kHfsplusMagic, kUdfMagic,  kJfsMagic,   kReiserfsMagic, kNilfsMagic,
};

// The kernel's own FAT driver (vfat, msdos): by mountinfo's type, or by the magic where no type is known (FUSE FAT
// drivers have types of their own).
bool is_kernel_fat(unsigned long fs_magic, std::string_view fs_type)
{
    return fs_type == "vfat" || fs_type == "msdos" || (fs_type.empty() && fs_magic == kMsdosMagic);
}

} // namespace

FsLimits fs_limits_for(std::string_view fs_type)
{
    FsLimits limits;
    // fusefat mounts as "fuse.fusefat"; the FUSE exFAT driver names itself "exfat-fuse" in some versions.
    if (fs_type == "vfat" || fs_type == "msdos" || fs_type == "fat" || fs_type == "fusefat") {
        limits.max_file_size = 4ull * 1024 * 1024 * 1024 - 1; // the directory entry's size field is 32 bits
        limits.forbids_fat_chars = true;
        limits.forbids_trailing_dot_space = true;
        limits.mtime_window_ns = 2000000000;
    } else if (fs_type == "exfat" || fs_type == "exfat-fuse") {
        limits.forbids_fat_chars = true;
        limits.forbids_trailing_dot_space = true;
    } else if (fs_type == "ntfs" || fs_type == "ntfs3" || fs_type == "ntfs-3g") {
        // NTFS itself stores these names, but Windows can't open them, and an NTFS disk is nearly always meant
        // for Windows.
        limits.forbids_fat_chars = true;
    }
    return limits;
}

std::string safe_name(std::string_view name, const FsLimits &limits)
{
    std::string out(name);
    if (limits.forbids_fat_chars) {
        for (char &c : out)
            if (static_cast<unsigned char>(c) < 0x20 ||
                std::string_view(":?*\"<>|\\").find(c) != std::string_view::npos)
                c = '_';
    }
    if (limits.forbids_trailing_dot_space && out != "." && out != "..") {
        for (auto it = out.rbegin(); it != out.rend() && (*it == '.' || *it == ' '); ++it)
            *it = '_';
    }
    return out;
}

std::string name_problem(std::string_view name, const FsLimits &limits)
{
    if (limits.forbids_fat_chars) {
        for (char c : name) {
            if (static_cast<unsigned char>(c) < 0x20)
                return i18n("contains a control character");
            if (std::string_view(":?*\"<>|\\").find(c) != std::string_view::npos)
                return i18nc("%1 is one character", "contains '%1' which FAT/exFAT cannot store", std::string(1, c));
        }
    }
    // Windows drops trailing dots and spaces from names, and Linux's vfat and exfat drop trailing dots too, so
    // "a." and "a" collide on the stick, and "a " can't be opened once the stick is in a Windows machine.
    if (limits.forbids_trailing_dot_space && !name.empty() && name != "." && name != ".." &&
        (name.back() == '.' || name.back() == ' '))
        return i18n("ends with a dot or space, which FAT/exFAT drop");
    return {};
}

DataSync choose_data_sync(unsigned long fs_magic, std::string_view fs_type)
{
    if (is_kernel_fat(fs_magic, fs_type))
        return DataSync::FilesystemFirst;
    return DataSync::File;
}

GroupSync choose_group_sync(unsigned long fs_magic)
{
    switch (fs_magic) {
    case kExtMagic:
    case kXfsMagic:
    case kBtrfsMagic:
    case kF2fsMagic:
    case kJfsMagic:
    case kReiserfsMagic:
    case kNilfsMagic:
        return GroupSync::Background;
    default:
        return GroupSync::Inline;
    }
}

WritebackMode choose_writeback(unsigned long fs_magic, std::string_view fs_type)
{
    if (fs_magic == kTmpfsMagic || fs_magic == kRamfsMagic || fs_type == "tmpfs" || fs_type == "ramfs")
        return WritebackMode::None;
    if (contains(kLocalBlockTypes, fs_type))
        return WritebackMode::Windows;
    // Without a type name (no mountinfo), a known local magic still means sync_file_range reaches the pages.
    // FUSE (0x65735546), NFS, CIFS, 9p, virtiofs and overlay all land below: their dirty data waits somewhere
    // sync_file_range on our descriptor can't reach.
    if (fs_type.empty() && contains(kLocalBlockMagics, fs_magic))
        return WritebackMode::Windows;
    return WritebackMode::ChunkSync;
}

bool is_network_share(const DeviceInfo &device)
{
    constexpr std::string_view kNetworkTypes[] = {"cifs", "smb3", "nfs", "nfs4", "ceph", "afs", "glusterfs", "9p"};
    constexpr std::string_view kNetworkFuse[] = {"sshfs", "kio-fuse", "gvfsd-fuse", "rclone", "davfs", "smbnetfs"};
    if (contains(kNetworkTypes, device.fs_type))
        return true;
    return (device.fs_type == "fuse" || device.fs_type == "fuseblk") && contains(kNetworkFuse, device.fs_subtype);
}

bool evicted_means_committed(const DeviceInfo &device)
{
    return device.writeback == WritebackMode::ChunkSync && (device.fs_type == "nfs" || device.fs_type == "nfs4");
}

bool reserves_space_up_front(const DeviceInfo &device)
{
    return device.writeback != WritebackMode::None && !is_network_share(device) &&
           !is_kernel_fat(device.fs_magic, device.fs_type);
}

namespace {

std::string megabytes(double rate) { return std::to_string(std::llround(rate / 1e6)) + " MB/s"; }

// Rules 1 to 3 (device_probe.h): what the filesystem and the kernel's limits decide whatever the device's speed.
std::optional<SmallFileWriteback> settled_by_filesystem(const DeviceInfo &device)
{
    if (device.writeback != WritebackMode::Windows)
        return SmallFileWriteback {false, "no writeback windows on this filesystem: its files are synced instead"};
    if (device.group_sync == GroupSync::Inline)
        return SmallFileWriteback {true, "the filesystem syncs a group on the copy's own thread (FAT, exFAT, NTFS)"};
    if (device.bdi_strict_limit && device.bdi_max_ratio < 100)
        return SmallFileWriteback {true, "the kernel holds this device to " + std::to_string(device.bdi_max_ratio) +
                                             " % of dirty memory (bdi strict_limit): a group would be throttled"};
    return std::nullopt;
}

} // namespace

SmallFileWriteback choose_small_file_writeback(const DeviceInfo &device, double measured_rate)
{
    if (auto settled = settled_by_filesystem(device))
        return *settled;
    const bool slow_bus = device.transport == "usb" || device.transport == "mmc";
    if (slow_bus || device.removable) {
        // A rate measured over small files counts their opens and renames too, so it runs low: it may tell a
        // bus's guess that the device is fast, never a fixed disk that it is slow.
        if (measured_rate > 0 && small_files_need_own_writeback(measured_rate))
            return {true, "measured " + megabytes(measured_rate) + ": slower than small files are written"};
        if (measured_rate > 0)
            return {false, "measured " + megabytes(measured_rate) + ": a group's one syncfs keeps up"};
        const std::string what = slow_bus ? "a " + device.transport + " device" : "the disk says it is removable";
        return {true, what + ": slower than small files are written; the rate the copy measures decides from then on",
                false};
    }
    const std::string bus = device.transport.empty() ? "" : " " + device.transport;
    if (device.rotational)
        return {false, "a fixed rotational" + bus + " disk: one syncfs a group lets the elevator order its writes"};
    return {false, "a fixed" + bus + " disk: a group's one syncfs sends its data faster than a request a file"};
}

std::string DeviceInfo::device_key() const
{
    if (!bdi.empty())
        return "bdi:" + bdi;
    return "dev:" + std::to_string(major(st_dev)) + ":" + std::to_string(minor(st_dev));
}

namespace {

// The folder's device and its mount (probe_mount): what the system knows without asking the filesystem, so no
// round trip to a share's server.
Status probe_mount_of(const std::string &folder, UniqueFd &fd, DeviceInfo &info)
{
    int raw = sys().openat(AT_FDCWD, folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (raw < 0)
        return Status::destination(errno, "open", folder);
    fd.reset(raw);
    struct stat st {};
    if (sys().fstatat_cached(fd.get(), "", &st, AT_EMPTY_PATH) < 0)
        return Status::destination(errno, "fstat", folder);
    info.st_dev = st.st_dev;
    probe_mount(resolved_path(fd.get(), folder), st.st_dev, info);
    return {};
}

} // namespace

Result<std::string> device_key_of(const std::string &folder)
{
    UniqueFd fd;
    DeviceInfo info;
    if (Status s = probe_mount_of(folder, fd, info); !s)
        return s;
    return info.device_key();
}

Result<DeviceInfo> probe_device(const std::string &folder)
{
    UniqueFd fd;
    DeviceInfo info;
    if (Status s = probe_mount_of(folder, fd, info); !s)
        return s;
    struct statfs sfs {};
    if (sys().fstatfs(fd.get(), &sfs) < 0)
        return Status::destination(errno, "fstatfs", folder);

    info.fs_magic = static_cast<unsigned long>(sfs.f_type);
    // Block counts are in f_frsize units (statvfs(3) says so and glibc converts the same way); FUSE daemons
    // such as sshfs report an f_bsize that differs from it. fusefat reports 0 blocks: size unknown, not full.
    const uint64_t unit = sfs.f_frsize ? static_cast<uint64_t>(sfs.f_frsize) : static_cast<uint64_t>(sfs.f_bsize);
    if (sfs.f_blocks > 0) {
        info.free_bytes = static_cast<uint64_t>(sfs.f_bavail) * unit;
        info.total_bytes = static_cast<uint64_t>(sfs.f_blocks) * unit;
        info.allocation_unit = std::max<uint64_t>(unit, 512);
    }
    // A fuseblk without a subtype (exfat-fuse, ntfs-3g) gets no limits here: the type has to come from the
    // device itself.
    info.limits =
        fs_limits_for(info.fs_subtype.empty() ? std::string_view(info.fs_type) : std::string_view(info.fs_subtype));
    info.writeback = choose_writeback(info.fs_magic, info.fs_type);
    info.data_sync = choose_data_sync(info.fs_magic, info.fs_type);
    info.group_sync = choose_group_sync(info.fs_magic);
    return info;
}

} // namespace sanecopy
