// SPDX-License-Identifier: GPL-2.0-or-later
#include "copy_job.h"

#include "copy_file.h"
#include "device_probe.h"
#include "fd.h"
#include "sys.h"
#include "tree_plan.h"
#include "verify.h"

#include <fcntl.h>
#include <map>
#include <optional>
#include <cctype>
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

SharedDirFd open_dir(int at, const char *path, Status &error, const std::string &display, bool nofollow)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
    int fd = retry_eintr([&] { return sys().openat(at, path, flags, 0); });
    if (fd < 0) {
        error = Status::from_errno(errno, "open folder", display);
        return {};
    }
    return std::make_shared<const UniqueFd>(fd);
}

// The folders of one side of a copy, opened component by component from a pinned root and kept open while
// the walk is below them. Entries arrive in pre-order, so the cache is a path of open folders.
class DirCache {
public:
    DirCache(SharedDirFd root, std::string root_display) : root_(std::move(root)), display_(std::move(root_display))
    {
    }

    SharedDirFd get(const std::string &rel, Status &error)
    {
        if (rel.empty())
            return root_;
        if (auto it = open_.find(rel); it != open_.end())
            return it->second;
        // Keep only the ancestors of |rel|.
        for (auto it = open_.begin(); it != open_.end();) {
            const std::string &p = it->first;
            const bool ancestor = rel.size() > p.size() && rel.compare(0, p.size(), p) == 0 && rel[p.size()] == '/';
            it = ancestor ? std::next(it) : open_.erase(it);
        }
        const auto slash = rel.rfind('/');
        SharedDirFd parent = slash == std::string::npos ? root_ : get(rel.substr(0, slash), error);
        if (!parent)
            return {};
        const std::string name = slash == std::string::npos ? rel : rel.substr(slash + 1);
        SharedDirFd dir = open_dir(parent->get(), name.c_str(), error, display_ + "/" + rel, true);
        if (dir)
            open_[rel] = dir;
        return dir;
    }

    const std::string &display() const { return display_; }
    const SharedDirFd &root() const { return root_; }

private:
    SharedDirFd root_;
    std::string display_;
    std::map<std::string, SharedDirFd> open_;
};

std::string join(const std::string &a, const std::string &b)
{
    if (a.empty())
        return b;
    if (b.empty())
        return a;
    return a + "/" + b;
}

bool timespec_after(const struct timespec &a, const struct timespec &b)
{
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

std::string join_notes(const std::string &a, const std::string &b) { return a.empty() ? b : b.empty() ? a : a + "; " + b; }

std::pair<std::string, std::string> split_rel(const std::string &rel)
{
    const auto slash = rel.rfind('/');
    if (slash == std::string::npos)
        return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

struct BatchFile {
    PartFile part;
    std::string source;
    uint64_t copied = 0;
    SharedDirFd dir;
    std::string dir_display;
    ConflictPolicy policy = ConflictPolicy::Refuse;
    UniqueFd source_fd; // kept for verify
    std::string note;   // for its file_done event
};

struct FinishedDir {
    std::string rel; // below the destination root of its item
    mode_t mode;
    struct timespec mtime;
};

class JobRunner {
public:
    JobRunner(const JobSpec &spec, const JobControl &control, ProgressCounters &counters, const JobEventSink &sink)
        : spec_(spec), control_(control), counters_(counters), sink_(sink), session_(CopyRoute{}, spec.limits)
    {
        session_.checkpoint_seconds = spec.checkpoint_seconds;
    }

    JobSummary run();

private:
    void emit(JobEvent e) { sink_(e); }
    // The destination's device went away (a pulled stick): |s| failed on the destination side, in a way only a
    // missing device explains.
    bool device_gone(const Status &s) const;
    void report_error(Status s, const std::string &path, bool source_side = false);
    // |chosen|: the conflict policy asked for this skip; anything else is a requested file not copied.
    void report_skip(const std::string &path, const std::string &why, bool chosen = false);
    void report_done(const std::string &source, std::string target, uint64_t bytes, std::string note = {});
    Status verify_part(const PartFile &part, int source, uint64_t size);
    bool stopping() const { return aborted_ || stopped_by_answer_ || control_.cancel_requested(); }

    void run_item(const ItemPlan &plan);
    void copy_entry(const ItemPlan &plan, const PlanEntry &entry, DirCache &src, DirCache &dst,
                    std::vector<FinishedDir> &dirs);
    Status copy_regular(const std::string &source, const SharedDirFd &src_dir, const std::string &name,
                        const PlanEntry &entry, const SharedDirFd &dst_dir, const std::string &dst_display,
                        const std::string &dst_name, ConflictPolicy policy, const std::string &note);
    void flush_batch();
    void finish_dirs(DirCache &dst, std::vector<FinishedDir> &dirs);

    bool syncs() const { return device_.writeback != WritebackMode::None; }
    // The destination path for a source path below the item: each component made storable when the spec
    // asks for safe names, so a renamed folder's contents follow it.
    std::string target_rel(const std::string &rel) const;
    // For the file_done event: why the name changed, if it did.
    std::string rename_note(const std::string &rel) const;

    const JobSpec &spec_;
    const JobControl &control_;
    ProgressCounters &counters_;
    const JobEventSink &sink_;
    CopySession session_;
    DeviceInfo device_;
    JobSummary summary_;
    bool aborted_ = false;
    bool device_removed_ = false; // the destination's device went away mid-job
    bool stopped_by_answer_ = false; // "Cancel" answered to a question

    std::vector<BatchFile> batch_;
    uint64_t batch_bytes_ = 0;
    std::size_t batch_files_ = 256;
    // Targets waiting in the batch, as (folder, name) with the name case-folded where the filesystem ignores
    // case: a second file aiming at one of them must wait for the batch, or the two would share a part file.
    std::set<std::pair<int, std::string>> batch_names_;
    std::pair<int, std::string> batch_key(int dir, const std::string &name) const;
    SharedDirFd any_dest_dir_; // for syncfs
};

bool from_source(const Status &s)
{
    return s.op() == kReadSource || s.op() == "open source" || s.op() == "stat source";
}

bool JobRunner::device_gone(const Status &s) const
{
    return !from_source(s) && is_device_fatal(s.err()) &&
           (device_removed_ || device_removed(s.err(), device_, "/sys"));
}

void JobRunner::report_error(Status s, const std::string &path, bool source_side)
{
    ++summary_.errors;
    // Only the destination failing ends the job: a source that can't be read is that file's problem.
    if (!source_side && !from_source(s) && is_device_fatal(s.err())) {
        aborted_ = true;
        // A pulled stick shows as ENODEV, ENXIO or EIO depending on where the copy was; say what happened
        // rather than which call saw it.
        if (device_gone(s)) {
            device_removed_ = true;
            const std::string seen = s.code().message() + (s.op().empty() ? "" : " in " + s.op());
            Status removed(s.code(), s.op(), s.path());
            s = std::move(removed).with_detail("the device was removed before the copy finished (" + seen + ")");
        }
    }
    JobEvent e;
    e.kind = JobEvent::Kind::Error;
    e.path = path;
    e.message = s.message();
    e.status = std::move(s);
    emit(std::move(e));
}

void JobRunner::report_skip(const std::string &path, const std::string &why, bool chosen)
{
    ++summary_.files_skipped;
    if (!chosen)
        ++summary_.files_refused;
    JobEvent e;
    e.kind = JobEvent::Kind::Skipped;
    e.path = path;
    e.message = path + ": " + why;
    emit(std::move(e));
}

std::pair<int, std::string> JobRunner::batch_key(int dir, const std::string &name) const
{
    std::string key = name;
    if (device_.limits.forbids_fat_chars) // FAT, exFAT, NTFS: names match whatever their case
        for (char &c : key)
            c = char(std::tolower(static_cast<unsigned char>(c)));
    return {dir, key};
}

std::string JobRunner::target_rel(const std::string &rel) const
{
    if (!spec_.rename_invalid)
        return rel;
    std::string out;
    size_t start = 0;
    while (start <= rel.size()) {
        const size_t slash = rel.find('/', start);
        const std::string part = rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        out = join(out, safe_name(part, device_.limits));
        if (slash == std::string::npos)
            break;
        start = slash + 1;
    }
    return out;
}

std::string JobRunner::rename_note(const std::string &rel) const
{
    const std::string name = split_rel(rel).second;
    const std::string why = name_problem(name, device_.limits);
    return why.empty() ? std::string() : "renamed to \"" + safe_name(name, device_.limits) + "\": the name " + why;
}

void JobRunner::report_done(const std::string &source, std::string target, uint64_t bytes, std::string note)
{
    ++summary_.files_copied;
    summary_.bytes += bytes;
    counters_.files_done.fetch_add(1);
    JobEvent e;
    e.path = source;
    e.target = std::move(target);
    e.bytes = bytes;
    e.message = std::move(note);
    emit(std::move(e));
}

JobSummary JobRunner::run()
{
    const double started = monotonic_seconds();
    // A batched file holds a descriptor (two with verify) until its batch syncs: keep a batch well inside the
    // process's limit, other lanes and the GUI included.
    batch_files_ = spec_.batch_files;
    if (struct rlimit rl {}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        batch_files_ = std::max<std::size_t>(8, std::min<std::size_t>(batch_files_, std::size_t(rl.rlim_cur) / 8));
    counters_.state.store(JobState::Running);
    JobPlan plan = plan_job(spec_);
    for (Status &s : plan.errors) {
        // Sources that can't be read; a destination that can't be used is the one plan error that is ours.
        const bool destination = s.op() == "destination" || s.op() == "destination folder" || s.op() == "usage";
        const std::string path = s.path();
        report_error(std::move(s), path, !destination);
    }
    device_ = plan.device;
    counters_.total_bytes.store(plan.total_bytes);
    counters_.files_total.store(plan.files);
    std::vector<ItemPlan> plans = std::move(plan.items);
    if (!plan.space.ok()) {
        report_error(plan.space, spec_.destination);
        plans.clear();
    }

    for (const ItemPlan &plan : plans) {
        if (stopping())
            break;
        run_item(plan);
    }
    flush_batch();
    batch_.clear(); // unflushed parts (cancel, abort) are removed here
    if (syncs() && any_dest_dir_ && !device_removed_) {
        // Metadata of everything this job touched (folders, times, the journal) reaches the device too, so
        // "done" and "cancelled" both mean there is nothing left to write.
        if (retry_eintr([&] { return sys().syncfs(any_dest_dir_->get()); }) < 0)
            report_error(Status::from_errno(errno, "syncfs", spec_.destination), spec_.destination);
    }

    summary_.cancelled = control_.cancel_requested() || stopped_by_answer_;
    summary_.aborted = aborted_;
    summary_.device_removed = device_removed_;
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

void JobRunner::run_item(const ItemPlan &plan)
{
    if (plan.entries.empty())
        return;
    const CopyItem &item = plan.item;
    Status error;
    SharedDirFd src_root = open_dir(AT_FDCWD, item.source_dir.c_str(), error, item.source_dir, false);
    SharedDirFd dst_root = src_root ? open_dir(AT_FDCWD, item.target_dir.c_str(), error, item.target_dir, false)
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

    DirCache src(src_root, item.source_dir);
    DirCache dst(dst_root, item.target_dir);
    std::vector<FinishedDir> dirs;
    std::optional<std::string> failed_dir; // a folder that could not be created: what it holds is passed over
    auto below = [](const std::string &rel, const std::string &dir) {
        return dir.empty() || (rel.size() > dir.size() && rel.compare(0, dir.size(), dir) == 0 && rel[dir.size()] == '/');
    };
    for (const PlanEntry &entry : plan.entries) {
        if (control_.pause_requested()) {
            // Between files too, or a tree of small files would never pause: the batch goes to the device first.
            flush_batch();
            counters_.state.store(JobState::Paused);
            control_.wait_while_paused();
            counters_.state.store(JobState::Running);
        }
        if (stopping())
            break;
        if (failed_dir && below(entry.rel, *failed_dir))
            continue;
        const std::size_t errors_before = summary_.errors;
        copy_entry(plan, entry, src, dst, dirs);
        if (entry.kind == EntryKind::Directory && summary_.errors != errors_before)
            failed_dir = entry.rel;
    }
    flush_batch();
    if (!stopping())
        finish_dirs(dst, dirs);
}

void JobRunner::copy_entry(const ItemPlan &plan, const PlanEntry &entry, DirCache &src, DirCache &dst,
                           std::vector<FinishedDir> &dirs)
{
    const CopyItem &item = plan.item;
    const std::string src_rel = join(item.source_name, entry.rel);
    const std::string dst_rel = target_rel(join(item.target_name, entry.rel));
    const std::string source = join(strip_trailing_slashes(item.source), entry.rel);
    if (!entry.skip_reason.empty()) {
        if (entry.kind == EntryKind::Special && entry.rel.empty()) {
            // Named on the command line: the user asked for exactly this, so not copying it is a failure.
            report_error(Status::from_errno(EINVAL, "copy", source).with_detail(entry.skip_reason), source);
            return;
        }
        report_skip(source, entry.skip_reason);
        return;
    }
    auto [src_parent_rel, name] = split_rel(src_rel);
    auto [dst_parent_rel, dst_name] = split_rel(dst_rel);
    Status error;
    SharedDirFd dst_dir = dst.get(dst_parent_rel, error);
    SharedDirFd src_dir = dst_dir ? src.get(src_parent_rel, error) : SharedDirFd{};
    if (!src_dir) {
        report_error(std::move(error), source);
        return;
    }
    const std::string dst_display = join(dst.display(), dst_parent_rel);

    switch (entry.kind) {
    case EntryKind::Special:
        return; // reported through skip_reason
    case EntryKind::Directory: {
        // Created owner-writable so it can be filled; its real mode is set once it is full.
        if (sys().mkdirat(dst_dir->get(), dst_name.c_str(), 0700) < 0) {
            struct stat st {};
            if (errno != EEXIST || sys().fstatat(dst_dir->get(), dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                !S_ISDIR(st.st_mode)) {
                report_error(Status::from_errno(errno == EEXIST ? ENOTDIR : errno, "mkdir", dst_display + "/" + dst_name),
                             source);
                return;
            }
            // An existing folder: the copy merges into it and leaves its mode alone.
            return;
        }
        dirs.push_back({dst_rel, entry.mode, entry.mtime});
        return;
    }
    case EntryKind::Symlink: {
        std::string target(4096, '\0');
        ssize_t n = sys().readlinkat(src_dir->get(), name.c_str(), target.data(), target.size());
        if (n < 0) {
            report_error(Status::from_errno(errno, "readlink", source), source);
            return;
        }
        target.resize(size_t(n));
        struct stat st {};
        if (sys().fstatat(dst_dir->get(), dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
            if (spec_.conflict == ConflictPolicy::Skip) {
                report_skip(source, "already exists at the destination", true);
                return;
            }
        }
        std::string final_name;
        if (Status s = publish_symlink(dst_dir, dst_display, dst_name, target, entry.mtime, spec_.conflict, &final_name);
            !s) {
            report_error(std::move(s), source);
            return;
        }
        report_done(source, dst_display + "/" + final_name, 0,
                    spec_.rename_invalid ? rename_note(join(item.target_name, entry.rel)) : std::string());
        return;
    }
    case EntryKind::File:
        break;
    }

    // A regular file: conflicts are settled before its source is even opened. A target the batch is still
    // holding is settled first, so it is seen here as the file it is about to be.
    if (batch_names_.count(batch_key(dst_dir->get(), dst_name)))
        flush_batch();
    ConflictPolicy policy = spec_.conflict;
    struct stat existing {};
    if (sys().fstatat(dst_dir->get(), dst_name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
        if (spec_.ask_conflict) {
            ConflictQuestion q;
            q.source = source;
            q.target = dst_display + "/" + dst_name;
            q.source_size = entry.size;
            q.target_size = uint64_t(existing.st_size);
            q.target_is_dir = S_ISDIR(existing.st_mode);
            switch (spec_.ask_conflict(q)) {
            case ConflictAnswer::Overwrite:
                policy = ConflictPolicy::Overwrite;
                break;
            case ConflictAnswer::Skip:
                policy = ConflictPolicy::Skip;
                break;
            case ConflictAnswer::Rename:
                policy = ConflictPolicy::Rename;
                break;
            case ConflictAnswer::Cancel:
                stopped_by_answer_ = true;
                return;
            }
        }
        if (policy == ConflictPolicy::Skip) {
            report_skip(source, "already exists at the destination", true);
            return;
        }
        if (policy == ConflictPolicy::Refuse) {
            report_error(Status::from_errno(EEXIST, "exists", dst_display + "/" + dst_name)
                             .with_detail("already exists; not overwritten (use --overwrite or --skip-existing)"),
                         source);
            return;
        }
        if (policy == ConflictPolicy::Overwrite && S_ISDIR(existing.st_mode)) {
            report_error(Status::from_errno(EISDIR, "overwrite", dst_display + "/" + dst_name)
                             .with_detail("is a folder; a file cannot replace it"),
                         source);
            return;
        }
    }
    for (;;) {
        Status s = copy_regular(source, src_dir, name, entry, dst_dir, dst_display, dst_name, policy,
                                spec_.rename_invalid ? rename_note(join(item.target_name, entry.rel)) : std::string());
        if (s.ok() || s.err() == ECANCELED)
            return;
        // A pulled stick is not a question: nothing the user answers brings it back into this copy.
        if (!spec_.ask_error || device_gone(s)) {
            report_error(std::move(s), source);
            return;
        }
        switch (spec_.ask_error(s, source)) {
        case ErrorAnswer::Retry:
            continue;
        case ErrorAnswer::Skip:
            report_skip(source, s.message());
            return;
        case ErrorAnswer::Abort:
            report_error(std::move(s), source);
            aborted_ = true;
            return;
        }
    }
}

Status JobRunner::copy_regular(const std::string &source, const SharedDirFd &src_dir, const std::string &name,
                               const PlanEntry &entry, const SharedDirFd &dst_dir, const std::string &dst_display,
                               const std::string &dst_name, ConflictPolicy policy, const std::string &note)
{
    // O_NONBLOCK: if the file was swapped for a FIFO since the walk, opening it must not wait for a writer.
    UniqueFd in(retry_eintr([&] {
        return sys().openat(src_dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
                            0);
    }));
    if (!in)
        return Status::from_errno(errno, "open source", source);
    struct stat st {};
    if (sys().fstat(in.get(), &st) < 0)
        return Status::from_errno(errno, "stat source", source);
    if (!S_ISREG(st.st_mode)) {
        report_skip(source, std::string("is a ") + special_kind(st.st_mode) + "; only files, folders and links are copied");
        return {};
    }
    sys().fcntl_setfl(in.get(), O_RDONLY);
    counters_.set_current_file(source);
    const uint64_t size = uint64_t(st.st_size);

    const bool small = size <= spec_.small_file_limit && syncs();
    if (!small)
        flush_batch(); // keeps durability in order and the dirty budget to one of the two at a time

    // A part file left by an interrupted run (SIGKILL, a crash, a pulled stick) is resumed from its verified
    // prefix. Small files simply start over.
    uint64_t start = 0;
    Result<PartFile> part = Status::from_errno(ENOENT, "open", dst_name);
    if (!small && syncs()) {
        uint64_t have = 0;
        part = PartFile::reopen(dst_dir, dst_display, dst_name, have);
        struct stat part_st {};
        // A source changed since the part was last written is another file now: its old prefix is not ours.
        const bool source_newer = part.ok() && (sys().fstat(part->fd(), &part_st) < 0 ||
                                                 timespec_after(st.st_mtim, part_st.st_mtim) ||
                                                 timespec_after(st.st_ctim, part_st.st_mtim));
        if (part.ok() && !source_newer) {
            auto reader = part->open_for_reading();
            start = reader.ok() ? resume_point(in.get(), size, reader->get(), have) : 0;
            // Whatever lies past the verified prefix is not trusted: cut it off.
            if (start == 0 || sys().ftruncate(part->fd(), off_t(start)) < 0) {
                start = 0;
                part = Status::from_errno(ENOENT, "open", dst_name);
            }
        }
    }
    if (!part.ok())
        part = PartFile::create(dst_dir, dst_display, dst_name);
    if (!part.ok())
        return part.status();
    PartFile &pf = part.value();
    // After the device failed (EIO, the stick pulled out), what is on it stays as a part file for the next run to
    // resume; any other failure takes its part file away (ENOSPC: so the space comes back).
    auto fail = [&](Status error) {
        if (!small && !from_source(error) && keeps_part_file(error.err()))
            pf.keep();
        return error;
    };
    if (start > 0) {
        counters_.written_bytes.fetch_add(start);
        counters_.durable_bytes.fetch_add(start);
        counters_.unwritten_bytes.fetch_add(start);
    }
    const bool sparse = uint64_t(st.st_blocks) * 512 < size;
    if (!small && syncs() && !sparse) {
        // Reserve the space now: a full stick is found before the copy, not at 97 %. KEEP_SIZE leaves the
        // file's size growing with its data. Filesystems without fallocate just copy. Small files skip it: the
        // up-front space check covers them, and a syscall each is what makes thousands of them slow. A sparse
        // source skips it too: reserving its whole size would fill its holes.
        if (sys().fallocate(pf.fd(), FALLOC_FL_KEEP_SIZE, off_t(start), off_t(size - start)) < 0 &&
            (errno == ENOSPC || errno == EDQUOT))
            return Status::from_errno(errno, "allocate", pf.display_path());
    }
    FileCopyResult copied;
    if (!small && syncs()) {
        // The checkpoint: the part file's size and allocation, and once its folder entry, on the device.
        bool entry_synced = false;
        session_.checkpoint = [&]() -> Status {
            if (Status ds = pf.sync_data(device_.data_sync); !ds)
                return ds;
            if (!entry_synced) {
                entry_synced = true;
                return sync_directory(dst_dir->get(), dst_display);
            }
            return {};
        };
    }
    struct ForgetCheckpoint {
        CopySession &session;
        ~ForgetCheckpoint() { session.checkpoint = nullptr; }
    } forget{session_};
    Status s = small ? copy_small_file_data(in.get(), pf.fd(), size, session_, counters_, pf.display_path(), copied)
                     : copy_file_data(in.get(), pf.fd(), size, session_, control_, counters_, pf.display_path(),
                                      copied, start);
    if (s)
        s = pf.set_attributes(entry.mode, entry.mtime);
    if (!s)
        return fail(std::move(s)); // unless kept, the part file is removed as |part| goes
    if (small) {
        batch_bytes_ += copied.copied;
        // The batch holds the part's descriptor until its sync; the source's only when verify needs it.
        batch_.push_back({std::move(pf), source, copied.copied, dst_dir, dst_display, policy,
                          spec_.verify ? std::move(in) : UniqueFd(), note});
        batch_names_.insert(batch_key(dst_dir->get(), dst_name));
        if (batch_bytes_ >= spec_.batch_bytes || batch_.size() >= batch_files_)
            flush_batch();
        return {};
    }
    if (syncs()) {
        if (Status ds = pf.sync_data(device_.data_sync); !ds)
            return fail(std::move(ds));
    }
    session_.count_durable(copied.copied - copied.durable, counters_);
    if (spec_.verify) {
        if (Status vs = verify_part(pf, in.get(), copied.copied); !vs)
            return fail(std::move(vs));
    }
    std::string final_name;
    if (Status cs = pf.commit(policy, &final_name); !cs)
        return cs;
    if (syncs()) {
        if (Status ds = sync_directory(dst_dir->get(), dst_display); !ds)
            return ds;
    }
    std::string notes = note;
    if (start > 0)
        notes = join_notes(notes, "resumed after " + std::to_string(start >> 20) + " MiB already on the device");
    report_done(source, dst_display + "/" + final_name, copied.copied, notes);
    return {};
}

Status JobRunner::verify_part(const PartFile &part, int source, uint64_t size)
{
    auto reader = part.open_for_reading();
    if (!reader.ok())
        return reader.status();
    counters_.set_current_file(part.display_path() + " (verifying)");
    return verify_copy(source, reader->get(), size, part.display_path());
}

void JobRunner::flush_batch()
{
    if (batch_.empty())
        return;
    std::vector<BatchFile> batch = std::move(batch_);
    batch_.clear();
    batch_names_.clear();
    batch_bytes_ = 0;
    if (control_.cancel_requested())
        return; // the parts are removed as |batch| goes

    // One sync for the whole batch. On a block filesystem syncfs writes every file's data and the journal in
    // one go; FUSE and network filesystems don't pass syncfs on reliably, so there each file is fdatasync'ed
    // (their writeback was started file by file, so these mostly wait).
    Status s;
    if (device_.writeback == WritebackMode::Windows) {
        if (retry_eintr([&] { return sys().syncfs(batch.front().part.fd()); }) < 0)
            s = Status::from_errno(errno, "syncfs", batch.front().dir_display);
    } else {
        for (BatchFile &f : batch) {
            if (s = f.part.sync_data(); !s)
                break;
        }
    }
    if (!s) {
        for (BatchFile &f : batch)
            report_error(Status(s.code(), s.op(), f.part.display_path()), f.source);
        return;
    }
    for (BatchFile &f : batch) {
        session_.count_durable(f.copied, counters_);
        if (session_.route.evict) // on the device now, so clean: nothing keeps them in memory
            sys().fadvise(f.part.fd(), 0, 0, POSIX_FADV_DONTNEED);
    }
    if (spec_.verify) {
        std::vector<BatchFile> verified;
        for (BatchFile &f : batch) {
            if (Status vs = verify_part(f.part, f.source_fd.get(), f.copied); !vs)
                report_error(std::move(vs), f.source); // its part file goes with |batch|
            else
                verified.push_back(std::move(f));
        }
        batch = std::move(verified);
        if (batch.empty())
            return;
    }

    std::vector<std::pair<BatchFile *, std::string>> published;
    std::set<int> dirs;
    for (BatchFile &f : batch) {
        f.part.close_fd().ignore(); // synced already; the name is what is left to publish
        std::string final_name;
        if (Status cs = f.part.commit(f.policy, &final_name); !cs) {
            report_error(std::move(cs), f.source);
            continue;
        }
        published.emplace_back(&f, f.dir_display + "/" + final_name);
        dirs.insert(f.dir->get());
    }
    // The renames, made durable together.
    if (device_.writeback == WritebackMode::Windows) {
        if (retry_eintr([&] { return sys().syncfs(batch.front().dir->get()); }) < 0)
            s = Status::from_errno(errno, "syncfs", batch.front().dir_display);
    } else {
        for (BatchFile &f : batch) {
            if (dirs.erase(f.dir->get()) && !(s = sync_directory(f.dir->get(), f.dir_display)))
                break;
        }
    }
    for (auto &[f, target] : published) {
        if (!s) {
            report_error(Status(s.code(), s.op(), target), f->source);
            continue;
        }
        report_done(f->source, target, f->copied, f->note);
    }
}

void JobRunner::finish_dirs(DirCache &dst, std::vector<FinishedDir> &dirs)
{
    // Deepest first: setting a folder's time must come after everything inside it was created.
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
        Status error;
        auto [parent_rel, name] = split_rel(it->rel);
        SharedDirFd dir = dst.get(it->rel, error);
        if (!dir) {
            report_error(std::move(error), it->rel);
            continue;
        }
        const std::string display = join(dst.display(), it->rel);
        if (Status s = apply_attributes(dir->get(), it->mode, it->mtime, display); !s) {
            report_error(std::move(s), display);
            continue;
        }
        if (syncs() && device_.writeback != WritebackMode::Windows) {
            // New folders' entries in their parents: the job's final syncfs covers block filesystems.
            SharedDirFd parent = dst.get(parent_rel, error);
            if (parent)
                sync_directory(parent->get(), display).ignore();
        }
    }
}

} // namespace

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
        // Without knowing the filesystem, take the mode that is right everywhere.
        plan.device.writeback = WritebackMode::ChunkSync;
    }

    uint64_t needed = 0;
    for (ItemPlan &item : plan.items) {
        for (PlanEntry &e : item.entries) {
            const std::string source = join(strip_trailing_slashes(item.item.source), e.rel);
            if (e.skip_reason.empty()) {
                const std::string name = e.rel.empty() ? item.item.target_name : split_rel(e.rel).second;
                if (std::string why = name_problem(name, plan.device.limits); !why.empty() && !spec.rename_invalid)
                    e.skip_reason = why;
                else if (e.kind == EntryKind::File && e.size > plan.device.limits.max_file_size)
                    e.skip_reason = "is larger than the destination's filesystem can store in one file "
                                    "(4 GiB - 1 on FAT32)";
            }
            if (!e.skip_reason.empty()) {
                plan.left_out.emplace_back(source, e.skip_reason);
                continue;
            }
            if (e.kind == EntryKind::File) {
                plan.total_bytes += e.size;
                ++plan.files;
                // Block-rounded, since every file takes at least one block; metadata is not counted, so this
                // catches the clear cases up front and ENOSPC mid-copy is still handled.
                needed += (e.allocated + 4095) / 4096 * 4096;
            } else if (e.kind == EntryKind::Symlink) {
                ++plan.files;
            }
        }
    }
    // Unknown free space (fusefat reports a size of 0) is never taken as full.
    if (plan.device.free_bytes && needed > *plan.device.free_bytes) {
        auto mib = [](uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
        plan.space = Status::from_errno(ENOSPC, "space check", plan.device.mount_point)
                         .with_detail("not enough space: the copy needs " + mib(needed) + ", " +
                                      mib(*plan.device.free_bytes) + " free");
    }
    return plan;
}

std::vector<std::string> JobPlan::problems() const
{
    std::vector<std::string> lines;
    for (const Status &s : errors)
        lines.push_back(s.message());
    if (!space.ok())
        lines.push_back(space.message());
    for (const auto &[path, why] : left_out)
        lines.push_back(path + ": " + why);
    return lines;
}

JobSummary run_copy_job(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                        const JobEventSink &sink)
{
    return JobRunner(spec, control, counters, sink).run();
}

} // namespace sanecopy
