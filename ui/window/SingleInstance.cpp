// SPDX-License-Identifier: GPL-2.0-or-later
#include "SingleInstance.h"

#include "MainWindow.h"

#include <QDBusConnectionInterface>
#include <QDBusMessage>
#include <QDBusMetaType>
#include <QDBusReply>

namespace SaneCopy {

bool SingleInstance::handOver(const CommandLine &cmd, const QDBusConnection &bus)
{
    qDBusRegisterMetaType<QList<QByteArray>>();
    if (!bus.isConnected() || !bus.interface() || !bus.interface()->isServiceRegistered(serviceName()))
        return false;
    QDBusMessage call =
        QDBusMessage::createMethodCall(serviceName(), objectPath(), serviceName(), QStringLiteral("Queue"));
    call << QVariant::fromValue(cmd.files) << cmd.destination << cmd.move;
    // A window that does not answer within 5 s is not one to hand files to: this process opens its own.
    const QDBusMessage reply = bus.call(call, QDBus::Block, 5000);
    return reply.type() == QDBusMessage::ReplyMessage;
}

SingleInstance::SingleInstance(MainWindow *window, QDBusConnection bus)
    : QObject(window), window_(window), bus_(std::move(bus))
{
    qDBusRegisterMetaType<QList<QByteArray>>();
    if (!bus_.isConnected() || !bus_.interface())
        return;
    if (!bus_.registerObject(objectPath(), this, QDBusConnection::ExportScriptableSlots))
        return;
    // The bus gives the name to exactly one of any number of claims; the others learn it here. (Without
    // queueing: a window that waited for the name would open beside the one that has it.)
    const QDBusReply<QDBusConnectionInterface::RegisterServiceReply> reply = bus_.interface()->registerService(
        serviceName(), QDBusConnectionInterface::DontQueueService, QDBusConnectionInterface::DontAllowReplacement);
    primary_ = reply.isValid() && reply.value() == QDBusConnectionInterface::ServiceRegistered;
    lost_ = reply.isValid() && reply.value() == QDBusConnectionInterface::ServiceNotRegistered;
    if (!primary_)
        bus_.unregisterObject(objectPath());
}

SingleInstance::~SingleInstance()
{
    if (primary_) {
        bus_.unregisterService(serviceName());
        bus_.unregisterObject(objectPath());
    }
}

void SingleInstance::Queue(const QList<QByteArray> &files, const QByteArray &destination, bool move)
{
    CommandLine cmd;
    cmd.files = files;
    cmd.destination = destination;
    cmd.move = move;
    window_->applyCommandLine(cmd);
    // Brought to the front: the user just asked for it (the desktop may still decide not to steal focus).
    window_->show();
    window_->raise();
    window_->activateWindow();
}

} // namespace SaneCopy
