// SPDX-License-Identifier: GPL-2.0-or-later
#include "EngineJob.h"

#include "ExitCleanup.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace SaneCopyKio {

EngineOutcome runEngineJob(const sanecopy::JobSpec &spec, std::chrono::milliseconds period, const EngineTick &tick)
{
    sanecopy::JobControl control;
    sanecopy::ProgressCounters counters;
    EngineOutcome outcome;
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;

    std::thread runner([&] {
        // Each Dolphin job runs in a worker process of its own: one writer per device holds across processes
        // only through the device's lock, waited for here (cancellable) before the first byte.
        const sanecopy::UniqueFd deviceLock = sanecopy::lock_device(sanecopy::JobQueue::default_lane(spec), control);
        // Events arrive on this thread; |outcome| is read only after join().
        sanecopy::JobSummary summary =
            sanecopy::run_copy_job(spec, control, counters, [&](const sanecopy::JobEvent &e) {
                const bool problem =
                    e.kind == sanecopy::JobEvent::Kind::Error || e.kind == sanecopy::JobEvent::Kind::Skipped;
                if (problem && !outcome.firstProblem)
                    outcome.firstProblem = e;
            });
        std::lock_guard lock(mutex);
        outcome.summary = summary;
        done = true;
        finished.notify_all();
    });

    // If KIO ends the process from inside tick(), the job is cancelled and waited for, so its part file goes.
    ExitCleanup onExit([&] {
        control.cancel();
        std::unique_lock lock(mutex);
        if (finished.wait_for(lock, std::chrono::seconds(30), [&] { return done; })) {
            lock.unlock();
            runner.join();
        }
    });

    sanecopy::StallWatch watch;
    std::unique_lock lock(mutex);
    while (!finished.wait_for(lock, period, [&] { return done; })) {
        lock.unlock();
        if (!tick(counters, sanecopy::stalled_seconds(watch, counters, control.beats(), sanecopy::monotonic_seconds())))
            control.cancel();
        lock.lock();
    }
    lock.unlock();
    runner.join();
    tick(counters, 0);
    return outcome;
}

} // namespace SaneCopyKio
