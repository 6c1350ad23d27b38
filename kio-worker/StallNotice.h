// SPDX-License-Identifier: GPL-2.0-or-later
//
// Tells the desktop that a copy through the worker stands still, in a notification of its own, and withdraws it
// when the copy moves again. The worker's infoMessage would be the natural place, but KIO does not hand it on to
// Plasma's popup: KCompositeJob passes it up naming the worker's own job, for which the job tracker has no view
// (test_kio_worker.py, job_view_stall). Without this a Dolphin copy onto a stick or share that stopped answering
// shows only a frozen bar.
//
// It is two calls of org.freedesktop.Notifications (Notify, CloseNotification) made directly with QtDBus, as the
// window's own notifications are (ui/desktop/Notifier.cpp): KNotification would bring a library and a .notifyrc
// into the worker for them.
#pragma once

#include <QString>

namespace SaneCopyKio {

class StallNotice {
public:
    // |what|: the file being copied, as the user knows it (displayPath()).
    explicit StallNotice(QString what);
    ~StallNotice(); // withdraws a notification still shown
    StallNotice(const StallNotice &) = delete;
    StallNotice &operator=(const StallNotice &) = delete;

    // Called with each progress tick: shows the notification once when a stall begins, withdraws it when it ends.
    void update(bool stalled, bool share);

private:
    void withdraw();

    QString what_;
    bool stalled_ = false;
    unsigned id_ = 0; // the shown notification's, 0 when none is shown
};

} // namespace SaneCopyKio
