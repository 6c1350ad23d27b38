// SPDX-License-Identifier: GPL-2.0-or-later
//
// A dropped folder's files, made durable together. KIO's CopyJob copies a folder onto sanecopy:/ in three steps:
// mkdir() for every folder, then one copy() per file, then setModificationTime() for every folder it made,
// after the last file and before it reports the job done. As one engine job each, a small file paid its own
// data sync and name sync. Here a small file whose folder this run made is held instead (IncrementalBatch):
// its bytes go into its part file when its copy() comes, and the held files are published and synced in
// groups, the last of them when the run ends:
//   - at the first setModificationTime(), so "done" in Dolphin still means on the device;
//   - when a folder is made while files are held (another job's);
//   - when no call has come for kIdle, which covers a CopyJob that never sets a time (a source without one)
//     and a job that waits on a question to the user. A run holding nothing ends after kIdleEmpty instead, and
//     never while a call copies a file the usual way (Busy): a big file between small ones, or a pause of
//     CopyJob's between its last mkdir() and its first copy(), ended the run, and every later small file of the
//     job went the usual way, each with its own syncs.
// Any other call (a file that can't be held, a stat, a listing, ...) settles what is held first, so nothing the
// worker is asked about is half done, and the run goes on: CopyJob may send a big file between small ones.
// Dolphin's count of files runs ahead of the device by at most two groups (kLimits) while the run lasts.
//
// KIO may hand the setModificationTime() to another worker process than the copies (two jobs on sanecopy:/
// at once): a process holding files holds the device's "held" lock, and waitForOthers() waits for that lock,
// so setModificationTime() returns only once every process's files are on the device. A process holding files also
// holds the device's writer lock (one writer per device), so another copy to the stick waits until they are settled.
//
// Thread-safe: the idle settle runs on a thread of its own.
#pragma once

#include "units.h"

#include "fd.h"
#include "incremental_batch.h"
#include "result.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace sanecopy {
class BackgroundCloser;
}

namespace SaneCopyKio {

class FolderRun {
public:
    static constexpr std::chrono::milliseconds kIdle {250};
    // With nothing held, ending the run keeps no file from the device; it only keeps a later, unrelated copy into
    // the run's folders from being held (a single file's job sets no folder's time, so it would be reported done
    // before its file is on the device). So the run waits longer for a job's next file.
    static constexpr std::chrono::milliseconds kIdleEmpty {2000};
    // Two groups of at most 128 files and 4 MiB: under a second of a slow stick's writing.
    static constexpr sanecopy::BatchLimits kLimits {4 * sanecopy::kMiB, 128};

    explicit FolderRun(std::shared_ptr<sanecopy::BackgroundCloser> closer);
    ~FolderRun(); // shutdown()
    FolderRun(const FolderRun &) = delete;
    FolderRun &operator=(const FolderRun &) = delete;

    // mkdir() made |path|: files copied into it may be held until the run settles. CopyJob makes all of a job's
    // folders before its first file, so a folder made while files are held starts a new run: those are settled
    // first, and their failure, if one failed, is returned.
    sanecopy::Status folderMade(const std::string &path);
    // Holds the copy of |source| to |target| when |target|'s folder was made by this run, its name is free
    // and the file is small. Ok(false): copy it the usual way, after settle().
    sanecopy::Result<bool> hold(const std::string &source, const std::string &target, sanecopy::ConflictPolicy policy);
    // Every held file published and on the device; the run goes on. The first failure of a held file since the
    // last settle (that file is not under its name).
    sanecopy::Status settle();
    // settle(), and the run is over: its folders take no more files.
    sanecopy::Status end();
    // Waits until no other process holds files for |folder|'s device (this one's are settled first).
    static void waitForOthers(const std::string &folder);
    // Stops the idle settle and discards what is held: no part file left, and under a real name only files
    // already on the device. For a process that is ending; nothing may be called after it.
    void shutdown();
    // Files held now.
    std::size_t held() const;

    // A call under way: the run does not go idle while it lasts, and its idle clock starts when the call returns.
    // For a copy() that may take long (a big file copied the usual way).
    class Busy {
    public:
        explicit Busy(FolderRun &run);
        ~Busy();
        Busy(const Busy &) = delete;
        Busy &operator=(const Busy &) = delete;

    private:
        FolderRun &run_;
    };

private:
    sanecopy::Result<bool> holdLocked(const std::string &source, const std::string &target,
                                      sanecopy::ConflictPolicy policy);
    sanecopy::Status settleLocked(bool endRun);
    void idleLoop();

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    int busy_ = 0; // calls under way (Busy)
    std::chrono::steady_clock::time_point last_;
    std::set<std::string> folders_; // made by this run
    sanecopy::UniqueFd writerLock_, heldLock_;
    sanecopy::IncrementalBatch batch_;
    sanecopy::Status failure_; // from an idle settle, for the next call
    std::thread idle_;         // last: started once the rest is constructed
};

} // namespace SaneCopyKio
