// SPDX-License-Identifier: GPL-2.0-or-later
// Planning a job: what each entry meets on the device, the space the job needs, the names already taken.
#include "job_runner.h"

#include "i18n.h"
#include "sys.h"
#include "tree_plan.h"
#include "tree_warmer.h"

#include <algorithm>
#include <array>
#include <ctime>
#include <future>
#include <system_error>
#include <utility>
#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

using namespace job_detail;

namespace job_detail {

void check_against_device(const CopyItem &item, PlanEntry &e, const JobSpec &spec, const DeviceInfo &device)
{
    if (!e.skip_reason.empty())
        return;
    const std::string name = e.rel.empty() ? item.target_name : split_rel(e.rel).second;
    if (std::string why = name_problem(name, device.limits); !why.empty() && !spec.rename_invalid) {
        e.left_out = LeftOut::RefusedName;
        e.skip_reason = why;
    } else if (e.kind == EntryKind::File && e.size > device.limits.max_file_size) {
        e.left_out = LeftOut::TooBig;
        e.skip_reason = i18n("is larger than the destination's filesystem can store in one file (4 GiB - 1 on FAT32)");
    }
}

void left_for_want_of_room(PlanEntry &e)
{
    e.left_out = LeftOut::NoRoom;
    e.skip_reason = i18n("no room left on the device for it (what fits was copied)");
}

} // namespace job_detail

namespace {

std::string mib_text(uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; }

} // namespace

// Every run resumes a big file from the part file an interrupted one left (JobRunner::resume_or_create), which
// holds the space reserved for the whole file: without counting it, the same command again after a kill or a
// pulled stick would find "not enough space" for the very file that takes it. Big files only: a small one is
// never resumed, and a lookup each would cost a tree of small files a round trip a file on a share.
// A plan counted beside the run (JobSpec::count_while_copying) may meet the part file the run has just made
// for this file: only one last written before the job began counts (|began|; FAT rounds a time down to even
// seconds, so there before the 2 s ahead of it). A share whose clock is behind the machine's by more could still
// count the run's own; ENOSPC mid-copy then says so, as for any plan the device outgrows.
static uint64_t part_file_blocks(const std::string &target, const struct timespec *began = nullptr,
                                 const FsLimits *limits = nullptr)
{
    const std::size_t slash = target.rfind('/') + 1; // absolute: there is one
    const std::string part = target.substr(0, slash) + part_name_for(target.substr(slash));
    struct stat st {};
    if (sys().fstatat(AT_FDCWD, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (began) {
        const auto ns = [](const struct timespec &t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
        const int64_t rounding = limits && limits->mtime_window_ns > 1000000000 ? limits->mtime_window_ns : 0;
        if (ns(st.st_mtim) + rounding >= ns(*began))
            return 0;
    }
    return uint64_t(st.st_blocks) * 512;
}

// JobSpec::resume with fit_to_space: what the interrupted run left on the device for |e| needs no room again:
// all of a file it published (the job's quick check), the blocks of a big file's part file, which the resumed
// copy keeps. Without this a resumed "copy what fits" would count its own files against the space they took.
static uint64_t left_by_interrupted_run(const std::string &target, const PlanEntry &e, const FsLimits &limits)
{
    struct stat st {};
    if (sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        quick_check(e.size, e.mtime, uint64_t(st.st_size), st.st_mtim, limits))
        return uint64_t(st.st_blocks) * 512;
    return part_file_blocks(target);
}

// JobSpec::fit_to_space: the bytes files may take, when the free space is known. The margin (1/64 of it, at
// least 1 MiB and at most 64 MiB) is for folders, FAT's directory clusters and a journal's metadata.
static std::optional<uint64_t> fit_budget(const DeviceInfo &device)
{
    if (!device.free_bytes)
        return std::nullopt;
    const uint64_t free = *device.free_bytes;
    const uint64_t margin = std::clamp<uint64_t>(free / 64, 1 << 20, 64 << 20);
    return free > margin ? free - margin : 0;
}

namespace {

// What stands at an entry's target before anything is decided.
struct TargetLook {
    uint64_t takes = 0;       // the entry's size, rounded (SpaceCount::rounded)
    uint64_t left = 0;        // JobSpec::resume: what an interrupted run left there for it, rounded
    uint64_t part = 0;        // without it: the blocks of the part file a big file resumes from, rounded
    bool taken = false;       // a file or link goes where something stands (JobPlan::taken)
    bool replaceable = false; // ... and it is a regular file, whose blocks a replacement frees
    uint64_t held = 0;        // its blocks, rounded
};

// The space files need, counted entry by entry, under one way of dealing with names already taken: skipped,
// nothing; replaced, the difference, plus the largest such file once (old and new both stand until the new one
// takes the name); asked file by file or kept both, in full. With a budget (JobSpec::fit_to_space), a file that
// does not fit in what is left of it is not counted. Sizes are rounded to what each file takes at least (a
// block, a FAT cluster); metadata is not counted, so the plan catches the clear cases up front and ENOSPC
// mid-copy is still handled.
struct SpaceCount {
    SpaceCount(const DeviceInfo &device, ConflictPolicy taken_policy, std::optional<uint64_t> budget, bool resume)
        : budget(budget),
          skip_taken(taken_policy == ConflictPolicy::Skip),
          replace_taken(taken_policy == ConflictPolicy::Overwrite),
          resume(resume),
          unit(std::max<uint64_t>(4096, device.allocation_unit))
    {}
    uint64_t rounded(uint64_t bytes) const { return (bytes + unit - 1) / unit * unit; }

    uint64_t takes(const TargetLook &t)
    {
        if (budget && resume)
            return t.takes > t.left ? t.takes - t.left : 0;
        // A part file's blocks come back either way: its prefix is resumed, or it is replaced by a new one.
        const uint64_t takes = t.takes > t.part ? t.takes - t.part : 0;
        if (!t.taken)
            return takes;
        if (skip_taken)
            return 0;
        if (!replace_taken || !t.replaceable)
            return takes;
        replace_peak = std::max(replace_peak, takes);
        return takes > t.held ? takes - t.held : 0;
    }

    // Counts an entry that is not left out for another reason; false: a file the budget has no room for.
    // |count_skipped|: a file or link the policy skips is still counted (the job's own plan, which reports it
    // when it meets it), or not at all (what a choice would write).
    bool add(const PlanEntry &e, const TargetLook &t, bool count_skipped)
    {
        if (e.kind != EntryKind::File && e.kind != EntryKind::Symlink)
            return true;
        if (skip_taken && t.taken && !count_skipped)
            return true;
        const uint64_t n = takes(t);
        if (e.kind == EntryKind::File && budget && needed + n > *budget)
            return false;
        ++files;
        bytes += e.kind == EntryKind::File ? e.size : 0;
        needed += e.kind == EntryKind::File ? n : 0;
        return true;
    }

    const std::optional<uint64_t> budget;
    const bool skip_taken;
    const bool replace_taken;
    const bool resume;
    const uint64_t unit;
    uint64_t needed = 0;
    uint64_t replace_peak = 0;
    uint64_t files = 0; // files and links
    uint64_t bytes = 0; // of the files
};

// The job's own count, and for each way of dealing with taken names what all of it needs and what fits: the
// front end's choices (JobPlan::rooms), counted in the same walk.
struct SpaceCounts {
    SpaceCounts(const JobSpec &spec, const DeviceInfo &device)
        : job(device, spec.ask_conflict ? ConflictPolicy::Refuse : spec.conflict,
              spec.fit_to_space ? fit_budget(device) : std::nullopt, spec.resume),
          all {SpaceCount(device, ConflictPolicy::Refuse, std::nullopt, spec.resume),
               SpaceCount(device, ConflictPolicy::Skip, std::nullopt, spec.resume),
               SpaceCount(device, ConflictPolicy::Overwrite, std::nullopt, spec.resume)},
          fit {SpaceCount(device, ConflictPolicy::Refuse, fit_budget(device), spec.resume),
               SpaceCount(device, ConflictPolicy::Skip, fit_budget(device), spec.resume),
               SpaceCount(device, ConflictPolicy::Overwrite, fit_budget(device), spec.resume)}
    {}
    SpaceCount job;
    std::array<SpaceCount, 3> all; // by JobPlan::TakenNames
    std::array<SpaceCount, 3> fit;
};

// On a thread of its own if one is to be had, else when asked for. The first try copies what it is given, so
// the second still has it.
template <typename F, typename... Args>
auto in_background(F &&f, Args &&...args)
{
    try {
        return std::async(std::launch::async, f, args...);
    } catch (const std::system_error &) {
        return std::async(std::launch::deferred, std::forward<F>(f), std::forward<Args>(args)...);
    }
}

// The receiving folder's device probed, and the folder opened for the run, on threads of their own while the
// sources' targets are looked up: onto a share the probe's statfs, the open (NFS revalidates a folder it opens)
// and each lookup are a round trip (25-50 ms each over 10 ms of latency), and the first byte waited for all of
// them one after another.
class DestinationProbe {
public:
    // |open_folder|: for a plan the run follows; others (the window's summary, a discard) would only throw the
    // open folder away.
    explicit DestinationProbe(bool open_folder) : open_folder_(open_folder) {}
    void start(const std::string &folder) { probed_ = in_background(probe_folder, folder, open_folder_); }
    void into(JobPlan &plan)
    {
        Probed probed = probed_.get();
        if (probed.device.ok()) {
            plan.device = probed.device.value();
            plan.device_known = true;
            plan.target_root = std::move(probed.root);
        } else {
            plan.device.writeback = WritebackMode::ChunkSync; // unknown filesystem: the mode right everywhere
        }
    }

private:
    struct Probed {
        Result<DeviceInfo> device;
        SharedDirFd root; // null if it can't be opened: the run tries again, and says why
    };
    // The open beside the probe, not after it: two round trips onto a share, neither waiting for the other.
    static Probed probe_folder(const std::string &folder, bool open_folder)
    {
        std::future<SharedDirFd> opened;
        if (open_folder)
            opened = in_background([folder] {
                Status unused;
                return open_dir(AT_FDCWD, folder.c_str(), unused, folder, false, Side::Destination);
            });
        Result<DeviceInfo> device = probe_device(folder);
        // Not asked for when the probe failed: an open with no thread of its own then never runs, and one that
        // ran is waited for and closed by its future.
        SharedDirFd root = device.ok() && opened.valid() ? opened.get() : SharedDirFd();
        return {std::move(device), std::move(root)};
    }

    const bool open_folder_;
    std::future<Probed> probed_; // its destructor waits for a probe nobody asked for
};

// A folder onto a folder merges; a file or link onto any name in use is a conflict, which the plan lists.
void note_taken(JobPlan &plan, const ItemPlan &item, const PlanEntry &e, const std::string &target, TargetLook &look,
                const SpaceCount &space)
{
    struct stat st {};
    if (sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    JobPlan::TakenTarget t;
    t.source = join(strip_trailing_slashes(item.item.source), e.rel);
    t.target = target;
    t.source_size = e.size;
    t.source_mtime = e.mtime;
    t.is_link = e.kind == EntryKind::Symlink;
    t.existing = {true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
    plan.taken.push_back(std::move(t));
    look.taken = true;
    look.replaceable = S_ISREG(st.st_mode);
    look.held = space.rounded(uint64_t(st.st_blocks) * 512);
}

// The walk is in pre-order: once a folder's target is known not to exist, nothing below it can be taken, so what
// it holds is not looked up entry by entry (a lookup a file: a million for a tree of a million files, a round trip
// each on a share). One lookup a folder instead.
struct AbsentTarget {
    std::optional<std::string> folder; // by PlanEntry::rel

    bool covers(const PlanEntry &e)
    {
        if (folder && !below(e.rel, *folder))
            folder.reset();
        return folder.has_value();
    }
    void look_at_folder(const PlanEntry &e, const std::string &target)
    {
        struct stat st {};
        if (sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
            folder = e.rel;
    }
};

// What an earlier run left for the file |e| at |target| that it needs no room for again.
void look_at_earlier_run(TargetLook &look, const std::string &target, const PlanEntry &e, const JobSpec &spec,
                         const SpaceCount &space, const DeviceInfo &device, const struct timespec &began)
{
    // Only "copy what fits" counts it: a resumed copy's space is not checked up front (space_problem).
    if (spec.resume && spec.fit_to_space)
        look.left = space.rounded(left_by_interrupted_run(target, e, device.limits));
    // Onto a share each lookup is a round trip (a merge of thousands of photos: minutes), and a share is rarely
    // the one short of room: its part files are not looked for.
    else if (!spec.resume && e.size > spec.small_file_limit && !is_network_share(device))
        look.part = space.rounded(part_file_blocks(target, &began, &device.limits));
}

// What stands at the target of an entry that is not left out.
TargetLook look_at_target(JobPlan &plan, const ItemPlan &item, const PlanEntry &e, const JobSpec &spec,
                          const SpaceCount &space, AbsentTarget &absent)
{
    TargetLook look;
    look.takes = space.rounded(e.allocated);
    if (absent.covers(e))
        return look;
    const std::string target_name = target_rel(join(item.item.target_name, e.rel), spec, plan.device.limits);
    const std::string target = join(item.item.target_dir, target_name);
    // The item's own target was looked up as it was resolved (CopyItem::target_absent).
    const bool known_absent = item.item.known_absent(e.rel, target_name);
    if (e.kind == EntryKind::Directory) {
        if (known_absent)
            absent.folder = e.rel;
        else
            absent.look_at_folder(e, target);
    }
    if (e.kind == EntryKind::File && plan.device.free_bytes)
        look_at_earlier_run(look, target, e, spec, space, plan.device, plan.began);
    if ((e.kind == EntryKind::File || e.kind == EntryKind::Symlink) && !spec.resume && !known_absent)
        note_taken(plan, item, e, target, look, space);
    return look;
}

void plan_entry(JobPlan &plan, ItemPlan &item, PlanEntry &e, const JobSpec &spec, SpaceCounts &space,
                AbsentTarget &absent)
{
    item.bytes += e.kind == EntryKind::File ? e.size : 0;
    item.files += e.kind == EntryKind::File || e.kind == EntryKind::Symlink;
    check_against_device(item.item, e, spec, plan.device);
    if (e.skip_reason.empty()) {
        const TargetLook look = look_at_target(plan, item, e, spec, space.job, absent);
        for (std::size_t i = 0; i < space.all.size(); ++i) {
            space.all[i].add(e, look, false);
            space.fit[i].add(e, look, false);
        }
        if (!space.job.add(e, look, true)) {
            left_for_want_of_room(e);
            item.no_room.insert(e.rel);
        }
    }
    if (!e.skip_reason.empty())
        plan.left_out.push_back({join(strip_trailing_slashes(item.item.source), e.rel), e.left_out, e.skip_reason});
}

// Unknown free space (fusefat reports a size of 0) is never taken as full. A resumed copy finds much of itself
// on the device already: it is not checked up front, and ENOSPC mid-copy says the same.
Status space_problem(const JobPlan &plan, const JobSpec &spec, uint64_t needed)
{
    if (plan.device.free_bytes && needed > *plan.device.free_bytes && !spec.resume)
        return Status::destination(ENOSPC, "space check", plan.device.mount_point)
            .with_detail(i18nc("%1 and %2 are sizes", "not enough space: the copy needs %1, %2 free", mib_text(needed),
                               mib_text(*plan.device.free_bytes)));
    return {};
}

void count_space(JobPlan &plan, const JobSpec &spec, const SpaceCounts &space)
{
    plan.files = space.job.files;
    plan.total_bytes = space.job.bytes;
    plan.space = space_problem(plan, spec, space.job.needed + space.job.replace_peak);
    for (std::size_t i = 0; i < plan.rooms.size(); ++i) {
        JobPlan::Room &room = plan.rooms[i];
        room.space = space_problem(plan, spec, space.all[i].needed + space.all[i].replace_peak);
        room.files = space.all[i].files;
        room.bytes = space.all[i].bytes;
        room.fit_files = space.fit[i].files;
        room.fit_bytes = space.fit[i].bytes;
    }
}

// The first half of a plan: the destination resolved and its device probed, the items found; nothing walked.
JobPlan resolve_plan(const JobSpec &spec, bool open_folder)
{
    JobPlan plan;
    clock_gettime(CLOCK_REALTIME, &plan.began);
    DestinationProbe probe(open_folder);
    // Refuse replaces nothing either, but there the link's own reason says more than "exists" would.
    const bool may_replace = spec.conflict != ConflictPolicy::Skip && spec.conflict != ConflictPolicy::Rename;
    const auto on_folder = [&](const std::string &folder) { probe.start(folder); };
    Resolution res = resolve_destination(spec.sources, spec.destination, spec.rule, on_folder, may_replace);
    plan.errors = std::move(res.errors);
    if (!res.fatal.ok()) {
        plan.errors.push_back(res.fatal);
        return plan;
    }
    if (res.items.empty())
        return plan;
    probe.into(plan);
    for (CopyItem &copy : res.items)
        plan.items.emplace_back().item = std::move(copy);
    return plan;
}

} // namespace

// The second half: every item's tree walked once, entry by entry, and the space counted.
void job_detail::count_plan(JobPlan &plan, const JobSpec &spec, const PlanWatch &watch)
{
    constexpr uint64_t kCountedEvery = 4096; // entries between two updates of the totals so far
    SpaceCounts space(spec, plan.device);
    uint64_t entries = 0;
    for (ItemPlan &item : plan.items) {
        auto report = [&](Status s) {
            if (!watch.first_report || watch.first_report(s.path()))
                plan.errors.push_back(std::move(s));
        };
        TreeWalk walk(item.item.source_dir, item.item.source_name, item.item.source, report, item.item.receiving);
        TreeWarmer warmer(join(item.item.source_dir, item.item.source_name));
        AbsentTarget absent;
        for (PlanEntry e; !(watch.stop && watch.stop()) && walk.next(e);) {
            item.found = true;
            warmer.met_entry();
            plan_entry(plan, item, e, spec, space, absent);
            if (++entries % kCountedEvery == 0 && watch.counted)
                watch.counted(space.job.files, space.job.bytes);
        }
    }
    count_space(plan, spec, space);
}

JobPlan plan_job(const JobSpec &spec)
{
    JobPlan plan = resolve_plan(spec, false);
    count_plan(plan, spec, {});
    return plan;
}

JobPlan job_detail::resolve_for_run(const JobSpec &spec) { return resolve_plan(spec, true); }

std::vector<std::string> JobPlan::problems() const
{
    std::vector<std::string> lines;
    lines.reserve(errors.size() + 1 + left_out.size());
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
        const auto ignore = [](const Status &) {};
        TreeWalk walk(item.item.source_dir, item.item.source_name, item.item.source, ignore, item.item.receiving);
        for (PlanEntry e; walk.next(e);) {
            if (e.kind != EntryKind::File)
                continue;
            const auto [dir_rel, name] =
                split_rel(target_rel(join(item.item.target_name, e.rel), spec, plan.device.limits));
            const std::string part = join(join(item.item.target_dir, dir_rel), part_name_for(name));
            if (sys().unlinkat(AT_FDCWD, part.c_str(), 0) == 0)
                ++result.removed;
            else if (errno != ENOENT && errno != ENOTDIR)
                result.errors.push_back(Status::destination(errno, "remove part file", part));
        }
    }
    return result;
}

} // namespace sanecopy
