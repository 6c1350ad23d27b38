// SPDX-License-Identifier: GPL-2.0-or-later
#include "catch.h"

#include "copy_file.h"
#include "device_probe.h"
#include "sys.h"
#include "test_paths.h"
#include "test_support.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <unistd.h>
#include <map>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

using namespace sanecopy;

namespace {

const std::string kFixtures = SANECOPY_FIXTURES;
const std::string kSysfs = kFixtures + "/sysfs";

std::vector<MountEntry> fixture_mounts(const std::string &name)
{
    return parse_mountinfo(test::read_file(kFixtures + "/mountinfo/" + name));
}

const MountEntry &by_id(const std::vector<MountEntry> &mounts, int id)
{
    auto it = std::find_if(mounts.begin(), mounts.end(), [&](const MountEntry &m) { return m.mount_id == id; });
    REQUIRE(it != mounts.end());
    return *it;
}

int mount_id_for(const std::vector<MountEntry> &mounts, std::string_view path)
{
    const MountEntry *m = find_mount(mounts, path);
    return m ? m->mount_id : -1;
}

std::string real_path(const std::string &path)
{
    char buf[PATH_MAX];
    REQUIRE(::realpath(path.c_str(), buf) != nullptr);
    return buf;
}

struct statfs fake_statfs(unsigned long magic, uint64_t blocks, uint64_t avail)
{
    struct statfs sfs {};
    sfs.f_type = static_cast<decltype(sfs.f_type)>(magic);
    sfs.f_bsize = 4096;
    sfs.f_frsize = 4096;
    sfs.f_blocks = blocks;
    sfs.f_bfree = avail;
    sfs.f_bavail = avail;
    return sfs;
}

// A machine that exists only in the fixtures: /proc/self/mountinfo is a fixture file, /sys is the fixture
// sysfs tree, block device nodes are a table, and the one folder probed gets made-up fstat and fstatfs
// answers. Everything else is the real system, so descriptors open and close for real.
class FixtureMachine : public Syscalls {
public:
    FixtureMachine(std::string folder_, dev_t dev, const struct statfs &sfs, const std::string &mountinfo)
        : folder(std::move(folder_)),
          folder_dev(dev),
          folder_statfs(sfs),
          mountinfo_fixture(kFixtures + "/mountinfo/" + mountinfo)
    {}

    // probe_device(folder) on this machine, which must succeed.
    DeviceInfo probe()
    {
        ScopedSyscalls seam(*this);
        auto probed = probe_device(folder);
        REQUIRE(probed.ok());
        return probed.value();
    }

    std::string folder;   // the path handed to probe_device()
    dev_t folder_dev = 0; // its st_dev
    struct statfs folder_statfs {};
    std::string mountinfo_fixture; // served as /proc/self/mountinfo
    std::map<std::string, dev_t> block_nodes;
    uid_t euid = 1000; // who the probe runs as

    int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
    {
        if (path == folder) {
            folder_fd_ = Syscalls::raw_openat(AT_FDCWD, kFixtures.c_str(), flags, mode);
            return folder_fd_;
        }
        return Syscalls::raw_openat(dirfd, redirect(path).c_str(), flags, mode);
    }
    int raw_fstat(int fd, struct stat *st) override
    {
        if (fd != folder_fd_)
            return Syscalls::raw_fstat(fd, st);
        *st = {};
        st->st_mode = S_IFDIR | 0755;
        st->st_dev = folder_dev;
        return 0;
    }
    int raw_fstatfs(int fd, struct statfs *st) override
    {
        if (fd != folder_fd_)
            return Syscalls::raw_fstatfs(fd, st);
        *st = folder_statfs;
        return 0;
    }
    int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
    {
        if (dirfd == folder_fd_ && *path == '\0')
            return raw_fstat(dirfd, st); // the probe's own look at the folder it opened
        if (auto node = block_nodes.find(path); node != block_nodes.end()) {
            *st = {};
            st->st_mode = S_IFBLK | 0660;
            st->st_rdev = node->second;
            return 0;
        }
        return Syscalls::raw_fstatat(dirfd, redirect(path).c_str(), st, flags);
    }
    uid_t raw_geteuid() override { return euid; }
    ssize_t raw_readlinkat(int dirfd, const char *path, char *buf, size_t len) override
    {
        if (folder_fd_ >= 0 && path == "/proc/self/fd/" + std::to_string(folder_fd_)) {
            size_t n = std::min(len, folder.size());
            std::memcpy(buf, folder.data(), n);
            return static_cast<ssize_t>(n);
        }
        return Syscalls::raw_readlinkat(dirfd, redirect(path).c_str(), buf, len);
    }

private:
    std::string redirect(const std::string &path) const
    {
        if (path == "/proc/self/mountinfo")
            return mountinfo_fixture;
        if (path.rfind("/sys/", 0) == 0)
            return kSysfs + path.substr(4);
        if (path.rfind("/dev/", 0) == 0) // device nodes come only from block_nodes
            return kFixtures + "/no-such-dir" + path;
        if (path.rfind("/run/udev/", 0) == 0) // nor does this machine's udev know its devices
            return kFixtures + "/no-such-dir" + path;
        return path;
    }

    int folder_fd_ = -1;
};

constexpr unsigned long kFuseMagic = 0x65735546;
constexpr unsigned long kMsdosMagic = 0x4d44;
constexpr unsigned long kExtMagic = 0xef53;
constexpr unsigned long kTmpfsMagic = 0x01021994;
constexpr unsigned long kRamfsMagic = 0x858458f6;

} // namespace

// --- mountinfo ---------------------------------------------------------------------------------------------

TEST_CASE("mountinfo: a plain line gives every field", "[device_probe]")
{
    auto mounts = fixture_mounts("desktop.txt");
    const MountEntry &efi = by_id(mounts, 27);
    CHECK(efi.parent_id == 22);
    CHECK(efi.dev_major == 259);
    CHECK(efi.dev_minor == 1);
    CHECK(efi.root == "/");
    CHECK(efi.super_options.rfind("rw,fmask=0077,", 0) == 0);
    CHECK(mounts.size() == 14);
}

TEST_CASE("mountinfo: mount point, type, subtype, source and options, however the line spells them", "[device_probe]")
{
    struct Case {
        int mount_id; // in desktop.txt
        const char *what;
        std::string_view mount_point, options, fs_type, fs_subtype, source, super_options_start;
    };
    const Case cases[] = {
        {27, "a plain line", "/boot/efi", "rw,relatime", "vfat", "", "/dev/nvme0n1p1", "rw,fmask=0077,"},
        {30, "escaped spaces", "/media/anna/My Stick", "rw,nosuid,nodev,relatime", "vfat", "", "/dev/sdb1",
         "rw,uid=1000,"},
        {35, "tab, newline and backslash escapes", "/mnt/tab\tnew\nline\\slash", "rw,relatime", "tmpfs", "", "tmpfs",
         "rw"},
        {31, "optional fields (shared:N master:N) end at the separator", "/mnt/usb", "rw,relatime", "ext4", "",
         "/dev/sdc1", "rw"},
        {33, "fuse.sshfs: type fuse, subtype sshfs", "/home/anna/remote", "rw,nosuid,nodev,relatime", "fuse", "sshfs",
         "anna@nas:/srv", "rw,user_id=1000,"},
        {29, "fuse.gvfsd-fuse", "/run/user/1000/gvfs", "rw,nosuid,nodev,relatime", "fuse", "gvfsd-fuse", "gvfsd-fuse",
         "rw,user_id=1000,"},
        {34, "fuseblk: no subtype, and its block device", "/media/anna/EXFAT", "rw,nosuid,nodev,relatime", "fuseblk",
         "", "/dev/sde1", "rw,user_id=0,"},
    };
    const auto mounts = fixture_mounts("desktop.txt");
    for (const Case &c : cases) {
        INFO(c.what);
        const MountEntry &m = by_id(mounts, c.mount_id);
        CHECK(m.mount_point == c.mount_point);
        CHECK(m.options == c.options);
        CHECK(m.fs_type == c.fs_type);
        CHECK(m.fs_subtype == c.fs_subtype);
        CHECK(m.source == c.source);
        CHECK(m.super_options.rfind(c.super_options_start, 0) == 0);
    }
}

TEST_CASE("mountinfo: malformed lines are skipped and the rest kept", "[device_probe]")
{
    auto mounts = fixture_mounts("malformed.txt");
    std::vector<int> ids;
    for (const auto &m : mounts)
        ids.push_back(m.mount_id);
    CHECK(ids == std::vector<int> {22, 28});
    // An empty source is a legal field, not a malformed line.
    CHECK(by_id(mounts, 28).source.empty());
    CHECK(by_id(mounts, 28).super_options == "rw");
    CHECK(parse_mountinfo("").empty());
}

// --- mount flags -------------------------------------------------------------------------------------------

TEST_CASE("mount flags: flush, sync, dirsync and the mount's owner, as each filesystem states them", "[device_probe]")
{
    struct Case {
        int mount_id; // in udisks_sticks.txt
        const char *what;
        bool flush, sync, dirsync;
        std::optional<uint32_t> owner_uid;
    };
    const Case cases[] = {
        {61, "UDisks2's vfat: flush, and its user as owner", true, false, false, 1000},
        {62, "UDisks2's exFAT: no flush", false, false, false, 1000},
        {64, "UDisks2's NTFS: no flush", false, false, false, 1000},
        {63, "a vfat with sync,dirsync and no uid=: root's", false, true, true, 0},
        {65, "FUSE: user_id= owns the mount", false, false, false, 1000},
        {22, "ext4: files have owners of their own", false, false, false, std::nullopt},
    };
    const auto mounts = fixture_mounts("udisks_sticks.txt");
    for (const Case &c : cases) {
        INFO(c.what);
        const MountFlags flags = parse_mount_flags(by_id(mounts, c.mount_id));
        CHECK(flags.flush == c.flush);
        CHECK(flags.sync == c.sync);
        CHECK(flags.dirsync == c.dirsync);
        CHECK(flags.owner_uid == c.owner_uid);
    }
}

// --- find_mount --------------------------------------------------------------------------------------------

TEST_CASE("find_mount: the longest mount point holding the path wins, on a component boundary", "[device_probe]")
{
    struct Case {
        std::string_view path;
        int mount_id; // in desktop.txt
    };
    const auto mounts = fixture_mounts("desktop.txt");
    for (const Case &c : {Case {"/media/anna/My Stick/DCIM/img.jpg", 30}, Case {"/run/user/1000/gvfs/smb-share", 29},
                          Case {"/run/user/1000", 28}, Case {"/etc/fstab", 22}, Case {"/", 22},
                          // a mount point matches only on a component boundary
                          Case {"/mnt/usb2/x", 32}, Case {"/mnt/usb/x", 31}, Case {"/mnt/usb", 31},
                          Case {"/mnt/usbx", 22}, Case {"/media/anna/My Sticky", 22}}) {
        CAPTURE(c.path);
        CHECK(mount_id_for(mounts, c.path) == c.mount_id);
    }
}

TEST_CASE("find_mount: of two mounts on one mount point the last is on top", "[device_probe]")
{
    auto mounts = fixture_mounts("stacked.txt");
    const MountEntry *m = find_mount(mounts, "/mnt/usb/photos");
    REQUIRE(m);
    CHECK(m->mount_id == 41);
    CHECK(m->source == "/dev/sdc1");
}

TEST_CASE("find_mount: a stacked mount listed before the one it hides is still on top", "[device_probe]")
{
    auto mounts = fixture_mounts("stacked.txt");
    CHECK(mount_id_for(mounts, "/srv/data/file") == 51);
}

TEST_CASE("find_mount: nothing matches a relative path or an empty table", "[device_probe]")
{
    auto mounts = fixture_mounts("desktop.txt");
    CHECK(find_mount(mounts, "mnt/usb") == nullptr);
    CHECK(find_mount({}, "/mnt/usb") == nullptr);
}

// --- filesystem limits -------------------------------------------------------------------------------------

TEST_CASE("fs limits: FAT files stop at 4 GiB - 1, exFAT and NTFS files don't", "[device_probe]")
{
    for (const char *fat : {"vfat", "msdos", "fat"}) {
        CAPTURE(fat);
        CHECK(fs_limits_for(fat).max_file_size == 4294967295ull);
    }
    CHECK(fs_limits_for("exfat").max_file_size == UINT64_MAX);
    CHECK(fs_limits_for("ntfs3").max_file_size == UINT64_MAX);
}

TEST_CASE("fs limits: FAT, exFAT and NTFS forbid Windows characters, only FAT and exFAT trailing dots",
          "[device_probe]")
{
    for (const char *type : {"vfat", "msdos", "fat", "exfat"}) {
        CAPTURE(type);
        CHECK(fs_limits_for(type).forbids_fat_chars);
        CHECK(fs_limits_for(type).forbids_trailing_dot_space);
    }
    for (const char *type : {"ntfs", "ntfs3", "ntfs-3g"}) {
        CAPTURE(type);
        CHECK(fs_limits_for(type).forbids_fat_chars);
        CHECK_FALSE(fs_limits_for(type).forbids_trailing_dot_space);
    }
}

TEST_CASE("fs limits: ext4, xfs, btrfs, tmpfs and unknown types have none", "[device_probe]")
{
    for (const char *type : {"ext4", "xfs", "btrfs", "tmpfs", "fuseblk", "sshfs", ""}) {
        CAPTURE(type);
        FsLimits limits = fs_limits_for(type);
        CHECK(limits.max_file_size == UINT64_MAX);
        CHECK_FALSE(limits.forbids_fat_chars);
        CHECK_FALSE(limits.forbids_trailing_dot_space);
    }
}

TEST_CASE("name_problem: each character FAT forbids is named in the reason", "[device_probe]")
{
    const FsLimits fat = fs_limits_for("vfat");
    for (char c : std::string(":?*\"<>|\\")) {
        std::string name = std::string("a") + c + "b.txt";
        CAPTURE(name);
        std::string problem = name_problem(name, fat);
        CHECK(problem == std::string("contains '") + c + "' which FAT/exFAT cannot store");
    }
}

TEST_CASE("name_problem: control characters are refused on FAT", "[device_probe]")
{
    const FsLimits exfat = fs_limits_for("exfat");
    for (std::string name : {std::string("tab\there"), std::string("new\nline"), std::string("\x01start")}) {
        CAPTURE(name);
        CHECK(name_problem(name, exfat) == "contains a control character");
    }
}

TEST_CASE("name_problem: a trailing dot or space is refused on FAT and exFAT, not on NTFS", "[device_probe]")
{
    for (const char *name : {"notes.", "notes ", "dir..."}) {
        CAPTURE(name);
        CHECK(name_problem(name, fs_limits_for("vfat")) == "ends with a dot or space, which FAT/exFAT drop");
        CHECK(name_problem(name, fs_limits_for("exfat")) == "ends with a dot or space, which FAT/exFAT drop");
        CHECK(name_problem(name, fs_limits_for("ntfs3")).empty());
    }
}

TEST_CASE("name_problem: ordinary names pass on FAT, and anything passes on ext4", "[device_probe]")
{
    const FsLimits fat = fs_limits_for("vfat");
    for (const char *name : {"Report (final) 2024.pdf", ".hidden",
                             "\xc3\x9c"
                             "bung \xe2\x82\xac.txt",
                             "a.b.c", "."}) {
        CAPTURE(name);
        CHECK(name_problem(name, fat).empty());
    }
    const FsLimits ext4 = fs_limits_for("ext4");
    CHECK(name_problem("what? a:b*c|d.", ext4).empty());
    CHECK(name_problem("tab\there ", ext4).empty());
}

// --- writeback mode ----------------------------------------------------------------------------------------

TEST_CASE("choose_writeback: tmpfs and ramfs need none, by magic or by name", "[device_probe]")
{
    CHECK(choose_writeback(kTmpfsMagic, "tmpfs") == WritebackMode::None);
    CHECK(choose_writeback(kRamfsMagic, "ramfs") == WritebackMode::None);
    CHECK(choose_writeback(kTmpfsMagic, "") == WritebackMode::None);
    CHECK(choose_writeback(0, "tmpfs") == WritebackMode::None);
}

TEST_CASE("choose_data_sync: the kernel's FAT syncs the whole filesystem first, nothing else does", "[device_probe]")
{
    CHECK(choose_data_sync(kMsdosMagic, "vfat") == DataSync::FilesystemFirst);
    CHECK(choose_data_sync(kMsdosMagic, "msdos") == DataSync::FilesystemFirst);
    CHECK(choose_data_sync(kMsdosMagic, "") == DataSync::FilesystemFirst);
    // FUSE FAT drivers keep the table in their own process: only their fsync reaches it.
    CHECK(choose_data_sync(kFuseMagic, "fuse") == DataSync::File);
    CHECK(choose_data_sync(kFuseMagic, "fuseblk") == DataSync::File);
    for (const char *type : {"exfat", "ntfs3", "ext4", "xfs", "btrfs", "tmpfs"}) {
        CAPTURE(type);
        CHECK(choose_data_sync(0, type) == DataSync::File);
    }
    CHECK(choose_data_sync(kExtMagic, "") == DataSync::File);
}

TEST_CASE("choose_writeback: local block filesystems get sync_file_range windows", "[device_probe]")
{
    for (const char *type : {"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "vfat", "msdos", "exfat", "ntfs3", "hfs",
                             "hfsplus", "udf", "jfs", "reiserfs", "nilfs2"}) {
        CAPTURE(type);
        CHECK(choose_writeback(0, type) == WritebackMode::Windows);
    }
}

TEST_CASE("choose_writeback: FUSE, network and stacked filesystems sync per chunk", "[device_probe]")
{
    for (const char *type : {"fuse", "fuseblk", "nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "overlay"}) {
        CAPTURE(type);
        CHECK(choose_writeback(0, type) == WritebackMode::ChunkSync);
    }
    // fuseblk over an exFAT stick: the FUSE magic, never the exFAT one.
    CHECK(choose_writeback(kFuseMagic, "fuseblk") == WritebackMode::ChunkSync);
}

TEST_CASE("network_share_mounts: SMB, NFS and sshfs mounts, named by share and server", "[device_probe]")
{
    const auto mounts = parse_mountinfo(
        "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
        "40 22 0:50 / /mnt/nas rw,relatime - cifs //nas.local/photos rw,vers=3.1.1\n"
        "41 22 0:51 / /media/backup rw,relatime - nfs4 192.168.1.5:/export/backup rw,vers=4.2\n"
        "42 22 0:52 / /home/anna/server rw,nosuid,nodev - fuse.sshfs anna@build.example.org:/srv/www/ rw\n"
        "43 22 0:53 / /mnt/root rw - nfs4 [fe80::1]:/ rw\n"
        "44 22 0:50 / /mnt/nas-again rw,relatime - cifs //nas.local/photos rw\n"
        "45 22 0:54 / /run/user/1000/kio-fuse-Ab12 rw - fuse.kio-fuse kio-fuse rw\n"
        "46 22 0:55 / /run/user/1000/gvfs rw - fuse.gvfsd-fuse gvfsd-fuse rw\n"
        "47 22 8:17 / /media/anna/STICK rw - vfat /dev/sdb1 rw\n"
        "48 22 0:56 / /mnt/v6 rw - fuse.sshfs anna@[fe80::2]:/data rw\n"
        "49 22 0:57 / /mnt/win rw - cifs \\134\\134fileserver\\134public rw\n"); // mountinfo escapes '\\'
    const auto shares = network_share_mounts(mounts);
    REQUIRE(shares.size() == 6);
    CHECK(shares[4].name == "data on [fe80::2]"); // a user before an IPv6 address
    CHECK(shares[5].name == "public on fileserver");
    CHECK(shares[0].mount_point == "/mnt/nas");
    CHECK(shares[0].name == "photos on nas.local");
    CHECK(shares[0].fs_type == "cifs");
    CHECK(shares[1].name == "backup on 192.168.1.5");
    CHECK(shares[2].name == "www on build.example.org"); // the user is not part of the server's name
    CHECK(shares[2].fs_type == "sshfs");
    CHECK(shares[3].name == "[fe80::1]"); // the server's root
    CHECK(shares[3].share.empty());
}

TEST_CASE("is_network_share: SMB, NFS and network folders through FUSE, not a stick behind FUSE", "[device_probe]")
{
    const auto share = [](const char *type, const char *subtype = "") {
        DeviceInfo d;
        d.fs_type = type;
        d.fs_subtype = subtype;
        return is_network_share(d);
    };
    for (const char *type : {"cifs", "smb3", "nfs", "nfs4"}) {
        CAPTURE(type);
        CHECK(share(type));
    }
    CHECK(share("fuse", "sshfs"));
    CHECK(share("fuse", "kio-fuse"));
    CHECK(share("fuse", "gvfsd-fuse"));
    CHECK_FALSE(share("fuseblk", "exfat")); // exfat-fuse on a stick
    CHECK_FALSE(share("fuse", "fusefat"));
    CHECK_FALSE(share("vfat"));
    CHECK_FALSE(share("ext4"));
    CHECK_FALSE(share("tmpfs"));
}

TEST_CASE("evicted_means_committed: only Linux's NFS client, whose written pages stay until committed",
          "[device_probe]")
{
    const auto evicted = [](const char *type, const char *subtype = "") {
        DeviceInfo d;
        d.fs_type = type;
        d.fs_subtype = subtype;
        d.writeback = choose_writeback(0, type);
        return evicted_means_committed(d);
    };
    CHECK(evicted("nfs"));
    CHECK(evicted("nfs4"));
    // A page written out is not yet flushed by the SMB server, nor by sshfs's; on a stick, not yet on its medium.
    for (const char *type : {"cifs", "smb3", "9p", "ext4", "vfat", "tmpfs"}) {
        CAPTURE(type);
        CHECK_FALSE(evicted(type));
    }
    CHECK_FALSE(evicted("fuse", "sshfs"));
    // And the route a copy onto NFS takes says so.
    DeviceInfo nfs;
    nfs.fs_type = "nfs4";
    nfs.writeback = WritebackMode::ChunkSync;
    CHECK(choose_route(nfs, 0).evicted_means_committed);
    nfs.fs_type = "cifs";
    CHECK_FALSE(choose_route(nfs, 0).evicted_means_committed);
}

TEST_CASE("reserves_space_up_front: on ext4, exFAT and NTFS, not on FAT, a share or tmpfs", "[device_probe]")
{
    const auto reserves = [](const char *type, unsigned long magic, const char *subtype = "") {
        DeviceInfo d;
        d.fs_type = type;
        d.fs_subtype = subtype;
        d.fs_magic = magic;
        d.writeback = choose_writeback(magic, type);
        return reserves_space_up_front(d);
    };
    CHECK(reserves("ext4", kExtMagic));
    CHECK(reserves("exfat", 0x2011bab0));
    CHECK(reserves("ntfs3", 0x7366746e));
    CHECK(reserves("fuseblk", kFuseMagic, "exfat")); // exfat-fuse on a stick
    CHECK_FALSE(reserves("vfat", kMsdosMagic));
    CHECK_FALSE(reserves("msdos", kMsdosMagic));
    CHECK_FALSE(reserves("", kMsdosMagic)); // no mountinfo: the magic says FAT
    CHECK_FALSE(reserves("nfs4", 0x6969));
    CHECK_FALSE(reserves("cifs", 0xff534d42));
    CHECK_FALSE(reserves("fuse", kFuseMagic, "sshfs"));
    CHECK_FALSE(reserves("tmpfs", 0x01021994));
}

TEST_CASE("choose_writeback: an unknown type syncs per chunk, with no type the magic decides", "[device_probe]")
{
    CHECK(choose_writeback(0x2fc12fc1, "zfs") == WritebackMode::ChunkSync);
    CHECK(choose_writeback(kExtMagic, "") == WritebackMode::Windows);
    CHECK(choose_writeback(kMsdosMagic, "") == WritebackMode::Windows);
    CHECK(choose_writeback(kFuseMagic, "") == WritebackMode::ChunkSync);
    CHECK(choose_writeback(0, "") == WritebackMode::ChunkSync);
}

// --- block devices in sysfs --------------------------------------------------------------------------------

TEST_CASE("probe_block_device: a partition resolves to its disk, the disk's BDI, bus, flags and request size",
          "[device_probe]")
{
    struct Case {
        unsigned major, minor;
        std::string_view block_device, disk, bdi, transport;
        bool removable, rotational;
        uint64_t max_request; // the disk's queue/max_sectors_kb, in bytes; 0 where the file is missing
    };
    const Case cases[] = {
        // a USB stick: usb-storage reports sticks as rotational
        {8, 17, "sdb1", "sdb", "8:16", "usb", true, true, 1024 * 1024},
        // an NVMe partition takes the disk's BDI and request size, whatever its minor
        {259, 2, "nvme0n1p2", "nvme0n1", "259:0", "nvme", false, false, 128 * 1024},
        // an unpartitioned loop device is its own disk
        {7, 3, "loop3", "loop3", "7:3", "loop", false, false, 0},
    };
    for (const Case &c : cases) {
        INFO(c.major << ":" << c.minor);
        DeviceInfo info;
        REQUIRE(probe_block_device(c.major, c.minor, kSysfs, info));
        CHECK(info.block_device == c.block_device);
        CHECK(info.disk == c.disk);
        CHECK(info.bdi == c.bdi);
        CHECK(info.transport == c.transport);
        CHECK(info.removable == c.removable);
        CHECK(info.rotational == c.rotational);
        CHECK(info.max_request_bytes == c.max_request);
    }
}

TEST_CASE("device_removed: a pulled stick, told from a failing one", "[device_probe]")
{
    DeviceInfo present;
    REQUIRE(probe_block_device(8, 17, kSysfs, present));
    DeviceInfo gone = present;
    gone.disk = "sdz"; // what the same probe says once the kernel has dropped the disk
    const DeviceInfo unknown;

    for (int err : {ENODEV, ENXIO, ESHUTDOWN})
        CHECK(device_removed(err, present, kSysfs));
    // EIO is the device's own failure while its disk is still there, a removal once it is gone.
    CHECK_FALSE(device_removed(EIO, present, kSysfs));
    CHECK(device_removed(EIO, gone, kSysfs));
    CHECK(device_removed(ENOTCONN, gone, kSysfs));
    CHECK_FALSE(device_removed(EIO, unknown, kSysfs));
    CHECK_FALSE(device_removed(ENOSPC, gone, kSysfs));
}

TEST_CASE("probe_block_device: a USB card reader that reports removable=0 is removable", "[device_probe]")
{
    DeviceInfo info;
    REQUIRE(probe_block_device(8, 33, kSysfs, info));
    CHECK(info.disk == "sdc");
    CHECK(test::read_file(kSysfs + "/block/sdc/removable") == "0\n");
    CHECK(info.removable);
    CHECK(info.transport == "usb");
}

TEST_CASE("small files' own writeback: decided by what the device is, and said why", "[device_probe]")
{
    struct Case {
        const char *what;
        std::function<void(DeviceInfo &)> make; // from ext4 on a fixed NVMe disk
        double measured_rate;
        bool per_file, settled;
        const char *why_says;
    };
    const Case cases[] = {
        {"ext4 on a fixed NVMe disk", [](DeviceInfo &) {}, 0, false, true, "fixed nvme disk"},
        {"the same filesystem on a stick", [](DeviceInfo &d) { d.transport = "usb"; }, 0, true, false, "usb device"},
        {"a disk that says it is removable, on a bus that does not",
         [](DeviceInfo &d) {
             d.transport = "scsi";
             d.removable = true;
         },
         0, true, false, "removable"},
        {"a fixed spinning disk",
         [](DeviceInfo &d) {
             d.transport = "ata";
             d.rotational = true;
         },
         0, false, true, "rotational ata"},
        {"FAT, exFAT, NTFS: even on a fixed disk", [](DeviceInfo &d) { d.group_sync = GroupSync::Inline; }, 0, true,
         true, "FAT"},
        {"FUSE, a share", [](DeviceInfo &d) { d.writeback = WritebackMode::ChunkSync; }, 0, false, true, "synced"},
        {"a strict cap on the device's dirty memory",
         [](DeviceInfo &d) {
             d.bdi_max_ratio = 2;
             d.bdi_strict_limit = true;
         },
         0, true, true, "2 % of dirty memory"},
        {"a cap without strict_limit decides nothing", [](DeviceInfo &d) { d.bdi_max_ratio = 2; }, 0, false, true,
         "fixed nvme disk"},
        {"a stick measured fast (a USB NVMe enclosure)", [](DeviceInfo &d) { d.transport = "usb"; }, 400e6, false, true,
         "measured 400 MB/s"},
        {"a stick measured slow", [](DeviceInfo &d) { d.transport = "usb"; }, 25e6, true, true, "measured 25 MB/s"},
        {"a fixed disk measured slow over small files is still a fixed disk", [](DeviceInfo &) {}, 25e6, false, true,
         "fixed nvme disk"},
        {"a measured rate does not overrule FAT", [](DeviceInfo &d) { d.group_sync = GroupSync::Inline; }, 900e6, true,
         true, "FAT"},
    };
    for (const Case &c : cases) {
        INFO(c.what);
        DeviceInfo d;
        d.writeback = WritebackMode::Windows;
        d.group_sync = GroupSync::Background; // ext4
        d.transport = "nvme";
        c.make(d);
        const SmallFileWriteback w = choose_small_file_writeback(d, c.measured_rate);
        CAPTURE(w.why);
        CHECK(w.per_file == c.per_file);
        CHECK(w.settled == c.settled);
        CHECK(w.why.find(c.why_says) != std::string::npos);
    }
}

TEST_CASE("probe_block_device: the kernel's cap on a device's dirty memory is read from its BDI", "[device_probe]")
{
    DeviceInfo reader, stick, loop;
    REQUIRE(probe_block_device(8, 33, kSysfs, reader)); // a udev rule holds the card reader to 2 %, strictly
    CHECK(reader.bdi_max_ratio == 2);
    CHECK(reader.bdi_strict_limit);
    REQUIRE(probe_block_device(8, 17, kSysfs, stick));
    CHECK(stick.bdi_max_ratio == 100);
    CHECK_FALSE(stick.bdi_strict_limit);
    REQUIRE(probe_block_device(7, 3, kSysfs, loop)); // no BDI folder in the fixture: no cap
    CHECK(loop.bdi_max_ratio == 100);
    CHECK_FALSE(loop.bdi_strict_limit);
}

TEST_CASE("probe_block_device: anonymous devices (0:NN) have no sysfs entry", "[device_probe]")
{
    DeviceInfo info;
    CHECK_FALSE(probe_block_device(0, 52, kSysfs, info));
    CHECK_FALSE(probe_block_device(8, 99, kSysfs, info));
    CHECK(info.block_device.empty());
    CHECK(info.bdi.empty());
}

TEST_CASE("device_key: the BDI names the writer, without one st_dev does", "[device_probe]")
{
    DeviceInfo part1, part2;
    REQUIRE(probe_block_device(8, 17, kSysfs, part1));
    REQUIRE(probe_block_device(8, 18, kSysfs, part2));
    part1.st_dev = makedev(8, 17);
    part2.st_dev = makedev(8, 18);
    CHECK(part1.device_key() == "bdi:8:16");
    CHECK(part2.device_key() == part1.device_key());

    DeviceInfo tmpfs;
    tmpfs.st_dev = makedev(0, 52);
    CHECK(tmpfs.device_key() == "dev:0:52");
}

// --- read_kernel_text --------------------------------------------------------------------------------------

TEST_CASE("read_kernel_text: reads to the end across several chunks, and fails on a missing file", "[device_probe]")
{
    test::TempDir dir;
    std::string text;
    for (int i = 0; text.size() < 200 * 1024; ++i)
        text += "line " + std::to_string(i) + "\n";
    test::write_text_file(dir / "big.txt", text);
    auto read = read_kernel_text(dir / "big.txt");
    REQUIRE(read);
    CHECK(*read == text);
    CHECK_FALSE(read_kernel_text(dir / "missing"));
}

// --- probe_device on this machine --------------------------------------------------------------------------

TEST_CASE("probe_device: a temp folder lies under its mount point and has free space", "[device_probe]")
{
    test::TempDir dir;
    auto probed = probe_device(dir.path());
    REQUIRE(probed.ok());
    const DeviceInfo &info = probed.value();
    const std::string path = real_path(dir.path());
    CAPTURE(path, info.mount_point, info.fs_type);
    REQUIRE_FALSE(info.mount_point.empty());
    CHECK(path.rfind(info.mount_point, 0) == 0);
    CHECK((info.mount_point == "/" || path.size() == info.mount_point.size() || path[info.mount_point.size()] == '/'));
    CHECK_FALSE(info.fs_type.empty());
    CHECK(info.fs_magic != 0);
    struct stat st {};
    REQUIRE(::stat(dir.path().c_str(), &st) == 0);
    CHECK(info.st_dev == st.st_dev);
    REQUIRE(info.free_bytes);
    REQUIRE(info.total_bytes);
    CHECK(*info.free_bytes > 0);
    CHECK(*info.free_bytes <= *info.total_bytes);
    CHECK(info.writeback == choose_writeback(info.fs_magic, info.fs_type));
}

TEST_CASE("probe_device: a block-backed folder names a BDI the kernel knows", "[device_probe]")
{
    test::TempDir dir;
    auto probed = probe_device(dir.path());
    REQUIRE(probed.ok());
    const DeviceInfo &info = probed.value();
    if (info.block_device.empty()) {
        WARN("the temp folder " << dir.path() << " is on " << info.fs_type << ", not on a block device");
        return;
    }
    CAPTURE(info.block_device, info.disk, info.bdi);
    REQUIRE_FALSE(info.bdi.empty());
    CHECK(test::exists("/sys/class/bdi/" + info.bdi));
    CHECK(test::read_file("/sys/block/" + info.disk + "/dev") == info.bdi + "\n");
    CHECK(info.device_key() == "bdi:" + info.bdi);
}

TEST_CASE("probe_device: a tmpfs folder needs no writeback and has no BDI", "[device_probe]")
{
    struct statfs sfs {};
    if (::statfs("/dev/shm", &sfs) != 0 || static_cast<unsigned long>(sfs.f_type) != kTmpfsMagic) {
        WARN("/dev/shm is not a tmpfs here");
        return;
    }
    auto probed = probe_device("/dev/shm");
    REQUIRE(probed.ok());
    const DeviceInfo &info = probed.value();
    CHECK(info.mount_point == "/dev/shm");
    CHECK(info.fs_type == "tmpfs");
    CHECK(info.is_tmpfs());
    CHECK(info.bdi.empty());
    CHECK(info.device_key().rfind("dev:0:", 0) == 0);
}

TEST_CASE("probe_device: a missing folder fails with ENOENT and names the path", "[device_probe]")
{
    test::TempDir dir;
    auto probed = probe_device(dir / "gone");
    REQUIRE_FALSE(probed.ok());
    CHECK(probed.status().err() == ENOENT);
    CHECK(probed.status().path() == dir / "gone");
}

// --- probe_device on a fixture machine ---------------------------------------------------------------------

TEST_CASE("probe_device: fuseblk (exfat-fuse on a loop device) takes its source device's BDI", "[device_probe]")
{
    FixtureMachine machine("/media/stick/photos", makedev(7, 3), fake_statfs(kFuseMagic, 1000000, 250000),
                           "fuseblk_stick.txt");
    machine.block_nodes["/dev/fixture-loop3"] = makedev(7, 3);
    const DeviceInfo info = machine.probe();
    CHECK(info.mount_point == "/media/stick");
    CHECK(info.fs_type == "fuseblk");
    CHECK(info.fs_subtype.empty());
    CHECK(info.block_device == "loop3");
    CHECK(info.bdi == "7:3");
    CHECK(info.device_key() == "bdi:7:3");
    CHECK(info.writeback == WritebackMode::ChunkSync);
    // exFAT or NTFS: mountinfo can't tell, so no limits are guessed.
    CHECK_FALSE(info.limits.forbids_fat_chars);
    CHECK(info.limits.max_file_size == UINT64_MAX);
    REQUIRE(info.free_bytes);
    CHECK(*info.free_bytes == 250000ull * 4096);
}

TEST_CASE("probe_device: a FAT stick partition gets FAT limits and an unknown size when statfs says 0",
          "[device_probe]")
{
    FixtureMachine machine("/media/anna/PART1/DCIM", makedev(8, 17), fake_statfs(kMsdosMagic, 0, 0),
                           "fuseblk_stick.txt");
    const DeviceInfo info = machine.probe();
    CHECK(info.mount_point == "/media/anna/PART1");
    CHECK(info.fs_type == "vfat");
    CHECK(info.disk == "sdb");
    CHECK(info.bdi == "8:16");
    CHECK(info.removable);
    CHECK(info.limits.max_file_size == 4294967295ull);
    CHECK(info.limits.forbids_fat_chars);
    CHECK(info.writeback == WritebackMode::Windows);
    CHECK_FALSE(info.free_bytes);
    CHECK_FALSE(info.total_bytes);
}

TEST_CASE("device_key_of: the probe's device key, without asking the filesystem for its space", "[device_probe]")
{
    struct Counting : FixtureMachine {
        using FixtureMachine::FixtureMachine;
        int statfs_calls = 0;
        int raw_fstatfs(int fd, struct statfs *st) override
        {
            ++statfs_calls;
            return FixtureMachine::raw_fstatfs(fd, st);
        }
    };
    Counting machine("/media/anna/PART1/DCIM", makedev(8, 17), fake_statfs(kMsdosMagic, 1000, 500),
                     "fuseblk_stick.txt");
    const std::string key = machine.probe().device_key();
    CHECK(key == "bdi:8:16");
    machine.statfs_calls = 0;
    ScopedSyscalls seam(machine);
    auto only_key = device_key_of(machine.folder);
    REQUIRE(only_key.ok());
    CHECK(only_key.value() == key);
    CHECK(machine.statfs_calls == 0); // a share's server is not asked: no round trip
}

TEST_CASE("probe_device: a stick UDisks2 mounted reports flush, and whether the copier owns the mount",
          "[device_probe]")
{
    auto probe_as = [](uid_t euid) {
        FixtureMachine machine("/media/anna/STICK/DCIM", makedev(8, 17), fake_statfs(kMsdosMagic, 1000, 500),
                               "udisks_sticks.txt");
        machine.euid = euid;
        return machine.probe();
    };
    const DeviceInfo owner = probe_as(1000);
    CHECK(owner.mount_point == "/media/anna/STICK");
    CHECK(owner.mount_flags.flush);
    CHECK(owner.runs_as_owner);
    const DeviceInfo root = probe_as(0);
    CHECK(root.mount_flags.flush);
    CHECK_FALSE(root.runs_as_owner);
}

TEST_CASE("probe_device: two partitions of one stick share a device key", "[device_probe]")
{
    auto probe_partition = [](const std::string &folder, unsigned minor_no) {
        FixtureMachine machine(folder, makedev(8, minor_no), fake_statfs(kMsdosMagic, 1000, 500), "fuseblk_stick.txt");
        return machine.probe();
    };
    DeviceInfo one = probe_partition("/media/anna/PART1", 17);
    DeviceInfo two = probe_partition("/media/anna/PART2", 18);
    CHECK(one.mount_point == "/media/anna/PART1");
    CHECK(two.mount_point == "/media/anna/PART2");
    CHECK(one.block_device == "sdb1");
    CHECK(two.block_device == "sdb2");
    CHECK(one.device_key() == "bdi:8:16");
    CHECK(two.device_key() == one.device_key());
}

TEST_CASE("probe_device: without a readable mountinfo it still succeeds and goes by the magic", "[device_probe]")
{
    FixtureMachine machine("/media/anna/PART1", makedev(8, 17), fake_statfs(kExtMagic, 1000, 500), "no-such-file.txt");
    const DeviceInfo info = machine.probe();
    CHECK(info.mount_point.empty());
    CHECK(info.fs_type.empty());
    CHECK(info.writeback == WritebackMode::Windows);
    CHECK(info.bdi == "8:16"); // sysfs still answers for st_dev
}

TEST_CASE("fuseblk: udev's record names the filesystem", "[device_probe]")
{
    CHECK(parse_udev_fs_type(
              "S:disk/by-uuid/1234\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=exfat\nE:ID_FS_LABEL=STICK\n") == "exfat");
    CHECK(parse_udev_fs_type("E:ID_BUS=usb\n").empty());
}

TEST_CASE("fuseblk: libblkid reads the type from the device itself", "[device_probe]")
{
    sanecopy::test::TempDir t;
    const std::string img = t / "fat.img";
    std::ofstream(img).close();
    REQUIRE(::truncate(img.c_str(), 64 * 1024 * 1024) == 0);
    // A real FAT32 superblock, made by the real tool (dosfstools; packaging/dev.sh installs it).
    const std::string mkfs = "mkfs.vfat -F 32 '" + img + "' >/dev/null 2>&1";
    REQUIRE(std::system(mkfs.c_str()) == 0);
    CHECK(probe_fs_type_with_blkid(img) == "vfat");
    CHECK(fs_limits_for(probe_fs_type_with_blkid(img)).max_file_size == 4ull * 1024 * 1024 * 1024 - 1);
    CHECK(probe_fs_type_with_blkid(t / "missing").empty());
}

TEST_CASE("fusefat: the FUSE FAT driver gets FAT's limits", "[device_probe]")
{
    CHECK(fs_limits_for("fusefat").max_file_size == 4ull * 1024 * 1024 * 1024 - 1);
    CHECK(fs_limits_for("fusefat").forbids_fat_chars);
    CHECK(safe_name("a:b?.txt.", fs_limits_for("exfat")) == "a_b_.txt_");
    CHECK(safe_name("plain.txt", fs_limits_for("exfat")) == "plain.txt");
}

TEST_CASE("udev records: the label unescaped, the maker and model without padding", "[device_probe]")
{
    CHECK(parse_udev_label("E:ID_FS_LABEL=PHOTOS_2026\nE:ID_FS_LABEL_ENC=PHOTOS\\x202026\n") == "PHOTOS 2026");
    CHECK(parse_udev_label("E:ID_FS_LABEL=My_Stick\n") == "My_Stick");
    CHECK(parse_udev_label("E:ID_FS_LABEL_ENC=caf\\xc3\\xa9\\x2fb\\xzz\n") == "caf\xc3\xa9/b\\xzz");
    CHECK(parse_udev_label("E:ID_FS_TYPE=vfat\nE:ID_FS_LABEL_FATBOOT=NO NAME\n").empty());
    CHECK(parse_udev_model("E:ID_VENDOR_ENC=SanDisk\\x20\nE:ID_MODEL_ENC=Cruzer\\x20Blade\\x20\\x20\\x20\\x20\n") ==
          "SanDisk Cruzer Blade");
    CHECK(parse_udev_model(
              "E:ID_VENDOR=Kingston\nE:ID_MODEL=Kingston_DataTraveler\nE:ID_MODEL_ENC=Kingston\\x20DataTraveler\n") ==
          "Kingston DataTraveler");
    CHECK(parse_udev_model("E:ID_MODEL=Flash_Disk\n") == "Flash_Disk");
    CHECK(parse_udev_model("E:ID_FS_TYPE=vfat\n").empty());
}

TEST_CASE("removable_mounts: sticks and card readers, named as the desktop names them", "[device_probe]")
{
    const auto mounts = fixture_mounts("desktop.txt");
    const auto found = removable_mounts(mounts, kSysfs, kFixtures + "/udev");
    // sdb1 is a stick (removable=1), sdc1 a USB card reader that says removable=0; the NVMe disk is neither and
    // sdd1, sde1 have no sysfs entry in the fixture.
    REQUIRE(found.size() == 2);
    CHECK(found[0].block_device == "sdb1");
    CHECK(found[0].mount_point == "/media/anna/My Stick");
    CHECK(found[0].fs_type == "vfat");
    CHECK(found[0].label == "My_Stick"); // this fixture's udev record has only the '_' form
    CHECK(found[0].name == "My_Stick");
    CHECK(found[1].block_device == "sdc1");
    CHECK(found[1].label.empty());
    CHECK(found[1].model == "Generic USB SD Reader"); // from sysfs: this record holds no model
    CHECK(found[1].name == "Generic USB SD Reader");

    // Without udev: the label is unknown, so the mount point's last component names the stick.
    const auto bare = removable_mounts(mounts, kSysfs, "");
    REQUIRE(bare.size() == 2);
    CHECK(bare[0].name == "My Stick");
}

TEST_CASE("removable_mounts: a device mounted twice is one entry, and two of a name are told apart", "[device_probe]")
{
    const auto mounts =
        parse_mountinfo("29 22 8:17 /DCIM /home/anna/Photos rw - vfat /dev/sdb1 rw\n"
                        "30 22 8:17 / /media/anna/Generic\\040USB\\040SD\\040Reader rw - vfat /dev/sdb1 rw\n"
                        "31 22 8:33 / /mnt/usb rw - ext4 /dev/sdc1 rw\n"
                        "33 22 7:3 / /mnt/loop rw - ext4 /dev/loop3 rw\n");
    const auto found = removable_mounts(mounts, kSysfs, "");
    REQUIRE(found.size() == 2);
    CHECK(found[0].mount_point == "/media/anna/Generic USB SD Reader"); // not the bind mount of its DCIM folder
    CHECK(found[0].name == "Generic USB SD Reader (sdb1)");
    CHECK(found[1].name == "Generic USB SD Reader (sdc1)");
    for (const auto &m : found)
        CHECK(m.name.find('/') == std::string::npos);
    // One of the two pulled out: the other keeps its name, so a URL to the one pulled never reaches it.
    const auto one = removable_mounts(parse_mountinfo("31 22 8:33 / /mnt/usb rw - ext4 /dev/sdc1 rw\n"), kSysfs, "");
    REQUIRE(one.size() == 1);
    CHECK(one[0].name == "Generic USB SD Reader");
}
