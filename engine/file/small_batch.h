// SPDX-License-Identifier: GPL-2.0-or-later
//
// Small files are written into their part files one after another and published in groups: a group pays one
// sync instead of one per file (about 35 ms a file on slow media), and its writeback reaches the device as a
// few large requests instead of one small request per file.
//
// Where syncfs reaches the device on a journaling filesystem (GroupSync::Background), the syncs run on a helper
// thread while the job writes the next group. One syncfs makes a group's data durable, and with it the renames
// made before it started, so:
//   - a group is renamed only once its data is on the device (after verify, when asked for), and reported
//     published only once a later syncfs has made the renames durable too;
//   - at most two groups are off the device at any time: dirty memory stays within 2 × max_bytes;
//   - the device never waits for the job between groups, nor the job for the device, unless it is two ahead;
//   - the first group is a sixteenth of the limits and each next one twice the last, so the device starts
//     writing within milliseconds instead of idling while the first full group is written.
// There a group whose data is durable is renamed on a thread of its own, which then asks for the syncfs of its
// names, unless its files are read back or one may take another free name (both need the job's thread).
// On FAT, exFAT and NTFS (GroupSync::Inline) the same two syncs run on the job's thread instead: creating a
// file there waits for its folder's blocks while a sync writes them. Elsewhere (FUSE and network filesystems,
// where syncfs is not passed on reliably) each file is fdatasync'ed and each folder fsync'ed when a group is full;
// on a share the group's files settle side by side, on threads of their own while the job writes the next group.
//
// Whatever is not published when the batch goes (cancel, a device error) has its part file removed.
//
// On a vfat mount with "flush" (a BackgroundCloser given) each close of a written file sleeps 100 ms, whoever
// calls it. There a group's descriptors go to the closer as soon as its data is durable, when a close has nothing
// left to write, and the job goes on while they close; the group is renamed just before the next group's syncfs,
// which makes its names durable with that group's data (one syncfs a group). The job never waits for a close.
#pragma once

#include "units.h"

#include "copy_file.h"
#include "device_probe.h"
#include "fd.h"
#include "manifest.h"
#include "publish.h"
#include "result.h"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sanecopy {

// A file's mode and modification time, when they are set as its group settles rather than when it was written
// (SmallFileBatch::settles_side_by_side).
struct PendingAttributes {
    mode_t mode = 0;
    struct timespec mtime {};
};

// A file whose part file is created and written only where its group settles, side by side with the group's other
// files (SmallFileBatch::writes_side_by_side): onto a share each create is a round trip or more, and one after
// another on the job's thread they were most of the time of a tree of small files (sshfs: 75 ms a create).
// Its size is the file's |bytes| and its part file's permission bits come from its |attributes|, both set when it
// is added.
struct DataToWrite {
    UniqueFd source;
    CopyRoute route;
    ProgressCounters *counters = nullptr; // its bytes count as written there
    std::optional<SourceResidency> residency;
    // Told each time the share answered (a create, a write), so a settling group is not taken for a stall.
    const JobControl *control = nullptr;
    // True once the job stops (cancelled, or the share failed for good): the file is then not created, and fails
    // with ECANCELED, instead of each file left waiting for a share that is gone.
    std::function<bool()> stop;
};

// A source as the walk saw it just before it was copied. A move removes only a source that is still so: one
// written to, grown, cut short or replaced under its name meanwhile is not what the copy holds (JobRunner::
// remove_source). The inode and change time catch what size and mtime miss: a file of the same size put in
// its place with the old mtime (as rsync and cp -p leave it), or one rewritten and then given its mtime back.
// A false difference (FAT makes an inode number up anew when the inode comes back into the cache) only keeps
// the source, with the error.
struct SourceStamp {
    uint64_t size = 0;
    struct timespec mtime {};
    struct timespec ctime {};
    ino_t ino = 0;
    // Its ctime is not compared: removing another of its names (moved in the same job) changes it.
    bool hard_linked = false;
};

struct BatchedFile {
    PartFile part; // with to_write, named but not created yet (PartFile::to_create)
    std::string source;
    uint64_t bytes = 0;
    ConflictPolicy policy = ConflictPolicy::Refuse;
    UniqueFd source_fd;                 // kept for verify
    std::string note;                   // for its done event
    std::string target;                 // where it landed, once renamed
    bool durable = false;               // its data was counted durable
    std::optional<Sha256Digest> digest; // of its source, when hashed
    SharedDirFd source_dir;             // the source's folder and name, for a move to remove it once published
    std::string source_name;
    std::optional<PendingAttributes> attributes; // still to be set, before its sync
    std::optional<DataToWrite> to_write;         // set: |bytes| is its size until it is written
    std::optional<SourceStamp> stamp;            // the source as copied, for a move
};

struct BatchLimits {
    uint64_t max_bytes = 12 * kMiB;
    std::size_t max_files = 4096;
    // Files of a group whose syncs, closes and renames run at once when each file is synced on its own
    // (settle_each). On a share each of those is a round trip that waits on the link, not on a disk.
    unsigned settle_threads = 1;
};

// settle_threads onto a network share: enough files in flight to cover a round trip of tens of milliseconds.
inline constexpr unsigned kShareSettleThreads = 8;

class Syncer;
class BackgroundCloser;

class SmallFileBatch {
public:
    struct Hooks {
        std::function<void(const BatchedFile &)> durable;  // its data is on the device
        std::function<Status(const BatchedFile &)> verify; // empty: no verify
        std::function<void(BatchedFile &, Status)> failed; // it was not published (its part file goes)
        std::function<void(BatchedFile &)> published;      // its name is on the device too
        // Asked before each file takes its name, on whichever thread renames it; a failure fails the file
        // (PublishSteps::before_commit). Empty: nothing to wait for.
        std::function<Status()> before_publish;
    };

    // |case_insensitive|: the filesystem matches names whatever their case (FAT, exFAT, NTFS). |closer|: where
    // each close sleeps (vfat "flush"), published files are closed there, off the job's thread; it must outlive
    // the batch. Without one, a durable file is closed on the job's thread before its rename.
    SmallFileBatch(WritebackMode mode, GroupSync sync, BatchLimits limits, bool case_insensitive, Hooks hooks,
                   BackgroundCloser *closer = nullptr);
    ~SmallFileBatch();
    SmallFileBatch(const SmallFileBatch &) = delete;
    SmallFileBatch &operator=(const SmallFileBatch &) = delete;

    // Whether a file aiming at |name| in |dir| is waiting here to be renamed: a second one must wait for the
    // batch, or the two would share a part file.
    bool holds(int dir, const std::string &name) const;
    // Takes a file whose bytes are written and whose attributes are set.
    void add(BatchedFile file);
    // Publishes (or fails) everything added so far.
    void flush();
    // Removes every part file not yet renamed, without syncing; renamed files are still reported once durable.
    void discard();
    bool empty() const;
    // Whether each group's files settle on several threads (a share): then a file's attributes are best set there
    // too (BatchedFile::attributes), since on a share setting them is a round trip of its own (cifs writes the
    // file's cached data first).
    bool settles_side_by_side() const { return mode_ != WritebackMode::Windows && limits_.settle_threads > 1; }
    // Whether a file under |policy| may come with BatchedFile::to_write: its group settles off the job's thread
    // (no read-back, no search for a free name), so its create and write go there too.
    bool writes_side_by_side(ConflictPolicy policy) const
    {
        return settles_side_by_side() && !hooks_.verify && policy != ConflictPolicy::Rename;
    }

private:
    struct Group {
        std::vector<BatchedFile> files;
        uint64_t bytes = 0;
        uint64_t ticket = 0; // the Syncer's, for its data (syncing_) or its names (naming_)
    };
    std::pair<int, std::string> key(const BatchedFile &f) const;
    void hand_off();
    Group settle_data(Group &group, const Status &synced);
    void settle_inline(Group &group);
    void queue_names(Group named);
    void publish_group(Group &group, const Status &names_synced);
    void reap_names(bool wait);
    void settle_each(Group &group);
    struct Settled {
        Status synced;    // attributes set and data synced
        Status published; // renamed (not yet when a read-back must come first)
        std::string final_name;
    };
    std::vector<Settled> settle_files(Group &group);
    void settle_synced(Group group, const Status &synced);
    bool needs_job_thread(const Group &group) const;
    bool renames_elsewhere(const Group &group) const;
    struct Renaming;
    static uint64_t rename_files(Renaming &r, Syncer &syncer, const std::function<Status()> &before_publish);
    void reap_renamed(bool wait);
    static Status write_now(BatchedFile &f, DataToWrite w);
    bool settles_in_background(const Group &group) const;
    void settle_in_background(Group group);
    void finish_settling();
    void finish_oldest();
    void report_settled(Group &group, std::vector<Settled> out);
    void close_unpublished();
    Status sync_now(const BatchedFile &any) const;
    void settle_renaming(Group &group);
    Group rename_durable();
    void flush_renamed();
    PublishSteps steps_for(const BatchedFile &f) const;

    WritebackMode mode_;
    GroupSync sync_;
    BatchLimits limits_;
    BatchLimits group_; // the group being filled: growing up to limits_
    bool case_insensitive_;
    Hooks hooks_;
    Group filling_;
    std::deque<Group> syncing_;                   // data sync requested
    std::deque<Group> naming_;                    // renamed, name sync requested
    Group durable_;                               // with a closer: durable, renamed just before the next syncfs
    std::set<std::pair<int, std::string>> names_; // of files not renamed yet
    SharedDirFd sync_dir_;                        // what the Syncer's syncfs is called on
    std::unique_ptr<Syncer> syncer_;
    struct Settling {
        Group group;
        std::future<std::vector<Settled>> results;
    };
    // settle_in_background's groups, oldest first, each settling on threads of its own: at most kSettlingGroups
    // of files written there (BatchedFile::to_write), so with the one being filled at most three groups hold
    // descriptors and two hold data not yet durable; a group written by the job settles alone.
    static constexpr std::size_t kSettlingGroups = 2;
    std::deque<std::unique_ptr<Settling>> settling_;
    // settle_synced's groups: durable, and renamed on a thread of their own while the job writes on (a rename is
    // a fifth of the job's thread's time on a tree of tiny files). One at a time, oldest first: its files keep
    // their descriptors until they are renamed.
    struct Renaming {
        Group group;
        std::vector<std::pair<int, std::string>> keys; // its files' in names_, taken before they are renamed
        std::vector<Settled> out;                      // by file: renamed, and the name it took
        std::future<uint64_t> names;                   // the Syncer's ticket for its renames
    };
    std::deque<std::unique_ptr<Renaming>> renaming_;
    BackgroundCloser *closer_; // or null
};

} // namespace sanecopy
