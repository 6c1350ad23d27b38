// SPDX-License-Identifier: GPL-2.0-or-later
//
// ParallelCloser: closes part files side by side. On a vfat mount with "flush" (UDisks2 mounts every FAT stick
// so), the last close of a file that was open for writing writes its inode and then sleeps 100 ms
// uninterruptibly in the closing thread (fat_file_release, fs/fat/file.c): 2,000 small files closed one after
// another wait 200 s for nothing. The sleep is per thread, so N closers wait 100 ms for N files.
//
// Contract: start() has every part file's descriptor closed (PartFile::close_fd, through the syscall seam), at
// most |threads| at a time, while the caller goes on; wait() returns once all are closed, with each file's own
// result in the order given: a failed close is reported against its file. The PartFiles must stay where they are
// until then; only their descriptors are touched, the names stay with the caller. One round at a time: start()
// waits for the round before. The threads start when first needed and end with the closer, after its last round.
#pragma once

#include "publish.h"
#include "result.h"

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace sanecopy {

class ParallelCloser {
public:
    explicit ParallelCloser(std::size_t threads);
    ~ParallelCloser();
    ParallelCloser(const ParallelCloser &) = delete;
    ParallelCloser &operator=(const ParallelCloser &) = delete;

    // One caller (the job's thread).
    void start(std::vector<PartFile *> parts);
    std::vector<Status> wait();
    std::vector<Status> close_all(std::vector<PartFile *> parts)
    {
        start(std::move(parts));
        return wait();
    }

private:
    void loop();

    const std::size_t max_threads_;
    std::mutex mutex_;
    std::condition_variable work_;
    std::condition_variable done_;
    std::vector<PartFile *> parts_; // the round being closed
    std::vector<Status> results_;
    std::size_t next_ = 0;     // the next file a thread takes
    std::size_t finished_ = 0; // files closed in this round
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

} // namespace sanecopy
