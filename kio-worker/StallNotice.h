// SPDX-License-Identifier: GPL-2.0-or-later
//
// Tells the desktop that a copy through the worker stands still, in a notification of its own, and withdraws it
// once the copy has moved again for a while. The worker's infoMessage would be the natural place, but KIO does
// not hand it on to Plasma's popup: KCompositeJob passes it up naming the worker's own job, for which the job
// tracker has no view (test_kio_worker.py, job_view_stall). Without this a Dolphin copy onto a stick or share that
// stopped answering shows only a frozen bar.
//
// StallNotice decides when; the worker's desktopNotifications() says it, with two calls of
// org.freedesktop.Notifications (Notify, CloseNotification) made directly with QtDBus, as the window's own
// notifications are (ui/desktop/Notifier.cpp): KNotification would bring a library and a .notifyrc into the
// worker for them. The notification stays on the screen for kExpirySeconds, longer than nearly every stall, and
// is not renewed: one the user closed stays closed. A worker that KIO ends during a stall (an application that
// went away: ExitCleanup.h) can't withdraw it, so it must expire by itself; after that it is only in the desktop's
// list.
#pragma once

#include <QString>

#include <functional>

namespace SaneCopyKio {

class StallNotice {
public:
    struct Desktop {
        // Shows the notification of a stall (of a share, or of a device) for |expirySeconds|; returns its id, 0
        // if none was shown.
        std::function<unsigned(bool share, int expirySeconds)> show;
        std::function<void(unsigned id)> close;
    };

    explicit StallNotice(Desktop desktop);
    ~StallNotice(); // withdraws a notification still shown
    StallNotice(const StallNotice &) = delete;
    StallNotice &operator=(const StallNotice &) = delete;

    // Called with each progress tick, |now| in monotonic seconds: shows the notification when a stall begins, and
    // withdraws it once the copy has moved for kSettledSeconds. A device that answers only now and then (each
    // answer ends a stall, the next one begins a few seconds later) keeps one notification, not one a stall.
    void update(bool stalled, bool share, double now);
    // At once: the copy ended or was cancelled.
    void withdraw();

    static constexpr double kSettledSeconds = 10;
    static constexpr int kExpirySeconds = 600;

private:
    Desktop desktop_;
    bool shown_ = false;      // asked for this stall, whether or not a server showed it
    double movingSince_ = -1; // when the copy moved again after the stall, -1 while it stands still
    unsigned id_ = 0;         // the shown notification's, 0 when none is shown
};

// The desktop's notification server on the session bus, for a copy of |what| (a file as the user knows it,
// displayPath()). In the worker itself (StallNotification.cpp), where its words are translated.
StallNotice::Desktop desktopNotifications(const QString &what);

} // namespace SaneCopyKio
