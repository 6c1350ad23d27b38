// SPDX-License-Identifier: GPL-2.0-or-later
#include "Notifier.h"

#include "Format.h"

#include <QDBusConnection>
#include <QDBusInterface>
#include <QObject>
#include <QVariantMap>

namespace SaneCopy {

NotificationText notificationFor(const QString &title, bool ok, bool cancelled, qint64 bytes, bool removable,
                                 const QString &details)
{
    if (cancelled)
        return {QObject::tr("Copy cancelled"),
                QObject::tr("%1: nothing half-written was left, and the device has nothing left to write.").arg(title)};
    if (!ok)
        return {QObject::tr("Copy finished with problems"),
                QObject::tr("%1: some files could not be copied.").arg(title)};
    QString body = details.isEmpty() ? QObject::tr("%1: %2 on the device.").arg(title, formatBytes(double(bytes)))
                                     : QObject::tr("%1: %2.").arg(title, details);
    // On a stick, what the user waits for is the headline.
    if (removable)
        return {QObject::tr("Safe to unplug"), body};
    return {QObject::tr("Copy done"), body};
}

NotificationText removedNotification(const QString &title)
{
    return {QObject::tr("Device removed during the copy"),
            QObject::tr("%1: the device was removed before the copy finished. Plug it back in and copy again to finish "
                        "the rest.")
                .arg(title)};
}

void sendNotification(const NotificationText &text)
{
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!bus.isConnected())
        return;
    QDBusInterface notifications(QStringLiteral("org.freedesktop.Notifications"),
                                 QStringLiteral("/org/freedesktop/Notifications"),
                                 QStringLiteral("org.freedesktop.Notifications"), bus);
    notifications.asyncCall(QStringLiteral("Notify"), QStringLiteral("SaneCopy"), uint(0),
                            QStringLiteral("io.github.sanecopy.SaneCopy"), text.summary,
                            text.body.toHtmlEscaped(), // the body is read as markup: a name's < and & are text
                            QStringList(), QVariantMap(), int(-1));
}

} // namespace SaneCopy
