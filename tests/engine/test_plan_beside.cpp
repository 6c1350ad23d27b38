// SPDX-License-Identifier: GPL-2.0-or-later
//
// JobSpec::count_while_copying: the plan's walk beside the copy. The first bytes reach the device while the plan
// still counts, nothing takes its name before the plan has found room for everything, and a plan that finds too
// little takes back what the copy wrote.
#include "catch.h"

#include "fault_syscalls.h"
#include "job_helpers.h"
#include "stall_watch.h"
#include "test_support.h"

#include <chrono>
#include <condition_variable>
#include <dirent.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {

void mkdir_p(const std::string &path) { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }

std::vector<std::string> names_in(const std::string &dir)
{
    std::vector<std::string> names;
    if (DIR *d = ::opendir(dir.c_str())) {
        while (const dirent *e = ::readdir(d))
            if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
                names.emplace_back(e->d_name);
        ::closedir(d);
    }
    return names;
}

// Holds every listing of the folder "late" made off the job's own thread (the plan's walk, or the threads that
// warm its inodes) until released, or for 20 s at most: the plan can't end while it is held. Optionally reports
// |free| bytes free on every filesystem, as a small stick would.
struct PlanHeld : FaultSyscalls {
    std::mutex mutex;
    std::condition_variable released_cv;
    std::thread::id job_thread;
    bool released = false;
    std::atomic<int> held {0};
    uint64_t free = 0; // 0: as the filesystem says

    void set_job_thread()
    {
        std::lock_guard lock(mutex);
        job_thread = std::this_thread::get_id();
    }
    void release()
    {
        {
            std::lock_guard lock(mutex);
            released = true;
        }
        released_cv.notify_all();
    }
    int raw_list_dir(int dirfd, std::vector<std::string> &names) override
    {
        char path[4096];
        const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(dirfd)).c_str(), path, sizeof path - 1);
        const std::string folder = n > 0 ? std::string(path, size_t(n)) : std::string();
        if (folder.size() > 5 && folder.compare(folder.size() - 5, 5, "/late") == 0) {
            std::unique_lock lock(mutex);
            if (std::this_thread::get_id() != job_thread) {
                ++held;
                released_cv.wait_for(lock, std::chrono::seconds(20), [this] { return released; });
            }
        }
        return Syscalls::raw_list_dir(dirfd, names);
    }
    int raw_fstatfs(int fd, struct statfs *st) override
    {
        const int r = Syscalls::raw_fstatfs(fd, st);
        if (r == 0 && free > 0 && st->f_blocks > 0)
            st->f_bavail = st->f_bfree = free / (st->f_frsize ? st->f_frsize : st->f_bsize);
        return r;
    }
};

// t/tree: "a" with |small| small files (and after them a file of 2 MiB, too big for the batch, with |big|), then
// "late" with one, copied into t/out with the plan beside the copy.
JobSpec beside_spec(const TempDir &t, int small = 64, bool big = false)
{
    mkdir_p(t / "tree");
    mkdir_p(t / "tree/a");
    for (int f = 0; f < small; ++f)
        write_pattern_file(t / ("tree/a/f" + std::to_string(100 + f)), 4096, unsigned(f));
    if (big)
        write_pattern_file(t / "tree/a/zbig", 2 * kMiB, 7);
    mkdir_p(t / "tree/late");
    write_text_file(t / "tree/late/z", "last");
    mkdir_p(t / "out");
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.count_while_copying = true;
    spec.batch_files = 16; // groups settle while the walk goes on
    return spec;
}

// Where small files are synced one by one (WritebackMode::ChunkSync: a share, FUSE, overlayfs), a file is counted
// durable only as it is published, so nothing is while the plan is held: the tests that wait for it say so and stop.
bool counts_durable_before_publishing(const TempDir &t)
{
    const Result<DeviceInfo> device = probe_device(t.path());
    if (device.ok() && device.value().writeback != WritebackMode::ChunkSync)
        return true;
    WARN("the temp folder " << t.path() << " syncs small files one by one; skipped");
    return false;
}

// Runs |spec| on a thread of its own; |run|'s counters are read meanwhile, its events once it has ended.
void start_job(std::thread &job, PlanHeld &fs, JobRun &run, JobSpec spec, const JobControl &control)
{
    job = std::thread([&fs, &run, &control, spec = std::move(spec)] {
        fs.set_job_thread();
        run.summary =
            run_copy_job(spec, control, *run.counters, [&run](const JobEvent &e) { run.events.push_back(e); });
    });
}

// A job run while the plan is held, until some of it is durable (or 10 s).
struct HeldRun {
    PlanHeld &fs;
    JobControl control;
    JobRun run;
    std::thread job;

    HeldRun(PlanHeld &seam, JobSpec spec) : fs(seam)
    {
        start_job(job, fs, run, std::move(spec), control);
        for (int i = 0; i < 1000 && run.counters->durable_bytes.load() == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ~HeldRun()
    {
        fs.release();
        if (job.joinable())
            job.join();
    }
    void finish()
    {
        fs.release();
        job.join();
    }
};

} // namespace

TEST_CASE("count while copying: the first bytes are durable while the plan counts, and no name is taken before "
          "it ends")
{
    TempDir t;
    if (!counts_durable_before_publishing(t))
        return;
    PlanHeld fs;
    ScopedSyscalls seam(fs);
    HeldRun held(fs, beside_spec(t));

    REQUIRE(fs.held.load() > 0); // the plan's walk is waiting at "late"
    CHECK(held.run.counters->durable_bytes.load() > 0);
    CHECK(held.run.counters->counting.load());
    for (const std::string &name : names_in(t / "out/tree/a"))
        CHECK(name.find(".part") != std::string::npos); // part files only: no copy under its real name yet
    CHECK_FALSE(exists(t / "out/tree/a/f100"));
    // Waiting for the count is not a device that stopped taking bytes: a minute of it would read as no stall.
    StallWatch watch;
    const double now = monotonic_seconds();
    stalled_seconds(watch, *held.run.counters, held.control.beats(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(stalled_seconds(watch, *held.run.counters, held.control.beats(), now + 60) == 0);

    held.finish();
    REQUIRE(held.run.summary.ok());
    CHECK_FALSE(held.run.counters->counting.load());
    CHECK(held.run.counters->files_total.load() == 65);
    CHECK(held.run.counters->files_done.load() == 65);
    CHECK(held.run.counters->durable_bytes.load() == held.run.counters->total_bytes.load());
    CHECK(list_tree(t / "tree") == list_tree(t / "out/tree"));
    CHECK(same_bytes(t / "tree/a/f163", t / "out/tree/a/f163"));
}

TEST_CASE("count while copying: a plan that finds too little room takes back what the copy wrote meanwhile")
{
    TempDir t;
    if (!counts_durable_before_publishing(t))
        return;
    PlanHeld fs;
    fs.free = 64 * 1024; // the tree needs 2 MiB and more
    ScopedSyscalls seam(fs);
    // Fewer small files than a group: the big file's turn flushes them, and the job's thread waits there.
    HeldRun held(fs, beside_spec(t, 8, true));

    REQUIRE(fs.held.load() > 0);
    REQUIRE(held.run.counters->durable_bytes.load() > 0);
    CHECK_FALSE(names_in(t / "out/tree/a").empty()); // part files on the device

    held.finish();
    CHECK_FALSE(held.run.summary.ok());
    const JobEvent *error = held.run.first(JobEvent::Kind::Error);
    REQUIRE(error != nullptr);
    CHECK(error->message.find("not enough space") != std::string::npos);
    CHECK(held.run.count(JobEvent::Kind::FileDone) == 0);
    CHECK(held.run.counters->files_done.load() == 0);
    CHECK(names_in(t / "out").empty());                // no part file, no folder: as if refused before the first byte
    CHECK(fs.moved.load() < kMiB);                     // the big file was not copied only to be thrown away
    CHECK(held.run.count(JobEvent::Kind::Error) == 1); // and did not run into the device's end
}

TEST_CASE("count while copying: cancelled while the plan counts, nothing is published and the job ends")
{
    TempDir t;
    PlanHeld fs;
    ScopedSyscalls seam(fs);
    JobControl control;
    JobRun run;
    std::thread job;
    start_job(job, fs, run, beside_spec(t), control);
    for (int i = 0; i < 1000 && fs.held.load() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(fs.held.load() > 0);
    control.cancel();
    // The job waits for its plan's thread, which the seam holds in a listing: let that one go.
    fs.release();
    job.join();
    CHECK(run.summary.cancelled);
    CHECK(run.count(JobEvent::Kind::FileDone) == 0);
    for (const std::string &name : names_in(t / "out/tree/a"))
        CHECK(name.find(".part") == std::string::npos); // no part file left either
    CHECK(names_in(t / "out/tree/a").empty());
}
