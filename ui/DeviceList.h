// SPDX-License-Identifier: GPL-2.0-or-later
//
// Where a user may want to copy to: removable devices first. Found from /proc/self/mountinfo and sysfs
// (the engine's parsers), so it works without UDisks2; where UDisks2 is on the system bus it only adds labels.
#pragma once

#include "device_probe.h"

#include <QList>
#include <QString>
#include <functional>
#include <vector>

namespace SaneCopy {

struct Device {
    QString mountPoint;
    QString name;        // the filesystem label, else the mount point's last component
    QString blockDevice; // "sdb1"
    QString fsType;
    bool removable = false;
    qint64 size = -1;    // -1: unknown
    qint64 free = -1;
    QString describe() const; // "STICK — 14.9 GiB, 12.1 GiB free"
};

using SizeLookup = std::function<bool(const QString &mountPoint, qint64 &size, qint64 &free)>;
using LabelLookup = std::function<QString(const QString &blockDevice)>;

// Pure over its inputs: the removable block-device mounts in |mounts|, by name. |sysfsRoot| is "/sys" in
// production, a fixture tree in tests.
QList<Device> removableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                               const SizeLookup &sizes, const LabelLookup &labels = {});

// The real thing: this process's mounts, /sys, QStorageInfo, UDisks2 labels where available.
QList<Device> currentRemovableDevices();

} // namespace SaneCopy
