// SPDX-License-Identifier: GPL-2.0-or-later
#include "destination.h"

#include "device_probe.h"
#include "fd.h"
#include "i18n.h"
#include "sys.h"

#include <climits>
#include <cstdlib>
#include <optional>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <tuple>

namespace sanecopy {

std::string sandbox_note(const std::string &path)
{
    const std::optional<std::string> info = read_kernel_text("/.flatpak-info");
    if (!info)
        return {};
    // The app's id: "name=" in the [Application] group, the file's first.
    const auto at = info->find("\nname=");
    const std::string name =
        at == std::string::npos ? std::string() : info->substr(at + 6, info->find('\n', at + 1) - at - 6);
    if (name.empty())
        return i18n("SaneCopy runs in a flatpak sandbox, which shows it only the home folder, /media, /run/media and "
                    "/mnt");
    return i18nc("%1 is a folder, %2 the app's id",
                 "SaneCopy runs in a flatpak sandbox, which shows it only the home folder, /media, /run/media and "
                 "/mnt; to let it reach %1: flatpak override --user --filesystem=%1 %2",
                 path, name);
}

namespace {

// A missing path's detail, with what the sandbox hides added where it may be the reason.
std::string missing_detail(std::string detail, const std::string &path)
{
    if (std::string note = sandbox_note(path); !note.empty())
        detail += " (" + note + ")";
    return detail;
}

// The kernel's own resolution of |path| (symlinks followed), read back from /proc/self/fd so it stays on the
// syscall seam. Empty when |path| can't be opened.
std::string real_path(const std::string &path)
{
    UniqueFd fd(sys().openat(AT_FDCWD, path.c_str(), O_PATH | O_CLOEXEC, 0));
    if (!fd)
        return {};
    char buf[PATH_MAX];
    const std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    const ssize_t n = sys().readlinkat(AT_FDCWD, link.c_str(), buf, sizeof buf);
    if (n <= 0 || size_t(n) >= sizeof buf || buf[0] != '/')
        return {};
    return std::string(buf, size_t(n));
}

bool is_within(const std::string &inner, const std::string &outer)
{
    if (outer == "/")
        return true;
    return inner == outer ||
           (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 && inner[outer.size()] == '/');
}

} // namespace

namespace {

// A destination named as a file: its parent folder must exist and be a folder.
Status check_parent_folder(const std::string &target_dir)
{
    struct stat parent {};
    if (sys().fstatat_cached(AT_FDCWD, target_dir.c_str(), &parent, 0) < 0) {
        const int err = errno;
        return Status::destination(err, "destination folder", target_dir)
            .with_detail(err == ENOENT ? missing_detail(i18n("the destination folder does not exist"), target_dir)
                                       : i18nc("%1 is the system's reason", "cannot use the destination folder: %1",
                                               std::error_code(err, std::generic_category()).message()));
    }
    if (!S_ISDIR(parent.st_mode))
        return Status::destination(ENOTDIR, "destination folder", target_dir).with_detail(i18n("is not a folder"));
    return {};
}

// DEST against the rules: a trailing '/' needs an existing folder, several sources need a folder, an exact
// target takes one source and a name.
Status check_destination_shape(std::size_t sources, const std::string &dest, DestinationRule rule, bool dest_exists,
                               bool dest_is_dir)
{
    const bool wants_dir = dest.back() == '/';
    if (rule == DestinationRule::ExactTarget && (sources != 1 || wants_dir))
        return Status::from_errno(EINVAL, "destination", dest)
            .with_detail(i18n("an exact target takes one source and a name"));
    if (wants_dir && !dest_is_dir)
        return Status::destination(dest_exists ? ENOTDIR : ENOENT, "destination", dest)
            .with_detail(dest_exists ? i18n("not a folder (a destination ending in '/' must be an existing folder)")
                                     : missing_detail(i18n("no such folder (a destination ending in '/' must exist)"),
                                                      strip_trailing_slashes(dest)));
    if (!dest_is_dir && sources > 1)
        return Status::destination(dest_exists ? ENOTDIR : ENOENT, "destination", dest)
            .with_detail(i18n("is not an existing folder, and several sources need one"));
    return {};
}

// Where the sources go: the existing folder that receives them (|target_dir|) and, for an exact target, the
// name the single source takes (|as_name|). Fails when the destination can't be used at all.
Status destination_folder(std::size_t sources, const std::string &dest, DestinationRule rule, std::string &target_dir,
                          std::string &as_name)
{
    struct stat dst {};
    // Without the trailing slash, so a file named by "file/" is found (and refused as not a folder). Only its type
    // is asked, which the kernel knows without a round trip to a share's server (the lookup of the name still
    // checks that it stands there).
    const bool dest_exists = sys().fstatat_cached(AT_FDCWD, strip_trailing_slashes(dest).c_str(), &dst, 0) == 0;
    const bool dest_is_dir = dest_exists && S_ISDIR(dst.st_mode) && rule == DestinationRule::FollowCp;
    if (Status s = check_destination_shape(sources, dest, rule, dest_exists, dest_is_dir); !s)
        return s;
    if (dest_is_dir) {
        target_dir = strip_trailing_slashes(dest);
        return {};
    }
    std::tie(target_dir, as_name) = split_path(dest);
    return check_parent_folder(target_dir);
}

Status missing_source(const std::string &source, int err)
{
    Status missing = Status::source(err, "source", source);
    if (err != ENOENT || sandbox_note(source).empty())
        return missing;
    return std::move(missing).with_detail(
        missing_detail(std::error_code(err, std::generic_category()).message(), source));
}

// The item's own folder and name; "sanecp . /mnt" gets the folder's real name, found through its real path.
Status name_source(const std::string &source, CopyItem &item)
{
    std::tie(item.source_dir, item.source_name) = split_path(source);
    if (item.source_name != "." && item.source_name != ".." && item.source_name != "/" && !item.source_name.empty())
        return {};
    const std::string real = real_path(source);
    if (real == "/" || real.empty())
        return Status::from_errno(EINVAL, "source", source).with_detail(i18n("cannot copy the root folder"));
    std::tie(item.source_dir, item.source_name) = split_path(real);
    return {};
}

FolderId folder_id(const std::string &dir)
{
    struct stat st {};
    if (sys().fstatat_cached(AT_FDCWD, dir.c_str(), &st, 0) != 0)
        return {};
    return FolderId {st.st_dev, st.st_ino};
}

// The target is neither the source itself, nor inside the source folder, nor a file a folder would replace.
Status check_target(const std::string &source, const struct stat &st, CopyItem &item, const std::string &target,
                    bool may_replace)
{
    if (item.source_is_dir) {
        const std::string real_source = real_path(source);
        if (!real_source.empty() && is_within(target, real_source))
            return Status::from_errno(EINVAL, "copy into itself", source)
                .with_detail(i18n("cannot copy a folder into itself or one of its subfolders"));
    }
    struct stat existing {};
    if (sys().fstatat(AT_FDCWD, target.c_str(), &existing, AT_SYMLINK_NOFOLLOW) != 0) {
        item.target_absent = errno == ENOENT;
        return {};
    }
    if (existing.st_dev == st.st_dev && existing.st_ino == st.st_ino)
        return Status::from_errno(EINVAL, "same file", source)
            .with_detail(i18n("source and destination are the same file"));
    // A link is copied as a link: over the very file it points to, that file would be gone, the link left
    // pointing at itself. Where nothing is replaced (skipped, or copied under a new name) it goes as any link.
    struct stat pointed {};
    if (may_replace && S_ISLNK(st.st_mode) && sys().fstatat(AT_FDCWD, source.c_str(), &pointed, 0) == 0 &&
        existing.st_dev == pointed.st_dev && existing.st_ino == pointed.st_ino)
        return Status::from_errno(EINVAL, "same file", source)
            .with_detail(i18n("the link points to the file it would replace"));
    if (item.source_is_dir && !S_ISDIR(existing.st_mode))
        return Status::destination(ENOTDIR, "folder onto a file", target)
            .with_detail(i18n("exists and is not a folder; a folder cannot replace it"));
    if (item.source_is_dir)
        item.receiving.target = FolderId {existing.st_dev, existing.st_ino};
    return {};
}

// One source, checked against where it goes: it exists, it is not the root, a folder does not go into itself,
// and the target is neither the source itself nor a file a folder would have to replace.
Result<CopyItem> resolve_source(const std::string &source, const std::string &target_dir, const std::string &as_name,
                                const std::string &real_target_dir, bool may_replace)
{
    struct stat st {};
    if (sys().fstatat(AT_FDCWD, source.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0)
        return missing_source(source, errno);
    CopyItem item;
    item.source = source;
    if (Status s = name_source(source, item); !s)
        return s;
    item.source_is_dir = S_ISDIR(st.st_mode);
    item.target_dir = target_dir;
    item.target_name = as_name.empty() ? item.source_name : as_name;
    const std::string target = (real_target_dir == "/" ? "" : real_target_dir) + "/" + item.target_name;
    if (Status s = check_target(source, st, item, target, may_replace); !s)
        return s;
    // Without the folder's real path the lookup was of another name: nothing is known of the target.
    if (real_target_dir.empty())
        item.target_absent = false;
    return item;
}

} // namespace

Resolution resolve_destination(const std::vector<std::string> &sources, const std::string &dest, DestinationRule rule,
                               const std::function<void(const std::string &folder)> &on_folder, bool may_replace)
{
    Resolution r;
    if (sources.empty() || dest.empty()) {
        r.fatal = Status::from_errno(EINVAL, "usage", dest);
        return r;
    }
    std::string target_dir, as_name;
    if (r.fatal = destination_folder(sources.size(), dest, rule, target_dir, as_name); !r.fatal.ok())
        return r;
    if (on_folder)
        on_folder(target_dir);
    const std::string real_target_dir = real_path(target_dir);
    std::optional<FolderId> receiving; // looked up for the first folder among the sources
    for (const std::string &source : sources) {
        Result<CopyItem> item = resolve_source(source, target_dir, as_name, real_target_dir, may_replace);
        if (!item.ok()) {
            r.errors.push_back(item.status());
            continue;
        }
        if (item.value().source_is_dir) {
            if (!receiving)
                receiving = folder_id(target_dir);
            item.value().receiving.folder = *receiving;
        }
        r.items.push_back(std::move(item.value()));
    }
    return r;
}

} // namespace sanecopy
