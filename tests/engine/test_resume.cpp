// SPDX-License-Identifier: GPL-2.0-or-later
//
// Unfinished copies: a job interrupted (not cancelled) keeps its big file's part file; a rerun with
// JobSpec::resume takes what the first run published as done, continues the part file and ends with the same
// tree a single run makes; discard_unfinished removes the part files and nothing else.
#include "catch.h"

#include "fault_syscalls.h"
#include "job_helpers.h"
#include "test_support.h"

#include "device_probe.h"
#include "job_queue.h"
#include "verify.h"

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace sanecopy;
using namespace sanecopy::test;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

// Two big files around a folder of small ones, a link, and a folder with a mode of its own.
void make_tree(const std::string &src)
{
    REQUIRE(::mkdir(src.c_str(), 0755) == 0);
    for (int i = 0; i < 12; ++i)
        write_pattern_file(src + "/a" + std::to_string(i), 3000 + uint64_t(i) * 100, unsigned(i + 1));
    write_pattern_file(src + "/big0", 6 * MiB, 21);
    write_pattern_file(src + "/big1", 6 * MiB + 4321, 22);
    REQUIRE(::symlink("big0", (src + "/link").c_str()) == 0);
    REQUIRE(::mkdir((src + "/sub").c_str(), 0750) == 0);
    for (int i = 0; i < 6; ++i)
        write_pattern_file(src + "/sub/s" + std::to_string(i), 2000 + uint64_t(i), unsigned(i + 40));
}

mode_t mode_of(const std::string &path)
{
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

struct Stopped {
    JobSummary summary;
    std::vector<JobEvent> events;
};

// Runs |spec| and stops it, with |stop|, once |after| bytes have moved through the seam.
Stopped run_until(const JobSpec &spec, FaultSyscalls &fs, uint64_t after, void (JobControl::*stop)())
{
    JobControl control;
    ProgressCounters counters;
    Stopped out;
    std::atomic<bool> done {false};
    std::thread stopper([&] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!done && fs.moved.load() < after && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        (control.*stop)();
    });
    out.summary = run_copy_job(spec, control, counters, [&](const JobEvent &e) { out.events.push_back(e); });
    done = true;
    stopper.join();
    return out;
}

// Small chunks, so a stop lands mid-file: the job checks for it between chunks.
JobSpec small_chunks(JobSpec spec)
{
    spec.limits.start_chunk = spec.limits.min_chunk = 256 * 1024;
    spec.limits.max_chunk = 512 * 1024;
    return spec;
}

std::size_t count_note(const JobRun &run, const std::string &note)
{
    std::size_t n = 0;
    for (const JobEvent &e : run.events)
        n += e.kind == JobEvent::Kind::FileDone && e.message.find(note) != std::string::npos;
    return n;
}

void check_same_tree(const std::string &src, const std::string &dst)
{
    CHECK(list_tree(dst) == list_tree(src));
    for (const char *name : {"big0", "big1", "a0", "a11", "sub/s5"})
        CHECK(same_bytes(src + "/" + name, dst + "/" + name));
    CHECK(mode_of(dst + "/sub") == 0750);
}

} // namespace

TEST_CASE("resume: an interrupted job keeps its part file, a rerun finishes it and skips what was published")
{
    TempDir t;
    make_tree(t / "src");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    JobSpec spec = small_chunks(spec_of({t / "src"}, t / "out"));
    {
        SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
        FaultSyscalls &fs = slow.fs;
        // Past big0 and the small files, inside big1.
        Stopped first = run_until(spec, fs, 8 * MiB, &JobControl::interrupt);
        REQUIRE(first.summary.cancelled);
    }
    INFO(list_tree(t / "out"));
    REQUIRE(exists(t / "out/src/big0"));
    REQUIRE(exists(t / "out/src/.big1.part"));
    CHECK_FALSE(exists(t / "out/src/big1"));
    // The folder the first run created is still owner-only: it was never finished.
    CHECK(mode_of(t / "out/src") == 0700);

    SECTION("a plain rerun meets its own files as conflicts")
    {
        JobRun again = run_job(spec);
        CHECK_FALSE(again.summary.ok());
        CHECK(again.count(JobEvent::Kind::Error) >= 1);
    }
    SECTION("a resumed rerun takes them as done and continues the part file")
    {
        spec.resume = true;
        FaultSyscalls fs;
        ScopedSyscalls seam(fs);
        JobRun again = run_job(spec);
        REQUIRE(again.summary.ok());
        CHECK(again.count(JobEvent::Kind::Error) == 0);
        CHECK(count_note(again, "already on the device from the interrupted copy") >= 2); // big0 and the link
        CHECK(count_note(again, "resumed after") == 1);
        // Less than big1 moved again: its prefix stayed; progress still counts every byte.
        CHECK(fs.moved.load() < 6 * MiB);
        CHECK(again.counters->durable_bytes.load() == again.counters->total_bytes.load());
        CHECK(again.summary.files_copied == 21);
        check_same_tree(t / "src", t / "out/src");
        CHECK(mode_of(t / "out/src") == 0755);
    }
}

TEST_CASE("resume: a cancel removes the part file, an interrupt keeps it")
{
    TempDir t;
    write_pattern_file(t / "big", 8 * MiB, 3);
    SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
    FaultSyscalls &fs = slow.fs;
    Stopped cancelled = run_until(small_chunks(spec_of({t / "big"}, t / "copy")), fs, 2 * MiB, &JobControl::cancel);
    CHECK(cancelled.summary.cancelled);
    CHECK_FALSE(exists(t / ".copy.part"));
    fs.moved = 0;
    Stopped interrupted =
        run_until(small_chunks(spec_of({t / "big"}, t / "copy")), fs, 2 * MiB, &JobControl::interrupt);
    CHECK(interrupted.summary.cancelled);
    CHECK(exists(t / ".copy.part"));
    CHECK_FALSE(exists(t / "copy"));
}

TEST_CASE("resume: a target of the same size but another time is not taken as published")
{
    TempDir t;
    write_pattern_file(t / "a", 5000, 1);
    write_pattern_file(t / "b", 5000, 2); // same size, other bytes, and a time a minute older
    struct timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 60, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (t / "b").c_str(), times, 0) == 0);
    JobSpec spec = spec_of({t / "a"}, t / "b");
    spec.rule = DestinationRule::ExactTarget;
    spec.resume = true;
    JobRun run = run_job(spec);
    CHECK_FALSE(run.summary.ok());
    CHECK(run.count(JobEvent::Kind::Error) == 1);
    CHECK_FALSE(same_bytes(t / "a", t / "b"));
    // FAT stores even seconds: a published file reads back up to 2 s off.
    CHECK(fs_limits_for("vfat").mtime_window_ns == 2000000000);
    CHECK(fs_limits_for("ext4").mtime_window_ns == 1000000000);
}

TEST_CASE("resume with verify: a target of the same size and time but other bytes is not taken as published")
{
    TempDir t;
    write_pattern_file(t / "a", 5000, 1);
    write_pattern_file(t / "b", 5000, 2); // same size, other bytes, the same time
    struct stat st {};
    REQUIRE(::stat((t / "a").c_str(), &st) == 0);
    struct timespec times[2] = {{0, UTIME_OMIT}, st.st_mtim};
    REQUIRE(::utimensat(AT_FDCWD, (t / "b").c_str(), times, 0) == 0);
    JobSpec spec = spec_of({t / "a"}, t / "b");
    spec.rule = DestinationRule::ExactTarget;
    spec.resume = true;
    // rsync's quick check alone takes it: what --resume promises without --verify.
    CHECK(run_job(spec).summary.ok());
    // --verify reads every file back: this one is not the source's, so it is a taken name, not a copy.
    spec.verify = true;
    JobRun run = run_job(spec);
    CHECK_FALSE(run.summary.ok());
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EEXIST);
    CHECK_FALSE(same_bytes(t / "a", t / "b")); // and it was left as it was
}

TEST_CASE("resume: the manifest of a resumed job lists the files the first run published too")
{
    TempDir t;
    make_tree(t / "src");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    JobSpec spec = small_chunks(spec_of({t / "src"}, t / "out"));
    spec.manifest = true;
    {
        SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
        FaultSyscalls &fs = slow.fs;
        REQUIRE(run_until(spec, fs, 8 * MiB, &JobControl::interrupt).summary.cancelled);
    }
    CHECK_FALSE(exists(t / "out/SHA256SUMS")); // a cancelled or interrupted job writes none
    spec.resume = true;
    JobRun again = run_job(spec);
    REQUIRE(again.summary.ok());
    CHECK(again.summary.manifest_files == 20); // every file; the link has no bytes of its own
    const std::string manifest = read_file(t / "out/SHA256SUMS");
    CHECK(manifest.find("src/big0\n") != std::string::npos);
    CHECK(manifest.find("src/a0\n") != std::string::npos);
}

TEST_CASE("resume: discarding an unfinished job removes its part files and nothing else")
{
    TempDir t;
    make_tree(t / "src");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    const JobSpec spec = small_chunks(spec_of({t / "src"}, t / "out"));
    {
        SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
        FaultSyscalls &fs = slow.fs;
        REQUIRE(run_until(spec, fs, 8 * MiB, &JobControl::interrupt).summary.cancelled);
    }
    REQUIRE(exists(t / "out/src/.big1.part"));
    const DiscardResult d = discard_unfinished(spec);
    CHECK(d.removed == 1);
    CHECK(d.errors.empty());
    CHECK_FALSE(exists(t / "out/src/.big1.part"));
    CHECK(same_bytes(t / "src/big0", t / "out/src/big0")); // published: kept
    CHECK(exists(t / "src/big1"));                         // the sources are never touched
    CHECK(discard_unfinished(spec).removed == 0);
}

TEST_CASE("resume: a queue going away interrupts its jobs, and their part files stay")
{
    TempDir t;
    write_pattern_file(t / "big", 8 * MiB, 5);
    SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
    FaultSyscalls &fs = slow.fs;
    std::shared_ptr<Job> job;
    {
        JobQueue queue(0.05, [](const JobSpec &) { return std::string("lane"); });
        job = queue.submit(small_chunks(spec_of({t / "big"}, t / "copy")));
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (fs.moved.load() < 2 * MiB && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        REQUIRE(fs.moved.load() >= 2 * MiB);
    }
    CHECK(job->wait().cancelled);
    CHECK(exists(t / ".copy.part"));
}

namespace {

// What the user's folder held before the copy: an older version under each name the tree uses (other bytes,
// other sizes, a minute older) and a link that points elsewhere.
void make_older_versions(const std::string &dst)
{
    REQUIRE(::mkdir(dst.c_str(), 0755) == 0);
    REQUIRE(::mkdir((dst + "/sub").c_str(), 0755) == 0);
    std::vector<std::string> names {"big0", "big1", "sub/s0", "sub/s5"};
    for (int i = 0; i < 12; ++i)
        names.push_back("a" + std::to_string(i));
    for (const std::string &name : names) {
        write_pattern_file(dst + "/" + name, 1000, 99);
        struct timespec times[2] = {{0, UTIME_OMIT}, {::time(nullptr) - 60, 0}};
        REQUIRE(::utimensat(AT_FDCWD, (dst + "/" + name).c_str(), times, 0) == 0);
    }
    REQUIRE(::symlink("elsewhere", (dst + "/link").c_str()) == 0);
}

bool has_second_copy(const std::string &tree) { return tree.find(" (2)") != std::string::npos; }

} // namespace

TEST_CASE("resume: what the interrupted run kept beside an older version is found under its new name")
{
    TempDir t;
    make_tree(t / "src");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    make_older_versions(t / "out/src");
    JobSpec spec = small_chunks(spec_of({t / "src"}, t / "out", ConflictPolicy::Rename));
    {
        SlowSeam slow(256 * 1024, 2ms); // slow enough for a stop to land where the test wants it
        FaultSyscalls &fs = slow.fs;
        REQUIRE(run_until(spec, fs, 8 * MiB, &JobControl::interrupt).summary.cancelled);
    }
    INFO(list_tree(t / "out"));
    REQUIRE(exists(t / "out/src/big0 (1)"));
    REQUIRE(exists(t / "out/src/a0 (1)"));
    REQUIRE(exists(t / "out/src/.big1.part"));

    spec.resume = true;
    JobRun again = run_job(spec);
    REQUIRE(again.summary.ok());
    const std::string tree = list_tree(t / "out");
    INFO(tree);
    CHECK_FALSE(has_second_copy(tree));
    // big0 and the small files the first run published.
    CHECK(count_note(again, "already on the device from the interrupted copy") >= 13);
    for (const char *name : {"big0", "big1", "a0", "a11", "sub/s0", "sub/s5"}) {
        const std::string n = name;
        CHECK(same_bytes(t / ("src/" + n), t / ("out/src/" + n + " (1)")));
        CHECK(file_size(t / ("out/src/" + n)) == 1000); // the older version is untouched
    }
    CHECK(same_bytes(t / "src/sub/s3", t / "out/src/sub/s3")); // a free name stays free of " (1)"
    char link[64] = {};
    CHECK(::readlink((t / "out/src/link (1)").c_str(), link, sizeof link - 1) == 4);
    CHECK(std::string(link) == "big0");
}

TEST_CASE("resume: a rerun after a copy that kept both finds every copy, and so does a move")
{
    TempDir t;
    make_tree(t / "src");
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    make_older_versions(t / "out/src");
    // Also the state a move killed between publishing and removing its sources leaves: both sides complete.
    REQUIRE(run_job(spec_of({t / "src"}, t / "out", ConflictPolicy::Rename)).summary.ok());
    JobSpec spec = spec_of({t / "src"}, t / "out", ConflictPolicy::Rename);
    std::string note;
    SECTION("resume")
    {
        spec.resume = true;
        note = "already on the device from the interrupted copy";
    }
    SECTION("move")
    {
        spec.move = true;
        note = "already on the device with the same bytes";
    }
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    const std::string tree = list_tree(t / "out");
    INFO(tree);
    CHECK_FALSE(has_second_copy(tree));
    CHECK(count_note(run, note) >= 16); // every file that met an older version; the link has no bytes to count
    CHECK(exists(t / "src/big0") == !spec.move);
    CHECK(exists(t / "src/link") == !spec.move);
}

TEST_CASE("resume: a move that asks, not resuming, asks even when a \"name (1)\" holds the same bytes")
{
    TempDir t;
    write_pattern_file(t / "a", 5000, 1);
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    write_pattern_file(t / "out/a", 1000, 2);
    write_pattern_file(t / "out/a (1)", 5000, 1); // the user's own earlier copy
    JobSpec spec = spec_of({t / "a"}, t / "out");
    spec.move = true;
    int asked = 0;
    spec.ask_conflict = [&](const ConflictQuestion &) {
        ++asked;
        return ConflictAnswer::Overwrite;
    };
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    CHECK(asked == 1);
    CHECK(file_size(t / "out/a") == 5000); // replaced, as answered
    CHECK_FALSE(exists(t / "a"));
}

TEST_CASE("resume point: every byte of the part file compared, up to the first that differs")
{
    TempDir t;
    write_pattern_file(t / "src", 64 * MiB, 7);
    ChunkLimits limits;
    limits.max_in_flight = 8 * MiB;
    const auto part_of = [&](uint64_t size, uint64_t hole_at, uint64_t hole_len,
                             const std::function<bool()> &go_on = {}) {
        write_pattern_file(t / "part", 64 * MiB, 7);
        REQUIRE(::truncate((t / "part").c_str(), off_t(size)) == 0);
        if (hole_len) {
            const std::vector<char> zeros(hole_len);
            UniqueFd fd(::open((t / "part").c_str(), O_WRONLY | O_CLOEXEC));
            REQUIRE(::pwrite(fd.get(), zeros.data(), zeros.size(), off_t(hole_at)) == ssize_t(zeros.size()));
        }
        UniqueFd src(::open((t / "src").c_str(), O_RDONLY | O_CLOEXEC));
        UniqueFd part(::open((t / "part").c_str(), O_RDONLY | O_CLOEXEC));
        return resume_point(src.get(), 64 * MiB, part.get(), size, limits, go_on);
    };
    CHECK(part_of(40 * MiB, 0, 0) == 40 * MiB); // an intact prefix: all of it
    // A share lost a write in the middle of what was in flight, later ones arrived: up to the lost one.
    CHECK(part_of(40 * MiB, 35 * MiB, 1 * MiB) == 35 * MiB);
    // A part file that agrees with the source at its end but not in its middle (another image of the same base,
    // or this source changed there): only what comes before the difference.
    CHECK(part_of(40 * MiB, 12 * MiB + 100, 4096) == 12 * MiB);
    // The first difference rounds down to the device's alignment.
    REQUIRE(limits.checked().align == 64 * 1024);
    CHECK(part_of(40 * MiB, 20 * MiB + 5000, 10) == 20 * MiB);
    // As long as the source: all of it; longer: another file.
    CHECK(part_of(64 * MiB, 0, 0) == 64 * MiB);
    write_pattern_file(t / "long", 65 * MiB, 7);
    UniqueFd src(::open((t / "src").c_str(), O_RDONLY | O_CLOEXEC));
    UniqueFd long_part(::open((t / "long").c_str(), O_RDONLY | O_CLOEXEC));
    CHECK(resume_point(src.get(), 64 * MiB, long_part.get(), 65 * MiB, limits) == 0);
    // Another file altogether.
    write_pattern_file(t / "other", 64 * MiB, 8);
    UniqueFd other(::open((t / "other").c_str(), O_RDONLY | O_CLOEXEC));
    CHECK(resume_point(src.get(), 64 * MiB, other.get(), 40 * MiB, limits) == 0);
    // Asked before each block of 1 MiB; a no ends the comparison with what was compared so far.
    int asked = 0;
    CHECK(part_of(40 * MiB, 0, 0, [&] { return ++asked <= 3; }) == 3 * MiB);
    CHECK(asked == 4);
    asked = 0;
    CHECK(part_of(40 * MiB, 0, 0, [&] { return ++asked > 0; }) == 40 * MiB);
    CHECK(asked == 40);
}

// Reading back takes as long as copying on a slow device: a move's comparison with what an interrupted run
// left at the target (it was killed between publishing and removing the source), and a verify. A pause must
// hold either, and a cancel end it.
TEST_CASE_METHOD(Faulted,
                 "resume: reading back (a move's comparison, a verify) waits out a pause and stops on a cancel")
{
    write_pattern_file(t / "big", 16 * MiB, 5);
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    JobSpec spec = spec_of({t / "big"}, t / "out");
    const bool move = GENERATE(true, false);
    INFO((move ? "move" : "verify"));
    if (move) {
        write_pattern_file(t / "out/big", 16 * MiB, 5);
        spec.move = true;
    } else {
        spec.verify = true;
    }
    fs.read_delay = 10ms; // 32 reads of 1 MiB, the only preads of 1 MiB: about a third of a second of reading
    JobControl control;
    ProgressCounters counters;
    std::vector<JobEvent> events;
    // On the stopping thread, which may not REQUIRE: whether the reading got under way, checked once it is joined.
    std::atomic<bool> was_reading {false};
    const auto started_reading = [&] {
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (fs.read_bytes.load() < 4 * MiB && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(1ms);
        was_reading = fs.read_bytes.load() >= 4 * MiB;
    };
    const auto run = [&] {
        return run_copy_job(spec, control, counters, [&](const JobEvent &e) { events.push_back(e); });
    };
    SECTION("pause")
    {
        uint64_t at_pause = 0, after_pause = 0;
        JobState state = JobState::Running;
        std::thread pauser([&] {
            started_reading();
            control.pause();
            std::this_thread::sleep_for(100ms); // the block being read when the pause came ends
            at_pause = fs.read_bytes.load();
            state = counters.state.load();
            std::this_thread::sleep_for(300ms);
            after_pause = fs.read_bytes.load();
            control.resume();
        });
        const JobSummary summary = run();
        pauser.join();
        REQUIRE(was_reading);
        CHECK(after_pause == at_pause); // nothing read while paused
        CHECK(state == JobState::Paused);
        CHECK(at_pause < 32 * MiB);
        REQUIRE(summary.ok());
        CHECK(fs.read_bytes.load() >= 32 * MiB); // then read to the end
        CHECK(exists(t / "big") == !move);       // a move found it there: its source removed
        CHECK(file_size(t / "out/big") == 16 * MiB);
    }
    SECTION("cancel")
    {
        std::thread canceller([&] {
            started_reading();
            control.cancel();
        });
        const JobSummary summary = run();
        canceller.join();
        REQUIRE(was_reading);
        CHECK(summary.cancelled);
        CHECK(fs.read_bytes.load() < 32 * MiB);
        CHECK(exists(t / "big"));
        CHECK(exists(t / "out/big") == move); // what stood there stays; a copy cancelled leaves nothing
        CHECK(list_tree(t / "out") == (move ? ".\tdir\nbig\tfile\t16777216\n" : ".\tdir\n")); // no part file
        for (const JobEvent &e : events)
            CHECK(e.kind != JobEvent::Kind::Error); // no "exists", no "verify failed": the user cancelled
    }
}
