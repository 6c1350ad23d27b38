// SPDX-License-Identifier: GPL-2.0-or-later
//
// The job queue: progress cadence, pause/resume/cancel, one writer per device and devices in parallel. Copies
// are slowed down through the syscall seam so there is time to watch them; every wait is on a condition with a
// deadline, never a bare sleep.
#include "catch.h"

#include "fault_syscalls.h"
#include "job_helpers.h"
#include "job_queue.h"
#include "test_support.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;
using namespace std::chrono_literals;

namespace {
constexpr uint64_t MiB = 1024 * 1024;

struct Recorder : JobObserver {
    std::mutex m;
    std::condition_variable cv;
    std::vector<ProgressSnapshot> progress;
    std::vector<JobEvent> events;
    bool finished = false;
    JobSummary summary;
    double first_running = 0, finished_at = 0;

    void on_progress(const ProgressSnapshot &s) override
    {
        std::lock_guard lock(m);
        progress.push_back(s);
        if (s.state == JobState::Running && first_running == 0)
            first_running = monotonic_seconds();
        cv.notify_all();
    }
    void on_event(uint64_t, const JobEvent &e) override
    {
        std::lock_guard lock(m);
        events.push_back(e);
    }
    void on_finished(uint64_t, const JobSummary &s) override
    {
        std::lock_guard lock(m);
        finished = true;
        summary = s;
        finished_at = monotonic_seconds();
        cv.notify_all();
    }
    template <typename Pred>
    bool wait_for(Pred pred, double seconds = 20)
    {
        std::unique_lock lock(m);
        return cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return pred(); });
    }
};

// A 24 MiB file in a folder of its own, copied onto a slow device: about 25 MB/s (128 KiB every 5 ms).
struct SlowCopy {
    // Written before the seam is slowed.
    struct Source {
        explicit Source(const TempDir &t) { write_pattern_file(t / "src", 24 * MiB); }
    };
    TempDir t;
    Source source {t};
    SlowSeam slow {128 * 1024, 5ms};
    FaultSyscalls &fs = slow.fs;
    std::shared_ptr<Recorder> rec = std::make_shared<Recorder>();
};

// Two 8 MiB files, a and b, for two jobs onto the same slow device as SlowCopy's.
struct SlowPair {
    struct Sources {
        explicit Sources(const TempDir &t)
        {
            write_pattern_file(t / "a", 8 * MiB, 1);
            write_pattern_file(t / "b", 8 * MiB, 2);
        }
    };
    TempDir t;
    Sources sources {t};
    SlowSeam slow {128 * 1024, 5ms};
    FaultSyscalls &fs = slow.fs;
};

} // namespace

TEST_CASE_METHOD(SlowCopy, "job queue: progress snapshots arrive at least 4 times a second and end at the full size")
{
    {
        JobQueue queue(0.2);
        auto job = queue.submit(spec_of({t / "src"}, t / "dst"), rec);
        REQUIRE(job->wait().ok());
    }
    REQUIRE(rec->finished);
    REQUIRE(rec->progress.size() >= 2);
    const double seconds = rec->progress.back().elapsed_seconds;
    REQUIRE(seconds > 0.5); // the slow device made it last
    CHECK(double(rec->progress.size()) / seconds >= 4.0);
    CHECK(rec->progress.back().durable_bytes == 24 * MiB);
    CHECK(rec->progress.back().total_bytes == 24 * MiB);
    CHECK(rec->progress.back().files_done == 1);
    // Durable never runs ahead of what was handed to the kernel, and never goes backwards.
    uint64_t last = 0;
    for (const auto &p : rec->progress) {
        CHECK(p.durable_bytes <= p.written_bytes);
        CHECK(p.durable_bytes >= last);
        last = p.durable_bytes;
    }
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE_METHOD(SlowCopy, "job queue: the device rate and ETA come from durable bytes")
{
    JobQueue queue(0.1);
    auto job = queue.submit(spec_of({t / "src"}, t / "dst"), rec);
    REQUIRE(rec->wait_for([&] {
        return !rec->progress.empty() && rec->progress.back().device_bytes_per_sec > 0 &&
               rec->progress.back().eta_seconds > 0;
    }));
    ProgressSnapshot mid;
    {
        std::lock_guard lock(rec->m);
        mid = rec->progress.back();
    }
    CHECK(mid.device_bytes_per_sec < 1e9); // the slowed-down device, not the page cache's speed
    const double expected = double(mid.total_bytes - mid.durable_bytes) / mid.device_bytes_per_sec;
    CHECK(mid.eta_seconds == Approx(expected).epsilon(0.01));
    job->cancel();
    job->wait();
}

TEST_CASE_METHOD(SlowCopy, "job queue: pause stops the copy at a chunk boundary, resume finishes it")
{
    JobQueue queue(0.05);
    auto job = queue.submit(spec_of({t / "src"}, t / "dst"), rec);
    REQUIRE(rec->wait_for([&] { return !rec->progress.empty() && rec->progress.back().written_bytes > 0; }));
    job->pause();
    REQUIRE(rec->wait_for([&] { return !rec->progress.empty() && rec->progress.back().state == JobState::Paused; }));
    const uint64_t moved_at_pause = fs.moved.load();
    // While paused, snapshots keep coming and no byte moves.
    const size_t seen = rec->progress.size();
    REQUIRE(rec->wait_for([&] { return rec->progress.size() >= seen + 3; }));
    CHECK(fs.moved.load() == moved_at_pause);
    {
        std::lock_guard lock(rec->m);
        // Paused means the device caught up: everything handed over is on it.
        CHECK(rec->progress.back().durable_bytes == rec->progress.back().written_bytes);
    }
    job->resume();
    REQUIRE(job->wait().ok());
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE("job queue: cancel removes the partial file and reports cancelled")
{
    TempDir t;
    write_pattern_file(t / "src", 24 * MiB);
    ::mkdir((t / "out").c_str(), 0755);
    SlowSeam slow(128 * 1024, 5ms); // about 25 MB/s
    auto rec = std::make_shared<Recorder>();
    JobQueue queue(0.05);
    auto job = queue.submit(spec_of({t / "src"}, t / "out"), rec);
    REQUIRE(rec->wait_for([&] { return !rec->progress.empty() && rec->progress.back().written_bytes > 0; }));
    job->cancel();
    JobSummary summary = job->wait();
    CHECK(summary.cancelled);
    CHECK(job->state() == JobState::Cancelled);
    CHECK(list_tree(t / "out") == ".\tdir\n");
}

TEST_CASE_METHOD(SlowPair, "job queue: jobs to one device run one after another")
{
    auto ra = std::make_shared<Recorder>(), rb = std::make_shared<Recorder>();
    const std::string lane = "test-stick-" + std::to_string(::getpid());
    JobQueue queue(0.05, [lane](const JobSpec &) { return lane; });
    auto ja = queue.submit(spec_of({t / "a"}, t / "a.copy"), ra);
    auto jb = queue.submit(spec_of({t / "b"}, t / "b.copy"), rb);
    REQUIRE(ja->wait().ok());
    REQUIRE(jb->wait().ok());
    CHECK(fs.max_concurrent_data_calls == 1);
    REQUIRE(rb->first_running > 0);
    CHECK(rb->first_running >= ra->finished_at);
    CHECK(same_bytes(t / "b", t / "b.copy"));
    ::unlink((JobQueue::lock_folder() + "/" + lane + ".lock").c_str());
}

TEST_CASE_METHOD(SlowPair, "job queue: jobs to different devices run at the same time")
{
    auto ra = std::make_shared<Recorder>(), rb = std::make_shared<Recorder>();
    const std::string lane = "test-device-" + std::to_string(::getpid()) + "-";
    JobQueue queue(0.05,
                   [lane](const JobSpec &spec) { return lane + spec.destination.substr(spec.destination.size() - 6); });
    auto ja = queue.submit(spec_of({t / "a"}, t / "a.copy"), ra);
    auto jb = queue.submit(spec_of({t / "b"}, t / "b.copy"), rb);
    REQUIRE(ja->wait().ok());
    REQUIRE(jb->wait().ok());
    CHECK(fs.max_concurrent_data_calls == 2);
    CHECK(same_bytes(t / "a", t / "a.copy"));
    CHECK(same_bytes(t / "b", t / "b.copy"));
    for (const char *dest : {"a.copy", "b.copy"})
        ::unlink((JobQueue::lock_folder() + "/" + lane + dest + ".lock").c_str());
}

TEST_CASE_METHOD(SlowPair, "job queue: one writer per device holds across processes too (a lock per device)")
{
    // Two queues stand for two processes (two Dolphin jobs in two KIO workers) writing to one device.
    const std::string lane = "test-lane-" + std::to_string(::getpid());
    auto same_device = [lane](const JobSpec &) { return lane; };
    JobQueue first(0.05, same_device), second(0.05, same_device);
    auto ja = first.submit(spec_of({t / "a"}, t / "a.copy"));
    auto jb = second.submit(spec_of({t / "b"}, t / "b.copy"));
    REQUIRE(ja->wait().ok());
    REQUIRE(jb->wait().ok());
    CHECK(fs.max_concurrent_data_calls == 1);
    CHECK(same_bytes(t / "b", t / "b.copy"));
    CHECK(exists(JobQueue::lock_folder() + "/" + lane + ".lock"));
    ::unlink((JobQueue::lock_folder() + "/" + lane + ".lock").c_str());
}

TEST_CASE("stall watch: counts the time nothing moved, only while running and only once the copy has moved")
{
    StallWatch w;
    const CopyMotion none, some {1 * MiB, 0, 0, 0}, more {2 * MiB, 1 * MiB, 0, 0};
    // The plan walks a tree before the first byte: no stall however long that takes.
    CHECK(w.observe(JobState::Running, none, 0) == 0);
    CHECK(w.observe(JobState::Running, none, 30) == 0);
    CHECK(w.observe(JobState::Running, some, 31) == 0);
    CHECK(w.observe(JobState::Running, some, 33.5) == Approx(2.5));
    CHECK(w.observe(JobState::Running, more, 40) == 0); // it moved: the clock starts again
    CHECK(w.observe(JobState::Running, more, 47) == Approx(7));
    // A pause is no stall, and after it the clock starts from the resume.
    CHECK(w.observe(JobState::Paused, more, 60) == 0);
    CHECK(w.observe(JobState::Running, more, 61) == 0);
    CHECK(w.observe(JobState::Running, more, 64) == Approx(3));
    // Reading a copy back moves no counter but beats.
    CHECK(w.observe(JobState::Running, {2 * MiB, 1 * MiB, 0, 1}, 65) == 0);
    CHECK(w.observe(JobState::Done, more, 90) == 0);
}

TEST_CASE("stall watch: onto a share a byte handed over is not motion, a byte the server confirmed is")
{
    StallWatch w;
    CHECK(w.observe(JobState::Running, copy_motion(true, 4 * MiB, 1 * MiB, 0, 0), 0) == 0);
    // The client's cache goes on taking bytes from a copy whose link is dead.
    CHECK(w.observe(JobState::Running, copy_motion(true, 9 * MiB, 1 * MiB, 0, 0), 4) == Approx(4));
    CHECK(w.observe(JobState::Running, copy_motion(true, 9 * MiB, 2 * MiB, 0, 0), 5) == 0);
    CHECK(w.observe(JobState::Running, copy_motion(true, 9 * MiB, 2 * MiB, 1, 0), 6) == 0);
    // A stick's writes wait for the device, so a byte handed over is motion there.
    StallWatch stick;
    CHECK(stick.observe(JobState::Running, copy_motion(false, 4 * MiB, 1 * MiB, 0, 0), 0) == 0);
    CHECK(stick.observe(JobState::Running, copy_motion(false, 9 * MiB, 1 * MiB, 0, 0), 4) == 0);
}

TEST_CASE("job queue: a copy that stops moving is reported stalled, with no made-up rate, until it moves again")
{
    TempDir t;
    write_pattern_file(t / "src", 24 * MiB);
    StallingSyscalls fs;
    fs.max_transfer = 128 * 1024;
    fs.data_delay = 5ms;
    ScopedSyscalls seam(fs);
    auto rec = std::make_shared<Recorder>();
    JobQueue queue(0.1);
    // Little in flight, so the notice comes after kStallNotice even when a busy machine makes the rate low.
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.limits.max_in_flight = 2 * MiB;
    auto job = queue.submit(spec, rec);
    REQUIRE(rec->wait_for([&] { return !rec->progress.empty() && rec->progress.back().durable_bytes > 0; }));
    fs.held = true;
    REQUIRE(rec->wait_for([&] { return rec->progress.back().stalled_seconds > 0; }, 60));
    ProgressSnapshot stalled, before;
    {
        std::lock_guard lock(rec->m);
        stalled = rec->progress.back();
        // The last snapshot that still had a rate: what was in flight then sets how long the notice waits.
        for (const ProgressSnapshot &p : rec->progress)
            if (p.stalled_seconds == 0 && p.device_bytes_per_sec > 0)
                before = p;
    }
    REQUIRE(before.device_bytes_per_sec > 0);
    const double notice =
        std::clamp(3 * double(before.written_bytes - before.durable_bytes) / before.device_bytes_per_sec, kStallNotice,
                   kStallNoticeMost);
    CHECK(fs.waited > 0);
    CHECK(stalled.stalled_seconds >= kStallNotice);
    CHECK(stalled.stalled_seconds < notice + 2); // said within a tick or two of the notice
    CHECK(stalled.stalled_seconds < kStallNoticeMost + 2);
    CHECK(stalled.device_bytes_per_sec == 0);
    CHECK(stalled.eta_seconds < 0);
    CHECK_FALSE(stalled.share); // a local folder: the device, not a share, is not responding
    fs.release();
    REQUIRE(job->wait().ok());
    std::lock_guard lock(rec->m);
    CHECK(rec->progress.back().stalled_seconds == 0);
    CHECK(same_bytes(t / "src", t / "dst"));
}
