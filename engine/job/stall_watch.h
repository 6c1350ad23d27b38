// SPDX-License-Identifier: GPL-2.0-or-later
//
// How long a running copy has not moved. A share whose link stalls, a stick that stops answering: the copy's
// thread then waits in the kernel (a write, an fdatasync) and no counter changes, while the rate and the ETA
// would go on showing what they last were. Progress snapshots carry the time since anything last moved, once it
// is long enough to say so (kStallNotice), so the front ends say "not responding" instead.
//
// Moving is any of: a byte handed over (not onto a share: copy_motion), a byte made durable, a file finished, a
// beat (JobControl::beat: reading a copy back, which changes none of the counters; a file skipped or failed; the
// plan finished; a file created on a share; a share's window synced, before the copy's thread counts its bytes).
// Nothing counts as a stall before the plan is done (it walks a big tree first), nor while the job is not running
// (paused, queued, finished).
#pragma once

#include "job_control.h"

#include <algorithm>
#include <cstdint>

namespace sanecopy {

// A copy that has not moved for this long is reported as stalled. A stick's window is an eighth of a second of
// device time and a share's chunk half a second, so five seconds without any of them is not the device's normal
// pace. What is in flight at once (a group of small files, the last sync) may take longer on a slow device: the
// snapshot then waits three times what those bytes take at the measured rate (Job::snapshot).
inline constexpr double kStallNotice = 5.0;
// And however much is in flight, a copy still standing after this long is said to be stalled: a user waiting on a
// dead link must hear it within seconds (three times what 20 MiB in flight take on a 100 Mbit/s share is longer).
inline constexpr double kStallNoticeMost = 7.0;

struct CopyMotion {
    uint64_t written = 0;
    uint64_t durable = 0;
    uint64_t files_done = 0;
    uint64_t beats = 0;
    bool operator==(const CopyMotion &) const = default;
};

// Pure: fed what the counters say and when, it tells how long they have stood still.
class StallWatch {
public:
    // Seconds since the copy last moved, as of |now|; 0 while it moves, before it first moved and whenever
    // |state| is not Running (a pause or a queue wait is no stall, and the clock starts again after one).
    double observe(JobState state, const CopyMotion &motion, double now)
    {
        if (state != JobState::Running) {
            moved_at_ = -1;
            last_ = motion;
            return 0;
        }
        if (!(motion == last_) || moved_at_ < 0) {
            const bool started = motion.written || motion.durable || motion.files_done || motion.beats;
            last_ = motion;
            moved_at_ = started ? now : -1;
            return 0;
        }
        return now - moved_at_;
    }

private:
    CopyMotion last_;
    double moved_at_ = -1; // when the counters last changed; -1: not yet started (or not running)
};

// What counts as motion. Onto a share, bytes handed over are not: the client's cache takes them for seconds after
// the link stopped (its writeback throttle lets the copy write on in steps), so a dead link was said to be one 12 s
// after it went instead of 7 (tests/vm/shares.py). There only what the server confirms, a file finished or a beat
// moves the copy.
inline CopyMotion copy_motion(bool share, uint64_t written, uint64_t durable, uint64_t files_done, uint64_t beats)
{
    return {share ? 0 : written, durable, files_done, beats};
}

// How long a copy may stand still before it is said to be stalled: what is in flight (written, not yet durable)
// takes its time at the measured |rate| (a group of small files synced at once, the last syncfs), so three times
// that, within [kStallNotice, kStallNoticeMost].
inline double stall_notice_after(uint64_t written, uint64_t durable, double rate)
{
    const double in_flight = written > durable ? double(written - durable) : 0;
    const double expected = rate > 0 ? in_flight / rate : 0;
    return std::clamp(3 * expected, kStallNotice, kStallNoticeMost);
}

// The progress counters' motion, watched: the seconds the copy has stood still once that is a stall, else 0.
inline double stalled_seconds(StallWatch &watch, const ProgressCounters &c, uint64_t beats, double now)
{
    const uint64_t written = c.written_bytes.load(), durable = c.durable_bytes.load();
    const double still =
        watch.observe(c.state.load(), copy_motion(c.share.load(), written, durable, c.files_done.load(), beats), now);
    return still >= stall_notice_after(written, durable, c.device_rate.load()) ? still : 0;
}

} // namespace sanecopy
