// SPDX-License-Identifier: GPL-2.0-or-later
//
// One copy job, run on the calling thread: resolve the destination, plan the trees, check what can be checked
// before the first byte, then copy entry by entry. Big files go through the chunked copy with writeback
// windows and are published one by one; small files are batched, so a batch of them pays one sync instead of
// one each (about 35 ms a file on slow media), and take their real names only after that sync.
//
// Failures of one file are reported and the job goes on with the next; failures that say the device itself is
// gone or full (ENOSPC, EIO, EROFS, ...) end the job. Whatever ends the job, no half-written file is left under
// a real name and no part file is left behind.
#pragma once

#include "chunk_controller.h"
#include "destination.h"
#include "job_control.h"
#include "publish.h"
#include "result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sanecopy {

struct JobSpec {
    std::vector<std::string> sources;
    std::string destination;
    DestinationRule rule = DestinationRule::FollowCp;
    ConflictPolicy conflict = ConflictPolicy::Refuse;
    uint64_t small_file_limit = 1024 * 1024;      // files up to this size are batched
    uint64_t batch_bytes = 16 * 1024 * 1024;      // a batch's bytes stay within the dirty budget
    unsigned batch_files = 256;                   // and its descriptors within reason
    ChunkLimits limits;
};

struct JobEvent {
    enum class Kind { FileDone, Skipped, Error, Done };
    Kind kind = Kind::FileDone;
    std::string path;     // source path (target path for Done)
    std::string target;   // where it landed (FileDone), when known
    std::string message;  // for Skipped and Error: what the user reads
    Status status;        // for Error
    uint64_t bytes = 0;
};

struct JobSummary {
    uint64_t files_copied = 0;
    uint64_t files_skipped = 0;
    uint64_t errors = 0;
    uint64_t bytes = 0;
    bool cancelled = false;
    bool aborted = false; // ended early by a device-level error
    double seconds = 0;
    bool ok() const { return errors == 0 && !cancelled && !aborted; }
};

using JobEventSink = std::function<void(const JobEvent &)>;

// Runs the job to its end. Events arrive on this thread, in order; Done comes last.
JobSummary run_copy_job(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                        const JobEventSink &sink);

// errno values after which no further file is attempted: the device is full, gone or read-only.
bool is_device_fatal(int err);

} // namespace sanecopy
