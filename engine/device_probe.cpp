// SPDX-License-Identifier: GPL-2.0-or-later
#include "device_probe.h"

#include "fd.h"
#include "sys.h"

#include <blkid/blkid.h>

#include <algorithm>
#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace sanecopy {

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
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "vfat", "msdos",
    "exfat", "ntfs3", "hfs", "hfsplus", "udf", "jfs", "reiserfs", "nilfs2",
};

constexpr unsigned long kLocalBlockMagics[] = {
    kExtMagic, kXfsMagic, kBtrfsMagic, kF2fsMagic, kMsdosMagic, kExfatMagic, kNtfsMagic,
    kNtfs3Magic, kHfsMagic, kHfsplusMagic, kUdfMagic, kJfsMagic, kReiserfsMagic, kNilfsMagic,
};

template <typename Range, typename T>
bool contains(const Range &range, const T &value)
{
    return std::find(std::begin(range), std::end(range), value) != std::end(range);
}

std::vector<std::string_view> split(std::string_view text, char sep)
{
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (;;) {
        size_t end = text.find(sep, start);
        if (end == std::string_view::npos) {
            parts.push_back(text.substr(start));
            return parts;
        }
        parts.push_back(text.substr(start, end - start));
        start = end + 1;
    }
}

std::string_view trim(std::string_view text)
{
    constexpr std::string_view blanks = " \t\n\r";
    size_t begin = text.find_first_not_of(blanks);
    if (begin == std::string_view::npos)
        return {};
    return text.substr(begin, text.find_last_not_of(blanks) - begin + 1);
}

template <typename Int>
bool parse_number(std::string_view text, Int &out)
{
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool is_octal(char c) { return c >= '0' && c <= '7'; }

bool is_octal_escape(std::string_view text, size_t at)
{
    return at + 3 < text.size() && text[at] == '\\' && text[at + 1] >= '0' && text[at + 1] <= '3' &&
           is_octal(text[at + 2]) && is_octal(text[at + 3]);
}

// The kernel writes paths and sources through seq_escape(), which turns every byte that would break the
// space-separated format (space, tab, newline, the backslash itself) into a backslash and three octal digits.
std::string unescape(std::string_view field)
{
    std::string out;
    out.reserve(field.size());
    for (size_t i = 0; i < field.size(); ++i) {
        if (is_octal_escape(field, i)) {
            int value = (field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0');
            out.push_back(static_cast<char>(value));
            i += 3;
        } else {
            out.push_back(field[i]);
        }
    }
    return out;
}

std::optional<MountEntry> parse_mountinfo_line(std::string_view line)
{
    // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": six fixed fields, any
    // number of optional "tag[:value]" fields, a lone "-", then type, source and super options. Fields are
    // separated by exactly one space; an empty source shows up as two spaces in a row, so runs aren't merged.
    std::vector<std::string_view> fields = split(line, ' ');
    if (fields.size() < 10)
        return std::nullopt;
    auto separator = std::find(fields.begin() + 6, fields.end(), std::string_view("-"));
    if (separator == fields.end() || fields.end() - separator != 4)
        return std::nullopt;

    MountEntry entry;
    std::string_view dev = fields[2];
    size_t colon = dev.find(':');
    if (colon == std::string_view::npos || !parse_number(fields[0], entry.mount_id) ||
        !parse_number(fields[1], entry.parent_id) || !parse_number(dev.substr(0, colon), entry.dev_major) ||
        !parse_number(dev.substr(colon + 1), entry.dev_minor))
        return std::nullopt;

    entry.root = unescape(fields[3]);
    entry.mount_point = unescape(fields[4]);
    entry.options = std::string(fields[5]);
    std::string type = unescape(separator[1]);
    entry.source = unescape(separator[2]);
    entry.super_options = unescape(separator[3]);
    if (entry.mount_point.empty() || entry.mount_point.front() != '/' || type.empty())
        return std::nullopt;

    // FUSE filesystems show as "fuse.<subtype>" or "fuseblk.<subtype>" when the daemon set a subtype (the
    // kernel appends ".<s_subtype>" to the type name); exfat-fuse and ntfs-3g set none and show plain "fuseblk".
    size_t dot = type.find('.');
    if (dot != std::string::npos) {
        entry.fs_subtype = type.substr(dot + 1);
        type.resize(dot);
    }
    entry.fs_type = std::move(type);
    return entry;
}

bool covers(std::string_view mount_point, std::string_view path)
{
    if (mount_point.empty() || path.substr(0, mount_point.size()) != mount_point)
        return false;
    return path.size() == mount_point.size() || mount_point.back() == '/' || path[mount_point.size()] == '/';
}

// The longest mount point covering |path| among the entries |accept| takes. Two mounts on one mount point are
// stacked: per proc(5) the one on top is the one that is not the parent of the other, which is also the later
// line; the parent test keeps that right should the kernel ever list them out of order.
template <typename Accept>
const MountEntry *best_cover(const std::vector<MountEntry> &mounts, std::string_view path, Accept accept)
{
    const MountEntry *best = nullptr;
    for (const MountEntry &m : mounts) {
        if (!accept(m) || !covers(m.mount_point, path))
            continue;
        if (!best || m.mount_point.size() > best->mount_point.size() ||
            (m.mount_point.size() == best->mount_point.size() && best->parent_id != m.mount_id))
            best = &m;
    }
    return best;
}

std::optional<std::string> read_link(const std::string &path)
{
    std::string buf(256, '\0');
    for (;;) {
        ssize_t n = sys().readlinkat(AT_FDCWD, path.c_str(), buf.data(), buf.size());
        if (n < 0)
            return std::nullopt;
        if (static_cast<size_t>(n) < buf.size()) {
            buf.resize(static_cast<size_t>(n));
            return buf;
        }
        if (buf.size() >= 65536)
            return std::nullopt;
        buf.resize(buf.size() * 2);
    }
}

bool path_exists(const std::string &path)
{
    struct stat st {};
    return sys().fstatat(AT_FDCWD, path.c_str(), &st, 0) == 0;
}

std::string_view base_name(std::string_view path)
{
    size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Joins a link target to the directory holding the link (both relative to the sysfs root) and folds "..",
// refusing to climb out of the root. sysfs links are relative and lead only through real directories, so
// folding by text is exact; unlike realpath(3) it stays on the syscall seam and keeps the result relative to
// the root, where the bus names in it ("/usb2/") mean something.
std::optional<std::string> fold_dots(std::string_view relative_base, std::string_view relative)
{
    std::vector<std::string_view> parts;
    for (std::string_view piece : {relative_base, relative}) {
        for (std::string_view part : split(piece, '/')) {
            if (part.empty() || part == ".")
                continue;
            if (part == "..") {
                if (parts.empty())
                    return std::nullopt;
                parts.pop_back();
                continue;
            }
            parts.push_back(part);
        }
    }
    std::string out;
    for (std::string_view part : parts) {
        out += '/';
        out += part;
    }
    return out;
}

// The path the kernel resolved for an open descriptor: no symlinks, relative to this process's root, which
// is also what mountinfo's mount points are relative to. A folder outside that root reads "(unreachable)/...".
std::string resolved_path(int fd, const std::string &fallback)
{
    if (auto link = read_link("/proc/self/fd/" + std::to_string(fd)); link && !link->empty() && link->front() == '/')
        return *link;
    return fallback;
}

void probe_block_source(const MountEntry &mount, DeviceInfo &info)
{
    // The bytes written to a fuseblk file wait in the page cache of the block device the FUSE daemon writes
    // to, which the mount source names. (FUSE's own "MAJ:MIN-fuseblk" BDI stays clean: exfat-fuse and
    // ntfs-3g write through.) The kernel mounts fuseblk like any block filesystem, so st_dev names the same
    // device today; the source is the name the daemon itself opened.
    struct stat st {};
    if (!mount.source.empty() && mount.source.front() == '/' &&
        sys().fstatat(AT_FDCWD, mount.source.c_str(), &st, 0) == 0 && S_ISBLK(st.st_mode))
        probe_block_device(major(st.st_rdev), minor(st.st_rdev), "/sys", info);
}

} // namespace

std::optional<std::string> read_kernel_text(const std::string &path)
{
    int raw = sys().openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
    if (raw < 0)
        return std::nullopt;
    UniqueFd fd(raw);
    // st_size of these files is 0 or a page, never the truth: read until EOF.
    constexpr size_t kChunk = 64 * 1024;
    constexpr size_t kLimit = 16 * 1024 * 1024;
    std::string text;
    for (;;) {
        size_t have = text.size();
        text.resize(have + kChunk);
        ssize_t n = sys().pread(fd.get(), text.data() + have, kChunk, static_cast<off_t>(have));
        if (n < 0)
            return std::nullopt;
        text.resize(have + static_cast<size_t>(n));
        if (n == 0)
            return text;
        if (text.size() > kLimit)
            return std::nullopt;
    }
}

std::vector<MountEntry> parse_mountinfo(std::string_view text)
{
    std::vector<MountEntry> mounts;
    for (std::string_view line : split(text, '\n')) {
        if (auto entry = parse_mountinfo_line(line))
            mounts.push_back(std::move(*entry));
    }
    return mounts;
}

const MountEntry *find_mount(const std::vector<MountEntry> &mounts, std::string_view path)
{
    return best_cover(mounts, path, [](const MountEntry &) { return true; });
}

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
            if (static_cast<unsigned char>(c) < 0x20 || std::string_view(":?*\"<>|\\").find(c) != std::string_view::npos)
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
                return "contains a control character";
            if (std::string_view(":?*\"<>|\\").find(c) != std::string_view::npos)
                return std::string("contains '") + c + "' which FAT/exFAT cannot store";
        }
    }
    // Windows drops trailing dots and spaces from names, and Linux's vfat and exfat drop trailing dots too, so
    // "a." and "a" collide on the stick, and "a " can't be opened once the stick is in a Windows machine.
    if (limits.forbids_trailing_dot_space && !name.empty() && name != "." && name != ".." &&
        (name.back() == '.' || name.back() == ' '))
        return "ends with a dot or space, which FAT/exFAT drop";
    return {};
}

DataSync choose_data_sync(unsigned long fs_magic, std::string_view fs_type)
{
    if (fs_type == "vfat" || fs_type == "msdos" || (fs_type.empty() && fs_magic == kMsdosMagic))
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

std::string DeviceInfo::device_key() const
{
    if (!bdi.empty())
        return "bdi:" + bdi;
    return "dev:" + std::to_string(major(st_dev)) + ":" + std::to_string(minor(st_dev));
}

bool probe_block_device(unsigned major_no, unsigned minor_no, std::string_view sysfs_root, DeviceInfo &info)
{
    // /sys/dev/block/MAJ:MIN links to the device's directory, e.g. ../../devices/pci0000:00/.../usb2/.../block/
    // sdb/sdb1. Anonymous devices (0:NN of tmpfs, btrfs subvolumes, FUSE) have no entry.
    const std::string root(sysfs_root);
    const std::string dev_name = std::to_string(major_no) + ":" + std::to_string(minor_no);
    auto target = read_link(root + "/dev/block/" + dev_name);
    if (!target || target->empty() || target->front() == '/')
        return false;
    auto relative = fold_dots("dev/block", *target);
    if (!relative)
        return false;
    const std::string device_dir = root + *relative;
    if (!path_exists(device_dir + "/dev"))
        return false;

    // A partition's directory sits inside its disk's and has a "partition" file. Partitions have no queue or
    // BDI of their own: the whole disk's are the ones that count.
    std::string_view parent = std::string_view(*relative).substr(0, relative->rfind('/'));
    const bool is_partition = path_exists(device_dir + "/partition");
    info.block_device = std::string(base_name(*relative));
    info.disk = is_partition ? std::string(base_name(parent)) : info.block_device;

    const std::string disk_dir = root + "/block/" + info.disk;
    info.bdi.clear();
    if (auto dev = read_kernel_text(disk_dir + "/dev"))
        info.bdi = std::string(trim(*dev));

    // The flag is the SCSI RMB bit, about the medium rather than the bus: USB disks, many card readers and
    // some sticks report 0, so a USB or MMC bus in the device path counts too.
    auto removable = read_kernel_text(disk_dir + "/removable");
    info.removable = (removable && trim(*removable) == "1") || relative->find("/usb") != std::string::npos ||
                     relative->find("/mmc") != std::string::npos;
    auto rotational = read_kernel_text(disk_dir + "/queue/rotational");
    info.rotational = rotational && trim(*rotational) == "1";
    return true;
}

bool device_removed(int err, const DeviceInfo &info, std::string_view sysfs_root)
{
    if (err == ENODEV || err == ENXIO || err == ESHUTDOWN)
        return true;
    if ((err == EIO || err == ENOTCONN) && !info.disk.empty())
        return !path_exists(std::string(sysfs_root) + "/block/" + info.disk + "/dev");
    return false;
}

Status explain_device_loss(Status s, const DeviceInfo &info, std::string_view sysfs_root, double grace_seconds)
{
    const int err = s.err();
    if (s.ok() || !s.on_destination() || (s.device_removed() && !s.detail().empty()) ||
        !(err == EIO || err == ENOTCONN || err == ENODEV || err == ENXIO || err == ESHUTDOWN))
        return s;
    // Marked already (the job saw the device go on an earlier file): only the words are missing.
    bool gone = s.device_removed() || device_removed(err, info, sysfs_root);
    const bool may_be_leaving = (err == EIO || err == ENOTCONN) && info.removable && !info.disk.empty();
    for (double waited = 0; !gone && may_be_leaving && waited < grace_seconds; waited += 0.05) {
        ::usleep(50'000);
        gone = device_removed(err, info, sysfs_root);
    }
    if (!gone)
        return s;
    const std::string seen = s.code().message() + (s.op().empty() ? "" : " in " + s.op());
    return std::move(s)
        .with_detail("the device was removed before the copy finished (" + seen + ")")
        .as_device_removed();
}

std::string parse_udev_fs_type(std::string_view udev_data)
{
    for (std::string_view line : split(udev_data, '\n')) {
        constexpr std::string_view key = "E:ID_FS_TYPE=";
        if (line.substr(0, key.size()) == key)
            return std::string(trim(line.substr(key.size())));
    }
    return {};
}

namespace {

// The value of "E:KEY=" in a udev record, as written; nullopt when the key is not there.
std::optional<std::string_view> udev_value(std::string_view udev_data, std::string_view key)
{
    for (std::string_view line : split(udev_data, '\n')) {
        if (line.size() > key.size() + 3 && line.substr(0, 2) == "E:" && line.substr(2, key.size()) == key &&
            line[2 + key.size()] == '=')
            return line.substr(3 + key.size());
    }
    return std::nullopt;
}

// udev's _ENC form: every byte that is not plain printable ASCII (a space too) as \xHH.
std::string udev_unescape(std::string_view enc)
{
    std::string out;
    out.reserve(enc.size());
    for (std::size_t i = 0; i < enc.size(); ++i) {
        if (enc.substr(i, 2) == "\\x" && i + 3 < enc.size()) {
            unsigned byte = 0;
            const char *hex = enc.data() + i + 2;
            const auto parsed = std::from_chars(hex, hex + 2, byte, 16);
            if (parsed.ec == std::errc() && parsed.ptr == hex + 2) {
                out.push_back(char(byte));
                i += 3;
                continue;
            }
        }
        out.push_back(enc[i]);
    }
    return out;
}

// Vendor and model strings are padded with spaces to their SCSI field widths.
std::string collapse_spaces(std::string_view text)
{
    std::string out;
    for (char c : text) {
        if (c == ' ' && (out.empty() || out.back() == ' '))
            continue;
        out.push_back(c);
    }
    while (!out.empty() && out.back() == ' ')
        out.pop_back();
    return out;
}

} // namespace

std::string parse_udev_label(std::string_view udev_data)
{
    if (auto enc = udev_value(udev_data, "ID_FS_LABEL_ENC"))
        return udev_unescape(trim(*enc));
    if (auto plain = udev_value(udev_data, "ID_FS_LABEL"))
        return std::string(trim(*plain));
    return {};
}

std::string parse_udev_model(std::string_view udev_data)
{
    auto field = [&](std::string_view enc_key, std::string_view key) {
        if (auto enc = udev_value(udev_data, enc_key))
            return collapse_spaces(udev_unescape(*enc));
        if (auto plain = udev_value(udev_data, key))
            return collapse_spaces(*plain);
        return std::string();
    };
    const std::string vendor = field("ID_VENDOR_ENC", "ID_VENDOR");
    const std::string model = field("ID_MODEL_ENC", "ID_MODEL");
    if (vendor.empty() || model.rfind(vendor, 0) == 0) // "Kingston DataTraveler" already names its maker
        return model;
    return model.empty() ? vendor : vendor + " " + model;
}

std::vector<RemovableMount> removable_mounts(const std::vector<MountEntry> &mounts, std::string_view sysfs_root,
                                             std::string_view udev_root)
{
    std::vector<RemovableMount> out;
    // Whole filesystems first: a bind mount of a folder on the stick is not where the stick is.
    std::vector<const MountEntry *> order;
    for (const MountEntry &m : mounts)
        if (m.root == "/")
            order.push_back(&m);
    for (const MountEntry &m : mounts)
        if (m.root != "/")
            order.push_back(&m);
    for (const MountEntry *mp : order) {
        const MountEntry &m = *mp;
        DeviceInfo info;
        if (!probe_block_device(m.dev_major, m.dev_minor, sysfs_root, info) || !info.removable)
            continue;
        if (std::any_of(out.begin(), out.end(), [&](const RemovableMount &o) { return o.block_device == info.block_device; }))
            continue; // mounted twice: listed once
        RemovableMount r;
        r.mount_point = m.mount_point;
        r.block_device = info.block_device;
        r.fs_type = m.fs_subtype.empty() ? m.fs_type : m.fs_subtype;
        if (!udev_root.empty()) {
            const std::string record = std::string(udev_root) + "/b" + std::to_string(m.dev_major) + ":" +
                                       std::to_string(m.dev_minor);
            if (auto text = read_kernel_text(record)) {
                r.label = parse_udev_label(*text);
                r.model = parse_udev_model(*text);
            }
        }
        if (r.model.empty()) {
            // SCSI disks (USB sticks among them) have their inquiry strings in sysfs, udev or not.
            const std::string dev_dir = std::string(sysfs_root) + "/block/" + info.disk + "/device/";
            auto vendor = read_kernel_text(dev_dir + "vendor");
            auto model = read_kernel_text(dev_dir + "model");
            std::string udev_like;
            if (vendor)
                udev_like += "E:ID_VENDOR=" + std::string(trim(*vendor)) + "\n";
            if (model)
                udev_like += "E:ID_MODEL=" + std::string(trim(*model)) + "\n";
            r.model = parse_udev_model(udev_like);
        }
        std::string name = !r.label.empty() ? r.label : !r.model.empty() ? r.model : std::string(base_name(r.mount_point));
        // A folder name in a URL: no '/', no NUL, not "." or "..".
        std::replace(name.begin(), name.end(), '/', '_');
        std::replace(name.begin(), name.end(), '\0', '_');
        if (name.empty() || name == "." || name == "..")
            name = r.block_device;
        r.name = std::move(name);
        out.push_back(std::move(r));
    }
    // Two of a name (two sticks labelled STICK, a multipack of one model) are told apart by their block devices,
    // both of them: a name never moves to another device when one of the two is pulled out.
    std::vector<std::string> base;
    for (const RemovableMount &r : out)
        base.push_back(r.name);
    for (RemovableMount &r : out)
        if (std::count(base.begin(), base.end(), r.name) > 1)
            r.name += " (" + r.block_device + ")";
    std::stable_sort(out.begin(), out.end(), [&](const RemovableMount &a, const RemovableMount &b) {
        return std::find_if(mounts.begin(), mounts.end(), [&](const MountEntry &m) { return m.mount_point == a.mount_point; }) <
               std::find_if(mounts.begin(), mounts.end(), [&](const MountEntry &m) { return m.mount_point == b.mount_point; });
    });
    return out;
}

std::vector<RemovableMount> current_removable_mounts()
{
    auto text = read_kernel_text("/proc/self/mountinfo");
    if (!text)
        return {};
    return removable_mounts(parse_mountinfo(*text), "/sys", "/run/udev/data");
}

std::string probe_fs_type_with_blkid(const std::string &device)
{
    // libblkid reads the superblock itself, outside the syscall seam: this is a read-only probe of a few
    // sectors, not a copy step, and it needs read access to the device (root, or the disk group).
    blkid_probe probe = blkid_new_probe_from_filename(device.c_str());
    if (!probe)
        return {};
    std::string type;
    blkid_probe_enable_superblocks(probe, 1);
    blkid_probe_set_superblocks_flags(probe, BLKID_SUBLKS_TYPE);
    const char *value = nullptr;
    if (blkid_do_safeprobe(probe) == 0 && blkid_probe_lookup_value(probe, "TYPE", &value, nullptr) == 0 && value)
        type = value;
    blkid_free_probe(probe);
    return type;
}

std::string detect_fs_type(const std::string &device, unsigned major_no, unsigned minor_no)
{
    // udev's database is readable by everyone and already knows; libblkid works without udev (containers,
    // early boot) where the device is readable.
    const std::string udev = "/run/udev/data/b" + std::to_string(major_no) + ":" + std::to_string(minor_no);
    if (auto text = read_kernel_text(udev)) {
        if (std::string type = parse_udev_fs_type(*text); !type.empty())
            return type;
    }
    return probe_fs_type_with_blkid(device);
}

MountFlags parse_mount_flags(const MountEntry &mount)
{
    MountFlags flags;
    // sync and dirsync are the superblock's flags, shown among the filesystem's options; a bind mount can't
    // change them, but both lists are read so a kernel that moves one does not hide it.
    for (const std::string *list : {&mount.options, &mount.super_options}) {
        for (std::string_view option : split(*list, ',')) {
            uint32_t uid = 0;
            if (option == "flush")
                flags.flush = true;
            else if (option == "sync")
                flags.sync = true;
            else if (option == "dirsync")
                flags.dirsync = true;
            else if ((option.substr(0, 4) == "uid=" && parse_number(option.substr(4), uid)) ||
                     (option.substr(0, 8) == "user_id=" && parse_number(option.substr(8), uid)))
                flags.owner_uid = uid;
        }
    }
    if (!flags.owner_uid && (mount.fs_type == "vfat" || mount.fs_type == "msdos"))
        flags.owner_uid = 0;
    return flags;
}

namespace {

// The mount that holds |path| on the device |st_dev|, filling mount point and type into |info|.
void probe_mount(const std::string &path, dev_t st_dev, DeviceInfo &info)
{
    std::vector<MountEntry> mounts;
    if (auto text = read_kernel_text("/proc/self/mountinfo"))
        mounts = parse_mountinfo(*text);
    // Matching by device first: a path prefix alone is fooled by a mount hidden under a later one. Several
    // mounts share a device (bind mounts, subvolumes), hence the prefix among those. btrfs subvolumes report
    // an st_dev of their own that mountinfo doesn't list, which the plain prefix match catches.
    const unsigned dev_major = major(st_dev);
    const unsigned dev_minor = minor(st_dev);
    const MountEntry *mount = best_cover(mounts, path, [&](const MountEntry &m) {
        return m.dev_major == dev_major && m.dev_minor == dev_minor;
    });
    if (!mount)
        mount = find_mount(mounts, path);
    if (mount) {
        info.mount_point = mount->mount_point;
        info.fs_type = mount->fs_type;
        info.fs_subtype = mount->fs_subtype;
        info.mount_flags = parse_mount_flags(*mount);
        info.runs_as_owner = !info.mount_flags.owner_uid || *info.mount_flags.owner_uid == sys().geteuid();
    }
    if (mount && mount->fs_type == "fuseblk") {
        probe_block_source(*mount, info);
        // mountinfo says only "fuseblk" for exfat-fuse and ntfs-3g: ask the device what it holds.
        if (info.fs_subtype.empty() && !mount->source.empty())
            info.fs_subtype = detect_fs_type(mount->source, dev_major, dev_minor);
    } else {
        probe_block_device(dev_major, dev_minor, "/sys", info);
    }
}

} // namespace

Result<DeviceInfo> probe_device(const std::string &folder)
{
    int raw = sys().openat(AT_FDCWD, folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (raw < 0)
        return Status::destination(errno, "open", folder);
    UniqueFd fd(raw);
    struct stat st {};
    if (sys().fstat(fd.get(), &st) < 0)
        return Status::destination(errno, "fstat", folder);
    struct statfs sfs {};
    if (sys().fstatfs(fd.get(), &sfs) < 0)
        return Status::destination(errno, "fstatfs", folder);

    DeviceInfo info;
    info.st_dev = st.st_dev;
    info.fs_magic = static_cast<unsigned long>(sfs.f_type);
    // Block counts are in f_frsize units (statvfs(3) says so and glibc converts the same way); FUSE daemons
    // such as sshfs report an f_bsize that differs from it. fusefat reports 0 blocks: size unknown, not full.
    const uint64_t unit = sfs.f_frsize ? static_cast<uint64_t>(sfs.f_frsize) : static_cast<uint64_t>(sfs.f_bsize);
    if (sfs.f_blocks > 0) {
        info.free_bytes = static_cast<uint64_t>(sfs.f_bavail) * unit;
        info.total_bytes = static_cast<uint64_t>(sfs.f_blocks) * unit;
        info.allocation_unit = std::max<uint64_t>(unit, 512);
    }
    probe_mount(resolved_path(fd.get(), folder), st.st_dev, info);
    // A fuseblk without a subtype (exfat-fuse, ntfs-3g) gets no limits here: the type has to come from the
    // device itself.
    info.limits = fs_limits_for(info.fs_subtype.empty() ? std::string_view(info.fs_type)
                                                        : std::string_view(info.fs_subtype));
    info.writeback = choose_writeback(info.fs_magic, info.fs_type);
    info.data_sync = choose_data_sync(info.fs_magic, info.fs_type);
    info.group_sync = choose_group_sync(info.fs_magic);
    return info;
}

} // namespace sanecopy
