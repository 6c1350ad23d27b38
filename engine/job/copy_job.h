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

#include "units.h"

#include "chunk_controller.h"
#include "conflict.h"
#include "destination.h"
#include "device_probe.h"
#include "tree_plan.h"
#include "job_control.h"
#include "manifest.h"
#include "publish.h"
#include "result.h"
#include "source_share.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sanecopy {

class BackgroundCloser;

// Asked on the job's own thread when copying one file failed. Retry copies the file again from the start;
// Skip goes on with the next; Abort ends the job.
enum class ErrorAnswer { Retry, Skip, Abort };

struct JobSpec {
    std::vector<std::string> sources;
    std::string destination;
    DestinationRule rule = DestinationRule::FollowCp;
    ConflictPolicy conflict = ConflictPolicy::Refuse;
    uint64_t small_file_limit = kMiB; // files up to this size are batched (small_batch.h)
    uint64_t batch_bytes = 12 * kMiB; // two groups' bytes stay within the dirty budget
    unsigned batch_files = 4096;      // and their descriptors within the process's limit
    ChunkLimits limits;
    // How often a big file's progress is made resumable after a crash or a pulled stick (CopySession).
    double checkpoint_seconds = 5.0;
    // Read every file back from the device after it is durable and compare XXH3 hashes with the source.
    bool verify = false;
    // Safe Move: a source file is removed only once its copy is durable under its real name (and verified, with
    // |verify|); a source folder once everything in it has gone. A target that already holds the same bytes (a
    // move interrupted between publishing and removing) counts as moved. On the destination's own filesystem
    // an item whose target name is free is moved by one rename.
    bool move = false;
    // Hash every file's source bytes with SHA-256 as they are copied; FileDone events carry the digest.
    bool hash_sources = false;
    // Write a checksum manifest of the files copied (manifest.h) when the copy ends, unless it was cancelled or
    // the device went away: at |manifest_path|, or when that is empty at default_manifest_path(destination).
    // Implies hash_sources.
    bool manifest = false;
    std::string manifest_path;
    // A rerun of a copy that was interrupted (a crash, a kill, a logout, JobControl::interrupt): a target with the
    // source's size and modification time is taken as published by it and counted as copied, not questioned.
    // (Part files are resumed from their verified prefix in any run.) With |move|, only the same bytes count.
    bool resume = false;
    // When the device has not room for everything: copy what fits instead of nothing. Files are taken in the
    // plan's order while they fit in the free space (less a margin for folders and metadata); each one that does
    // not is left out (LeftOut::NoRoom) and reported, and smaller ones after it may still go.
    bool fit_to_space = false;
    // Names the target filesystem refuses (FAT/exFAT) are copied under a safe name instead of being left out.
    bool rename_invalid = false;
    // The plan's walk (its count, its sizes, the free space) runs beside the copy instead of before it, so the
    // first bytes reach the device while a big tree is still being counted: a million files take seconds to
    // walk. Meanwhile the totals grow (ProgressCounters::counting) and nothing is published: no file or link
    // takes its name and no folder is finished until the plan has found room for all of it. When it finds too
    // little, what the copy wrote is taken away again (its part files, the empty folders it made), as if it
    // had been refused before the first byte. What each entry meets on the device (a name it refuses, a size
    // it can't store) is decided as the copy reaches it, as always. Not with |move| or |fit_to_space|, whose
    // decisions need the whole plan first; a front end that shows the plan before the copy starts has no use
    // for it.
    bool count_while_copying = false;
    // When set, an existing target asks here instead of applying |conflict|.
    std::function<ConflictAnswer(const ConflictQuestion &)> ask_conflict;
    // When set, a file that fails asks here instead of being reported and passed over.
    std::function<ErrorAnswer(const Status &, const std::string &source)> ask_error;
    // Where each close of a written file sleeps (vfat "flush"), published files are closed in the background
    // (background_closer.h): on this closer when set, which then may still be closing the job's files after it
    // ends (the KIO worker's, one job per file); otherwise on the job's own, waited for at its end.
    std::shared_ptr<BackgroundCloser> closer;
    // One of several jobs that copy the same sources onto other devices at once (source_share.h): the source's
    // pages are kept for the slower ones, and |share_member| is this job's number in the group.
    std::shared_ptr<SourceShare> source_share;
    unsigned share_member = 0;
};

struct JobEvent {
    enum class Kind { FileDone, Skipped, Error, Done };
    Kind kind = Kind::FileDone;
    std::string path;                   // source path (target path for Done)
    std::string target;                 // where it landed (FileDone), when known
    std::string message;                // for Skipped and Error: what the user reads
    Status status;                      // for Error: its side, and whether the device was removed
    LeftOut reason = LeftOut::None;     // for Skipped
    std::optional<Sha256Digest> digest; // for FileDone of a file, with JobSpec::hash_sources
    uint64_t bytes = 0;
};

struct JobSummary {
    uint64_t files_copied = 0;
    uint64_t files_skipped = 0;
    uint64_t errors = 0;
    uint64_t bytes = 0;
    bool cancelled = false;
    bool aborted = false;        // ended early by a device-level error
    bool device_removed = false; // ... because the destination's device went away (a pulled stick)
    // Requested files not copied although nothing failed: refused before the first byte (too big for the
    // filesystem, a name it can't store, a special file in a folder) or skipped after an error. Skips the
    // conflict policy asked for (--skip-existing) are not counted: they are what the user wanted.
    uint64_t files_refused = 0;
    double seconds = 0;
    std::string manifest_path;   // where the manifest was written, when it was
    uint64_t manifest_files = 0; // how many files this job put in it
    bool ok() const { return errors == 0 && !cancelled && !aborted; }
    // Everything requested is on the device, or was left alone on purpose.
    bool complete() const { return ok() && files_refused == 0; }
};

using JobEventSink = std::function<void(const JobEvent &)>;

// Everything known before the first byte: what will be copied, onto what, and what will not work.
struct JobPlan {
    std::vector<ItemPlan> items;
    DeviceInfo device;
    bool device_known = false;
    // The receiving folder (every item's target_dir), opened as it was probed when the run plans (onto NFS an open
    // is a round trip of its own, which the probe takes while the sources' targets are looked up); the run uses it
    // while that path still names this folder. plan_job leaves it closed.
    SharedDirFd target_root;
    // When the plan began (the wall clock, as files' times are): a part file written since is this job's own.
    struct timespec began {};
    uint64_t total_bytes = 0;
    uint64_t files = 0;
    std::vector<Status> errors; // sources that can't be copied at all, or a destination that can't be used
    Status space;               // not enough free space (checked where statfs knows it)
    // Entries that will be left out: special files, names or sizes the target filesystem refuses, folders that
    // can't be read.
    struct LeftOutEntry {
        std::string path;
        LeftOut reason = LeftOut::None;
        std::string why; // what the user reads
    };
    std::vector<LeftOutEntry> left_out;
    // Files whose target name is taken already, found before the first byte so one answer can settle them all.
    // Nothing is decided here: the job's conflict policy (or the user's answer, file by file) decides each when
    // it is copied, and checks again then. Not looked for when resuming, where taken names are the point.
    struct TakenTarget {
        std::string source;
        std::string target;
        uint64_t source_size = 0;
        struct timespec source_mtime {};
        bool is_link = false; // a link's size is not counted in JobPlan::total_bytes
        ExistingTarget existing;
    };
    std::vector<TakenTarget> taken;
    // What a copy of this plan needs and what fits, for each way a front end may offer of dealing with the names
    // in |taken|, counted in the same walk as the rest: no choice walks the tree again.
    enum class TakenNames {
        AskedOrKept, // asked one by one, or kept both: each needs its full size
        Skipped,     // not written: no room, and not counted
        Replaced,    // the difference, and the largest once (old and new both stand for a moment)
    };
    struct Room {
        Status space;           // not enough space for all of it, as |space|
        uint64_t files = 0;     // files and links it writes
        uint64_t bytes = 0;     // of those files
        uint64_t fit_files = 0; // with JobSpec::fit_to_space: what fits, in order (all of them when everything does)
        uint64_t fit_bytes = 0;
    };
    std::array<Room, 3> rooms;
    const Room &room(TakenNames how) const { return rooms[std::size_t(how)]; }

    // One line per problem, for a user to read before deciding to start.
    std::vector<std::string> problems() const;
};

// Resolves, walks and probes; writes nothing. Safe to call from any thread.
JobPlan plan_job(const JobSpec &spec);

// Discarding a copy that was interrupted (JobSpec::resume is the other way out): removes the part files its
// big files left at their targets. Files it had published stay; so do the sources, also of a move.
struct DiscardResult {
    uint64_t removed = 0;
    std::vector<Status> errors;
};
DiscardResult discard_unfinished(const JobSpec &spec);

// Runs the job to its end. Events arrive on this thread, in order; Done comes last.
JobSummary run_copy_job(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                        const JobEventSink &sink);

} // namespace sanecopy
