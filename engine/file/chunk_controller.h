// SPDX-License-Identifier: GPL-2.0-or-later
//
// The adaptive chunk controller: a pure function of measurements, with no syscalls and no clock of its own,
// so tests drive it with a fake clock.
//
// A chunk is what one sendfile/copy_file_range call moves before its writeback is started; a window is a chunk
// whose writeback is in flight. The device stays busy as long as at least one window is queued behind the one it
// is writing, and the dirty memory this copy holds is at most (windows + 1) chunks: the windows plus the chunk
// being handed over. So the controller sizes a chunk to a fixed slice of device time (big enough to amortise
// the syscalls, small enough that progress moves and cancel is quick) and fits as many windows as the memory
// budget allows.
#pragma once

#include "units.h"

#include <cstdint>

namespace sanecopy {

struct ChunkLimits {
    double target_seconds = 0.125; // device time per chunk: the 0.1–0.25 s band, low end
    uint64_t min_chunk = 256 * kKiB;
    uint64_t max_chunk = 8 * kMiB;
    uint64_t start_chunk = kMiB;        // before the first measurement
    uint64_t max_in_flight = 24 * kMiB; // windows + the chunk being sent; well under 32 MiB
    unsigned min_windows = 2;           // fewer than two and the device idles between chunks
    unsigned max_windows = 8;
    uint64_t align = 64 * kKiB; // chunk sizes stay page- and extent-friendly
    // The device's largest write request (DeviceInfo::max_request_bytes), 0 when unknown. A chunk of at least
    // that is a whole number of them, the nearest within the limits: a window's writeback then ends on a full
    // request, not a short one (a chunk of 2.06 MiB went to a USB stick as 1 + 1 + 0.06 MiB, a third more
    // requests than dd's for the same file). checked() makes it a multiple of align too: 120 KiB, what
    // usb-storage gives many USB 2 sticks, becomes 960 KiB, eight whole requests.
    uint64_t request = 0;

    // These limits made consistent, so every plan stays inside them: align at least a page; min_chunk a
    // multiple of align; max_chunk and start_chunk within [min_chunk, ...]; at least one window and
    // max_windows >= min_windows; a budget that holds min_windows + 1 of the smallest chunks; a positive
    // target; request 0, or the least multiple of itself (rounded to pages) and align. Values that already fit
    // are kept as they are. Pure.
    ChunkLimits checked() const;
};

// Device time per chunk onto a network share, where every sync costs round trips (engine/job/run_job.cpp).
inline constexpr double kShareChunkSeconds = 0.5;
// Windows onto a network share: as many as the budget's bytes hold of chunks down to 1 MiB. A share's syncs return
// in bursts (one after 1.6 s, behind all that was sent meanwhile, the next at once), so the rate measured between
// them swings, and the chunks planned from it with it (1.4 to 8 MiB onto NFS over 100 Mbit/s): eight windows of
// the smaller ones held 11-17 MiB of the 24 MiB the budget allows, and the copy waited for a sync sooner and
// more often, each wait ending with the link run dry (tests/vm/shares.py, share-trace-nfs4).
inline constexpr unsigned kShareMaxWindows = 24;

// Onto a FUSE share (sshfs) each sync holds the file's lock until every write before it is answered, so the link
// runs dry once per sync: there a chunk is two seconds of link time, up to 32 MiB. Its bytes go by O_DIRECT
// (CopyRoute::direct_writes) and leave no dirty pages behind, so the budget that bounds dirty memory elsewhere
// only bounds how far the copy runs ahead of what the server has answered.
inline constexpr ChunkLimits share_over_fuse_limits()
{
    ChunkLimits l;
    l.target_seconds = 2.0;
    l.max_chunk = 32 * kMiB;
    l.max_in_flight = 96 * kMiB;
    return l;
}

struct ChunkPlan {
    uint64_t chunk_bytes = 0;
    unsigned windows = 0;
    uint64_t in_flight_bytes() const { return (uint64_t(windows) + 1) * chunk_bytes; }
};

// The next chunk size and window count for a device that makes |device_bytes_per_sec| durable
// (0 or less: not measured yet).
ChunkPlan plan_chunks(double device_bytes_per_sec, const ChunkLimits &limits = {});

// An exponentially weighted rate of a growing byte count, fed with (time, total) samples. Time is in seconds
// on any monotonic clock. The weight of the past decays with |tau_seconds|, so a change of device speed shows
// within a few tau, and a single late window does not swing the estimate.
class RateMeter {
public:
    explicit RateMeter(double tau_seconds = 1.0, double min_interval = 0.05)
        : tau_(tau_seconds), min_interval_(min_interval)
    {}

    // The first rate is measured over at least |bytes| (0: over the first sample), later ones as they come.
    void measure_first_over(uint64_t bytes) { first_bytes_ = bytes; }

    void start(double now, uint64_t total);
    void sample(double now, uint64_t total);
    // Forget the time in between (after a pause): the next sample measures from |now|.
    void restart_clock(double now, uint64_t total) { start(now, total); }

    double rate() const { return rate_; }
    bool measured() const { return measured_; }

private:
    double tau_;
    double min_interval_;
    uint64_t first_bytes_ = 0;
    double last_time_ = 0;
    uint64_t last_total_ = 0;
    double rate_ = 0;
    bool started_ = false;
    bool measured_ = false;
};

// Seconds left at |rate| for |remaining| bytes; negative when the rate is unknown.
double eta_seconds(uint64_t remaining, double rate);

} // namespace sanecopy
