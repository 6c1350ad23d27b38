// SPDX-License-Identifier: GPL-2.0-or-later
//
// What a running copy shares with the outside world: the user's pause/resume/cancel, and the counters that
// progress snapshots are made from. Both are plain atomics: the copy checks the control once per chunk, and a
// ticker thread reads the counters without ever taking a lock the copy holds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace sanecopy {

enum class JobState : int { Queued, Running, Paused, Cancelling, Done, Failed, Cancelled };
const char *to_string(JobState state);

class JobControl {
public:
    void pause() { set_if_active(kPause); }
    void resume() { set_if_active(kRun); }
    void cancel()
    {
        request_.store(kCancel, std::memory_order_release);
        request_.notify_all();
    }
    // Stops the job as a crash would, but cleanly: big files' part files stay for a later run to resume
    // (JobSpec::resume), where a cancel removes them. For a front end that goes away with copies unfinished
    // (the window closed, the session ending).
    void interrupt()
    {
        keep_partial_.store(true, std::memory_order_release);
        cancel();
    }
    bool cancel_requested() const { return request_.load(std::memory_order_acquire) == kCancel; }
    // A sign of life from a step that moves none of the progress counters (reading a copy back), so the job is not
    // taken for stalled (stall_watch.h).
    void beat() const { beats_.fetch_add(1, std::memory_order_relaxed); }
    uint64_t beats() const { return beats_.load(std::memory_order_relaxed); }
    bool keeps_partial() const { return keep_partial_.load(std::memory_order_acquire); }
    bool pause_requested() const { return request_.load(std::memory_order_acquire) == kPause; }
    // Blocks while paused. Returns false when the job was cancelled meanwhile.
    bool wait_while_paused() const
    {
        int r;
        while ((r = request_.load(std::memory_order_acquire)) == kPause)
            request_.wait(kPause, std::memory_order_acquire);
        return r != kCancel;
    }

private:
    static constexpr int kRun = 0, kPause = 1, kCancel = 2;
    void set_if_active(int to)
    {
        int cur = request_.load();
        while (cur != kCancel && !request_.compare_exchange_weak(cur, to)) {
        }
        request_.notify_all();
    }
    std::atomic<int> request_ {kRun};
    std::atomic<bool> keep_partial_ {false};
    mutable std::atomic<uint64_t> beats_ {0};
};

// Written by the copying thread, read by anyone.
struct ProgressCounters {
    std::atomic<uint64_t> total_bytes {0};
    std::atomic<uint64_t> written_bytes {0}; // handed to the kernel
    std::atomic<uint64_t> durable_bytes {0}; // on the device: window waited for, or fdatasync returned
    // Of written and durable, what this copy counted without moving it: a resumed file's prefix that was on the
    // device already, a sparse file's holes. Progress includes it; a throughput chart must not.
    std::atomic<uint64_t> unwritten_bytes {0};
    std::atomic<uint64_t> files_done {0};
    std::atomic<uint64_t> files_total {0};
    std::atomic<double> device_rate {0};       // EWMA of durable bytes/s
    std::atomic<int64_t> own_dirty_bytes {-1}; // this copy's dirty + writeback pages (cachestat); -1: unknown
    std::atomic<JobState> state {JobState::Queued};
    std::atomic<bool> share {false}; // the destination is a network share (is_network_share)
    // The plan is still counting beside the copy (JobSpec::count_while_copying): the totals are what it has
    // counted so far, so a percentage or a time left would be a guess.
    std::atomic<bool> counting {false};

    void set_current_file(std::string path)
    {
        std::lock_guard lock(current_mutex_);
        current_file_ = std::move(path);
    }
    std::string current_file() const
    {
        std::lock_guard lock(current_mutex_);
        return current_file_;
    }

private:
    mutable std::mutex current_mutex_; // only for the string; taken once per file, never per chunk
    std::string current_file_;
};

// Monotonic seconds, the one clock the engine reads.
inline double monotonic_seconds()
{
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

} // namespace sanecopy
