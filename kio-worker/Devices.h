// SPDX-License-Identifier: GPL-2.0-or-later
//
// The removable devices sanecopy://devices/ lists, read the same way by the worker (which maps a device's folder
// to its mount point) and by the kded module (which tells Dolphin when the list changes).
#pragma once

#include "device_probe.h"

#include <vector>

namespace SaneCopyKio {

// The removable devices mounted now in this process's mount namespace (sanecopy::removable_mounts over
// /proc/self/mountinfo, /sys and /run/udev/data). For tests only, SANECOPY_SYSFS_ROOT replaces /sys (a tree of
// their own in which a loop device they made is removable) and SANECOPY_UDEV_ROOT /run/udev/data (its label).
std::vector<sanecopy::RemovableMount> removableDevicesNow();

} // namespace SaneCopyKio
