// SPDX-License-Identifier: GPL-2.0-or-later
//
// DeviceProbe: from a destination path to what the copy needs to know about where the bytes land: the mount,
// the filesystem and its limits, the block device behind it, whether it is removable or rotational, the BDI
// whose dirty pages are ours, and the free space.
//
// The parsers are pure functions over text (mountinfo) so they are tested with fixture files; the sysfs reads
// take a root directory ("/sys" in production) so tests can point them at a fixture tree.
#pragma once

#include "result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace sanecopy {

// One line of /proc/self/mountinfo, unescaped (\040 -> ' ', \011, \012, \134).
struct MountEntry {
    int mount_id = 0;
    int parent_id = 0;
    unsigned dev_major = 0;
    unsigned dev_minor = 0;
    std::string root;        // the mount's root within its filesystem
    std::string mount_point; // where it is mounted
    std::string options;     // per-mount options ("rw,relatime")
    std::string fs_type;     // "ext4", "fuseblk", "fuse" (subtype split off into fs_subtype)
    std::string fs_subtype;  // "fuse.sshfs" -> "sshfs"; empty when the type has none
    std::string source;      // "/dev/sdb1", "tmpfs", ...
    std::string super_options;
};

// Parses the whole text of a mountinfo file. Malformed lines are skipped, never fatal.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// The mount that holds |path| (an absolute, symlink-free path): the last-mounted entry whose
// mount point is the longest prefix of |path| on a component boundary. nullptr when none matches.
const MountEntry *find_mount(const std::vector<MountEntry> &mounts, std::string_view path);

// What a filesystem refuses. Filled from the filesystem type.
struct FsLimits {
    uint64_t max_file_size = UINT64_MAX; // FAT32: 4 GiB - 1
    bool forbids_fat_chars = false;      // FAT/exFAT/NTFS-on-Windows rules: : ? * " < > | \ and control chars
    bool forbids_trailing_dot_space = false;
    // Two modification times closer than this may be the same time stored: FAT keeps even seconds; elsewhere,
    // the second, as rsync compares (some FUSE filesystems and KIO keep no fraction).
    int64_t mtime_window_ns = 1000000000;
};

// Limits for a filesystem type as mountinfo or blkid name it ("vfat", "msdos", "exfat", "ntfs", "ntfs3", "ext4", ...).
FsLimits fs_limits_for(std::string_view fs_type);

// Why |name| can't be stored on a filesystem with |limits|: empty when it can.
std::string name_problem(std::string_view name, const FsLimits &limits);

// A name the filesystem can store: each refused character becomes '_', and a trailing dot or space becomes '_'
// too. Pure; returns |name| unchanged when it has no problem.
std::string safe_name(std::string_view name, const FsLimits &limits);

// How the engine keeps dirty pages bounded on a destination. Chosen by choose_writeback().
enum class WritebackMode {
    None,      // tmpfs/ramfs: memory is the device; syncing or evicting buys nothing.
    Windows,   // a local block filesystem: sync_file_range windows reach its pages.
    ChunkSync, // FUSE, network and stacked filesystems: sync_file_range can't reach where the data really
               // waits (the FUSE daemon writes into the block device's own cache), so a sync per chunk
               // (page_cache_policy.h).
};

// How a finished file is made durable. Chosen by choose_data_sync().
enum class DataSync {
    File,            // fdatasync: the file's data and the metadata that finds it.
    FilesystemFirst, // syncfs, then fdatasync. FAT keeps its allocation table in the block device's cache, and
                     // its fsync writes those blocks one buffer at a time in the order the copy dirtied them,
                     // alternating between the table's two copies, so none of them merge: on a USB stick a
                     // 120 MiB file ended with ~480 separate 4 KiB writes, 1.3 s at the stick's 300 IOPS
                     // (tests/vm). syncfs writes the block device's cache in disk order, in ~20 large requests,
                     // and leaves fdatasync nothing but its cache flush.
};

// How a group of small files (small_batch.h) is synced on a local block filesystem. Chosen by choose_group_sync().
enum class GroupSync {
    // Journaling filesystems (ext4, xfs, btrfs, f2fs, ...): the group's syncfs runs on a helper thread while the
    // next group is written. On a fixed disk small files start no writeback of their own, so the device gets a
    // group in a few large requests instead of one small one per file (CopyRoute::small_file_writeback).
    Background,
    // FAT, exFAT, NTFS and other filesystems that keep folder entries in the block device's cache: creating a
    // file waits for its folder's blocks while they are being written, so a syncfs beside the next group's
    // creates stalls both (2000 small files took 1.4x cp -r + sync on vfat in tests/vm). There each small file
    // starts its writeback when written, and the group's syncfs runs on the job's thread.
    Inline,
};

// The mount options that change how a copy should go, from mountinfo's per-mount and filesystem options.
struct MountFlags {
    // vfat "flush" (UDisks2 sets it): the last close of a file that was open for writing writes its inode out and
    // then sleeps 100 ms uninterruptibly (fat_file_release, fs/fat/file.c). The sleep is per closing thread, so
    // closes one after another cost 100 ms a file, closes side by side 100 ms together.
    bool flush = false;
    // "sync": every write goes to the device before it returns; the copy then writes in big read/write buffers
    // (CopyRoute::write_through), since sendfile's 64 KiB pieces would each be written and waited for alone.
    bool sync = false;
    // "dirsync" (and "sync"): every change to a folder does. Nothing changes for it: a part file and its rename
    // are two such changes a file, which is what keeps a half file from ever having the real name.
    bool dirsync = false;
    // Who owns every file on it (FAT, exFAT and NTFS have no owners of their own: uid=, or FUSE's user_id=; vfat
    // does not show uid=0). nullopt where files have owners of their own.
    std::optional<uint32_t> owner_uid;
};

// Pure: the flags of one mount.
MountFlags parse_mount_flags(const MountEntry &mount);

struct DeviceInfo {
    std::string mount_point;
    std::string fs_type;        // mountinfo type, subtype split off ("fuseblk", "ext4", "fuse")
    std::string fs_subtype;     // "exfat" for "fuse.exfat", empty when unknown
    unsigned long fs_magic = 0; // statfs f_type
    dev_t st_dev = 0;           // of the destination folder
    std::string block_device;   // "sdb1", "loop3"; empty when not block-backed
    std::string disk;           // the whole disk: "sdb" for "sdb1"; the device for an unpartitioned one
    std::string bdi;            // "MAJ:MIN" of the backing device info whose dirty pages are ours; empty when unknown
    bool removable = false;     // /sys/block/<disk>/removable, or a USB/MMC bus in the device path
    // The bus the disk hangs on, from its sysfs path: "usb", "mmc", "nvme", "ata", "virtio", "loop" (a file),
    // "scsi"; empty when not known.
    std::string transport;
    bool rotational = false; // /sys/block/<disk>/queue/rotational
    // The largest request the kernel sends the disk (/sys/block/<disk>/queue/max_sectors_kb); 0 when unknown.
    uint64_t max_request_bytes = 0;
    // The kernel's cap on this device's share of dirty memory (/sys/class/bdi/<bdi>/max_ratio, 100: none) and
    // whether it holds even below the global background threshold (strict_limit, as udev rules set for sticks).
    unsigned bdi_max_ratio = 100;
    bool bdi_strict_limit = false;
    std::optional<uint64_t> free_bytes; // unknown when statfs reports a size of 0 (fusefat)
    std::optional<uint64_t> total_bytes;
    uint64_t allocation_unit = 4096; // statfs's f_frsize: what the smallest file takes (a FAT cluster)
    FsLimits limits;
    WritebackMode writeback = WritebackMode::Windows;
    DataSync data_sync = DataSync::File;
    GroupSync group_sync = GroupSync::Inline;
    MountFlags mount_flags;
    // This process's effective uid owns the mount (or files there have owners of their own). Not owning a FAT
    // mount, it can't set a file's time (EPERM), only write the file.
    bool runs_as_owner = true;

    bool is_tmpfs() const { return writeback == WritebackMode::None; }
    // Jobs that share this key share a writer (one writer per device).
    std::string device_key() const;
};

// Whether each small file gets writeback of its own as it is written (CopyRoute::small_file_writeback), and why,
// in words sanecp --probe prints. A group of small files is otherwise sent by its one syncfs.
struct SmallFileWriteback {
    bool per_file = false;
    std::string why;
    // False when the choice is only a guess from the bus: the rate the copy measures then decides
    // (small_files_need_own_writeback()).
    bool settled = true;
};
// Pure: decided by what the device is, in this order (rules 1 to 3, 5 and 6 are settled: no rate changes them).
//  1. No writeback windows (FUSE, shares, tmpfs): never; their files are synced instead.
//  2. Group syncs on the job's thread (FAT, exFAT, NTFS): always, so each file's writeback runs while the next is
//     written.
//  3. A strict cap on the device's dirty memory (bdi strict_limit with max_ratio < 100): always, so the job is
//     not throttled against the cap file after file.
//  4. A USB or MMC device, or one that says it is removable: they are nearly always slower than the job writes
//     small files, so yes, until a rate is measured (|measured_rate| > 0, bytes/s): then
//     small_files_need_own_writeback() decides, and a fast USB disk sends its groups by one syncfs each.
//  5. A fixed rotational disk: never; one syncfs a group lets the elevator order its writes.
//  6. Any other fixed disk (NVMe, ATA, virtio): never; a group's one syncfs is faster than a request a file.
//     A rate measured over small files counts their opens and renames too and runs low, so it is not taken to
//     say such a disk is slow.
SmallFileWriteback choose_small_file_writeback(const DeviceInfo &device, double measured_rate = 0);

// Below this rate (bytes/s) the device is slower than a copy writes small files, and each file's writeback is
// better started at once than left to the group's syncfs.
inline constexpr double kOwnWritebackBelow = 100e6;
inline bool small_files_need_own_writeback(double measured_rate) { return measured_rate < kOwnWritebackBelow; }

// Pure: the writeback mode for a filesystem, by statfs magic and mountinfo type.
WritebackMode choose_writeback(unsigned long fs_magic, std::string_view fs_type);

// Whether |device| is a network share (SMB, NFS, sshfs, a KDE or GNOME network folder through FUSE): there is no
// device to unplug, and a stall is the link's or the server's.
bool is_network_share(const DeviceInfo &device);

// Pure: whether a page written to |device| stays in the page cache until the server has it on stable storage, so
// that a written range none of whose pages is left after a drop (POSIX_FADV_DONTNEED) is durable there. Linux's NFS
// client (nfs, nfs4) keeps each page it sent as an UNSTABLE write until a COMMIT covering it came back: its
// release_folio refuses such a page to any caller that may not wait, as a drop may not.
bool evicted_means_committed(const DeviceInfo &device);

// Pure: whether a file's space is reserved before its first byte (reserve_space, fallocate KEEP_SIZE), so a
// device filled since the plan looked is found then, not at 97 %. Not on tmpfs (memory), nor on a share (the
// server allocates as the bytes come, and NFS's ALLOCATE is one more round trip before the first byte), nor on
// the kernel's FAT: its fallocate adds the file's clusters one at a time with the file locked (fat_fallocate),
// before anything is written (0.55 s for 120 MiB of 4 KiB clusters in the VM's trace, 4 % of the stick's
// time), where its writes would add the same clusters while the device writes the windows before them.
bool reserves_space_up_front(const DeviceInfo &device);

// Pure: how a finished file is made durable on a filesystem, by statfs magic and mountinfo type. Only the
// kernel's vfat/msdos syncs the whole filesystem first; FUSE FAT drivers (fs_type "fuse"/"fuseblk") keep their
// table in their own process, where only their fsync reaches it.
DataSync choose_data_sync(unsigned long fs_magic, std::string_view fs_type);

// Pure: Background for journaling filesystems, by statfs magic; Inline for everything else.
GroupSync choose_group_sync(unsigned long fs_magic);

// Resolves "MAJ:MIN" of a block device to its sysfs facts, reading under |sysfs_root| (normally "/sys").
// Fills block_device, disk, bdi, removable, transport, rotational, max_request_bytes. Returns false when it is not
// a block device.
bool probe_block_device(unsigned major, unsigned minor, std::string_view sysfs_root, DeviceInfo &info);

// Whether |err| from the destination means its device went away (a pulled stick) rather than failed: ENODEV,
// ENXIO and ESHUTDOWN always; EIO and ENOTCONN (FUSE) when the disk is gone from |sysfs_root|/block. A device
// the probe knew no disk of is never called removed on EIO: the error is then the device's own.
bool device_removed(int err, const DeviceInfo &info, std::string_view sysfs_root);

// |s| as the user should read it: when it failed on the destination because the device went away
// (device_removed), the detail says "the device was removed before the copy finished" and the Status is marked
// device_removed() (a Status marked so already only gets the words); anything else comes back as it was. A pulled
// stick's disk leaves sysfs a few hundred milliseconds after the first EIO, so for a removable device that is waited
// for, up to |grace_seconds|.
Status explain_device_loss(Status s, const DeviceInfo &info, std::string_view sysfs_root = "/sys",
                           double grace_seconds = 0.5);

// The filesystem type udev recorded for a block device ("E:ID_FS_TYPE=exfat" in /run/udev/data/bMAJ:MIN). Pure.
std::string parse_udev_fs_type(std::string_view udev_data);
// The filesystem type libblkid finds on |device| (a block device, or an image file); empty when unknown or
// unreadable.
std::string probe_fs_type_with_blkid(const std::string &device);
// udev's record first, libblkid second. For fuseblk mounts, where mountinfo names no type.
std::string detect_fs_type(const std::string &device, unsigned major_no, unsigned minor_no);

// The label udev recorded for a filesystem: ID_FS_LABEL_ENC unescaped ("PHOTOS\x202026" -> "PHOTOS 2026"), else
// ID_FS_LABEL (whose spaces udev has already turned into '_'); empty when none. Pure.
std::string parse_udev_label(std::string_view udev_data);
// The device's maker and model as udev recorded them ("SanDisk Cruzer Blade" from ID_VENDOR_ENC and ID_MODEL_ENC,
// padding dropped); empty when unknown. Pure.
std::string parse_udev_model(std::string_view udev_data);

// A mounted filesystem on a removable disk: what a destination list or a file manager's list of sticks shows.
struct RemovableMount {
    std::string mount_point;
    std::string block_device; // "sdb1"
    std::string fs_type;      // "vfat"; a FUSE filesystem's subtype ("exfat") where mountinfo names one
    std::string label;        // the filesystem's label; empty when it has none
    std::string model;        // "SanDisk Cruzer Blade"; empty when unknown
    // As the desktop names it: the label, else the model, else the mount point's last component. Never empty,
    // never "." or "..", never holds '/' or NUL, and unique within one removable_mounts() answer: two "STICK"s
    // are "STICK (sdb1)" and "STICK (sdc1)", so pulling one never hands its name to the other. A folder name in
    // a URL.
    std::string name;
};

// The removable block devices (probe_block_device's sense: the RMB bit, or a USB or MMC bus) mounted in |mounts|,
// in mountinfo order; a device mounted twice is listed once, at its first mount of the whole filesystem. The label and
// model come from udev's database under |udev_root| ("/run/udev/data"), the model else from sysfs; an empty |udev_root|
// reads no udev records.
std::vector<RemovableMount> removable_mounts(const std::vector<MountEntry> &mounts, std::string_view sysfs_root,
                                             std::string_view udev_root);
// This process's removable mounts: /proc/self/mountinfo, /sys and /run/udev/data.
std::vector<RemovableMount> current_removable_mounts();

// A network share mounted where a user can copy to it, named as a person knows it.
struct ShareMount {
    std::string mount_point;
    std::string fs_type; // "cifs", "nfs4", "sshfs" (a FUSE filesystem's subtype)
    std::string server;  // "nas.local", "192.168.1.5"
    std::string share;   // the share, export or remote folder's last component; empty for the server's root
    std::string name;    // "photos on nas.local", or the server alone
};
// Pure: the SMB, NFS and sshfs mounts in |mounts|, in mountinfo order, each source once. kio-fuse and gvfs mounts
// are left out: one of them holds every remote folder the desktop has opened, not one share.
std::vector<ShareMount> network_share_mounts(const std::vector<MountEntry> &mounts);

// The full probe of an existing folder. Reads /proc/self/mountinfo and /sys.
// Fails only when the folder can't be opened or stat'ed. Without a readable mountinfo or sysfs (a bare
// container) the mount and block-device fields stay empty and the writeback mode follows the statfs magic.
Result<DeviceInfo> probe_device(const std::string &folder);
// DeviceInfo::device_key() of the device behind |folder|, from what the system knows of its mount: no statfs, so
// no round trip to a share's server (the job queue picks a job's lane with it before the plan probes).
Result<std::string> device_key_of(const std::string &folder);

// Reads a small text file of /proc, /sys or debugfs whole, through the syscall seam. nullopt when it can't be
// opened or read. The kernel generates these on each read, so two reads may disagree; callers treat them as
// a snapshot, never as a contract.
std::optional<std::string> read_kernel_text(const std::string &path);

} // namespace sanecopy
