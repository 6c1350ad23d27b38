// SPDX-License-Identifier: GPL-2.0-or-later
#include "NetworkUrls.h"

#include <QCoreApplication>
#include <QDBusError>
#include <QDBusMessage>
#include <QFile>

namespace SaneCopy {

namespace {

bool kioFuseMissing(const QDBusMessage &reply)
{
    const QString name = reply.errorName();
    return name == QLatin1String("org.freedesktop.DBus.Error.ServiceUnknown") ||
           name == QLatin1String("org.freedesktop.DBus.Error.NameHasNoOwner") ||
           name == QLatin1String("org.freedesktop.DBus.Error.Spawn.ServiceNotFound");
}

} // namespace

LocalFolderForUrl localPathForNetworkUrl(const QByteArray &url, const QDBusConnection &bus, int timeoutMs)
{
    const QString shown = QString::fromUtf8(url);
    if (!bus.isConnected())
        return {{},
                QCoreApplication::translate(
                    "SaneCopy::NetworkUrls",
                    "%1 is a network folder, and SaneCopy reaches one only through kio-fuse, which needs a desktop "
                    "session: mount the share (an fstab line, mount -t cifs, sshfs) and copy from or to that folder.")
                    .arg(shown)};
    QDBusMessage call =
        QDBusMessage::createMethodCall(QStringLiteral("org.kde.KIOFuse"), QStringLiteral("/org/kde/KIOFuse"),
                                       QStringLiteral("org.kde.KIOFuse.VFS"), QStringLiteral("mountUrl"));
    call << shown;
    const QDBusMessage reply = bus.call(call, QDBus::BlockWithGui, timeoutMs);
    if (reply.type() == QDBusMessage::ReplyMessage && !reply.arguments().isEmpty()) {
        const QString path = reply.arguments().constFirst().toString();
        if (path.startsWith(QLatin1Char('/')))
            return {QFile::encodeName(path), {}};
    }
    if (kioFuseMissing(reply))
        return {{},
                QCoreApplication::translate(
                    "SaneCopy::NetworkUrls",
                    "%1 is a network folder, and SaneCopy copies one only through kio-fuse: install kio-fuse (Debian "
                    "and Ubuntu: apt install kio-fuse) or mount the share (an fstab line, mount -t cifs, sshfs), "
                    "then choose it again.")
                    .arg(shown)};
    const QString why = reply.type() == QDBusMessage::ErrorMessage
                            ? reply.errorMessage()
                            : QCoreApplication::translate("SaneCopy::NetworkUrls", "no answer");
    return {{},
            QCoreApplication::translate("SaneCopy::NetworkUrls",
                                        "kio-fuse could not open %1 (%2), so nothing was copied from or to it.")
                .arg(shown, why)};
}

void resolveNetworkUrls(CommandLine &cmd, const QDBusConnection &bus, int timeoutMs)
{
    for (const QByteArray &url : std::as_const(cmd.networkFiles)) {
        LocalFolderForUrl local = localPathForNetworkUrl(url, bus, timeoutMs);
        if (local.path.isEmpty())
            cmd.problems << local.problem;
        else
            cmd.files << local.path;
    }
    cmd.networkFiles.clear();
    if (!cmd.networkDestination.isEmpty()) {
        LocalFolderForUrl local = localPathForNetworkUrl(cmd.networkDestination, bus, timeoutMs);
        if (local.path.isEmpty())
            cmd.problems << local.problem;
        else
            cmd.destination = local.path;
        cmd.networkDestination.clear();
    }
}

} // namespace SaneCopy
