// SPDX-License-Identifier: GPL-2.0-or-later
#include "Udisks.h"

#include <QDBusConnection>
#include <QDBusConnectionInterface>
#include <QDBusInterface>
#include <QDBusObjectPath>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusReply>
#include <QVariantMap>

namespace SaneCopy {

namespace {
const QString kService = QStringLiteral("org.freedesktop.UDisks2");
const QString kProperties = QStringLiteral("org.freedesktop.DBus.Properties");

QString blockPath(const QString &blockDevice)
{
    // UDisks2 names block objects after the kernel's device name, with characters D-Bus can't take escaped.
    QString name = blockDevice;
    name.replace(QLatin1Char('-'), QStringLiteral("_2d"));
    return QStringLiteral("/org/freedesktop/UDisks2/block_devices/") + name;
}

QVariant property(const QString &path, const QString &interface, const QString &name)
{
    QDBusInterface props(kService, path, kProperties, QDBusConnection::systemBus());
    QDBusReply<QVariant> reply = props.call(QStringLiteral("Get"), interface, name);
    return reply.isValid() ? reply.value() : QVariant();
}
} // namespace

bool Udisks::available()
{
    QDBusConnection bus = QDBusConnection::systemBus();
    return bus.isConnected() && bus.interface() && bus.interface()->isServiceRegistered(kService).value();
}

QString Udisks::label(const QString &blockDevice)
{
    return property(blockPath(blockDevice), QStringLiteral("org.freedesktop.UDisks2.Block"), QStringLiteral("IdLabel"))
        .toString();
}

void Udisks::mount(const QString &blockDevice, QObject *context, const std::function<void(bool, const QString &)> &done)
{
    QDBusInterface fs(kService, blockPath(blockDevice), QStringLiteral("org.freedesktop.UDisks2.Filesystem"),
                      QDBusConnection::systemBus());
    auto *call = new QDBusPendingCallWatcher(fs.asyncCall(QStringLiteral("Mount"), QVariantMap()), context);
    QObject::connect(call, &QDBusPendingCallWatcher::finished, context, [done](QDBusPendingCallWatcher *w) {
        w->deleteLater();
        QDBusPendingReply<QString> reply = *w;
        if (reply.isError())
            done(false, QObject::tr("Could not mount it: %1").arg(reply.error().message()));
        else
            done(true, reply.value());
    });
}

void Udisks::eject(const QString &blockDevice, QObject *context, const std::function<void(bool, const QString &)> &done)
{
    const QString path = blockPath(blockDevice);
    QDBusInterface fs(kService, path, QStringLiteral("org.freedesktop.UDisks2.Filesystem"),
                      QDBusConnection::systemBus());
    auto *unmount = new QDBusPendingCallWatcher(fs.asyncCall(QStringLiteral("Unmount"), QVariantMap()), context);
    QObject::connect(
        unmount, &QDBusPendingCallWatcher::finished, context, [path, context, done](QDBusPendingCallWatcher *w) {
            w->deleteLater();
            if (w->isError()) {
                // UDisks says why (busy: "target is busy"); the user needs to hear it.
                done(false, QObject::tr("Could not unmount: %1").arg(w->error().message()));
                return;
            }
            const QVariant drive =
                property(path, QStringLiteral("org.freedesktop.UDisks2.Block"), QStringLiteral("Drive"));
            const QString drivePath = qvariant_cast<QDBusObjectPath>(drive).path();
            if (drivePath.isEmpty() || drivePath == QLatin1String("/")) {
                done(true, QObject::tr("Unmounted. Safe to unplug."));
                return;
            }
            QDBusInterface d(kService, drivePath, QStringLiteral("org.freedesktop.UDisks2.Drive"),
                             QDBusConnection::systemBus());
            auto *power = new QDBusPendingCallWatcher(d.asyncCall(QStringLiteral("PowerOff"), QVariantMap()), context);
            QObject::connect(power, &QDBusPendingCallWatcher::finished, context, [done](QDBusPendingCallWatcher *p) {
                p->deleteLater();
                // Unmounted either way: some card readers can't be powered off, and that is fine to unplug.
                done(true, p->isError() ? QObject::tr("Unmounted. Safe to unplug.")
                                        : QObject::tr("Ejected. Safe to unplug."));
            });
        });
}

} // namespace SaneCopy
