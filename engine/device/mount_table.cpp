// SPDX-License-Identifier: GPL-2.0-or-later
// The mount table: /proc/self/mountinfo parsed, the mount that holds a path, and its options.
#include "device_probe.h"

#include "i18n.h"
#include "units.h"
#include "probe_detail.h"

#include "fd.h"
#include "sys.h"

#include <algorithm>
#include <memory>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <tuple>
#include <utility>

namespace sanecopy {

namespace probe_detail {

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

std::string resolved_path(int fd, const std::string &fallback)
{
    if (auto link = read_link("/proc/self/fd/" + std::to_string(fd)); link && !link->empty() && link->front() == '/')
        return *link;
    return fallback;
}

} // namespace probe_detail

using namespace probe_detail;

namespace {

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

} // namespace

std::optional<std::string> read_kernel_text(const std::string &path)
{
    int raw = sys().openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY, 0);
    if (raw < 0)
        return std::nullopt;
    UniqueFd fd(raw);
    // st_size of these files is 0 or a page, never the truth: read until EOF, in pieces big enough for a long
    // mount table in one call, into a buffer nothing fills first. A copy reads a dozen of these files, most of
    // them a few bytes, and a string resized to take each read zeroed 64 KiB twice a file: 146 of a one-file
    // copy's 368 page faults.
    constexpr size_t kChunk = 64 * kKiB;
    constexpr size_t kLimit = 16 * kMiB;
    const std::unique_ptr<char[]> buf(new char[kChunk]);
    std::string text;
    for (;;) {
        ssize_t n = sys().pread(fd.get(), buf.get(), kChunk, static_cast<off_t>(text.size()));
        if (n < 0)
            return std::nullopt;
        if (n == 0)
            return text;
        text.append(buf.get(), static_cast<size_t>(n));
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

// The mount that holds |path| on the device |st_dev|, filling mount point and type into |info|.
void probe_detail::probe_mount(const std::string &path, dev_t st_dev, DeviceInfo &info)
{
    std::vector<MountEntry> mounts;
    if (auto text = read_kernel_text("/proc/self/mountinfo"))
        mounts = parse_mountinfo(*text);
    // Matching by device first: a path prefix alone is fooled by a mount hidden under a later one. Several
    // mounts share a device (bind mounts, subvolumes), hence the prefix among those. btrfs subvolumes report
    // an st_dev of their own that mountinfo doesn't list, which the plain prefix match catches.
    const unsigned dev_major = major(st_dev);
    const unsigned dev_minor = minor(st_dev);
    const MountEntry *mount = best_cover(
        mounts, path, [&](const MountEntry &m) { return m.dev_major == dev_major && m.dev_minor == dev_minor; });
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

namespace {
// The last component of a remote path: "/export/photos/" -> "photos"; "/" and "" -> "".
std::string last_component(std::string_view path)
{
    while (!path.empty() && path.back() == '/')
        path.remove_suffix(1);
    const size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "server:/path" (NFS, sshfs; "[fe80::1]:/path" for an IPv6 address), a user in front of sshfs's server dropped.
std::pair<std::string, std::string> host_and_path(std::string_view source)
{
    // The user first: "anna@[::1]:/srv" has its address's colons after it.
    const size_t at = source.find('@');
    if (at != std::string_view::npos && at < source.find(':'))
        source.remove_prefix(at + 1);
    size_t colon;
    if (!source.empty() && source.front() == '[') {
        const size_t close = source.find(']');
        colon = close == std::string_view::npos ? close : source.find(':', close);
    } else {
        colon = source.find(':');
    }
    if (colon == std::string_view::npos)
        return {};
    return {std::string(source.substr(0, colon)), last_component(source.substr(colon + 1))};
}

// |m| as a share, when it is one (SMB, NFS, sshfs) and names its server.
std::optional<ShareMount> share_of(const MountEntry &m)
{
    ShareMount share;
    if (m.fs_type == "cifs" || m.fs_type == "smb3") {
        // "//server/share/folder", or with backslashes as Windows writes it
        std::string source = m.source;
        std::replace(source.begin(), source.end(), '\\', '/');
        std::string_view rest(source);
        while (!rest.empty() && rest.front() == '/')
            rest.remove_prefix(1);
        const size_t slash = rest.find('/');
        share.server = std::string(rest.substr(0, slash));
        share.share = slash == std::string_view::npos ? std::string() : last_component(rest.substr(slash));
    } else if (m.fs_type == "nfs" || m.fs_type == "nfs4" || (m.fs_type == "fuse" && m.fs_subtype == "sshfs")) {
        std::tie(share.server, share.share) = host_and_path(m.source);
    } else {
        return std::nullopt;
    }
    if (share.server.empty())
        return std::nullopt;
    share.mount_point = m.mount_point;
    share.fs_type = m.fs_subtype.empty() ? m.fs_type : m.fs_subtype;
    share.name = share.share.empty()
                     ? share.server
                     : i18nc("a share's name: %1 the share, %2 its server", "%1 on %2", share.share, share.server);
    return share;
}
} // namespace

std::vector<ShareMount> network_share_mounts(const std::vector<MountEntry> &mounts)
{
    std::vector<ShareMount> out;
    std::vector<std::string> seen;
    for (const MountEntry &m : mounts) {
        std::optional<ShareMount> share = share_of(m);
        if (!share || std::find(seen.begin(), seen.end(), m.source) != seen.end())
            continue;
        seen.push_back(m.source);
        out.push_back(std::move(*share));
    }
    return out;
}

} // namespace sanecopy
