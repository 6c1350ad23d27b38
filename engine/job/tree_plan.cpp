// SPDX-License-Identifier: GPL-2.0-or-later
#include "tree_plan.h"

#include "fd.h"
#include "i18n.h"
#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

std::string special_file_reason(mode_t mode)
{
    if (S_ISFIFO(mode))
        return i18n("is a FIFO; only files, folders and links are copied");
    if (S_ISSOCK(mode))
        return i18n("is a socket; only files, folders and links are copied");
    if (S_ISCHR(mode))
        return i18n("is a character device; only files, folders and links are copied");
    if (S_ISBLK(mode))
        return i18n("is a block device; only files, folders and links are copied");
    return i18n("is a special file; only files, folders and links are copied");
}

namespace {

PlanEntry entry_from_stat(const struct stat &st, std::string rel)
{
    PlanEntry e;
    e.rel = std::move(rel);
    e.mode = st.st_mode;
    e.mtime = st.st_mtim;
    e.ctime = st.st_ctim;
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    e.hard_linked = S_ISREG(st.st_mode) && st.st_nlink > 1;
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
        e.skip_reason = special_file_reason(st.st_mode);
    }
    return e;
}

std::string into_itself_reason()
{
    return i18n("is the folder the copy goes into, under another path (a bind mount): a folder cannot be copied "
                "into itself");
}

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
    case LeftOut::PartFile:
        return "part-file";
    case LeftOut::IntoItself:
        return "into-itself";
    }
    return "?";
}

struct TreeWalk::Folder {
    UniqueFd fd;
    std::vector<std::string> names; // sorted
    std::size_t next = 0;
    std::string rel;
    std::string display;
};

TreeWalk::TreeWalk(const std::string &dir, const std::string &name, std::string display,
                   std::function<void(Status)> on_error, ReceivingFolders receiving)
    : on_error_(std::move(on_error)), receiving_(receiving)
{
    display = strip_trailing_slashes(display);
    UniqueFd parent(sys().openat(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!parent) {
        on_error_(Status::source(errno, "open folder", dir));
        return;
    }
    struct stat st {};
    if (sys().fstatat(parent.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
        on_error_(Status::source(errno, "stat", display));
        return;
    }
    if (receiving_.is(st)) {
        on_error_(Status::source(EINVAL, "copy into itself", display).with_detail(into_itself_reason()));
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        // A source folder that can't be opened is an error of its own, not an entry: nothing of it is copied.
        const int fd = sys().openat(parent.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
        if (fd < 0) {
            on_error_(Status::source(errno, "open folder", display));
            return;
        }
        enter(fd, "", display);
    }
    root_ = entry_from_stat(st, "");
}

TreeWalk::~TreeWalk() = default;

void TreeWalk::enter(int fd, const std::string &rel, const std::string &display)
{
    Folder &f = path_.emplace_back();
    f.fd.reset(fd);
    f.rel = rel;
    f.display = display;
    if (sys().list_dir(fd, f.names) < 0) {
        on_error_(Status::source(errno, "read folder", display));
        f.names.clear();
    }
    std::sort(f.names.begin(), f.names.end());
}

bool TreeWalk::next(PlanEntry &e)
{
    if (root_) {
        e = std::move(*root_);
        root_.reset();
        return true;
    }
    while (!path_.empty()) {
        Folder &f = path_.back();
        if (f.next == f.names.size()) {
            path_.pop_back();
            continue;
        }
        const std::string &name = f.names[f.next++];
        std::string rel = f.rel.empty() ? name : std::string(f.rel).append("/").append(name);
        std::string display = std::string(f.display).append("/").append(name);
        struct stat st {};
        if (sys().fstatat(f.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) {
            on_error_(Status::source(errno, "stat", display));
            continue;
        }
        e = entry_from_stat(st, rel);
        if (receiving_.is(st)) {
            e.left_out = LeftOut::IntoItself;
            e.skip_reason = into_itself_reason();
        } else if (S_ISDIR(st.st_mode)) {
            const int fd = sys().openat(f.fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
            if (fd < 0) {
                on_error_(Status::source(errno, "open folder", display));
                e.left_out = LeftOut::Unreadable;
                e.skip_reason = i18n("cannot be read");
            } else {
                enter(fd, rel, display); // |f| may move: not used after this
            }
        }
        return true;
    }
    return false;
}

} // namespace sanecopy
