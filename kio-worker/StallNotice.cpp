// SPDX-License-Identifier: GPL-2.0-or-later
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

// A desktop with no notification server, or a hung one, must not hold the copy's progress: the tick waits at
// most this long, twice a stall.
constexpr int kCallTimeoutMs = 1000;

} // namespace

StallNotice::StallNotice(QString what) : what_(std::move(what)) {}

StallNotice::~StallNotice() { withdraw(); }

void StallNotice::update(bool stalled, bool share)
{
    if (!stalled) {
        withdraw();
        return;
    }
    if (stalled_)
        return;
    stalled_ = true; // asked once a stall, whether or not a server shows it
    QDBusConnection bus = QDBusConnection::sessionBus();
    if (!bus.isConnected())
        return;
    const QString summary = share ? i18nc("@title notification", "The share is not answering")
                                  : i18nc("@title notification", "The device is not answering");
    const QString body = share ? i18nc("@info notification, %1 a file",
                                       "The copy of %1 waits for it and goes on by itself when it answers.", what_)
                               : i18nc("@info notification, %1 a file",
                                       "The copy of %1 waits for it and goes on by itself when it answers. "
                                       "Do not unplug the device before the copy is done.",
                                       what_);
    // desktop-entry: Plasma names the notification after the application and files it with its settings.
    const QVariantMap hints {{QStringLiteral("desktop-entry"), QStringLiteral("io.github.sanecopy.SaneCopy")},
                             {QStringLiteral("category"), QStringLiteral("transfer")}};
    QDBusMessage notify = notificationsCall(QStringLiteral("Notify"));
    // Timeout 0: it stays until the copy moves again and withdraws it.
    notify << QStringLiteral("SaneCopy") << uint(0) << QStringLiteral("io.github.sanecopy.SaneCopy") << summary << body
           << QStringList() << hints << int(0);
    const QDBusMessage reply = bus.call(notify, QDBus::Block, kCallTimeoutMs);
    if (reply.type() == QDBusMessage::ReplyMessage && !reply.arguments().isEmpty())
        id_ = reply.arguments().constFirst().toUInt();
}

void StallNotice::withdraw()
{
    stalled_ = false;
    if (id_ == 0)
        return;
    QDBusMessage close = notificationsCall(QStringLiteral("CloseNotification"));
    close << uint(id_);
    // Waited for: the worker may be ended right after the copy, and a close still queued would be lost with it.
    QDBusConnection::sessionBus().call(close, QDBus::Block, kCallTimeoutMs);
    id_ = 0;
}

} // namespace SaneCopyKio
