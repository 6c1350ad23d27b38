// SPDX-License-Identifier: GPL-2.0-or-later
//
// A kded module that keeps sanecopy://devices/ current wherever it is shown. KIO lists a worker's folders only
// when asked, so Dolphin would show a stick plugged in or pulled out only after a reload; this module watches
// the mounts and, when the removable devices change, says so the way KIO's own jobs do: KDirNotify's
// FilesAdded on sanecopy://devices/ (every KDirLister showing it lists it again) and FilesRemoved on each
// device's folder that went (a view inside it is told its folder is gone).
//
// Cheap while nothing happens: one descriptor on /proc/self/mountinfo, which the kernel marks on every mount
// and unmount, and a list of the devices' names compared after each.
#pragma once

#include <KDEDModule>

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QTimer>
#include <QVariantList>

class QSocketNotifier;

class DevicesNotifier : public KDEDModule {
    Q_OBJECT
public:
    DevicesNotifier(QObject *parent, const QVariantList &args);
    ~DevicesNotifier() override;

private:
    void check();

    int mountinfoFd_ = -1;
    QSocketNotifier *mounts_ = nullptr;
    QTimer settle_;
    QList<QPair<QByteArray, QByteArray>> known_; // each device's folder name and mount point
};
