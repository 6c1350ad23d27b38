// SPDX-License-Identifier: GPL-2.0-or-later
//
// The engine job the worker runs for a file Dolphin copies (EngineJob.h): what it tells the worker each tick
// about a copy whose device stopped taking anything, so Dolphin's and Plasma's job view can say so.
#include "EngineJob.h"

#include "engine/fault_syscalls.h"
#include "engine/job_helpers.h"
#include "engine/test_support.h"
#include "stall_watch.h"

#include "catch.h"

#include <chrono>

using namespace sanecopy;
using namespace sanecopy::test;
using namespace std::chrono_literals;

TEST_CASE("engine job: a device that stops taking anything is told as a stall each tick, and no more once it moves")
{
    TempDir t;
    write_pattern_file(t / "src", 16 * 1024 * 1024); // about a second of copying at this seam's pace
    StallingSyscalls fs;
    fs.max_transfer = 128 * 1024;
    fs.data_delay = 5ms;
    ScopedSyscalls seam(fs);

    double longest = 0;     // the longest stall a tick was told of
    double afterwards = -1; // the least a tick was told once the copy moved again, while it still ran
    uint64_t released_at = 0;
    bool released = false;
    const auto outcome = SaneCopyKio::runEngineJob(
        spec_of({t / "src"}, t / "dst"), 100ms, [&](const ProgressCounters &c, double stalled) {
            if (!released && !fs.held && c.written_bytes.load() > 0)
                fs.held = true; // the link goes once the copy is under way
            longest = std::max(longest, stalled);
            if (!released && stalled > 0 && fs.waited > 0) {
                released_at = c.written_bytes.load();
                fs.release();
                released = true;
            } else if (released && c.written_bytes.load() > released_at && c.state.load() == JobState::Running) {
                afterwards = afterwards < 0 ? stalled : std::min(afterwards, stalled);
            }
            return true;
        });
    REQUIRE(outcome.summary.complete());
    CHECK(same_bytes(t / "src", t / "dst"));
    REQUIRE(released);
    // Said within a tick or two of kStallNoticeMost at the latest (a stall is never told before kStallNotice).
    CHECK(longest < kStallNoticeMost + 1);
    CHECK(afterwards == 0);
}
