// SPDX-License-Identifier: GPL-2.0-or-later
//
// Small files handed in one call at a time, made durable in groups: for a caller that gets files singly and is
// told when a run of them ends. KIO's CopyJob is such a caller's master: for a dropped folder it makes every
// folder first, then sends the worker one copy() per file, then sets each folder's time. Copied as separate
// one-file jobs, every file paid its own data sync and name sync (about 31 ms a file on a 300-IOPS stick);
// held here, a file's bytes go into its part file as its call comes, and the files are renamed and synced
// together by the SmallFileBatch a copy job uses, when a group fills and when the caller flushes.
//
// A file handed in is NOT on the device when add() returns: the caller counts it as done before it is, by at
// most two groups (BatchLimits), and must flush() before it tells anyone the run is over. What was not flushed
// when the batch goes is discarded: part files removed; only a group already on the device may have its names.
//
// Not thread-safe: one caller at a time.
#pragma once

#include "device_probe.h"
#include "publish.h"
#include "result.h"
#include "small_batch.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include <sys/stat.h>

namespace sanecopy {

class BackgroundCloser;

class IncrementalBatch {
public:
    // |limits|: a group's bytes and files, which also bound how far ahead of the device the caller's count
    // runs. |closer|: where closes sleep (vfat "flush"), as for SmallFileBatch; must outlive the batch.
    IncrementalBatch(BatchLimits limits, std::shared_ptr<BackgroundCloser> closer);
    ~IncrementalBatch();
    IncrementalBatch(const IncrementalBatch &) = delete;
    IncrementalBatch &operator=(const IncrementalBatch &) = delete;

    // Copies the regular file |source| into a part file beside |target| (an absolute path whose name is free),
    // with the source's permission bits and modification time, and holds it for publishing under |policy|. Onto
    // a share the part file is only created and written as its group settles, beside the group's other files:
    // a failure there comes from flush(), as a failed sync does.
    // Ok(false): nothing was done, and the file must be copied the usual way after flush(): it is not a
    // small regular file, its name can't be stored there, the destination keeps nothing in a page cache
    // (tmpfs), or it is on another filesystem than the files held. An error: nothing of this file is held.
    Result<bool> add(const std::string &source, const std::string &target, ConflictPolicy policy);
    // Publishes everything held and makes it durable. The first failure of any file since the last flush,
    // whenever its group failed: that file is not under its name (its part file was removed).
    Status flush();
    // Removes every held part file not yet renamed, without syncing (a group already durable keeps its names).
    void discard();
    bool empty() const { return held_ == 0; }
    // Files held and not yet flushed.
    std::size_t held() const { return held_; }

private:
    Status start(const std::string &dir);
    void end_run();
    bool takes(const std::string &dir, const std::string &name);
    static Result<bool> open_small(const std::string &source, UniqueFd &in, struct stat &st);
    Result<SharedDirFd> folder(const std::string &dir);
    void hold_to_write(const SharedDirFd &dir_fd, const std::string &dir, const std::string &name,
                       const std::string &source, UniqueFd in, const struct stat &st, ConflictPolicy policy);

    BatchLimits limits_;
    std::shared_ptr<BackgroundCloser> closer_;
    DeviceInfo device_; // of the files held, while batch_ is set
    std::unique_ptr<SmallFileBatch> batch_;
    // One descriptor a folder: the batch tells names apart by folder descriptor and name.
    std::map<std::string, SharedDirFd> dirs_;
    std::size_t held_ = 0;
    Status first_failure_;
    ProgressCounters counters_; // what files written as their group settles count into; the caller counts its own
    std::atomic<bool> discarding_ = false;
};

} // namespace sanecopy
