// SPDX-License-Identifier: GPL-2.0-or-later
#include "DeviceList.h"

#include "Format.h"
#include "Udisks.h"

#include <QFile>
#include <QFileInfo>
#include <QStorageInfo>
#include <algorithm>

namespace SaneCopy {

QString Device::describe() const
{
    QString text = name;
    if (size >= 0 && free >= 0)
        text += QStringLiteral(" — %1, %2 free").arg(formatBytes(double(size)), formatBytes(double(free)));
    else if (size >= 0)
        text += QStringLiteral(" — %1").arg(formatBytes(double(size)));
    return text + QStringLiteral(" (%1)").arg(mountPoint);
}

QList<Device> removableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                               const SizeLookup &sizes, const LabelLookup &labels)
{
    QList<Device> devices;
    const std::string root = sysfsRoot.toStdString();
    for (const sanecopy::MountEntry &m : mounts) {
        sanecopy::DeviceInfo info;
        if (!sanecopy::probe_block_device(m.dev_major, m.dev_minor, root, info) || !info.removable)
            continue;
        Device d;
        d.mountPoint = QString::fromStdString(m.mount_point);
        d.blockDevice = QString::fromStdString(info.block_device);
        d.fsType = QString::fromStdString(m.fs_subtype.empty() ? m.fs_type : m.fs_subtype);
        d.removable = true;
        if (labels)
            d.name = labels(d.blockDevice);
        if (d.name.isEmpty())
            d.name = QFileInfo(d.mountPoint).fileName();
        if (d.name.isEmpty())
            d.name = d.blockDevice;
        if (sizes)
            sizes(d.mountPoint, d.size, d.free);
        // The same device mounted twice (a bind mount) is one destination.
        if (std::none_of(devices.begin(), devices.end(), [&](const Device &o) { return o.blockDevice == d.blockDevice; }))
            devices.append(d);
    }
    std::sort(devices.begin(), devices.end(), [](const Device &a, const Device &b) {
        return QString::localeAwareCompare(a.name, b.name) < 0;
    });
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
    return removableDevices(
        mounts, QStringLiteral("/sys"),
        [](const QString &mountPoint, qint64 &size, qint64 &free) {
            QStorageInfo storage(mountPoint);
            if (!storage.isValid() || storage.bytesTotal() <= 0)
                return false; // fusefat reports a size of 0: unknown, not empty
            size = storage.bytesTotal();
            free = storage.bytesAvailable();
            return true;
        },
        udisks ? LabelLookup(&Udisks::label) : LabelLookup());
}

} // namespace SaneCopy
