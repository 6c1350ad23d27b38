// SPDX-License-Identifier: GPL-2.0-or-later
// A target name that is taken: what an interrupted run left under it, and what the policy or the user says.
#include "job_runner.h"

#include "i18n.h"
#include "sys.h"
#include "verify.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

namespace job_detail {

// Settles an existing target before the source is even opened. False: the file is not copied (skipped,
// refused, found there already, or the user cancelled), and that was reported.
bool JobRunner::settle_conflict(FileTask &task)
{
    // A target the batch is still holding is settled first, so it is seen here as the file it is about to be.
    if (batch_->holds(task.dst_dir->get(), task.dst_name))
        batch_->flush();
    const ExistingTarget existing = existing_target(task);
    if (done_before(task, existing))
        return false;
    // Stopped while comparing what stands there (a move, --resume --verify): no question, no "exists".
    if (stopping())
        return false;
    return decide_conflict(task, existing);
}

ExistingTarget JobRunner::existing_target(const FileTask &task) const
{
    struct stat st {};
    if (task.target_free || sys().fstatat(task.dst_dir->get(), task.dst_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return {};
    return {true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
}

// What an earlier run left: a move stopped between publishing a file and removing its source, or an interrupted
// copy (JobSpec::resume), under the real name or, after "keep both", beside it. True: there is nothing to copy.
bool JobRunner::done_before(FileTask &task, const ExistingTarget &existing)
{
    if (spec_.move && already_there(task, existing, task.dst_name))
        return report_found(task, task.dst_name);
    if (spec_.resume && !spec_.move && published_before(task, existing, task.dst_name))
        return report_found(task, task.dst_name);
    // A move checks the bytes and needs no resume, as under the real name above.
    if (!(spec_.resume || spec_.move) || !existing.exists)
        return false;
    const std::optional<std::string> kept = kept_both_before(task, nullptr);
    return kept && report_found(task, *kept);
}

// The file is on the device as |name| already: counted and reported as done (a move's source removed), or, when
// the manifest's digest can't be made, reported as failed. True either way: it is not copied again.
bool JobRunner::report_found(FileTask &task, const std::string &name)
{
    std::optional<Sha256Digest> digest;
    if (!spec_.move && hashes() && !hash_source(task, digest))
        return true;
    count_unmoved(task.entry.size);
    if (spec_.move)
        remove_source(task.src_dir, task.src_name, task.source, source_stamp(task.entry));
    report_done(task.source, task.dst_display + "/" + name, task.entry.size,
                spec_.move ? (counters_.share.load()
                                  ? i18n("already on the share with the same bytes; the source was removed")
                                  : i18n("already on the device with the same bytes; the source was removed"))
                           : already_there_note(),
                digest);
    return true;
}

// The policy, or the user's answer when the job asks: true to go on with task.policy set.
bool JobRunner::decide_conflict(FileTask &task, const ExistingTarget &existing)
{
    const std::string target = task.dst_display + "/" + task.dst_name;
    std::optional<ConflictAnswer> answer;
    if (existing.exists && spec_.ask_conflict)
        answer = spec_.ask_conflict(
            {task.source, target, task.entry.size, existing.size, existing.is_dir, task.entry.mtime, existing.mtime});
    ConflictDecision d = resolve_conflict(existing, spec_.conflict, answer, target);
    if (task.named_by_job && existing.exists && d.outcome == ConflictDecision::Outcome::Proceed &&
        d.policy == ConflictPolicy::Overwrite)
        return refuse_own_copy(task, target);
    // What is in the way is this job's own copy of a name the filesystem can't tell from this one: say so.
    const std::string same_file =
        task.case_twin.empty()
            ? std::string()
            : i18nc("%1 and %2 are two names",
                    "%1 and %2 would be the same file here: this filesystem does not tell names apart "
                    "by case",
                    task.dst_name, task.case_twin);
    switch (d.outcome) {
    case ConflictDecision::Outcome::Proceed:
        task.policy = d.policy;
        return true;
    case ConflictDecision::Outcome::Skip:
        report_skip(task.source, same_file.empty() ? i18n("already exists at the destination") : same_file,
                    LeftOut::Exists);
        return false;
    case ConflictDecision::Outcome::Fail:
        if (!same_file.empty() && d.error.err() == EEXIST)
            d.error = Status::destination(EEXIST, "exists", target)
                          .with_detail(i18nc("%1 says which two names are the same file",
                                             "%1; not overwritten (use --overwrite, --rename-existing or "
                                             "--skip-existing)",
                                             same_file));
        report_error(d.error, task.source);
        return false;
    case ConflictDecision::Outcome::Cancel:
        stopped_by_answer_ = true;
        return false;
    }
    return false;
}

// Another file of this job is what stands at |target|: replacing it would lose it (with a move, its source is
// gone already). Overwrite is refused for it; "keep both" and "skip" go on as they would. False, reported.
bool JobRunner::refuse_own_copy(const FileTask &task, const std::string &target)
{
    const std::string why =
        task.case_twin.empty()
            ? i18n("another file of this copy has the same name here")
            : i18nc("%1 and %2 are two names",
                    "%1 and %2 would be the same file here: this filesystem does not tell names apart by case",
                    task.dst_name, task.case_twin);
    report_error(Status::destination(EEXIST, "exists", target)
                     .with_detail(i18nc("%1 says why",
                                        "%1; not overwritten, as it was copied by this job (use --rename-existing "
                                        "to keep both)",
                                        why)),
                 task.source);
    return false;
}

// A move interrupted after publishing a file and before removing its source leaves both: the same size and the
// same bytes at the target mean it is there already.
// The comparison waits out a pause and stops on a cancel as a copy does; the rate measured before does not span it.
bool JobRunner::already_there(const FileTask &task, const ExistingTarget &existing, const std::string &name)
{
    if (!existing.exists || existing.is_dir || existing.size != task.entry.size)
        return false;
    auto open_at = [](const SharedDirFd &dir, const std::string &name) {
        return UniqueFd(sys().openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0));
    };
    UniqueFd a = open_at(task.src_dir, task.src_name), b = open_at(task.dst_dir, name);
    struct stat st {};
    // A FIFO or a device under the name holds no copy, however few bytes the source has.
    if (!a || !b || sys().fstat(b.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    const bool same =
        same_bytes(a.get(), b.get(), task.entry.size, session_.route.evict, [this] { return go_on_reading(); });
    session_.meter.restart_clock(monotonic_seconds(), session_.durable_total);
    return same;
}

// JobSpec::resume: a link the interrupted run published points where the source does.
bool JobRunner::same_link(const FileTask &where, const std::string &target, const std::string &name) const
{
    std::string there(target.size() + 1, '\0');
    const ssize_t n = sys().readlinkat(where.dst_dir->get(), name.c_str(), there.data(), there.size());
    return n >= 0 && size_t(n) == target.size() && there.compare(0, target.size(), target) == 0;
}

// JobSpec::resume: the quick check (above) of what stands under |name|; with JobSpec::verify, which promises
// every file read back, its bytes compared with the source's too.
bool JobRunner::published_before(const FileTask &task, const ExistingTarget &existing, const std::string &name)
{
    return existing.exists && !existing.is_dir &&
           quick_check(task.entry.size, task.entry.mtime, existing.size, existing.mtime, device_.limits) &&
           (!spec_.verify || already_there(task, existing, name));
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
        const ExistingTarget there {true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
        const bool same = link_target  ? S_ISLNK(st.st_mode) && same_link(task, *link_target, alt)
                          : spec_.move ? S_ISREG(st.st_mode) && already_there(task, there, alt)
                                       : S_ISREG(st.st_mode) && published_before(task, there, alt);
        if (same)
            return alt;
    }
    return std::nullopt;
}

// The digest of a file this job does not copy (JobSpec::resume), for the manifest: read from the source.
bool JobRunner::hash_source(const FileTask &task, std::optional<Sha256Digest> &digest)
{
    UniqueFd in(
        sys().openat(task.src_dir->get(), task.src_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0));
    Status s = in ? Status() : Status::source(errno, "open", task.source);
    SourceHash hash;
    if (s)
        s = finish_hash(hash, in.get(), 0, task.source, digest);
    const bool ok = s.ok();
    if (!ok)
        report_error(std::move(s), task.source);
    return ok;
}

} // namespace job_detail

} // namespace sanecopy
