// SPDX-License-Identifier: GPL-2.0-or-later
#include "job_queue.h"

#include "chunk_controller.h"
#include "destination.h"
#include "device_probe.h"
#include "fd.h"
#include "sys.h"

#include <algorithm>
#include <cstdlib>
#include <sys/file.h>
#include <thread>
#include <unistd.h>
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

const char *to_string(JobState state)
{
    switch (state) {
    case JobState::Queued:
        return "queued";
    case JobState::Running:
        return "running";
    case JobState::Paused:
        return "paused";
    case JobState::Cancelling:
        return "cancelling";
    case JobState::Done:
        return "done";
    case JobState::Failed:
        return "failed";
    case JobState::Cancelled:
        return "cancelled";
    }
    return "?";
}

ProgressSnapshot Job::snapshot() const
{
    ProgressSnapshot s;
    s.job_id = id_;
    s.state = counters_.state.load();
    s.total_bytes = counters_.total_bytes.load();
    s.durable_bytes = counters_.durable_bytes.load();
    s.unwritten_bytes = counters_.unwritten_bytes.load();
    s.written_bytes = counters_.written_bytes.load();
    s.files_done = counters_.files_done.load();
    s.files_total = counters_.files_total.load();
    s.current_file = counters_.current_file();
    s.device_bytes_per_sec = counters_.device_rate.load();
    s.own_dirty_bytes = counters_.own_dirty_bytes.load();
    s.counting = counters_.counting.load();
    s.eta_seconds = s.counting ? -1
                               : eta_seconds(s.total_bytes > s.durable_bytes ? s.total_bytes - s.durable_bytes : 0,
                                             s.device_bytes_per_sec);
    const double started = started_.load();
    const double now = monotonic_seconds();
    s.elapsed_seconds = started > 0 ? now - started : 0;
    s.share = counters_.share.load();
    double still;
    {
        std::lock_guard lock(stall_mutex_);
        still = stall_.observe(
            s.state, copy_motion(s.share, s.written_bytes, s.durable_bytes, s.files_done, control_.beats()), now);
    }
    if (still >= stall_notice_after(s.written_bytes, s.durable_bytes, s.device_bytes_per_sec)) {
        s.stalled_seconds = still;
        s.device_bytes_per_sec = 0;
        s.eta_seconds = -1;
    }
    return s;
}

JobSummary Job::wait() const
{
    std::unique_lock lock(done_mutex_);
    done_cv_.wait(lock, [this] { return finished_; });
    return summary_;
}

std::string JobQueue::default_lane(const JobSpec &spec)
{
    // The folder that receives the copy: DEST itself when it is a folder, else its parent. Its type and device
    // are all a lane needs, and a share's client knows both without asking the server.
    std::string folder = spec.destination;
    struct stat st {};
    if (sys().fstatat_cached(AT_FDCWD, folder.c_str(), &st, 0) != 0 || !S_ISDIR(st.st_mode))
        folder = split_path(folder).first;
    auto key = device_key_of(folder);
    if (key.ok())
        return key.value();
    return "path:" + folder;
}

JobQueue::JobQueue(double tick_seconds, LaneOf lane_of)
    : tick_seconds_(tick_seconds), lane_of_(lane_of ? std::move(lane_of) : LaneOf(&JobQueue::default_lane))
{
    ticker_ = std::thread([this] { tick_loop(); });
}

JobQueue::~JobQueue()
{
    {
        std::lock_guard lock(mutex_);
        for (auto &job : active_)
            job->interrupt();
    }
    wait_idle();
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    tick_cv_.notify_all();
    ticker_.join();
    for (auto &t : finished_threads_)
        t.join();
}

std::shared_ptr<Job> JobQueue::submit(JobSpec spec, std::shared_ptr<JobObserver> observer)
{
    // Probing the device may touch the disk: done before the lock.
    const std::string key = lane_of_(spec);
    std::lock_guard lock(mutex_);
    auto job = std::make_shared<Job>(next_id_++, std::move(spec), std::move(observer));
    active_.push_back(job);
    Lane &lane = lanes_[key];
    lane.jobs.push_back(job);
    if (!lane.running) {
        if (lane.thread.joinable())
            finished_threads_.push_back(std::move(lane.thread));
        lane.running = true;
        lane.thread = std::thread([this, key] { run_lane(key); });
    }
    return job;
}

std::string JobQueue::lock_folder()
{
    const char *runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime && *runtime == '/')
        return std::string(runtime) + "/sanecopy";
    return "/tmp/sanecopy-" + std::to_string(::getuid());
}

// Holds an exclusive flock on <lock folder>/<lane key>.lock. The lock goes with the descriptor, also when the
// process dies, so a crashed copier never blocks the next one. Failing to make the lock file costs only the
// cross-process guarantee: the copy itself goes ahead.
UniqueFd lock_device(const std::string &key, const JobControl &control)
{
    // No device was found for the destination (it doesn't exist, the job will fail): nothing to lock, and no
    // lock file left behind for a path that names no device.
    if (key.rfind("path:", 0) == 0)
        return {};
    const std::string folder = JobQueue::lock_folder();
    if (sys().mkdirat(AT_FDCWD, folder.c_str(), 0700) < 0 && errno != EEXIST)
        return {};
    struct stat st {};
    // A folder of ours only: in /tmp, someone else could have made it first.
    if (sys().fstatat(AT_FDCWD, folder.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != ::getuid())
        return {};
    std::string name = key;
    for (char &c : name)
        if (c == '/')
            c = '_';
    const std::string path = folder + "/" + name + ".lock";
    UniqueFd fd(sys().openat(AT_FDCWD, path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd)
        return {};
    // Polled rather than blocking, so a cancelled job stops waiting.
    while (sys().flock(fd.get(), LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return {};
        if (control.cancel_requested())
            return {};
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return fd;
}

void JobQueue::run_lane(const std::string &key)
{
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::lock_guard lock(mutex_);
            Lane &lane = lanes_[key];
            if (lane.jobs.empty()) {
                lane.running = false;
                idle_cv_.notify_all();
                return;
            }
            job = lane.jobs.front();
            lane.jobs.pop_front();
        }
        // Another process (a second Dolphin job, a sanecp in a terminal) may be writing to the same device: wait
        // for its lane lock, still Queued, and give up if the job is cancelled meanwhile.
        UniqueFd device_lock = lock_device(key, job->control_);
        job->started_ = monotonic_seconds();
        JobSummary summary;
        if (job->control_.cancel_requested()) {
            summary.cancelled = true;
            job->counters_.state.store(JobState::Cancelled);
        } else {
            JobEventSink sink = [&job](const JobEvent &e) {
                if (job->observer_)
                    job->observer_->on_event(job->id_, e);
            };
            summary = run_copy_job(job->spec_, job->control_, job->counters_, sink);
        }
        // Whatever ended it, the job needs no source page any more: the group's others stop keeping them for it.
        if (job->spec_.source_share)
            job->spec_.source_share->leave(job->spec_.share_member);
        // A last snapshot, so observers always see the final numbers.
        if (job->observer_) {
            job->observer_->on_progress(job->snapshot());
            job->observer_->on_finished(job->id_, summary);
        }
        {
            std::lock_guard lock(job->done_mutex_);
            job->summary_ = summary;
            job->finished_ = true;
        }
        job->done_cv_.notify_all();
        std::lock_guard lock(mutex_);
        active_.erase(std::remove(active_.begin(), active_.end(), job), active_.end());
    }
}

void JobQueue::wait_idle()
{
    std::unique_lock lock(mutex_);
    idle_cv_.wait(lock, [this] {
        return std::none_of(lanes_.begin(), lanes_.end(), [](const auto &kv) { return kv.second.running; });
    });
    for (auto &[key, lane] : lanes_)
        if (lane.thread.joinable())
            finished_threads_.push_back(std::move(lane.thread));
    for (auto &t : finished_threads_)
        t.join();
    finished_threads_.clear();
}

void JobQueue::tick_loop()
{
    std::unique_lock lock(mutex_);
    const auto period = std::chrono::duration<double>(tick_seconds_);
    while (!stopping_) {
        tick_cv_.wait_for(lock, period, [this] { return stopping_; });
        if (stopping_)
            break;
        std::vector<std::shared_ptr<Job>> running;
        for (auto &job : active_) {
            const JobState s = job->state();
            if (s == JobState::Running || s == JobState::Paused)
                running.push_back(job);
        }
        lock.unlock();
        for (auto &job : running)
            if (job->observer_)
                job->observer_->on_progress(job->snapshot());
        lock.lock();
    }
}

} // namespace sanecopy
