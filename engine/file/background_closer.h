// SPDX-License-Identifier: GPL-2.0-or-later
//
// BackgroundCloser: closes the descriptors of files already durable, on threads of its own. On a vfat mount
// with "flush" (UDisks2 mounts every FAT stick so), the last close of a file that was open for writing writes its
// inode and then sleeps 100 ms uninterruptibly in the closing thread (fat_file_release, fs/fat/file.c): 2,000
// small files closed one after another wait 200 s for nothing. The sleep is per thread, so N closers wait 100 ms
// for N files, and none of them need hold up the copy.
//
// Contract: only descriptors of files whose data and size were just made durable are handed over (a batch's group
// right after its syncfs, a big file once published), so a close has nothing left to write and nothing to say:
// its result is not looked at. On Linux a close can only repeat an error fsync would have reported first, and
// vfat's never fails. The file's rename may come while it closes: it is by name, not by descriptor.
// A big file's written descriptor goes earlier, with its last byte (JobRunner::fill_part), its syncs then made
// through a read-only descriptor opened before the writes: what the close writes (the inode, the writeback of
// pages the windows had not started yet) those syncs write and wait for too, and any error its writeback meets
// they report, as Linux reports a writeback error to every descriptor open when it happened.
// One exception: a part file a stream kept after a share failed under it (StreamWriter::abort; the KIO worker's
// closer lives as long as the worker). Its close may write again and fail again; no one trusts what it holds until
// a later run has read it back. A copy job's such part file goes to close_unwaited() (below) instead.
// close() returns at once: the caller bounds what it hands over (a batch hands over one group, whose descriptors
// it held anyway, and the KIO worker one file at a time, far slower than the closes go), so the job never waits for
// a close. drain() returns once every close handed over has returned; the destructor drains. The threads start
// when first needed and end with the closer.
//
// A copy job makes its own and drains it at its end; the KIO worker, which runs one job per file, keeps one for
// the process (JobSpec::closer), so a file's close does not hold up the next file.
#pragma once

#include "fd.h"

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace sanecopy {

class BackgroundCloser {
public:
    explicit BackgroundCloser(std::size_t threads);
    ~BackgroundCloser();
    BackgroundCloser(const BackgroundCloser &) = delete;
    BackgroundCloser &operator=(const BackgroundCloser &) = delete;

    void close(UniqueFd fd);
    void drain();

private:
    void loop();

    const std::size_t max_threads_;
    std::mutex mutex_;
    std::condition_variable work_; // a descriptor is queued, or the closer ends
    std::condition_variable idle_; // nothing queued and nothing closing
    std::deque<UniqueFd> queue_;
    std::size_t closing_ = 0;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

// Closes |fd| on a thread of its own that nothing waits for, and returns at once. For a part file a copy job kept
// after a share stopped answering under it (JobRunner::part_failed): its client writes again at the close what it
// could not send, and waits for the server as long again (NFS, soft mount, link gone: 30 s more after the 54 s the
// failed sync took). Neither the job's end nor the process's exit waits for that: the part file holds nothing
// anyone trusts until a later run has read it back, and a process that ends first takes the close with it (the
// kernel's waits for the server are killable). What the client still holds for the share is sent, and fails, in
// the job's last syncfs meanwhile: left for the link's return, it would fail then, into the next run's syncfs
// (JobRunner::sync_job). With no thread to spare, it closes here.
void close_unwaited(UniqueFd fd);
// Returns once every close_unwaited() close has returned: for tests, before their syscall seam goes.
void wait_unwaited_closes();

} // namespace sanecopy
