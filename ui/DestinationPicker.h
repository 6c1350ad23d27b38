// SPDX-License-Identifier: GPL-2.0-or-later
//
// Where to copy: removable devices first (by name, size and free space), then the home folder, then "Choose a
// folder…" for anywhere else.
#pragma once

#include "DeviceList.h"

#include <QWidget>

class QComboBox;

namespace SaneCopy {

class DestinationPicker : public QWidget {
    Q_OBJECT
public:
    explicit DestinationPicker(QWidget *parent = nullptr);

    QString destination() const;
    void setDestination(const QString &folder);
    // Replaces the device entries (the rest stays).
    void setDevices(const QList<Device> &devices);
    int deviceCount() const { return int(devices_.size()); }

public Q_SLOTS:
    void refreshDevices();

Q_SIGNALS:
    void destinationChanged(const QString &folder);

private:
    void rebuild();

    QComboBox *combo_;
    QList<Device> devices_;
    QString custom_;
    bool userChose_ = false;
};

} // namespace SaneCopy
