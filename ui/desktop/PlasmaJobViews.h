// SPDX-License-Identifier: GPL-2.0-or-later
//
// PlasmaJobViews: each copy in Plasma's notification area, where Dolphin's copies show theirs, with the same
// honest numbers as the window: processed bytes are bytes on the device. It speaks the job view protocol KIO's
// own jobs use (org.kde.JobViewServer.requestView on org.kde.kuiserver, then org.kde.JobViewV2 on the returned
// path) over QtDBus, so no KDE Frameworks library is linked. Cancel, pause and resume pressed in Plasma come back as
// signals. Where no server answers (another desktop, no session bus), nothing is shown and nothing waits: every
// call is asynchronous. A copy's end is one notification: Plasma's own for its finished view, carrying the
// window's headline ("Safe to unplug"); the window notifies by itself only where no view shows the end.
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

    // A copy was queued: asks the server for a view of it. As Dolphin's copies do, |source| is what is copied (a
    // path, or "a.jpg and 2 more") and |destination| where it goes: for one item the path it gets there, whose
    // name Plasma shows ("ubuntu.iso to STICK"), else the folder.
    void addJob(quint64 jobId, const QString &source, const QString &destination);

    // How a copy ended, for its view.
    struct End {
        QString failure;  // what went wrong, which Plasma shows as an error; empty when it ended well or was cancelled
        QString headline; // the view's title at its end ("Safe to unplug"), which Plasma's notification carries
        bool cancelled = false; // the view goes without a notification, as a cancelled Dolphin copy's does
    };
    // The job view's path on the server, once it answered; empty before, or when there is no server.
    QString viewPath(quint64 jobId) const { return views_.value(jobId).path; }

public Q_SLOTS:
    void onProgress(const SaneCopy::JobProgress &progress);
    // Ends the copy's view. True when Plasma's notification of it shows the end (a view the server answered for,
    // not cancelled): the window then sends none of its own.
    bool onFinished(quint64 jobId, const SaneCopy::PlasmaJobViews::End &end);
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
        End end;
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
