// SPDX-License-Identifier: GPL-2.0-or-later
//
// Runs one engine copy job on a thread of its own while the calling thread keeps the KIO conversation: the
// worker's methods must be called from the thread that runs its dispatch loop, and the engine blocks in
// writeback waits for as long as the device takes.
#pragma once

#include "copy_job.h"
#include "job_control.h"
#include "job_queue.h"

#include <chrono>
#include <functional>
#include <optional>

namespace SaneCopyKio {

struct EngineOutcome {
    sanecopy::JobSummary summary;
    // The first Error or Skipped event: what the user is told when the job did not succeed.
    std::optional<sanecopy::JobEvent> firstProblem;
};

// Runs |spec| to its end. Every |period| and once at the end, |tick| is called on this thread with the job's
// counters and how long the copy has stood still once that is a stall (sanecopy::stalled_seconds, else 0); when
// it returns false the job is cancelled (and still run to its end, which removes its part files). Returns when
// the job's last sync has returned.
using EngineTick = std::function<bool(const sanecopy::ProgressCounters &, double stalledSeconds)>;
EngineOutcome runEngineJob(const sanecopy::JobSpec &spec, std::chrono::milliseconds period, const EngineTick &tick);

} // namespace SaneCopyKio
