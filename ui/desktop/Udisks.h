// SPDX-License-Identifier: GPL-2.0-or-later
//
// The little of UDisks2 that SaneCopy uses, over QtDBus: filesystem labels, and eject (unmount, then power the
// drive off so it can be pulled). Everything here is optional: without UDisks2 on the system bus, the app
// lists devices from mountinfo and hides Eject.
#pragma once

#include <QObject>
#include <QString>
#include <functional>

namespace SaneCopy {

class Udisks {
public:
    static bool available();
    // The filesystem label of a block device ("sdb1"), empty when unknown.
    static QString label(const QString &blockDevice);
    // Unmounts the filesystem on |blockDevice| and powers its drive off. |done| runs on the calling thread's
    // event loop, with a message for the user. |context| ends the wait if it is destroyed first.
    // Mounts the filesystem on |blockDevice| where the desktop mounts sticks (UDisks2 picks the folder, the user may
    // be asked to authorise). |done| gets the mount point, or a message for the user.
    static void mount(const QString &blockDevice, QObject *context,
                      const std::function<void(bool ok, const QString &mountPointOrMessage)> &done);
    static void eject(const QString &blockDevice, QObject *context,
                      const std::function<void(bool ok, const QString &message)> &done);
};

} // namespace SaneCopy
