// SPDX-License-Identifier: GPL-2.0-or-later
#include "catch.h"

#include "chunk_controller.h"

#include <cmath>

using namespace sanecopy;

namespace {
constexpr uint64_t MiB = 1024 * 1024;

// A device that takes |rate| bytes/s, fed chunk by chunk as the controller plans them: the closed loop the copy
// runs, with a fake clock. Returns the plan in force at the end.
ChunkPlan simulate(RateMeter &meter, double &now, uint64_t &durable, double rate, double seconds)
{
    const double end = now + seconds;
    ChunkPlan plan;
    while (now < end) {
        plan = plan_chunks(meter.measured() ? meter.rate() : 0);
        now += double(plan.chunk_bytes) / rate;
        durable += plan.chunk_bytes;
        meter.sample(now, durable);
    }
    return plan;
}
} // namespace

TEST_CASE("chunk controller: starts small before the first measurement")
{
    const ChunkPlan plan = plan_chunks(0);
    CHECK(plan.chunk_bytes == 1 * MiB);
    CHECK(plan.windows >= 2);
    CHECK(plan.in_flight_bytes() <= 32 * MiB);
}

TEST_CASE("chunk controller: a 40 MB/s stick gets chunks of 0.1 to 0.25 s of device time")
{
    const double rate = 40e6;
    const ChunkPlan plan = plan_chunks(rate);
    const double seconds = double(plan.chunk_bytes) / rate;
    CHECK(seconds >= 0.1);
    CHECK(seconds <= 0.25);
    CHECK(plan.windows >= 2);
    CHECK(plan.in_flight_bytes() <= 32 * MiB);
}

TEST_CASE("chunk controller: never more than 32 MiB in flight, never fewer than two windows, at any rate")
{
    for (double rate = 1e3; rate < 1e11; rate *= 1.37) {
        INFO("rate " << rate);
        const ChunkPlan plan = plan_chunks(rate);
        REQUIRE(plan.in_flight_bytes() <= 32 * MiB);
        REQUIRE(plan.windows >= 2);
        REQUIRE(plan.chunk_bytes % (64 * 1024) == 0);
        REQUIRE(plan.chunk_bytes >= 256 * 1024);
    }
}

TEST_CASE("chunk controller: onto a FUSE share a sync comes every two seconds of link time, at most 32 MiB apart")
{
    const ChunkLimits fuse = share_over_fuse_limits();
    const ChunkPlan link = plan_chunks(12.5e6, fuse); // 100 Mbit/s
    CHECK(double(link.chunk_bytes) / 12.5e6 == Approx(2.0).margin(0.01));
    CHECK(link.windows >= 2);                                // the link never waits for the copy's next chunk
    CHECK(plan_chunks(125e6, fuse).chunk_bytes == 32 * MiB); // gigabit: a quarter second, no more
    CHECK(plan_chunks(125e6, fuse).in_flight_bytes() <= fuse.max_in_flight);
}

TEST_CASE("chunk controller: chunks grow with the device's rate and stop at the cap")
{
    CHECK(plan_chunks(5e6).chunk_bytes < plan_chunks(40e6).chunk_bytes);
    CHECK(plan_chunks(40e6).chunk_bytes <= plan_chunks(400e6).chunk_bytes);
    CHECK(plan_chunks(4e9).chunk_bytes == plan_chunks(40e9).chunk_bytes);
    CHECK(plan_chunks(100e3).chunk_bytes == 256 * 1024); // a crawling device still moves whole chunks
}

TEST_CASE("chunk controller: a chunk of at least one device request is a whole number of them")
{
    ChunkLimits limits;
    limits.request = 1 * MiB;
    // 17.6 MB/s for an eighth of a second is 2.1 MiB: two whole requests, not a third of 64 KiB.
    CHECK(plan_chunks(17.6e6).chunk_bytes == 2 * MiB + 64 * 1024);
    CHECK(plan_chunks(17.6e6, limits).chunk_bytes == 2 * MiB);
    // The nearest whole number, not the next one down: 1.79 MiB is two requests, not one.
    CHECK(plan_chunks(15e6, limits).chunk_bytes == 2 * MiB);
    for (double rate = 1e3; rate < 1e11; rate *= 1.37) {
        INFO("rate " << rate);
        const ChunkPlan plan = plan_chunks(rate, limits);
        const uint64_t unaligned = plan_chunks(rate).chunk_bytes;
        REQUIRE(plan.in_flight_bytes() <= 24 * MiB);
        REQUIRE(plan.windows >= 2);
        if (unaligned >= limits.request) {
            REQUIRE(plan.chunk_bytes % limits.request == 0);
            REQUIRE(plan.chunk_bytes + limits.request / 2 >= unaligned);
            REQUIRE(plan.chunk_bytes <= unaligned + limits.request / 2);
        } else {
            REQUIRE(plan.chunk_bytes == unaligned); // a slow device's small chunks stay as they were
        }
    }
    // A request that is no multiple of the alignment counts as the least that is both: USB 2's 120 KiB makes
    // chunks of 960 KiB, eight whole requests.
    limits.request = 120 * 1024;
    CHECK(limits.checked().request == 960 * 1024);
    CHECK(plan_chunks(17.6e6, limits).chunk_bytes == 2 * 960 * 1024);
    // A request larger than any chunk changes nothing.
    limits.request = 64 * MiB;
    CHECK(plan_chunks(17.6e6, limits).chunk_bytes == plan_chunks(17.6e6).chunk_bytes);
}

TEST_CASE("rate meter: converges on a steady device rate")
{
    RateMeter meter;
    double now = 0;
    uint64_t total = 0;
    meter.start(now, total);
    for (int i = 0; i < 50; ++i) {
        now += 0.1;
        total += 4'000'000; // 40 MB/s
        meter.sample(now, total);
    }
    CHECK(meter.rate() == Approx(40e6).epsilon(0.01));
}

TEST_CASE("rate meter: samples closer together than the minimum interval are pooled")
{
    RateMeter meter(1.0, 0.05);
    meter.start(0, 0);
    meter.sample(0.001, 1'000'000); // would read as 1 GB/s on its own
    CHECK_FALSE(meter.measured());
    meter.sample(0.1, 4'000'000);
    REQUIRE(meter.measured());
    CHECK(meter.rate() == Approx(40e6).epsilon(0.01));
}

TEST_CASE("chunk controller: onto a share the budget's bytes, not a count of windows, bound what is in flight")
{
    // Between a share's bursts of syncs the rate measured dips to a fraction of the link's, and the chunks with it.
    ChunkLimits share;
    share.target_seconds = kShareChunkSeconds;
    share.max_windows = kShareMaxWindows;
    for (double rate : {2.9e6, 6e6, 12.5e6}) {
        const ChunkPlan plan = plan_chunks(rate, share);
        INFO(rate << " B/s: " << plan.windows << " windows of " << plan.chunk_bytes);
        CHECK(plan.in_flight_bytes() <= share.max_in_flight);
        CHECK(plan.in_flight_bytes() + plan.chunk_bytes > share.max_in_flight);
    }
}

TEST_CASE("rate meter: a first rate measured over a minimum of bytes waits for the syncs queued behind the first")
{
    // Onto a share the first 1 MiB window's sync returned after 0.8 s, behind the eight written meanwhile, which
    // then all returned within 26 ms (share-trace-nfs4, 100 Mbit/s).
    constexpr uint64_t MiB = 1 << 20;
    RateMeter meter;
    meter.measure_first_over(2 * MiB);
    meter.start(0, 0);
    meter.sample(0.8, MiB);
    CHECK_FALSE(meter.measured());
    meter.sample(0.826, 9 * MiB);
    REQUIRE(meter.measured());
    CHECK(meter.rate() == Approx(9.0 * MiB / 0.826).epsilon(0.01));
    // Later samples count as they come, however few bytes they bring.
    meter.sample(1.326, 9 * MiB + MiB / 2);
    CHECK(meter.rate() < 9.0 * MiB / 0.826);
}

TEST_CASE("rate meter: time spent paused does not count once the clock is restarted")
{
    RateMeter meter;
    meter.start(0, 0);
    for (int i = 1; i <= 20; ++i)
        meter.sample(0.1 * i, uint64_t(i) * 4'000'000);
    meter.restart_clock(60.0, 80'000'000); // a minute of pause
    meter.sample(60.1, 84'000'000);
    CHECK(meter.rate() == Approx(40e6).epsilon(0.02));
}

TEST_CASE("chunk controller in the loop: adapts within seconds to a slower device")
{
    RateMeter meter;
    double now = 0;
    uint64_t durable = 0;
    meter.start(now, durable);
    simulate(meter, now, durable, 40e6, 5.0);
    REQUIRE(meter.rate() == Approx(40e6).epsilon(0.05));

    const ChunkPlan plan = simulate(meter, now, durable, 5e6, 4.0); // the stick slows down (full SLC cache)
    CHECK(meter.rate() == Approx(5e6).epsilon(0.15));
    const double seconds = double(plan.chunk_bytes) / 5e6;
    CHECK(seconds >= 0.05);
    CHECK(seconds <= 0.3);
}

TEST_CASE("chunk controller in the loop: grows from the small start to a fast device within seconds")
{
    RateMeter meter;
    double now = 0;
    uint64_t durable = 0;
    meter.start(now, durable);
    const ChunkPlan plan = simulate(meter, now, durable, 200e6, 3.0);
    CHECK(meter.rate() == Approx(200e6).epsilon(0.05));
    CHECK(plan.chunk_bytes > 1 * MiB);
    CHECK(plan.in_flight_bytes() <= 32 * MiB);
}

TEST_CASE("eta: unknown without a rate, zero when nothing is left")
{
    CHECK(eta_seconds(100, 0) < 0);
    CHECK(eta_seconds(0, 0) == 0);
    CHECK(eta_seconds(40'000'000, 40e6) == Approx(1.0));
}
