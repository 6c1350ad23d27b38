// SPDX-License-Identifier: GPL-2.0-or-later
//
// PlasmaJobViews: each copy in Plasma's notification area, where Dolphin's copies show theirs, with the same
// honest numbers as the window: processed bytes are bytes on the device. It speaks the job view protocol KIO's
// own jobs use (org.kde.JobViewServer.requestView on org.kde.kuiserver, then org.kde.JobViewV2 on the returned
// path) over QtDBus, so no KDE Frameworks library is linked. Cancel, pause and resume pressed in Plasma come back as
// signals. Where no server answers (another desktop, no session bus), nothing is shown and nothing waits: every
// call is asynchronous.
#pragma once

#include "EngineBridge.h"

#include <QDBusConnection>
#include <QDBusContext>
#include <QHash>
#include <QObject>

namespace SaneCopy {

class PlasmaJobViews
    : public QObject
    , protected QDBusContext {
    Q_OBJECT
public:
    static QString serverService() { return QStringLiteral("org.kde.kuiserver"); }
    static QString serverPath() { return QStringLiteral("/JobViewServer"); }

    explicit PlasmaJobViews(QDBusConnection bus = QDBusConnection::sessionBus(), QObject *parent = nullptr);

    // A copy was queued: asks the server for a view of it.
    void addJob(quint64 jobId, const QString &source, const QString &destination);
    // The job view's path on the server, once it answered; empty before, or when there is no server.
    QString viewPath(quint64 jobId) const { return views_.value(jobId).path; }

public Q_SLOTS:
    void onProgress(const SaneCopy::JobProgress &progress);
    // |message| empty: it ended well or was cancelled; else what went wrong, which Plasma shows as an error.
    void onFinished(quint64 jobId, const QString &message);
    // Ends every view still open, with |message| (the window goes away with copies unfinished). Returns once
    // the bus has the messages (waiting up to 1 s), so they are not lost when the process ends at once.
    void endAll(const QString &message);

Q_SIGNALS:
    void cancelRequested(quint64 jobId);
    void suspendRequested(quint64 jobId);
    void resumeRequested(quint64 jobId);

private Q_SLOTS:
    // A view's button pressed in Plasma; QDBusContext says which view sent it.
    void onViewCancel();
    void onViewSuspend();
    void onViewResume();

private:
    struct View {
        QString path;          // empty until the server answered
        bool finished = false; // ended before the server answered: terminate as soon as it does
        QString endMessage;
        bool suspended = false;
        qint64 totalBytes = -1; // last sent, to send totals only when they change
        qint64 totalFiles = -1;
    };
    void call(const QString &path, const QString &method, const QVariantList &args);
    void viewReady(quint64 jobId, const QString &path);
    quint64 jobOf(const QString &path) const; // 0: none

    QDBusConnection bus_;
    QHash<quint64, View> views_;
};

} // namespace SaneCopy
