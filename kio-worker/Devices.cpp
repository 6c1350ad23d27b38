// SPDX-License-Identifier: GPL-2.0-or-later
#include "Devices.h"

#include <QByteArray>
#include <QtGlobal>

namespace SaneCopyKio {

std::vector<sanecopy::RemovableMount> removableDevicesNow()
{
    auto text = sanecopy::read_kernel_text("/proc/self/mountinfo");
    if (!text)
        return {};
    // A copy of 10,000 files asks for every file: the sysfs and udev reads are redone only when the mounts changed.
    // The worker and kded each run this on one thread.
    static std::string lastMounts;
    static std::vector<sanecopy::RemovableMount> lastDevices;
    if (*text == lastMounts)
        return lastDevices;
    const QByteArray sysfs =
        qEnvironmentVariableIsSet("SANECOPY_SYSFS_ROOT") ? qgetenv("SANECOPY_SYSFS_ROOT") : QByteArrayLiteral("/sys");
    const QByteArray udev = qEnvironmentVariableIsSet("SANECOPY_UDEV_ROOT") ? qgetenv("SANECOPY_UDEV_ROOT")
                                                                            : QByteArrayLiteral("/run/udev/data");
    lastDevices = sanecopy::removable_mounts(sanecopy::parse_mountinfo(*text), sysfs.toStdString(), udev.toStdString());
    lastMounts = std::move(*text);
    return lastDevices;
}

} // namespace SaneCopyKio
