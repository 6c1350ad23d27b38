// SPDX-License-Identifier: GPL-2.0-or-later
#include "copy_job.h"

#include "background_closer.h"
#include "copy_file.h"
#include "device_probe.h"
#include "fd.h"
#include "small_batch.h"
#include "sys.h"
#include "tree_plan.h"
#include "verify.h"

#include <algorithm>
#include <cctype>
#include <fcntl.h>
#include <map>
#include <optional>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sanecopy {

bool keeps_part_file(int err)
{
    return err == EIO || err == ENODEV || err == ENXIO || err == ENOTCONN || err == ESHUTDOWN;
}

bool is_device_fatal(int err)
{
    return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS || err == ENODEV || err == ENXIO ||
           err == ENOTCONN || err == ESHUTDOWN;
}

namespace {

SharedDirFd open_dir(int at, const char *path, Status &error, const std::string &display, bool nofollow, Side side)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
    int fd = sys().openat(at, path, flags, 0);
    if (fd < 0) {
        error = Status(std::error_code(errno, std::generic_category()), "open folder", display, side);
        return {};
    }
    return std::make_shared<const UniqueFd>(fd);
}

std::string join(const std::string &a, const std::string &b)
{
    if (a.empty())
        return b;
    if (b.empty())
        return a;
    return a + "/" + b;
}

// JobSpec::resume: a target with the source's size and modification time (to what the filesystem stores) is a
// file the interrupted run published. rsync's quick check; reading the bytes back would cost a resumed copy as
// long as the copy itself.
bool quick_check(uint64_t size, const struct timespec &mtime, uint64_t target_size, const struct timespec &target_mtime,
                 const FsLimits &limits)
{
    if (size != target_size)
        return false;
    const auto ns = [](const struct timespec &t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
    const int64_t diff = ns(target_mtime) - ns(mtime);
    return (diff < 0 ? -diff : diff) < limits.mtime_window_ns;
}

std::pair<std::string, std::string> split_rel(const std::string &rel)
{
    const auto slash = rel.rfind('/');
    if (slash == std::string::npos)
        return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

bool below(const std::string &rel, const std::string &dir)
{
    return dir.empty() || (rel.size() > dir.size() && rel.compare(0, dir.size(), dir) == 0 && rel[dir.size()] == '/');
}

bool timespec_after(const struct timespec &a, const struct timespec &b)
{
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

std::string join_notes(const std::string &a, const std::string &b) { return a.empty() ? b : b.empty() ? a : a + "; " + b; }

// Where an entry below an item goes, relative to the item's target folder: the same path, or with
// JobSpec::rename_invalid every component the filesystem refuses under its safe name.
std::string target_rel(const std::string &rel, const JobSpec &spec, const FsLimits &limits)
{
    if (!spec.rename_invalid)
        return rel;
    std::string out;
    size_t start = 0;
    for (;;) {
        const size_t slash = rel.find('/', start);
        out = join(out, safe_name(rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start),
                                  limits));
        if (slash == std::string::npos)
            return out;
        start = slash + 1;
    }
}

std::string fold_case(std::string name, bool fold)
{
    if (fold)
        for (char &c : name)
            c = char(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

// The folders of one side of a copy, opened component by component from a pinned root and kept open while
// the walk is below them. Entries arrive in pre-order, so the cache is a path of open folders.
class DirCache {
public:
    DirCache(SharedDirFd root, std::string root_display, Side side)
        : root_(std::move(root)), display_(std::move(root_display)), side_(side)
    {
    }

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
};

// Closes in flight at once on a vfat "flush" mount (background_closer.h): 64 make 2,000 files' closes about 3 s
// of background work instead of 200 s on the job's thread.
constexpr std::size_t kFlushClosers = 64;

// A big file's resume point (CopySession::checkpoint): its size and allocation on the device, and once its
// folder entry, so a crash or a pulled stick leaves a part file the next run finds and goes on from.
std::function<Status()> make_checkpoint(PartFile &part, DataSync how)
{
    return [&part, how, entry_synced = false]() mutable -> Status {
        if (Status s = part.sync_data(how); !s)
            return s;
        if (entry_synced)
            return {};
        entry_synced = true;
        return sync_directory(part.dir()->get(), part.dir_path());
    };
}

// One item's walk: its two folder caches and what it learnt on the way.
struct ItemWalk {
    const ItemPlan &plan;
    DirCache src;
    DirCache dst;
    std::vector<FinishedDir> dirs;       // created here, their attributes set once they are full
    std::optional<std::string> failed_dir; // could not be created: what it holds is passed over
    std::vector<std::string> moved_dirs; // a move's source folders (below the source's folder), pre-order
};

// One regular file on its way from its source folder to its target folder.
struct FileTask {
    const PlanEntry &entry;
    std::string source;        // for messages and events
    SharedDirFd src_dir;
    std::string src_name;
    SharedDirFd dst_dir;
    std::string dst_display;   // the target folder
    std::string dst_name;
    bool target_free = false;  // in a folder this job created, under a name it has not used: nothing is there
    ConflictPolicy policy = ConflictPolicy::Refuse;
    std::string note;          // for its done event
};

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
    void emit(JobEvent e) { sink_(e); }
    void report_error(Status s, const std::string &path);
    // |s| worded for a pulled stick when that is what it is (explain_device_loss).
    Status explain(Status s);
    void report_skip(const std::string &path, const std::string &why, LeftOut reason);
    void report_done(const std::string &source, std::string target, uint64_t bytes, std::string note = {},
                     std::optional<Sha256Digest> digest = {});
    void take_back(const AttemptBytes &bytes);
    void count_unmoved(uint64_t bytes);
    bool stopping() const { return aborted_ || stopped_by_answer_ || control_.cancel_requested(); }

    // The job.
    void start(JobPlan &plan);
    void finish();
    void run_item(const ItemPlan &plan);
    void wait_if_paused();
    void copy_entry(ItemWalk &walk, const PlanEntry &entry);
    void copy_directory(ItemWalk &walk, const PlanEntry &entry, const FileTask &where, const std::string &dst_rel);
    void copy_symlink(const FileTask &where);
    void finish_dirs(ItemWalk &walk);

    // Safe Move.
    bool move_by_rename(const ItemPlan &plan, const SharedDirFd &src_root, const SharedDirFd &dst_root);
    void remove_source(const SharedDirFd &dir, const std::string &name, const std::string &source);
    void remove_moved_dirs(ItemWalk &walk);
    bool already_there(const FileTask &task, const ExistingTarget &existing, const std::string &name);
    bool published_before(const FileTask &task, const ExistingTarget &existing) const;
    bool same_link(const FileTask &where, const std::string &target, const std::string &name) const;
    std::optional<std::string> kept_both_before(const FileTask &task, const std::string *link_target);
    bool hash_source(const FileTask &task, std::optional<Sha256Digest> &digest);

    // Files.
    bool settle_conflict(FileTask &task);
    void copy_file_with_retries(FileTask &task);
    Status copy_file(FileTask &task, AttemptBytes &bytes);
    Status open_source(const FileTask &task, UniqueFd &in, struct stat &st);
    Status copy_small(FileTask &task, UniqueFd in, uint64_t size, AttemptBytes &bytes);
    Status copy_big(FileTask &task, const UniqueFd &in, const struct stat &st, AttemptBytes &bytes);
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
    // Remembers a name this job made in a folder it created; says whether it was free.
    bool claim_fresh_name(const std::string &dst_parent_rel, const std::string &dst_rel);

    const JobSpec &spec_;
    const JobControl &control_;
    ProgressCounters &counters_;
    const JobEventSink &sink_;
    CopySession session_;
    DeviceInfo device_;
    JobSummary summary_;
    bool aborted_ = false;
    bool device_removed_ = false;    // the destination's device went away mid-job
    bool stopped_by_answer_ = false; // "Cancel" answered to a question
    bool loss_checked_ = false;      // an EIO was checked for a pulled stick already
    SharedDirFd any_dest_dir_;       // for the job's last syncfs
    // Where each close sleeps (vfat "flush"): the spec's, or the job's own, drained as the job ends. Declared
    // before the batch, which uses it until it goes.
    std::shared_ptr<BackgroundCloser> closer_;
    std::unique_ptr<SmallFileBatch> batch_;
    // Folders this job created (empty when it did), and the names it made in them, case-folded where the
    // filesystem ignores case: a file there needs no look at its target name.
    std::set<std::string> fresh_dirs_;
    std::set<std::string> fresh_names_;
    std::vector<std::pair<std::string, Sha256Digest>> hashed_; // (target, digest) for the manifest
};

JobRunner::JobRunner(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                     const JobEventSink &sink)
    : spec_(spec), control_(control), counters_(counters), sink_(sink), session_(CopyRoute{}, spec.limits.checked())
{
    session_.checkpoint_seconds = spec.checkpoint_seconds;
}

void JobRunner::report_error(Status s, const std::string &path)
{
    ++summary_.errors;
    // Only the destination failing ends the job: a source that can't be read is that file's problem.
    if (s.on_destination() && is_device_fatal(s.err())) {
        aborted_ = true;
        // A pulled stick shows as ENODEV, ENXIO or EIO depending on where the copy was; say what happened
        // rather than which call saw it.
        s = explain(std::move(s));
        device_removed_ = device_removed_ || s.device_removed();
    }
    JobEvent e;
    e.kind = JobEvent::Kind::Error;
    e.path = path;
    e.message = s.message();
    e.status = std::move(s);
    emit(std::move(e));
}

Status JobRunner::explain(Status s)
{
    if (device_removed_ && s.on_destination() && is_device_fatal(s.err()) && !s.device_removed())
        return explain_device_loss(std::move(s).as_device_removed(), device_);
    // The grace for a disk to leave sysfs is waited once: a failed group reports each of its files.
    const bool was_checked = loss_checked_;
    loss_checked_ = loss_checked_ || (s.on_destination() && (s.err() == EIO || s.err() == ENOTCONN));
    return explain_device_loss(std::move(s), device_, "/sys", was_checked ? 0.0 : 0.5);
}

void JobRunner::report_skip(const std::string &path, const std::string &why, LeftOut reason)
{
    ++summary_.files_skipped;
    // A skip the conflict policy asked for is what the user wanted; anything else is a requested file not copied.
    if (reason != LeftOut::Exists)
        ++summary_.files_refused;
    JobEvent e;
    e.kind = JobEvent::Kind::Skipped;
    e.path = path;
    e.message = path + ": " + why;
    e.reason = reason;
    emit(std::move(e));
}

void JobRunner::report_done(const std::string &source, std::string target, uint64_t bytes, std::string note,
                            std::optional<Sha256Digest> digest)
{
    ++summary_.files_copied;
    summary_.bytes += bytes;
    counters_.files_done.fetch_add(1);
    JobEvent e;
    e.path = source;
    e.target = std::move(target);
    e.bytes = bytes;
    e.message = std::move(note);
    e.digest = digest;
    if (spec_.manifest && digest)
        hashed_.emplace_back(e.target, *digest);
    emit(std::move(e));
}

// Bytes that are on the device without this job moving them (a renamed item, a file there already): progress
// counts them, the throughput chart does not.
void JobRunner::count_unmoved(uint64_t bytes)
{
    counters_.written_bytes.fetch_add(bytes);
    counters_.durable_bytes.fetch_add(bytes);
    counters_.unwritten_bytes.fetch_add(bytes);
}

// Progress counts what is on the device: bytes of an attempt that failed (a retried file, a failed verify, a
// rename refused) are not, or not under any name.
void JobRunner::take_back(const AttemptBytes &bytes)
{
    counters_.written_bytes.fetch_sub(bytes.written);
    counters_.durable_bytes.fetch_sub(bytes.durable);
    counters_.unwritten_bytes.fetch_sub(bytes.unwritten);
}

std::string JobRunner::target_rel(const std::string &rel) const
{
    return sanecopy::target_rel(rel, spec_, device_.limits);
}

std::string JobRunner::rename_note(const std::string &rel) const
{
    const std::string name = split_rel(rel).second;
    const std::string why = name_problem(name, device_.limits);
    return why.empty() ? std::string() : "renamed to \"" + safe_name(name, device_.limits) + "\": the name " + why;
}

bool JobRunner::claim_fresh_name(const std::string &dst_parent_rel, const std::string &dst_rel)
{
    const bool inserted = fresh_names_.insert(fold_case(dst_rel, folds_case())).second;
    return inserted && fresh_dirs_.count(dst_parent_rel) > 0;
}

SmallFileBatch::Hooks JobRunner::batch_hooks()
{
    SmallFileBatch::Hooks hooks;
    hooks.durable = [this](const BatchedFile &f) { session_.count_durable(f.bytes, counters_); };
    if (spec_.verify)
        hooks.verify = [this](const BatchedFile &f) { return verify_part(f.part, f.source_fd.get(), f.bytes); };
    hooks.failed = [this](BatchedFile &f, Status s) {
        take_back({f.bytes, f.durable ? f.bytes : 0, 0});
        report_error(std::move(s), f.source);
    };
    hooks.published = [this](BatchedFile &f) {
        if (spec_.move)
            remove_source(f.source_dir, f.source_name, f.source);
        report_done(f.source, f.target, f.bytes, f.note, f.digest);
    };
    return hooks;
}

JobSummary JobRunner::run()
{
    const double started = monotonic_seconds();
    counters_.state.store(JobState::Running);
    JobPlan plan = plan_job(spec_);
    start(plan);
    for (const ItemPlan &item : plan.items) {
        if (stopping())
            break;
        run_item(item);
    }
    finish();
    summary_.seconds = monotonic_seconds() - started;
    counters_.state.store(summary_.cancelled ? JobState::Cancelled
                                             : summary_.ok() ? JobState::Done : JobState::Failed);
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.path = spec_.destination;
    done.bytes = summary_.bytes;
    emit(done);
    return summary_;
}

void JobRunner::start(JobPlan &plan)
{
    for (Status &s : plan.errors) {
        const std::string path = s.path();
        report_error(std::move(s), path);
    }
    device_ = plan.device;
    counters_.total_bytes.store(plan.total_bytes);
    counters_.files_total.store(plan.files);
    if (!plan.space.ok()) {
        report_error(plan.space, spec_.destination);
        plan.items.clear();
    }
    // A batched file holds a descriptor (two with verify) until its group is published, and two groups are
    // open at a time: keep that well inside the process's limit, other lanes and the GUI included.
    BatchLimits limits{spec_.batch_bytes, spec_.batch_files};
    if (struct rlimit rl {}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        limits.max_files = std::max<std::size_t>(8, std::min<std::size_t>(limits.max_files, rl.rlim_cur / 8));
    // Where each close sleeps 100 ms (vfat "flush", as UDisks2 mounts FAT), published files are closed on the
    // closer's threads, side by side and without holding up the copy.
    if (device_.mount_flags.flush)
        closer_ = spec_.closer ? spec_.closer : std::make_shared<BackgroundCloser>(kFlushClosers);
    batch_ = std::make_unique<SmallFileBatch>(device_.writeback, device_.group_sync, limits, folds_case(),
                                              batch_hooks(), closer_.get());
}

void JobRunner::finish()
{
    if (control_.cancel_requested() || stopped_by_answer_ || device_removed_)
        batch_->discard(); // unpublished part files are removed; renamed ones still reported
    else
        batch_->flush();
    // A descriptor still open keeps the stick busy: an unmount right after "done" would fail. The job's own
    // closer is waited for here; a closer from the spec (the KIO worker's, shared by its one-file jobs) goes on
    // after the job, its closes over within about 100 ms of the last file's.
    if (closer_ && closer_ != spec_.closer)
        closer_->drain();
    if (spec_.manifest && !hashed_.empty() && !control_.cancel_requested() && !stopped_by_answer_ && !device_removed_)
        write_job_manifest_now();
    if (syncs() && any_dest_dir_ && !device_removed_) {
        // Metadata of everything this job touched (folders, times, the journal) reaches the device too, so
        // "done" and "cancelled" both mean there is nothing left to write.
        if (sys().syncfs(any_dest_dir_->get()) < 0)
            report_error(Status::destination(errno, "syncfs", spec_.destination), spec_.destination);
    }
    summary_.cancelled = control_.cancel_requested() || stopped_by_answer_;
    summary_.aborted = aborted_;
    summary_.device_removed = device_removed_;
}

// The manifest, through the publish pipeline like any file: durable before the job says it is done.
void JobRunner::write_job_manifest_now()
{
    const std::string path = spec_.manifest_path.empty() ? default_manifest_path(spec_.destination) : spec_.manifest_path;
    if (Status s = write_job_manifest(path, hashed_); !s) {
        report_error(std::move(s), path);
        return;
    }
    summary_.manifest_path = path;
    summary_.manifest_files = hashed_.size();
}

void JobRunner::wait_if_paused()
{
    if (!control_.pause_requested())
        return;
    // Between files too, or a tree of small files would never pause: the batch goes to the device first.
    batch_->flush();
    counters_.own_dirty_bytes.store(0); // the groups are durable: nothing of this copy is dirty while it waits
    counters_.state.store(JobState::Paused);
    control_.wait_while_paused();
    counters_.state.store(JobState::Running);
}

void JobRunner::run_item(const ItemPlan &plan)
{
    if (plan.entries.empty())
        return;
    const CopyItem &item = plan.item;
    Status error;
    SharedDirFd src_root = open_dir(AT_FDCWD, item.source_dir.c_str(), error, item.source_dir, false, Side::Source);
    SharedDirFd dst_root = src_root ? open_dir(AT_FDCWD, item.target_dir.c_str(), error, item.target_dir, false,
                                               Side::Destination)
                                    : SharedDirFd{};
    if (!dst_root) {
        report_error(std::move(error), item.source);
        return;
    }
    if (!any_dest_dir_)
        any_dest_dir_ = dst_root;
    struct stat root_st {};
    sys().fstatat(src_root->get(), item.source_name.c_str(), &root_st, AT_SYMLINK_NOFOLLOW);
    session_.route = choose_route(device_, root_st.st_dev);
    if (spec_.move && root_st.st_dev == device_.st_dev && move_by_rename(plan, src_root, dst_root))
        return;

    ItemWalk walk{plan, DirCache(src_root, item.source_dir, Side::Source),
                  DirCache(dst_root, item.target_dir, Side::Destination), {}, {}, {}};
    for (const PlanEntry &entry : plan.entries) {
        wait_if_paused();
        if (stopping())
            break;
        if (walk.failed_dir && below(entry.rel, *walk.failed_dir))
            continue;
        copy_entry(walk, entry);
    }
    if (!stopping())
        batch_->flush();
    if (!stopping())
        finish_dirs(walk);
    if (!stopping() && spec_.move)
        remove_moved_dirs(walk);
}

void JobRunner::copy_entry(ItemWalk &walk, const PlanEntry &entry)
{
    const CopyItem &item = walk.plan.item;
    const std::string source = join(strip_trailing_slashes(item.source), entry.rel);
    if (!entry.skip_reason.empty()) {
        if (entry.kind == EntryKind::Special && entry.rel.empty()) {
            // Named on the command line: the user asked for exactly this, so not copying it is a failure.
            report_error(Status::source(EINVAL, "copy", source).with_detail(entry.skip_reason), source);
            return;
        }
        report_skip(source, entry.skip_reason, entry.left_out);
        return;
    }
    const std::string dst_rel = target_rel(join(item.target_name, entry.rel));
    auto [src_parent_rel, src_name] = split_rel(join(item.source_name, entry.rel));
    auto [dst_parent_rel, dst_name] = split_rel(dst_rel);
    FileTask task{entry, source, {}, src_name, {}, join(walk.dst.display(), dst_parent_rel), dst_name,
                  false, ConflictPolicy::Refuse, {}};
    Status error;
    task.dst_dir = walk.dst.get(dst_parent_rel, error);
    task.src_dir = task.dst_dir ? walk.src.get(src_parent_rel, error) : SharedDirFd{};
    if (!task.src_dir) {
        report_error(std::move(error), source);
        return;
    }
    task.target_free = claim_fresh_name(dst_parent_rel, dst_rel);
    if (spec_.rename_invalid)
        task.note = rename_note(join(item.target_name, entry.rel));
    switch (entry.kind) {
    case EntryKind::Special:
        return; // reported through skip_reason
    case EntryKind::Directory:
        if (spec_.move)
            walk.moved_dirs.push_back(join(item.source_name, entry.rel));
        return copy_directory(walk, entry, task, dst_rel);
    case EntryKind::Symlink:
        return copy_symlink(task);
    case EntryKind::File:
        return copy_file_with_retries(task);
    }
}

void JobRunner::copy_directory(ItemWalk &walk, const PlanEntry &entry, const FileTask &where,
                               const std::string &dst_rel)
{
    // Created owner-writable so it can be filled; its real mode is set once it is full.
    if (sys().mkdirat(where.dst_dir->get(), where.dst_name.c_str(), 0700) == 0) {
        walk.dirs.push_back({dst_rel, entry.mode, entry.mtime});
        fresh_dirs_.insert(dst_rel);
        return;
    }
    struct stat st {};
    const int err = errno;
    if (err == EEXIST && sys().fstatat(where.dst_dir->get(), where.dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode)) {
        // An existing folder: the copy merges into it and leaves its mode alone, unless an interrupted run
        // created it (owner-only until full) and this one finishes its work.
        if (spec_.resume)
            walk.dirs.push_back({dst_rel, entry.mode, entry.mtime});
        return;
    }
    report_error(Status::destination(err == EEXIST ? ENOTDIR : err, "mkdir", where.dst_display + "/" + where.dst_name),
                 where.source);
    walk.failed_dir = entry.rel;
}

void JobRunner::copy_symlink(const FileTask &where)
{
    std::string target(4096, '\0');
    ssize_t n = sys().readlinkat(where.src_dir->get(), where.src_name.c_str(), target.data(), target.size());
    if (n < 0) {
        report_error(Status::source(errno, "readlink", where.source), where.source);
        return;
    }
    target.resize(size_t(n));
    ExistingTarget existing;
    struct stat st {};
    existing.exists = !where.target_free &&
                      sys().fstatat(where.dst_dir->get(), where.dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    existing.is_dir = existing.exists && S_ISDIR(st.st_mode);
    // A link of the same text is the one an interrupted run published; for a move, as for a file of the same
    // bytes, even without resume.
    std::optional<std::string> there;
    if ((spec_.resume || spec_.move) && existing.exists) {
        if (S_ISLNK(st.st_mode) && same_link(where, target, where.dst_name))
            there = where.dst_name;
        else
            there = kept_both_before(where, &target);
    }
    if (there) {
        if (spec_.move)
            remove_source(where.src_dir, where.src_name, where.source);
        return report_done(where.source, where.dst_display + "/" + *there, 0,
                           "already on the device from the interrupted copy");
    }
    // Links are not worth a question: the job's policy decides.
    const ConflictDecision d =
        resolve_conflict(existing, spec_.conflict, std::nullopt, where.dst_display + "/" + where.dst_name);
    if (d.outcome == ConflictDecision::Outcome::Skip)
        return report_skip(where.source, "already exists at the destination", LeftOut::Exists);
    if (d.outcome != ConflictDecision::Outcome::Proceed)
        return report_error(d.error, where.source);
    std::string final_name;
    if (Status s = publish_symlink(where.dst_dir, where.dst_display, where.dst_name, target, where.entry.mtime,
                                   d.policy, &final_name);
        !s)
        return report_error(std::move(s), where.source);
    if (spec_.move)
        remove_source(where.src_dir, where.src_name, where.source);
    report_done(where.source, where.dst_display + "/" + final_name, 0, where.note);
}

// Settles an existing target before the source is even opened. False: the file is not copied (skipped,
// refused, or the user cancelled), and that was reported.
bool JobRunner::settle_conflict(FileTask &task)
{
    // A target the batch is still holding is settled first, so it is seen here as the file it is about to be.
    if (batch_->holds(task.dst_dir->get(), task.dst_name))
        batch_->flush();
    ExistingTarget existing;
    struct stat st {};
    if (!task.target_free &&
        sys().fstatat(task.dst_dir->get(), task.dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        existing = {true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
    if (spec_.move && already_there(task, existing, task.dst_name)) {
        count_unmoved(task.entry.size);
        remove_source(task.src_dir, task.src_name, task.source);
        report_done(task.source, task.dst_display + "/" + task.dst_name, task.entry.size,
                    "already on the device with the same bytes; the source was removed");
        return false;
    }
    if (spec_.resume && !spec_.move && published_before(task, existing)) {
        std::optional<Sha256Digest> digest;
        if (hashes() && !hash_source(task, digest))
            return false;
        count_unmoved(task.entry.size);
        report_done(task.source, task.dst_display + "/" + task.dst_name, task.entry.size,
                    "already on the device from the interrupted copy", digest);
        return false;
    }
    // A move checks the bytes and needs no resume, as under the real name above.
    if ((spec_.resume || spec_.move) && existing.exists) {
        if (std::optional<std::string> kept = kept_both_before(task, nullptr)) {
            std::optional<Sha256Digest> digest;
            if (!spec_.move && hashes() && !hash_source(task, digest))
                return false;
            count_unmoved(task.entry.size);
            if (spec_.move)
                remove_source(task.src_dir, task.src_name, task.source);
            report_done(task.source, task.dst_display + "/" + *kept, task.entry.size,
                        spec_.move ? "already on the device with the same bytes; the source was removed"
                                   : "already on the device from the interrupted copy",
                        digest);
            return false;
        }
    }
    std::optional<ConflictAnswer> answer;
    if (existing.exists && spec_.ask_conflict) {
        ConflictQuestion q{task.source, task.dst_display + "/" + task.dst_name, task.entry.size, existing.size,
                           existing.is_dir, task.entry.mtime, existing.mtime};
        answer = spec_.ask_conflict(q);
    }
    const ConflictDecision d =
        resolve_conflict(existing, spec_.conflict, answer, task.dst_display + "/" + task.dst_name);
    switch (d.outcome) {
    case ConflictDecision::Outcome::Proceed:
        task.policy = d.policy;
        return true;
    case ConflictDecision::Outcome::Skip:
        report_skip(task.source, "already exists at the destination", LeftOut::Exists);
        return false;
    case ConflictDecision::Outcome::Fail:
        report_error(d.error, task.source);
        return false;
    case ConflictDecision::Outcome::Cancel:
        stopped_by_answer_ = true;
        return false;
    }
    return false;
}

void JobRunner::copy_file_with_retries(FileTask &task)
{
    if (!settle_conflict(task))
        return;
    for (;;) {
        AttemptBytes bytes;
        Status s = copy_file(task, bytes);
        if (s.ok())
            return;
        take_back(bytes);
        if (s.err() == ECANCELED)
            return;
        // A pulled stick is not a question: nothing the user answers brings it back into this copy.
        s = explain(std::move(s));
        if (!spec_.ask_error || s.device_removed())
            return report_error(std::move(s), task.source);
        switch (spec_.ask_error(s, task.source)) {
        case ErrorAnswer::Retry:
            continue;
        case ErrorAnswer::Skip:
            return report_skip(task.source, s.message(), LeftOut::AfterError);
        case ErrorAnswer::Abort:
            report_error(std::move(s), task.source);
            aborted_ = true;
            return;
        }
    }
}

Status JobRunner::open_source(const FileTask &task, UniqueFd &in, struct stat &st)
{
    // O_NONBLOCK: if the file was swapped for a FIFO since the walk, opening it must not wait for a writer.
    in.reset(sys().openat(task.src_dir->get(), task.src_name.c_str(),
                            O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!in)
        return Status::source(errno, "open source", task.source);
    if (sys().fstat(in.get(), &st) < 0)
        return Status::source(errno, "stat source", task.source);
    if (S_ISREG(st.st_mode))
        sys().fcntl_setfl(in.get(), O_RDONLY);
    return {};
}

Status JobRunner::copy_file(FileTask &task, AttemptBytes &bytes)
{
    UniqueFd in;
    struct stat st {};
    if (Status s = open_source(task, in, st); !s)
        return s;
    if (!S_ISREG(st.st_mode)) {
        report_skip(task.source,
                    std::string("is a ") + special_kind(st.st_mode) + "; only files, folders and links are copied",
                    LeftOut::SpecialFile);
        return {};
    }
    counters_.set_current_file(task.source);
    const uint64_t size = uint64_t(st.st_size);
    if (size <= spec_.small_file_limit && syncs())
        return copy_small(task, std::move(in), size, bytes);
    // One of the two at a time keeps durability in order and the dirty budget to one of them.
    batch_->flush();
    return copy_big(task, in, st, bytes);
}

Status JobRunner::copy_small(FileTask &task, UniqueFd in, uint64_t size, AttemptBytes &bytes)
{
    // Created with its final permission bits, so most files need no fchmod; set_attributes settles the rest.
    Result<PartFile> part = PartFile::create(task.dst_dir, task.dst_display, task.dst_name, part_mode(task.entry.mode));
    if (!part.ok())
        return part.status();
    FileCopyResult copied;
    SourceHash hash;
    session_.hash = hashes() ? &hash : nullptr;
    Status s = copy_small_file_data(in.get(), part->fd(), size, session_, counters_, part->display_path(), copied);
    session_.hash = nullptr;
    bytes.written = copied.copied;
    std::optional<Sha256Digest> digest;
    if (s)
        s = finish_hash(hash, in.get(), copied.copied, task.source, digest);
    if (s)
        s = part->set_attributes(task.entry.mode, task.entry.mtime);
    if (!s)
        return s; // the part file is removed as |part| goes
    // The batch holds the part's descriptor until its group is durable; the source's only when verify needs it.
    batch_->add({std::move(part.value()), task.source, copied.copied, task.policy,
                 spec_.verify ? std::move(in) : UniqueFd(), task.note, {}, false, digest, task.src_dir,
                 task.src_name});
    return {};
}

// A part file an interrupted run left (SIGKILL, a crash, a pulled stick) is resumed from its verified prefix;
// otherwise a new one is created. |start| says where the copy goes on.
Result<PartFile> JobRunner::resume_or_create(const FileTask &task, int in, const struct stat &st, uint64_t &start)
{
    start = 0;
    if (syncs()) {
        uint64_t have = 0;
        Result<PartFile> part = PartFile::reopen(task.dst_dir, task.dst_display, task.dst_name, have);
        struct stat part_st {};
        // A source changed since the part was last written is another file now: its old prefix is not ours.
        const bool source_newer = part.ok() && (sys().fstat(part->fd(), &part_st) < 0 ||
                                                 timespec_after(st.st_mtim, part_st.st_mtim) ||
                                                 timespec_after(st.st_ctim, part_st.st_mtim));
        if (part.ok() && !source_newer) {
            auto reader = part->open_for_reading();
            start = reader.ok() ? resume_point(in, uint64_t(st.st_size), reader->get(), have, session_.limits) : 0;
            // Whatever lies past the verified prefix is not trusted: cut it off.
            if (start > 0 && sys().ftruncate(part->fd(), off_t(start)) == 0)
                return part;
            start = 0;
        }
    }
    return PartFile::create(task.dst_dir, task.dst_display, task.dst_name, part_mode(task.entry.mode));
}

Status JobRunner::copy_big(FileTask &task, const UniqueFd &in, const struct stat &st, AttemptBytes &bytes)
{
    const uint64_t size = uint64_t(st.st_size);
    uint64_t start = 0;
    Result<PartFile> part = resume_or_create(task, in.get(), st, start);
    if (!part.ok())
        return part.status();
    PartFile &pf = part.value();
    // After the device failed (EIO, the stick pulled out), or when the job was interrupted rather than cancelled,
    // what is on it stays as a part file for the next run to resume; any other failure takes its part file away
    // (ENOSPC: so the space comes back).
    auto fail = [&](Status error) {
        if ((error.on_destination() && keeps_part_file(error.err())) ||
            (error.err() == ECANCELED && control_.keeps_partial()))
            pf.keep();
        return error;
    };
    // A sparse source is not reserved: reserving its whole size would fill its holes.
    const bool sparse = uint64_t(st.st_blocks) * 512 < size;
    if (syncs() && !sparse) {
        if (Status rs = reserve_space(pf, start, size); !rs)
            return rs;
    }
    session_.checkpoint = syncs() ? make_checkpoint(pf, device_.data_sync) : std::function<Status()>();
    FileCopyResult copied;
    SourceHash hash;
    session_.hash = hashes() ? &hash : nullptr;
    Status s = copy_file_data(in.get(), pf.fd(), size, session_, control_, counters_, pf.display_path(), copied, start);
    session_.checkpoint = nullptr;
    session_.hash = nullptr;
    bytes = {copied.copied, copied.durable, copied.unwritten};
    std::optional<Sha256Digest> digest;
    if (s)
        s = finish_hash(hash, in.get(), copied.copied, task.source, digest);
    if (s)
        s = pf.set_attributes(task.entry.mode, task.entry.mtime);
    if (!s)
        return fail(std::move(s)); // unless kept, the part file is removed as |part| goes

    PublishSteps steps{syncs(), device_.data_sync, task.policy, {}, {}};
    steps.on_durable = [&] {
        session_.count_durable(copied.copied - copied.durable, counters_);
        bytes.durable = copied.copied;
    };
    if (spec_.verify)
        steps.verify = [&](const PartFile &p) { return verify_part(p, in.get(), copied.copied); };
    std::string final_name;
    if (Status ps = publish(pf, steps, &final_name); !ps)
        return pf.committed() ? ps : fail(std::move(ps)); // a failed folder sync comes after the rename
    if (closer_)
        closer_->close(pf.take_fd()); // durable under its name: the close's 100 ms sleep need not be waited for
    std::string notes = task.note;
    if (start > 0)
        notes = join_notes(notes, "resumed after " + std::to_string(start >> 20) + " MiB already on the device");
    if (spec_.move)
        remove_source(task.src_dir, task.src_name, task.source);
    report_done(task.source, task.dst_display + "/" + final_name, copied.copied, notes, digest);
    return {};
}

// The digest of what was copied, when the spec asks for one: the parts the copy did not read (a clone, a resumed
// prefix, holes) are read from the source now.
Status JobRunner::finish_hash(SourceHash &hash, int in, uint64_t copied, const std::string &source,
                              std::optional<Sha256Digest> &digest)
{
    if (!hashes())
        return {};
    Result<Sha256Digest> d = hash.finish(in, copied, source);
    if (!d.ok())
        return d.status();
    digest = d.value();
    return {};
}

Status JobRunner::verify_part(const PartFile &part, int source, uint64_t size)
{
    auto reader = part.open_for_reading();
    if (!reader.ok())
        return reader.status();
    counters_.set_current_file(part.display_path() + " (verifying)");
    return verify_copy(source, reader->get(), size, part.display_path(), session_.route.evict, &control_);
}

void JobRunner::finish_dirs(ItemWalk &walk)
{
    // Deepest first: setting a folder's time must come after everything inside it was created.
    for (auto it = walk.dirs.rbegin(); it != walk.dirs.rend(); ++it) {
        Status error;
        SharedDirFd dir = walk.dst.get(it->rel, error);
        if (!dir) {
            report_error(std::move(error), it->rel);
            continue;
        }
        const std::string display = join(walk.dst.display(), it->rel);
        if (Status s = apply_attributes(dir->get(), it->mode, it->mtime, display); !s) {
            report_error(std::move(s), display);
            continue;
        }
        if (syncs() && device_.writeback != WritebackMode::Windows) {
            // New folders' entries in their parents: the job's final syncfs covers block filesystems.
            SharedDirFd parent = walk.dst.get(split_rel(it->rel).first, error);
            if (parent)
                sync_directory(parent->get(), display).ignore();
        }
    }
}

// On the destination's own filesystem, an item whose target name is free moves by one rename, which is atomic:
// there is never a moment without a complete copy. False: it is copied and removed instead (another filesystem,
// a taken name, a manifest that needs the bytes read).
bool JobRunner::move_by_rename(const ItemPlan &plan, const SharedDirFd &src_root, const SharedDirFd &dst_root)
{
    const CopyItem &item = plan.item;
    if (hashes() || !syncs() ||
        sys().renameat2(src_root->get(), item.source_name.c_str(), dst_root->get(), target_rel(item.target_name).c_str(),
                        RENAME_NOREPLACE) < 0)
        return false;
    // Both folders' entries on the device: the new name, and the old one gone.
    Status s = sync_directory(dst_root->get(), item.target_dir);
    if (s)
        s = sync_directory(src_root->get(), item.source_dir);
    if (!s)
        report_error(std::move(s), item.source);
    uint64_t bytes = 0, files = 0;
    for (const PlanEntry &e : plan.entries) {
        bytes += e.kind == EntryKind::File ? e.size : 0;
        files += e.kind == EntryKind::File || e.kind == EntryKind::Symlink;
    }
    count_unmoved(bytes);
    counters_.files_done.fetch_add(files > 0 ? files - 1 : 0);
    summary_.files_copied += files > 0 ? files - 1 : 0; // report_done counts the last one
    report_done(item.source, item.target_dir + "/" + target_rel(item.target_name), bytes,
                "moved by renaming it on the same filesystem");
    return true;
}

// The source of a moved file, once its copy is durable under its real name.
void JobRunner::remove_source(const SharedDirFd &dir, const std::string &name, const std::string &source)
{
    if (sys().unlinkat(dir->get(), name.c_str(), 0) < 0 && errno != ENOENT)
        report_error(Status::source(errno, "remove source", source)
                         .with_detail("was copied, but could not be removed from the source: " +
                                      std::error_code(errno, std::generic_category()).message()),
                     source);
}

// A move's source folders, deepest first, once everything moved out of them is on the device. A folder that
// still holds something (a file that failed or was left out) stays, with it.
void JobRunner::remove_moved_dirs(ItemWalk &walk)
{
    for (auto it = walk.moved_dirs.rbegin(); it != walk.moved_dirs.rend(); ++it) {
        Status error;
        const auto [parent_rel, name] = split_rel(*it);
        SharedDirFd parent = walk.src.get(parent_rel, error);
        if (!parent)
            continue;
        if (sys().unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR) < 0 && errno != ENOTEMPTY && errno != EEXIST &&
            errno != ENOENT)
            report_error(Status::source(errno, "remove source folder", join(walk.src.display(), *it)),
                         join(walk.src.display(), *it));
    }
}

// A move interrupted after publishing a file and before removing its source leaves both: the same size and the
// same bytes at the target mean it is there already.
bool JobRunner::already_there(const FileTask &task, const ExistingTarget &existing, const std::string &name)
{
    if (!existing.exists || existing.is_dir || existing.size != task.entry.size)
        return false;
    auto open_at = [](const SharedDirFd &dir, const std::string &name) {
        return UniqueFd(sys().openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0));
    };
    UniqueFd a = open_at(task.src_dir, task.src_name), b = open_at(task.dst_dir, name);
    return a && b && same_bytes(a.get(), b.get(), task.entry.size, session_.route.evict);
}

// JobSpec::resume: a link the interrupted run published points where the source does.
bool JobRunner::same_link(const FileTask &where, const std::string &target, const std::string &name) const
{
    std::string there(target.size() + 1, '\0');
    const ssize_t n = sys().readlinkat(where.dst_dir->get(), name.c_str(), there.data(), there.size());
    return n >= 0 && size_t(n) == target.size() && there.compare(0, target.size(), target) == 0;
}

// JobSpec::resume: the quick check (above) of what stands under the name.
bool JobRunner::published_before(const FileTask &task, const ExistingTarget &existing) const
{
    return existing.exists && !existing.is_dir &&
           quick_check(task.entry.size, task.entry.mtime, existing.size, existing.mtime, device_.limits);
}

// JobSpec::resume where the target name was taken: under "keep both" (the policy, or the user's answer) the
// interrupted run published this item as "name (1)" beside what was there. Without this a resumed copy would
// keep both once more, as "name (2)". The alternatives are looked at in the order the publishing rename tries
// them, up to the first free one (the run got no further), with the test the real name gets: the quick check
// for a copy, the bytes for a move, the link's text for a link (|link_target|).
std::optional<std::string> JobRunner::kept_both_before(const FileTask &task, const std::string *link_target)
{
    // Only "keep both" makes a second name: the policy, or an answer the interrupted run may have got. A move
    // that asks and is not resuming asks: a "name (1)" with the same bytes is not what the user chose there.
    if (spec_.conflict != ConflictPolicy::Rename && !(spec_.ask_conflict && spec_.resume))
        return std::nullopt;
    for (unsigned n = 1; n < 10000; ++n) {
        std::string alt = alternative_name(task.dst_name, n);
        struct stat st {};
        if (sys().fstatat(task.dst_dir->get(), alt.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return std::nullopt;
        const ExistingTarget there{true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
        const bool same = link_target ? S_ISLNK(st.st_mode) && same_link(task, *link_target, alt)
                          : spec_.move ? S_ISREG(st.st_mode) && already_there(task, there, alt)
                                       : S_ISREG(st.st_mode) && published_before(task, there);
        if (same)
            return alt;
    }
    return std::nullopt;
}

// The digest of a file this job does not copy (JobSpec::resume), for the manifest: read from the source.
bool JobRunner::hash_source(const FileTask &task, std::optional<Sha256Digest> &digest)
{
    UniqueFd in(sys().openat(task.src_dir->get(), task.src_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0));
    Status s = in ? Status() : Status::source(errno, "open", task.source);
    SourceHash hash;
    if (s)
        s = finish_hash(hash, in.get(), 0, task.source, digest);
    if (!s)
        report_error(std::move(s), task.source);
    return s.ok();
}

// What each entry will meet on the destination's filesystem: a name it refuses, a size it can't store.
void check_against_device(const ItemPlan &item, PlanEntry &e, const JobSpec &spec, const DeviceInfo &device)
{
    if (!e.skip_reason.empty())
        return;
    const std::string name = e.rel.empty() ? item.item.target_name : split_rel(e.rel).second;
    if (std::string why = name_problem(name, device.limits); !why.empty() && !spec.rename_invalid) {
        e.left_out = LeftOut::RefusedName;
        e.skip_reason = why;
    } else if (e.kind == EntryKind::File && e.size > device.limits.max_file_size) {
        e.left_out = LeftOut::TooBig;
        e.skip_reason = "is larger than the destination's filesystem can store in one file (4 GiB - 1 on FAT32)";
    }
}

std::string mib_text(uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

} // namespace

// JobSpec::fit_to_space: the bytes files may take, when the free space is known. The margin (1/64 of it, at
// least 1 MiB and at most 64 MiB) is for folders, FAT's directory clusters and a journal's metadata.
// JobSpec::resume with fit_to_space: what the interrupted run left on the device for |e| needs no room again:
// all of a file it published (the job's quick check), the blocks of a big file's part file, which the resumed
// copy keeps. Without this a resumed "copy what fits" would count its own files against the space they took.
static uint64_t left_by_interrupted_run(const std::string &target, const PlanEntry &e, const FsLimits &limits)
{
    struct stat st {};
    if (sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        quick_check(e.size, e.mtime, uint64_t(st.st_size), st.st_mtim, limits))
        return uint64_t(st.st_blocks) * 512;
    const std::size_t slash = target.rfind('/') + 1; // absolute: there is one
    const std::string part = target.substr(0, slash) + part_name_for(target.substr(slash));
    if (sys().fstatat(AT_FDCWD, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        return uint64_t(st.st_blocks) * 512;
    return 0;
}

static std::optional<uint64_t> fit_budget(const JobSpec &spec, const DeviceInfo &device)
{
    if (!spec.fit_to_space || !device.free_bytes)
        return std::nullopt;
    const uint64_t free = *device.free_bytes;
    const uint64_t margin = std::clamp<uint64_t>(free / 64, 1 << 20, 64 << 20);
    return free > margin ? free - margin : 0;
}

JobPlan plan_job(const JobSpec &spec)
{
    JobPlan plan;
    Resolution res = resolve_destination(spec.sources, spec.destination, spec.rule);
    plan.errors = std::move(res.errors);
    if (!res.fatal.ok()) {
        plan.errors.push_back(res.fatal);
        return plan;
    }
    for (const CopyItem &item : res.items)
        plan.items.push_back(plan_item(item, [&](Status s) { plan.errors.push_back(std::move(s)); }));
    if (plan.items.empty())
        return plan;
    if (auto probed = probe_device(plan.items.front().item.target_dir); probed.ok()) {
        plan.device = probed.value();
        plan.device_known = true;
    } else {
        plan.device.writeback = WritebackMode::ChunkSync; // unknown filesystem: the mode that is right everywhere
    }
    uint64_t needed = 0;
    const uint64_t unit = std::max<uint64_t>(4096, plan.device.allocation_unit);
    const auto rounded = [unit](uint64_t bytes) { return (bytes + unit - 1) / unit * unit; };
    const std::optional<uint64_t> budget = fit_budget(spec, plan.device);
    // What a name already taken costs in space depends on what the job will do with it, when that is known now:
    // skipped, nothing; replaced, the difference, plus the largest such file once (old and new both stand until
    // the new one takes the name). Asked file by file, it is counted in full.
    const bool skip_taken = spec.conflict == ConflictPolicy::Skip && !spec.ask_conflict;
    const bool replace_taken = spec.conflict == ConflictPolicy::Overwrite && !spec.ask_conflict;
    uint64_t replace_peak = 0;
    for (ItemPlan &item : plan.items) {
        for (PlanEntry &e : item.entries) {
            check_against_device(item, e, spec, plan.device);
            // Rounded to what each file takes at least (a block, a FAT cluster); metadata is not counted, so this
            // catches the clear cases up front and ENOSPC mid-copy is still handled.
            uint64_t takes = rounded(e.allocated);
            if (budget && spec.resume && e.skip_reason.empty() && e.kind == EntryKind::File) {
                const uint64_t there = left_by_interrupted_run(
                    join(item.item.target_dir, target_rel(join(item.item.target_name, e.rel), spec, plan.device.limits)),
                    e, plan.device.limits);
                takes = takes > rounded(there) ? takes - rounded(there) : 0;
            }
            if (e.skip_reason.empty() && (e.kind == EntryKind::File || e.kind == EntryKind::Symlink) && !spec.resume) {
                // A folder onto a folder merges; a file or link onto any name in use is a conflict.
                const std::string target = join(item.item.target_dir,
                                                target_rel(join(item.item.target_name, e.rel), spec, plan.device.limits));
                struct stat st {};
                if (sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
                    JobPlan::TakenTarget t;
                    t.source = join(strip_trailing_slashes(item.item.source), e.rel);
                    t.target = target;
                    t.source_size = e.size;
                    t.source_mtime = e.mtime;
                    t.is_link = e.kind == EntryKind::Symlink;
                    t.existing.exists = true;
                    t.existing.is_dir = S_ISDIR(st.st_mode);
                    t.existing.size = uint64_t(st.st_size);
                    t.existing.mtime = st.st_mtim;
                    plan.taken.push_back(std::move(t));
                    const uint64_t held = S_ISREG(st.st_mode) ? rounded(uint64_t(st.st_blocks) * 512) : 0;
                    if (skip_taken) {
                        takes = 0;
                    } else if (replace_taken && S_ISREG(st.st_mode)) {
                        replace_peak = std::max(replace_peak, takes);
                        takes = takes > held ? takes - held : 0;
                    }
                }
            }
            if (budget && e.kind == EntryKind::File && e.skip_reason.empty() && needed + takes > *budget) {
                e.left_out = LeftOut::NoRoom;
                e.skip_reason = "no room left on the device for it (what fits was copied)";
            }
            if (!e.skip_reason.empty()) {
                plan.left_out.push_back(
                    {join(strip_trailing_slashes(item.item.source), e.rel), e.left_out, e.skip_reason});
                continue;
            }
            plan.files += e.kind == EntryKind::File || e.kind == EntryKind::Symlink;
            if (e.kind != EntryKind::File)
                continue;
            plan.total_bytes += e.size;
            needed += takes;
        }
    }
    needed += replace_peak;
    // Unknown free space (fusefat reports a size of 0) is never taken as full. A resumed copy finds much of itself
    // on the device already: it is not checked up front, and ENOSPC mid-copy says the same.
    if (plan.device.free_bytes && needed > *plan.device.free_bytes && !spec.resume)
        plan.space = Status::destination(ENOSPC, "space check", plan.device.mount_point)
                         .with_detail("not enough space: the copy needs " + mib_text(needed) + ", " +
                                      mib_text(*plan.device.free_bytes) + " free");
    return plan;
}

std::vector<std::string> JobPlan::problems() const
{
    std::vector<std::string> lines;
    for (const Status &s : errors)
        lines.push_back(s.message());
    if (!space.ok())
        lines.push_back(space.message());
    for (const LeftOutEntry &e : left_out)
        lines.push_back(e.path + ": " + e.why);
    return lines;
}

DiscardResult discard_unfinished(const JobSpec &spec)
{
    DiscardResult result;
    JobPlan plan = plan_job(spec);
    for (const ItemPlan &item : plan.items) {
        for (const PlanEntry &e : item.entries) {
            if (e.kind != EntryKind::File)
                continue;
            const auto [dir_rel, name] = split_rel(target_rel(join(item.item.target_name, e.rel), spec,
                                                              plan.device.limits));
            const std::string part = join(join(item.item.target_dir, dir_rel), part_name_for(name));
            if (sys().unlinkat(AT_FDCWD, part.c_str(), 0) == 0)
                ++result.removed;
            else if (errno != ENOENT && errno != ENOTDIR)
                result.errors.push_back(Status::destination(errno, "remove part file", part));
        }
    }
    return result;
}

JobSummary run_copy_job(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                        const JobEventSink &sink)
{
    return JobRunner(spec, control, counters, sink).run();
}

} // namespace sanecopy
