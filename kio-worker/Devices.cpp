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
    const QByteArray sysfs = qEnvironmentVariableIsSet("SANECOPY_SYSFS_ROOT") ? qgetenv("SANECOPY_SYSFS_ROOT")
                                                                              : QByteArrayLiteral("/sys");
    const QByteArray udev = qEnvironmentVariableIsSet("SANECOPY_UDEV_ROOT") ? qgetenv("SANECOPY_UDEV_ROOT")
                                                                            : QByteArrayLiteral("/run/udev/data");
    return sanecopy::removable_mounts(sanecopy::parse_mountinfo(*text), sysfs.toStdString(), udev.toStdString());
}

} // namespace SaneCopyKio
