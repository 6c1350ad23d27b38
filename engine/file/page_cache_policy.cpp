// SPDX-License-Identifier: GPL-2.0-or-later
#include "page_cache_policy.h"
#include "units.h"

#include <sys/stat.h>

#include "sys.h"
#include "sysmon.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace sanecopy {

namespace {
uint64_t page_size()
{
    static const uint64_t size = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    return size;
}
} // namespace

void drop_written_pages(int fd) { sys().fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); }

void drop_read_pages(int fd, uint64_t off, uint64_t len)
{
    const uint64_t from = off > kLargestFolio ? off - kLargestFolio : 0;
    sys().fadvise(fd, off_t(from), off_t(off + len - from), POSIX_FADV_DONTNEED);
}

SourceResidency source_residency(int fd, uint64_t size, bool evict)
{
    struct stat st {};
    if (sys().fstat(fd, &st) < 0)
        st.st_uid = sys().geteuid(); // as before this check: the kernel's answers are believed
    st.st_size = off_t(size);
    return source_residency(fd, st, evict);
}

SourceResidency source_residency(int fd, const struct stat &st, bool evict)
{
    const uint64_t size = uint64_t(st.st_size);
    SourceResidency r;
    r.evict = evict && size > 0;
    if (!r.evict)
        return r;
    // The kernel tells a file's residency only to its owner (or to who may write it, or to root): to anyone
    // else mincore says every page is cached, and newer kernels refuse cachestat. Believed, that would keep
    // every page of a file the user only reads (another user's, root's, on a read-only mount) in the cache.
    // There the copy can't tell whose pages are whose and drops what it read, as for an uncached file.
    if (const uid_t euid = sys().geteuid(); euid != 0 && st.st_uid != euid)
        return r;
    // Most sources are not cached at all, and then one cachestat says so: every page will be ours to drop. One
    // cached whole (just written or read) has none to drop. Otherwise (or before Linux 6.5) mincore tells page by
    // page, which for a 120 MiB file costs a 120 MiB map and 30,720 bytes of answer.
    if (auto cs = cachestat(fd); cs && (cs->cached == 0 || cs->cached >= (size + page_size() - 1) / page_size())) {
        r.evict = cs->cached == 0;
        return r;
    }
    void *map = sys().mmap(size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        r.evict = false; // can't tell whose pages are whose, so evict none
        return r;
    }
    std::vector<unsigned char> vec((size + page_size() - 1) / page_size());
    const bool ok = sys().mincore(map, size, vec.data()) == 0;
    sys().munmap(map, size);
    if (!ok) {
        r.evict = false;
        return r;
    }
    if (std::any_of(vec.begin(), vec.end(), [](unsigned char v) { return (v & 1) != 0; }))
        r.resident = std::move(vec);
    // resident stays empty when nothing was cached: then every page is ours to drop.
    return r;
}

SourceCache::SourceCache(int fd, uint64_t size, bool evict) : SourceCache(fd, size, source_residency(fd, size, evict))
{}

SourceCache::SourceCache(int fd, uint64_t size, SourceResidency residency)
    : fd_(fd),
      size_(size),
      evict_(residency.evict),
      resident_(std::move(residency.resident)),
      shared_(std::move(residency.shared))
{
    if (size_ == 0)
        return;
    // Readahead doubles its window under SEQUENTIAL; a failure only costs speed. A file that fits in the
    // default window gains nothing from it.
    constexpr uint64_t kDefaultReadahead = 128 * kKiB;
    if (size_ > kDefaultReadahead)
        sys().fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

void SourceCache::release_until(uint64_t end)
{
    if (!evict_ || end <= released_)
        return;
    if (shared_ && !shared_->share->may_drop(*shared_->file, shared_->member, end, false)) {
        released_ = end; // kept for the group's slower jobs; the last of them drops it
        return;
    }
    // DONTNEED only drops folios that lie wholly inside the range, and readahead brings large folios (up to
    // 2 MiB), so a folio straddling the previous end was kept then: go back over it.
    drop_range(released_ > kLargestFolio ? released_ - kLargestFolio : 0, end);
    released_ = end;
}

void SourceCache::release_all()
{
    if (!evict_)
        return;
    if (shared_ && !shared_->share->may_drop(*shared_->file, shared_->member, size_, true))
        return;
    drop_range(0, size_);
    released_ = size_;
}

void SourceCache::drop_range(uint64_t from, uint64_t to)
{
    const uint64_t ps = page_size();
    // Whole pages only: a partial page at |to| may still be read by the next chunk.
    uint64_t first = from / ps;
    uint64_t last = to >= size_ ? (size_ + ps - 1) / ps : to / ps;
    if (resident_.empty()) {
        if (last > first)
            sys().fadvise(fd_, off_t(first * ps), off_t((last - first) * ps), POSIX_FADV_DONTNEED);
        return;
    }
    uint64_t run = first;
    for (uint64_t page = first; page <= last; ++page) {
        const bool theirs = page < last && page < resident_.size() && (resident_[page] & 1);
        if (page == last || theirs) {
            if (page > run)
                sys().fadvise(fd_, off_t(run * ps), off_t((page - run) * ps), POSIX_FADV_DONTNEED);
            run = page + 1;
        }
    }
}

WritebackWindows::WritebackWindows(int fd, WritebackMode mode, std::string path, const JobControl *control)
    : fd_(fd), mode_(mode), path_(std::move(path)), control_(control)
{}

WritebackWindows::~WritebackWindows()
{
    if (syncer_.joinable()) {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        syncer_.join();
    }
    if (map_)
        sys().munmap(map_, map_len_);
}

Status WritebackWindows::start_sync_thread()
{
    if (!syncer_.joinable())
        syncer_ = std::thread([this] { sync_loop(); });
    return {};
}

void WritebackWindows::sync_loop()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stop_ || !unsynced_.empty(); });
        if (unsynced_.empty())
            return; // stopping, with nothing left
        // Every window waiting now, in one sync: after a slow one the syncer catches up at once.
        const std::size_t count = unsynced_.size();
        uint64_t from = UINT64_MAX, to = 0;
        for (const Window &w : unsynced_) {
            from = std::min(from, w.off);
            to = std::max(to, w.off + w.len);
        }
        lock.unlock();
        const int err = sync_range(from, to);
        if (!err && control_)
            control_->beat();
        lock.lock();
        if (err && !sync_error_) {
            sync_error_ = err;
            sync_error_op_ = map_refused_ ? "fdatasync" : "msync";
        }
        unsynced_.erase(unsynced_.begin(), unsynced_.begin() + std::ptrdiff_t(count));
        synced_ += count;
        wake_.notify_all();
    }
}

// [from, to) of the file durable: 0, or the errno of the sync.
int WritebackWindows::sync_range(uint64_t from, uint64_t to)
{
    if (!map_refused_ && map_len_ < to) {
        if (map_)
            sys().munmap(map_, map_len_);
        map_ = nullptr;
        // Address space only, never touched, so it may reach past the end of the file: a quarter GiB at first, then
        // doubled, so a file maps once or a few times, not once a window (an NFS client may check the file's
        // attributes with the server on each map).
        const uint64_t page = page_size();
        const uint64_t len = (std::max({to, map_len_ * 2, uint64_t(256) * kMiB}) + page - 1) / page * page;
        // Where the address space is too small for it (a 32-bit system), the file is synced whole.
        void *map = len <= SIZE_MAX ? sys().mmap(std::size_t(len), PROT_READ, MAP_SHARED, fd_, 0) : MAP_FAILED;
        if (map == MAP_FAILED) {
            map_refused_ = true;
            map_len_ = 0;
        } else {
            map_ = map;
            map_len_ = len;
        }
    }
    if (map_refused_)
        return sys().fdatasync(fd_) < 0 ? errno : 0;
    const uint64_t start = from / page_size() * page_size();
    return sys().msync(static_cast<char *>(map_) + start, std::size_t(to - start), MS_SYNC) < 0 ? errno : 0;
}

Status WritebackWindows::submit(uint64_t off, uint64_t len, unsigned max_windows, uint64_t &durable)
{
    if (len == 0)
        return {};
    switch (mode_) {
    case WritebackMode::None:
        durable += len;
        return {};
    case WritebackMode::Windows:
        if (sys().sync_file_range(fd_, off_t(off), off_t(len), SYNC_FILE_RANGE_WRITE) < 0)
            return Status::destination(errno, "sync_file_range", path_);
        break;
    case WritebackMode::ChunkSync: {
        // Send the chunk now, so it travels while the helper's sync of the ones before waits for its round trip
        // (an NFS COMMIT, an SMB flush). Without it a share's link idled from the end of each chunk's writes to
        // the start of the next sync, a round trip or two per chunk: 66-76 % of a 100 Mbit/s, 20 ms link
        // (tests/vm/shares.py). Durable still means the helper's sync returned. A failure here is not the copy's:
        // that sync reports whatever the filesystem really could not do.
        sys().sync_file_range(fd_, off_t(off), off_t(len), SYNC_FILE_RANGE_WRITE);
        if (Status s = start_sync_thread(); !s)
            return s;
        std::lock_guard lock(mutex_);
        unsynced_.push_back({off, len});
        wake_.notify_all();
        break;
    }
    }
    queue_.push_back({off, len});
    pending_bytes_ += len;
    if (Status s = take_synced(durable); !s)
        return s;
    while (queue_.size() > max_windows) {
        if (Status s = wait_oldest(durable, evicted_means_committed_); !s)
            return s;
    }
    return {};
}

void WritebackWindows::start_piece(uint64_t off, uint64_t len)
{
    // As for a whole chunk in submit(): the helper's sync reports what the filesystem could not do.
    if (mode_ == WritebackMode::ChunkSync && len > 0)
        sys().sync_file_range(fd_, off_t(off), off_t(len), SYNC_FILE_RANGE_WRITE);
}

// ChunkSync: what the helper has synced counts now, not only once the window budget makes the copy wait for it.
// Counted late, a window's bytes were a chunk's size from eight chunks before, over one chunk's time: the rate
// measured from them stayed a fraction of the share's, and the chunks planned from that rate with it. Onto sshfs
// 120 MiB went in 4.5 MiB chunks where two seconds of link time are 20 MiB, each chunk's sync holding the file's
// writes back (tests/vm/shares.py, share-trace-sshfs). A failed sync surfaces here too, at once.
Status WritebackWindows::take_synced(uint64_t &durable)
{
    if (mode_ != WritebackMode::ChunkSync)
        return {};
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (queue_.empty() || (synced_ <= waited_ && !sync_error_))
                return {};
        }
        if (Status s = wait_oldest(durable); !s)
            return s;
    }
}

// Onto NFS the helper's sync of a window returned only when the link paused. Linux's NFS client sends a COMMIT
// of its own as each batch of writes is answered, and an fsync of any range returns only once no COMMIT of the
// file is out: while the copy kept the link busy there always was one, so the windows became durable in bursts,
// 24 MiB at a time every 2.5 s, each after the link had run dry (tests/vm/shares.py, share-commit-nfs4: idle 0.29-
// 0.34 s in 4-5 stretches for 120 MiB). Those COMMITs come back all the while, and a page they covered is
// the only kind a drop can take: looked at that way (tests/vm/commit_probe.py) the windows became durable every
// 0.2-0.4 s, and the link never idled (0.00 s). The client also lets go of a page whose WRITE or COMMIT failed (a
// soft mount timing out, a full share), the failure noted on the file before: none_left_cached() asks for it, so
// such a window fails the copy instead of letting it write on into a share that is gone. The look backs off while
// nothing changes (kCommitLook doubled up to kCommitLookMost): a drop that finds pages still uncommitted drains
// every CPU's page lists, and a stalled share has none to give up for a long time.
Status WritebackWindows::wait_oldest(uint64_t &durable, bool may_look)
{
    const Window w = queue_.front();
    bool committed = false; // found so by none_left_cached()
    if (mode_ == WritebackMode::Windows) {
        const unsigned flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
        if (sys().sync_file_range(fd_, off_t(w.off), off_t(w.len), flags) < 0)
            return Status::destination(errno, "sync_file_range", path_);
    } else {
        std::unique_lock lock(mutex_);
        const auto synced = [this] { return synced_ > waited_ || sync_error_; };
        if (!may_look)
            wake_.wait(lock, synced);
        for (auto look = kCommitLook; !committed && !wake_.wait_for(lock, look, synced);
             look = std::min(look * 2, kCommitLookMost)) {
            lock.unlock();
            committed = none_left_cached(w);
            lock.lock();
        }
        if (sync_error_)
            return Status::destination(sync_error_, sync_error_op_, path_);
        ++waited_;
        if (committed && control_)
            control_->beat(); // the share answered for these bytes
    }
    queue_.pop_front();
    pending_bytes_ -= w.len;
    durable += w.len;
    if (committed)
        return {}; // none_left_cached() dropped it all already
    drop_window(w);
    return {};
}

// Clean now, so DONTNEED really drops them (it skips dirty pages). It drops only folios wholly inside the range, and
// the page cache may hold this file in large folios, so go back over the previous window's end.
void WritebackWindows::drop_window(const Window &w) const
{
    const uint64_t from = w.off > kLargestFolio ? w.off - kLargestFolio : 0;
    sys().fadvise(fd_, off_t(from), off_t(w.off + w.len - from), POSIX_FADV_DONTNEED);
}

// Drops what the page cache may of |w| (and of a large folio reaching into it from before) and tells whether
// nothing of it is left, and no write of the file failed. False when cachestat can't say (before Linux 6.5): then
// the copy waits for the sync. A failure is taken from the file here (sync_file_range waiting for the window's
// writeback, none left, reports the file's writeback errors not yet reported to this descriptor) and kept as the
// helper's would be: its own sync through the same descriptor will not see it again. The other way round, the
// helper's sync may have taken a failure it has not yet kept when the look asks: the window counts, and the copy
// fails at its next wait (drain() always has a window left to wait for), having counted a window too many. A
// descriptor of the look's own would see every failure, but opening one onto NFS is a round trip behind every
// write queued on the link.
// Nor while any page of the file is dirty: a drop first starts the writeback of the file's dirty pages, and onto a
// share that stopped answering that waits for the client's congestion to clear.
bool WritebackWindows::none_left_cached(const Window &w)
{
    if (const std::optional<PageCacheStat> file = cachestat(fd_); !file || file->dirty > 0)
        return false;
    // A page still being sent (its WRITE not answered) is certainly not committed: no drop for it.
    if (const std::optional<PageCacheStat> window = cachestat(fd_, w.off, w.len); !window || window->writeback > 0)
        return false;
    drop_window(w);
    const std::optional<PageCacheStat> left = cachestat(fd_, w.off, w.len);
    if (!left || left->cached > 0)
        return false;
    if (sys().sync_file_range(fd_, off_t(w.off), off_t(w.len), SYNC_FILE_RANGE_WAIT_BEFORE) < 0) {
        const int err = errno;
        std::lock_guard lock(mutex_);
        if (!sync_error_) {
            sync_error_ = err;
            sync_error_op_ = "sync_file_range";
        }
        return false;
    }
    return true;
}

std::optional<uint64_t> WritebackWindows::forget_unsynced()
{
    if (queue_.empty())
        return std::nullopt;
    const uint64_t from = queue_.front().off;
    if (mode_ == WritebackMode::ChunkSync) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return unsynced_.empty(); });
        sync_error_ = 0;
        sync_error_op_ = "";
        synced_ = waited_ = 0;
    }
    queue_.clear();
    pending_bytes_ = 0;
    return from;
}

Status WritebackWindows::drain(uint64_t &durable)
{
    const bool had_windows = !queue_.empty();
    while (!queue_.empty()) {
        if (Status s = wait_oldest(durable); !s)
            return s;
    }
    // The whole file is clean now: whatever the per-window drops could not take (the partial last folio) goes.
    if (had_windows)
        sys().fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
    return {};
}

} // namespace sanecopy
