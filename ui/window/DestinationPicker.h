// SPDX-License-Identifier: GPL-2.0-or-later
//
// Where to copy: removable devices first (by name, size and free space), then the home folder, then "Choose a
// folder…" for anywhere else. The device entries follow the system (DeviceWatcher): a stick appears when it is
// mounted and goes when it is unmounted or pulled out, and the selection stays where it was while it exists.
#pragma once

#include "DeviceList.h"

#include <QWidget>

class QComboBox;
class QToolButton;

namespace SaneCopy {

class DestinationPicker : public QWidget {
    Q_OBJECT
public:
    // |watch|: follow mounts and UDisks2 by itself (off in tests that set the devices).
    explicit DestinationPicker(QWidget *parent = nullptr, bool watch = true);

    // The chosen folder; empty while the choice is a device that is not mounted yet (see deviceToMount()), or
    // every stick at once (see destinations()).
    QString destination() const;
    // Every folder a copy goes to: the chosen one, or each mounted stick for "Every stick at once" (offered when
    // two or more are plugged in); empty while nothing that can take a copy is chosen.
    QStringList destinations() const;
    // The block device of the chosen entry when it is a stick nobody mounted yet ("sdb1"), else empty.
    QString deviceToMount() const;
    // Chooses |folder| (a device's mount point or any folder); destinationChanged() when that is a change.
    void setDestination(const QString &folder);
    // Replaces the device entries (the rest stays).
    void setDevices(const QList<Device> &devices);
    int deviceCount() const { return int(devices_.size()); }
    const QList<Device> &devices() const { return devices_; }
    QComboBox *list() const { return combo_; }
    QToolButton *browseButton() const { return browse_; }
    QToolButton *refreshButton() const { return refresh_; }

public Q_SLOTS:
    void refreshDevices();

Q_SIGNALS:
    void destinationChanged(const QString &folder);
    // The device entries were replaced (a stick came or went, free space changed).
    void devicesChanged();

private:
    void rebuild();
    void addEntry(const QString &icon, const QString &text, const QString &data, int kind);
    int entryToKeep(const QString &current, bool currentWasDevice) const;

    QComboBox *combo_;
    QToolButton *refresh_ = nullptr;
    QToolButton *browse_;
    QList<Device> devices_;
    QString custom_;
    bool userChose_ = false;
};

} // namespace SaneCopy
