// SPDX-License-Identifier: GPL-2.0-or-later
//
// The syscall seam. Every system call the engine makes goes through sys(), so a test can install a
// subclass that injects EINTR, short transfers, ENOSPC, EIO or EXDEV at exactly the call it wants
// (the way fmt's posix-mock-test replaces FMT_SYSTEM). Production code never checks for a test.
//
// Each method mirrors its system call: it returns what the kernel returns and reports failure as -1 with
// errno set (fadvise included, although posix_fadvise itself returns the error number). EINTR is retried here,
// in the seam's public calls, and nowhere else; tests override the raw_ calls beneath, so an EINTR they inject
// goes through the same retry as a real one.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <vector>

struct timespec;

namespace sanecopy {

// Calls |fn| until it returns something other than -1/EINTR. The one EINTR loop of the engine.
template <typename Fn>
auto retry_eintr(Fn &&fn) -> decltype(fn())
{
    for (;;) {
        auto r = fn();
        if (!(r == static_cast<decltype(r)>(-1) && errno == EINTR))
            return r;
    }
}

class Syscalls {
public:
    virtual ~Syscalls() = default;

    // Each call retried while it fails with EINTR, so no call site has to; close is not (see fd.h), nor are
    // the memory calls, which don't return EINTR.
    int openat(int dirfd, const char *path, int flags, mode_t mode)
    {
        return retry_eintr([&] { return raw_openat(dirfd, path, flags, mode); });
    }
    int close(int fd) { return raw_close(fd); }
    int fstat(int fd, struct stat *st)
    {
        return retry_eintr([&] { return raw_fstat(fd, st); });
    }
    int fstatat(int dirfd, const char *path, struct stat *st, int flags)
    {
        return retry_eintr([&] { return raw_fstatat(dirfd, path, st, flags); });
    }
    // As fstatat, from what the kernel already holds of the file (statx's AT_STATX_DONT_SYNC): a share's client
    // answers without asking its server, where fstatat costs a round trip once its cached attributes have aged
    // (an NFS GETATTR, 25 ms over the VM's link, before anything else of a copy could start). For what a file
    // can't change while it is that file: its type, device and inode.
    int fstatat_cached(int dirfd, const char *path, struct stat *st, int flags)
    {
        return retry_eintr([&] { return raw_fstatat(dirfd, path, st, flags | kCachedAttributes); });
    }
    // AT_STATX_DONT_SYNC, which raw_fstatat() takes as "by statx, from the cache" (checked in sys.cpp).
    static constexpr int kCachedAttributes = 0x4000;
    int fstatfs(int fd, struct statfs *st)
    {
        return retry_eintr([&] { return raw_fstatfs(fd, st); });
    }
    ssize_t pread(int fd, void *buf, size_t len, off_t off)
    {
        return retry_eintr([&] { return raw_pread(fd, buf, len, off); });
    }
    ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
    {
        return retry_eintr([&] { return raw_pwrite(fd, buf, len, off); });
    }
    ssize_t sendfile(int out_fd, int in_fd, off_t *in_off, size_t len)
    {
        return retry_eintr([&] { return raw_sendfile(out_fd, in_fd, in_off, len); });
    }
    ssize_t copy_file_range(int in_fd, off_t *in_off, int out_fd, off_t *out_off, size_t len)
    {
        return retry_eintr([&] { return raw_copy_file_range(in_fd, in_off, out_fd, out_off, len); });
    }
    int ficlone(int dst_fd, int src_fd)
    {
        return retry_eintr([&] { return raw_ficlone(dst_fd, src_fd); });
    }
    int fallocate(int fd, int mode, off_t off, off_t len)
    {
        return retry_eintr([&] { return raw_fallocate(fd, mode, off, len); });
    }
    int ftruncate(int fd, off_t len)
    {
        return retry_eintr([&] { return raw_ftruncate(fd, len); });
    }
    off_t lseek(int fd, off_t off, int whence)
    {
        return retry_eintr([&] { return raw_lseek(fd, off, whence); });
    }
    int fdatasync(int fd)
    {
        return retry_eintr([&] { return raw_fdatasync(fd); });
    }
    int fsync(int fd)
    {
        return retry_eintr([&] { return raw_fsync(fd); });
    }
    int syncfs(int fd)
    {
        return retry_eintr([&] { return raw_syncfs(fd); });
    }
    int sync_file_range(int fd, off_t off, off_t len, unsigned flags)
    {
        return retry_eintr([&] { return raw_sync_file_range(fd, off, len, flags); });
    }
    int fadvise(int fd, off_t off, off_t len, int advice)
    {
        return retry_eintr([&] { return raw_fadvise(fd, off, len, advice); });
    }
    void *mmap(size_t len, int prot, int flags, int fd, off_t off) { return raw_mmap(len, prot, flags, fd, off); }
    int munmap(void *addr, size_t len) { return raw_munmap(addr, len); }
    int mincore(void *addr, size_t len, unsigned char *vec) { return raw_mincore(addr, len, vec); }
    int msync(void *addr, size_t len, int flags)
    {
        return retry_eintr([&] { return raw_msync(addr, len, flags); });
    }
    int renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags)
    {
        return retry_eintr([&] { return raw_renameat2(olddir, oldpath, newdir, newpath, flags); });
    }
    int linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags)
    {
        return retry_eintr([&] { return raw_linkat(olddir, oldpath, newdir, newpath, flags); });
    }
    int unlinkat(int dirfd, const char *path, int flags)
    {
        return retry_eintr([&] { return raw_unlinkat(dirfd, path, flags); });
    }
    int mkdirat(int dirfd, const char *path, mode_t mode)
    {
        return retry_eintr([&] { return raw_mkdirat(dirfd, path, mode); });
    }
    ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len)
    {
        return retry_eintr([&] { return raw_readlinkat(dirfd, path, buf, len); });
    }
    int symlinkat(const char *target, int dirfd, const char *path)
    {
        return retry_eintr([&] { return raw_symlinkat(target, dirfd, path); });
    }
    int fchmod(int fd, mode_t mode)
    {
        return retry_eintr([&] { return raw_fchmod(fd, mode); });
    }
    int futimens(int fd, const struct timespec times[2])
    {
        return retry_eintr([&] { return raw_futimens(fd, times); });
    }
    int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags)
    {
        return retry_eintr([&] { return raw_utimensat(dirfd, path, times, flags); });
    }
    int fcntl_setfl(int fd, int flags)
    {
        return retry_eintr([&] { return raw_fcntl_setfl(fd, flags); });
    }
    int flock(int fd, int operation)
    {
        return retry_eintr([&] { return raw_flock(fd, operation); });
    }
    uid_t geteuid() { return raw_geteuid(); }
    // Lists a directory's entries (without "." and ".."). Returns 0 or -1 with errno. Reads through a duplicate
    // of |dirfd|, which stays open and untouched.
    int list_dir(int dirfd, std::vector<std::string> &names)
    {
        return retry_eintr([&] { return raw_list_dir(dirfd, names); });
    }

protected:
    // One attempt at each call, EINTR and all: what a test replaces to inject faults.
    virtual int raw_openat(int dirfd, const char *path, int flags, mode_t mode);
    virtual int raw_close(int fd);
    virtual int raw_fstat(int fd, struct stat *st);
    virtual int raw_fstatat(int dirfd, const char *path, struct stat *st, int flags);
    virtual int raw_fstatfs(int fd, struct statfs *st);
    virtual ssize_t raw_pread(int fd, void *buf, size_t len, off_t off);
    virtual ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off);
    virtual ssize_t raw_sendfile(int out_fd, int in_fd, off_t *in_off, size_t len);
    virtual ssize_t raw_copy_file_range(int in_fd, off_t *in_off, int out_fd, off_t *out_off, size_t len);
    virtual int raw_ficlone(int dst_fd, int src_fd);
    virtual int raw_fallocate(int fd, int mode, off_t off, off_t len);
    virtual int raw_ftruncate(int fd, off_t len);
    virtual off_t raw_lseek(int fd, off_t off, int whence);
    virtual int raw_fdatasync(int fd);
    virtual int raw_fsync(int fd);
    virtual int raw_syncfs(int fd);
    virtual int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags);
    virtual int raw_fadvise(int fd, off_t off, off_t len, int advice);
    virtual void *raw_mmap(size_t len, int prot, int flags, int fd, off_t off);
    virtual int raw_munmap(void *addr, size_t len);
    virtual int raw_mincore(void *addr, size_t len, unsigned char *vec);
    virtual int raw_msync(void *addr, size_t len, int flags);
    virtual int raw_renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags);
    virtual int raw_linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags);
    virtual int raw_unlinkat(int dirfd, const char *path, int flags);
    virtual int raw_mkdirat(int dirfd, const char *path, mode_t mode);
    virtual ssize_t raw_readlinkat(int dirfd, const char *path, char *buf, size_t len);
    virtual int raw_symlinkat(const char *target, int dirfd, const char *path);
    virtual int raw_fchmod(int fd, mode_t mode);
    virtual int raw_futimens(int fd, const struct timespec times[2]);
    virtual int raw_utimensat(int dirfd, const char *path, const struct timespec times[2], int flags);
    virtual int raw_fcntl_setfl(int fd, int flags);
    virtual int raw_flock(int fd, int operation);
    virtual uid_t raw_geteuid();
    virtual int raw_list_dir(int dirfd, std::vector<std::string> &names);
};

// The installed seam. Defaults to the real system calls.
Syscalls &sys() noexcept;

// Installs |replacement| for the lifetime of the guard (tests only). Not for use while jobs run. A job calls it
// from several threads (its settle and window threads, and plan_job's probe beside the targets' lookups), so what
// a replacement records must be safe to record from any of them.
class ScopedSyscalls {
public:
    explicit ScopedSyscalls(Syscalls &replacement) noexcept;
    ~ScopedSyscalls();
    ScopedSyscalls(const ScopedSyscalls &) = delete;
    ScopedSyscalls &operator=(const ScopedSyscalls &) = delete;

private:
    Syscalls *previous_;
};

// Raises this process's soft limit on open files to its hard limit (at most 65536), for front ends to call
// at start. A batch of small files keeps a descriptor per file until its group is on the device, and the soft
// limit most sessions start with (1024) would cut groups to a size where their syncs, not the device, set the
// pace. Safe because nothing here uses select(). Returns the soft limit now in force.
unsigned long raise_open_file_limit();

} // namespace sanecopy
