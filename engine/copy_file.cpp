// SPDX-License-Identifier: GPL-2.0-or-later
#include "copy_file.h"

#include "page_cache_policy.h"
#include "sysmon.h"
#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sanecopy {

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
    const bool fast_fixed = !dest.removable && !dest.rotational && !dest.block_device.empty() &&
                            dest.writeback == WritebackMode::Windows;
    route.clone_chain = same_fs || fast_fixed;
    route.evict = true;
    return route;
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
    {
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
            moved += n;
        }
        return {};
    }

private:
    Status move_once(uint64_t off, uint64_t len, uint64_t &n)
    {
        if (session_.route.clone_chain && session_.copy_file_range_works) {
            off_t in = off_t(off), out = off_t(off);
            ssize_t r = retry_eintr([&] { return sys().copy_file_range(src_, &in, dst_, &out, len); });
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
        if (session_.sendfile_works) {
            // sendfile writes at the destination's file position, which the other mechanisms leave behind.
            if (!dst_pos_known_ || dst_pos_ != off) {
                if (sys().lseek(dst_, off_t(off), SEEK_SET) < 0)
                    return Status::from_errno(errno, "lseek", path_);
            }
            off_t in = off_t(off);
            const size_t ask = size_t(std::min<uint64_t>(len, 0x7ffff000));
            ssize_t r = retry_eintr([&] { return sys().sendfile(dst_, src_, &in, ask); });
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
        if (buf.empty())
            buf.resize(1 << 20);
        const size_t want = size_t(std::min<uint64_t>(len, buf.size()));
        ssize_t r = retry_eintr([&] { return sys().pread(src_, buf.data(), want, off_t(off)); });
        if (r < 0)
            return Status::from_errno(errno, kReadSource, path_);
        size_t done = 0;
        while (done < size_t(r)) {
            ssize_t w = retry_eintr(
                [&] { return sys().pwrite(dst_, buf.data() + done, size_t(r) - done, off_t(off + done)); });
            if (w < 0)
                return Status::from_errno(errno, "write", path_);
            if (w == 0)
                return Status::from_errno(EIO, "write", path_);
            done += size_t(w);
        }
        n = size_t(r);
        dst_pos_known_ = false;
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
            retry_eintr([&] { return sys().pread(src_, &byte, 1, off_t(off)); }) < 0)
            return Status::from_errno(errno, kReadSource, path_);
        return Status::from_errno(err, op, path_);
    }

    int src_, dst_;
    CopySession &session_;
    const std::string &path_;
    bool dst_pos_known_;        // a fresh destination sits at 0; a resumed one must be positioned
    uint64_t dst_pos_ = 0;
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
        error = Status::from_errno(errno, "ioctl(FICLONE)", path);
    return false;
}

} // namespace

Status copy_file_data(int src, int dst, uint64_t size, CopySession &session, const JobControl &control,
                      ProgressCounters &counters, const std::string &path, FileCopyResult &result, uint64_t start)
{
    result = {};
    if (size == 0)
        return {};
    start = std::min(start, size);
    result.copied = result.durable = start;
    Status clone_error;
    if (start == 0 && try_clone(src, dst, session, clone_error, path)) {
        result.copied = size;
        counters.written_bytes.fetch_add(size, std::memory_order_relaxed);
        return {};
    }
    if (!clone_error.ok())
        return clone_error;

    SourceCache source(src, size, session.route.evict);
    WritebackWindows windows(dst, session.route.writeback, path);
    Mover mover(src, dst, session, path, start);
    if (!session.meter.measured())
        session.meter.start(monotonic_seconds(), session.durable_total);

    auto take_durable = [&](uint64_t bytes) {
        result.durable += bytes;
        session.count_durable(bytes, counters);
    };

    // A sparse source (fewer blocks than its size needs) is copied data segment by data segment, so its holes
    // stay holes where the target can keep them, instead of gigabytes of zeros going through the stick.
    struct stat st {};
    const bool sparse = sys().fstat(src, &st) == 0 && uint64_t(st.st_blocks) * 512 < size;
    uint64_t data_end = sparse ? start : size; // end of the data segment |off| is in; looked up when reached

    uint64_t off = start;
    double next_checkpoint = monotonic_seconds() + session.checkpoint_seconds;
    while (off < size) {
        if (sparse && off >= data_end) {
            off_t data = sys().lseek(src, off_t(off), SEEK_DATA);
            if (data < 0 && errno != ENXIO)
                return Status::from_errno(errno, "lseek(SEEK_DATA)", path);
            const uint64_t next = data < 0 ? size : std::min<uint64_t>(uint64_t(data), size); // ENXIO: a hole to EOF
            if (next > off) {
                counters.written_bytes.fetch_add(next - off, std::memory_order_relaxed);
                counters.durable_bytes.fetch_add(next - off, std::memory_order_relaxed);
                counters.unwritten_bytes.fetch_add(next - off, std::memory_order_relaxed);
                result.durable += next - off;
                off = next;
                if (off >= size)
                    break;
            }
            off_t hole = sys().lseek(src, off_t(off), SEEK_HOLE);
            data_end = hole < 0 ? size : std::min<uint64_t>(uint64_t(hole), size);
            if (data_end <= off)
                data_end = size;
        }
        if (control.pause_requested()) {
            // Let the device catch up first, so the paused bar shows what is really on it.
            uint64_t d = 0;
            Status s = windows.drain(d);
            take_durable(d);
            if (!s)
                return s;
            counters.state.store(JobState::Paused);
            const bool go_on = control.wait_while_paused();
            counters.state.store(JobState::Running);
            session.meter.restart_clock(monotonic_seconds(), session.durable_total);
            if (!go_on)
                return Status::from_errno(ECANCELED, "copy", path);
        }
        if (control.cancel_requested())
            return Status::from_errno(ECANCELED, "copy", path);

        const ChunkPlan plan = plan_chunks(session.meter.measured() ? session.meter.rate() : 0, session.limits);
        uint64_t moved = 0;
        if (Status s = mover.move(off, std::min(plan.chunk_bytes, (sparse ? data_end : size) - off), moved); !s)
            return s;
        if (moved == 0)
            break; // the source shrank under us; what it had is copied
        counters.written_bytes.fetch_add(moved, std::memory_order_relaxed);
        source.release_until(off + moved);
        uint64_t d = 0;
        Status s = windows.submit(off, moved, plan.windows, d);
        take_durable(d);
        if (!s)
            return s;
        off += moved;
        if (session.checkpoint && session.checkpoint_seconds > 0 && monotonic_seconds() >= next_checkpoint) {
            if (Status cs = session.checkpoint(); !cs)
                return cs;
            next_checkpoint = monotonic_seconds() + session.checkpoint_seconds;
        }
        // What this copy holds in the cache right now, for the dirty-memory chart: one cheap call per chunk.
        if (auto cs = cachestat(dst))
            counters.own_dirty_bytes.store(int64_t((cs->dirty + cs->writeback) * page_bytes()),
                                           std::memory_order_relaxed);
    }
    uint64_t d = 0;
    Status s = windows.drain(d);
    take_durable(d);
    source.release_all();
    result.copied = off;
    // A trailing hole was never written: the size says it.
    if (s && sparse && off == size && retry_eintr([&] { return sys().ftruncate(dst, off_t(size)); }) < 0)
        return Status::from_errno(errno, "ftruncate", path);
    return s;
}

Status copy_small_file_data(int src, int dst, uint64_t size, CopySession &session, ProgressCounters &counters,
                            const std::string &path, FileCopyResult &result)
{
    result = {};
    if (size == 0)
        return {};
    SourceCache source(src, size, session.route.evict);
    Mover mover(src, dst, session, path);
    uint64_t moved = 0;
    if (Status s = mover.move(0, size, moved); !s)
        return s;
    counters.written_bytes.fetch_add(moved, std::memory_order_relaxed);
    source.release_all();
    result.copied = moved;
    if (session.route.writeback == WritebackMode::Windows) {
        // Start the writeback now so the batch's one sync finds it under way.
        if (retry_eintr([&] { return sys().sync_file_range(dst, 0, 0, SYNC_FILE_RANGE_WRITE); }) < 0)
            return Status::from_errno(errno, "sync_file_range", path);
    }
    return {};
}

} // namespace sanecopy
