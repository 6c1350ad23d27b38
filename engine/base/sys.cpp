// SPDX-License-Identifier: GPL-2.0-or-later
#include "sys.h"

#include <algorithm>
#include <sys/resource.h>

#include "fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace sanecopy {

namespace {
Syscalls g_real;
std::atomic<Syscalls *> g_current {&g_real};
} // namespace

Syscalls &sys() noexcept { return *g_current.load(std::memory_order_acquire); }

ScopedSyscalls::ScopedSyscalls(Syscalls &replacement) noexcept
    : previous_(g_current.exchange(&replacement, std::memory_order_acq_rel))
{}

ScopedSyscalls::~ScopedSyscalls() { g_current.store(previous_, std::memory_order_release); }

int UniqueFd::reset(int fd) noexcept
{
    int err = 0;
    if (fd_ >= 0 && sys().close(fd_) < 0 && errno != EINTR)
        err = errno;
    fd_ = fd;
    return err;
}

int Syscalls::raw_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return ::openat(dirfd, path, flags, mode);
}
int Syscalls::raw_close(int fd) { return ::close(fd); }
int Syscalls::raw_fstat(int fd, struct stat *st) { return ::fstat(fd, st); }
static_assert(Syscalls::kCachedAttributes == AT_STATX_DONT_SYNC);

int Syscalls::raw_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    if (!(flags & AT_STATX_DONT_SYNC))
        return ::fstatat(dirfd, path, st, flags);
    struct statx sx {};
    if (::statx(dirfd, path, flags, STATX_BASIC_STATS, &sx) < 0)
        return errno == ENOSYS ? ::fstatat(dirfd, path, st, flags & ~AT_STATX_DONT_SYNC) : -1;
    *st = {};
    st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
    st->st_ino = sx.stx_ino;
    st->st_mode = sx.stx_mode;
    st->st_nlink = sx.stx_nlink;
    st->st_uid = sx.stx_uid;
    st->st_gid = sx.stx_gid;
    st->st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor);
    st->st_size = off_t(sx.stx_size);
    st->st_blksize = blksize_t(sx.stx_blksize);
    st->st_blocks = blkcnt_t(sx.stx_blocks);
    st->st_atim = {sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec};
    st->st_mtim = {sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec};
    st->st_ctim = {sx.stx_ctime.tv_sec, sx.stx_ctime.tv_nsec};
    return 0;
}
int Syscalls::raw_fstatfs(int fd, struct statfs *st) { return ::fstatfs(fd, st); }
ssize_t Syscalls::raw_pread(int fd, void *buf, size_t len, off_t off) { return ::pread(fd, buf, len, off); }
ssize_t Syscalls::raw_pwrite(int fd, const void *buf, size_t len, off_t off) { return ::pwrite(fd, buf, len, off); }
ssize_t Syscalls::raw_sendfile(int out_fd, int in_fd, off_t *in_off, size_t len)
{
    return ::sendfile(out_fd, in_fd, in_off, len);
}
ssize_t Syscalls::raw_copy_file_range(int in_fd, off_t *in_off, int out_fd, off_t *out_off, size_t len)
{
    return ::copy_file_range(in_fd, in_off, out_fd, out_off, len, 0);
}
int Syscalls::raw_ficlone(int dst_fd, int src_fd) { return ::ioctl(dst_fd, FICLONE, src_fd); }
int Syscalls::raw_fallocate(int fd, int mode, off_t off, off_t len) { return ::fallocate(fd, mode, off, len); }
int Syscalls::raw_ftruncate(int fd, off_t len) { return ::ftruncate(fd, len); }
off_t Syscalls::raw_lseek(int fd, off_t off, int whence) { return ::lseek(fd, off, whence); }
int Syscalls::raw_fdatasync(int fd) { return ::fdatasync(fd); }
int Syscalls::raw_fsync(int fd) { return ::fsync(fd); }
int Syscalls::raw_syncfs(int fd) { return ::syncfs(fd); }
int Syscalls::raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags)
{
    return ::sync_file_range(fd, off, len, flags);
}
int Syscalls::raw_fadvise(int fd, off_t off, off_t len, int advice)
{
    int err = ::posix_fadvise(fd, off, len, advice);
    if (err == 0)
        return 0;
    errno = err;
    return -1;
}
void *Syscalls::raw_mmap(size_t len, int prot, int flags, int fd, off_t off)
{
    return ::mmap(nullptr, len, prot, flags, fd, off);
}
int Syscalls::raw_munmap(void *addr, size_t len) { return ::munmap(addr, len); }
int Syscalls::raw_mincore(void *addr, size_t len, unsigned char *vec) { return ::mincore(addr, len, vec); }
int Syscalls::raw_msync(void *addr, size_t len, int flags) { return ::msync(addr, len, flags); }
int Syscalls::raw_renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags)
{
    return ::renameat2(olddir, oldpath, newdir, newpath, flags);
}
int Syscalls::raw_linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags)
{
    return ::linkat(olddir, oldpath, newdir, newpath, flags);
}
int Syscalls::raw_unlinkat(int dirfd, const char *path, int flags) { return ::unlinkat(dirfd, path, flags); }
int Syscalls::raw_mkdirat(int dirfd, const char *path, mode_t mode) { return ::mkdirat(dirfd, path, mode); }
ssize_t Syscalls::raw_readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
    return ::readlinkat(dirfd, path, buf, len);
}
int Syscalls::raw_symlinkat(const char *target, int dirfd, const char *path)
{
    return ::symlinkat(target, dirfd, path);
}
int Syscalls::raw_fchmod(int fd, mode_t mode) { return ::fchmod(fd, mode); }
int Syscalls::raw_futimens(int fd, const struct timespec times[2]) { return ::futimens(fd, times); }
int Syscalls::raw_utimensat(int dirfd, const char *path, const struct timespec times[2], int flags)
{
    return ::utimensat(dirfd, path, times, flags);
}
int Syscalls::raw_fcntl_setfl(int fd, int flags) { return ::fcntl(fd, F_SETFL, flags); }
int Syscalls::raw_flock(int fd, int operation) { return ::flock(fd, operation); }
uid_t Syscalls::raw_geteuid() { return ::geteuid(); }

int Syscalls::raw_list_dir(int dirfd, std::vector<std::string> &names)
{
    // fdopendir takes ownership of the descriptor it is given, so it gets a duplicate; the caller's stays
    // pinned. The duplicate shares the file offset, hence the rewind.
    int dup_fd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0)
        return -1;
    DIR *dir = ::fdopendir(dup_fd);
    if (!dir) {
        int err = errno;
        ::close(dup_fd);
        errno = err;
        return -1;
    }
    ::rewinddir(dir);
    names.clear();
    for (;;) {
        errno = 0;
        const dirent *entry = ::readdir(dir);
        if (!entry)
            break;
        std::string_view name = entry->d_name;
        if (name == "." || name == "..")
            continue;
        names.emplace_back(name);
    }
    int err = errno;
    ::closedir(dir);
    errno = err;
    return err ? -1 : 0;
}

unsigned long raise_open_file_limit()
{
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    const rlim_t wanted = rl.rlim_max == RLIM_INFINITY ? 65536 : std::min<rlim_t>(rl.rlim_max, 65536);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < wanted) {
        rl.rlim_cur = wanted;
        ::setrlimit(RLIMIT_NOFILE, &rl);
        ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur;
}

} // namespace sanecopy
