// SPDX-License-Identifier: GPL-2.0-or-later
//
// FlushMount: a vfat mount with "flush" (as UDisks2 mounts FAT sticks) as the syscall seam sees it, for the tests of
// the background closes (engine/file/background_closer.h).
#pragma once

#include "catch.h"
#include "fault_syscalls.h"
#include "test_support.h"

#include <atomic>
#include <chrono>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <thread>
#include <vector>
#include <unistd.h>

namespace sanecopy::test {

// Every close of a part file sleeps (there 100 ms, here |sleep|) in the thread that calls it; counts how many
// overlap, whether the file had its real name by then and a sync had come since it was created, and fails the close
// of one chosen part file with EIO. flush_everywhere() makes the probe see "flush" on every mount, share_at() an NFS
// share where the test's files go.
struct FlushMount : FaultSyscalls {
    std::chrono::milliseconds sleep {20};
    std::string failing_part; // ".<name>.part" whose close fails
    std::string mountinfo;    // when set: served as /proc/self/mountinfo
    std::mutex mutex;
    struct Part {
        std::string dir; // by path: its descriptor may be closed before the file is
        std::string part, name;
        int syncs_before = 0; // syncs made before it was created
    };
    std::map<int, Part> part_fds; // by descriptor
    int failing_fd = -1;
    std::atomic<int> closing {0}, most_closing {0}, part_closes {0}, closes_done {0}, closes_off_job_thread {0},
        closes_after_rename {0}, closes_of_present_parts {0}, failed_closes {0}, syncs {0}, closes_after_sync {0};
    std::thread::id job_thread = std::this_thread::get_id();
    std::set<std::string> closed_after_sync; // names of the part files closed after a sync made since their creation

    // Every mount of this machine as if it had vfat's "flush" among its options.
    void flush_everywhere(const std::string &file)
    {
        std::string text, line;
        std::istringstream in(read_file("/proc/self/mountinfo"));
        while (std::getline(in, line))
            text += line + ",flush\n";
        write_text_file(file, text);
        mountinfo = file;
    }

    // The mount that holds |dir| as an NFS 4 share, the others as they are.
    void share_at(const std::string &dir, const std::string &file)
    {
        mount_at(dir, file, "nfs4 10.0.0.2:/export rw,vers=4.2,soft");
    }

    // The mount that holds |dir| as mountinfo's |type_source_options| ("vfat /dev/sdz1 rw,flush") says, the others
    // as they are.
    void mount_at(const std::string &dir, const std::string &file, const std::string &type_source_options)
    {
        char real[4096] = {};
        REQUIRE(::realpath(dir.c_str(), real) != nullptr);
        const std::string path = real;
        std::vector<std::string> lines;
        std::string line;
        std::istringstream in(read_file("/proc/self/mountinfo"));
        std::size_t holder = 0, longest = 0;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string id, parent, dev, root, point;
            fields >> id >> parent >> dev >> root >> point;
            const bool holds = path == point || point == "/" ||
                               (path.compare(0, point.size(), point) == 0 && path[point.size()] == '/');
            if (holds && point.size() >= longest) {
                longest = point.size();
                holder = lines.size();
            }
            lines.push_back(line);
        }
        REQUIRE(!lines.empty());
        std::string &held = lines[holder];
        const std::size_t dash = held.find(" - ");
        REQUIRE(dash != std::string::npos);
        held = held.substr(0, dash) + " - " + type_source_options;
        std::string text;
        for (const std::string &l : lines)
            text += l + "\n";
        write_text_file(file, text);
        mountinfo = file;
    }

    int raw_openat(int dirfd, const char *path, int flags, mode_t mode) override
    {
        if (!mountinfo.empty() && std::string_view(path) == "/proc/self/mountinfo")
            return FaultSyscalls::raw_openat(AT_FDCWD, mountinfo.c_str(), flags, mode);
        const int fd = FaultSyscalls::raw_openat(dirfd, path, flags, mode);
        const std::string_view p = path;
        if (fd >= 0 && (flags & O_CREAT) && p.size() > 6 && p.front() == '.' && p.substr(p.size() - 5) == ".part") {
            std::lock_guard lock(mutex);
            char dir[4096] = {};
            const std::string link = "/proc/self/fd/" + std::to_string(dirfd);
            if (::readlink(link.c_str(), dir, sizeof dir - 1) < 0)
                dir[0] = '\0';
            part_fds[fd] = {dir, std::string(p), std::string(p.substr(1, p.size() - 6)), syncs.load()};
            if (p == failing_part)
                failing_fd = fd;
        }
        return fd;
    }
    int raw_syncfs(int fd) override
    {
        const int r = FaultSyscalls::raw_syncfs(fd);
        ++syncs;
        return r;
    }
    int raw_fdatasync(int fd) override
    {
        const int r = FaultSyscalls::raw_fdatasync(fd);
        ++syncs;
        return r;
    }
    int raw_close(int fd) override
    {
        std::optional<Part> part;
        bool fails = false;
        {
            std::lock_guard lock(mutex);
            if (auto it = part_fds.find(fd); it != part_fds.end()) {
                part = it->second;
                part_fds.erase(it);
            }
            fails = part && fd == failing_fd;
            if (fails)
                failing_fd = -1; // the number goes to another file once closed
        }
        if (!part)
            return FaultSyscalls::raw_close(fd);
        ++part_closes;
        closes_off_job_thread += std::this_thread::get_id() != job_thread;
        struct stat st {};
        closes_after_rename += ::lstat((part->dir + "/" + part->name).c_str(), &st) == 0;
        closes_of_present_parts += ::lstat((part->dir + "/" + part->part).c_str(), &st) == 0;
        if (syncs.load() > part->syncs_before) {
            ++closes_after_sync;
            std::lock_guard lock(mutex);
            closed_after_sync.insert(part->name);
        }
        const int now = ++closing;
        for (int seen = most_closing.load(); now > seen && !most_closing.compare_exchange_weak(seen, now);) {
        }
        std::this_thread::sleep_for(sleep);
        --closing;
        const int r = FaultSyscalls::raw_close(fd); // the descriptor goes either way, as on Linux
        ++closes_done;
        if (fails) {
            ++failed_closes;
            errno = EIO;
            return -1;
        }
        return r;
    }
};

} // namespace sanecopy::test
