// SPDX-License-Identifier: GPL-2.0-or-later
//
// A desktop notification when a job ends, through org.freedesktop.Notifications over QtDBus. Without a
// notification daemon it does nothing.
#pragma once

#include <QString>

namespace SaneCopy {

struct NotificationText {
    QString summary;
    QString body;
};

// Pure: what the notification says.
// |details|: the job's summary line (JobModel::SummaryRole), when known, instead of the bare byte count.
NotificationText notificationFor(const QString &title, bool ok, bool cancelled, qint64 bytes, bool removable,
                                 const QString &details = QString());
// The job ended because its destination's device went away (a pulled stick).
NotificationText removedNotification(const QString &title);
void sendNotification(const NotificationText &text);

} // namespace SaneCopy
