// SPDX-License-Identifier: GPL-2.0-or-later
// Safe Move: one rename on the same filesystem, or each source removed once its copy is durable.
#include "job_runner.h"

#include "fd.h"
#include "i18n.h"
#include "manifest.h"
#include "sys.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

namespace job_detail {

// On the destination's own filesystem, an item whose target name is free moves by one rename, which is atomic:
// there is never a moment without a complete copy. A manifest's sums are then read from the renamed files.
// False: it is copied and removed instead (another filesystem, a taken name, digests wanted with each file's
// event).
bool JobRunner::move_by_rename(const ItemPlan &plan, const SharedDirFd &src_root, const SharedDirFd &dst_root)
{
    const CopyItem &item = plan.item;
    if (spec_.hash_sources || !syncs() ||
        sys().renameat2(src_root->get(), item.source_name.c_str(), dst_root->get(),
                        target_rel(item.target_name).c_str(), RENAME_NOREPLACE) < 0)
        return false;
    // Both folders' entries on the device: the new name, and the old one gone.
    Status s = sync_directory(dst_root->get(), item.target_dir);
    if (s)
        s = sync_directory(src_root->get(), item.source_dir);
    if (!s)
        report_error(std::move(s), item.source);
    renamed_targets_.push_back(target_rel(item.target_name));
    const uint64_t bytes = plan.bytes, files = plan.files;
    count_unmoved(bytes);
    if (spec_.manifest)
        hash_renamed(plan);
    counters_.files_done.fetch_add(files > 0 ? files - 1 : 0);
    summary_.files_copied += files > 0 ? files - 1 : 0; // report_done counts the last one
    report_done(item.source, item.target_dir + "/" + target_rel(item.target_name), bytes,
                i18n("moved by renaming it on the same filesystem"));
    return true;
}

// The manifest's sums of an item moved by renaming, read from the renamed files: the same bytes, never copied.
void JobRunner::hash_renamed(const ItemPlan &plan)
{
    const std::string name = target_rel(plan.item.target_name);
    const std::string root = plan.item.target_dir + "/" + name;
    TreeWalk walk(plan.item.target_dir, name, root, [this](Status s) {
        const std::string path = s.path();
        report_error(std::move(s), path);
    });
    for (PlanEntry e; walk.next(e);) {
        if (e.kind != EntryKind::File)
            continue;
        const std::string path = e.rel.empty() ? root : root + "/" + e.rel;
        UniqueFd fd(sys().openat(AT_FDCWD, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0));
        Sha256Digest digest {};
        Status s = fd ? hash_from_device(fd.get(), path, control_, digest) : Status::destination(errno, "open", path);
        if (!s) {
            report_error(std::move(s).with_detail(i18n("was moved, but its sum for the manifest could not be read")),
                         path);
            continue;
        }
        hashed_.emplace_back(path, digest);
    }
}

namespace {

bool same_time(const struct timespec &a, const struct timespec &b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool still_as_copied(const struct stat &st, const SourceStamp &copied_as)
{
    return S_ISREG(st.st_mode) && st.st_ino == copied_as.ino && uint64_t(st.st_size) == copied_as.size &&
           same_time(st.st_mtim, copied_as.mtime) && (copied_as.hard_linked || same_time(st.st_ctim, copied_as.ctime));
}

} // namespace

// The source of a moved file, once its copy is durable under its real name, if it is still what was copied
// (|copied_as|; a link has none): a file written to, cut short or replaced under its name while it was copied
// holds what the copy does not, and stays.
void JobRunner::remove_source(const SharedDirFd &dir, const std::string &name, const std::string &source,
                              const std::optional<SourceStamp> &copied_as)
{
    struct stat st {};
    if (copied_as && sys().fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !still_as_copied(st, *copied_as)) {
        report_error(Status::source(EAGAIN, "remove source", source)
                         .with_detail(i18n("changed while it was moved: the copy holds it as it was, and the "
                                           "source was kept")),
                     source);
        return;
    }
    if (sys().unlinkat(dir->get(), name.c_str(), 0) < 0 && errno != ENOENT)
        report_error(Status::source(errno, "remove source", source)
                         .with_detail(i18nc("%1 is the system's reason",
                                            "was copied, but could not be removed from the source: %1",
                                            std::error_code(errno, std::generic_category()).message())),
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

} // namespace job_detail

} // namespace sanecopy
