// SPDX-License-Identifier: GPL-2.0-or-later
#include "publish.h"

#include "sys.h"

#include <climits>
#include <cstdio>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace sanecopy {

const char *to_string(ConflictPolicy policy)
{
    switch (policy) {
    case ConflictPolicy::Refuse:
        return "refuse";
    case ConflictPolicy::Skip:
        return "skip";
    case ConflictPolicy::Rename:
        return "rename";
    case ConflictPolicy::Overwrite:
        return "overwrite";
    }
    return "?";
}

std::string part_name_for(const std::string &name)
{
    std::string part = "." + name + ".part";
    if (part.size() <= NAME_MAX)
        return part;
    // Keep it recognisable and unique per name: a prefix of the name plus a hash of the whole of it.
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string> {}(name));
    return "." + name.substr(0, NAME_MAX - 1 - 16 - 1 - 5) + "~" + hash + ".part";
}

std::string alternative_name(const std::string &name, unsigned n)
{
    // "archive.tar.gz" -> "archive (1).tar.gz" would be nicer, but which dot starts the extension is a guess;
    // the last dot is what file managers use too. Hidden files (".bashrc") have no extension.
    const auto dot = name.rfind('.');
    const bool has_ext = dot != std::string::npos && dot > 0;
    const std::string stem = has_ext ? name.substr(0, dot) : name;
    const std::string ext = has_ext ? name.substr(dot) : std::string();
    return stem + " (" + std::to_string(n) + ")" + ext;
}

namespace {

// The process's umask, read once from /proc/self/status (umask(2) can only be read by changing it, which would
// race with other threads creating files). -1 when the kernel doesn't say (before Linux 4.7).
int process_umask()
{
    static const int mask = [] {
        FILE *f = std::fopen("/proc/self/status", "re");
        if (!f)
            return -1;
        char line[256];
        int value = -1;
        while (std::fgets(line, sizeof line, f)) {
            unsigned m = 0;
            if (std::sscanf(line, "Umask: %o", &m) == 1) {
                value = int(m);
                break;
            }
        }
        std::fclose(f);
        return value;
    }();
    return mask;
}

} // namespace

PartFile::PartFile(PartFile &&other) noexcept { *this = std::move(other); }

PartFile &PartFile::operator=(PartFile &&other) noexcept
{
    if (this != &other) {
        discard();
        dir_ = std::move(other.dir_);
        fd_ = std::move(other.fd_);
        name_ = std::move(other.name_);
        part_ = std::move(other.part_);
        display_ = std::move(other.display_);
        dir_path_ = std::move(other.dir_path_);
        owned_ = std::exchange(other.owned_, false);
        created_bits_ = other.created_bits_;
        committed_ = std::exchange(other.committed_, false);
        read_only_ = std::exchange(other.read_only_, false);
    }
    return *this;
}

PartFile::~PartFile() { discard(); }

PartFile PartFile::named(SharedDirFd dir, const std::string &dir_path, const std::string &name)
{
    PartFile part;
    part.dir_ = std::move(dir);
    part.name_ = name;
    part.part_ = part_name_for(name);
    part.display_ = dir_path + "/" + name;
    part.dir_path_ = dir_path;
    return part;
}

Result<PartFile> PartFile::create(SharedDirFd dir, const std::string &dir_path, const std::string &name, mode_t mode,
                                  bool replace_left)
{
    PartFile part = named(std::move(dir), dir_path, name);
    if (Status s = part.create_file(mode, replace_left); !s)
        return s;
    return part;
}

PartFile PartFile::to_create(SharedDirFd dir, const std::string &dir_path, const std::string &name)
{
    return named(std::move(dir), dir_path, name);
}

Status PartFile::create_file(mode_t mode, bool replace_left)
{
    // Read access too, though nothing reads it here: a share's windows are synced through a map of the file
    // (WritebackWindows), and a file open only for writing can't be mapped.
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    for (int attempt = 0;; ++attempt) {
        int fd = sys().openat(dir_->get(), part_.c_str(), flags, mode);
        if (fd >= 0) {
            fd_.reset(fd);
            owned_ = true;
            if (const int mask = process_umask(); mask >= 0)
                created_bits_ = int(mode & 0777 & ~mode_t(mask));
            return {};
        }
        if (errno == EEXIST && attempt == 0 && replace_left) {
            // Left by an interrupted run. Only a regular file is taken away; anything else under a name of
            // that shape is not ours.
            struct stat st {};
            if (sys().fstatat(dir_->get(), part_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                sys().unlinkat(dir_->get(), part_.c_str(), 0) == 0)
                continue;
            errno = EEXIST;
        }
        return Status::destination(errno, "create", dir_path_ + "/" + part_);
    }
}

Result<PartFile> PartFile::reopen(SharedDirFd dir, const std::string &dir_path, const std::string &name, uint64_t &size)
{
    PartFile part = named(std::move(dir), dir_path, name);
    int fd = sys().openat(part.dir_->get(), part.part_.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return Status::destination(errno == ELOOP ? ENOENT : errno, "open", dir_path + "/" + part.part_);
    part.fd_.reset(fd);
    struct stat st {};
    if (sys().fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return Status::destination(ENOENT, "open", dir_path + "/" + part.part_);
    part.owned_ = true;
    size = uint64_t(st.st_size);
    // The run that wrote this part may have failed in its writeback and been told so by a sync of the whole
    // filesystem (syncfs), which leaves the error on the file unseen: then the first sync of this run would report
    // it, a failure of the old run taken for one of this run's (an NFS share that dropped out and came back: the
    // resumed copy failed at once). Taken here instead, with whatever the old run left dirty written out, and its
    // cached pages dropped, so the prefix this run trusts is read back from the device, not from that run's cache.
    sys().fdatasync(fd);
    sys().fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return part;
}

void PartFile::keep()
{
    owned_ = false;
    fd_.reset();
}

Result<UniqueFd> PartFile::open_for_reading() const
{
    int fd = sys().openat(dir_->get(), part_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return Status::destination(errno, "open", display_);
    return UniqueFd(fd);
}

Status PartFile::set_attributes(mode_t mode, const struct timespec &mtime)
{
    const mode_t wanted = mode & 07777 & ~mode_t(S_ISUID | S_ISGID);
    if (created_bits_ >= 0 && mode_t(created_bits_) == wanted) {
        struct timespec times[2] = {{0, UTIME_OMIT}, mtime};
        if (sys().futimens(fd_.get(), times) < 0 && !cannot_store_attributes(errno))
            return Status::destination(errno, "futimens", display_);
        return {};
    }
    return apply_attributes(fd_.get(), mode, mtime, display_);
}

bool cannot_store_attributes(int err)
{
    // FAT has no permission bits (vfat refuses what it can't represent with EPERM), and several FUSE drivers
    // implement neither chmod nor utimens: kio-fuse, the folder Dolphin's smb:// and sftp:// copies go through,
    // answers a file's time with ENOTTY, and before that was taken here nothing could be copied into it. Such a
    // filesystem keeps the data; the attributes are best-effort.
    return err == ENOSYS || err == EOPNOTSUPP || err == EPERM || err == ENOTTY;
}

Status apply_attributes(int fd, mode_t mode, const struct timespec &mtime, const std::string &display)
{
    // Ownership is not copied, so neither are set-user/group-ID bits: they would hand the copier's identity
    // to whatever the file runs.
    if (sys().fchmod(fd, mode & 07777 & ~mode_t(S_ISUID | S_ISGID)) < 0 && !cannot_store_attributes(errno))
        return Status::destination(errno, "fchmod", display);
    struct timespec times[2] = {{0, UTIME_OMIT}, mtime};
    if (sys().futimens(fd, times) < 0 && !cannot_store_attributes(errno))
        return Status::destination(errno, "futimens", display);
    return {};
}

Status PartFile::sync_data(DataSync how)
{
    if (how == DataSync::FilesystemFirst && sys().syncfs(fd_.get()) < 0)
        return Status::destination(errno, "syncfs", display_);
    if (sys().fdatasync(fd_.get()) < 0)
        return Status::destination(errno, "fdatasync", display_);
    return {};
}

Status PartFile::close_fd()
{
    if (int err = fd_.reset(); err)
        return Status::destination(err, "close", display_);
    return {};
}

namespace {

// rename without replacing. RENAME_NOREPLACE is refused by some filesystems (several FUSE ones), and there the
// fallback checks first: a race with another writer in that instant is the one gap left.
int rename_noreplace(int dirfd, const char *from, const char *to)
{
    if (sys().renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return -1;
    struct stat st {};
    if (sys().fstatat(dirfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    return sys().renameat2(dirfd, from, dirfd, to, 0);
}

Status rename_into_place(int dirfd, const std::string &from, const std::string &name, const std::string &display,
                         ConflictPolicy policy, std::string *final_name)
{
    if (final_name)
        *final_name = name;
    if (policy == ConflictPolicy::Overwrite) {
        struct stat st {};
        // rename() would happily replace an empty directory with a file; a folder is never overwritten by a file.
        if (sys().fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            return Status::destination(EISDIR, "rename", display);
        if (sys().renameat2(dirfd, from.c_str(), dirfd, name.c_str(), 0) < 0)
            return Status::destination(errno, "rename", display);
        return {};
    }
    if (rename_noreplace(dirfd, from.c_str(), name.c_str()) == 0)
        return {};
    if (errno != EEXIST || policy != ConflictPolicy::Rename)
        return Status::destination(errno, "rename", display);
    for (unsigned n = 1; n < 10000; ++n) {
        const std::string alt = alternative_name(name, n);
        if (rename_noreplace(dirfd, from.c_str(), alt.c_str()) == 0) {
            if (final_name)
                *final_name = alt;
            return {};
        }
        if (errno != EEXIST)
            return Status::destination(errno, "rename", display);
    }
    return Status::destination(EEXIST, "rename", display);
}

} // namespace

Status PartFile::commit(ConflictPolicy policy, std::string *final_name)
{
    Status s = rename_into_place(dir_->get(), part_, name_, display_, policy, final_name);
    if (s) {
        owned_ = false;
        committed_ = true;
    }
    return s;
}

void PartFile::discard()
{
    if (owned_ && dir_) {
        // Drop the descriptor first: an unlinked file's dirty pages are thrown away only once it is closed.
        fd_.reset();
        sys().unlinkat(dir_->get(), part_.c_str(), 0);
    }
    owned_ = false;
    fd_.reset();
}

Status reserve_space(const PartFile &part, uint64_t from, uint64_t to)
{
    if (to <= from)
        return {};
    if (sys().fallocate(part.fd(), FALLOC_FL_KEEP_SIZE, off_t(from), off_t(to - from)) < 0 &&
        (errno == ENOSPC || errno == EDQUOT))
        return Status::destination(errno, "allocate", part.display_path());
    return {};
}

Status publish_synced(PartFile &part, const PublishSteps &steps, std::string *final_name)
{
    if (steps.verify) {
        if (Status s = steps.verify(part); !s)
            return s;
    }
    if (steps.before_commit) {
        if (Status s = steps.before_commit(); !s)
            return s;
    }
    return part.commit(steps.policy, final_name);
}

Status publish(PartFile &part, const PublishSteps &steps, std::string *final_name)
{
    if (steps.syncs && !steps.data_durable) {
        if (Status s = part.sync_data(steps.data_sync); !s)
            return s;
    }
    if (steps.on_durable)
        steps.on_durable();
    if (Status s = publish_synced(part, steps, final_name); !s)
        return s;
    // Published; a failure here says only that the rename may not survive a power cut.
    return steps.syncs ? sync_directory(part.dir()->get(), part.dir_path()) : Status();
}

Status publish_symlink(const SharedDirFd &dir, const std::string &dir_path, const std::string &name,
                       const std::string &target, const struct timespec &mtime, ConflictPolicy policy,
                       std::string *final_name)
{
    const std::string part = part_name_for(name);
    const std::string display = dir_path + "/" + name;
    if (sys().symlinkat(target.c_str(), dir->get(), part.c_str()) < 0) {
        if (errno != EEXIST)
            return Status::destination(errno, "symlink", display);
        struct stat st {};
        if (sys().fstatat(dir->get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode) ||
            sys().unlinkat(dir->get(), part.c_str(), 0) < 0 ||
            sys().symlinkat(target.c_str(), dir->get(), part.c_str()) < 0)
            return Status::destination(EEXIST, "symlink", display);
    }
    struct timespec times[2] = {{0, UTIME_OMIT}, mtime};
    // Not every filesystem keeps link times (FAT has no links at all); the link itself matters more.
    sys().utimensat(dir->get(), part.c_str(), times, AT_SYMLINK_NOFOLLOW);
    Status s = rename_into_place(dir->get(), part, name, display, policy, final_name);
    if (!s)
        sys().unlinkat(dir->get(), part.c_str(), 0);
    return s;
}

Status sync_directory(int dirfd, const std::string &path)
{
    if (sys().fsync(dirfd) < 0)
        return Status::destination(errno, "fsync", path);
    return {};
}

} // namespace sanecopy
