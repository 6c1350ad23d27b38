// SPDX-License-Identifier: GPL-2.0-or-later
// A copy job's run: its items, folders and links in order, pause and cancel, and its end.
#include "job_runner.h"

#include "i18n.h"
#include "sys.h"
#include "tree_plan.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

namespace sanecopy {

namespace job_detail {

JobRunner::JobRunner(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                     const JobEventSink &sink)
    : spec_(spec), control_(control), counters_(counters), sink_(sink), session_(CopyRoute {}, spec.limits.checked())
{
    session_.checkpoint_seconds = spec.checkpoint_seconds;
}

SmallFileBatch::Hooks JobRunner::batch_hooks()
{
    SmallFileBatch::Hooks hooks;
    hooks.durable = [this](const BatchedFile &f) {
        restart_rate_after_count();
        session_.count_durable(f.bytes, counters_);
    };
    if (spec_.verify)
        hooks.verify = [this](const BatchedFile &f) { return verify_part(f.part, f.source_fd.get(), f.bytes); };
    hooks.failed = [this](BatchedFile &f, Status s) {
        take_back({f.bytes, f.durable ? f.bytes : 0, 0});
        // Not written because the job stops (DataToWrite::stop): not an error of its own, as a cancelled copy isn't.
        if (s.err() == ECANCELED && stopping())
            return;
        report_error(std::move(s), f.source);
    };
    hooks.published = [this](BatchedFile &f) {
        if (spec_.move)
            remove_source(f.source_dir, f.source_name, f.source, f.stamp);
        report_done(f.source, f.target, f.bytes, f.note, f.digest);
    };
    if (counting_.valid())
        hooks.before_publish = [this] { return wait_for_plan(); };
    return hooks;
}

JobSummary JobRunner::run()
{
    const double started = monotonic_seconds();
    counters_.state.store(JobState::Running);
    JobPlan plan = begin_plan();
    start(plan);
    for (const ItemPlan &item : plan.items) {
        if (stopping())
            break;
        run_item(item);
    }
    end_plan(true);
    finish();
    summary_.seconds = monotonic_seconds() - started;
    counters_.state.store(summary_.cancelled ? JobState::Cancelled : summary_.ok() ? JobState::Done : JobState::Failed);
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.path = spec_.destination;
    done.bytes = summary_.bytes;
    emit(done);
    return summary_;
}

// With JobSpec::count_while_copying a tree's walk takes a thread of its own and the run begins with the plan's
// first half (resolved and probed): a million files are seconds of walking, which came before the first byte.
// The run walks each item whether or not the plan finds it readable; what can't be read is reported once, by
// whichever walk meets it first.
JobPlan JobRunner::begin_plan()
{
    PlanWatch watch;
    watch.first_report = [this](const std::string &path) { return unreadable_.first(path); };
    JobPlan plan = resolve_for_run(spec_);
    const bool beside =
        spec_.count_while_copying && !spec_.move && !spec_.fit_to_space &&
        std::any_of(plan.items.begin(), plan.items.end(), [](const ItemPlan &i) { return i.item.source_is_dir; });
    if (beside) {
        watch.counted = [this](uint64_t files, uint64_t bytes) {
            counters_.files_total.store(files);
            counters_.total_bytes.store(bytes);
        };
        watch.stop = [this] { return control_.cancel_requested(); };
        // A big file being copied when the plan finds too little room stops there, not at its end.
        session_.stop = [this] { return plan_gate_.refused(); };
        resolved_errors_ = plan.errors.size();
        counters_.counting.store(true);
        rate_restarted_ = false;
        try {
            counting_ = std::async(std::launch::async, [this, watch, counted = plan]() mutable {
                // Opened however the walk ends: a publish waiting for it must not wait for ever.
                struct Opens {
                    PlanGate &gate;
                    ProgressCounters &counters;
                    bool room = false;
                    ~Opens()
                    {
                        counters.counting.store(false);
                        gate.open(room);
                    }
                } opens {plan_gate_, counters_};
                count_plan(counted, spec_, watch);
                counters_.files_total.store(counted.files);
                counters_.total_bytes.store(counted.total_bytes);
                // A walk a cancel cut short found room for part of it only: nothing is let through. An interrupt
                // (JobControl::interrupt) keeps what is durable for the rerun that resumes, as without the count.
                opens.room = counted.space.ok() && (!control_.cancel_requested() || control_.keeps_partial());
                return std::move(counted);
            });
            for (ItemPlan &item : plan.items)
                item.found = true;
            return plan;
        } catch (const std::system_error &) { // no thread to be had: counted first, as without the option
            counters_.counting.store(false);
        }
    }
    count_plan(plan, spec_, watch);
    plan_gate_.open(true); // start() refuses a plan without room before anything is written
    return plan;
}

// The copy waited for the count at its names with nothing moving: a rate measured across that wait would be the
// count's, not the device's (24 B/s and an ETA of eleven hours, the moment a million files' count ended). The
// first rate after it is measured from its end, as after a pause.
void JobRunner::restart_rate_after_count()
{
    if (rate_restarted_ || !plan_gate_.ended())
        return;
    session_.meter.restart_clock(monotonic_seconds(), session_.durable_total);
    rate_restarted_ = true;
}

void JobRunner::end_plan(bool wait)
{
    if (!counting_.valid() || (!wait && !plan_gate_.ended()))
        return;
    restart_rate_after_count();
    JobPlan counted = counting_.get();
    for (std::size_t i = resolved_errors_; i < counted.errors.size(); ++i) {
        const std::string path = counted.errors[i].path();
        report_error(std::move(counted.errors[i]), path);
    }
    if (!counted.space.ok())
        report_error(counted.space, spec_.destination);
}

// Two entries can meet under one name with more than one item, where the filesystem folds case, or where
// invalid names are changed; only overwrite (or a question) would let the second replace the first.
bool JobRunner::own_copies_can_meet() const
{
    const bool meet = !single_item_ || folds_case() || spec_.rename_invalid;
    return meet && (spec_.conflict == ConflictPolicy::Overwrite || spec_.ask_conflict);
}

void JobRunner::start(JobPlan &plan)
{
    for (Status &s : plan.errors) {
        const std::string path = s.path();
        report_error(std::move(s), path);
    }
    device_ = plan.device;
    planned_root_ = std::move(plan.target_root); // held here alone, so a replaced folder is let go
    // With one item no other of this job can take its target's name (under another case, or by a move's rename),
    // so what resolving found there holds for the run (CopyItem::target_absent).
    single_item_ = plan.items.size() == 1;
    guards_own_copies_ = own_copies_can_meet();
    const bool share = is_network_share(plan.device);
    counters_.share.store(share);
    if (share) {
        session_.limits = share_chunk_limits(spec_.limits, takes_direct_writes(plan.device)).checked();
        session_.meter.measure_first_over(share_first_rate_bytes(session_.limits));
    }
    if (session_.limits.request == 0)
        session_.limits.request = plan.device.max_request_bytes;
    // The plan is done: from here a destination that takes nothing (a share that is down from the start) is a
    // stall, though no byte has moved yet.
    control_.beat();
    if (!counting_.valid()) {
        counters_.total_bytes.store(plan.total_bytes);
        counters_.files_total.store(plan.files);
    }
    if (!plan.space.ok()) {
        report_error(plan.space, spec_.destination);
        plan.items.clear();
    }
    // A batched file holds a descriptor (two with verify) until its group is published, and up to three groups
    // are open at a time (one filling, two settling onto a share): keep that well inside the process's limit,
    // other lanes and the GUI included.
    BatchLimits limits {spec_.batch_bytes, spec_.batch_files};
    if (share)
        limits.settle_threads = kShareSettleThreads;
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
    if (ends_whole())
        batch_->flush();
    else
        batch_->discard(); // unpublished part files are removed; renamed ones still reported
    // A descriptor still open keeps the stick busy: an unmount right after "done" would fail. The job's own
    // closer is waited for here; a closer from the spec (the KIO worker's, shared by its one-file jobs) goes on
    // after the job, its closes over within about 100 ms of the last file's.
    if (closer_ && closer_ != spec_.closer)
        closer_->drain();
    if (spec_.manifest && !hashed_.empty() && ends_whole())
        write_job_manifest_now();
    sync_job();
    summary_.cancelled = control_.cancel_requested() || stopped_by_answer_;
    summary_.aborted = aborted_;
    summary_.device_removed = device_removed_;
}

// Metadata of everything this job touched (folders, times, the journal) reaches the device too, so "done" and
// "cancelled" both mean there is nothing left to write.
void JobRunner::sync_job()
{
    // Onto a share that stopped answering too: this sync sends what the client still holds for it, and fails with
    // it, while the failed job is the one to say so. Left to go out once the link is back, it failed then, into
    // the write errors the next run's syncfs reports (share-drop-nfs4).
    if (!syncs() || !any_dest_dir_ || device_removed_)
        return;
    if (sys().syncfs(any_dest_dir_->get()) < 0)
        report_error(Status::destination(errno, "syncfs", spec_.destination), spec_.destination);
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

bool JobRunner::go_on_reading()
{
    control_.beat();
    wait_if_paused();
    return !stopping();
}

void JobRunner::run_item(const ItemPlan &plan)
{
    if (!plan.found)
        return;
    const CopyItem &item = plan.item;
    SharedDirFd src_root, dst_root;
    if (!open_roots(item, src_root, dst_root))
        return;
    struct stat root_st {};
    sys().fstatat(src_root->get(), item.source_name.c_str(), &root_st, AT_SYMLINK_NOFOLLOW);
    session_.route = choose_route(device_, root_st.st_dev);
    if (spec_.move && root_st.st_dev == device_.st_dev && move_by_rename(plan, src_root, dst_root))
        return;
    ItemWalk walk {plan,
                   ItemEntries(plan, spec_, device_,
                               [this](Status s) {
                                   const std::string path = s.path();
                                   if (unreadable_.first(path))
                                       report_error(std::move(s), path);
                               }),
                   DirCache(src_root, item.source_dir, Side::Source),
                   DirCache(dst_root, item.target_dir, Side::Destination),
                   {},
                   {},
                   {},
                   DirCache(src_root, item.source_dir, Side::Source),
                   {}};
    walk_item(walk);
}

// The folders an item comes from and goes into, pinned for its walk. False: that was reported.
bool JobRunner::open_roots(const CopyItem &item, SharedDirFd &src_root, SharedDirFd &dst_root)
{
    Status error;
    src_root = open_dir(AT_FDCWD, item.source_dir.c_str(), error, item.source_dir, false, Side::Source);
    if (src_root)
        dst_root = planned_root(item.target_dir);
    if (src_root && !dst_root)
        dst_root = open_dir(AT_FDCWD, item.target_dir.c_str(), error, item.target_dir, false, Side::Destination);
    if (!dst_root) {
        report_error(std::move(error), item.source);
        return false;
    }
    if (!any_dest_dir_)
        any_dest_dir_ = dst_root;
    return true;
}

SharedDirFd JobRunner::planned_root(const std::string &folder)
{
    if (!planned_root_)
        return {};
    // An item's run may come long after the plan (questions to the user before it): the folder may have been
    // replaced or unmounted since (a stick pulled and plugged back in), and is then not held on to. Looking its
    // path up again costs no round trip, as an open does on NFS; nor do device and inode, which the kernel
    // knows (a plain stat asked the server for the folder's attributes: 23 ms before the first byte).
    struct stat now {}, held {};
    if (sys().fstatat_cached(AT_FDCWD, folder.c_str(), &now, 0) < 0 ||
        sys().fstatat_cached(planned_root_->get(), "", &held, AT_EMPTY_PATH) < 0 || now.st_dev != held.st_dev ||
        now.st_ino != held.st_ino)
        planned_root_.reset();
    return planned_root_;
}

void JobRunner::walk_item(ItemWalk &walk)
{
    while (walk.entries.advance()) {
        wait_if_paused();
        end_plan(false);
        if (stopping())
            break;
        // Small files go into the batch only where it syncs (syncs()): only those are read ahead.
        if (syncs())
            walk.prefetch.fill(walk.entries, walk.prefetch_dirs, spec_.small_file_limit,
                               [this, &walk](const std::string &rel, int fd, const struct stat &st) {
                                   // The path only names the file to a group (source_share.h): not built per
                                   // file for a job alone.
                                   return spec_.source_share
                                              ? residency_of(join(strip_trailing_slashes(walk.plan.item.source), rel),
                                                             fd, st)
                                              : source_residency(fd, st, session_.route.evict);
                               });
        const PlanEntry &entry = walk.entries.current();
        if (walk.failed_dir && below(entry.rel, *walk.failed_dir)) {
            walk.prefetch.take(walk.entries.current_seq()); // and the read-ahead's thread leaves it alone now
            continue;
        }
        copy_entry(walk, entry);
    }
    if (!stopping())
        batch_->flush();
    // A plan counted beside the run ends before the item does (PlanGate): nothing of it is finished, and nothing
    // stays, unless the plan found room for all of it. Also when a failure ends the job: a copy refused for want
    // of room leaves nothing behind. A cancel is not held up by a walk that may be stuck on a slow source: the
    // folders made so far stay then, as after any cancel.
    plan_gate_
        .wait([this] {
            control_.beat();
            return control_.cancel_requested();
        })
        .ignore();
    if (plan_gate_.refused())
        return take_back_item(walk);
    if (stopping())
        return;
    finish_dirs(walk);
    if (!stopping() && spec_.move)
        remove_moved_dirs(walk);
}

// The task's target name, taken for this job: whether it is free, and whether this job put a file there already.
void JobRunner::claim_target(FileTask &task, const CopyItem &item, const std::string &dst_rel)
{
    const std::string dst_parent_rel = split_rel(dst_rel).first;
    task.target_free = claim_fresh_name(dst_parent_rel, dst_rel, task.case_twin,
                                        single_item_ && item.known_absent(task.entry.rel, dst_rel));
    task.named_by_job = published_here(dst_rel, task.dst_display + "/" + task.dst_name);
}

// A part file of an earlier copy (".X.part") beside its own file X in a source folder, as a stick's folder with an
// interrupted copy on it holds: copied, it would take the name of X's own part file at the target, and could be
// published as X. It is left out and said so; true then.
bool JobRunner::part_beside_its_file(const FileTask &task)
{
    if (task.entry.kind != EntryKind::File || task.entry.rel.empty()) // named on the command line: it is wanted
        return false;
    const std::string &name = task.src_name;
    const std::string suffix = ".part";
    if (name.size() <= 1 + suffix.size() || name[0] != '.' ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return false;
    const std::string file = name.substr(1, name.size() - 1 - suffix.size());
    struct stat st {};
    if (part_name_for(file) != name ||
        sys().fstatat(task.src_dir->get(), file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return false;
    report_skip(task.source,
                i18nc("%1 is a file name", "the part file of an unfinished copy of %1, which is copied itself", file),
                LeftOut::PartFile);
    return true;
}

void JobRunner::copy_entry(ItemWalk &walk, const PlanEntry &entry)
{
    const CopyItem &item = walk.plan.item;
    const std::string source = join(strip_trailing_slashes(item.source), entry.rel);
    // Taken before any way out below: once taken, the read-ahead's thread won't open it after its failure was
    // reported (for a group of jobs, that would count it as still to be read: source_share.h).
    std::optional<SourcePrefetch::Source> prefetched =
        entry.kind == EntryKind::File ? walk.prefetch.take(walk.entries.current_seq()) : std::nullopt;
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
    FileTask task {entry,    source, {},
                   src_name, {},     join(walk.dst.display(), dst_parent_rel),
                   dst_name, false,  ConflictPolicy::Refuse,
                   {},       {},     {},
                   {},       {}};
    Status error;
    task.dst_dir = walk.dst.get(dst_parent_rel, error);
    task.src_dir = task.dst_dir ? walk.src.get(src_parent_rel, error) : SharedDirFd {};
    if (!task.src_dir) {
        report_error(std::move(error), source);
        return;
    }
    if (part_beside_its_file(task))
        return;
    claim_target(task, item, dst_rel);
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
        task.prefetched = std::move(prefetched);
        return copy_file_with_retries(task);
    }
}

void JobRunner::copy_directory(ItemWalk &walk, const PlanEntry &entry, const FileTask &where,
                               const std::string &dst_rel)
{
    // Created owner-writable so it can be filled; its real mode is set once it is full.
    if (sys().mkdirat(where.dst_dir->get(), where.dst_name.c_str(), 0700) == 0) {
        walk.dirs.push_back({dst_rel, entry.mode, entry.mtime, true});
        target_folder(dst_rel).fresh = true;
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
    if (const std::optional<std::string> there = link_there(where, target, existing, st)) {
        if (spec_.move)
            remove_source(where.src_dir, where.src_name, where.source, std::nullopt);
        return report_done(where.source, where.dst_display + "/" + *there, 0, already_there_note());
    }
    // Links are not worth a question: the job's policy decides.
    const ConflictDecision d =
        resolve_conflict(existing, spec_.conflict, std::nullopt, where.dst_display + "/" + where.dst_name);
    if (d.outcome == ConflictDecision::Outcome::Skip)
        return report_skip(where.source, i18n("already exists at the destination"), LeftOut::Exists);
    if (d.outcome != ConflictDecision::Outcome::Proceed)
        return report_error(d.error, where.source);
    if (where.named_by_job && existing.exists && d.policy == ConflictPolicy::Overwrite) {
        refuse_own_copy(where, where.dst_display + "/" + where.dst_name);
        return;
    }
    if (!wait_for_plan())
        return; // the plan found too little room, or the job stops: not an error of this link's
    std::string final_name;
    if (Status s = publish_symlink(where.dst_dir, where.dst_display, where.dst_name, target, where.entry.mtime,
                                   d.policy, &final_name);
        !s)
        return report_error(std::move(s), where.source);
    if (spec_.move)
        remove_source(where.src_dir, where.src_name, where.source, std::nullopt);
    report_done(where.source, where.dst_display + "/" + final_name, 0, where.note);
}

// A link of the same text is the one an interrupted run published; for a move, as for a file of the same bytes,
// even without resume. Its name, if there is one.
std::optional<std::string> JobRunner::link_there(const FileTask &where, const std::string &target,
                                                 const ExistingTarget &existing, const struct stat &st)
{
    if ((!spec_.resume && !spec_.move) || !existing.exists)
        return std::nullopt;
    if (S_ISLNK(st.st_mode) && same_link(where, target, where.dst_name))
        return where.dst_name;
    return kept_both_before(where, &target);
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

// The plan, counted beside the run, found too little room: the copy is refused as it would have been before its
// first byte. Nothing of it was published (PlanGate); its part files go, and then the folders it made, deepest
// first and only while empty, so nothing else is touched.
void JobRunner::take_back_item(ItemWalk &walk)
{
    batch_->discard();
    for (auto it = walk.dirs.rbegin(); it != walk.dirs.rend(); ++it) {
        if (!it->made)
            continue;
        Status error;
        const auto [parent_rel, name] = split_rel(it->rel);
        if (SharedDirFd parent = walk.dst.get(parent_rel, error))
            sys().unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR);
    }
}

} // namespace job_detail

JobSummary run_copy_job(const JobSpec &spec, const JobControl &control, ProgressCounters &counters,
                        const JobEventSink &sink)
{
    return job_detail::JobRunner(spec, control, counters, sink).run();
}

} // namespace sanecopy
