// SPDX-License-Identifier: GPL-2.0-or-later
//
// The page-cache policy, in one place: what the copy tells the kernel about the pages it reads and writes.
//
// Source (SourceCache): read with POSIX_FADV_SEQUENTIAL, and once a range has been sent, drop the pages that
// the copy itself brought in. Pages that were cached before the copy started belong to someone else (the
// user's open video, a build tree) and are left alone; residency is taken once per file with mincore, because
// readahead runs ahead of every chunk and a per-chunk check would mistake our own readahead for theirs.
//
// Destination (WritebackWindows): after each chunk is handed over, start its writeback
// (sync_file_range(SYNC_FILE_RANGE_WRITE)) and queue it as a window. When more windows are queued than the
// plan allows, wait for the oldest (WAIT_BEFORE|WRITE|WAIT_AFTER): the device has its bytes, so they count as
// durable and their now-clean pages are dropped (POSIX_FADV_DONTNEED). The device always has the younger
// windows queued while we wait, so it never idles, unlike an fdatasync per chunk.
//
// Where sync_file_range cannot see the data (FUSE: the daemon writes it into the block device's cache; network
// and stacked filesystems), each window is made durable by a sync of its own range instead, run on a helper
// thread so the next chunk is sent while the previous one syncs. Its writeback is still started as it is written
// (SYNC_FILE_RANGE_WRITE, a 1 MiB piece at a time), so a share's link carries the next chunk while the last one's
// sync waits for its round trip. The range matters: fdatasync waits for every page of the file under writeback,
// the younger windows' too, so each one ran the link dry before its COMMIT or flush went out, and the copy waiting
// on it sent nothing meanwhile (an idle link every 1.6 s, 0.4-0.5 s of 11 s over 100 Mbit/s and 20 ms in the VM).
// There is no ranged fdatasync system call, but msync(MS_SYNC) over a shared map of the file is one
// (vfs_fsync_range on the mapped bytes): NFS and SMB wait for the writeback of that range alone, then commit or
// flush. NFS commits every page of the file the server has answered for, and again for those answered meanwhile,
// until none is left: while the link is busy its syncs return in bursts, when the copy waits for one. The map is
// never touched; a file that can't be mapped is synced whole with fdatasync, as before.
//
// Small files (small_batch.h) on a fixed disk's journaling filesystem get no writeback of their own: a
// sync_file_range per file sends one small request per file, which a fast device pays for per request (50,000
// tiny files onto an unthrottled loop device: 1.36x cp -r + sync with it, 0.99x without), where the group's one
// syncfs sends the whole group in a few large ones. On a removable device (a stick, a card) each file's
// writeback starts when it is written: there the device is slower than the job, its queue is never empty, so
// the scheduler merges those requests anyway, and the device starts at once instead of waiting for a group
// (2000 small files onto ext4 on the USB VM's stick: 7.9-8.0 s with it, 8.8-9.2 s without). On FAT, exFAT and
// NTFS the group is synced on the job's thread (GroupSync::Inline), so there too each file's writeback starts
// when it is written, or the device would idle while the next group is written. Which device is which, and why,
// is choose_small_file_writeback() (device_probe.h); a USB disk the copy measures above 100 MB/s counts as fast,
// and a strict kernel cap on a device's dirty memory (bdi strict_limit) asks for each file's writeback too.
// Once a group is durable, each file's clean pages are dropped (drop_written_pages).
//
// Read-back (verify.h) drops what it reads as it goes, on both sides, so verifying fills the cache no more than
// copying did; the copy's own pages were dropped before, so the reads really go to the device.
//
// Onto tmpfs nothing is synced or evicted: memory is the device.
#pragma once

#include "units.h"

#include "device_probe.h"
#include "job_control.h"
#include "result.h"
#include "source_share.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace sanecopy {

// DONTNEED drops only folios that lie wholly inside its range, and the page cache may hold a file in folios of
// up to this size (readahead, large-folio filesystems): a drop goes back this far over where the last one ended.
inline constexpr uint64_t kLargestFolio = 2 * kMiB;

// Drops the pages of a written file once they are clean (its data is durable). DONTNEED skips dirty pages, so
// calling it earlier only wastes a system call.
void drop_written_pages(int fd);
// Drops the pages of [off, off + len) of a file just read (a read-back, or the source during verify).
void drop_read_pages(int fd, uint64_t off, uint64_t len);

// Which pages of a source were cached before the copy read it, so that only the copy's own are dropped: one byte
// per page from mincore in |resident|, empty when none was. |evict| false: none of them may be dropped (the
// kernel would not say which were whose). Taken before anything reads the file (a read-ahead included).
struct SourceResidency {
    bool evict = true;
    std::vector<unsigned char> resident;
    // The file of a group of jobs that copy the same sources (source_share.h): its pages are dropped when the
    // group says so.
    std::optional<SharedSourceFile> shared;
};
SourceResidency source_residency(int fd, uint64_t size, bool evict);
// The same for a source already fstat'ed (|st|: its owner and size), without asking again: a tree of small files
// is opened and fstat'ed by the read-ahead, and a second fstat was one of the eighteen system calls a file took.
SourceResidency source_residency(int fd, const struct stat &st, bool evict);

class SourceCache {
public:
    // Takes the residency snapshot and sets SEQUENTIAL. Never fails: a source we can't advise is still copied.
    SourceCache(int fd, uint64_t size, bool evict);
    // With a snapshot taken earlier (a source read ahead of the copy: SourcePrefetch).
    SourceCache(int fd, uint64_t size, SourceResidency residency);
    // Drops the pages of [0, end) that were not cached before, from where the last call stopped.
    void release_until(uint64_t end);
    // Drops our pages of the whole file, readahead beyond the last chunk included.
    void release_all();

private:
    void drop_range(uint64_t from, uint64_t to);

    int fd_;
    uint64_t size_;
    bool evict_;
    uint64_t released_ = 0;
    std::vector<unsigned char> resident_; // one byte per page, from mincore; empty: nothing was cached
    std::optional<SharedSourceFile> shared_;
};

class WritebackWindows {
public:
    // |path| is only for error messages. |control|, if given, gets a beat (stall_watch.h) each time the ChunkSync
    // helper's sync returns, or a window is found committed (count_evicted_as_committed()): the share has confirmed
    // bytes then, though the copy's thread counts them only when it
    // next hands a chunk over, which a client throttling writes to a dead link can hold back for seconds. Counted
    // late, they restart the stall clock late: share-stall-cifs once saw 7.4 MiB counted 4.9 s into a stall,
    // together with the copy's next chunk, and "not responding" 12 s after the cut instead of 7.
    WritebackWindows(int fd, WritebackMode mode, std::string path, const JobControl *control = nullptr);
    ~WritebackWindows();
    WritebackWindows(const WritebackWindows &) = delete;
    WritebackWindows &operator=(const WritebackWindows &) = delete;

    // Starts writeback of [off, off+len) and queues it. Then takes the windows already known durable (ChunkSync:
    // those the helper has synced) and, while more than |max_windows| are queued, waits for the oldest. Adds the
    // bytes that became durable to |durable|.
    Status submit(uint64_t off, uint64_t len, unsigned max_windows, uint64_t &durable);
    // ChunkSync: starts the writeback of [off, off+len), a piece of the chunk being written, before the chunk is
    // handed over whole. Nothing in the other modes.
    void start_piece(uint64_t off, uint64_t len);
    // ChunkSync onto NFS (evicted_means_committed()): while submit() waits for the oldest window, that window also
    // counts as durable as soon as the page cache holds none of its pages after a drop and no write of the file
    // failed, looked at from kCommitLook to kCommitLookMost apart. The helper's sync of it still runs; a failure
    // is reported by whichever of the two asks the file first, kept until the copy takes it. Not in drain(): the
    // copy's last bytes are known durable by a sync that returned.
    void count_evicted_as_committed() { evicted_means_committed_ = true; }
    static constexpr std::chrono::milliseconds kCommitLook {10}, kCommitLookMost {40};
    // Waits for every queued window. Adds their bytes to |durable|.
    Status drain(uint64_t &durable);
    // Bytes handed over but not yet known durable.
    uint64_t pending_bytes() const { return pending_bytes_; }
    // After submit or drain failed: waits until the helper is done with the windows it was handed, then forgets
    // every window not known durable and the failure, and returns where the first of them starts (everything
    // before it is durable). Nothing when no window was pending.
    std::optional<uint64_t> forget_unsynced();

private:
    struct Window {
        uint64_t off;
        uint64_t len;
    };
    Status wait_oldest(uint64_t &durable, bool may_look = false);
    bool none_left_cached(const Window &w);
    void drop_window(const Window &w) const;
    Status take_synced(uint64_t &durable);
    Status start_sync_thread();
    void sync_loop();
    int sync_range(uint64_t from, uint64_t to);

    int fd_;
    WritebackMode mode_;
    std::string path_;
    const JobControl *control_;
    std::deque<Window> queue_;
    uint64_t pending_bytes_ = 0;

    // ChunkSync: a helper thread syncs the windows handed to it, oldest first, those waiting together in one range.
    std::thread syncer_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Window> unsynced_; // handed to the syncer, not yet durable
    std::size_t synced_ = 0;      // windows made durable by the syncer
    std::size_t waited_ = 0;      // windows whose completion this side has taken
    int sync_error_ = 0;
    const char *sync_error_op_ = "";
    bool stop_ = false;
    bool evicted_means_committed_ = false;
    // The syncer's own: a read-only shared map of the file for msync, grown as the file does; none when the file
    // can't be mapped (then fdatasync).
    void *map_ = nullptr;
    uint64_t map_len_ = 0;
    bool map_refused_ = false;
};

} // namespace sanecopy
