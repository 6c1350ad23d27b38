// SPDX-License-Identifier: GPL-2.0-or-later
//
// StreamWriter: a file whose bytes arrive as a stream of blocks (a KIO put(), a pipe) written with the same
// chunk-and-sync policy as a copy. The blocks go into ".<name>.part" beside the target (publish.h); every
// chunk (sized by plan_chunks() from the measured device rate) has its writeback started and queued as a
// window (WritebackWindows), so dirty memory stays at (windows + 1) chunks and the progress counters count a
// byte durable only once the device has it. finish() makes the rest durable and only then gives the file its
// real name:
//   1. the last chunk, then every window waited for;
//   2. fdatasync (sync_data), then rename onto the real name (commit) under the conflict policy;
//   3. fsync of the folder, so the rename survives a power cut.
// Onto tmpfs (WritebackMode::None) none of the syncs are made: memory is the device.
//
// Whatever ends the stream before finish() succeeds (an error, abort(), destruction) removes the part file and
// leaves an existing target untouched; nothing is ever visible under the real name before step 2. Only
// keep_for_resume() leaves the part file, durable and stamped, for a later stream to go on from.
#pragma once

#include "chunk_controller.h"
#include "device_probe.h"
#include "job_control.h"
#include "publish.h"
#include "result.h"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace sanecopy {

class BackgroundCloser;

class WritebackWindows;

struct StreamOptions {
    // What an existing target gets. Refuse and Skip: create() fails with EEXIST before anything is written.
    // Overwrite: the target is replaced by rename at commit (a folder never is: EISDIR). Rename: the file is
    // published under the first free alternative name, reported by finish().
    ConflictPolicy conflict = ConflictPolicy::Refuse;
    // The size announced by the sender, when it is known: the space is reserved up front (fallocate, size
    // kept), so a full device fails create() instead of the last block; what is not used is given back.
    std::optional<uint64_t> expected_size;
    // Permission bits for the published file. Unset: 0666 less the umask, as any new file gets.
    std::optional<mode_t> mode;
    // Modification time for the published file. Unset: the time of the writes.
    std::optional<struct timespec> mtime;
    ChunkLimits limits;
    // Continue the part file an interrupted stream left (KIO::Resume): its bytes are kept and the stream goes on
    // at its end, so the sender must send from resume_offset() on. Without a part file this is a fresh start.
    bool resume = false;
    // Where each close of a written file sleeps (vfat "flush"): the published file is closed on this closer
    // (background_closer.h) instead of by the writer, so the sender's next file need not wait 100 ms for it.
    // On any mount, a part file left after a share stopped answering is closed there too (abort()).
    std::shared_ptr<BackgroundCloser> closer;
};

class StreamWriter {
public:
    StreamWriter();
    StreamWriter(StreamWriter &&other) noexcept;
    StreamWriter &operator=(StreamWriter &&other) noexcept;
    StreamWriter(const StreamWriter &) = delete;
    StreamWriter &operator=(const StreamWriter &) = delete;
    // Without a successful finish(): abort().
    ~StreamWriter();

    // Probes the target's folder (probe_device) for its writeback mode and filesystem limits, checks the
    // target (exists: see StreamOptions::conflict; a name the filesystem can't store: EINVAL; larger than
    // it can store: EFBIG), creates the part file and reserves expected_size. |target| is an absolute or
    // relative path whose folder exists (else ENOENT). |counters| must outlive the writer: written_bytes,
    // durable_bytes and device_rate are added to, nothing else is touched.
    static Result<StreamWriter> create(const std::string &target, const StreamOptions &options,
                                       ProgressCounters &counters);

    // Writes |len| bytes at the end of what was written so far. Short writes and EINTR are carried on; the
    // call returns once every byte was handed to the kernel, having waited, when a chunk was completed, for
    // the windows the plan allows beyond it. Fails with the first write or writeback error (ENOSPC, EIO, ...);
    // after a failure the writer is broken: every later write() and finish() returns that same error, and the
    // part file goes when the writer does.
    Status write(const void *data, std::size_t len);

    // Makes the data durable and publishes it (steps 1-3 above). On success |final_path| (when given) is where
    // the file landed (an alternative name under the Rename policy) and durable_bytes counts every byte. On
    // failure the part file is removed at destruction or abort(); a replaced target is untouched.
    Status finish(std::string *final_path = nullptr);

    // Drops the part file now, with whatever the kernel still holds of it. Idempotent; a no-op after finish().
    // On a share that stopped answering (a write or sync failed there with an error keeps_part_file() names), the
    // part file stays instead, unstamped, and is closed on StreamOptions::closer when there is one: both its close
    // and its unlink would wait for the server.
    void abort();

    bool valid() const { return part_.valid() || finished_; }
    uint64_t bytes_written() const { return offset_; }
    // Where a resumed stream goes on (0 for a fresh one).
    uint64_t resume_offset() const { return resumed_; }
    // The sender stopped (a cancel, a source that failed): keeps what reached the device for a later stream of
    // the same file to go on from (StreamOptions::resume). The bytes written are made durable, the part file is
    // cut to them, and only then stamped with the sender's time (StreamOptions::mtime; without one, a fixed
    // stamp no file being written has) and synced again. The stamp is how resumable_part_size() tells a kept
    // part file from one a crash, a kill or a pulled stick left, whose tail nobody can vouch for. When nothing
    // was sent, after a device error, or when any step fails, this is abort() and returns why.
    Status keep_for_resume();

    // The size of the part file keep_for_resume() left for |target|, stamped with the sender's time |mtime| (or
    // the fixed stamp when the sender gives none), 0 when there is none. For asking the sender whether to resume
    // (KIO's canResume()).
    static uint64_t resumable_part_size(const std::string &target, const std::optional<struct timespec> &mtime);
    uint64_t bytes_durable() const { return durable_; }
    WritebackMode writeback_mode() const { return device_.writeback; }
    // The part file's path, for tests and messages.
    std::string part_path() const;
    // The limits its chunks are planned within: StreamOptions::limits, or a share's (share_chunk_limits()).
    const ChunkLimits &chunk_limits() const { return limits_; }

private:
    Status submit_chunk();
    void take_durable(uint64_t bytes);
    Status fail(Status s);
    Status settle_attributes();
    Status seal_for_resume();
    Status write_out();

    SharedDirFd dir_;
    std::string dir_path_;
    PartFile part_;
    // Declared after part_ so it is destroyed first: its sync thread may be using the part file's descriptor.
    std::unique_ptr<WritebackWindows> windows_;
    ProgressCounters *counters_ = nullptr;
    DeviceInfo device_;
    ConflictPolicy conflict_ = ConflictPolicy::Refuse;
    std::optional<mode_t> file_mode_;
    std::optional<struct timespec> mtime_;
    // Where the published file is closed on a "flush" mount, and a part file a share failed under (abort()).
    std::shared_ptr<BackgroundCloser> closer_;
    ChunkLimits limits_;
    ChunkPlan plan_;
    RateMeter meter_;
    uint64_t offset_ = 0;      // bytes handed to the kernel
    uint64_t resumed_ = 0;     // bytes that were in the part file already
    uint64_t chunk_start_ = 0; // where the chunk being filled began
    uint64_t piece_start_ = 0; // where its bytes not yet under writeback begin (onto a share: kSharePiece)
    uint64_t durable_ = 0;     // bytes counted durable
    uint64_t reserved_ = 0;    // bytes fallocate'd up front
    Status broken_;
    bool finished_ = false;
};

} // namespace sanecopy
