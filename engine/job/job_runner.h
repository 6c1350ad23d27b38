// SPDX-License-Identifier: GPL-2.0-or-later
//
// Inside a copy job (copy_job.h), shared by its parts and by nothing else:
//   plan_job.cpp      the plan: what each entry meets on the device, the space it needs, the names taken
//   run_job.cpp       the run: items, folders, links, pause, the end of the job
//   job_files.cpp     one regular file: small ones into the batch, big ones through a resumable part file
//   job_conflicts.cpp a name that is taken, and what an interrupted run left under it
//   job_move.cpp      Safe Move: a rename on one filesystem, or the source removed once its copy is durable
//   job_report.cpp    events and counters: what the job tells its caller
//   item_entries.cpp  an item's entries, walked again as the run meets them
//   source_prefetch.cpp small sources opened and read ahead of the copy
//   job_support.cpp   the path and folder helpers below
#pragma once

#include "background_closer.h"
#include "copy_file.h"
#include "copy_job.h"
#include "device_probe.h"
#include "fd.h"
#include "small_batch.h"
#include "tree_plan.h"
#include "units.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <unordered_set>
#include <vector>

#include <sys/stat.h>

namespace sanecopy::job_detail {

SharedDirFd open_dir(int at, const char *path, Status &error, const std::string &display, bool nofollow, Side side);
// "a" + "b" = "a/b"; an empty side gives the other.
std::string join(const std::string &a, const std::string &b);
// JobSpec::resume's quick check: the same size and, to what the filesystem stores, the same modification time.
bool quick_check(uint64_t size, const struct timespec &mtime, uint64_t target_size, const struct timespec &target_mtime,
                 const FsLimits &limits);
// ("a/b", "c") for "a/b/c"; ("", "c") for "c".
std::pair<std::string, std::string> split_rel(const std::string &rel);
// |rel| is inside |dir| (everything is inside "").
bool below(const std::string &rel, const std::string &dir);
bool timespec_after(const struct timespec &a, const struct timespec &b);
std::string join_notes(const std::string &a, const std::string &b);
std::string target_rel(const std::string &rel, const JobSpec &spec, const FsLimits &limits);
std::string fold_case(std::string name, bool fold);
std::function<Status()> make_checkpoint(PartFile &part, DataSync how, WritebackMode writeback);
// plan_job's first half, with the receiving folder opened beside the probe for the run to write into
// (JobPlan::target_root): the destination resolved, its device probed, the items found; nothing walked yet.
JobPlan resolve_for_run(const JobSpec &spec);
// What the run asks of a plan's walk.
struct PlanWatch {
    // Whether a path the walk can't read is the plan's to report: the run's own walk may have met it first.
    std::function<bool(const std::string &path)> first_report;
    // The files and bytes counted so far, every few thousand entries (JobSpec::count_while_copying).
    std::function<void(uint64_t files, uint64_t bytes)> counted;
    // The job stops: the walk ends where it is.
    std::function<bool()> stop;
};
// plan_job's second half: every item's tree walked and counted into |plan|.
void count_plan(JobPlan &plan, const JobSpec &spec, const PlanWatch &watch);
// What an entry will meet on the destination's filesystem: a name it refuses, a size it can't store. The plan
// and the run both ask, so they agree without the plan keeping its entries.
void check_against_device(const CopyItem &item, PlanEntry &e, const JobSpec &spec, const DeviceInfo &device);
void left_for_want_of_room(PlanEntry &e);

// The folders of one side of a copy, opened component by component from a pinned root and kept open while
// the walk is below them. Entries arrive in pre-order, so the cache is a path of open folders.
class DirCache {
public:
    DirCache(SharedDirFd root, std::string root_display, Side side)
        : root_(std::move(root)), display_(std::move(root_display)), side_(side)
    {}

    SharedDirFd get(const std::string &rel, Status &error)
    {
        if (rel.empty())
            return root_;
        if (auto it = open_.find(rel); it != open_.end())
            return it->second;
        // Keep only the ancestors of |rel|.
        for (auto it = open_.begin(); it != open_.end();)
            it = below(rel, it->first) ? std::next(it) : open_.erase(it);
        const auto [parent_rel, name] = split_rel(rel);
        SharedDirFd parent = parent_rel.empty() ? root_ : get(parent_rel, error);
        if (!parent)
            return {};
        SharedDirFd dir = open_dir(parent->get(), name.c_str(), error, display_ + "/" + rel, true, side_);
        if (dir)
            open_[rel] = dir;
        return dir;
    }

    const std::string &display() const { return display_; }

private:
    SharedDirFd root_;
    std::string display_;
    Side side_;
    std::map<std::string, SharedDirFd> open_;
};

struct FinishedDir {
    std::string rel; // below the destination root of its item
    mode_t mode;
    struct timespec mtime;
    bool made = false; // by this job (not an existing folder a resumed run finishes)
};

// Paths reported once, by whichever of two walks meets them first: the plan's (beside the run, with
// JobSpec::count_while_copying) and the run's. A folder that can't be read is one error, not two.
class ReportedOnce {
public:
    bool first(const std::string &path)
    {
        std::lock_guard lock(mutex_);
        return seen_.insert(path).second;
    }

private:
    std::mutex mutex_;
    std::set<std::string> seen_;
};

// What a plan counted beside the run (JobSpec::count_while_copying) lets through: nothing takes its name on the
// device before the plan has ended and found room for everything. Opened by the plan's thread; waited for by
// whatever publishes (the job's thread, a group's renaming thread), so the job's thread need not be free to
// let them go on.
class PlanGate {
public:
    // The plan has ended; |room|: there is room for everything it counted.
    void open(bool room)
    {
        {
            std::lock_guard lock(mutex_);
            refused_.store(!room);
            ended_.store(true);
        }
        opened_.notify_all();
    }
    bool ended() const { return ended_.load(); }
    bool refused() const { return refused_.load(); }
    // Waits for the plan to end: fine when names may be taken; ECANCELED when it found too little room, or the
    // job stops meanwhile (|stopping|, asked every tenth of a second).
    Status wait(const std::function<bool()> &stopping) const
    {
        if (!ended_.load()) {
            std::unique_lock lock(mutex_);
            while (!ended_.load() && !stopping())
                opened_.wait_for(lock, std::chrono::milliseconds(100));
        }
        if (ended_.load() && !refused_.load())
            return {};
        return Status::from_errno(ECANCELED, "publish", "");
    }

private:
    mutable std::mutex mutex_;
    mutable std::condition_variable opened_;
    std::atomic<bool> ended_ {false};
    std::atomic<bool> refused_ {false};
};

// One item's entries as the run meets them: walked again (TreeWalk), decided as the plan decided them, and read
// a little way ahead of the copy for SourcePrefetch.
class ItemEntries {
public:
    struct Entry {
        std::size_t seq = 0; // in the walk
        PlanEntry entry;
    };
    // |report|: what the walk can't read.
    ItemEntries(const ItemPlan &plan, const JobSpec &spec, const DeviceInfo &device,
                std::function<void(Status)> report);

    // Moves to the next entry (the first, on the first call); false at the end. The entry before is gone.
    bool advance();
    const PlanEntry &current() const { return queue_.front().entry; }
    const std::string &source_name() const { return plan_.item.source_name; }
    std::size_t current_seq() const { return queue_.front().seq; }
    // The current entry and up to |n| after it, read now if they were not yet.
    const std::deque<Entry> &ahead(std::size_t n);

private:
    bool read_one();

    const ItemPlan &plan_;
    const JobSpec &spec_;
    const DeviceInfo &device_;
    std::function<void(Status)> report_; // before |tree_|, whose walk may report as it is made
    TreeWalk tree_;
    std::deque<Entry> queue_;
    std::size_t read_ = 0; // entries read from |tree_|
    bool started_ = false;
};

// Closes in flight at once on a vfat "flush" mount (background_closer.h): 64 make 2,000 files' closes about 3 s
// of background work instead of 200 s on the job's thread.
constexpr std::size_t kFlushClosers = 64;

// Small sources opened and read ahead of the copy: a tiny file's read is otherwise a wait on the source disk
// between two writes to the device, and a tree of them is copied at the source's seek rate instead of in
// parallel with it. Ahead of the file being copied, the next small files of the plan (up to kFiles and
// kBytes) are opened, what of them was cached is noted (source_residency, so only the copy's own pages are
// dropped after it), and the kernel is asked to read them (WILLNEED), which it does while the job writes.
//
// On a thread of its own: on a tree of tiny files the job's thread is what bounds the copy (a core's worth of
// system time), and the opening and asking (page allocation, the source's filesystem, sending the reads) were a
// third of it. The job's thread only hands the files over and takes them when it comes to them; one the thread
// has not begun yet, the copy opens itself. What is held is topped up to kFiles and kBytes once half of it is
// taken, so the thread is woken once for many files. A pause stops the handing over, not what was handed over (at most
// kFiles and kBytes). A file's cached pages are noted when the thread opens it, which may be while the copy still
// reads the one before: a hard link to that one would keep its pages cached.
class SourcePrefetch {
public:
    struct Source {
        std::size_t index = 0; // in the item's walk
        UniqueFd fd;
        struct stat st {};
        SourceResidency residency;
    };
    static constexpr std::size_t kFiles = 64;
    static constexpr uint64_t kBytes = 16 * kMiB;
    static constexpr std::size_t kEntries = 256; // looked at ahead of the copy, folders and links included

    SourcePrefetch() = default;
    SourcePrefetch(const SourcePrefetch &) = delete;
    SourcePrefetch &operator=(const SourcePrefetch &) = delete;
    ~SourcePrefetch(); // the thread ends; what it opened and nobody took is closed

    // Reads ahead of the current entry of |entries|: small regular files (at most |small_limit| bytes) opened
    // in |dirs| (a cache of the source's folders of its own, so the copy's stays on its path).
    // |residency_of|: what of the file at |rel| (below the item's source) was cached, taken before it is read;
    // called on the read-ahead's thread. The first one given is kept for the walk.
    using ResidencyOf = std::function<SourceResidency(const std::string &rel, int fd, const struct stat &st)>;
    void fill(ItemEntries &entries, DirCache &dirs, uint64_t small_limit, const ResidencyOf &residency_of);
    // The source of the walk's entry |index| when it was read ahead; those before it the copy passed over go.
    // Waits while the thread is opening it or one before it.
    std::optional<Source> take(std::size_t index);

private:
    struct Request {
        std::size_t index = 0;
        SharedDirFd dir;
        std::string name;
        std::string rel;
        uint64_t planned = 0; // the plan's size, counted in |bytes_| until the file is open
        uint64_t small_limit = 0;
    };
    // The next small files of the walk, for at most kFiles and kBytes with |files| and |bytes| held already.
    std::vector<Request> choose(ItemEntries &entries, DirCache &dirs, uint64_t small_limit, std::size_t files,
                                uint64_t bytes);
    void hand_over(std::vector<Request> more, const ResidencyOf &residency_of);
    void run();
    std::optional<Source> open_one(const Request &r) const;
    // With |mutex_| held: whether the thread is opening the entry |index| or one before it.
    bool busy_up_to(std::size_t index) const;
    // With |mutex_| held: the files requested, being opened or opened.
    std::size_t held() const;

    std::size_t next_ = 0; // the next entry of the walk to look at (the job's thread alone)
    ResidencyOf residency_of_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;       // for the thread: a request, or the end
    std::condition_variable done_;       // for take(): a request done
    std::deque<Request> requests_;       // not yet begun, in the walk's order
    std::optional<std::size_t> working_; // the entry the thread is opening
    std::deque<Source> ahead_;           // opened and read ahead, in the walk's order
    uint64_t bytes_ = 0;                 // of |ahead_|, and the plan's sizes of the requests
    bool stop_ = false;
    bool no_thread_ = false;     // it could not be started: nothing is read ahead
    bool thread_idle_ = false;   // waiting on |wake_|
    bool taker_waiting_ = false; // take() waiting on |done_|
    std::thread thread_;         // started with the first request
};

// One item's walk: its entries, its folder caches, its read-ahead and what it learnt on the way.
struct ItemWalk {
    const ItemPlan &plan;
    ItemEntries entries;
    DirCache src;
    DirCache dst;
    std::vector<FinishedDir> dirs;         // created here, their attributes set once they are full
    std::optional<std::string> failed_dir; // could not be created: what it holds is passed over
    std::vector<std::string> moved_dirs;   // a move's source folders (below the source's folder), pre-order
    DirCache prefetch_dirs;                // the source's folders, for |prefetch|
    SourcePrefetch prefetch;
};

// One regular file on its way from its source folder to its target folder.
struct FileTask {
    const PlanEntry &entry;
    std::string source; // for messages and events
    SharedDirFd src_dir;
    std::string src_name;
    SharedDirFd dst_dir;
    std::string dst_display; // the target folder
    std::string dst_name;
    bool target_free = false; // in a folder this job created, under a name it has not used: nothing is there
    ConflictPolicy policy = ConflictPolicy::Refuse;
    std::string note; // for its done event
    // A name this job copied into the same folder that the filesystem can't tell from this one (FAT, exFAT and
    // NTFS ignore case): "Makefile" for "makefile". Empty when there is none.
    std::string case_twin;
    // This job published another file under this very name already ("a/x" and "b/x" into one folder, case twins,
    // two names made valid alike): that copy is never replaced by this one (published_here).
    bool named_by_job = false;
    // Opened and read ahead (SourcePrefetch); taken by the first attempt, a retry opens the file again.
    std::optional<SourcePrefetch::Source> prefetched;
    std::optional<SourceResidency> residency; // of the prefetched source the attempt took
};

// The source as the walk saw it, for a move's check before it removes the source (JobRunner::remove_source).
inline SourceStamp source_stamp(const PlanEntry &e)
{
    return SourceStamp {e.size, e.mtime, e.ctime, e.ino, e.hard_linked};
}

// What one attempt at a file put into the progress counters, so a failed attempt can take it back.
struct AttemptBytes {
    uint64_t written = 0;
    uint64_t durable = 0;
    uint64_t unwritten = 0;
};

class JobRunner {
public:
    JobRunner(const JobSpec &spec, const JobControl &control, ProgressCounters &counters, const JobEventSink &sink);
    JobSummary run();

private:
    // Reporting.
    void emit(const JobEvent &e) { sink_(e); }
    void report_error(Status s, const std::string &path);
    // |s| worded for a pulled stick when that is what it is (explain_device_loss).
    Status explain(Status s);
    void report_skip(const std::string &path, const std::string &why, LeftOut reason);
    void report_done(const std::string &source, std::string target, uint64_t bytes, std::string note = {},
                     std::optional<Sha256Digest> digest = {});
    void take_back(const AttemptBytes &bytes);
    void count_unmoved(uint64_t bytes);
    // Aborted, stopped by an answer or cancelled: the job's own reasons to stop.
    bool stopped() const { return aborted_ || stopped_by_answer_ || control_.cancel_requested(); }
    // ... or a plan counted beside the run found too little room.
    bool stopping() const { return stopped() || plan_gate_.refused(); }
    // The note of a file an interrupted copy left complete: "already on the device" (or "on the share").
    std::string already_there_note() const;
    // What of the source at |path| was cached before this job (or its group: JobSpec::source_share) read it.
    SourceResidency residency_of(const std::string &path, int fd, const struct stat &st) const;

    // The job.
    // The plan, counted first, or resolved only while its walk goes on beside the run (JobSpec::count_while_copying).
    JobPlan begin_plan();
    void start(JobPlan &plan);
    // A plan counted beside the run, once it has ended (|wait|: waited for): what it found is reported.
    void end_plan(bool wait);
    void restart_rate_after_count();
    // Before a name is taken: waits for a plan counted beside the run (PlanGate::wait). Waiting for the count is
    // not a device that stopped taking bytes: each tenth of a second is a beat (stall_watch.h), or a count
    // longer than the stall notice would read as "the device is not responding".
    Status wait_for_plan() const
    {
        return plan_gate_.wait([this] {
            control_.beat();
            return stopped();
        });
    }
    void finish();
    // Not cancelled, not stopped by an answer or by the plan, the device still there: what is held is published.
    bool ends_whole() const
    {
        return !control_.cancel_requested() && !stopped_by_answer_ && !device_removed_ && !plan_gate_.refused();
    }
    void sync_job();
    void run_item(const ItemPlan &plan);
    bool open_roots(const CopyItem &item, SharedDirFd &src_root, SharedDirFd &dst_root);
    // The plan's opened folder, if the path |folder| (an item's target_dir) still names it; else null, and it is
    // let go.
    SharedDirFd planned_root(const std::string &folder);
    void walk_item(ItemWalk &walk);
    void wait_if_paused();
    // Asked before each block read back (resume_point, same_bytes, verify_copy): beats, waits out a pause, and
    // says whether to go on.
    bool go_on_reading();
    void copy_entry(ItemWalk &walk, const PlanEntry &entry);
    void copy_directory(ItemWalk &walk, const PlanEntry &entry, const FileTask &where, const std::string &dst_rel);
    void copy_symlink(const FileTask &where);
    std::optional<std::string> link_there(const FileTask &where, const std::string &target,
                                          const ExistingTarget &existing, const struct stat &st);
    void finish_dirs(ItemWalk &walk);
    // The plan found too little room: what the item's walk wrote goes (its part files, the folders it made).
    void take_back_item(ItemWalk &walk);

    // Safe Move.
    bool move_by_rename(const ItemPlan &plan, const SharedDirFd &src_root, const SharedDirFd &dst_root);
    void hash_renamed(const ItemPlan &plan);
    void remove_source(const SharedDirFd &dir, const std::string &name, const std::string &source,
                       const std::optional<SourceStamp> &copied_as);
    void remove_moved_dirs(ItemWalk &walk);
    bool already_there(const FileTask &task, const ExistingTarget &existing, const std::string &name);
    bool published_before(const FileTask &task, const ExistingTarget &existing, const std::string &name);
    bool same_link(const FileTask &where, const std::string &target, const std::string &name) const;
    std::optional<std::string> kept_both_before(const FileTask &task, const std::string *link_target);
    bool hash_source(const FileTask &task, std::optional<Sha256Digest> &digest);

    // Files.
    bool settle_conflict(FileTask &task);
    ExistingTarget existing_target(const FileTask &task) const;
    bool done_before(FileTask &task, const ExistingTarget &existing);
    bool report_found(FileTask &task, const std::string &name);
    bool decide_conflict(FileTask &task, const ExistingTarget &existing);
    bool refuse_own_copy(const FileTask &task, const std::string &target);
    bool part_beside_its_file(const FileTask &task);
    void claim_target(FileTask &task, const CopyItem &item, const std::string &dst_rel);
    bool published_here(const std::string &dst_rel, const std::string &target) const;
    bool own_copies_can_meet() const;
    void copy_file_with_retries(FileTask &task);
    Status copy_file(FileTask &task, AttemptBytes &bytes);
    Status open_source(FileTask &task, UniqueFd &in, struct stat &st);
    Status copy_small(FileTask &task, UniqueFd in, uint64_t size, AttemptBytes &bytes);
    Status write_side_by_side(FileTask &task, UniqueFd in, uint64_t size);
    Status copy_big(FileTask &task, const UniqueFd &in, const struct stat &st, AttemptBytes &bytes);
    uint64_t compared_prefix(int in, uint64_t size, int part, uint64_t have);
    Status fill_part(const FileTask &task, int in, uint64_t size, PartFile &part, uint64_t start,
                     FileCopyResult &copied, std::optional<Sha256Digest> &digest);
    Status publish_big(const FileTask &task, int in, PartFile &part, uint64_t start, const FileCopyResult &copied,
                       const std::optional<Sha256Digest> &digest, AttemptBytes &bytes);
    Status part_failed(PartFile &part, Status error);
    Result<PartFile> resume_or_create(const FileTask &task, int in, const struct stat &st, uint64_t &start);
    Status verify_part(const PartFile &part, int source, uint64_t size);
    Status finish_hash(SourceHash &hash, int in, uint64_t copied, const std::string &source,
                       std::optional<Sha256Digest> &digest);
    SmallFileBatch::Hooks batch_hooks();

    bool syncs() const { return device_.writeback != WritebackMode::None; }
    bool hashes() const { return spec_.hash_sources || spec_.manifest; }
    void write_job_manifest_now();
    bool folds_case() const { return device_.limits.forbids_fat_chars; } // FAT, exFAT, NTFS
    // The destination path for a source path below the item: each component made storable when the spec
    // asks for safe names, so a renamed folder's contents follow it.
    std::string target_rel(const std::string &rel) const;
    // For the done event: why the name changed, if it did.
    std::string rename_note(const std::string &rel) const;
    // Takes |dst_rel|'s name in its folder for this job; true if it is free: the folder was made by this job, or
    // the name was |known_absent| (the item's target, found absent as it was resolved), and this job has not used
    // it.
    bool claim_fresh_name(const std::string &dst_parent_rel, const std::string &dst_rel, std::string &case_twin,
                          bool known_absent = false);

    const JobSpec &spec_;
    const JobControl &control_;
    ProgressCounters &counters_;
    const JobEventSink &sink_;
    CopySession session_;
    DeviceInfo device_;
    JobSummary summary_;
    // Read by a share's settle threads too (DataToWrite::stop), before each file they create.
    std::atomic<bool> aborted_ = false;
    bool device_removed_ = false;                 // the destination's device went away mid-job
    std::atomic<bool> stopped_by_answer_ = false; // "Cancel" answered to a question
    bool single_item_ = false;                    // the plan has one item
    bool loss_checked_ = false;                   // an EIO was checked for a pulled stick already
    SharedDirFd any_dest_dir_;                    // for the job's last syncfs
    SharedDirFd planned_root_;                    // JobPlan::target_root
    ReportedOnce unreadable_;                     // by the plan's walk or the run's
    // Before the batch, whose renames may wait for it until the batch goes.
    PlanGate plan_gate_;
    // Where each close sleeps (vfat "flush"): the spec's, or the job's own, drained as the job ends. Declared
    // before the batch, which uses it until it goes.
    std::shared_ptr<BackgroundCloser> closer_;
    std::unique_ptr<SmallFileBatch> batch_;
    // The target folders on the walk's path (by rel, "" for the item's target folder) and the names this job
    // made in each. A folder's names are dropped once the walk has left it, which in pre-order is for good:
    // the job holds the names of one path of folders, not of the tree.
    struct TargetFolder {
        bool fresh = false;          // created by this job (empty when it did): a name it has not used is free
        std::set<std::string> names; // as the filesystem folds them (FAT, exFAT, NTFS: case)
        // Of those, the ones the fold changed -> as copied, to name a case twin; empty where nothing is folded.
        std::map<std::string, std::string> cased;
    };
    TargetFolder &target_folder(const std::string &rel);
    std::map<std::string, TargetFolder> target_folders_;
    // Items a move renamed into place whole (their target_rel): every name under one is this job's copy.
    std::vector<std::string> renamed_targets_;
    // Where two items can meet under one name and the second would replace what stands there (overwrite, or an
    // answer that may say so): a hash of each target this job published, to refuse that (refuse_own_copy).
    // target_folders_ forgets a folder's names once the walk leaves it; a merge of two folders comes back.
    bool guards_own_copies_ = false;
    std::unordered_set<std::size_t> published_here_;
    std::vector<std::pair<std::string, Sha256Digest>> hashed_; // (target, digest) for the manifest
    bool rate_restarted_ = true;      // after a count beside the run (restart_rate_after_count)
    std::size_t resolved_errors_ = 0; // of the plan's errors, those start() reported (resolving the destination)
    // The plan counted beside the run (JobSpec::count_while_copying); last, so its thread ends before what it uses.
    std::future<JobPlan> counting_;
};

} // namespace sanecopy::job_detail
