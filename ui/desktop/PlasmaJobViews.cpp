// SPDX-License-Identifier: GPL-2.0-or-later
#include "PlasmaJobViews.h"

#include "job_control.h"

#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QDBusPendingCallWatcher>
#include <QDBusPendingReply>
#include <QDBusVariant>
#include <QUrl>

namespace SaneCopy {

namespace {
const QString kViewInterface = QStringLiteral("org.kde.JobViewV2");
constexpr int kKillable = 0x0001, kSuspendable = 0x0002;
constexpr int kUserCanceled = 1; // KIO::ERR_USER_CANCELED, KJob::KilledJobError
} // namespace

PlasmaJobViews::PlasmaJobViews(QDBusConnection bus, QObject *parent) : QObject(parent), bus_(std::move(bus)) {}

void PlasmaJobViews::addJob(quint64 jobId, const QString &source, const QString &destination)
{
    if (!bus_.isConnected())
        return;
    views_.insert(jobId, View {});
    QDBusMessage request = QDBusMessage::createMethodCall(
        serverService(), serverPath(), QStringLiteral("org.kde.JobViewServer"), QStringLiteral("requestView"));
    request << QStringLiteral("SaneCopy") << QStringLiteral("io.github.sanecopy.SaneCopy")
            << (kKillable | kSuspendable);
    auto *watcher = new QDBusPendingCallWatcher(bus_.asyncCall(request, 5000), this);
    connect(watcher, &QDBusPendingCallWatcher::finished, this, [this, watcher, jobId, source, destination] {
        watcher->deleteLater();
        const QDBusPendingReply<QDBusObjectPath> reply = *watcher;
        if (reply.isError() || !views_.contains(jobId)) {
            views_.remove(jobId); // no server: the window is where the copy is shown
            return;
        }
        const QString path = reply.value().path();
        // What Dolphin's copies show: the title line, then source and destination.
        call(path, QStringLiteral("setInfoMessage"), {tr("Copying, at the device's own speed")});
        call(path, QStringLiteral("setDescriptionField"), {0u, tr("Source"), source});
        call(path, QStringLiteral("setDescriptionField"), {1u, tr("Destination"), destination});
        call(path, QStringLiteral("setDestUrl"),
             {QVariant::fromValue(QDBusVariant(QUrl::fromLocalFile(destination).toString()))});
        viewReady(jobId, path);
    });
}

void PlasmaJobViews::viewReady(quint64 jobId, const QString &path)
{
    View &v = views_[jobId];
    v.path = path;
    for (const char *signal : {"cancelRequested", "suspendRequested", "resumeRequested"}) {
        // One receiver per signal name, told apart by the sending path.
        const QString name = QLatin1String(signal);
        bus_.connect(serverService(), path, kViewInterface, name, this,
                     name == QLatin1String("cancelRequested")    ? SLOT(onViewCancel())
                     : name == QLatin1String("suspendRequested") ? SLOT(onViewSuspend())
                                                                 : SLOT(onViewResume()));
    }
    if (v.finished)
        onFinished(jobId, v.end);
}

void PlasmaJobViews::call(const QString &path, const QString &method, const QVariantList &args)
{
    QDBusMessage m = QDBusMessage::createMethodCall(serverService(), path, kViewInterface, method);
    m.setArguments(args);
    bus_.send(m); // the replies carry nothing the copy needs
}

void PlasmaJobViews::onProgress(const JobProgress &p)
{
    auto it = views_.find(p.jobId);
    if (it == views_.end() || it->path.isEmpty() || it->finished)
        return;
    View &v = *it;
    const bool suspended = sanecopy::JobState(p.state) == sanecopy::JobState::Paused;
    if (suspended != v.suspended) {
        v.suspended = suspended;
        call(v.path, QStringLiteral("setSuspended"), {suspended});
    }
    if (p.totalBytes != v.totalBytes) {
        v.totalBytes = p.totalBytes;
        call(v.path, QStringLiteral("setTotalAmount"), {qulonglong(p.totalBytes), QStringLiteral("bytes")});
    }
    if (p.filesTotal != v.totalFiles) {
        v.totalFiles = p.filesTotal;
        call(v.path, QStringLiteral("setTotalAmount"), {qulonglong(p.filesTotal), QStringLiteral("files")});
    }
    // Bytes on the device, never bytes handed to the page cache; the speed is the device's.
    call(v.path, QStringLiteral("setProcessedAmount"), {qulonglong(p.durableBytes), QStringLiteral("bytes")});
    call(v.path, QStringLiteral("setProcessedAmount"), {qulonglong(p.filesDone), QStringLiteral("files")});
    const qint64 total = qMax<qint64>(p.totalBytes, 1);
    // 100 only once the job has ended: a full count still waits for the final sync.
    call(v.path, QStringLiteral("setPercent"), {uint(qMin<qint64>(99, p.durableBytes * 100 / total))});
    call(v.path, QStringLiteral("setSpeed"), {qulonglong(qMax(0.0, p.deviceRate))});
}

bool PlasmaJobViews::onFinished(quint64 jobId, const End &end)
{
    auto it = views_.find(jobId);
    if (it == views_.end())
        return false;
    if (it->path.isEmpty()) { // the server has not answered yet, and may never: the window says it itself
        it->finished = true;
        it->end = end;
        return false;
    }
    if (end.cancelled) {
        // Plasma takes a view that ends with "cancelled by the user" (KIO's ERR_USER_CANCELED) away silently.
        call(it->path, QStringLiteral("setError"), {uint(kUserCanceled)});
    } else {
        if (!end.headline.isEmpty())
            call(it->path, QStringLiteral("setInfoMessage"), {end.headline});
        if (end.failure.isEmpty())
            call(it->path, QStringLiteral("setPercent"), {100u});
    }
    call(it->path, QStringLiteral("terminate"), {end.failure});
    views_.erase(it);
    return !end.cancelled;
}

void PlasmaJobViews::endAll(const QString &message)
{
    bool sent = false;
    // A copy of the keys: onFinished() takes each view off the map.
    const QList<quint64> ids = views_.keys();
    for (const quint64 id : ids) {
        sent = sent || !views_.value(id).path.isEmpty();
        onFinished(id, End {message, {}, false});
    }
    // This runs as the window goes away, and the process may end right after: the sends above are only queued.
    // One round trip to the bus itself, on the same connection, returns after they have all reached the bus,
    // which delivers in order. Views the server has not answered for are left to it: Plasma ends the views of
    // a program that leaves the bus.
    if (sent && bus_.isConnected()) {
        const QDBusMessage ping = QDBusMessage::createMethodCall(
            QStringLiteral("org.freedesktop.DBus"), QStringLiteral("/org/freedesktop/DBus"),
            QStringLiteral("org.freedesktop.DBus"), QStringLiteral("GetId"));
        bus_.call(ping, QDBus::Block, 1000);
    }
}

quint64 PlasmaJobViews::jobOf(const QString &path) const
{
    for (auto it = views_.cbegin(); it != views_.cend(); ++it)
        if (it->path == path)
            return it.key();
    return 0;
}

void PlasmaJobViews::onViewCancel()
{
    if (const quint64 id = jobOf(message().path()))
        Q_EMIT cancelRequested(id);
}

void PlasmaJobViews::onViewSuspend()
{
    if (const quint64 id = jobOf(message().path()))
        Q_EMIT suspendRequested(id);
}

void PlasmaJobViews::onViewResume()
{
    if (const quint64 id = jobOf(message().path()))
        Q_EMIT resumeRequested(id);
}

} // namespace SaneCopy
