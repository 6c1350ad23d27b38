// SPDX-License-Identifier: GPL-2.0-or-later
//
// A syscall seam for tests: counts calls and injects the faults a copy meets in the field (EINTR, short
// transfers, ENOSPC or EIO after so many bytes, unsupported mechanisms), and can slow data calls down so
// progress and pause/cancel are observable. Install with sanecopy::ScopedSyscalls.
#pragma once

#include "sys.h"
#include "test_support.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace sanecopy::test {

struct FaultSyscalls : Syscalls {
    // Knobs (set before the copy starts).
    int ficlone_errno = EOPNOTSUPP; // ext4 has no reflinks anyway; tests that want a clone set 0
    int copy_file_range_errno = 0;
    int sendfile_errno = 0;
    int data_errno = 0; // any data call fails with this once |fail_after_bytes| have moved
    uint64_t fail_after_bytes = UINT64_MAX;
    size_t max_transfer = 0; // 0: no cap; else short transfers of at most this many bytes
    int eintr_every = 0;     // every Nth data call returns EINTR first
    int fdatasync_errno = 0;
    std::atomic<int> fdatasync_errno_once {0}; // the next fdatasync fails with this, later ones as fdatasync_errno says
    int msync_errno = 0;
    std::atomic<int> fsync_errno_once {0}; // the next fsync fails with this
    // The msync numbered |msync_fail_call| (from 1) fails with |msync_fail_errno|; the others as msync_errno says.
    int msync_fail_call = 0;
    int msync_fail_errno = 0;
    bool refuse_mmap = false; // every mmap fails with ENODEV, as on a filesystem without it
    int syncfs_errno = 0;
    int futimens_errno = 0; // every futimens fails with this (kio-fuse answers ENOTTY)
    // O_DIRECT set with fcntl is kept here instead of being passed on (the test's own folder may not take it);
    // a write through such a descriptor counts in direct_pwrites, or fails with this.
    int direct_pwrite_errno = 0;
    std::chrono::microseconds data_delay {0};
    std::function<void(const char *path, int flags)> on_open;
    // Called before each rename with its two names; an errno it returns fails the rename with it.
    std::function<int(const char *from, const char *to)> on_rename;

    // What happened.
    std::atomic<int> ficlone_calls {0}, copy_file_range_calls {0}, sendfile_calls {0}, pwrite_calls {0};
    std::atomic<int> fdatasync_calls {0}, fsync_calls {0}, syncfs_calls {0}, sync_file_range_calls {0};
    std::atomic<int> msync_calls {0}, msyncs_returned {0}; // the second: real syncs done, counted once returned
    std::atomic<uint64_t> msync_bytes {0}, msync_widest {0};
    std::atomic<int> seeks_to_start {0}; // lseek(fd, 0, SEEK_SET): a copy that starts over positions its file there
    std::atomic<int> sync_file_range_waits {0}, dontneed_calls {0}, willneed_calls {0}, eintr_injected {0};
    std::atomic<uint64_t> moved {0};
    std::atomic<int> data_calls {0};
    std::atomic<uint64_t> read_bytes {0};     // what preads returned
    std::chrono::microseconds read_delay {0}; // each pread (reading back, comparing) this long
    std::atomic<int> direct_pwrites {0}, direct_sets {0};
    std::atomic<int> direct_fd {-1}; // the descriptor O_DIRECT is set on, if any
    std::atomic<int> in_data_call {0}, max_concurrent_data_calls {0};

    // Returns 0 to go on with |len| (possibly capped), or an errno to fail with.
    int before_data(size_t &len)
    {
        // Counted per seam, so each test starts from zero whatever ran before it.
        const int calls = ++data_calls;
        if (eintr_every > 0 && calls % eintr_every == 0) {
            ++eintr_injected;
            return EINTR;
        }
        if (data_errno && moved.load() >= fail_after_bytes)
            return data_errno;
        if (max_transfer && len > max_transfer)
            len = max_transfer;
        if (data_errno && fail_after_bytes != UINT64_MAX && moved.load() + len > fail_after_bytes)
            len = size_t(fail_after_bytes - moved.load());
        if (data_delay.count() > 0)
            std::this_thread::sleep_for(data_delay);
        return 0;
    }

    struct Concurrency {
        FaultSyscalls &f;
        explicit Concurrency(FaultSyscalls &s) : f(s)
        {
            int now = ++f.in_data_call;
            int prev = f.max_concurrent_data_calls.load();
            while (now > prev && !f.max_concurrent_data_calls.compare_exchange_weak(prev, now)) {
            }
        }
        ~Concurrency() { --f.in_data_call; }
    };

    int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
    {
        if (on_open)
            on_open(path, flags);
        return Syscalls::raw_openat(dirfd, path, flags, mode);
    }
    int raw_renameat2(int olddir, const char *oldpath, int newdir, const char *newpath, unsigned flags) override
    {
        if (on_rename) {
            if (const int err = on_rename(oldpath, newpath)) {
                errno = err;
                return -1;
            }
        }
        return Syscalls::raw_renameat2(olddir, oldpath, newdir, newpath, flags);
    }
    int raw_ficlone(int dst, int src) override
    {
        ++ficlone_calls;
        if (ficlone_errno) {
            errno = ficlone_errno;
            return -1;
        }
        return Syscalls::raw_ficlone(dst, src);
    }
    ssize_t raw_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len) override
    {
        ++copy_file_range_calls;
        if (copy_file_range_errno) {
            errno = copy_file_range_errno;
            return -1;
        }
        Concurrency c(*this);
        if (int err = before_data(len)) {
            errno = err;
            return -1;
        }
        ssize_t r = Syscalls::raw_copy_file_range(in, in_off, out, out_off, len);
        if (r > 0)
            moved += uint64_t(r);
        return r;
    }
    ssize_t raw_sendfile(int out, int in, off_t *off, size_t len) override
    {
        ++sendfile_calls;
        if (sendfile_errno) {
            errno = sendfile_errno;
            return -1;
        }
        Concurrency c(*this);
        if (int err = before_data(len)) {
            errno = err;
            return -1;
        }
        ssize_t r = Syscalls::raw_sendfile(out, in, off, len);
        if (r > 0)
            moved += uint64_t(r);
        return r;
    }
    int raw_fcntl_setfl(int fd, int flags) override
    {
        if (flags & O_DIRECT) {
            direct_fd = fd;
            ++direct_sets;
        } else if (direct_fd == fd)
            direct_fd = -1;
        return Syscalls::raw_fcntl_setfl(fd, flags & ~O_DIRECT);
    }
    ssize_t raw_pread(int fd, void *buf, size_t len, off_t off) override
    {
        if (read_delay.count() > 0)
            std::this_thread::sleep_for(read_delay);
        const ssize_t r = Syscalls::raw_pread(fd, buf, len, off);
        if (r > 0)
            read_bytes += uint64_t(r);
        return r;
    }
    ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off) override
    {
        ++pwrite_calls;
        if (fd == direct_fd) {
            if (direct_pwrite_errno) {
                errno = direct_pwrite_errno;
                return -1;
            }
            ++direct_pwrites;
        }
        Concurrency c(*this);
        if (int err = before_data(len)) {
            errno = err;
            return -1;
        }
        ssize_t r = Syscalls::raw_pwrite(fd, buf, len, off);
        if (r > 0)
            moved += uint64_t(r);
        return r;
    }
    int raw_fdatasync(int fd) override
    {
        ++fdatasync_calls;
        if (int once = fdatasync_errno_once.exchange(0)) {
            errno = once;
            return -1;
        }
        if (fdatasync_errno) {
            errno = fdatasync_errno;
            return -1;
        }
        return Syscalls::raw_fdatasync(fd);
    }
    void *raw_mmap(size_t len, int prot, int flags, int fd, off_t off) override
    {
        if (refuse_mmap) {
            errno = ENODEV;
            return MAP_FAILED;
        }
        return Syscalls::raw_mmap(len, prot, flags, fd, off);
    }
    int raw_msync(void *addr, size_t len, int flags) override
    {
        const int call = ++msync_calls;
        msync_bytes += len;
        for (uint64_t w = msync_widest; len > w && !msync_widest.compare_exchange_weak(w, len);) {
        }
        if (call == msync_fail_call && msync_fail_errno) {
            errno = msync_fail_errno;
            return -1;
        }
        if (msync_errno) {
            errno = msync_errno;
            return -1;
        }
        const int r = Syscalls::raw_msync(addr, len, flags);
        ++msyncs_returned;
        return r;
    }
    off_t raw_lseek(int fd, off_t off, int whence) override
    {
        if (off == 0 && whence == SEEK_SET)
            ++seeks_to_start;
        return Syscalls::raw_lseek(fd, off, whence);
    }
    int raw_fsync(int fd) override
    {
        ++fsync_calls;
        if (const int err = fsync_errno_once.exchange(0)) {
            errno = err;
            return -1;
        }
        return Syscalls::raw_fsync(fd);
    }
    int raw_futimens(int fd, const struct timespec times[2]) override
    {
        if (futimens_errno) {
            errno = futimens_errno;
            return -1;
        }
        return Syscalls::raw_futimens(fd, times);
    }
    int raw_syncfs(int fd) override
    {
        ++syncfs_calls;
        if (syncfs_errno) {
            errno = syncfs_errno;
            return -1;
        }
        return Syscalls::raw_syncfs(fd);
    }
    int raw_sync_file_range(int fd, off_t off, off_t len, unsigned flags) override
    {
        ++sync_file_range_calls;
        if (flags & SYNC_FILE_RANGE_WAIT_AFTER)
            ++sync_file_range_waits;
        return Syscalls::raw_sync_file_range(fd, off, len, flags);
    }
    int raw_fadvise(int fd, off_t off, off_t len, int advice) override
    {
        if (advice == POSIX_FADV_DONTNEED)
            ++dontneed_calls;
        if (advice == POSIX_FADV_WILLNEED)
            ++willneed_calls;
        return Syscalls::raw_fadvise(fd, off, len, advice);
    }
};

// Data calls wait while |held| is set: a device (a share's link) that stops taking anything.
struct StallingSyscalls : FaultSyscalls {
    std::atomic<bool> held {false};
    std::atomic<int> waited {0};
    std::mutex m;
    std::condition_variable cv;

    void gate()
    {
        if (!held.load())
            return;
        ++waited;
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return !held.load(); });
    }
    void release()
    {
        {
            std::lock_guard lock(m);
            held = false;
        }
        cv.notify_all();
    }
    ssize_t raw_pwrite(int fd, const void *buf, size_t len, off_t off) override
    {
        gate();
        return FaultSyscalls::raw_pwrite(fd, buf, len, off);
    }
    ssize_t raw_sendfile(int out, int in, off_t *off, size_t len) override
    {
        gate();
        return FaultSyscalls::raw_sendfile(out, in, off, len);
    }
    ssize_t raw_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len) override
    {
        gate();
        return FaultSyscalls::raw_copy_file_range(in, in_off, out, out_off, len);
    }
};

// A slow device on the syscall seam, installed for as long as this lives: data calls of at most |chunk| bytes,
// each |delay| long. |fs| counts what went through.
class SlowSeam {
public:
    SlowSeam(std::size_t chunk, std::chrono::milliseconds delay)
    {
        fs.max_transfer = chunk;
        fs.data_delay = delay;
    }
    // About 12 MiB/s (256 KiB every 20 ms): slow enough for a window test or a screenshot to catch a copy running,
    // pause it, or kill the process mid-file.
    static SlowSeam to_watch() { return {256 * 1024, std::chrono::milliseconds(20)}; }

    FaultSyscalls fs;

private:
    ScopedSyscalls seam_ {fs};
};

// A test's temp folder |t| with a FaultSyscalls seam |fs| in force from the start, for TEST_CASE_METHOD. The
// knobs are read as calls happen, so a test sets them after making its files and before the copy.
struct Faulted {
    TempDir t;
    FaultSyscalls fs;

private:
    ScopedSyscalls seam_ {fs};
};

} // namespace sanecopy::test
