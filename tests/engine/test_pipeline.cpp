// SPDX-License-Identifier: GPL-2.0-or-later
//
// The publish pipeline's parts: the conflict resolver, the small-file groups, errors that know their side, a
// pulled stick said as such, progress that takes back a failed attempt, and limits that stay consistent.
#include "catch.h"

#include "fault_syscalls.h"
#include "flush_mount.h"
#include "job_helpers.h"
#include "test_support.h"

#include "background_closer.h"
#include "conflict.h"
#include "copy_file.h"
#include "device_probe.h"
#include "fd.h"
#include "small_batch.h"
#include "verify.h"

#include <fstream>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
using Outcome = ConflictDecision::Outcome;

void mkdir_p(const std::string &path) { REQUIRE(::mkdir(path.c_str(), 0755) == 0); }

// Names in |dir| that a copy must never leave behind: part files.
std::vector<std::string> part_files(const std::string &dir)
{
    std::vector<std::string> found;
    DIR *d = ::opendir(dir.c_str());
    REQUIRE(d);
    while (dirent *e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0)
            found.push_back(name);
    }
    ::closedir(d);
    return found;
}

void make_small_tree(const std::string &root, int files, uint64_t size = 3000)
{
    mkdir_p(root);
    for (int i = 0; i < files; ++i)
        write_pattern_file(root + "/f" + std::to_string(i), size + uint64_t(i), unsigned(i + 1));
}

} // namespace

TEST_CASE("conflict resolver: a free name proceeds, never replacing what appears meanwhile")
{
    const ExistingTarget none;
    for (ConflictPolicy p : {ConflictPolicy::Refuse, ConflictPolicy::Skip}) {
        const ConflictDecision d = resolve_conflict(none, p, std::nullopt, "t");
        CHECK(d.outcome == Outcome::Proceed);
        CHECK(d.policy == ConflictPolicy::Refuse);
    }
    CHECK(resolve_conflict(none, ConflictPolicy::Overwrite, std::nullopt, "t").policy == ConflictPolicy::Overwrite);
    // Nothing to ask about: an answer for a free name changes nothing.
    CHECK(resolve_conflict(none, ConflictPolicy::Refuse, ConflictAnswer::Cancel, "t").outcome == Outcome::Proceed);
}

TEST_CASE("conflict resolver: an existing target under each policy and answer")
{
    const ExistingTarget file {true, false, 10, {}};
    const ExistingTarget folder {true, true, 0, {}};
    const ConflictDecision refused = resolve_conflict(file, ConflictPolicy::Refuse, std::nullopt, "/stick/a");
    CHECK(refused.outcome == Outcome::Fail);
    CHECK(refused.error.err() == EEXIST);
    CHECK(refused.error.on_destination());
    CHECK(refused.error.path() == "/stick/a");
    CHECK(resolve_conflict(file, ConflictPolicy::Skip, std::nullopt, "t").outcome == Outcome::Skip);
    CHECK(resolve_conflict(file, ConflictPolicy::Rename, std::nullopt, "t").policy == ConflictPolicy::Rename);
    CHECK(resolve_conflict(file, ConflictPolicy::Overwrite, std::nullopt, "t").outcome == Outcome::Proceed);
    const ConflictDecision onto_folder = resolve_conflict(folder, ConflictPolicy::Overwrite, std::nullopt, "t");
    CHECK(onto_folder.outcome == Outcome::Fail);
    CHECK(onto_folder.error.err() == EISDIR);
    // The user's answer wins over the policy.
    CHECK(resolve_conflict(file, ConflictPolicy::Refuse, ConflictAnswer::Overwrite, "t").policy ==
          ConflictPolicy::Overwrite);
    CHECK(resolve_conflict(file, ConflictPolicy::Overwrite, ConflictAnswer::Skip, "t").outcome == Outcome::Skip);
    CHECK(resolve_conflict(file, ConflictPolicy::Refuse, ConflictAnswer::Rename, "t").policy == ConflictPolicy::Rename);
    CHECK(resolve_conflict(file, ConflictPolicy::Skip, ConflictAnswer::Cancel, "t").outcome == Outcome::Cancel);
    CHECK(resolve_conflict(folder, ConflictPolicy::Refuse, ConflictAnswer::Overwrite, "t").outcome == Outcome::Fail);
}

TEST_CASE("chunk limits: inconsistent limits are made consistent, and plans stay inside them")
{
    ChunkLimits bad;
    bad.align = 0;           // would divide by zero
    bad.min_chunk = 4 * MiB; // above max_chunk: std::clamp with lo > hi is undefined
    bad.max_chunk = 1 * MiB;
    bad.start_chunk = 64 * MiB;
    bad.min_windows = 0;
    bad.max_windows = 0;
    bad.max_in_flight = 1 * MiB; // can't hold even one chunk
    bad.target_seconds = -1;
    bad.request = 1280 * 1024 + 512; // no whole number of pages; no whole number of it lies within [4, 4] MiB
    const ChunkLimits l = bad.checked();
    CHECK(l.align >= 4096);
    CHECK(l.min_chunk % l.align == 0);
    CHECK(l.max_chunk >= l.min_chunk);
    CHECK(l.start_chunk >= l.min_chunk);
    CHECK(l.start_chunk <= l.max_chunk);
    CHECK(l.min_windows >= 1);
    CHECK(l.max_windows >= l.min_windows);
    CHECK(l.max_in_flight >= (l.min_windows + 1) * l.min_chunk);
    CHECK(l.target_seconds > 0);
    CHECK(l.request == 1280 * 1024);
    ChunkLimits sub_page;
    sub_page.request = 1000;
    CHECK(sub_page.checked().request == 0);
    for (double rate : {0.0, 1e3, 40e6, 4e9}) {
        const ChunkPlan plan = plan_chunks(rate, bad);
        CHECK(plan.chunk_bytes >= l.min_chunk);
        CHECK(plan.chunk_bytes <= l.max_chunk);
        CHECK(plan.chunk_bytes % l.align == 0);
        CHECK(plan.windows >= l.min_windows);
        CHECK(plan.windows <= l.max_windows);
    }
    // Limits that are consistent already are kept as they are.
    const ChunkLimits good;
    const ChunkLimits kept = good.checked();
    CHECK(kept.min_chunk == good.min_chunk);
    CHECK(kept.max_chunk == good.max_chunk);
    CHECK(kept.max_in_flight == good.max_in_flight);
    CHECK(kept.align == good.align);
}

TEST_CASE_METHOD(Faulted,
                 "a job with small, non-default chunk limits copies exactly, and keeps in flight what they allow")
{
    write_pattern_file(t / "src", 6 * MiB + 12345);
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.limits.min_chunk = 64 * 1024;
    spec.limits.max_chunk = 128 * 1024;
    spec.limits.start_chunk = 64 * 1024;
    spec.limits.max_in_flight = 512 * 1024;
    spec.limits.align = 16 * 1024;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    // At least one window per 128 KiB: the limits were used, not the defaults (8 MiB chunks).
    CHECK(fs.sync_file_range_calls.load() >= int(6 * MiB / (128 * 1024)));
}

TEST_CASE_METHOD(Faulted, "small files: published in groups, one syncfs a group, no writeback of their own")
{
    make_small_tree(t / "tree", 23);
    mkdir_p(t / "out");
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.batch_files = 5;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    CHECK(run.summary.files_copied == 23);
    CHECK(list_tree(t / "tree") == list_tree(t / "out/tree"));
    for (int i = 0; i < 23; ++i)
        CHECK(same_bytes(t / ("tree/f" + std::to_string(i)), t / ("out/tree/f" + std::to_string(i))));
    CHECK(part_files(t / "out/tree").empty());
    // Seven groups; each needs its data and its renames synced, and a syncfs may serve two groups at once.
    CHECK(fs.syncfs_calls.load() >= 5);
    CHECK(fs.syncfs_calls.load() <= 2 * 7 + 2); // groups of 1, 2, 4 files, then 5
    // Small files start no writeback of their own: the group's syncfs sends them together.
    CHECK(fs.sync_file_range_calls.load() == 0);
    CHECK(fs.fdatasync_calls.load() == 0);
    CHECK(run.counters->durable_bytes.load() == run.counters->total_bytes.load());
    CHECK(run.counters->files_done.load() == 23);
}

TEST_CASE_METHOD(
    Faulted, "small files: a failing group sync fails every file in it, leaves no part file and takes back progress")
{
    make_small_tree(t / "tree", 12);
    mkdir_p(t / "out");
    fs.syncfs_errno = EIO;
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.batch_files = 4;
    JobRun run = run_job(spec);
    CHECK_FALSE(run.summary.ok());
    CHECK(run.summary.aborted); // EIO on the destination ends the job
    CHECK(run.summary.files_copied == 0);
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.on_destination());
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EIO);
    CHECK(part_files(t / "out/tree").empty());
    for (int i = 0; i < 12; ++i)
        CHECK_FALSE(exists(t / ("out/tree/f" + std::to_string(i))));
    // Nothing is on the device under any name, so progress shows nothing.
    CHECK(run.counters->durable_bytes.load() == 0);
    CHECK(run.counters->written_bytes.load() == 0);
}

TEST_CASE("left-out entries carry their reason")
{
    TempDir t;
    mkdir_p(t / "tree");
    REQUIRE(::mkfifo((t / "tree/pipe").c_str(), 0644) == 0);
    write_text_file(t / "tree/file", "x");
    mkdir_p(t / "out");
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    REQUIRE(run.first(JobEvent::Kind::Skipped));
    CHECK(run.first(JobEvent::Kind::Skipped)->reason == LeftOut::SpecialFile);
    CHECK(run.summary.files_refused == 1);
    // A skip the policy asked for is no failure.
    JobRun again = run_job(spec_of({t / "tree/file"}, t / "out/tree", ConflictPolicy::Skip));
    REQUIRE(again.first(JobEvent::Kind::Skipped));
    CHECK(again.first(JobEvent::Kind::Skipped)->reason == LeftOut::Exists);
    CHECK(again.summary.complete());
}

// Bind mounts of the source's subfolder, as the seam shows them: each path in |same| is the folder it maps to
// under another path (same device and inode), which no path comparison sees.
struct BindMounts : FaultSyscalls {
    std::map<std::string, std::string> same;
    int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags) override
    {
        const auto it = dirfd == AT_FDCWD ? same.find(strip_trailing_slashes(path)) : same.end();
        return FaultSyscalls::raw_fstatat(dirfd, it == same.end() ? path : it->second.c_str(), st, flags);
    }
};

TEST_CASE("a destination that is the source's own subfolder under another path is left out, not copied into")
{
    TempDir t;
    make_small_tree(t / "tree", 2);
    make_small_tree(t / "tree/sub", 1);
    mkdir_p(t / "out");
    mkdir_p(t / "merge");
    mkdir_p(t / "merge/tree");
    BindMounts fs;
    fs.same[t / "out"] = t / "tree/sub";        // the receiving folder
    fs.same[t / "merge/tree"] = t / "tree/sub"; // the existing folder the copy merges into
    JobRun run;
    JobPlan plan;
    {
        ScopedSyscalls seam(fs);
        plan = plan_job(spec_of({t / "tree"}, t / "out"));
        run = run_job(spec_of({t / "tree"}, t / "out"));
    }
    // Everything else is copied; the receiving folder is reported, in the plan and as the copy meets it.
    CHECK(read_file(t / "out/tree/f0") == read_file(t / "tree/f0"));
    CHECK(exists(t / "out/tree/f1"));
    CHECK_FALSE(exists(t / "out/tree/sub"));
    REQUIRE(plan.left_out.size() == 1);
    CHECK(plan.left_out[0].reason == LeftOut::IntoItself);
    REQUIRE(run.first(JobEvent::Kind::Skipped));
    CHECK(run.first(JobEvent::Kind::Skipped)->reason == LeftOut::IntoItself);
    CHECK(run.first(JobEvent::Kind::Skipped)->message.find("copied into itself") != std::string::npos);
    CHECK_FALSE(run.summary.complete());
    // The subfolder itself as the source: nothing of it is walked, and it says why.
    JobRun whole;
    {
        ScopedSyscalls seam(fs);
        whole = run_job(spec_of({t / "tree/sub"}, t / "out"));
    }
    REQUIRE(whole.first(JobEvent::Kind::Error));
    CHECK(whole.first(JobEvent::Kind::Error)->status.message().find("copied into itself") != std::string::npos);
    CHECK_FALSE(exists(t / "out/sub"));
    // Merging into an existing folder that is the subfolder under another path.
    JobRun merge;
    {
        ScopedSyscalls seam(fs);
        merge = run_job(spec_of({t / "tree"}, t / "merge"));
    }
    CHECK(exists(t / "merge/tree/f0"));
    CHECK_FALSE(exists(t / "merge/tree/sub"));
    REQUIRE(merge.first(JobEvent::Kind::Skipped));
    CHECK(merge.first(JobEvent::Kind::Skipped)->reason == LeftOut::IntoItself);
}

TEST_CASE("a link onto the file it points to is renamed or skipped as asked, and never replaces it")
{
    TempDir t;
    mkdir_p(t / "d");
    mkdir_p(t / "s");
    write_text_file(t / "d/f", "the only copy");
    REQUIRE(::symlink("../d/f", (t / "s/f").c_str()) == 0);
    JobRun renamed = run_job(spec_of({t / "s/f"}, t / "d", ConflictPolicy::Rename));
    CHECK(renamed.summary.complete());
    char to[64] = {};
    CHECK(::readlink((t / "d/f (1)").c_str(), to, sizeof to - 1) == 6);
    CHECK(std::string(to) == "../d/f");
    JobRun skipped = run_job(spec_of({t / "s/f"}, t / "d", ConflictPolicy::Skip));
    CHECK(skipped.summary.complete());
    REQUIRE(skipped.first(JobEvent::Kind::Skipped));
    CHECK(skipped.first(JobEvent::Kind::Skipped)->reason == LeftOut::Exists);
    JobRun over = run_job(spec_of({t / "s/f"}, t / "d", ConflictPolicy::Overwrite));
    CHECK_FALSE(over.summary.complete());
    struct stat st {};
    REQUIRE(::lstat((t / "d/f").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(read_file(t / "d/f") == "the only copy");
}

TEST_CASE("verify asks before each block whether to go on, and a no cancels it")
{
    TempDir t;
    write_pattern_file(t / "a", 4 * MiB, 1);
    UniqueFd a(::open((t / "a").c_str(), O_RDONLY | O_CLOEXEC));
    UniqueFd b(::open((t / "a").c_str(), O_RDONLY | O_CLOEXEC));
    int asked = 0;
    REQUIRE(verify_copy(a.get(), b.get(), 4 * MiB, "a", true, [&] { return ++asked > 0; }).ok());
    CHECK(asked == 4); // before each block of 1 MiB
    asked = 0;
    const Status s = verify_copy(a.get(), b.get(), 4 * MiB, "a", true, [&] { return ++asked < 3; });
    CHECK(s.err() == ECANCELED);
    CHECK(asked == 3);
}

TEST_CASE("a pulled stick is said as such, on the destination only")
{
    TempDir t;
    // A fake sysfs: the stick's disk "sdz" is listed while plugged in.
    mkdir_p(t / "block");
    mkdir_p(t / "block/sdz");
    write_text_file(t / "block/sdz/dev", "8:240\n");
    DeviceInfo stick;
    stick.disk = "sdz";
    stick.removable = true;
    const Status eio = Status::destination(EIO, "sendfile", "/stick/file");

    SECTION("plugged in: an EIO is the device's own error")
    {
        const Status s = explain_device_loss(eio, stick, t.path(), 0.0);
        CHECK_FALSE(s.device_removed());
        CHECK(s.detail().empty());
    }
    SECTION("gone from sysfs: removed, and the message says so")
    {
        REQUIRE(::unlink((t / "block/sdz/dev").c_str()) == 0);
        const Status s = explain_device_loss(eio, stick, t.path(), 0.0);
        CHECK(s.device_removed());
        CHECK(s.message().find("the device was removed") != std::string::npos);
        CHECK(s.err() == EIO);
        // The same errno from the source side is the source's problem.
        const Status src = explain_device_loss(Status::source(EIO, "read source", "/card/f"), stick, t.path(), 0.0);
        CHECK_FALSE(src.device_removed());
    }
    SECTION("ENODEV needs no look at sysfs")
    {
        const Status s = explain_device_loss(Status::destination(ENODEV, "write", "/stick/f"), stick, t.path(), 0.0);
        CHECK(s.device_removed());
    }
}

TEST_CASE("a share that stops answering is said as such, never as a device removed")
{
    DeviceInfo nas;
    nas.fs_type = "nfs4";
    nas.mount_point = "/mnt/nas";
    for (int err : {EIO, ETIMEDOUT, ENOTCONN}) {
        CAPTURE(err);
        const Status s = explain_device_loss(Status::destination(err, "fdatasync", "/mnt/nas/big.iso"), nas);
        CHECK_FALSE(s.device_removed());
        CHECK(s.message().find("the share at /mnt/nas stopped answering") != std::string::npos);
        CHECK(s.message().find("run the same copy again") != std::string::npos);
        CHECK(is_device_fatal(err)); // the job stops: every next file would wait for the same timeout
        CHECK(keeps_part_file(err)); // and what the share has stays for the rerun
    }
    // A full share is not a lost one.
    const Status full = explain_device_loss(Status::destination(ENOSPC, "write", "/mnt/nas/big.iso"), nas);
    CHECK(full.message().find("stopped answering") == std::string::npos);
}

namespace {
// Files "f0", "f1", ... in |t|, each holding its own name, handed to |batch| the way copy_job does; with
// |pending_times|, mode 0600 and a time of 1,600,000,000 + i seconds are left for the batch to set as it settles.
void add_files(SmallFileBatch &batch, const TempDir &t, int files, ConflictPolicy policy, bool pending_times)
{
    auto dir = std::make_shared<const UniqueFd>(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; i < files; ++i) {
        const std::string name = "f" + std::to_string(i);
        auto part = PartFile::create(dir, t.path(), name, 0644);
        REQUIRE(part.ok());
        REQUIRE(::write(part->fd(), name.data(), name.size()) == ssize_t(name.size()));
        std::optional<PendingAttributes> later;
        if (pending_times)
            later = PendingAttributes {0600, {1'600'000'000 + i, 0}};
        batch.add({std::move(part.value()), name, name.size(), policy, {}, {}, {}, false, {}, {}, {}, later, {}, {}});
    }
}
} // namespace

TEST_CASE("group sync: in the background on journaling filesystems, on the job's thread on FAT, exFAT and NTFS")
{
    CHECK(choose_group_sync(0xef53) == GroupSync::Background);     // ext4
    CHECK(choose_group_sync(0x58465342) == GroupSync::Background); // xfs
    CHECK(choose_group_sync(0x9123683e) == GroupSync::Background); // btrfs
    CHECK(choose_group_sync(0x4d44) == GroupSync::Inline);         // vfat
    CHECK(choose_group_sync(0x2011bab0) == GroupSync::Inline);     // exfat
    CHECK(choose_group_sync(0x7366746e) == GroupSync::Inline);     // ntfs3

    TempDir t;
    struct Threads : FaultSyscalls {
        std::mutex mutex;
        std::vector<std::thread::id> syncers;
        int raw_syncfs(int fd) override
        {
            {
                std::lock_guard lock(mutex);
                syncers.push_back(std::this_thread::get_id());
            }
            return FaultSyscalls::raw_syncfs(fd);
        }
    } fs;
    ScopedSyscalls seam(fs);
    const GroupSync mode = GENERATE(GroupSync::Background, GroupSync::Inline);
    std::vector<std::string> published;
    SmallFileBatch::Hooks hooks;
    hooks.durable = [](const BatchedFile &) {};
    hooks.failed = [](BatchedFile &f, Status s) { FAIL(f.source << ": " << s.message()); };
    hooks.published = [&](BatchedFile &f) { published.push_back(f.target); };
    {
        SmallFileBatch batch(WritebackMode::Windows, mode, BatchLimits {1 << 20, 16}, false, hooks);
        add_files(batch, t, 40, ConflictPolicy::Refuse, false);
        batch.flush();
        CHECK(batch.empty());
    }
    CHECK(published.size() == 40);
    CHECK(read_file(t / "f39") == "f39");
    CHECK(part_files(t.path()).empty());
    REQUIRE_FALSE(fs.syncers.empty());
    const bool all_here =
        std::all_of(fs.syncers.begin(), fs.syncers.end(), [](auto id) { return id == std::this_thread::get_id(); });
    CHECK(all_here == (mode == GroupSync::Inline));
}

namespace {

struct BatchOutcome {
    std::vector<std::string> published;
    std::vector<std::pair<std::string, Status>> failed;
    int closes_done_at_flush = 0; // closes returned when flush() or discard() did
};

// |files| small files through a batch on |t|, the way copy_job hands them over, with a closer of |closers| threads
// (none: 0); then the batch is flushed, or discarded as a cancel does.
BatchOutcome run_batch(const TempDir &t, FlushMount &fs, int files, std::size_t closers, bool discard = false)
{
    BatchOutcome out;
    SmallFileBatch::Hooks hooks;
    hooks.durable = [](const BatchedFile &) {};
    hooks.failed = [&](BatchedFile &f, Status s) { out.failed.emplace_back(f.source, std::move(s)); };
    hooks.published = [&](BatchedFile &f) {
        CHECK_FALSE(f.part.valid()); // closed, or handed to the closer
        out.published.push_back(f.target);
    };
    std::optional<BackgroundCloser> closer;
    if (closers > 0)
        closer.emplace(closers);
    SmallFileBatch batch(WritebackMode::Windows, GroupSync::Inline, BatchLimits {1 << 20, 64}, true, hooks,
                         closer ? &*closer : nullptr);
    add_files(batch, t, files, ConflictPolicy::Refuse, false);
    if (discard)
        batch.discard();
    else
        batch.flush();
    out.closes_done_at_flush = fs.closes_done.load();
    CHECK(batch.empty());
    return out;
}

} // namespace

TEST_CASE("small files on a vfat flush mount: closed side by side off the job's thread once durable")
{
    TempDir t;
    FlushMount fs;
    ScopedSyscalls seam(fs);
    const auto started = std::chrono::steady_clock::now();
    BatchOutcome out = run_batch(t, fs, 96, 16);
    const auto took = std::chrono::steady_clock::now() - started;
    CHECK(out.failed.empty());
    CHECK(out.published.size() == 96);
    CHECK(read_file(t / "f95") == "f95");
    CHECK(part_files(t.path()).empty());
    CHECK(fs.part_closes.load() == 96);
    CHECK(fs.closes_off_job_thread.load() == 96);
    CHECK(fs.closes_after_sync.load() == 96);
    CHECK(fs.most_closing.load() > 4);
    // One after another they would take 96 x 20 ms.
    CHECK(took < std::chrono::milliseconds(96 * 20 * 3 / 4));
}

TEST_CASE("small files on a vfat flush mount: the batch is done before the closes, which its closer finishes")
{
    TempDir t;
    FlushMount fs;
    fs.sleep = std::chrono::milliseconds(2000); // well beyond the batch's own syncs
    ScopedSyscalls seam(fs);
    BatchOutcome out = run_batch(t, fs, 8, 8);
    CHECK(out.published.size() == 8);
    // Every file was published while its close still slept: the copy did not wait for one.
    CHECK(out.closes_done_at_flush == 0);
    CHECK(fs.closes_done.load() == 8); // the closer drained as it went
    CHECK(part_files(t.path()).empty());
}

TEST_CASE("small files on a vfat flush mount: a cancel publishes the durable group already renamed, removes the rest")
{
    TempDir t;
    FlushMount fs;
    ScopedSyscalls seam(fs);
    // The first group is 64 / 16 = 4 files: handed off, synced and renamed when the batch is discarded.
    BatchOutcome out = run_batch(t, fs, 6, 8, true);
    CHECK(out.failed.empty());
    CHECK(out.published.size() == 4);
    CHECK(read_file(t / "f3") == "f3");
    CHECK_FALSE(exists(t / "f4"));
    CHECK_FALSE(exists(t / "f5"));
    CHECK(part_files(t.path()).empty());
    CHECK(fs.part_closes.load() == 6);
    CHECK(fs.closes_after_sync.load() == 4);
    // All closed under their part names: the four durable ones before their renames, the two removed before their
    // part files went, so their pages were dropped, not written.
    CHECK(fs.closes_of_present_parts.load() == 6);
}

TEST_CASE("small files elsewhere: part files close one after another on the job's thread, before their renames")
{
    TempDir t;
    FlushMount fs;
    ScopedSyscalls seam(fs);
    BatchOutcome out = run_batch(t, fs, 12, 0);
    CHECK(out.published.size() == 12);
    CHECK(fs.part_closes.load() == 12);
    CHECK(fs.closes_off_job_thread.load() == 0);
    CHECK(fs.closes_after_sync.load() == 12); // after the group's sync, before its renames
    CHECK(fs.closes_after_rename.load() == 0);
    CHECK(fs.most_closing.load() == 1);
}

TEST_CASE("small files on a vfat flush mount: a close failing once the data is durable takes nothing away")
{
    // By then the file's data and size are durable: Linux's close can only repeat what a sync said first.
    TempDir t;
    FlushMount fs;
    fs.failing_part = ".f7.part";
    ScopedSyscalls seam(fs);
    BatchOutcome out = run_batch(t, fs, 20, 8);
    CHECK(fs.failed_closes.load() == 1);
    CHECK(out.failed.empty());
    CHECK(out.published.size() == 20);
    CHECK(read_file(t / "f7") == "f7");
    CHECK(part_files(t.path()).empty());
}

TEST_CASE("a job on a vfat flush mount: every written descriptor closed off its thread, all before it ends")
{
    TempDir t;
    make_small_tree(t / "tree", 12);
    write_pattern_file(t / "tree/big", 3 << 20); // past the small-file limit: published on its own
    mkdir_p(t / "out");
    FlushMount fs;
    fs.flush_everywhere(t / "mountinfo");
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    int closed_at_done = -1;
    JobSummary summary = run_copy_job(spec_of({t / "tree"}, t / "out"), {}, counters, [&](const JobEvent &e) {
        if (e.kind == JobEvent::Kind::Done)
            closed_at_done = fs.closes_done.load();
    });
    REQUIRE(summary.complete());
    CHECK(same_bytes(t / "tree/big", t / "out/tree/big"));
    CHECK(fs.part_closes.load() == 13);
    // The small files' after their group's sync; the big file's written descriptor goes with its last byte (the
    // test below), and its close may start before or after a sync.
    std::set<std::string> small_ones = fs.closed_after_sync;
    small_ones.erase("big");
    CHECK(small_ones.size() == 12);
    CHECK(fs.closes_off_job_thread.load() == 13);
    // An open descriptor keeps the stick busy: a job says "done" once its files are closed.
    CHECK(closed_at_done == 13);
}

// The last close of a written descriptor sleeps 100 ms on vfat with "flush": the job's end used to wait for the big
// file's, handed over after its rename. Now the written descriptor goes to the closer with the last byte, and the
// last windows, the data sync and everything after are waited for through a read-only descriptor.
TEST_CASE("a big file on a vfat flush mount: written descriptor closed with its last byte, synced through another")
{
    struct Ordered : FlushMount {
        std::atomic<int> seq {0}, last_write {0}, last_written_wait {0}, last_other_wait {0}, last_other_sync {0},
            closed_at {0}, read_only_closes_here {0}, read_only_closes_elsewhere {0};
        std::set<int> read_only_fds; // the part file opened for reading, by descriptor
        bool is_written(int fd)
        {
            std::lock_guard lock(mutex);
            return part_fds.count(fd) > 0;
        }
        static bool on_part_file(int fd)
        {
            char path[4096] = {};
            const std::string link = "/proc/self/fd/" + std::to_string(fd);
            const ssize_t n = ::readlink(link.c_str(), path, sizeof path - 1);
            return n > 5 && std::string_view(path, std::size_t(n)).ends_with(".part");
        }
        // |data_sync|: fdatasync or syncfs, not a window's wait.
        void waited(int fd, bool data_sync)
        {
            if (is_written(fd)) {
                last_written_wait = ++seq;
            } else if (on_part_file(fd)) {
                last_other_wait = ++seq;
                if (data_sync)
                    last_other_sync = last_other_wait.load();
            }
        }
        int raw_ficlone(int, int) override { return errno = EXDEV, -1; } // a stick: another filesystem
        ssize_t raw_copy_file_range(int, off_t *, int, off_t *, size_t) override { return errno = EXDEV, -1; }
        ssize_t raw_sendfile(int out, int in, off_t *off, size_t len) override
        {
            const ssize_t r = FlushMount::raw_sendfile(out, in, off, len);
            if (r > 0 && is_written(out))
                last_write = ++seq;
            return r;
        }
        ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off) override
        {
            const ssize_t r = FlushMount::raw_pwrite(fd, buf, len, off);
            if (r > 0 && is_written(fd))
                last_write = ++seq;
            return r;
        }
        int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags) override
        {
            if (flags & (SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER))
                waited(fd, false);
            return FlushMount::raw_sync_file_range(fd, off, len, flags);
        }
        int raw_fdatasync(int fd) override
        {
            waited(fd, true);
            return FlushMount::raw_fdatasync(fd);
        }
        int raw_syncfs(int fd) override
        {
            waited(fd, true);
            return FlushMount::raw_syncfs(fd);
        }
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            const int fd = FlushMount::raw_openat(dirfd, path, flags, mode);
            if (fd >= 0 && (flags & O_ACCMODE) == O_RDONLY && std::string_view(path).ends_with(".part")) {
                std::lock_guard lock(mutex);
                read_only_fds.insert(fd);
            }
            return fd;
        }
        int raw_close(int fd) override
        {
            if (is_written(fd))
                closed_at = ++seq;
            bool read_only = false;
            {
                std::lock_guard lock(mutex);
                read_only = read_only_fds.erase(fd) > 0;
            }
            if (read_only)
                ++(std::this_thread::get_id() == job_thread ? read_only_closes_here : read_only_closes_elsewhere);
            return FlushMount::raw_close(fd);
        }
    };
    TempDir t;
    write_pattern_file(t / "big", 24 << 20, 5);
    mkdir_p(t / "out");
    Ordered fs;
    fs.sleep = std::chrono::milliseconds(300);
    fs.mount_at(t / "out", t / "mountinfo", "vfat /dev/sdz1 rw,relatime,fmask=0022,dmask=0022,flush");
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    int closed_at_done = -1;
    const JobSummary summary = run_copy_job(spec_of({t / "big"}, t / "out"), {}, counters, [&](const JobEvent &e) {
        if (e.kind == JobEvent::Kind::Done)
            closed_at_done = fs.closes_done.load();
    });
    REQUIRE(summary.complete());
    CHECK(same_bytes(t / "big", t / "out/big"));
    CHECK(part_files(t / "out").empty());
    REQUIRE(fs.last_write.load() > 0);
    CHECK(fs.part_closes.load() == 1);
    CHECK(fs.closes_off_job_thread.load() == 1);
    // Nothing waited through the written descriptor after its last byte; the read-only one waited instead, and
    // made the data durable.
    CHECK(fs.last_written_wait.load() < fs.last_write.load());
    CHECK(fs.last_other_wait.load() > fs.last_write.load());
    CHECK(fs.last_other_sync.load() > fs.last_write.load());
    CHECK(fs.closed_at.load() > fs.last_write.load());
    // The stick is not busy once the job says "done": the close is over by then.
    CHECK(closed_at_done == 1);
    CHECK(counters.durable_bytes.load() == uint64_t(24) << 20);
    // A read-only descriptor's close does not sleep: closed by the job, not on a thread of the closer's.
    CHECK(fs.read_only_closes_here.load() == 1);
    CHECK(fs.read_only_closes_elsewhere.load() == 0);
}

TEST_CASE("a big file on a vfat flush mount: its data sync failing after the written descriptor went is said, the "
          "part file kept")
{
    TempDir t;
    write_pattern_file(t / "big", 24 << 20, 6);
    mkdir_p(t / "out");
    FlushMount fs;
    fs.mount_at(t / "out", t / "mountinfo", "vfat /dev/sdz1 rw,relatime,fmask=0022,dmask=0022,flush");
    fs.fdatasync_errno_once = EIO; // the job's first: the publish's, through the read-only descriptor
    ScopedSyscalls seam(fs);
    JobRun run = run_job(spec_of({t / "big"}, t / "out"));
    CHECK_FALSE(run.summary.ok());
    const JobEvent *error = run.first(JobEvent::Kind::Error);
    REQUIRE(error != nullptr);
    CHECK(error->status.err() == EIO);
    CHECK(error->status.on_destination());
    CHECK_FALSE(exists(t / "out/big"));
    CHECK(exists(t / "out/.big.part")); // what reached the stick stays for a resume
    CHECK(fs.part_closes.load() == 1);
    CHECK(fs.closes_off_job_thread.load() == 1); // handed over with the last byte
    CHECK(fs.closes_done.load() == 1);           // and closed when the job ended
}

TEST_CASE("a job given a closer (the KIO worker's) ends before its files' closes, which that closer finishes")
{
    TempDir t;
    make_small_tree(t / "tree", 3);
    mkdir_p(t / "out");
    FlushMount fs;
    fs.sleep = std::chrono::milliseconds(2000); // well beyond the job's own syncs
    fs.flush_everywhere(t / "mountinfo");
    ScopedSyscalls seam(fs);
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.closer = std::make_shared<BackgroundCloser>(4);
    JobRun run = run_job(spec);
    REQUIRE(run.summary.complete());
    CHECK(run.summary.files_copied == 3);
    CHECK(fs.closes_done.load() == 0);
    spec.closer->drain();
    CHECK(fs.closes_done.load() == 3);
    CHECK(fs.closes_after_sync.load() == 3);
}

// A share's client writes again, at the close, what it could not send, and waits for the server as long again
// (NFS, soft mount, link gone: 30 s after the failed sync's 54 s). The user hears of it before that close, and the
// job ends without waiting for it (close_unwaited), but after its last syncfs, which sends what the client still
// holds for the share and fails with it: without that sync, what the client held failed once the link was back,
// into the errors the next run's syncfs reports (share-drop-nfs4, 2026-11-29).
TEST_CASE("a share failing under a big file: the error and the job's end come before the part file's slow close, "
          "after the job's last sync")
{
    TempDir t;
    write_pattern_file(t / "big", 8 << 20, 3);
    mkdir_p(t / "out");
    FlushMount fs;
    fs.sleep = std::chrono::milliseconds(3000); // the close writing again, and timing out
    fs.share_at(t / "out", t / "mountinfo");
    ScopedSyscalls seam(fs);
    fs.data_errno = EIO;
    fs.fail_after_bytes = 3 << 20;
    ProgressCounters counters;
    int closed_at_error = -1, closed_at_done = -1;
    std::string said;
    const auto began = std::chrono::steady_clock::now();
    JobSummary summary = run_copy_job(spec_of({t / "big"}, t / "out"), {}, counters, [&](const JobEvent &e) {
        if (e.kind == JobEvent::Kind::Error && closed_at_error < 0) {
            closed_at_error = fs.closes_done.load();
            said = e.message;
        }
        if (e.kind == JobEvent::Kind::Done)
            closed_at_done = fs.closes_done.load();
    });
    const auto ended = std::chrono::steady_clock::now() - began;
    INFO(said);
    CHECK_FALSE(summary.ok());
    CHECK(said.find("share") != std::string::npos); // the probe saw the share
    CHECK(closed_at_error == 0);                    // said while the part file's close still waited
    CHECK(closed_at_done == 0);                     // and done too
    CHECK(ended < std::chrono::milliseconds(2500)); // not a close's 3 s later
    CHECK(fs.syncfs_calls.load() == 1);             // but after the job's last sync
    CHECK(exists(t / "out/.big.part"));             // kept for a resume
    CHECK_FALSE(exists(t / "out/big"));
    wait_unwaited_closes(); // before the seam goes
    CHECK(fs.part_closes.load() == 1);
    CHECK(fs.closes_off_job_thread.load() == 1);
    CHECK(fs.closes_done.load() == 1);
}

// Where reserving is cheap a big file's space is taken before its first byte; not on the kernel's FAT, whose
// fallocate adds the file's clusters one at a time before anything is written (reserves_space_up_front).
TEST_CASE("a big file's space is reserved before its first byte on ext4, not on FAT")
{
    struct Reserving : FlushMount {
        std::atomic<int> reserves {0};
        int raw_fallocate(int fd, int mode, off_t off, off_t len) override
        {
            ++reserves;
            return FlushMount::raw_fallocate(fd, mode, off, len);
        }
    };
    for (const char *mount : {"ext4 /dev/sdz1 rw,relatime", "vfat /dev/sdz1 rw,relatime,fmask=0022,dmask=0022"}) {
        CAPTURE(mount);
        TempDir t;
        write_pattern_file(t / "big", 8 << 20, 3);
        mkdir_p(t / "out");
        Reserving fs;
        fs.mount_at(t / "out", t / "mountinfo", mount);
        ScopedSyscalls seam(fs);
        ProgressCounters counters;
        const JobSummary summary = run_copy_job(spec_of({t / "big"}, t / "out"), {}, counters, [](const JobEvent &) {});
        CHECK(summary.ok());
        CHECK(same_bytes(t / "big", t / "out/big"));
        CHECK(fs.reserves.load() == (std::string_view(mount).starts_with("ext4") ? 1 : 0));
    }
}

TEST_CASE_METHOD(Faulted, "move: on the same filesystem, one rename")
{
    make_small_tree(t / "tree", 5);
    mkdir_p(t / "out");
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.complete());
    CHECK(run.summary.files_copied == 5);
    CHECK_FALSE(exists(t / "tree"));
    CHECK(exists(t / "out/tree/f4"));
    CHECK(fs.moved.load() == 0); // not a byte went through a copy
    CHECK(run.counters->durable_bytes.load() == run.counters->total_bytes.load());
}

TEST_CASE_METHOD(Faulted,
                 "move with a manifest: on the same filesystem still one rename, the sums read from the moved files")
{
    make_small_tree(t / "tree", 4);
    mkdir_p(t / "tree/sub");
    write_pattern_file(t / "tree/sub/big", 2 * MiB, 9);
    mkdir_p(t / "out");
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    spec.manifest = true;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.complete());
    CHECK_FALSE(exists(t / "tree"));
    CHECK(run.summary.manifest_files == 5);
    const std::string manifest = read_file(t / "out/SHA256SUMS");
    CHECK(fs.moved.load() == manifest.size()); // the files renamed, not copied: only the manifest was written
    CHECK(std::count(manifest.begin(), manifest.end(), '\n') == 5);
    CHECK(manifest.find("tree/sub/big\n") != std::string::npos);
    // coreutils' own check of every sum against the moved files
    CHECK(std::system(("cd '" + t / "out" + "' && sha256sum --quiet -c SHA256SUMS").c_str()) == 0);
}

TEST_CASE("move: sources go once their copies are published, and what failed stays with its folder")
{
    TempDir t;
    make_small_tree(t / "tree", 6);
    mkdir_p(t / "tree/sub");
    write_pattern_file(t / "tree/sub/big", 3 * MiB, 7);
    write_pattern_file(t / "tree/sub/bad", 2000, 8);
    REQUIRE(::symlink("f0", (t / "tree/link").c_str()) == 0);
    mkdir_p(t / "out");
    struct Refuse : FaultSyscalls {
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            if (std::string(path) == ".bad.part") {
                errno = EACCES; // this one file can't be created at the destination
                return -1;
            }
            return FaultSyscalls::raw_openat(dirfd, path, flags, mode);
        }
    } fs;
    ScopedSyscalls seam(fs);
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    spec.hash_sources = true; // needs the bytes read, so this is a copy and a removal, not a rename
    JobRun run = run_job(spec);
    CHECK(run.summary.errors == 1);
    CHECK(run.summary.files_copied == 8); // six small files, the big one, the link
    for (int i = 0; i < 6; ++i) {
        CHECK_FALSE(exists(t / ("tree/f" + std::to_string(i))));
        CHECK(exists(t / ("out/tree/f" + std::to_string(i))));
    }
    CHECK_FALSE(exists(t / "tree/sub/big"));
    CHECK(file_size(t / "out/tree/sub/big") == 3 * MiB);
    CHECK_FALSE(exists(t / "tree/link"));
    // The file that failed is still at the source, and so are the folders holding it.
    CHECK(exists(t / "tree/sub/bad"));
    CHECK_FALSE(exists(t / "out/tree/sub/bad"));
    CHECK(part_files(t / "out/tree/sub").empty());
}

TEST_CASE("move: a target with the same bytes counts as moved, different bytes are refused and the source kept")
{
    TempDir t;
    make_small_tree(t / "tree", 2);
    mkdir_p(t / "out");
    mkdir_p(t / "out/tree");
    // A move killed after publishing f0 and before removing its source; f1's target is another file.
    write_pattern_file(t / "out/tree/f0", 3000, 1); // make_small_tree's f0, byte for byte
    write_text_file(t / "out/tree/f1", "something else");
    // An empty file's target is a FIFO: no bytes to compare, and still no copy.
    write_text_file(t / "tree/empty", "");
    REQUIRE(::mkfifo((t / "out/tree/empty").c_str(), 0644) == 0);
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    spec.hash_sources = true;
    JobRun run = run_job(spec);
    CHECK_FALSE(exists(t / "tree/f0"));
    CHECK(exists(t / "tree/f1"));
    CHECK(exists(t / "tree/empty"));
    CHECK(read_file(t / "out/tree/f1") == "something else");
    CHECK(run.summary.errors == 2);
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EEXIST);
}

TEST_CASE("move: a source written to while it was copied is kept, and so is one replaced under its name")
{
    TempDir t;
    make_small_tree(t / "tree", 4);
    write_pattern_file(t / "tree/big", 3 * MiB, 7);
    mkdir_p(t / "out");
    // As each copy takes its name, its source changes: f0 and big are appended to (an editor saving, a log); f1
    // is replaced by another file of the same size and mtime (rsync's or cp -p's atomic save); f3 is rewritten in
    // place with the same size and its mtime put back (cp -p over it); f2 is left alone.
    struct ChangedMeanwhile : FaultSyscalls {
        std::string tree;
        static void put_mtime_back(const std::string &path, const struct stat &was)
        {
            const struct timespec times[2] = {was.st_atim, was.st_mtim};
            REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
        }
        int raw_renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags) override
        {
            const int r = FaultSyscalls::raw_renameat2(olddir, oldpath, newdir, newpath, flags);
            const std::string name = newpath, path = tree + "/" + name;
            struct stat was {};
            if (r != 0 || ::stat(path.c_str(), &was) != 0)
                return r;
            if (name == "f0" || name == "big") {
                std::ofstream(path, std::ios::app) << "more";
            } else if (name == "f1") {
                const std::string other = tree + "/.f1.new";
                write_pattern_file(other, uint64_t(was.st_size), 99);
                put_mtime_back(other, was);
                ::rename(other.c_str(), path.c_str());
            } else if (name == "f3") {
                // Past the clock tick of the walk's stat, so the change time can differ (coarse timestamps).
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                write_pattern_file(path, uint64_t(was.st_size), 98);
                put_mtime_back(path, was);
            }
            return r;
        }
    } fs;
    fs.tree = t / "tree";
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    spec.hash_sources = true; // a copy and a removal, not a rename
    JobRun run;
    {
        ScopedSyscalls seam(fs);
        run = run_job(spec);
    }
    CHECK(run.summary.errors == 4);
    for (const std::string kept : {"f0", "f1", "f3", "big"}) {
        INFO(kept);
        CHECK(exists(t / ("tree/" + kept)));
        CHECK(exists(t / ("out/tree/" + kept)));
    }
    CHECK(file_size(t / "tree/big") == 3 * MiB + 4);
    CHECK(file_size(t / "out/tree/big") == 3 * MiB); // as it was read
    CHECK_FALSE(exists(t / "tree/f2"));
    CHECK(exists(t / "out/tree/f2"));
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.message().find("changed while it was moved") != std::string::npos);
}

TEST_CASE("move: hard links to one file are each moved, though removing one name changes the others' ctime")
{
    TempDir t;
    make_small_tree(t / "tree", 2);
    write_pattern_file(t / "tree/big", 3 * MiB, 5);
    REQUIRE(::link((t / "tree/f0").c_str(), (t / "tree/f0-again").c_str()) == 0);
    REQUIRE(::link((t / "tree/big").c_str(), (t / "tree/big-again").c_str()) == 0);
    mkdir_p(t / "out");
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.move = true;
    spec.hash_sources = true; // a copy and a removal, not a rename
    JobRun run = run_job(spec);
    CHECK(run.summary.complete());
    CHECK(run.summary.errors == 0);
    CHECK_FALSE(exists(t / "tree"));
    CHECK(read_file(t / "out/tree/f0-again") == read_file(t / "out/tree/f0"));
    CHECK(file_size(t / "out/tree/big-again") == 3 * MiB);
}

TEST_CASE("two sources with one name and overwrite: the second never replaces the first's copy, moved or not")
{
    TempDir t;
    for (const char *dir : {"a", "b", "out", "out2"})
        mkdir_p(t / dir);
    write_text_file(t / "a/x", "first");
    write_text_file(t / "b/x", "second");
    JobRun copied = run_job(spec_of({t / "a/x", t / "b/x"}, t / "out", ConflictPolicy::Overwrite));
    CHECK(read_file(t / "out/x") == "first");
    CHECK(copied.summary.errors == 1);
    REQUIRE(copied.first(JobEvent::Kind::Error));
    CHECK(copied.first(JobEvent::Kind::Error)->status.message().find("copied by this job") != std::string::npos);
    // A move: a's source is gone once its copy is published, so that copy is the only one left of it.
    JobSpec move = spec_of({t / "a/x", t / "b/x"}, t / "out2", ConflictPolicy::Overwrite);
    move.move = true;
    JobRun moved = run_job(move);
    CHECK(read_file(t / "out2/x") == "first");
    CHECK_FALSE(exists(t / "a/x"));
    CHECK(read_file(t / "b/x") == "second"); // not moved: its source stays
    CHECK(moved.summary.errors == 1);
    // Overwriting what was there before the job is still what --overwrite does.
    write_text_file(t / "b/y", "new");
    write_text_file(t / "out2/y", "old");
    JobRun over = run_job(spec_of({t / "b/y"}, t / "out2", ConflictPolicy::Overwrite));
    CHECK(over.summary.ok());
    CHECK(read_file(t / "out2/y") == "new");
}

TEST_CASE("two folders merged with overwrite: the second's files never replace the first's copies, moved or not")
{
    TempDir t;
    // Folders merged: a's moved by one rename, b's files then meet a's under the same names.
    for (const char *dir : {"a", "b", "a/photos", "b/photos", "out3"})
        mkdir_p(t / dir);
    write_text_file(t / "a/photos/p", "a's");
    write_text_file(t / "b/photos/p", "b's");
    write_text_file(t / "b/photos/q", "only b's");
    JobSpec merge = spec_of({t / "a/photos", t / "b/photos"}, t / "out3", ConflictPolicy::Overwrite);
    merge.move = true;
    JobRun merged = run_job(merge);
    CHECK(read_file(t / "out3/photos/p") == "a's");
    CHECK(read_file(t / "out3/photos/q") == "only b's");
    CHECK(read_file(t / "b/photos/p") == "b's");
    CHECK(merged.summary.errors == 1);
    // A copy merging two folders deeper down: a's names were left behind by the walk, its copies are still its own.
    for (const char *dir : {"c", "c/top", "c/top/sub", "d", "d/top", "d/top/sub", "out4"})
        mkdir_p(t / dir);
    write_text_file(t / "c/top/sub/p", "c's");
    write_text_file(t / "d/top/sub/p", "d's");
    write_text_file(t / "c/top/r", "c's r");
    JobRun deep = run_job(spec_of({t / "c/top", t / "d/top"}, t / "out4", ConflictPolicy::Overwrite));
    CHECK(read_file(t / "out4/top/sub/p") == "c's");
    CHECK(deep.summary.errors == 1);
}

TEST_CASE("a link under a name a moved file took does not replace that file either")
{
    TempDir t;
    for (const char *dir : {"e", "f", "out5"})
        mkdir_p(t / dir);
    write_text_file(t / "e/z", "e's file");
    REQUIRE(::symlink("elsewhere", (t / "f/z").c_str()) == 0);
    JobSpec links = spec_of({t / "e/z", t / "f/z"}, t / "out5", ConflictPolicy::Overwrite);
    links.move = true;
    JobRun linked = run_job(links);
    CHECK(read_file(t / "out5/z") == "e's file");
    struct stat link_st {};
    CHECK((::lstat((t / "f/z").c_str(), &link_st) == 0 && S_ISLNK(link_st.st_mode)));
    CHECK(linked.summary.errors == 1);
}

TEST_CASE("a source folder holding an earlier copy's part file beside its file: the file is copied, the part left")
{
    TempDir t;
    mkdir_p(t / "stick");
    mkdir_p(t / "out");
    write_pattern_file(t / "stick/x", 3000, 1);
    write_pattern_file(t / "stick/.x.part", 2000, 2); // an interrupted copy of x onto this stick, once
    write_pattern_file(t / "stick/big", 3 * MiB, 3);
    write_pattern_file(t / "stick/.big.part", MiB, 4);
    write_pattern_file(t / "stick/.alone.part", 100, 5); // no "alone" beside it: an ordinary file
    for (const bool move : {false, true}) {
        INFO("move " << move);
        const std::string out = t / (move ? "out/moved" : "out/copied");
        mkdir_p(out);
        JobSpec spec = spec_of({t / "stick"}, out);
        spec.move = move;
        spec.hash_sources = true; // a move copies and removes
        JobRun run = run_job(spec);
        CHECK(run.summary.errors == 0);
        CHECK(run.summary.files_skipped == 2);
        CHECK(file_size(out + "/stick/x") == 3000);
        CHECK(file_size(out + "/stick/big") == 3 * MiB);
        CHECK(exists(out + "/stick/.alone.part"));
        CHECK_FALSE(exists(out + "/stick/.x.part"));
        CHECK_FALSE(exists(out + "/stick/.big.part"));
        REQUIRE(run.first(JobEvent::Kind::Skipped));
        CHECK(run.first(JobEvent::Kind::Skipped)->message.find("unfinished copy") != std::string::npos);
    }
    // Moved: the part files stay at the source, the rest is gone.
    CHECK(exists(t / "stick/.x.part"));
    CHECK(exists(t / "stick/.big.part"));
    CHECK_FALSE(exists(t / "stick/x"));
    // Named on the command line, a part file is what the user wants: it is copied.
    write_pattern_file(t / "stick/x", 3000, 1);
    mkdir_p(t / "rescue");
    JobRun rescued = run_job(spec_of({t / "stick/.x.part"}, t / "rescue"));
    CHECK(rescued.summary.complete());
    CHECK(file_size(t / "rescue/.x.part") == 2000);
}

TEST_CASE("small files start their own writeback on removable devices and on FAT, not on a fixed disk's ext4")
{
    DeviceInfo fixed_ext4;
    fixed_ext4.writeback = WritebackMode::Windows;
    fixed_ext4.group_sync = GroupSync::Background;
    CHECK_FALSE(choose_route(fixed_ext4, 1).small_file_writeback);
    DeviceInfo stick_ext4 = fixed_ext4;
    stick_ext4.removable = true;
    CHECK(choose_route(stick_ext4, 1).small_file_writeback);
    DeviceInfo fixed_vfat = fixed_ext4;
    fixed_vfat.group_sync = GroupSync::Inline;
    CHECK(choose_route(fixed_vfat, 1).small_file_writeback);
    DeviceInfo fuse = stick_ext4;
    fuse.writeback = WritebackMode::ChunkSync; // sync_file_range can't reach a FUSE daemon's data
    CHECK_FALSE(choose_route(fuse, 1).small_file_writeback);
}

namespace {
// fdatasync as a share answers it: a round trip of 20 ms, whoever waits for it. Counts how many wait at once.
struct RoundTripSync : FaultSyscalls {
    std::atomic<int> syncing {0}, most_syncing {0};
    std::atomic<int> created_while_syncing {0}; // part files the job created while a group's syncs were under way
    std::atomic<int> creates {0};
    // Each sync waits (up to 200 ms) for the job to create one more file: it can only while the group settles off
    // its thread.
    bool sync_waits_for_create = false;
    std::chrono::milliseconds create_delay {0}; // a create's own round trip
    std::atomic<int> creating {0}, most_creating {0};
    std::string refuse_create; // a part file whose create fails with EACCES
    int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
    {
        if (flags & O_CREAT) {
            if (path == refuse_create) {
                errno = EACCES;
                return -1;
            }
            const int now = ++creating;
            for (int prev = most_creating.load(); now > prev && !most_creating.compare_exchange_weak(prev, now);) {
            }
            std::this_thread::sleep_for(create_delay);
            --creating;
            if (syncing.load() > 0)
                ++created_while_syncing;
            ++creates;
        }
        return FaultSyscalls::raw_openat(dirfd, path, flags, mode);
    }
    int raw_fdatasync(int fd) override
    {
        const int seen = creates.load();
        const int now = ++syncing;
        for (int i = 0; sync_waits_for_create && creates.load() == seen && i < 200; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int prev = most_syncing.load(); now > prev && !most_syncing.compare_exchange_weak(prev, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        --syncing;
        return FaultSyscalls::raw_fdatasync(fd);
    }
};

// A ChunkSync batch (a share) with |threads| settle threads, groups of 4, 8, 16... files.
SmallFileBatch share_batch(SmallFileBatch::Hooks hooks, unsigned threads = 8)
{
    BatchLimits limits {1 << 20, 64};
    limits.settle_threads = threads;
    return SmallFileBatch(WritebackMode::ChunkSync, GroupSync::Inline, limits, false, std::move(hooks), nullptr);
}

// share_batch() with its published targets in |published|; a failed file fails the test.
SmallFileBatch share_batch(std::vector<std::string> &published, unsigned threads)
{
    SmallFileBatch::Hooks hooks;
    hooks.durable = [](const BatchedFile &) {};
    hooks.failed = [](BatchedFile &f, Status s) { FAIL(f.source << ": " << s.message()); };
    hooks.published = [&published](BatchedFile &f) { published.push_back(f.target); };
    return share_batch(std::move(hooks), threads);
}

// |files| small files through share_batch(), under |policy|.
std::vector<std::string> run_share_batch(const TempDir &t, int files, unsigned threads, ConflictPolicy policy)
{
    std::vector<std::string> published;
    SmallFileBatch batch = share_batch(published, threads);
    add_files(batch, t, files, policy, true); // their times set as each group settles, as a job does on a share
    batch.flush();
    return published;
}
} // namespace

TEST_CASE("small files on a share: syncs and renames of a group run side by side, published in the files' order")
{
    TempDir t;
    RoundTripSync fs;
    ScopedSyscalls seam(fs);
    const auto started = std::chrono::steady_clock::now();
    const std::vector<std::string> published = run_share_batch(t, 48, 8, ConflictPolicy::Refuse);
    const auto took = std::chrono::steady_clock::now() - started;
    REQUIRE(published.size() == 48);
    for (int i = 0; i < 48; ++i) {
        CHECK(published[size_t(i)] == t / ("f" + std::to_string(i))); // reported in the order they came
        CHECK(read_file(t / ("f" + std::to_string(i))) == "f" + std::to_string(i));
        struct stat st {};
        REQUIRE(::stat((t / ("f" + std::to_string(i))).c_str(), &st) == 0);
        CHECK(st.st_mtim.tv_sec == 1'600'000'000 + i); // set beside the sync, not lost
        CHECK((st.st_mode & 07777) == 0600);
    }
    CHECK(part_files(t.path()).empty());
    CHECK(fs.most_syncing.load() > 1);
    // One after another: 48 x 20 ms, plus a folder sync a group.
    CHECK(took < std::chrono::milliseconds(48 * 20 * 3 / 4));
}

TEST_CASE("small files on a share: a group settles while the job writes the next one")
{
    TempDir t;
    RoundTripSync fs;
    fs.sync_waits_for_create = true;
    fs.create_delay = std::chrono::milliseconds(5);
    ScopedSyscalls seam(fs);
    const std::vector<std::string> published = run_share_batch(t, 48, 8, ConflictPolicy::Refuse);
    REQUIRE(published.size() == 48);
    for (int i = 0; i < 48; ++i)
        CHECK(published[size_t(i)] == t / ("f" + std::to_string(i))); // still reported in the order they came
    CHECK(part_files(t.path()).empty());
    // Groups of 4, 8, 16, then 20 files: files of each group after the first are created while the one before
    // settles (one after the other, none would be).
    CHECK(fs.created_while_syncing.load() >= 3);
}

TEST_CASE("small files on a share: a group that must settle on the job's thread waits for the one before")
{
    TempDir t;
    RoundTripSync fs;
    ScopedSyscalls seam(fs);
    std::vector<std::string> published;
    SmallFileBatch batch = share_batch(published, 8);
    auto dir = std::make_shared<const UniqueFd>(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    // A first group of four settles in the background; the second has a "Keep both" file, so it settles here.
    for (int i = 0; i < 8; ++i) {
        const std::string name = "f" + std::to_string(i);
        auto part = PartFile::create(dir, t.path(), name, 0644);
        REQUIRE(part.ok());
        REQUIRE(::write(part->fd(), name.data(), name.size()) == ssize_t(name.size()));
        const ConflictPolicy policy = i == 6 ? ConflictPolicy::Rename : ConflictPolicy::Refuse;
        batch.add({std::move(part.value()), name, name.size(), policy, {}, {}, {}, false, {}, {}, {}, {}, {}, {}});
    }
    batch.flush();
    REQUIRE(published.size() == 8);
    for (int i = 0; i < 8; ++i)
        CHECK(published[size_t(i)] == t / ("f" + std::to_string(i)));
}

TEST_CASE("small files on a share: a group's files settle a folder at a time in turn, reported in their order")
{
    // Onto a share a create or a rename holds its folder's lock for a round trip: files of different folders
    // settle side by side, files of one queue. One settle thread here, so the order is the one they settle in.
    TempDir t;
    FaultSyscalls fs;
    std::vector<std::string> renamed;
    std::mutex renamed_lock;
    fs.on_rename = [&](const char *, const char *to) {
        std::lock_guard lock(renamed_lock);
        renamed.emplace_back(to);
        return 0;
    };
    ScopedSyscalls seam(fs);
    std::vector<std::string> published;
    SmallFileBatch batch = share_batch(published, 1);
    // The first group (four files): three of folder a, then one of folder b, as a walk hands them over.
    const std::vector<std::pair<std::string, std::string>> files {{"a", "a0"}, {"a", "a1"}, {"a", "a2"}, {"b", "b0"}};
    std::map<std::string, SharedDirFd> dirs;
    for (const auto &[folder, name] : files) {
        const std::string path = t / folder;
        if (!dirs.count(folder)) {
            REQUIRE(::mkdir(path.c_str(), 0755) == 0);
            dirs[folder] = std::make_shared<const UniqueFd>(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        }
        auto part = PartFile::create(dirs[folder], path, name, 0644);
        REQUIRE(part.ok());
        REQUIRE(::write(part->fd(), name.data(), name.size()) == ssize_t(name.size()));
        const ConflictPolicy policy = ConflictPolicy::Refuse;
        batch.add({std::move(part.value()), name, name.size(), policy, {}, {}, {}, false, {}, {}, {}, {}, {}, {}});
    }
    batch.flush();
    CHECK(renamed == std::vector<std::string> {"a0", "b0", "a1", "a2"});
    REQUIRE(published.size() == 4);
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string target = t / (files[i].first + "/" + files[i].second);
        CHECK(published[i] == target); // in the order they came
        CHECK(read_file(target) == files[i].second);
    }
    CHECK(part_files(t / "a").empty());
    CHECK(part_files(t / "b").empty());
}

namespace {
// |name| in |dir| from |source| (|size| bytes), created and written only where its group settles.
BatchedFile to_write_there(const SharedDirFd &dir, const std::string &dir_path, const std::string &name,
                           const std::string &source, uint64_t size, ProgressCounters &counters,
                           const JobControl *control, std::function<bool()> stop = {})
{
    BatchedFile f;
    f.part = PartFile::to_create(dir, dir_path, name);
    f.source = source;
    f.bytes = size;
    f.to_write = DataToWrite {UniqueFd(::open(source.c_str(), O_RDONLY | O_CLOEXEC)),
                              CopyRoute {},
                              &counters,
                              std::nullopt,
                              control,
                              std::move(stop)};
    return f;
}

// dst/|name| holds src/|name|'s bytes, with the time and the bits (0640) it was given.
void check_landed(const TempDir &t, const std::string &name, time_t mtime)
{
    CHECK(same_bytes(t / ("src/" + name), t / ("dst/" + name)));
    struct stat st {};
    REQUIRE(::stat((t / ("dst/" + name)).c_str(), &st) == 0);
    CHECK(st.st_mtim.tv_sec == mtime);
    CHECK((st.st_mode & 07777) == 0640);
}

SharedDirFd open_folder(const std::string &path)
{
    return std::make_shared<const UniqueFd>(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}
} // namespace

TEST_CASE("small files on a share: each file is created and written where its group settles, side by side")
{
    TempDir t;
    ::mkdir((t / "src").c_str(), 0755);
    ::mkdir((t / "dst").c_str(), 0755);
    RoundTripSync fs;
    fs.create_delay = std::chrono::milliseconds(20); // a create is a round trip too
    fs.refuse_create = part_name_for("f7");
    ScopedSyscalls seam(fs);
    std::vector<std::string> published;
    std::vector<std::pair<std::string, Status>> failed;
    uint64_t durable = 0;
    SmallFileBatch::Hooks hooks;
    hooks.durable = [&durable](const BatchedFile &f) { durable += f.bytes; };
    hooks.failed = [&failed](BatchedFile &f, Status s) { failed.emplace_back(f.source, std::move(s)); };
    hooks.published = [&published](BatchedFile &f) { published.push_back(f.target); };
    SmallFileBatch batch = share_batch(hooks);
    REQUIRE(batch.writes_side_by_side(ConflictPolicy::Refuse));
    CHECK_FALSE(batch.writes_side_by_side(ConflictPolicy::Rename)); // its free-name search stays on the job's thread
    const SharedDirFd dir = open_folder(t / "dst");
    ProgressCounters counters;
    JobControl control;
    uint64_t total = 0;
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 48; ++i) {
        const std::string name = "f" + std::to_string(i);
        const uint64_t size = 1000 + uint64_t(i) * 100;
        write_pattern_file(t / ("src/" + name), size, unsigned(i));
        total += i == 7 ? 0 : size;
        BatchedFile f = to_write_there(dir, t / "dst", name, t / ("src/" + name), size, counters, &control);
        f.attributes = PendingAttributes {0640, {1'600'000'000 + i, 0}};
        batch.add(std::move(f));
    }
    CHECK(batch.holds(dir->get(), "f47")); // a name is taken from its add, before its part file may exist
    batch.flush();
    const auto took = std::chrono::steady_clock::now() - started;
    // f7's create was refused: only it failed, with the create's error, and left nothing.
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].first == t / "src/f7");
    CHECK(failed[0].second.err() == EACCES);
    CHECK(failed[0].second.message().find("create") != std::string::npos);
    REQUIRE(published.size() == 47);
    for (int i = 0, k = 0; i < 48; ++i) {
        if (i == 7)
            continue;
        CHECK(published[size_t(k++)] == t / ("dst/f" + std::to_string(i))); // in the order they came
        check_landed(t, "f" + std::to_string(i), 1'600'000'000 + i);
    }
    CHECK_FALSE(exists(t / "dst/f7"));
    CHECK(part_files(t / "dst").empty());
    CHECK(counters.written_bytes.load() == total); // the refused file wrote nothing, and counted nothing
    CHECK(durable == total);
    CHECK(fs.most_creating.load() > 1);
    CHECK(control.beats() >= 2 * 47); // the share answered each create and each write: not a stall
    // One create after another would be 47 x 20 ms, and each sync 20 ms more.
    CHECK(took < std::chrono::milliseconds(47 * 40 / 2));
}

TEST_CASE("small files on a share: once the job stops, files not yet created are neither created nor errors")
{
    TempDir t;
    ::mkdir((t / "dst").c_str(), 0755);
    write_pattern_file(t / "src", 3000);
    RoundTripSync fs;
    ScopedSyscalls seam(fs);
    std::vector<std::string> published;
    std::vector<int> failed;
    SmallFileBatch::Hooks hooks;
    hooks.durable = [](const BatchedFile &) {};
    hooks.failed = [&failed](BatchedFile &f, Status s) {
        CHECK(f.bytes == 0); // nothing written, nothing to take back
        failed.push_back(s.err());
    };
    hooks.published = [&published](BatchedFile &f) { published.push_back(f.target); };
    SmallFileBatch batch = share_batch(hooks);
    const SharedDirFd dir = open_folder(t / "dst");
    ProgressCounters counters;
    std::atomic<bool> stopped {false};
    for (int i = 0; i < 20; ++i) {
        if (i == 4)
            stopped = true; // after the first group of four was handed over: as a share that failed for good
        batch.add(to_write_there(dir, t / "dst", "f" + std::to_string(i), t / "src", 3000, counters, nullptr,
                                 [&stopped] { return stopped.load(); }));
    }
    batch.flush();
    CHECK(published.size() + failed.size() == 20);
    CHECK(published.size() <= 4); // only the first group may have been created before the stop
    for (int err : failed)
        CHECK(err == ECANCELED);
    CHECK(fs.creates.load() == int(published.size()));
    CHECK(part_files(t / "dst").empty());
    CHECK(counters.written_bytes.load() == published.size() * 3000);
}

TEST_CASE("small files on a share: 'Keep both' searches for free names one file at a time")
{
    TempDir t;
    write_text_file(t / "f1", "older");
    RoundTripSync fs;
    ScopedSyscalls seam(fs);
    const std::vector<std::string> published = run_share_batch(t, 6, 8, ConflictPolicy::Rename);
    CHECK(published.size() == 6);
    CHECK(fs.most_syncing.load() == 1);
    CHECK(read_file(t / "f1") == "older");
    CHECK(read_file(t / "f1 (1)") == "f1");
}
