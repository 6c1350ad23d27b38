// SPDX-License-Identifier: GPL-2.0-or-later
#include "DevicesNotifier.h"

#include "Devices.h"
#include "SaneCopyDevicesLogging.h"
#include "UrlMapping.h"

#include <KDirNotify>
#include <KPluginFactory>

#include <QSocketNotifier>
#include <QUrl>

#include <fcntl.h>
#include <unistd.h>

K_PLUGIN_CLASS_WITH_JSON(DevicesNotifier, "sanecopydevices.json")

namespace {

QList<QPair<QByteArray, QByteArray>> devicesNow()
{
    QList<QPair<QByteArray, QByteArray>> out;
    for (const sanecopy::RemovableMount &d : SaneCopyKio::removableDevicesNow())
        out.append({QByteArray::fromStdString(d.name), QByteArray::fromStdString(d.mount_point)});
    return out;
}

} // namespace

DevicesNotifier::DevicesNotifier(QObject *parent, const QVariantList &) : KDEDModule(parent), known_(devicesNow())
{
    // A stick with three partitions, or a desktop that mounts and remounts, is one change.
    settle_.setSingleShot(true);
    settle_.setInterval(300);
    connect(&settle_, &QTimer::timeout, this, &DevicesNotifier::check);
    mountinfoFd_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (mountinfoFd_ < 0) {
        qCWarning(SANECOPY_DEVICES)
            << "can't watch /proc/self/mountinfo; Safe Copy's device list updates only on reload";
        return;
    }
    mounts_ = new QSocketNotifier(qintptr(mountinfoFd_), QSocketNotifier::Exception, this);
    // poll() takes the kernel's mark off itself, so nothing needs to be read.
    connect(mounts_, &QSocketNotifier::activated, &settle_, qOverload<>(&QTimer::start));
}

DevicesNotifier::~DevicesNotifier()
{
    delete mounts_;
    if (mountinfoFd_ >= 0)
        ::close(mountinfoFd_);
}

void DevicesNotifier::check()
{
    const QList<QPair<QByteArray, QByteArray>> now = devicesNow();
    if (now == known_)
        return; // another mount came or went: a snap, a container, a network share
    QList<QUrl> gone;
    for (const auto &device : std::as_const(known_)) {
        if (!now.contains(device))
            gone.append(SaneCopyKio::devicesUrl(device.first));
    }
    known_ = now;
    qCDebug(SANECOPY_DEVICES) << "devices changed:" << now.size() << "now," << gone.size() << "gone";
    if (!gone.isEmpty())
        org::kde::KDirNotify::emitFilesRemoved(gone);
    org::kde::KDirNotify::emitFilesAdded(SaneCopyKio::devicesUrl());
}

#include "DevicesNotifier.moc"
