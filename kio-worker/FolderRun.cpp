// SPDX-License-Identifier: GPL-2.0-or-later
#include "FolderRun.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "job_control.h"
#include "job_queue.h"
#include "sys.h"

#include <cerrno>

namespace SaneCopyKio {

namespace {

std::string parentOf(const std::string &path)
{
    const auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

// The device's writer lock, or its "held" lock (see FolderRun.h), taken at once or not at all.
sanecopy::UniqueFd tryLock(const std::string &key)
{
    sanecopy::JobControl once;
    once.cancel(); // one attempt, no waiting
    return sanecopy::lock_device(key, once);
}

std::string laneOf(const std::string &folder)
{
    sanecopy::JobSpec spec;
    spec.destination = folder;
    return sanecopy::JobQueue::default_lane(spec);
}

} // namespace

FolderRun::FolderRun(std::shared_ptr<sanecopy::BackgroundCloser> closer)
    : last_(std::chrono::steady_clock::now()), batch_(kLimits, std::move(closer)), idle_([this] { idleLoop(); })
{}

FolderRun::~FolderRun() { shutdown(); }

void FolderRun::shutdown()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (idle_.joinable())
        idle_.join();
    std::lock_guard lock(mutex_);
    batch_.discard();
    writerLock_ = {};
    heldLock_ = {};
    folders_.clear();
}

sanecopy::Status FolderRun::folderMade(const std::string &path)
{
    std::lock_guard lock(mutex_);
    sanecopy::Status s;
    if (!batch_.empty())
        s = settleLocked(true);
    folders_.insert(path);
    last_ = std::chrono::steady_clock::now();
    wake_.notify_all();
    return s;
}

sanecopy::Result<bool> FolderRun::hold(const std::string &source, const std::string &target,
                                       sanecopy::ConflictPolicy policy)
{
    std::lock_guard lock(mutex_);
    sanecopy::Result<bool> held = holdLocked(source, target, policy);
    // The idle clock starts when the call returns, as in settle(): a hold slower than kIdle (a source slow to
    // open or read, a busy machine) would otherwise let the idle loop end the run the moment it returns, and
    // every later file of the job would go the usual way, each with its own syncs.
    last_ = std::chrono::steady_clock::now();
    return held;
}

sanecopy::Result<bool> FolderRun::holdLocked(const std::string &source, const std::string &target,
                                             sanecopy::ConflictPolicy policy)
{
    if (!failure_.ok()) // an idle settle failed: say so now, on the call that comes next
        return std::exchange(failure_, sanecopy::Status());
    const std::string folder = parentOf(target);
    struct stat st {};
    if (folders_.count(folder) == 0 ||
        sanecopy::sys().fstatat(AT_FDCWD, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
        return false;
    if (batch_.empty()) {
        // The first file of a group run: this process becomes the device's writer, or the file goes the usual
        // way, which waits for the writer there is (cancellably) like any other copy.
        const std::string lane = laneOf(folder);
        sanecopy::UniqueFd writer = tryLock(lane);
        if (!writer)
            return false;
        heldLock_ = tryLock(lane + ".held");
        writerLock_ = std::move(writer);
    }
    sanecopy::Result<bool> held = batch_.add(source, target, policy);
    if (batch_.empty()) {
        writerLock_ = {};
        heldLock_ = {};
    }
    wake_.notify_all();
    return held;
}

sanecopy::Status FolderRun::settleLocked(bool endRun)
{
    sanecopy::Status s = batch_.flush();
    writerLock_ = {};
    heldLock_ = {};
    if (endRun)
        folders_.clear();
    if (s.ok())
        s = std::exchange(failure_, sanecopy::Status());
    return s;
}

sanecopy::Status FolderRun::settle()
{
    std::lock_guard lock(mutex_);
    sanecopy::Status s = settleLocked(false);
    // A call too, and the run goes on: the idle clock starts when it returns, not at the hold before it, or a
    // settle that took longer than kIdle (its syncs) let the idle loop end the run under the next hold.
    last_ = std::chrono::steady_clock::now();
    return s;
}

sanecopy::Status FolderRun::end()
{
    std::lock_guard lock(mutex_);
    return settleLocked(true);
}

void FolderRun::waitForOthers(const std::string &folder)
{
    // Polled every 100 ms, and let go at once: free means no other process holds files for this device.
    sanecopy::JobControl control;
    sanecopy::UniqueFd held = sanecopy::lock_device(laneOf(folder) + ".held", control);
}

std::size_t FolderRun::held() const
{
    std::lock_guard lock(mutex_);
    return batch_.held();
}

FolderRun::Busy::Busy(FolderRun &run) : run_(run)
{
    std::lock_guard lock(run_.mutex_);
    ++run_.busy_;
}

FolderRun::Busy::~Busy()
{
    {
        std::lock_guard lock(run_.mutex_);
        --run_.busy_;
        run_.last_ = std::chrono::steady_clock::now();
    }
    run_.wake_.notify_all();
}

void FolderRun::idleLoop()
{
    std::unique_lock lock(mutex_);
    while (!stop_) {
        if ((batch_.empty() && folders_.empty()) || busy_ > 0) {
            wake_.wait(lock);
            continue;
        }
        const auto due = last_ + (batch_.empty() ? kIdleEmpty : kIdle);
        if (std::chrono::steady_clock::now() < due) {
            wake_.wait_until(lock, due);
            continue;
        }
        if (sanecopy::Status s = settleLocked(true); !s && failure_.ok())
            failure_ = std::move(s);
    }
}

} // namespace SaneCopyKio
