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
    QString mountPoint;  // empty: not mounted yet (UDisks2 mounts it when it is chosen)
    QString name;        // the filesystem label, else the mount point's last component
    QString blockDevice; // "sdb1"
    QString fsType;
    bool removable = false;
    bool share = false; // a network share (SMB, NFS, sshfs): nothing to unplug or eject
    qint64 size = -1;   // -1: unknown
    qint64 free = -1;
    QString describe() const; // "STICK — 14.9 GiB, 12.1 GiB free"
    bool mounted() const { return !mountPoint.isEmpty(); }
};

using SizeLookup = std::function<bool(const QString &mountPoint, qint64 &size, qint64 &free)>;
using LabelLookup = std::function<QString(const QString &blockDevice)>;

// Pure over its inputs: the removable block-device mounts in |mounts| (sanecopy::removable_mounts), by name.
// |labels| (UDisks2) names a device first, then the engine's name (udev's label, the model, the mount point).
// |sysfsRoot| is "/sys" and |udevRoot| "/run/udev/data" in production, fixture trees (or none) in tests.
QList<Device> removableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                               const SizeLookup &sizes, const LabelLookup &labels = {}, const QString &udevRoot = {});

// The real thing: this process's mounts, /sys, QStorageInfo, UDisks2 labels where available.
// Filesystems on removable disks that nobody mounted yet: a stick just plugged in on a desktop that does not
// mount on its own. Found from sysfs (every /dev/block entry that probe_block_device calls removable) and udev's
// database under |udevRoot| (ID_FS_TYPE: only what holds a filesystem); the ones in |mounts| are left out. Their
// size comes from sysfs, their name from |labels|, else udev's label.
QList<Device> unmountedRemovableDevices(const std::vector<sanecopy::MountEntry> &mounts, const QString &sysfsRoot,
                                        const QString &udevRoot, const LabelLookup &labels = {});

// Pure over its inputs: the network shares mounted in |mounts| (sanecopy::network_share_mounts), by name, as
// "photos on nas.local".
QList<Device> networkShares(const std::vector<sanecopy::MountEntry> &mounts, const SizeLookup &sizes);

// The mounted removable devices, and with UDisks2 running (which can mount them) the unmounted ones after them;
// then the mounted network shares.
QList<Device> currentRemovableDevices();

} // namespace SaneCopy
