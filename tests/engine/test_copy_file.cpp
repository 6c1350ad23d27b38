// SPDX-License-Identifier: GPL-2.0-or-later
//
// The copy loop and its mechanisms, driven through the syscall seam: faults the field throws at a copy, and
// the fallbacks and page-cache work it must do.
#include "catch.h"

#include "copy_file.h"
#include "fault_syscalls.h"
#include "fd.h"
#include "job_helpers.h"
#include "job_runner.h"
#include "page_cache_policy.h"
#include "publish.h"
#include "sysmon.h"
#include "test_support.h"

#include <algorithm>
#include <fcntl.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {
constexpr uint64_t MiB = 1024 * 1024;

struct Files {
    UniqueFd src, dst;
};

Files open_pair(const std::string &src, const std::string &dst)
{
    Files f {UniqueFd(::open(src.c_str(), O_RDONLY | O_CLOEXEC)),
             UniqueFd(::open(dst.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644))};
    REQUIRE(f.src.valid());
    REQUIRE(f.dst.valid());
    return f;
}

Status copy_with(CopyRoute route, const std::string &src, const std::string &dst, uint64_t size, FileCopyResult &result,
                 ProgressCounters &counters, CopySession *shared = nullptr)
{
    CopySession local(route);
    CopySession &session = shared ? *shared : local;
    JobControl control;
    Files f = open_pair(src, dst);
    return copy_file_data(f.src.get(), f.dst.get(), size, session, control, counters, dst, result);
}

CopyRoute stick_route() { return {false, WritebackMode::Windows, true}; }
CopyRoute fast_route() { return {true, WritebackMode::Windows, true}; }

// Copies t/src to t/dst whole by `route`, which must succeed and leave the same bytes.
FileCopyResult copy_whole(const TempDir &t, CopyRoute route, ProgressCounters &counters)
{
    FileCopyResult result;
    REQUIRE(copy_with(route, t / "src", t / "dst", file_size(t / "src"), result, counters).ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    return result;
}

FileCopyResult copy_whole(const TempDir &t, CopyRoute route)
{
    ProgressCounters counters;
    return copy_whole(t, route, counters);
}

// src onto dst in |t| as onto a stick, when nothing about the copy but its outcome matters.
bool copies_onto_stick(const TempDir &t, uint64_t size)
{
    ProgressCounters counters;
    FileCopyResult result;
    return copy_with(stick_route(), t / "src", t / "dst", size, result, counters).ok();
}

// How much of a 16 MiB source and its copy the page cache holds after the copy onto a stick, the source
// cached or not before it; `seen_as` is the seam the copy runs under, if any.
struct CacheAfterCopy {
    double src, dst;
};
CacheAfterCopy cache_after_stick_copy(bool source_cached, Syscalls *seen_as = nullptr)
{
    TempDir t;
    write_pattern_file(t / "src", 16 * MiB);
    // Written out first in either case: the kernel never drops a dirty page, so a source still being written
    // back would stay cached whatever the copy did (this test failed now and then that way).
    evict(t / "src");
    if (source_cached)
        (void)read_file(t / "src"); // someone else is using this file
    REQUIRE(residency(t / "src") == Approx(source_cached ? 1.0 : 0.0).margin(0.05));
    std::optional<ScopedSyscalls> seam;
    if (seen_as)
        seam.emplace(*seen_as);
    REQUIRE(copies_onto_stick(t, 16 * MiB));
    return {residency(t / "src"), residency(t / "dst")};
}
// The device an sshfs mount probes as.
DeviceInfo sshfs_share()
{
    DeviceInfo sshfs;
    sshfs.fs_type = "fuse";
    sshfs.fs_subtype = "sshfs";
    sshfs.writeback = WritebackMode::ChunkSync;
    return sshfs;
}
} // namespace

TEST_CASE_METHOD(Faulted, "copy file to file: stick route copies identical bytes through sendfile windows")
{
    write_pattern_file(t / "src", 20 * MiB + 12345);
    ProgressCounters counters;
    const FileCopyResult result = copy_whole(t, stick_route(), counters);
    CHECK(fs.sendfile_calls > 0);
    CHECK(fs.copy_file_range_calls == 0);
    // Each chunk's writeback was started and waited for, so every byte counted durable before fdatasync.
    CHECK(fs.sync_file_range_waits > 0);
    CHECK(result.durable == result.copied);
    CHECK(counters.durable_bytes == file_size(t / "src"));
    CHECK(counters.written_bytes == file_size(t / "src"));
    CHECK(fs.dontneed_calls > 0);
}

TEST_CASE("small files' own writeback: a guess from the bus gives way to the rate the session measures")
{
    DeviceInfo stick;
    stick.writeback = WritebackMode::Windows;
    stick.group_sync = GroupSync::Background; // ext4 on a USB disk
    stick.transport = "usb";
    stick.removable = true;
    stick.block_device = "sdb1";
    CopySession fast(choose_route(stick, 0));
    REQUIRE_FALSE(fast.route.small_file_writeback_settled);
    CHECK(fast.small_file_writeback()); // nothing measured yet: the bus decides
    fast.meter.start(0, 0);
    fast.meter.sample(1.0, 400'000'000); // a USB NVMe enclosure
    REQUIRE(fast.meter.measured());
    CHECK_FALSE(fast.small_file_writeback());

    DeviceInfo fat = stick;
    fat.group_sync = GroupSync::Inline; // FAT decides for good, whatever the rate
    CopySession settled(choose_route(fat, 0));
    settled.meter.start(0, 0);
    settled.meter.sample(1.0, 400'000'000);
    CHECK(settled.small_file_writeback());
}

TEST_CASE("copy file to file: on a sync mount bytes go by read/write in big writes, not by sendfile")
{
    DeviceInfo dev;
    dev.writeback = WritebackMode::Windows;
    dev.removable = true;
    dev.mount_flags.sync = true;
    const CopyRoute route = choose_route(dev, 1);
    REQUIRE(route.write_through);
    CHECK_FALSE(route.clone_chain);
    dev.mount_flags.sync = false;
    CHECK_FALSE(choose_route(dev, 1).write_through);

    TempDir t;
    write_pattern_file(t / "src", 9 * MiB + 777);
    FaultSyscalls fs;
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    FileCopyResult result;
    CopySession session(route, ChunkLimits {}.checked());
    REQUIRE(copy_with(route, t / "src", t / "dst", file_size(t / "src"), result, counters, &session).ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(fs.sendfile_calls == 0);
    CHECK(fs.copy_file_range_calls == 0);
    CHECK(fs.pwrite_calls > 0);
    CHECK(session.buffer.size() == kWriteThroughBuffer);
    CHECK(counters.durable_bytes == file_size(t / "src"));
}

TEST_CASE_METHOD(Faulted, "copy file to file: EINTR is retried and the bytes are identical")
{
    write_pattern_file(t / "src", 6 * MiB);
    fs.eintr_every = 2;
    fs.max_transfer = 256 * 1024;
    REQUIRE(copies_onto_stick(t, 6 * MiB));
    CHECK(fs.eintr_injected > 0);
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE_METHOD(Faulted, "copy file to file: short sendfile transfers are carried on")
{
    write_pattern_file(t / "src", 3 * MiB + 7);
    fs.max_transfer = 4093; // odd sizes, so offsets never line up with pages
    ProgressCounters counters;
    FileCopyResult result;
    REQUIRE(copy_with(stick_route(), t / "src", t / "dst", 3 * MiB + 7, result, counters).ok());
    CHECK(result.copied == 3 * MiB + 7);
    CHECK(fs.sendfile_calls > 700);
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE_METHOD(Faulted,
                 "copy file to file: EXDEV from copy_file_range falls back to sendfile for the rest of the job")
{
    write_pattern_file(t / "a", 2 * MiB, 1);
    write_pattern_file(t / "b", 2 * MiB, 2);
    fs.copy_file_range_errno = EXDEV;
    ProgressCounters counters;
    CopySession session(fast_route());
    FileCopyResult r1, r2;
    REQUIRE(copy_with(fast_route(), t / "a", t / "a.copy", 2 * MiB, r1, counters, &session).ok());
    REQUIRE(copy_with(fast_route(), t / "b", t / "b.copy", 2 * MiB, r2, counters, &session).ok());
    CHECK(same_bytes(t / "a", t / "a.copy"));
    CHECK(same_bytes(t / "b", t / "b.copy"));
    CHECK(fs.copy_file_range_calls == 1); // sticky: tried once, never again
    CHECK_FALSE(session.copy_file_range_works);
    CHECK(fs.sendfile_calls > 0);
    CHECK(fs.ficlone_calls == 1); // EOPNOTSUPP from FICLONE is sticky too
}

TEST_CASE_METHOD(Faulted, "copy file to file: EINVAL from sendfile falls back to read/write")
{
    write_pattern_file(t / "src", 3 * MiB + 99);
    fs.sendfile_errno = EINVAL;
    ProgressCounters counters;
    CopySession session(stick_route());
    FileCopyResult result;
    REQUIRE(copy_with(stick_route(), t / "src", t / "dst", 3 * MiB + 99, result, counters, &session).ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(fs.sendfile_calls == 1);
    CHECK(fs.pwrite_calls > 0);
    CHECK_FALSE(session.sendfile_works);
}

TEST_CASE("copy file to file: a fallback mid-file continues at the right offset")
{
    // copy_file_range moves the first bytes, then fails; sendfile must continue at the same offset even though
    // copy_file_range never moved the destination's file position.
    struct MidFileExdev : FaultSyscalls {
        ssize_t raw_copy_file_range(int in, off_t *io, int out, off_t *oo, size_t len) override
        {
            if (copy_file_range_calls++ >= 1) {
                errno = EXDEV;
                return -1;
            }
            return Syscalls::raw_copy_file_range(in, io, out, oo, std::min<size_t>(len, 100000));
        }
    } fs;
    TempDir t;
    write_pattern_file(t / "src", 1 * MiB);
    ScopedSyscalls seam(fs);
    copy_whole(t, fast_route());
}

TEST_CASE_METHOD(Faulted, "copy file to file: ChunkSync mode makes every window durable with a sync of its own range")
{
    // More than the windows the first plan allows (8 x 1 MiB), so the copy must wait for syncs on its way.
    write_pattern_file(t / "src", 32 * MiB);
    CopyRoute route {false, WritebackMode::ChunkSync, true};
    const FileCopyResult result = copy_whole(t, route);
    // One sync per batch of windows waiting, from the helper thread, each over those windows' bytes alone: none
    // waits for the younger windows a whole-file fdatasync would wait for.
    CHECK(fs.msync_calls >= 2);
    CHECK(fs.msync_bytes == 32 * MiB); // every byte once, no more
    CHECK(fs.msync_widest < 32 * MiB);
    CHECK(fs.fdatasync_calls == 0);
    // Each window's writeback starts when it is handed over, so a share sends it while the last sync waits; but
    // the copy never waits on sync_file_range here: it can't tell whether a share's or FUSE's data is durable.
    CHECK(fs.sync_file_range_calls >= 4); // chunks are 8 MiB at most
    CHECK(fs.sync_file_range_waits == 0);
    CHECK(result.durable == 32 * MiB);
}

TEST_CASE("copy file to file: onto a share a chunk's writeback starts piece by piece as it is written")
{
    // Once the window budget made the copy wait, the share's link had nothing queued when the sync returned, and
    // a chunk written whole reached it only when all of it was in the cache. Here chunks are 8 MiB from the start
    // (what a share's link of 16 MB/s is given); no more than 1 MiB may be written ahead of its writeback's start.
    struct Pieces : Syscalls {
        std::mutex mutex;
        uint64_t started_end = 0, ahead = 0, most_ahead = 0;
        int dst = -1;
        ssize_t raw_sendfile(int out_fd, int in_fd, off_t *in_off, size_t len) override
        {
            const off_t from = in_off ? *in_off : 0;
            const ssize_t r = Syscalls::raw_sendfile(out_fd, in_fd, in_off, len);
            std::lock_guard<std::mutex> lock(mutex);
            if (out_fd == dst && r > 0) {
                ahead = uint64_t(from) + uint64_t(r) - started_end;
                most_ahead = std::max(most_ahead, ahead);
            }
            return r;
        }
        int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags) override
        {
            std::lock_guard<std::mutex> lock(mutex);
            if (fd == dst && (flags & SYNC_FILE_RANGE_WRITE))
                started_end = std::max(started_end, uint64_t(off + len));
            return Syscalls::raw_sync_file_range(fd, off, len, flags);
        }
    } pieces;
    TempDir t;
    write_pattern_file(t / "src", 40 * MiB);
    ChunkLimits limits;
    limits.start_chunk = 8 * MiB;
    limits.min_chunk = 8 * MiB;
    CopySession session({false, WritebackMode::ChunkSync, true}, limits);
    JobControl control;
    ProgressCounters counters;
    FileCopyResult result;
    Files f = open_pair(t / "src", t / "dst");
    pieces.dst = f.dst.get();
    {
        ScopedSyscalls seam(pieces);
        REQUIRE(copy_file_data(f.src.get(), f.dst.get(), 40 * MiB, session, control, counters, t / "dst", result).ok());
    }
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(result.durable == 40 * MiB);
    CHECK(pieces.started_end == 40 * MiB);
    CHECK(pieces.most_ahead <= MiB);
}

TEST_CASE_METHOD(Faulted, "copy file to file: onto a share a window is durable once its sync returns, not when "
                          "the window budget waits for it")
{
    // Counted only when more than the budget's windows were queued, a window's bytes came in a chunk later than
    // its sync, and the rate measured from them (and so the next chunks' size) stayed a fraction of the share's.
    write_pattern_file(t / "dst", 2 * MiB);
    UniqueFd fd(::open((t / "dst").c_str(), O_RDWR | O_CLOEXEC));
    REQUIRE(fd.get() >= 0);
    WritebackWindows windows(fd.get(), WritebackMode::ChunkSync, "dst");
    uint64_t durable = 0;
    REQUIRE(windows.submit(0, MiB, 8, durable).ok());
    for (int i = 0; i < 1000 && fs.msyncs_returned < 1; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(fs.msyncs_returned >= 1);                           // the helper synced the first window
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // and has told so (a few instructions after)
    REQUIRE(windows.submit(MiB, MiB, 8, durable).ok());
    // Two windows queued of the eight allowed, the first one counted all the same (the second too, if the helper
    // was that quick).
    CHECK(durable >= MiB);
    REQUIRE(windows.drain(durable).ok());
    CHECK(durable == 2 * MiB);
}

TEST_CASE_METHOD(Faulted, "copy file to file: onto a share a sync's return is a sign of life at once, though the "
                          "copy's thread takes its bytes later")
{
    // A cifs client held the copy's thread in a write for 4.9 s after the link went, while the helper's sync had
    // returned at the cut: the bytes were counted only when the write did, and "not responding" came that much
    // later (share-stall-cifs). The beat marks the moment the share confirmed them.
    write_pattern_file(t / "dst", 2 * MiB);
    UniqueFd fd(::open((t / "dst").c_str(), O_RDWR | O_CLOEXEC));
    REQUIRE(fd.get() >= 0);
    JobControl control;
    WritebackWindows windows(fd.get(), WritebackMode::ChunkSync, "dst", &control);
    uint64_t durable = 0;
    REQUIRE(windows.submit(0, MiB, 8, durable).ok());
    for (int i = 0; i < 1000 && control.beats() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Nothing more was handed over and nothing waited for: only the helper can have beaten.
    CHECK(fs.msyncs_returned >= 1);
    CHECK(control.beats() == 1);
    REQUIRE(windows.drain(durable).ok());
    CHECK(durable == MiB);

    // A failed sync is no sign of life.
    fs.msync_errno = EIO;
    JobControl failing;
    WritebackWindows failed(fd.get(), WritebackMode::ChunkSync, "dst", &failing);
    uint64_t none = 0;
    REQUIRE(failed.submit(0, MiB, 8, none).ok());
    CHECK_FALSE(failed.drain(none).ok());
    CHECK(failing.beats() == 0);
    CHECK(none == 0);
}

namespace {

// Every msync waits until let_go(): an NFS client's fsync while other COMMITs of the file are out. Counts the drops
// asked for meanwhile while a page of the file was dirty.
struct HeldSyncs : FaultSyscalls {
    std::mutex mutex;
    std::condition_variable cv;
    std::atomic<bool> released {false};
    std::atomic<int> drops_while_dirty {0};
    // A write of the file failed (a soft NFS mount timed out): the client let its pages go, the failure noted on the
    // file, which asking for it with sync_file_range (waiting for nothing) reports.
    bool write_failed = false;
    int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags) override
    {
        if (write_failed && flags == SYNC_FILE_RANGE_WAIT_BEFORE)
            return errno = EIO, -1;
        return FaultSyscalls::raw_sync_file_range(fd, off, len, flags);
    }
    int raw_msync(void *addr, size_t len, int flags) override
    {
        {
            std::unique_lock lock(mutex);
            cv.wait(lock, [this] { return released.load(); });
        }
        return FaultSyscalls::raw_msync(addr, len, flags);
    }
    int raw_fadvise(int fd, off_t off, off_t len, int advice) override
    {
        // Only a look at a window can drop while the syncs are held: no window is taken otherwise. Nothing makes a
        // page dirty while the copy waits, so one seen dirty here was dirty when the look decided to drop.
        if (advice == POSIX_FADV_DONTNEED && !released) {
            if (const std::optional<PageCacheStat> cs = cachestat(fd); cs && cs->dirty > 0)
                ++drops_while_dirty;
        }
        return FaultSyscalls::raw_fadvise(fd, off, len, advice);
    }
    void let_go()
    {
        {
            std::lock_guard lock(mutex);
            released = true;
        }
        cv.notify_all();
    }
};

} // namespace

TEST_CASE("copy file to file: onto NFS a window with none of its pages left cached counts durable before its sync "
          "returns")
{
    // The NFS client returns a sync only once no COMMIT of the file is out, which while the copy keeps the link busy
    // comes in pauses of the link; a drop takes only the pages a COMMIT came back for. Here the helper's syncs are
    // held until the end, and pages a local filesystem has written out stand for committed ones.
    TempDir t;
    UniqueFd fd(::open((t / "dst").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    REQUIRE(fd.get() >= 0);
    const std::string bytes(MiB, 'x');
    if (!cachestat(fd.get())) {
        WARN("cachestat unavailable (Linux before 6.5): a copy onto NFS waits for its syncs; skipped");
        return;
    }
    if (struct statfs fs {}; ::statfs(t.path().c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) {
        WARN("the temp folder " << t.path() << " is a tmpfs, whose pages no drop takes; skipped");
        return;
    }
    // Where the file's pages are not this file's (overlayfs, ZFS), cachestat sees none, and nothing could fail.
    REQUIRE(::pwrite(fd.get(), bytes.data(), MiB, 0) == ssize_t(MiB));
    if (const std::optional<PageCacheStat> cs = cachestat(fd.get()); !cs || cs->cached == 0 || cs->dirty == 0) {
        WARN("the temp folder " << t.path() << " does not show a written page as cached and dirty; skipped");
        return;
    }
    struct Copied {
        bool before_any_sync = false; // every window handed over before any sync returned
        int drops_while_dirty = 0;
        uint64_t durable = 0;
        int beats = 0;
        int error = 0; // of the copy's thread, ended by it
    };
    // 8 windows of 1 MiB, at most 2 queued, each written and handed over as a copy does (nothing of the file is
    // dirty while it waits); with |dirty_ahead| the whole file is written first, its later windows still dirty. The
    // syncs are let go once all were handed over, or after |patience| (10 ms steps).
    auto copy = [&](bool evicted_means_committed, bool dirty_ahead, int patience, bool write_failed = false) {
        for (uint64_t i = 0; dirty_ahead && i < 8; ++i)
            REQUIRE(::pwrite(fd.get(), bytes.data(), MiB, off_t(i * MiB)) == ssize_t(MiB));
        Copied out;
        HeldSyncs held;
        held.write_failed = write_failed;
        ScopedSyscalls seam(held);
        JobControl control;
        WritebackWindows windows(fd.get(), WritebackMode::ChunkSync, "dst", &control);
        if (evicted_means_committed)
            windows.count_evicted_as_committed();
        std::atomic<bool> handed_over {false}, failed {false};
        std::atomic<int> error {0};
        std::thread copier([&] {
            for (uint64_t i = 0; i < 8 && !failed; ++i)
                if (!dirty_ahead && ::pwrite(fd.get(), bytes.data(), MiB, off_t(i * MiB)) != ssize_t(MiB))
                    failed = true;
                else if (Status s = windows.submit(i * MiB, MiB, 2, out.durable); !s)
                    failed = true, error = s.err();
            handed_over = true;
        });
        for (int i = 0; i < patience && !handed_over; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        out.before_any_sync = handed_over && held.msyncs_returned == 0;
        held.let_go();
        copier.join();
        out.error = error;
        if (write_failed) {
            // The look took the failure from the file, so the helper's syncs found none: still the copy's end
            // says it, and counts nothing.
            uint64_t after = 0;
            CHECK(windows.drain(after).err() == EIO);
            CHECK(after == 0);
            return out;
        }
        CHECK_FALSE(failed);
        CHECK(windows.drain(out.durable).ok());
        CHECK(held.msync_calls > 0); // synced all the same, for what a sync reports
        out.drops_while_dirty = held.drops_while_dirty;
        out.beats = int(control.beats());
        return out;
    };
    const Copied nfs = copy(true, false, 1000);
    CHECK(nfs.before_any_sync);
    CHECK(nfs.durable == 8 * MiB);
    CHECK(nfs.beats >= 6); // each window taken that way is a sign of life of the share
    CHECK(nfs.drops_while_dirty == 0);
    // Anywhere else a window counts once its sync returned (cifs: a page written out is not yet flushed).
    const Copied elsewhere = copy(false, false, 50);
    CHECK_FALSE(elsewhere.before_any_sync);
    CHECK(elsewhere.durable == 8 * MiB);
    // Never a drop while a page of the file is dirty: it would start that page's writeback, which waits on a share
    // that stopped answering. (Whether the windows were taken before the syncs depends on when the kernel writes
    // the dirty pages out on its own.)
    const Copied dirty = copy(true, true, 50);
    CHECK(dirty.drops_while_dirty == 0);
    CHECK(dirty.durable == 8 * MiB);
    // A window whose pages went because their write failed ends the copy with that failure, before any sync said
    // so, instead of counting them and writing on into a share that is gone.
    const Copied gone = copy(true, false, 1000, true);
    CHECK(gone.before_any_sync);
    CHECK(gone.error == EIO);
    CHECK(gone.durable == 0);
}

TEST_CASE_METHOD(Faulted, "copy file to file: ChunkSync mode on a file that can't be mapped syncs it whole")
{
    write_pattern_file(t / "src", 12 * MiB);
    fs.refuse_mmap = true;
    CopyRoute route {false, WritebackMode::ChunkSync, true};
    const FileCopyResult result = copy_whole(t, route);
    CHECK(fs.msync_calls == 0);
    CHECK(fs.fdatasync_calls >= 1);
    CHECK(result.durable == 12 * MiB);
}

// t/src copied whole to t/dst as onto a share (each window synced by its own msync, or by fdatasync where the
// map is refused), the sync failing: the copy fails with |err| from |sync| and counts nothing durable.
void share_copy_fails(const TempDir &t, int err, ProgressCounters &counters, FileCopyResult &result,
                      const std::string &sync = "msync")
{
    const CopyRoute route {false, WritebackMode::ChunkSync, true};
    const Status s = copy_with(route, t / "src", t / "dst", file_size(t / "src"), result, counters);
    REQUIRE_FALSE(s.ok());
    CHECK(s.err() == err);
    CHECK(s.message().find(sync) != std::string::npos);
    CHECK(counters.durable_bytes == 0);
}

TEST_CASE_METHOD(Faulted,
                 "copy file to file: a window's failed sync fails the copy and counts nothing durable after it")
{
    write_pattern_file(t / "src", 12 * MiB);
    fs.msync_errno = EIO;
    ProgressCounters counters;
    FileCopyResult result;
    share_copy_fails(t, EIO, counters, result);
    CHECK(result.durable == 0);
}

TEST_CASE_METHOD(Faulted, "copy file to file: a share's \"try again\" to a sync writes the unsynced windows again")
{
    // The SMB client answered EAGAIN once it had made its connection anew after a stalled link, and EBADF once
    // (no handle on the server yet): the windows not yet synced are written again from the end of what is
    // durable, and the copy ends whole and counted once.
    const int err = GENERATE(EAGAIN, EBADF);
    CAPTURE(err);
    write_pattern_file(t / "src", 32 * MiB);
    fs.msync_fail_call = 2; // the first sync went through: the copy goes back to the first window not synced
    fs.msync_fail_errno = err;
    CopyRoute route {false, WritebackMode::ChunkSync, true};
    ProgressCounters counters;
    FileCopyResult result;
    const Status s = copy_with(route, t / "src", t / "dst", 32 * MiB, result, counters);
    REQUIRE(s.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(result.durable == 32 * MiB);
    CHECK(result.copied == 32 * MiB);
    CHECK(counters.durable_bytes == 32 * MiB);
    CHECK(counters.written_bytes == 32 * MiB); // the bytes written again are not counted twice
    CHECK(fs.msync_bytes > 32 * MiB);          // but they were synced again
    CHECK(fs.moved > 32 * MiB);
}

TEST_CASE_METHOD(Faulted, "copy file to file: a share that keeps answering \"try again\" fails the copy in the end")
{
    const int err = GENERATE(EAGAIN, EBADF);
    CAPTURE(err);
    write_pattern_file(t / "src", 12 * MiB);
    fs.msync_errno = err;
    ProgressCounters counters;
    FileCopyResult result;
    share_copy_fails(t, err, counters, result);
    CHECK(fs.seeks_to_start == 3); // nothing became durable: three more tries from the start, then it gives up
    CHECK(counters.written_bytes <= 12 * MiB);
}

TEST_CASE_METHOD(Faulted, "copy file to file: EBADF from fdatasync is not taken for a share's \"try again\"")
{
    // fdatasync is given a descriptor: its EBADF could be the copy's own fault, and is not written past.
    write_pattern_file(t / "src", 12 * MiB);
    fs.refuse_mmap = true; // the windows are synced by fdatasync
    fs.fdatasync_errno = EBADF;
    ProgressCounters counters;
    FileCopyResult result;
    share_copy_fails(t, EBADF, counters, result, "fdatasync");
    CHECK(fs.seeks_to_start == 0);
}

TEST_CASE_METHOD(Faulted, "copy file to file: a sparse file is not written again after a share's \"try again\"")
{
    // Its holes were counted durable as they were passed: going back over them would count them twice.
    {
        UniqueFd fd(::open((t / "src").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
        REQUIRE(fd.valid());
        std::string block(MiB, 'x');
        for (uint64_t at : {uint64_t(0), 20 * MiB})
            REQUIRE(::pwrite(fd.get(), block.data(), block.size(), off_t(at)) == ssize_t(MiB));
        REQUIRE(::ftruncate(fd.get(), 32 * MiB) == 0);
    }
    fs.msync_errno = EAGAIN;
    CopyRoute route {false, WritebackMode::ChunkSync, true};
    ProgressCounters counters;
    FileCopyResult result;
    const Status s = copy_with(route, t / "src", t / "dst", 32 * MiB, result, counters);
    REQUIRE_FALSE(s.ok());
    CHECK(s.err() == EAGAIN);
    CHECK(fs.seeks_to_start == 0);
    // Its holes, once, and none of its data. How many holes were passed depends on when the first window's failed
    // sync surfaces: at the next window handed over if the helper has answered by then (the 19 MiB before the
    // second data segment), else at the end (all 30 MiB); 0 if it answered before the first hole was reached.
    CHECK(result.durable == result.unwritten);
    CHECK(counters.durable_bytes == result.unwritten);
    CHECK((result.unwritten == 0 || result.unwritten == 19 * MiB || result.unwritten == 30 * MiB));
}

TEST_CASE_METHOD(Faulted, "copy file to file: onto a FUSE share a big file goes by O_DIRECT writes of a whole buffer")
{
    const CopyRoute route = choose_route(sshfs_share(), 1);
    REQUIRE(route.direct_writes);
    DeviceInfo other = sshfs_share();
    other.fs_type = "fuseblk"; // ntfs-3g, exfat-fuse: a local disk behind FUSE
    other.fs_subtype = "ntfs-3g";
    CHECK_FALSE(choose_route(other, 1).direct_writes);
    other.fs_type = "cifs"; // a kernel share: its own page cache sends the writes side by side
    other.fs_subtype.clear();
    CHECK_FALSE(choose_route(other, 1).direct_writes);

    write_pattern_file(t / "src", 9 * MiB + 777);
    CopySession session(route);
    ProgressCounters counters;
    FileCopyResult result;
    REQUIRE(copy_with(route, t / "src", t / "dst", file_size(t / "src"), result, counters, &session).ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(fs.sendfile_calls == 0);
    CHECK(fs.direct_pwrites == fs.pwrite_calls);
    CHECK(fs.direct_pwrites >= 3); // 9 MiB in buffers of 4 MiB
    CHECK(fs.direct_fd == -1);     // and O_DIRECT off again for what comes after the data
    CHECK(fs.msync_calls >= 1);    // each window made durable
    CHECK(counters.durable_bytes == file_size(t / "src"));
}

TEST_CASE_METHOD(Faulted, "copy file to file: a FUSE share that refuses O_DIRECT writes gets buffered ones")
{
    const CopyRoute route = choose_route(sshfs_share(), 1);
    write_pattern_file(t / "src", 6 * MiB + 5);
    write_pattern_file(t / "src2", 3 * MiB, 2);
    fs.direct_pwrite_errno = EINVAL;
    CopySession session(route);
    ProgressCounters counters;
    FileCopyResult result;
    REQUIRE(copy_with(route, t / "src", t / "dst", file_size(t / "src"), result, counters, &session).ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(fs.direct_pwrites == 0);
    CHECK_FALSE(session.direct_works);
    CHECK(fs.direct_fd == -1);
    CHECK(fs.direct_sets == 1);
    // The next file of the job does not ask again.
    REQUIRE(copy_with(route, t / "src2", t / "dst2", 3 * MiB, result, counters, &session).ok());
    CHECK(same_bytes(t / "src2", t / "dst2"));
    CHECK(fs.direct_sets == 1);
    CHECK(fs.direct_pwrites == 0);
}

// A part file for "big.bin" in |t|, as a big file's copy makes it.
Result<PartFile> part_file_in(const TempDir &t)
{
    auto dir = std::make_shared<const UniqueFd>(::open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(dir->valid());
    Result<PartFile> part = PartFile::create(dir, t.path(), "big.bin");
    REQUIRE(part.ok());
    return part;
}

TEST_CASE_METHOD(Faulted, "resume points: onto a share each window's own sync is the checkpoint's data sync")
{
    Result<PartFile> part = part_file_in(t);
    auto share = job_detail::make_checkpoint(part.value(), DataSync::File, WritebackMode::ChunkSync);
    REQUIRE(share().ok());
    REQUIRE(share().ok());
    CHECK(fs.fdatasync_calls == 0); // the copy's thread never drains the link for it
    CHECK(fs.fsync_calls == 1);     // the folder entry, once
    auto stick = job_detail::make_checkpoint(part.value(), DataSync::File, WritebackMode::Windows);
    REQUIRE(stick().ok());
    REQUIRE(stick().ok());
    CHECK(fs.fdatasync_calls == 2);
    CHECK(fs.fsync_calls == 2);
}

TEST_CASE_METHOD(Faulted, "resume points: a share's \"try again\" to the folder's sync is tried at the next one")
{
    Result<PartFile> part = part_file_in(t);
    auto share = job_detail::make_checkpoint(part.value(), DataSync::File, WritebackMode::ChunkSync);
    fs.fsync_errno_once = EAGAIN;
    REQUIRE(share().ok()); // not the copy's failure
    REQUIRE(share().ok());
    REQUIRE(share().ok());
    CHECK(fs.fsync_calls == 2); // the refused one, then once more, then no more
    // Any other failure of it is the copy's.
    auto again = job_detail::make_checkpoint(part.value(), DataSync::File, WritebackMode::ChunkSync);
    fs.fsync_errno_once = EIO;
    const Status s = again();
    REQUIRE_FALSE(s.ok());
    CHECK(s.err() == EIO);
}

TEST_CASE_METHOD(Faulted, "copy file to file: tmpfs route does no syncing and no eviction")
{
    write_pattern_file(t / "src", 4 * MiB);
    fs.ficlone_errno = EOPNOTSUPP;
    CopyRoute route {true, WritebackMode::None, false};
    copy_whole(t, route);
    CHECK(fs.sync_file_range_calls == 0);
    CHECK(fs.fdatasync_calls == 0);
    CHECK(fs.dontneed_calls == 0);
}

TEST_CASE("page cache: the copy drops the source pages it read and the destination pages it wrote")
{
    const CacheAfterCopy after = cache_after_stick_copy(false);
    CHECK(after.src < 0.05);
    CHECK(after.dst < 0.05);
}

TEST_CASE("page cache: source pages that were cached before the copy are left alone")
{
    CHECK(cache_after_stick_copy(true).src > 0.95);
}

TEST_CASE("page cache: a source whose residency the kernel hides is dropped behind the copy")
{
    // Run by someone who neither owns the file nor is root: the kernel's mincore then says every page is cached.
    struct Hidden : FaultSyscalls {
        uid_t raw_geteuid() override { return 4242; }
        int raw_mincore(void *, size_t len, unsigned char *vec) override
        {
            std::memset(vec, 1, (len + 4095) / 4096);
            return 0;
        }
    } hidden;
    const CacheAfterCopy after = cache_after_stick_copy(true, &hidden);
    CHECK(after.src < 0.05);
    CHECK(after.dst < 0.05);
}

TEST_CASE_METHOD(Faulted, "copy file to file: cancel stops within a chunk with ECANCELED")
{
    write_pattern_file(t / "src", 8 * MiB);
    fs.max_transfer = 64 * 1024;
    ProgressCounters counters;
    CopySession session(stick_route());
    JobControl control;
    control.cancel();
    Files f = open_pair(t / "src", t / "dst");
    FileCopyResult result;
    Status s = copy_file_data(f.src.get(), f.dst.get(), 8 * MiB, session, control, counters, "dst", result);
    CHECK(s.err() == ECANCELED);
    CHECK(result.copied == 0);
    CHECK(fs.sendfile_calls == 0);
}

TEST_CASE_METHOD(Faulted, "file to folder: ENOSPC mid-file leaves neither the real name nor a part file")
{
    write_pattern_file(t / "big", 12 * MiB);
    ::mkdir((t / "out").c_str(), 0755);
    fs.data_errno = ENOSPC;
    fs.fail_after_bytes = 5 * MiB;
    JobRun run = run_job(spec_of({t / "big"}, t / "out"));
    CHECK_FALSE(run.summary.ok());
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == ENOSPC);
    CHECK(run.first(JobEvent::Kind::Error)->message.find("No space left") != std::string::npos);
    CHECK(list_tree(t / "out") == ".\tdir\n");
}

TEST_CASE_METHOD(Faulted, "file to file: ENOSPC while overwriting leaves the old file intact")
{
    write_pattern_file(t / "new", 12 * MiB, 7);
    write_text_file(t / "old", "the old contents");
    fs.data_errno = ENOSPC;
    fs.fail_after_bytes = 3 * MiB;
    JobRun run = run_job(spec_of({t / "new"}, t / "old", ConflictPolicy::Overwrite));
    CHECK_FALSE(run.summary.ok());
    CHECK(read_file(t / "old") == "the old contents");
    CHECK_FALSE(exists(t / ".old.part"));
}

TEST_CASE_METHOD(Faulted, "file to file: EIO from fdatasync never publishes, and keeps the part file for a resume")
{
    write_pattern_file(t / "src", 3 * MiB);
    fs.fdatasync_errno = EIO;
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    CHECK_FALSE(run.summary.ok());
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EIO);
    CHECK_FALSE(exists(t / "dst"));
    CHECK(exists(t / ".dst.part"));
}

TEST_CASE_METHOD(Faulted, "file to file: a device-level error ends the job and later files are not attempted")
{
    ::mkdir((t / "src").c_str(), 0755);
    for (int i = 0; i < 3; ++i)
        write_pattern_file(t / ("src/f" + std::to_string(i)), 2 * MiB, unsigned(i));
    ::mkdir((t / "out").c_str(), 0755);
    fs.data_errno = EIO;
    fs.fail_after_bytes = 1 * MiB;
    JobRun run = run_job(spec_of({t / "src"}, t / "out"));
    CHECK(run.summary.aborted);
    CHECK(run.count(JobEvent::Kind::Error) == 1);
    CHECK(run.count(JobEvent::Kind::FileDone) == 0);
    // The file the device failed on stays as a part file (what it holds so far), under no real name.
    CHECK(list_tree(t / "out") == ".\tdir\nsrc\tdir\nsrc/.f0.part\tfile\t1048576\n");
}

TEST_CASE_METHOD(Faulted, "resume: a part file left by an interrupted copy is continued from its verified prefix")
{
    write_pattern_file(t / "src", 20 * MiB + 777);
    // What a SIGKILL mid-copy leaves: the first 9 MiB + a bit, under the part name.
    {
        const std::string all = read_file(t / "src");
        write_text_file(t / ".dst.part", all.substr(0, 9 * MiB + 1234));
    }
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK_FALSE(exists(t / ".dst.part"));
    // Only the rest was moved: 9 MiB rounded down to 64 KiB was already there.
    CHECK(fs.moved.load() == 20 * MiB + 777 - 9 * MiB);
    // Progress counts the prefix as on the device; a throughput chart learns it was not moved now.
    CHECK(run.counters->durable_bytes.load() == 20 * MiB + 777);
    CHECK(run.counters->unwritten_bytes.load() == 9 * MiB);
    REQUIRE(run.first(JobEvent::Kind::FileDone));
    CHECK(run.first(JobEvent::Kind::FileDone)->message.find("resumed") != std::string::npos);
}

TEST_CASE_METHOD(Faulted, "resume: a write error the interrupted run left on its part file is not this run's failure")
{
    write_pattern_file(t / "src", 12 * MiB);
    {
        const std::string all = read_file(t / "src");
        write_text_file(t / ".dst.part", all.substr(0, 5 * MiB));
    }
    // The first sync of the part file reports what the old run's writeback could not do; the copy takes it before
    // it checks the prefix, and its own syncs report only its own.
    fs.fdatasync_errno_once = EIO;
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(fs.fdatasync_errno_once == 0);
    CHECK(same_bytes(t / "src", t / "dst"));
    REQUIRE(run.first(JobEvent::Kind::FileDone));
    CHECK(run.first(JobEvent::Kind::FileDone)->message.find("resumed") != std::string::npos);
}

TEST_CASE_METHOD(Faulted, "resume points: a big file's size and folder entry reach the device every checkpoint_seconds")
{
    write_pattern_file(t / "src", 24 * MiB);
    fs.data_delay = std::chrono::milliseconds(20); // about half a second for the whole file
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.checkpoint_seconds = 0.05;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    // Several checkpoints and the final sync; the folder entry once at the first checkpoint and once at the end.
    CHECK(fs.fdatasync_calls >= 3);
    CHECK(fs.fsync_calls == 2);

    FaultSyscalls quiet;
    quiet.data_delay = std::chrono::milliseconds(20);
    ScopedSyscalls seam2(quiet);
    spec.checkpoint_seconds = 0; // none: only the final sync
    REQUIRE(::unlink((t / "dst").c_str()) == 0);
    REQUIRE(run_job(spec).summary.ok());
    CHECK(quiet.fdatasync_calls == 1);
    CHECK(quiet.fsync_calls == 1);
}

TEST_CASE("resume: a part file of some other content is started over, not trusted")
{
    TempDir t;
    write_pattern_file(t / "src", 8 * MiB, 1);
    write_pattern_file(t / ".dst.part", 5 * MiB, 2); // an older version of the file
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE("resume: a torn tail (zeros where a crash lost the data) is cut off")
{
    TempDir t;
    write_pattern_file(t / "src", 12 * MiB, 3);
    std::string prefix = read_file(t / "src").substr(0, 6 * MiB);
    prefix.replace(5 * MiB, MiB, MiB, '\0'); // the size reached the journal, the last MiB of data did not
    write_text_file(t / ".dst.part", prefix);
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE("verify: the copy is read back and a corruption between write and read-back is caught")
{
    TempDir t;
    write_pattern_file(t / "src", 5 * MiB);
    // Flip one byte in whatever is read back from the part file, as a failing flash cell would.
    struct Corrupting : FaultSyscalls {
        int part_reader = -1;
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            int fd = FaultSyscalls::raw_openat(dirfd, path, flags, mode);
            if (std::string(path) == ".dst.part" && (flags & O_ACCMODE) == O_RDONLY)
                part_reader = fd;
            return fd;
        }
        ssize_t raw_pread(int fd, void *buf, size_t len, off_t off) override
        {
            ssize_t n = Syscalls::raw_pread(fd, buf, len, off);
            if (fd == part_reader && n > 100 && off == 0)
                static_cast<char *>(buf)[100] ^= 0x5a;
            return n;
        }
    } fs;
    ScopedSyscalls seam(fs);
    JobSpec spec = spec_of({t / "src"}, t / "dst");
    spec.verify = true;
    JobRun run = run_job(spec);
    CHECK_FALSE(run.summary.ok());
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.err() == EBADMSG);
    CHECK(run.first(JobEvent::Kind::Error)->message.find("verify") != std::string::npos);
    CHECK_FALSE(exists(t / "dst")); // never published under the real name
    // Nothing of it is on the device under any name, so progress takes its bytes back.
    CHECK(run.counters->durable_bytes.load() == 0);
    CHECK(run.counters->written_bytes.load() == 0);
}

TEST_CASE_METHOD(Faulted, "verify: an intact copy passes, small files included")
{
    ::mkdir((t / "tree").c_str(), 0755);
    write_pattern_file(t / "tree/big", 3 * MiB, 1);
    write_pattern_file(t / "tree/small", 5000, 2);
    ::mkdir((t / "out").c_str(), 0755);
    JobSpec spec = spec_of({t / "tree"}, t / "out");
    spec.verify = true;
    JobRun run = run_job(spec);
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "tree/big", t / "out/tree/big"));
    CHECK(same_bytes(t / "tree/small", t / "out/tree/small"));
    CHECK(fs.dontneed_calls > 0);
}

TEST_CASE_METHOD(Faulted, "sparse file to file: holes stay holes and the bytes are identical")
{
    {
        // 64 MiB with 3 MiB of data: at the start, in the middle, and a trailing hole.
        UniqueFd fd(::open((t / "sparse").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
        REQUIRE(fd.valid());
        std::string block(MiB, 'x');
        REQUIRE(::pwrite(fd.get(), block.data(), block.size(), 0) == ssize_t(MiB));
        REQUIRE(::pwrite(fd.get(), block.data(), block.size(), 20 * MiB) == ssize_t(MiB));
        REQUIRE(::pwrite(fd.get(), block.data(), block.size(), 41 * MiB + 4096) == ssize_t(MiB));
        REQUIRE(::ftruncate(fd.get(), 64 * MiB) == 0);
    }
    ProgressCounters counters;
    FileCopyResult result;
    REQUIRE(copy_with(stick_route(), t / "sparse", t / "copy", 64 * MiB, result, counters).ok());
    CHECK(same_bytes(t / "sparse", t / "copy"));
    CHECK(file_size(t / "copy") == 64 * MiB);
    struct stat st {};
    REQUIRE(::stat((t / "copy").c_str(), &st) == 0);
    CHECK(uint64_t(st.st_blocks) * 512 < 8 * MiB); // the 61 MiB of holes were not written
    CHECK(fs.moved.load() < 4 * MiB);
    CHECK(counters.durable_bytes == 64 * MiB);
}

TEST_CASE_METHOD(Faulted, "resume: a source changed after the part file was written is copied afresh")
{
    write_pattern_file(t / "src", 8 * MiB, 1);
    write_text_file(t / ".dst.part", read_file(t / "src").substr(0, 5 * MiB));
    // The source is edited afterwards (its first 5 MiB happen to be unchanged): the part is no longer its prefix.
    struct timespec later[2] = {{0, UTIME_OMIT}, {time(nullptr) + 60, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (t / "src").c_str(), later, 0) == 0);
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(fs.moved.load() == 8 * MiB);
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE_METHOD(Faulted,
                 "resume: a part file that agrees with the source only at its end goes on from where they differ")
{
    // Another disk image of the same base under the same name, or this one changed in its middle with its time
    // kept: the part file's last windows match the source, a block near its start does not.
    write_pattern_file(t / "src", 48 * MiB, 1);
    struct timespec earlier[2] = {{0, UTIME_OMIT}, {time(nullptr) - 3600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (t / "src").c_str(), earlier, 0) == 0);
    std::string prefix = read_file(t / "src").substr(0, 40 * MiB);
    prefix.replace(3 * MiB, 4096, std::string(4096, 'x'));
    write_text_file(t / ".dst.part", prefix); // after the source's last change, as an interrupted copy's
    JobRun run = run_job(spec_of({t / "src"}, t / "dst"));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK(fs.moved.load() == 45 * MiB); // from the block that differed on
}

TEST_CASE("resume: an interrupt while the part file is compared keeps it as it was")
{
    TempDir t;
    write_pattern_file(t / "src", 48 * MiB, 3);
    struct timespec earlier[2] = {{0, UTIME_OMIT}, {time(nullptr) - 3600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (t / "src").c_str(), earlier, 0) == 0);
    write_text_file(t / ".dst.part", read_file(t / "src").substr(0, 40 * MiB));
    // The session ends (a logout, the window closed) three blocks into the comparison.
    JobControl control;
    struct InterruptWhileComparing : FaultSyscalls {
        JobControl *control = nullptr;
        std::atomic<int> blocks {0};
        ssize_t raw_pread(int fd, void *buf, size_t len, off_t off) override
        {
            if (len == MiB && ++blocks == 6)
                control->interrupt();
            return FaultSyscalls::raw_pread(fd, buf, len, off);
        }
    } fs;
    fs.control = &control;
    JobRun run;
    {
        ScopedSyscalls seam(fs);
        run = run_job(spec_of({t / "src"}, t / "dst"), control);
    }
    CHECK(fs.blocks.load() >= 6);
    CHECK_FALSE(run.summary.ok());
    CHECK_FALSE(exists(t / "dst"));
    REQUIRE(exists(t / ".dst.part"));
    CHECK(file_size(t / ".dst.part") == 40 * MiB); // not cut to what was compared
}

TEST_CASE("folder to folder: a source that can't be read fails its file only, and leaves no part file")
{
    TempDir t;
    ::mkdir((t / "tree").c_str(), 0755);
    write_pattern_file(t / "tree/a-bad", 3 * MiB, 1);
    write_pattern_file(t / "tree/b-good", 3 * MiB, 2);
    ::mkdir((t / "out").c_str(), 0755);
    // A dying SD card: reading "a-bad" fails with EIO, in sendfile and in the one-byte probe alike.
    struct BadSource : FaultSyscalls {
        int bad = -1;
        int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
        {
            int fd = FaultSyscalls::raw_openat(dirfd, path, flags, mode);
            if (std::string(path) == "a-bad")
                bad = fd;
            return fd;
        }
        int raw_close(int fd) override
        {
            if (fd == bad)
                bad = -1; // the number goes to the next file opened
            return Syscalls::raw_close(fd);
        }
        ssize_t raw_sendfile(int out, int in, off_t *off, size_t len) override
        {
            if (in == bad && *off >= off_t(MiB)) {
                errno = EIO;
                return -1;
            }
            return FaultSyscalls::raw_sendfile(out, in, off, len);
        }
        ssize_t raw_copy_file_range(int in, off_t *io, int out, off_t *oo, size_t len) override
        {
            if (in == bad && *io >= off_t(MiB)) {
                errno = EIO;
                return -1;
            }
            return FaultSyscalls::raw_copy_file_range(in, io, out, oo, len);
        }
        ssize_t raw_pread(int fd, void *buf, size_t len, off_t off) override
        {
            if (fd == bad && off >= off_t(MiB)) {
                errno = EIO;
                return -1;
            }
            return Syscalls::raw_pread(fd, buf, len, off);
        }
    } fs;
    ScopedSyscalls seam(fs);
    JobRun run = run_job(spec_of({t / "tree"}, t / "out"));
    CHECK_FALSE(run.summary.aborted);
    REQUIRE(run.first(JobEvent::Kind::Error));
    CHECK(run.first(JobEvent::Kind::Error)->status.op() == "read source");
    // EIO would end the job were it the destination's: the Status knows it is the source's.
    CHECK(run.first(JobEvent::Kind::Error)->status.on_source());
    CHECK_FALSE(run.first(JobEvent::Kind::Error)->status.device_removed());
    CHECK(same_bytes(t / "tree/b-good", t / "out/tree/b-good")); // the job went on
    CHECK_FALSE(exists(t / "out/tree/.a-bad.part"));             // nothing to resume: the stick is fine
    CHECK_FALSE(exists(t / "out/tree/a-bad"));
}

TEST_CASE("sparse file to folder: a whole job keeps the holes (no space reserved over them)")
{
    TempDir t;
    {
        UniqueFd fd(::open((t / "disk.img").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
        REQUIRE(fd.valid());
        std::string block(MiB, 'd');
        REQUIRE(::pwrite(fd.get(), block.data(), block.size(), 10 * MiB) == ssize_t(MiB));
        REQUIRE(::ftruncate(fd.get(), 256 * MiB) == 0);
    }
    ::mkdir((t / "out").c_str(), 0755);
    JobRun run = run_job(spec_of({t / "disk.img"}, t / "out"));
    REQUIRE(run.summary.ok());
    CHECK(same_bytes(t / "disk.img", t / "out/disk.img"));
    struct stat st {};
    REQUIRE(::stat((t / "out/disk.img").c_str(), &st) == 0);
    CHECK(uint64_t(st.st_blocks) * 512 < 8 * MiB);
}
