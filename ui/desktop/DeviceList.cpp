// SPDX-License-Identifier: GPL-2.0-or-later
#include "DeviceList.h"

#include "Format.h"
#include "Udisks.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStorageInfo>
#include <algorithm>
#include <optional>

namespace SaneCopy {

namespace {
// As a person reads a list: by name, in the user's locale.
void sortByName(QList<Device> &devices)
{
    std::sort(devices.begin(), devices.end(),
              [](const Device &a, const Device &b) { return QString::localeAwareCompare(a.name, b.name) < 0; });
}
} // namespace

QString Device::describe() const
{
    QString text = name;
    if (!mounted())
        return size >= 0 ? QObject::tr("%1 — %2, not mounted yet").arg(name, formatBytes(double(size)))
                         : QObject::tr("%1 — not mounted yet").arg(name);
    if (size >= 0 && free >= 0)
        text += QStringLiteral(" — %1, %2 free").arg(formatBytes(double(size)), formatBytes(double(free)));
    else if (size >= 0)
        text += QStringLiteral(" — %1").arg(formatBytes(double(size)));
    return text + QStringLiteral(" (%1)").arg(mountPoint);
}

QList<Device> removableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                               const SizeLookup &sizes, const LabelLookup &labels, const QString &udevRoot)
{
    QList<Device> devices;
    for (const sanecopy::RemovableMount &m :
         sanecopy::removable_mounts(mounts, sysfsRoot.toStdString(), udevRoot.toStdString())) {
        Device d;
        d.mountPoint = QString::fromStdString(m.mount_point);
        d.blockDevice = QString::fromStdString(m.block_device);
        d.fsType = QString::fromStdString(m.fs_type);
        d.removable = true;
        if (labels)
            d.name = labels(d.blockDevice);
        if (d.name.isEmpty())
            d.name = QString::fromStdString(m.name);
        if (sizes)
            sizes(d.mountPoint, d.size, d.free);
        devices.append(d);
    }
    sortByName(devices);
    return devices;
}

QList<Device> networkShares(const std::vector<sanecopy::MountEntry> &mounts, const SizeLookup &sizes)
{
    QList<Device> shares;
    for (const sanecopy::ShareMount &m : sanecopy::network_share_mounts(mounts)) {
        Device d;
        d.mountPoint = QString::fromStdString(m.mount_point);
        d.fsType = QString::fromStdString(m.fs_type);
        d.share = true;
        d.name = m.share.empty()
                     ? QString::fromStdString(m.server)
                     : QObject::tr("%1 on %2").arg(QString::fromStdString(m.share), QString::fromStdString(m.server));
        if (sizes)
            sizes(d.mountPoint, d.size, d.free);
        shares.append(d);
    }
    sortByName(shares);
    return shares;
}

namespace {

// "8:17" -> (8, 17); false for anything else.
bool parseMajorMinor(const QString &entry, unsigned &major, unsigned &minor)
{
    const QStringList majmin = entry.split(QLatin1Char(':'));
    bool okMajor = false, okMinor = false;
    major = majmin.value(0).toUInt(&okMajor);
    minor = majmin.value(1).toUInt(&okMinor);
    return majmin.size() == 2 && okMajor && okMinor;
}

// sysfs counts 512-byte sectors whatever the device's own; -1 when unknown (Device::size).
qint64 sizeOf(const QString &sysfsRoot, const QString &entry)
{
    QFile sectors(sysfsRoot + QStringLiteral("/dev/block/") + entry + QStringLiteral("/size"));
    if (!sectors.open(QIODevice::ReadOnly))
        return -1;
    bool ok = false;
    const qint64 n = sectors.readAll().trimmed().toLongLong(&ok);
    return ok && n > 0 ? n * 512 : -1;
}

// A removable block device that holds a filesystem, from its udev record; nullopt for anything else (a
// partition table, swap or an encrypted volume: nothing to copy files into as it is).
std::optional<Device> deviceFromUdev(const sanecopy::DeviceInfo &info, const QString &udevPath,
                                     const LabelLookup &labels)
{
    QFile udev(udevPath);
    if (!udev.open(QIODevice::ReadOnly))
        return std::nullopt;
    const QByteArray record = udev.readAll();
    const std::string_view text(record.constData(), size_t(record.size()));
    const std::string fsType = sanecopy::parse_udev_fs_type(text);
    if (fsType.empty() || fsType == "swap" || fsType == "crypto_LUKS")
        return std::nullopt;
    Device d;
    d.blockDevice = QString::fromStdString(info.block_device);
    d.fsType = QString::fromStdString(fsType);
    d.removable = true;
    if (labels)
        d.name = labels(d.blockDevice);
    if (d.name.isEmpty())
        d.name = QString::fromStdString(sanecopy::parse_udev_label(text));
    if (d.name.isEmpty())
        d.name = d.blockDevice;
    return d;
}

} // namespace

QList<Device> unmountedRemovableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                                        const QString &udevRoot, const LabelLookup &labels)
{
    QList<Device> devices;
    const std::string root = sysfsRoot.toStdString();
    const QStringList entries = QDir(sysfsRoot + QStringLiteral("/dev/block"))
                                    .entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
    for (const QString &entry : entries) {
        unsigned major = 0, minor = 0;
        if (!parseMajorMinor(entry, major, minor))
            continue;
        if (std::any_of(mounts.begin(), mounts.end(),
                        [&](const sanecopy::MountEntry &m) { return m.dev_major == major && m.dev_minor == minor; }))
            continue;
        sanecopy::DeviceInfo info;
        if (!sanecopy::probe_block_device(major, minor, root, info) || !info.removable)
            continue;
        std::optional<Device> d = deviceFromUdev(info, udevRoot + QStringLiteral("/b") + entry, labels);
        if (!d)
            continue;
        d->size = sizeOf(sysfsRoot, entry);
        devices.append(*d);
    }
    sortByName(devices);
    return devices;
}

QList<Device> currentRemovableDevices()
{
    QFile f(QStringLiteral("/proc/self/mountinfo"));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QByteArray text = f.readAll();
    const auto mounts = sanecopy::parse_mountinfo(std::string_view(text.constData(), size_t(text.size())));
    const bool udisks = Udisks::available();
    const SizeLookup sizes = [](const QString &mountPoint, qint64 &size, qint64 &free) {
        QStorageInfo storage(mountPoint);
        if (!storage.isValid() || storage.bytesTotal() <= 0)
            return false; // fusefat reports a size of 0: unknown, not empty
        size = storage.bytesTotal();
        free = storage.bytesAvailable();
        return true;
    };
    QList<Device> devices =
        removableDevices(mounts, QStringLiteral("/sys"), sizes, udisks ? LabelLookup(&Udisks::label) : LabelLookup(),
                         QStringLiteral("/run/udev/data"));
    // Only UDisks2 can mount a stick for the user; without it an unmounted one is no destination.
    if (udisks)
        devices += unmountedRemovableDevices(mounts, QStringLiteral("/sys"), QStringLiteral("/run/udev/data"),
                                             LabelLookup(&Udisks::label));
    // A share that does not answer would hang QStorageInfo (statfs) on the GUI thread: its size stays unknown.
    devices += networkShares(mounts, {});
    return devices;
}

} // namespace SaneCopy
