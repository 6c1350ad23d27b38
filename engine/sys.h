// SPDX-License-Identifier: GPL-2.0-or-later
//
// The syscall seam. Every system call the engine makes goes through sys(), so a test can install a
// subclass that injects EINTR, short transfers, ENOSPC, EIO or EXDEV at exactly the call it wants
// (the way fmt's posix-mock-test replaces FMT_SYSTEM). Production code never checks for a test.
//
// Each method mirrors its system call: it returns what the kernel returns and reports failure as -1 with
// errno set (fadvise included, although posix_fadvise itself returns the error number). Nothing here retries:
// EINTR handling lives in retry_eintr() below, in one place.
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

class Syscalls {
public:
    virtual ~Syscalls() = default;

    virtual int openat(int dirfd, const char *path, int flags, mode_t mode);
    virtual int close(int fd);
    virtual int fstat(int fd, struct stat *st);
    virtual int fstatat(int dirfd, const char *path, struct stat *st, int flags);
    virtual int fstatfs(int fd, struct statfs *st);
    virtual ssize_t pread(int fd, void *buf, size_t len, off_t off);
    virtual ssize_t pwrite(int fd, const void *buf, size_t len, off_t off);
    virtual ssize_t sendfile(int out_fd, int in_fd, off_t *in_off, size_t len);
    virtual ssize_t copy_file_range(int in_fd, off_t *in_off, int out_fd, off_t *out_off, size_t len);
    virtual int ficlone(int dst_fd, int src_fd);
    virtual int fallocate(int fd, int mode, off_t off, off_t len);
    virtual int ftruncate(int fd, off_t len);
    virtual off_t lseek(int fd, off_t off, int whence);
    virtual int fdatasync(int fd);
    virtual int fsync(int fd);
    virtual int syncfs(int fd);
    virtual int sync_file_range(int fd, off_t off, off_t len, unsigned flags);
    virtual int fadvise(int fd, off_t off, off_t len, int advice);
    virtual void *mmap(size_t len, int prot, int flags, int fd, off_t off);
    virtual int munmap(void *addr, size_t len);
    virtual int mincore(void *addr, size_t len, unsigned char *vec);
    virtual int renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags);
    virtual int linkat(int olddir, const char *oldpath, int newdir, const char *newpath, int flags);
    virtual int unlinkat(int dirfd, const char *path, int flags);
    virtual int mkdirat(int dirfd, const char *path, mode_t mode);
    virtual ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t len);
    virtual int symlinkat(const char *target, int dirfd, const char *path);
    virtual int fchmod(int fd, mode_t mode);
    virtual int futimens(int fd, const struct timespec times[2]);
    virtual int utimensat(int dirfd, const char *path, const struct timespec times[2], int flags);
    virtual int fcntl_setfl(int fd, int flags);
    virtual int flock(int fd, int operation);
    // Lists a directory's entries (without "." and ".."). Returns 0 or -1 with errno. Reads through a
    // duplicate of |dirfd|, which stays open and untouched.
    virtual int list_dir(int dirfd, std::vector<std::string> &names);
};

// The installed seam. Defaults to the real system calls.
Syscalls &sys() noexcept;

// Installs |replacement| for the lifetime of the guard (tests only). Not for use while jobs run.
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

} // namespace sanecopy
