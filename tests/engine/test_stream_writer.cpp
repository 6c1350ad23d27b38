// SPDX-License-Identifier: GPL-2.0-or-later
//
// StreamWriter: a stream of blocks into a file, with the copy's chunk-and-sync policy and safe publish. The
// scenarios are named by what feeds the stream and where it lands; results are checked by comparing bytes.
#include "catch.h"

#include "background_closer.h"
#include "fault_syscalls.h"
#include "flush_mount.h"
#include "fd.h"
#include "stream_writer.h"
#include "test_support.h"

#include <fcntl.h>
#include <algorithm>
#include <functional>
#include <mutex>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <vector>

using namespace sanecopy;
using namespace sanecopy::test;

namespace {
constexpr uint64_t MiB = 1024 * 1024;

// Feeds |src| to |w| in blocks whose sizes cycle through |blocks|, as a sender with uneven reads would.
// |between| runs after every block.
Status stream_file(const std::string &src, StreamWriter &w, std::vector<std::size_t> blocks,
                   const std::function<void()> &between = {})
{
    const std::string data = read_file(src);
    std::size_t off = 0, i = 0;
    while (off < data.size()) {
        const std::size_t n = std::min(blocks[i++ % blocks.size()], data.size() - off);
        if (Status s = w.write(data.data() + off, n); !s)
            return s;
        off += n;
        if (between)
            between();
    }
    return {};
}

// A writer to |target| that must open.
Result<StreamWriter> opened(const std::string &target, ProgressCounters &counters, const StreamOptions &options = {})
{
    auto w = StreamWriter::create(target, options, counters);
    REQUIRE(w.ok());
    return w;
}

StreamOptions with(ConflictPolicy policy)
{
    StreamOptions o;
    o.conflict = policy;
    return o;
}

mode_t mode_of(const std::string &path)
{
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

bool on_tmpfs(const std::string &path)
{
    struct statfs sfs {};
    return ::statfs(path.c_str(), &sfs) == 0 && sfs.f_type == 0x01021994; // TMPFS_MAGIC
}
} // namespace

TEST_CASE_METHOD(Faulted, "stream to file: uneven blocks arrive byte-identical and every byte is counted durable")
{
    write_pattern_file(t / "src", 20 * MiB + 12345);
    ProgressCounters counters;
    auto w = opened(t / "dst", counters);
    REQUIRE(stream_file(t / "src", w.value(), {65536, 4093, 1 << 20, 7, 3 * 1 << 20}).ok());
    std::string final_path;
    REQUIRE(w->finish(&final_path).ok());
    CHECK(final_path == t / "dst");
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK_FALSE(exists(t / ".dst.part"));
    CHECK(counters.written_bytes == file_size(t / "src"));
    CHECK(counters.durable_bytes == file_size(t / "src"));
    // A disk-backed folder: chunks went through writeback windows, then one fdatasync and the folder's fsync.
    if (w->writeback_mode() == WritebackMode::Windows) {
        CHECK(fs.sync_file_range_waits > 0);
        CHECK(fs.dontneed_calls > 0);
    }
    CHECK(fs.fdatasync_calls >= 1);
    CHECK(fs.fsync_calls == 1);
}

TEST_CASE("stream to file: durable bytes grow during the stream, and what is not yet durable stays bounded")
{
    TempDir t;
    write_pattern_file(t / "src", 64 * MiB);
    ProgressCounters counters;
    auto w = opened(t / "dst", counters);
    uint64_t worst_pending = 0;
    REQUIRE(stream_file(t / "src", w.value(), {1 << 20}, [&] {
                worst_pending = std::max<uint64_t>(worst_pending, counters.written_bytes - counters.durable_bytes);
            }).ok());
    const uint64_t durable_before_finish = counters.durable_bytes;
    REQUIRE(w->finish().ok());
    // Windows beyond the plan's count were waited for on the way, so at no point was more than the plan's
    // in-flight budget handed over without being on the device.
    CHECK(worst_pending <= ChunkLimits {}.max_in_flight);
    CHECK(durable_before_finish >= 64 * MiB - ChunkLimits {}.max_in_flight);
    CHECK(w->bytes_durable() == 64 * MiB);
}

TEST_CASE("stream to file on a vfat flush mount: the published file is closed on the closer, not by the writer")
{
    TempDir t;
    write_pattern_file(t / "src", 3 * MiB);
    FlushMount fs;
    fs.sleep = std::chrono::milliseconds(2000); // well beyond the writer's own syncs
    fs.flush_everywhere(t / "mountinfo");
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    StreamOptions options;
    options.closer = std::make_shared<BackgroundCloser>(2);
    {
        auto w = opened(t / "dst", counters, options);
        // Blocks of a few MiB too: the pieces are cut inside them.
        REQUIRE(stream_file(t / "src", w.value(), {65536, 3 * MiB + 4096}).ok());
        REQUIRE(w->finish().ok());
    }
    CHECK(fs.closes_done.load() == 0); // the writer is gone, its file still closing
    CHECK(same_bytes(t / "src", t / "dst"));
    options.closer->drain();
    CHECK(fs.part_closes.load() == 1);
    CHECK(fs.closes_after_rename.load() == 1);
    CHECK(fs.closes_off_job_thread.load() == 1);
    CHECK(fs.closes_done.load() == 1);
}

TEST_CASE("stream onto a share that stops answering: the error first, the part file's close on the closer")
{
    TempDir t;
    write_pattern_file(t / "src", 4 * MiB);
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    FlushMount fs;
    fs.sleep = std::chrono::milliseconds(1000); // the close writing again, and timing out
    fs.share_at(t / "out", t / "mountinfo");
    ScopedSyscalls seam(fs);
    fs.data_errno = EIO;
    fs.fail_after_bytes = MiB;
    ProgressCounters counters;
    StreamOptions options;
    options.closer = std::make_shared<BackgroundCloser>(1);
    {
        auto w = opened(t / "out/dst", counters, options);
        CHECK_FALSE(stream_file(t / "src", w.value(), {65536}).ok());
        CHECK(w->keep_for_resume().err() == EIO);
    }
    CHECK(fs.closes_done.load() == 0); // the writer is gone and the error said, its part file still closing
    options.closer->drain();
    CHECK(fs.part_closes.load() == 1);
    CHECK(fs.closes_off_job_thread.load() == 1);
    // Left where it was (removing it would wait on the server too), and never gone on from: unstamped.
    CHECK(exists(t / "out/.dst.part"));
    CHECK(StreamWriter::resumable_part_size(t / "out/dst", std::nullopt) == 0);
    CHECK_FALSE(exists(t / "out/dst"));
}

// A KIO put onto a share (from another worker: sftp, a phone) was planned as onto a stick: an eighth of a second
// per chunk, eight windows, and each chunk's writeback started only once it was whole. A copy job's big file has
// the share's rules (share_chunk_limits(), and its pieces to the link as they are written); a stream has them too.
TEST_CASE("stream onto a share: planned as a copy onto a share, each piece's writeback started as it is written")
{
    struct Pieces : FlushMount {
        std::mutex order;
        uint64_t started_end = 0, most_ahead = 0;
        ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off) override
        {
            const ssize_t r = FlushMount::raw_pwrite(fd, buf, len, off);
            std::lock_guard lock(order);
            if (r > 0 && is_part(fd))
                most_ahead = std::max(most_ahead, uint64_t(off) + uint64_t(r) - started_end);
            return r;
        }
        int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags) override
        {
            {
                std::lock_guard lock(order);
                if ((flags & SYNC_FILE_RANGE_WRITE) && is_part(fd))
                    started_end = std::max(started_end, uint64_t(off + len));
            }
            return FlushMount::raw_sync_file_range(fd, off, len, flags);
        }
        bool is_part(int fd)
        {
            std::lock_guard lock(mutex);
            return part_fds.count(fd) > 0;
        }
    };
    TempDir t;
    write_pattern_file(t / "src", 40 * MiB);
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    ProgressCounters counters;
    StreamOptions options;
    options.limits.start_chunk = 8 * MiB; // what a share's link of 16 MB/s is given
    options.limits.min_chunk = 8 * MiB;
    Pieces fs;
    fs.share_at(t / "out", t / "mountinfo"); // the mount holding the test's folder, as an NFS 4 share
    {
        ScopedSyscalls seam(fs);
        auto w = opened(t / "out/dst", counters, options);
        CHECK(w->chunk_limits().target_seconds == kShareChunkSeconds);
        CHECK(w->chunk_limits().max_windows == kShareMaxWindows);
        CHECK(w->chunk_limits().start_chunk == 8 * MiB); // what the sender asked for, the share's rules beside it
        REQUIRE(stream_file(t / "src", w.value(), {65536}).ok());
        REQUIRE(w->finish().ok());
    }
    CHECK(same_bytes(t / "src", t / "out/dst"));
    CHECK(fs.started_end == 40 * MiB);
    CHECK(fs.most_ahead <= MiB);
    // Elsewhere the sender's limits stand.
    auto w = opened(t / "out/other", counters, options);
    CHECK(w->chunk_limits().target_seconds == ChunkLimits {}.target_seconds);
    CHECK(w->chunk_limits().max_windows == ChunkLimits {}.max_windows);
}

TEST_CASE("stream to file: the real name never appears before finish")
{
    TempDir t;
    write_pattern_file(t / "src", 6 * MiB);
    ProgressCounters counters;
    auto w = opened(t / "movie.mkv", counters);
    CHECK(w->part_path() == t / ".movie.mkv.part");
    bool seen_real_name = false;
    REQUIRE(stream_file(t / "src", w.value(), {300000}, [&] { seen_real_name |= exists(t / "movie.mkv"); }).ok());
    CHECK(exists(t / ".movie.mkv.part"));
    CHECK_FALSE(exists(t / "movie.mkv"));
    CHECK_FALSE(seen_real_name);
    REQUIRE(w->finish().ok());
    CHECK(same_bytes(t / "src", t / "movie.mkv"));
    CHECK_FALSE(exists(t / ".movie.mkv.part"));
}

TEST_CASE("stream to file: abort and destruction without finish leave nothing behind")
{
    TempDir t;
    write_pattern_file(t / "src", 5 * MiB);
    const std::string before = list_tree(t.path());
    ProgressCounters counters;
    SECTION("destroyed mid-stream")
    {
        auto w = opened(t / "dst", counters);
        REQUIRE(stream_file(t / "src", w.value(), {1 << 20}).ok());
    }
    SECTION("aborted, then destroyed")
    {
        auto w = opened(t / "dst", counters);
        REQUIRE(stream_file(t / "src", w.value(), {1 << 20}).ok());
        w->abort();
        CHECK_FALSE(exists(t / ".dst.part"));
        w->abort(); // idempotent
        CHECK(w->write("x", 1).err() == EBADF);
    }
    CHECK(list_tree(t.path()) == before);
}

TEST_CASE_METHOD(Faulted, "stream to file: ENOSPC mid-stream fails the write, sticks, and leaves nothing")
{
    write_pattern_file(t / "src", 8 * MiB);
    const std::string before = list_tree(t.path());
    fs.data_errno = ENOSPC;
    fs.fail_after_bytes = 3 * MiB + 100;
    ProgressCounters counters;
    {
        auto w = opened(t / "dst", counters);
        Status s = stream_file(t / "src", w.value(), {1 << 20});
        CHECK(s.err() == ENOSPC);
        CHECK(s.path() == t / "dst");
        // Broken for good: later blocks and finish() get the same answer, and nothing is published.
        CHECK(w->write("more", 4).err() == ENOSPC);
        CHECK(w->finish().err() == ENOSPC);
        CHECK_FALSE(exists(t / "dst"));
    }
    CHECK(list_tree(t.path()) == before);
}

TEST_CASE_METHOD(Faulted, "stream to file: short writes and EINTR are carried on")
{
    write_pattern_file(t / "src", 3 * MiB + 7);
    fs.max_transfer = 4093;
    fs.eintr_every = 3;
    ProgressCounters counters;
    auto w = opened(t / "dst", counters);
    REQUIRE(stream_file(t / "src", w.value(), {1 << 20, 12345}).ok());
    REQUIRE(w->finish().ok());
    CHECK(fs.eintr_injected > 0);
    CHECK(fs.pwrite_calls > 700);
    CHECK(same_bytes(t / "src", t / "dst"));
}

TEST_CASE("stream onto existing file: refused unless Overwrite, and the old file is untouched")
{
    TempDir t;
    write_pattern_file(t / "src", 2 * MiB);
    write_text_file(t / "dst", "the user's own file");
    ProgressCounters counters;

    auto refused = StreamWriter::create(t / "dst", with(ConflictPolicy::Refuse), counters);
    CHECK(refused.status().err() == EEXIST);
    CHECK(refused.status().path() == t / "dst");
    auto skipped = StreamWriter::create(t / "dst", with(ConflictPolicy::Skip), counters);
    CHECK(skipped.status().err() == EEXIST);
    CHECK(read_file(t / "dst") == "the user's own file");
    CHECK_FALSE(exists(t / ".dst.part"));

    auto w = opened(t / "dst", counters, with(ConflictPolicy::Overwrite));
    REQUIRE(stream_file(t / "src", w.value(), {1 << 20}).ok());
    CHECK(read_file(t / "dst") == "the user's own file"); // replaced only at commit
    REQUIRE(w->finish().ok());
    CHECK(same_bytes(t / "src", t / "dst"));
    CHECK_FALSE(exists(t / ".dst.part"));
}

TEST_CASE("stream onto existing folder: never replaced, even with Overwrite")
{
    TempDir t;
    ::mkdir((t / "dst").c_str(), 0755);
    ProgressCounters counters;
    auto w = StreamWriter::create(t / "dst", with(ConflictPolicy::Overwrite), counters);
    CHECK(w.status().err() == EISDIR);
    CHECK(list_tree(t.path()) == ".\tdir\ndst\tdir\n");
}

TEST_CASE("stream onto a name taken meanwhile: Refuse fails at commit and keeps the newcomer")
{
    TempDir t;
    ProgressCounters counters;
    auto w = opened(t / "dst", counters);
    REQUIRE(w->write("ours", 4).ok());
    write_text_file(t / "dst", "theirs");
    CHECK(w->finish().err() == EEXIST);
    w->abort();
    CHECK(read_file(t / "dst") == "theirs");
    CHECK_FALSE(exists(t / ".dst.part"));
}

TEST_CASE("stream with the Rename policy: published under the first free alternative")
{
    TempDir t;
    write_text_file(t / "notes.txt", "old");
    ProgressCounters counters;
    auto w = opened(t / "notes.txt", counters, with(ConflictPolicy::Rename));
    REQUIRE(w->write("new", 3).ok());
    std::string final_path;
    REQUIRE(w->finish(&final_path).ok());
    CHECK(final_path == t / "notes (1).txt");
    CHECK(read_file(t / "notes (1).txt") == "new");
    CHECK(read_file(t / "notes.txt") == "old");
}

TEST_CASE_METHOD(Faulted, "stream to file: fdatasync failing at finish publishes nothing and keeps the old file")
{
    write_text_file(t / "dst", "old");
    fs.fdatasync_errno = EIO;
    ProgressCounters counters;
    {
        auto w = opened(t / "dst", counters, with(ConflictPolicy::Overwrite));
        REQUIRE(w->write("new data", 8).ok());
        Status s = w->finish();
        CHECK(s.err() == EIO);
        CHECK(s.op() == "fdatasync");
    }
    CHECK(read_file(t / "dst") == "old");
    CHECK(list_tree(t.path()) == ".\tdir\ndst\tfile\t3\n");
}

TEST_CASE("stream with a size announced: the space is reserved, and a device too small fails before any byte")
{
    struct NoSpace : FaultSyscalls {
        int raw_fallocate(int, int, off_t, off_t) override
        {
            errno = ENOSPC;
            return -1;
        }
    } fs;
    TempDir t;
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    StreamOptions o;
    o.expected_size = 64 * MiB;
    auto w = StreamWriter::create(t / "dst", o, counters);
    CHECK(w.status().err() == ENOSPC);
    CHECK(list_tree(t.path()) == ".\tdir\n");
}

TEST_CASE("stream with a size announced onto FAT: nothing is reserved before the first byte")
{
    struct NoSpace : FlushMount { // were the space asked for, the device would say it is full
        int raw_fallocate(int, int, off_t, off_t) override
        {
            errno = ENOSPC;
            return -1;
        }
    } fs;
    TempDir t;
    REQUIRE(::mkdir((t / "out").c_str(), 0755) == 0);
    fs.mount_at(t / "out", t / "mountinfo", "vfat /dev/sdz1 rw,relatime,fmask=0022,dmask=0022");
    ScopedSyscalls seam(fs);
    ProgressCounters counters;
    StreamOptions o;
    o.expected_size = 64 * MiB;
    auto w = opened(t / "out/dst", counters, o);
    REQUIRE(w->write("data", 4).ok());
    REQUIRE(w->finish().ok());
    CHECK(read_file(t / "out/dst") == "data");
}

TEST_CASE("stream with a size announced but fewer bytes sent: the file has the bytes sent")
{
    TempDir t;
    ProgressCounters counters;
    StreamOptions o;
    o.expected_size = 8 * MiB;
    auto w = opened(t / "dst", counters, o);
    REQUIRE(w->write("short", 5).ok());
    REQUIRE(w->finish().ok());
    CHECK(read_file(t / "dst") == "short");
    struct stat st {};
    REQUIRE(::stat((t / "dst").c_str(), &st) == 0);
    CHECK(uint64_t(st.st_blocks) * 512 < 1 * MiB); // the reservation beyond the end was given back
}

TEST_CASE("stream with mode and mtime: the published file carries them")
{
    TempDir t;
    ProgressCounters counters;
    StreamOptions o;
    o.mode = 04640; // set-user-ID is never passed on
    o.mtime = timespec {1234567890, 0};
    auto w = opened(t / "dst", counters, o);
    REQUIRE(w->write("x", 1).ok());
    REQUIRE(w->finish().ok());
    CHECK(mode_of(t / "dst") == 0640);
    struct stat st {};
    REQUIRE(::stat((t / "dst").c_str(), &st) == 0);
    CHECK(st.st_mtim.tv_sec == 1234567890);
}

TEST_CASE("stream into a missing folder or with no file name: refused up front")
{
    TempDir t;
    ProgressCounters counters;
    CHECK(StreamWriter::create(t / "no/such/dst", {}, counters).status().err() == ENOENT);
    CHECK(StreamWriter::create(t.path() + "/", {}, counters).status().err() != 0);
    CHECK(StreamWriter::create(t / "..", {}, counters).status().err() == EINVAL);
    CHECK(list_tree(t.path()) == ".\tdir\n");
}

TEST_CASE("stream to tmpfs: nothing is synced, memory is the device")
{
    if (!on_tmpfs("/dev/shm")) {
        WARN("no tmpfs at /dev/shm; skipped");
        return;
    }
    const std::string dir = "/dev/shm/sanecopy-stream-" + std::to_string(::getpid());
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    FaultSyscalls fs;
    ProgressCounters counters;
    {
        ScopedSyscalls seam(fs);
        auto w = opened(dir + "/dst", counters);
        CHECK(w->writeback_mode() == WritebackMode::None);
        std::vector<char> block(1 << 20, 'z');
        for (int i = 0; i < 12; ++i)
            REQUIRE(w->write(block.data(), block.size()).ok());
        REQUIRE(w->finish().ok());
    }
    CHECK(fs.fdatasync_calls == 0);
    CHECK(fs.fsync_calls == 0);
    CHECK(fs.sync_file_range_calls == 0);
    CHECK(counters.durable_bytes == 12 * MiB);
    CHECK(file_size(dir + "/dst") == 12 * MiB);
    ::unlink((dir + "/dst").c_str());
    ::rmdir(dir.c_str());
}

TEST_CASE("stream: an interrupted stream keeps what reached the device, and the next one goes on from there")
{
    TempDir t;
    write_pattern_file(t / "whole", 3 * MiB + 500, 4);
    const std::string all = read_file(t / "whole");
    StreamOptions options;
    options.mtime = timespec {1700000000, 0}; // the sender's time for the file
    options.expected_size = all.size();
    ProgressCounters first;
    {
        auto w = opened(t / "dst", first, options);
        REQUIRE(w->write(all.data(), MiB + 77).ok());
        REQUIRE(w->keep_for_resume().ok()); // the sender stopped here
    }
    CHECK(file_size(t / ".dst.part") == MiB + 77); // cut to what was sent, the reservation given back
    CHECK(first.durable_bytes == MiB + 77);
    REQUIRE(StreamWriter::resumable_part_size(t / "dst", *options.mtime) == MiB + 77);
    // Another version of the file (another time) does not go on from it.
    CHECK(StreamWriter::resumable_part_size(t / "dst", timespec {1700000100, 0}) == 0);

    options.resume = true;
    ProgressCounters counters;
    auto w = opened(t / "dst", counters, options);
    REQUIRE(w->resume_offset() == MiB + 77);
    REQUIRE(w->write(all.data() + w->resume_offset(), all.size() - w->resume_offset()).ok());
    REQUIRE(w->finish().ok());
    CHECK(read_file(t / "dst") == all);
    CHECK(counters.durable_bytes == all.size());
    CHECK_FALSE(exists(t / ".dst.part"));
}

TEST_CASE("stream: a part file a crash or a pulled stick left is never gone on from")
{
    TempDir t;
    const timespec sent_time {1700000000, 0};
    write_text_file(t / ".dst.part", std::string(MiB, '\0')); // its size reached the device, its data did not
    CHECK(StreamWriter::resumable_part_size(t / "dst", sent_time) == 0);
    StreamOptions options;
    options.mtime = sent_time;
    ProgressCounters counters;
    auto w = opened(t / "dst", counters, options); // resume not asked for: the part file is replaced
    CHECK(w->resume_offset() == 0);
    REQUIRE(w->write("fresh", 5).ok());
    REQUIRE(w->finish().ok());
    CHECK(read_file(t / "dst") == "fresh");
}

TEST_CASE("stream: a stream whose sender gave no time is kept under a stamp of its own")
{
    TempDir t;
    ProgressCounters counters;
    {
        auto w = opened(t / "dst", counters);
        REQUIRE(w->write("some", 4).ok());
        REQUIRE(w->keep_for_resume().ok());
    }
    CHECK(StreamWriter::resumable_part_size(t / "dst", std::nullopt) == 4);
    CHECK(StreamWriter::resumable_part_size(t / "dst", timespec {1700000000, 0}) == 0);
}

TEST_CASE_METHOD(Faulted, "stream: nothing is kept when nothing was sent, or after the device failed")
{
    ProgressCounters counters;
    {
        auto w = opened(t / "empty", counters);
        CHECK(w->keep_for_resume().err() == ENODATA);
    }
    write_pattern_file(t / "src", 4 * MiB);
    fs.data_errno = EIO;
    fs.fail_after_bytes = 0;
    auto w = opened(t / "dst", counters);
    CHECK_FALSE(stream_file(t / "src", w.value(), {MiB}).ok());
    CHECK(w->keep_for_resume().err() == EIO);
    CHECK_FALSE(exists(t / ".dst.part"));
    CHECK_FALSE(exists(t / ".empty.part"));
}
