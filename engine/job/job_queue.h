// SPDX-License-Identifier: GPL-2.0-or-later
//
// The job queue: jobs run on worker threads, one lane per destination device. A lane runs its jobs one after
// another (two writers on one stick only make both slower and fragment the files); lanes run in parallel.
// A ticker thread sends each running job's progress snapshot to its observer at a fixed rate (4 Hz or more),
// whatever the copy thread is blocked in.
#pragma once

#include "copy_job.h"
#include "fd.h"
#include "job_control.h"
#include "stall_watch.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sanecopy {

struct ProgressSnapshot {
    uint64_t job_id = 0;
    JobState state = JobState::Queued;
    uint64_t total_bytes = 0;
    uint64_t durable_bytes = 0;
    uint64_t written_bytes = 0;
    uint64_t unwritten_bytes = 0; // counted in both above without being moved (ProgressCounters)
    uint64_t files_done = 0;
    uint64_t files_total = 0;
    std::string current_file;
    double device_bytes_per_sec = 0;
    int64_t own_dirty_bytes = -1; // -1: unknown (no cachestat, or nothing written yet)
    double eta_seconds = -1;      // unknown
    double elapsed_seconds = 0;
    // How long the running copy has not moved, once that is kStallNotice or more (stall_watch.h); else 0. While
    // it is stalled the rate is 0 and the ETA unknown, not what they were before.
    double stalled_seconds = 0;
    bool share = false; // the destination is a network share: "not responding" is about the share, not a device
    // The totals are still being counted (ProgressCounters::counting): no percentage, and the ETA is unknown.
    bool counting = false;
};

// Called from the engine's threads: from the ticker for progress, from the job's lane for events.
// Implementations hand them on (the GUI queues them to its own thread) and return quickly.
class JobObserver {
public:
    virtual ~JobObserver() = default;
    virtual void on_progress(const ProgressSnapshot &) {}
    virtual void on_event(uint64_t /*job_id*/, const JobEvent &) {}
    virtual void on_finished(uint64_t /*job_id*/, const JobSummary &) {}
};

class Job {
public:
    Job(uint64_t id, JobSpec spec, std::shared_ptr<JobObserver> observer)
        : id_(id), spec_(std::move(spec)), observer_(std::move(observer))
    {}
    uint64_t id() const { return id_; }
    const JobSpec &spec() const { return spec_; }
    void pause() { control_.pause(); }
    void resume() { control_.resume(); }
    void cancel() { control_.cancel(); }
    void interrupt() { control_.interrupt(); } // JobControl::interrupt
    JobState state() const { return counters_.state.load(); }
    ProgressSnapshot snapshot() const;
    // Blocks until the job has finished; returns its summary.
    JobSummary wait() const;

private:
    friend class JobQueue;
    const uint64_t id_;
    const JobSpec spec_;
    std::shared_ptr<JobObserver> observer_;
    JobControl control_;
    ProgressCounters counters_;
    std::atomic<double> started_ {0}; // written by the lane, read by snapshot() from any thread
    mutable std::mutex stall_mutex_;  // snapshot() may be called from more than one thread
    mutable StallWatch stall_;
    mutable std::mutex done_mutex_;
    mutable std::condition_variable done_cv_;
    bool finished_ = false;
    JobSummary summary_;
};

// Holds the cross-process lock of a device (a lane key, see JobQueue::default_lane) until the returned
// descriptor closes; waits while another process holds it, and returns an invalid descriptor at once when
// |control| is cancelled meanwhile or the lock file can't be made (then only the guarantee is lost, not the copy).
// JobQueue takes it for every job; code that runs run_copy_job() or a StreamWriter itself must take it too.
UniqueFd lock_device(const std::string &lane_key, const JobControl &control);

class JobQueue {
public:
    // Which lane a job runs in. The default probes the destination's device (DeviceInfo::device_key()).
    using LaneOf = std::function<std::string(const JobSpec &)>;

    explicit JobQueue(double tick_seconds = 0.2, LaneOf lane_of = {});
    // Interrupts what is still running or queued (JobControl::interrupt: big files' part files stay for a
    // resume) and waits for the lanes.
    ~JobQueue();
    JobQueue(const JobQueue &) = delete;
    JobQueue &operator=(const JobQueue &) = delete;

    std::shared_ptr<Job> submit(JobSpec spec, std::shared_ptr<JobObserver> observer = {});
    // Blocks until no job is queued or running.
    void wait_idle();

    static std::string default_lane(const JobSpec &spec);

    // The folder of the per-device lock files that extend "one writer per device" across processes (the KIO
    // worker runs one process per Dolphin job): $XDG_RUNTIME_DIR/sanecopy, else /tmp/sanecopy-<uid>.
    static std::string lock_folder();

private:
    struct Lane {
        std::deque<std::shared_ptr<Job>> jobs;
        std::thread thread;
        bool running = false;
    };
    void run_lane(const std::string &key);
    void tick_loop();

    const double tick_seconds_;
    LaneOf lane_of_;
    std::mutex mutex_;
    std::condition_variable idle_cv_;
    std::condition_variable tick_cv_;
    std::map<std::string, Lane> lanes_;
    std::vector<std::shared_ptr<Job>> active_;
    std::vector<std::thread> finished_threads_;
    uint64_t next_id_ = 1;
    bool stopping_ = false;
    std::thread ticker_;
};

} // namespace sanecopy
