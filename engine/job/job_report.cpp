// SPDX-License-Identifier: GPL-2.0-or-later
// What a copy job tells its caller: events, counters, the manifest.
#include "job_runner.h"

#include "i18n.h"
#include "sys.h"

#include <algorithm>
#include <cerrno>

namespace sanecopy {

namespace job_detail {

void JobRunner::report_error(Status s, const std::string &path)
{
    control_.beat(); // a file reported is the job moving, though no byte did (stall_watch.h)
    ++summary_.errors;
    // Only the destination failing ends the job: a source that can't be read is that file's problem.
    if (s.on_destination() && is_device_fatal(s.err())) {
        aborted_ = true;
        // A pulled stick shows as ENODEV, ENXIO or EIO depending on where the copy was; say what happened
        // rather than which call saw it.
        s = explain(std::move(s));
        device_removed_ = device_removed_ || s.device_removed();
    }
    if (spec_.source_share)
        spec_.source_share->done(spec_.share_member, path);
    JobEvent e;
    e.kind = JobEvent::Kind::Error;
    e.path = path;
    e.message = s.message();
    e.status = std::move(s);
    emit(e);
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
    control_.beat();
    ++summary_.files_skipped;
    // A skip the conflict policy asked for is what the user wanted; anything else is a requested file not copied.
    if (reason != LeftOut::Exists)
        ++summary_.files_refused;
    if (spec_.source_share)
        spec_.source_share->done(spec_.share_member, path);
    JobEvent e;
    e.kind = JobEvent::Kind::Skipped;
    e.path = path;
    e.message = path + ": " + why;
    e.reason = reason;
    emit(e);
}

void JobRunner::report_done(const std::string &source, std::string target, uint64_t bytes, std::string note,
                            std::optional<Sha256Digest> digest)
{
    ++summary_.files_copied;
    summary_.bytes += bytes;
    if (guards_own_copies_)
        published_here_.insert(std::hash<std::string> {}(fold_case(target, folds_case())));
    if (spec_.source_share)
        spec_.source_share->done(spec_.share_member, source);
    counters_.files_done.fetch_add(1);
    JobEvent e;
    e.path = source;
    e.target = std::move(target);
    e.bytes = bytes;
    e.message = std::move(note);
    e.digest = digest;
    if (spec_.manifest && digest)
        hashed_.emplace_back(e.target, *digest);
    emit(e);
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
    return job_detail::target_rel(rel, spec_, device_.limits);
}

SourceResidency JobRunner::residency_of(const std::string &path, int fd, const struct stat &st) const
{
    if (spec_.source_share)
        return spec_.source_share->open(spec_.share_member, path, fd, st, session_.route.evict);
    return source_residency(fd, st, session_.route.evict);
}

std::string JobRunner::already_there_note() const
{
    return counters_.share.load() ? i18n("already on the share from the interrupted copy")
                                  : i18n("already on the device from the interrupted copy");
}

std::string JobRunner::rename_note(const std::string &rel) const
{
    const std::string name = split_rel(rel).second;
    const std::string why = name_problem(name, device_.limits);
    return why.empty() ? std::string()
                       : i18nc("%1 is the new name, %2 what is wrong with the old one",
                               "renamed to \"%1\": the name %2", safe_name(name, device_.limits), why);
}

// The target folder |rel|, once those the walk has left (any that is neither |rel| nor above it) are dropped.
JobRunner::TargetFolder &JobRunner::target_folder(const std::string &rel)
{
    for (auto it = target_folders_.begin(); it != target_folders_.end();)
        it = it->first == rel || below(rel, it->first) ? std::next(it) : target_folders_.erase(it);
    return target_folders_[rel];
}

bool JobRunner::claim_fresh_name(const std::string &dst_parent_rel, const std::string &dst_rel, std::string &case_twin,
                                 bool known_absent)
{
    TargetFolder &folder = target_folder(dst_parent_rel);
    const std::string name = split_rel(dst_rel).second;
    std::string folded = fold_case(name, folds_case());
    const bool inserted = folder.names.insert(folded).second;
    if (!inserted) {
        // Taken by this job: under another case it is a twin, the one in |cased| or else the folded one.
        const auto cased = folder.cased.find(folded);
        const std::string &taken = cased != folder.cased.end() ? cased->second : folded;
        if (taken != name)
            case_twin = taken;
    } else if (folded != name) {
        folder.cased.emplace(std::move(folded), name);
    }
    return inserted && (folder.fresh || known_absent);
}

// Whether this job published |target| (at |dst_rel| below the destination) already: by name, or inside an item a
// move renamed into place whole.
bool JobRunner::published_here(const std::string &dst_rel, const std::string &target) const
{
    if (guards_own_copies_ && published_here_.count(std::hash<std::string> {}(fold_case(target, folds_case()))) > 0)
        return true;
    return std::any_of(renamed_targets_.begin(), renamed_targets_.end(),
                       [&](const std::string &r) { return dst_rel == r || below(dst_rel, r); });
}

// The manifest, through the publish pipeline like any file: durable before the job says it is done.
void JobRunner::write_job_manifest_now()
{
    const std::string path =
        spec_.manifest_path.empty() ? default_manifest_path(spec_.destination) : spec_.manifest_path;
    if (Status s = write_job_manifest(path, hashed_); !s) {
        report_error(std::move(s), path);
        return;
    }
    summary_.manifest_path = path;
    summary_.manifest_files = hashed_.size();
}

} // namespace job_detail

} // namespace sanecopy
