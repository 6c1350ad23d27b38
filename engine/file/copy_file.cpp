// SPDX-License-Identifier: GPL-2.0-or-later
#include "copy_file.h"

#include "i18n.h"
#include "page_cache_policy.h"
#include "sysmon.h"
#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sanecopy {

bool takes_direct_writes(const DeviceInfo &dest)
{
    return dest.writeback == WritebackMode::ChunkSync && is_network_share(dest) && dest.fs_type.rfind("fuse", 0) == 0;
}

ChunkLimits share_chunk_limits(const ChunkLimits &asked, bool direct_writes)
{
    // Each chunk's sync is a round trip or two (an SMB flush, an NFS COMMIT, sshfs's fsync, which holds the file's
    // lock and stops the next writes until every one before it is answered): half a second of link time per chunk
    // keeps that a small part of it. sshfs with eighth-second chunks reached 43 % of a 100 Mbit/s, 20 ms link
    // (tests/vm/shares.py).
    if (asked.target_seconds != ChunkLimits {}.target_seconds)
        return asked;
    if (direct_writes)
        return share_over_fuse_limits();
    ChunkLimits limits = asked;
    limits.target_seconds = kShareChunkSeconds;
    limits.max_windows = kShareMaxWindows;
    return limits;
}

uint64_t share_first_rate_bytes(const ChunkLimits &limits)
{
    // The first window's sync goes out behind every chunk written meanwhile (eight of the first plan's 1 MiB on
    // one TCP connection), and returns when they have all crossed the link: measured from that first window
    // alone, the share's rate came out a tenth of the link's (1 MiB in 0.8 s over 100 Mbit/s, share-trace-nfs4),
    // and the chunks and budget planned from it let the link idle until the next syncs corrected it. The syncs
    // behind it return at once; measured over them too, the first rate is the link's.
    return 2 * limits.checked().start_chunk;
}

CopyRoute choose_route(const DeviceInfo &dest, dev_t source_dev)
{
    CopyRoute route;
    route.writeback = dest.writeback;
    if (dest.writeback == WritebackMode::None) {
        route.clone_chain = true;
        route.evict = false;
        return route;
    }
    const bool same_fs = dest.st_dev == source_dev;
    const bool fast_fixed =
        !dest.removable && !dest.rotational && !dest.block_device.empty() && dest.writeback == WritebackMode::Windows;
    route.write_through = dest.mount_flags.sync;
    route.clone_chain = (same_fs || fast_fixed) && !route.write_through;
    route.evict = true;
    route.direct_writes = takes_direct_writes(dest);
    route.evicted_means_committed = evicted_means_committed(dest);
    // A small file's own writeback, by what the device is (choose_small_file_writeback, device_probe.h).
    const SmallFileWriteback small = choose_small_file_writeback(dest);
    route.small_file_writeback = small.per_file;
    route.small_file_writeback_settled = small.settled;
    return route;
}

bool CopySession::small_file_writeback() const
{
    if (route.small_file_writeback_settled || !meter.measured())
        return route.small_file_writeback;
    return small_files_need_own_writeback(meter.rate());
}

void CopySession::count_durable(uint64_t bytes, ProgressCounters &counters)
{
    if (bytes == 0)
        return;
    durable_total += bytes;
    counters.durable_bytes.fetch_add(bytes, std::memory_order_relaxed);
    meter.sample(monotonic_seconds(), durable_total);
    counters.device_rate.store(meter.rate(), std::memory_order_relaxed);
}

const char *const kReadSource = "read source";

Status SourceHash::read_into_hash(int src, uint64_t to, const std::string &path)
{
    if (buffer_.empty())
        buffer_.resize(1 << 20);
    while (next_ < to) {
        const std::size_t want = std::size_t(std::min<uint64_t>(buffer_.size(), to - next_));
        const ssize_t n = sys().pread(src, buffer_.data(), want, off_t(next_));
        if (n < 0)
            return Status::source(errno, kReadSource, path);
        if (n == 0)
            return Status::source(EIO, kReadSource, path).with_detail(i18n("changed size while it was being copied"));
        sha_.update(buffer_.data(), std::size_t(n));
        next_ += uint64_t(n);
    }
    return {};
}

Status SourceHash::add(int src, uint64_t off, uint64_t len, const char *data, const std::string &path)
{
    if (off + len <= next_)
        return {};
    if (data && off == next_) {
        sha_.update(data, std::size_t(len));
        next_ += len;
        return {};
    }
    return read_into_hash(src, off + len, path);
}

Result<Sha256Digest> SourceHash::finish(int src, uint64_t size, const std::string &path)
{
    if (Status s = read_into_hash(src, size, path); !s)
        return s;
    return sha_.finish();
}

namespace {

uint64_t page_bytes()
{
    static const uint64_t size = uint64_t(::sysconf(_SC_PAGESIZE));
    return size;
}

// Errors that mean "this mechanism does not work here", not "the copy failed": the next one is tried, and
// this one stays off for the rest of the job.
bool is_unsupported(int err)
{
    return err == EXDEV || err == EINVAL || err == EOPNOTSUPP || err == ENOSYS || err == ENOTTY || err == EBADF ||
           err == ETXTBSY;
}

class Mover {
public:
    Mover(int src, int dst, CopySession &session, const std::string &path, uint64_t start = 0)
        : src_(src), dst_(dst), session_(session), path_(path), dst_pos_known_(start == 0)
    {}

    // Writes by read/write through O_DIRECT from now on (CopyRoute::direct_writes); false when the destination
    // refuses it.
    bool use_direct()
    {
        if (sys().fcntl_setfl(dst_, O_DIRECT) < 0)
            return false;
        direct_ = true;
        return true;
    }

    bool direct() const { return direct_; }

    // The descriptor as it was, for what comes after the data (the publish's syncs, a read-back).
    void stop_direct()
    {
        if (direct_ && sys().fcntl_setfl(dst_, 0) == 0)
            direct_ = false;
    }

    // Moves up to |len| bytes from offset |off| of the source to the same offset of the destination.
    // |moved| < len only at the source's end.
    Status move(uint64_t off, uint64_t len, uint64_t &moved)
    {
        moved = 0;
        while (moved < len) {
            uint64_t n = 0;
            if (Status s = move_once(off + moved, len - moved, n); !s)
                return s;
            if (n == 0)
                break; // end of the source
            if (session_.hash) {
                const char *data = last_was_buffered_ ? session_.buffer.data() : nullptr;
                if (Status s = session_.hash->add(src_, off + moved, n, data, path_); !s)
                    return s;
            }
            moved += n;
        }
        return {};
    }

private:
    Status move_once(uint64_t off, uint64_t len, uint64_t &n)
    {
        last_was_buffered_ = false;
        if (direct_)
            return read_write(off, len, n);
        if (session_.route.clone_chain && session_.copy_file_range_works) {
            off_t in = off_t(off), out = off_t(off);
            ssize_t r = sys().copy_file_range(src_, &in, dst_, &out, len);
            if (r > 0) {
                n = size_t(r);
                dst_pos_known_ = false;
                return {};
            }
            // Some filesystems answer 0 for data they can't copy in-kernel; read/write below tells EOF for sure.
            if (r == 0 || is_unsupported(errno)) {
                session_.copy_file_range_works = false;
            } else {
                return blame(errno, "copy_file_range", off);
            }
        }
        if (session_.sendfile_works && !session_.route.write_through) {
            // sendfile writes at the destination's file position, which the other mechanisms leave behind.
            if (!dst_pos_known_ || dst_pos_ != off) {
                if (sys().lseek(dst_, off_t(off), SEEK_SET) < 0)
                    return Status::destination(errno, "lseek", path_);
            }
            off_t in = off_t(off);
            const size_t ask = size_t(std::min<uint64_t>(len, 0x7ffff000));
            ssize_t r = sys().sendfile(dst_, src_, &in, ask);
            if (r >= 0) {
                n = size_t(r);
                dst_pos_known_ = true;
                dst_pos_ = off + n;
                return {};
            }
            if (!is_unsupported(errno) || errno == EBADF)
                return blame(errno, "sendfile", off);
            session_.sendfile_works = false;
        }
        return read_write(off, len, n);
    }

    Status read_write(uint64_t off, uint64_t len, uint64_t &n)
    {
        auto &buf = session_.buffer;
        const std::size_t wanted = session_.route.write_through || direct_ ? kWriteThroughBuffer : std::size_t(1) << 20;
        if (buf.size() < wanted)
            buf.resize(wanted);
        const size_t want = size_t(std::min<uint64_t>(len, buf.size()));
        ssize_t r = sys().pread(src_, buf.data(), want, off_t(off));
        if (r < 0)
            return Status::source(errno, kReadSource, path_);
        size_t done = 0;
        while (done < size_t(r)) {
            ssize_t w = sys().pwrite(dst_, buf.data() + done, size_t(r) - done, off_t(off + done));
            if (w < 0 && errno == EINVAL && direct_ && sys().fcntl_setfl(dst_, 0) == 0) {
                // A daemon that takes O_DIRECT opens but not its writes: buffered writes from here on.
                direct_ = false;
                session_.direct_works = false;
                continue;
            }
            if (w < 0)
                return Status::destination(errno, "write", path_);
            if (w == 0)
                return Status::destination(EIO, "write", path_);
            done += size_t(w);
        }
        n = size_t(r);
        dst_pos_known_ = false;
        last_was_buffered_ = true;
        return {};
    }

    // sendfile and copy_file_range read the source and write the destination in one call, so their EIO could
    // be either side's. A failing source (a dying SD card) must not be taken for a failing stick: that would
    // keep a part file on the stick and end the whole job. One byte read from the source at the same offset
    // tells which.
    Status blame(int err, const char *op, uint64_t off)
    {
        char byte;
        if ((err == EIO || err == ENXIO || err == ENOTCONN || err == ESTALE) &&
            sys().pread(src_, &byte, 1, off_t(off)) < 0)
            return Status::source(errno, kReadSource, path_);
        return Status::destination(err, op, path_);
    }

    int src_, dst_;
    CopySession &session_;
    const std::string &path_;
    bool dst_pos_known_; // a fresh destination sits at 0; a resumed one must be positioned
    uint64_t dst_pos_ = 0;
    bool last_was_buffered_ = false; // the last move went through session_.buffer (read/write)
    bool direct_ = false;            // the destination is written with O_DIRECT
};

// Tries a whole-file reflink. True when it worked; a "not here" answer turns cloning off for the job.
bool try_clone(int src, int dst, CopySession &session, Status &error, const std::string &path)
{
    if (!session.route.clone_chain || !session.clone_works)
        return false;
    if (sys().ficlone(dst, src) == 0)
        return true;
    if (is_unsupported(errno) || errno == EPERM)
        session.clone_works = false;
    else
        error = Status::destination(errno, "ioctl(FICLONE)", path);
    return false;
}

} // namespace

namespace {

// One big file's chunk loop: move a chunk, start its writeback, wait for the windows the plan allows beyond it,
// drop the source's pages behind it; between chunks, pause, cancel and resume points.
class ChunkedCopy {
public:
    ChunkedCopy(int src, int dst, uint64_t size, CopySession &session, const JobControl &control,
                ProgressCounters &counters, const std::string &path, FileCopyResult &result, uint64_t start,
                SourceResidency residency)
        : src_(src),
          dst_(dst),
          size_(size),
          session_(session),
          control_(control),
          counters_(counters),
          path_(path),
          result_(result),
          source_(src, size, std::move(residency)),
          sync_(session.sync_fd >= 0 ? session.sync_fd : dst),
          windows_(sync_, session.route.writeback, path, &control),
          mover_(src, dst, session, path, start),
          off_(start)
    {
        struct stat st {};
        // A sparse source (fewer blocks than its size needs) is copied data segment by data segment, so its
        // holes stay holes where the target can keep them, instead of gigabytes of zeros going through the stick.
        sparse_ = sys().fstat(src, &st) == 0 && uint64_t(st.st_blocks) * 512 < size;
        data_end_ = sparse_ ? start : size;
        if (session.route.direct_writes && session.direct_works && !mover_.use_direct())
            session.direct_works = false;
        if (session.route.evicted_means_committed)
            windows_.count_evicted_as_committed();
    }

    Status run()
    {
        if (!session_.meter.measured())
            session_.meter.start(monotonic_seconds(), session_.durable_total);
        next_checkpoint_ = monotonic_seconds() + session_.checkpoint_seconds;
        Status s = copy_and_drain();
        while (!s && write_again(s))
            s = copy_and_drain();
        if (!writes_handed_over_)
            mover_.stop_direct();
        source_.release_all();
        // A trailing hole was never written: the size says it.
        if (s && sparse_ && off_ == size_ && sys().ftruncate(dst_, off_t(size_)) < 0)
            return Status::destination(errno, "ftruncate", path_);
        return s;
    }

private:
    // Whatever the copy did, it waits for the windows in flight.
    Status copy_and_drain()
    {
        Status s = loop();
        if (s && off_ == size_ && !sparse_ && session_.writes_done && !writes_handed_over_) {
            writes_handed_over_ = true;
            session_.writes_done(); // |dst_| may be closed from here on
        }
        uint64_t d = 0;
        Status drained = windows_.drain(d);
        take_durable(d);
        if (s && !drained)
            s = std::move(drained);
        return s;
    }

    // A share's client may answer a sync with "try again": the SMB client did, once it had made its connection
    // anew after the link stood still for 20 s (tests/vm/shares.py, share-stall-cifs), with EAGAIN, and once with
    // EBADF from msync (CI, 2026-11-29): it had no handle open on the server yet to write the pages through. msync
    // takes no descriptor, so that EBADF is only ever the client's. Either says nothing of what became of the
    // bytes not yet synced, so they are written again from the source, from the end of what is durable. Up to
    // kWriteAgain times in a row with nothing made durable between them; then the copy fails with the error, its
    // part file kept for --resume (job_report.cpp). Not for a sparse file: its holes were counted durable as they
    // were passed, and going back over them would count them again.
    static bool says_try_again(const Status &s)
    {
        return s.on_destination() && (s.err() == EAGAIN || (s.err() == EBADF && s.op() == "msync"));
    }
    bool write_again(const Status &s)
    {
        // Not onto NFS, where nothing says "try again", and a window may have been counted durable before its sync
        // (WritebackWindows::count_evicted_as_committed()): what to write again would not start early enough.
        if (!says_try_again(s) || session_.route.writeback != WritebackMode::ChunkSync || sparse_ ||
            writes_handed_over_ || session_.route.evicted_means_committed)
            return false;
        if (result_.durable > durable_at_write_again_)
            written_again_ = 0;
        if (written_again_ == kWriteAgain)
            return false;
        const std::optional<uint64_t> from = windows_.forget_unsynced();
        if (!from || *from > off_)
            return false;
        ++written_again_;
        durable_at_write_again_ = result_.durable;
        counters_.written_bytes.fetch_sub(off_ - *from, std::memory_order_relaxed);
        result_.copied = off_ = *from;
        return true;
    }

    Status loop()
    {
        while (off_ < size_) {
            if (sparse_ && off_ >= data_end_) {
                if (Status s = skip_hole(); !s)
                    return s;
                if (off_ >= size_)
                    break;
            }
            if (Status s = pause_point(); !s)
                return s;
            uint64_t moved = 0;
            if (Status s = copy_chunk(moved); !s)
                return s;
            if (moved == 0)
                break; // the source shrank under us; what it had is copied
            if (Status s = checkpoint_if_due(); !s)
                return s;
        }
        return {};
    }

    // Counts the hole at |off_| as copied and durable (nothing to write) and finds the next data segment.
    Status skip_hole()
    {
        off_t data = sys().lseek(src_, off_t(off_), SEEK_DATA);
        if (data < 0 && errno != ENXIO)
            return Status::source(errno, "lseek(SEEK_DATA)", path_);
        const uint64_t next = data < 0 ? size_ : std::min<uint64_t>(uint64_t(data), size_); // ENXIO: a hole to EOF
        if (next > off_) {
            const uint64_t hole = next - off_;
            counters_.written_bytes.fetch_add(hole, std::memory_order_relaxed);
            counters_.durable_bytes.fetch_add(hole, std::memory_order_relaxed);
            counters_.unwritten_bytes.fetch_add(hole, std::memory_order_relaxed);
            result_.durable += hole;
            result_.unwritten += hole;
            result_.copied = off_ = next;
            if (off_ >= size_)
                return {};
        }
        off_t hole_at = sys().lseek(src_, off_t(off_), SEEK_HOLE);
        data_end_ = hole_at < 0 ? size_ : std::min<uint64_t>(uint64_t(hole_at), size_);
        if (data_end_ <= off_)
            data_end_ = size_;
        return {};
    }

    Status pause_point()
    {
        if (control_.pause_requested()) {
            // Let the device catch up first, so the paused bar shows what is really on it.
            uint64_t d = 0;
            Status s = windows_.drain(d);
            take_durable(d);
            if (!s)
                return s;
            // And the dirty-memory chart what the pause left of this copy in the cache, not the last chunk's.
            measure_own_dirty();
            counters_.state.store(JobState::Paused);
            const bool go_on = control_.wait_while_paused();
            counters_.state.store(JobState::Running);
            session_.meter.restart_clock(monotonic_seconds(), session_.durable_total);
            if (!go_on)
                return Status::from_errno(ECANCELED, "copy", path_);
        }
        if (control_.cancel_requested() || (session_.stop && session_.stop()))
            return Status::from_errno(ECANCELED, "copy", path_);
        return {};
    }

    Status copy_chunk(uint64_t &moved)
    {
        const ChunkPlan plan = plan_chunks(session_.meter.measured() ? session_.meter.rate() : 0, session_.limits);
        if (Status s = move_in_pieces(std::min(plan.chunk_bytes, (sparse_ ? data_end_ : size_) - off_), moved); !s)
            return s;
        if (moved == 0)
            return {};
        counters_.written_bytes.fetch_add(moved, std::memory_order_relaxed);
        source_.release_until(off_ + moved);
        uint64_t d = 0;
        Status s = windows_.submit(off_, moved, plan.windows, d);
        take_durable(d);
        result_.copied = off_ += moved;
        measure_own_dirty(); // one cheap call per chunk
        return s;
    }

    // Onto a share a chunk is half a second of the link, and the copy waits for a window's sync only when the
    // budget is spent: by then the sync has gone out behind every byte before it, and the link has nothing left to
    // send when it returns. Written whole, the next chunk then reached the link only once sendfile had put all of
    // it in the cache (4-8 MiB: 60-250 ms in the VM's emulated guest), and the link idled meanwhile, each time the
    // budget ran out. Where the helper syncs the windows (ChunkSync: shares, FUSE) each piece's writeback now
    // starts as soon as it is written. Elsewhere the device is busy with the windows queued, and the chunk goes
    // whole.
    Status move_in_pieces(uint64_t want, uint64_t &moved)
    {
        const bool pieces = session_.route.writeback == WritebackMode::ChunkSync && !mover_.direct();
        moved = 0;
        while (moved < want) {
            uint64_t got = 0;
            const uint64_t step = pieces ? std::min(kSharePiece, want - moved) : want - moved;
            if (Status s = mover_.move(off_ + moved, step, got); !s)
                return s;
            if (got == 0)
                break; // the source's end
            if (pieces && moved + got < want)
                windows_.start_piece(off_ + moved, got); // the last piece starts with the chunk in submit()
            moved += got;
        }
        return {};
    }

    // What this copy holds in the cache right now, for the dirty-memory chart.
    void measure_own_dirty()
    {
        if (auto cs = cachestat(sync_))
            counters_.own_dirty_bytes.store(int64_t((cs->dirty + cs->writeback) * page_bytes()),
                                            std::memory_order_relaxed);
    }

    Status checkpoint_if_due()
    {
        if (!session_.checkpoint || session_.checkpoint_seconds <= 0 || monotonic_seconds() < next_checkpoint_)
            return {};
        if (Status s = session_.checkpoint(); !s)
            return s;
        next_checkpoint_ = monotonic_seconds() + session_.checkpoint_seconds;
        return {};
    }

    void take_durable(uint64_t bytes)
    {
        result_.durable += bytes;
        session_.count_durable(bytes, counters_);
    }

    int src_, dst_;
    uint64_t size_;
    CopySession &session_;
    const JobControl &control_;
    ProgressCounters &counters_;
    const std::string &path_;
    FileCopyResult &result_;
    SourceCache source_;
    int sync_; // |dst_|, or the read-only descriptor the windows wait through (CopySession::sync_fd)
    WritebackWindows windows_;
    Mover mover_;
    uint64_t off_;
    bool sparse_ = false;
    uint64_t data_end_ = 0; // end of the data segment |off_| is in; looked up when reached
    double next_checkpoint_ = 0;
    static constexpr int kWriteAgain = 3;
    bool writes_handed_over_ = false;     // CopySession::writes_done was called
    int written_again_ = 0;               // times in a row the unsynced windows were written again
    uint64_t durable_at_write_again_ = 0; // result_.durable when they last were
};

} // namespace

Status copy_file_data(int src, int dst, uint64_t size, CopySession &session, const JobControl &control,
                      ProgressCounters &counters, const std::string &path, FileCopyResult &result, uint64_t start,
                      std::optional<SourceResidency> residency)
{
    result = {};
    if (size == 0)
        return {};
    start = std::min(start, size);
    if (start > 0) {
        // On the device already, as far as anyone can tell; the final fdatasync settles it either way.
        counters.written_bytes.fetch_add(start, std::memory_order_relaxed);
        counters.durable_bytes.fetch_add(start, std::memory_order_relaxed);
        counters.unwritten_bytes.fetch_add(start, std::memory_order_relaxed);
        result.copied = result.durable = result.unwritten = start;
    }
    Status clone_error;
    if (start == 0 && try_clone(src, dst, session, clone_error, path)) {
        result.copied = size;
        counters.written_bytes.fetch_add(size, std::memory_order_relaxed);
        return {};
    }
    if (!clone_error.ok())
        return clone_error;
    return ChunkedCopy(src, dst, size, session, control, counters, path, result, start,
                       residency ? std::move(*residency) : source_residency(src, size, session.route.evict))
        .run();
}

Status copy_small_file_data(int src, int dst, uint64_t size, CopySession &session, ProgressCounters &counters,
                            const std::string &path, FileCopyResult &result, std::optional<SourceResidency> residency)
{
    result = {};
    if (size == 0)
        return {};
    SourceCache source(src, size, residency ? std::move(*residency) : source_residency(src, size, session.route.evict));
    Mover mover(src, dst, session, path);
    uint64_t moved = 0;
    Status s = mover.move(0, size, moved);
    counters.written_bytes.fetch_add(moved, std::memory_order_relaxed);
    result.copied = moved;
    source.release_all();
    // On a journaling filesystem no writeback of its own: the group's syncfs sends the whole group at once.
    // Elsewhere it starts now, so the group's sync on the job's thread finds it under way (page_cache_policy.h).
    if (s && moved > 0 && session.small_file_writeback() && sys().sync_file_range(dst, 0, 0, SYNC_FILE_RANGE_WRITE) < 0)
        return Status::destination(errno, "sync_file_range", path);
    return s;
}

} // namespace sanecopy
