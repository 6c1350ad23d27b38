// SPDX-License-Identifier: GPL-2.0-or-later
#include "DeviceWatcher.h"

#include <QDBusConnection>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QSocketNotifier>
#include <fcntl.h>
#include <unistd.h>

namespace SaneCopy {

namespace {
const QString kService = QStringLiteral("org.freedesktop.UDisks2");
const QString kRoot = QStringLiteral("/org/freedesktop/UDisks2");
} // namespace

DeviceWatcher::DeviceWatcher(QObject *parent, int settleMs, int sources) : QObject(parent)
{
    settle_.setSingleShot(true);
    settle_.setInterval(settleMs);
    connect(&settle_, &QTimer::timeout, this, &DeviceWatcher::changed);

    if (sources & Mounts)
        mountinfoFd_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (mountinfoFd_ >= 0) {
        mounts_ = new QSocketNotifier(qintptr(mountinfoFd_), QSocketNotifier::Exception, this);
        // poll() itself takes the mark off (proc's mounts_poll), so nothing needs to be read here.
        connect(mounts_, &QSocketNotifier::activated, &settle_, qOverload<>(&QTimer::start));
    }

    // udev's database: a file per device, written when udev has probed it (a stick plugged in, a new filesystem
    // on it), so an unmounted stick shows up with its filesystem type known.
    if ((sources & Udev) && QFileInfo(QStringLiteral("/run/udev/data")).isDir()) {
        udev_ = new QFileSystemWatcher({QStringLiteral("/run/udev/data")}, this);
        connect(udev_, &QFileSystemWatcher::directoryChanged, &settle_, qOverload<>(&QTimer::start));
    }

    // Connecting to a service that is not running is fine: the bus delivers its signals once it starts. The
    // signatures are spelled out: QtDBus delivers a signal to a slot only when its arguments match.
    QDBusConnection bus = QDBusConnection::systemBus();
    if ((sources & Udisks) && bus.isConnected()) {
        const QString objectManager = QStringLiteral("org.freedesktop.DBus.ObjectManager");
        bus.connect(kService, kRoot, objectManager, QStringLiteral("InterfacesAdded"), QStringLiteral("oa{sa{sv}}"),
                    this, SLOT(onUdisksSignal()));
        bus.connect(kService, kRoot, objectManager, QStringLiteral("InterfacesRemoved"), QStringLiteral("oas"), this,
                    SLOT(onUdisksSignal()));
        // An empty path: every object of the service (each block device is one).
        bus.connect(kService, QString(), QStringLiteral("org.freedesktop.DBus.Properties"),
                    QStringLiteral("PropertiesChanged"), QStringLiteral("sa{sv}as"), this, SLOT(onUdisksSignal()));
    }
}

DeviceWatcher::~DeviceWatcher()
{
    delete mounts_;
    if (mountinfoFd_ >= 0)
        ::close(mountinfoFd_);
}

void DeviceWatcher::onUdisksSignal() { settle_.start(); }

} // namespace SaneCopy
