// SPDX-License-Identifier: GPL-2.0-or-later
// What sysfs and udev say about the block device behind a mount: its disk, BDI, bus, rotation, label and model;
// whether it is still there; which mounted filesystems are on removable disks.
#include "device_probe.h"

#include "i18n.h"
#include "probe_detail.h"

#include "sys.h"

#include <blkid/blkid.h>

#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace sanecopy {

using namespace probe_detail;

void probe_detail::probe_block_source(const MountEntry &mount, DeviceInfo &info)
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

namespace {

// The bus in a disk's sysfs path (relative to the sysfs root), or what its name says it is.
std::string transport_of(std::string_view device_path, std::string_view disk)
{
    static constexpr std::pair<std::string_view, std::string_view> kBuses[] = {
        {"/usb", "usb"}, {"/mmc", "mmc"}, {"/nvme", "nvme"}, {"/ata", "ata"}, {"/virtio", "virtio"},
    };
    for (const auto &[marker, bus] : kBuses)
        if (device_path.find(marker) != std::string_view::npos)
            return std::string(bus);
    if (disk.substr(0, 4) == "loop")
        return "loop";
    if (device_path.find("/host") != std::string_view::npos || disk.substr(0, 2) == "sd")
        return "scsi";
    return {};
}

// The kernel's cap on the device's share of dirty memory, from its BDI folder in sysfs. Kernels before 6.2
// have no strict_limit file: no strict limit then.
void read_bdi_limits(const std::string &bdi_dir, DeviceInfo &info)
{
    if (auto ratio = read_kernel_text(bdi_dir + "/max_ratio")) {
        const std::string_view text = trim(*ratio);
        unsigned value = 0;
        if (std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc())
            info.bdi_max_ratio = value;
    }
    auto strict = read_kernel_text(bdi_dir + "/strict_limit");
    info.bdi_strict_limit = strict && trim(*strict) == "1";
}

} // namespace

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
    info.transport = transport_of(*relative, info.disk);
    auto rotational = read_kernel_text(disk_dir + "/queue/rotational");
    info.rotational = rotational && trim(*rotational) == "1";
    info.max_request_bytes = 0;
    if (auto kib = read_kernel_text(disk_dir + "/queue/max_sectors_kb")) {
        const std::string_view text = trim(*kib);
        uint64_t value = 0;
        if (std::from_chars(text.data(), text.data() + text.size(), value).ec == std::errc() && value <= UINT32_MAX)
            info.max_request_bytes = value * 1024;
    }
    read_bdi_limits(root + "/class/bdi/" + info.bdi, info);
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

namespace {

// The errors a share gives when its server stops answering.
bool server_gone(int err)
{
    return err == EIO || err == ETIMEDOUT || err == ENOTCONN || err == EHOSTDOWN || err == EHOSTUNREACH ||
           err == ENETUNREACH;
}

// An error on the destination of the kinds a pulled device gives, not already explained.
bool may_mean_removal(const Status &s)
{
    const int err = s.err();
    const bool removal_kind = err == EIO || err == ENOTCONN || err == ENODEV || err == ENXIO || err == ESHUTDOWN;
    return !s.ok() && s.on_destination() && removal_kind && !(s.device_removed() && !s.detail().empty());
}

// The system's reason and where it came: "Input/output error in write".
std::string what_was_seen(const Status &s)
{
    return s.op().empty()
               ? s.code().message()
               : i18nc("%1 is the system's reason, %2 a system call", "%1 in %2", s.code().message(), s.op());
}

// A share whose server stopped answering: a soft mount's timeout (EIO, ETIMEDOUT with "softerr"), a lost
// connection. Nothing was unplugged, and the server still has what it confirmed.
Status explain_share_loss(Status s, const DeviceInfo &info)
{
    if (s.ok() || !s.on_destination() || !s.detail().empty() || !server_gone(s.err()))
        return s;
    const std::string seen = what_was_seen(s);
    return std::move(s).with_detail(i18nc("%1 is a folder, %2 the system's reason",
                                          "the share at %1 stopped answering (%2); run the same copy again once it "
                                          "answers: what the share has stays, and big files go on where they stopped",
                                          info.mount_point, seen));
}

} // namespace

Status explain_device_loss(Status s, const DeviceInfo &info, std::string_view sysfs_root, double grace_seconds)
{
    const int err = s.err();
    if (is_network_share(info))
        return explain_share_loss(std::move(s), info);
    if (!may_mean_removal(s))
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
    const std::string seen = what_was_seen(s);
    return std::move(s)
        .with_detail(i18nc("%1 is the system's reason", "the device was removed before the copy finished (%1)", seen))
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
    std::string model = field("ID_MODEL_ENC", "ID_MODEL");
    if (vendor.empty() || model.rfind(vendor, 0) == 0) // "Kingston DataTraveler" already names its maker
        return model;
    return model.empty() ? vendor : vendor + " " + model;
}

namespace {

// Whole filesystems first: a bind mount of a folder on the stick is not where the stick is.
std::vector<const MountEntry *> whole_filesystems_first(const std::vector<MountEntry> &mounts)
{
    std::vector<const MountEntry *> order;
    for (const MountEntry &m : mounts)
        if (m.root == "/")
            order.push_back(&m);
    for (const MountEntry &m : mounts)
        if (m.root != "/")
            order.push_back(&m);
    return order;
}

// SCSI disks (USB sticks among them) have their inquiry strings in sysfs, udev or not.
std::string model_from_sysfs(std::string_view sysfs_root, const std::string &disk)
{
    const std::string dev_dir = std::string(sysfs_root) + "/block/" + disk + "/device/";
    std::string udev_like;
    if (auto vendor = read_kernel_text(dev_dir + "vendor"))
        udev_like += "E:ID_VENDOR=" + std::string(trim(*vendor)) + "\n";
    if (auto model = read_kernel_text(dev_dir + "model"))
        udev_like += "E:ID_MODEL=" + std::string(trim(*model)) + "\n";
    return parse_udev_model(udev_like);
}

// The name a list shows: the label, else the model, else the mount point's folder; usable as a folder name in
// a URL (no '/', no NUL, not "." or "..").
std::string display_name(const RemovableMount &r)
{
    std::string name = !r.label.empty() ? r.label : !r.model.empty() ? r.model : std::string(base_name(r.mount_point));
    std::replace(name.begin(), name.end(), '/', '_');
    std::replace(name.begin(), name.end(), '\0', '_');
    if (name.empty() || name == "." || name == "..")
        name = r.block_device;
    return name;
}

RemovableMount describe(const MountEntry &m, const DeviceInfo &info, std::string_view sysfs_root,
                        std::string_view udev_root)
{
    RemovableMount r;
    r.mount_point = m.mount_point;
    r.block_device = info.block_device;
    r.fs_type = m.fs_subtype.empty() ? m.fs_type : m.fs_subtype;
    if (!udev_root.empty()) {
        const std::string record =
            std::string(udev_root) + "/b" + std::to_string(m.dev_major) + ":" + std::to_string(m.dev_minor);
        if (auto text = read_kernel_text(record)) {
            r.label = parse_udev_label(*text);
            r.model = parse_udev_model(*text);
        }
    }
    if (r.model.empty())
        r.model = model_from_sysfs(sysfs_root, info.disk);
    r.name = display_name(r);
    return r;
}

// Two of a name (two sticks labelled STICK, a multipack of one model) are told apart by their block devices,
// both of them: a name never moves to another device when one of the two is pulled out.
void tell_apart(std::vector<RemovableMount> &out)
{
    std::vector<std::string> base;
    base.reserve(out.size());
    for (const RemovableMount &r : out)
        base.push_back(r.name);
    for (RemovableMount &r : out)
        if (std::count(base.begin(), base.end(), r.name) > 1)
            r.name += " (" + r.block_device + ")";
}

} // namespace

std::vector<RemovableMount> removable_mounts(const std::vector<MountEntry> &mounts, std::string_view sysfs_root,
                                             std::string_view udev_root)
{
    std::vector<RemovableMount> out;
    for (const MountEntry *m : whole_filesystems_first(mounts)) {
        DeviceInfo info;
        if (!probe_block_device(m->dev_major, m->dev_minor, sysfs_root, info) || !info.removable)
            continue;
        if (std::any_of(out.begin(), out.end(),
                        [&](const RemovableMount &o) { return o.block_device == info.block_device; }))
            continue; // mounted twice: listed once
        out.push_back(describe(*m, info, sysfs_root, udev_root));
    }
    tell_apart(out);
    // In the mount table's order.
    const auto position = [&](const RemovableMount &r) {
        return std::find_if(mounts.begin(), mounts.end(),
                            [&](const MountEntry &m) { return m.mount_point == r.mount_point; });
    };
    std::stable_sort(out.begin(), out.end(),
                     [&](const RemovableMount &a, const RemovableMount &b) { return position(a) < position(b); });
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

} // namespace sanecopy
