// SPDX-License-Identifier: GPL-2.0-or-later
//
// The copy loop for one regular file's bytes. Publishing (part file, rename, directory sync) is publish.h's job;
// this file moves data and keeps the page cache honest while it does.
#pragma once

#include "chunk_controller.h"
#include "device_probe.h"
#include "job_control.h"
#include "manifest.h"
#include "page_cache_policy.h"
#include "result.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace sanecopy {

// The operation name of a Status that failed reading the source, so callers can tell a failing source from a
// failing destination (only the latter ends a job, or keeps its part file for a resume).
extern const char *const kReadSource;

// How bytes move and how their writeback is kept bounded, decided once per job and destination.
struct CopyRoute {
    bool clone_chain = false; // FICLONE -> copy_file_range -> sendfile -> read/write
    WritebackMode writeback = WritebackMode::Windows;
    bool evict = true;                 // drop our pages from the cache, source and destination
    bool small_file_writeback = false; // a small file starts its writeback when written
    // False when that is a guess from the bus: once the session has measured the device, its rate decides
    // (CopySession::small_file_writeback()).
    bool small_file_writeback_settled = true;
    // A "sync" mount writes every write through to the device before it returns. sendfile hands the filesystem
    // 64 KiB pieces, each then written and waited for on its own; on FAT in the VM that is as slow as dd, on
    // exFAT 1.09x dd. There bytes go by read/write in buffers of kWriteThroughBuffer, one write each.
    bool write_through = false;
    // A FUSE share (sshfs and its kind) takes a buffered write as one request to its daemon after another: sendfile
    // hands it 64 KiB pieces, each waited for. An O_DIRECT write of a whole buffer reaches the daemon as requests
    // side by side (FUSE's asynchronous direct I/O), as dd oflag=direct does: sshfs over a 100 Mbit/s, 20 ms link
    // in the VM took 18.7 s for 120 MiB by sendfile, dd 14.6 s. The daemon answers a write before the server has
    // it, so each window is still made durable by a sync of its own (WritebackMode::ChunkSync).
    bool direct_writes = false;
    // NFS (evicted_means_committed()): a window the copy waits for also counts as durable once the page cache holds
    // none of its pages (WritebackWindows::count_evicted_as_committed()).
    bool evicted_means_committed = false;
};

inline constexpr std::size_t kWriteThroughBuffer = 4 << 20;

// Pure. Same filesystem, or a fast non-removable target: try the in-kernel shortcuts first (a reflink costs
// nothing, copy_file_range saves a trip through user space). Removable, rotational and FUSE targets:
// sendfile in adaptive chunks. tmpfs: no syncing, no eviction. A "sync" mount: read/write (write_through).
CopyRoute choose_route(const DeviceInfo &dest, dev_t source_dev);
// A FUSE share: its big files go by O_DIRECT (CopyRoute::direct_writes). Pure.
bool takes_direct_writes(const DeviceInfo &dest);

// The chunk limits onto a network share (is_network_share()) for a writer that asked for |asked|: half a second of
// link time per chunk, with as many windows as the budget's bytes hold; share_over_fuse_limits() for one that
// writes by O_DIRECT (|direct_writes|). |asked| as it is when it set a chunk time of its own. A copy job's big
// files and a stream (KIO's put) alike. Pure.
ChunkLimits share_chunk_limits(const ChunkLimits &asked, bool direct_writes);
// Onto a share, the first rate is measured over this much at least (RateMeter::measure_first_over). Pure.
uint64_t share_first_rate_bytes(const ChunkLimits &limits);
// Onto a share (WritebackMode::ChunkSync) the writeback of each piece of this size starts as soon as it is
// written, not with its whole chunk (WritebackWindows::start_piece): an NFS client's usual largest WRITE.
inline constexpr uint64_t kSharePiece = kMiB;

// The SHA-256 of a source as the copy reads it, for checksum manifests (manifest.h). Fed in order: bytes the
// copy did not read itself (a clone, a resumed prefix, holes) are read from the source to catch up, and bytes
// sendfile moved are read back from the page cache it just filled, never from the device a second time.
class SourceHash {
public:
    // Hashes [off, off + len) of |src|, |data| when given (the read/write fallback's buffer), else read from it.
    Status add(int src, uint64_t off, uint64_t len, const char *data, const std::string &path);
    // Hashes the rest up to |size| and returns the digest.
    Result<Sha256Digest> finish(int src, uint64_t size, const std::string &path);

private:
    Status read_into_hash(int src, uint64_t to, const std::string &path);
    Sha256 sha_;
    uint64_t next_ = 0;
    std::vector<char> buffer_;
};

// Per job and destination: the mechanisms that turned out not to work (sticky, so a fallback is paid for
// once), the device-rate estimate and the chunk limits. One thread uses a session at a time.
struct CopySession {
    explicit CopySession(CopyRoute r, ChunkLimits l = {}) : route(r), limits(l) {}

    CopyRoute route;
    ChunkLimits limits;
    bool clone_works = true;
    bool copy_file_range_works = true;
    bool sendfile_works = true;
    bool direct_works = true; // O_DIRECT on the destination (CopyRoute::direct_writes), until it is refused
    RateMeter meter;
    uint64_t durable_total = 0; // all files of the job, for the meter
    std::vector<char> buffer;   // for the read/write fallback only, allocated on first use
    // Resume points. Windows make the data durable, not the size and allocation that find it, nor the part
    // file's folder entry: a stick pulled out mid-file would keep nothing to resume from. So every
    // |checkpoint_seconds| of a big file's copy, copy_file_data calls |checkpoint| (set by the caller per file;
    // empty: none), which makes what was written so far findable on the device.
    double checkpoint_seconds = 5.0;
    std::function<Status()> checkpoint;
    // Set per file when a manifest is written: every byte moved is hashed.
    SourceHash *hash = nullptr;
    // Asked once a chunk beside the cancel: true stops the copy as a cancel does (ECANCELED). Empty: never.
    std::function<bool()> stop;
    // Set per file where the last close of a written descriptor sleeps (vfat "flush", background_closer.h): the
    // windows are waited for, and the copy's dirty pages counted, through |sync_fd|, the same file opened
    // read-only, and |writes_done| is called once the last byte is written, before the last windows are waited
    // for, so the caller can close the written descriptor meanwhile. Not for a sparse file (its size is set after
    // the writes), nor when the source ended early. -1 and empty: the written descriptor does it all.
    int sync_fd = -1;
    std::function<void()> writes_done;

    // Call whenever bytes became durable: feeds the meter and publishes the rate.
    void count_durable(uint64_t bytes, ProgressCounters &counters);
    // Whether the next small file starts its own writeback: the route's choice, or, where that was a guess,
    // what the rate measured so far says (choose_small_file_writeback, device_probe.h).
    bool small_file_writeback() const;
};

// Copies |size| bytes from |src| (at offset 0) into |dst| (empty, at offset 0), starting writeback chunk by chunk
// and waiting for the windows the plan allows. On return with success every byte was handed to the kernel and,
// except in ChunkSync mode's last window and in tmpfs, written to the device; the caller still owes the
// fdatasync that makes size and metadata durable. Short transfers and EINTR are carried on. A source that ends
// early (truncated meanwhile) stops the copy at its new end: |result| says how much was copied and how much
// of it was already counted durable; the caller counts the rest once its fdatasync returns.
//
// Fails with ECANCELED when |control| is cancelled (checked once per chunk), or with the first error of a
// mechanism that has no fallback. Progress goes into |counters|; the rate into |session.meter|.
struct FileCopyResult {
    uint64_t copied = 0;    // bytes moved (less than asked when the source ended early), or so far on failure
    uint64_t durable = 0;   // of those, already counted durable in |counters|
    uint64_t unwritten = 0; // of those, counted without being moved: a resumed prefix, holes
};
// With |start| > 0 the first |start| bytes are already in |dst| (a resumed part file): copying begins there, and
// |result| and |counters| count them as copied, durable and unwritten. |residency|: the source's, when the caller
// took it (a group of jobs' file, source_share.h); else taken here.
Status copy_file_data(int src, int dst, uint64_t size, CopySession &session, const JobControl &control,
                      ProgressCounters &counters, const std::string &display_path, FileCopyResult &result,
                      uint64_t start = 0, std::optional<SourceResidency> residency = std::nullopt);

// For small files, batched by the caller: moves all bytes and starts their writeback without waiting. Their
// durability comes from the batch's one sync. |residency|: the source's, taken before it was read ahead.
Status copy_small_file_data(int src, int dst, uint64_t size, CopySession &session, ProgressCounters &counters,
                            const std::string &display_path, FileCopyResult &result,
                            std::optional<SourceResidency> residency = std::nullopt);

} // namespace sanecopy
