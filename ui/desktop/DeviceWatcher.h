// SPDX-License-Identifier: GPL-2.0-or-later
//
// Tells when the set of mounted devices may have changed, so the destination list follows a stick being plugged
// in, mounted, unmounted or pulled out without a Refresh.
//
// Three sources, each enough for what it sees:
// - /proc/self/mountinfo, which the kernel marks with POLLPRI on every mount or unmount in our namespace: works
//   with no desktop services at all;
// - udev's database folder (/run/udev/data), whose files come and go as udev probes devices: a stick plugged in
//   and not mounted yet;
// - UDisks2's signals on the system bus (objects added or removed, a filesystem's MountPoints changed): reaches
//   a sandbox whose mount namespace does not see new mounts at once.
// Bursts (a stick with three partitions, udisks' own follow-up property changes) are folded into one changed().
#pragma once

#include <QObject>
#include <QTimer>

class QFileSystemWatcher;
class QSocketNotifier;

namespace SaneCopy {

class DeviceWatcher : public QObject {
    Q_OBJECT
public:
    enum Source { Mounts = 1, Udev = 2, Udisks = 4, All = Mounts | Udev | Udisks };
    // |sources|: all in the window; a test of one source watches only that one.
    explicit DeviceWatcher(QObject *parent = nullptr, int settleMs = 250, int sources = All);
    ~DeviceWatcher() override;

    bool watchesMounts() const { return mounts_ != nullptr; }

Q_SIGNALS:
    void changed();

private Q_SLOTS:
    void onUdisksSignal();

private:
    int mountinfoFd_ = -1;
    QSocketNotifier *mounts_ = nullptr;
    QFileSystemWatcher *udev_ = nullptr;
    QTimer settle_;
};

} // namespace SaneCopy
