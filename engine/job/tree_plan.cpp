// SPDX-License-Identifier: GPL-2.0-or-later
#include "tree_plan.h"

#include "fd.h"
#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

const char *special_kind(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "FIFO";
    if (S_ISSOCK(mode))
        return "socket";
    if (S_ISCHR(mode))
        return "character device";
    if (S_ISBLK(mode))
        return "block device";
    return "special file";
}

namespace {

PlanEntry entry_from_stat(const struct stat &st, std::string rel)
{
    PlanEntry e;
    e.rel = std::move(rel);
    e.mode = st.st_mode;
    e.mtime = st.st_mtim;
    e.dev = st.st_dev;
    if (S_ISDIR(st.st_mode))
        e.kind = EntryKind::Directory;
    else if (S_ISREG(st.st_mode)) {
        e.kind = EntryKind::File;
        e.size = uint64_t(st.st_size);
        e.allocated = std::min<uint64_t>(e.size, uint64_t(st.st_blocks) * 512);
    } else if (S_ISLNK(st.st_mode))
        e.kind = EntryKind::Symlink;
    else {
        e.kind = EntryKind::Special;
        e.left_out = LeftOut::SpecialFile;
        e.skip_reason = std::string("is a ") + special_kind(st.st_mode) + "; only files, folders and links are copied";
    }
    return e;
}

class Walker {
public:
    Walker(ItemPlan &plan, const std::function<void(Status)> &on_error) : plan_(plan), on_error_(on_error) {}

    void walk_dir(int dirfd, const std::string &rel, const std::string &display)
    {
        std::vector<std::string> names;
        if (sys().list_dir(dirfd, names) < 0) {
            on_error_(Status::source(errno, "read folder", display));
            return;
        }
        std::sort(names.begin(), names.end());
        for (const std::string &name : names) {
            const std::string child_rel = rel.empty() ? name : std::string(rel).append("/").append(name);
            const std::string child_display = std::string(display).append("/").append(name);
            struct stat st {};
            if (sys().fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
                on_error_(Status::source(errno, "stat", child_display));
                continue;
            }
            plan_.entries.push_back(entry_from_stat(st, child_rel));
            if (!S_ISDIR(st.st_mode))
                continue;
            UniqueFd child(sys().openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0));
            if (!child) {
                on_error_(Status::source(errno, "open folder", child_display));
                plan_.entries.back().left_out = LeftOut::Unreadable;
                plan_.entries.back().skip_reason = "cannot be read";
                continue;
            }
            walk_dir(child.get(), child_rel, child_display);
        }
    }

private:
    ItemPlan &plan_;
    const std::function<void(Status)> &on_error_;
};

} // namespace

const char *to_string(LeftOut reason)
{
    switch (reason) {
    case LeftOut::None:
        return "none";
    case LeftOut::SpecialFile:
        return "special-file";
    case LeftOut::RefusedName:
        return "refused-name";
    case LeftOut::TooBig:
        return "too-big";
    case LeftOut::Unreadable:
        return "unreadable";
    case LeftOut::Exists:
        return "exists";
    case LeftOut::AfterError:
        return "after-error";
    case LeftOut::NoRoom:
        return "no-room";
    }
    return "?";
}

ItemPlan plan_item(const CopyItem &item, const std::function<void(Status)> &on_error)
{
    ItemPlan plan;
    plan.item = item;
    UniqueFd parent(sys().openat(AT_FDCWD, item.source_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!parent) {
        on_error(Status::source(errno, "open folder", item.source_dir));
        return plan;
    }
    struct stat st {};
    if (sys().fstatat(parent.get(), item.source_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
        on_error(Status::source(errno, "stat", item.source));
        return plan;
    }
    plan.entries.push_back(entry_from_stat(st, ""));
    if (!S_ISDIR(st.st_mode))
        return plan;
    UniqueFd root(
        sys().openat(parent.get(), item.source_name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0));
    if (!root) {
        on_error(Status::source(errno, "open folder", item.source));
        plan.entries.clear();
        return plan;
    }
    Walker(plan, on_error).walk_dir(root.get(), "", strip_trailing_slashes(item.source));
    return plan;
}

} // namespace sanecopy
