// SPDX-License-Identifier: GPL-2.0-or-later
#include "chunk_controller.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sanecopy {

ChunkLimits ChunkLimits::checked() const
{
    constexpr uint64_t kPage = 4096;
    ChunkLimits l = *this;
    if (!(l.target_seconds > 0))
        l.target_seconds = ChunkLimits {}.target_seconds;
    l.align = std::max(kPage, l.align / kPage * kPage);
    l.request = l.request / kPage * kPage;
    if (l.request > 0)
        l.request = std::lcm(l.request, l.align);
    l.min_chunk = std::max(l.align, (l.min_chunk + l.align - 1) / l.align * l.align);
    l.max_chunk = std::max(l.min_chunk, l.max_chunk);
    l.start_chunk = std::clamp(l.start_chunk, l.min_chunk, l.max_chunk);
    l.min_windows = std::max(1u, l.min_windows);
    l.max_windows = std::max(l.min_windows, l.max_windows);
    l.max_in_flight = std::max(l.max_in_flight, (uint64_t(l.min_windows) + 1) * l.min_chunk);
    return l;
}

namespace {

// |chunk| as the nearest whole number of |request|s within [lo, hi] (ChunkLimits::request); as it is when it is
// smaller than one, or when no such number lies within the limits.
uint64_t whole_requests(uint64_t chunk, uint64_t request, uint64_t lo, uint64_t hi)
{
    if (request == 0 || chunk < request)
        return chunk;
    const uint64_t down = chunk / request * request;
    const uint64_t up = down + request;
    const bool down_fits = down >= lo;
    const bool up_fits = up <= hi;
    if (up_fits && (!down_fits || up - chunk < chunk - down))
        return up;
    return down_fits ? down : chunk;
}

} // namespace

ChunkPlan plan_chunks(double device_bytes_per_sec, const ChunkLimits &raw_limits)
{
    const ChunkLimits limits = raw_limits.checked();
    ChunkPlan plan;
    double wanted = device_bytes_per_sec > 0 ? device_bytes_per_sec * limits.target_seconds
                                             : static_cast<double>(limits.start_chunk);
    // Leave room for at least min_windows + 1 chunks in the budget, whatever the device's speed.
    const uint64_t budget_cap = limits.max_in_flight / (limits.min_windows + 1);
    const uint64_t hi = std::min(limits.max_chunk, budget_cap);
    uint64_t chunk = static_cast<uint64_t>(std::clamp(wanted, double(limits.min_chunk), double(hi)));
    chunk = std::max(limits.align, chunk / limits.align * limits.align);
    chunk = whole_requests(chunk, limits.request, limits.min_chunk, hi);
    plan.chunk_bytes = chunk;

    const uint64_t fit = limits.max_in_flight / chunk; // chunks the budget holds, the one being sent included
    plan.windows =
        static_cast<unsigned>(std::clamp<uint64_t>(fit > 0 ? fit - 1 : 0, limits.min_windows, limits.max_windows));
    return plan;
}

void RateMeter::start(double now, uint64_t total)
{
    last_time_ = now;
    last_total_ = total;
    started_ = true;
}

void RateMeter::sample(double now, uint64_t total)
{
    if (!started_) {
        start(now, total);
        return;
    }
    const double dt = now - last_time_;
    if (dt < min_interval_ || (!measured_ && total - last_total_ < first_bytes_))
        return; // too little to say anything; the bytes count in the next sample
    const double instant = double(total - last_total_) / dt;
    if (!measured_) {
        rate_ = instant;
        measured_ = true;
    } else {
        // The weight follows elapsed time, not sample count, so bursts of samples don't dominate.
        const double alpha = 1.0 - std::exp(-dt / tau_);
        rate_ += alpha * (instant - rate_);
    }
    last_time_ = now;
    last_total_ = total;
}

double eta_seconds(uint64_t remaining, double rate)
{
    if (remaining == 0)
        return 0;
    if (rate <= 0)
        return -1;
    return double(remaining) / rate;
}

} // namespace sanecopy
