// SPDX-License-Identifier: GPL-2.0-or-later
// The desktop's side of StallNotice.h: the notification's words and the calls of org.freedesktop.Notifications.
#include "StallNotice.h"

#include <KLocalizedString>

#include <QDBusConnection>
#include <QDBusMessage>
#include <QVariantMap>

namespace SaneCopyKio {

namespace {

QDBusMessage notificationsCall(const QString &method)
{
    return QDBusMessage::createMethodCall(QStringLiteral("org.freedesktop.Notifications"),
                                          QStringLiteral("/org/freedesktop/Notifications"),
                                          QStringLiteral("org.freedesktop.Notifications"), method);
}

// A desktop with no notification server, or a hung one, must not hold the copy's progress for long: the tick
// waits at most this long, twice a stall. Nothing moves meanwhile anyway.
constexpr int kCallTimeoutMs = 2000;

unsigned showNotification(const QString &what, bool share, int expirySeconds)
{
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!bus.isConnected())
        return 0;
    const QString summary = share ? i18nc("@title notification", "The share is not answering")
                                  : i18nc("@title notification", "The device is not answering");
    const QString body = share ? i18nc("@info notification, %1 a file",
                                       "The copy of %1 waits for it and goes on by itself when it answers.", what)
                               : i18nc("@info notification, %1 a file",
                                       "The copy of %1 waits for it and goes on by itself when it answers. "
                                       "Do not unplug the device before the copy is done.",
                                       what);
    // desktop-entry: Plasma names the notification after the application and files it with its settings.
    const QVariantMap hints {{QStringLiteral("desktop-entry"), QStringLiteral("io.github.sanecopy.SaneCopy")},
                             {QStringLiteral("category"), QStringLiteral("transfer")}};
    QDBusMessage call = notificationsCall(QStringLiteral("Notify"));
    call << QStringLiteral("SaneCopy") << uint(0) << QStringLiteral("io.github.sanecopy.SaneCopy") << summary << body
         << QStringList() << hints << int(expirySeconds * 1000);
    const QDBusMessage reply = bus.call(call, QDBus::Block, kCallTimeoutMs);
    if (reply.type() != QDBusMessage::ReplyMessage || reply.arguments().isEmpty())
        return 0;
    return reply.arguments().constFirst().toUInt();
}

void closeNotification(unsigned id)
{
    QDBusMessage call = notificationsCall(QStringLiteral("CloseNotification"));
    call << uint(id);
    // Waited for: the worker may be ended right after the copy, and a close still queued would be lost with it.
    QDBusConnection::sessionBus().call(call, QDBus::Block, kCallTimeoutMs);
}

} // namespace

StallNotice::Desktop desktopNotifications(const QString &what)
{
    // The body is read as markup: a file name's < and & are text.
    return {[what = what.toHtmlEscaped()](bool share, int expirySeconds) {
                return showNotification(what, share, expirySeconds);
            },
            closeNotification};
}

} // namespace SaneCopyKio
