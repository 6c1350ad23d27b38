// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include "copy_job.h"

#include <memory>
#include <string>
#include <vector>

namespace sanecopy::test {

struct JobRun {
    JobSummary summary;
    std::vector<JobEvent> events;
    std::unique_ptr<ProgressCounters> counters = std::make_unique<ProgressCounters>();

    std::size_t count(JobEvent::Kind kind) const
    {
        std::size_t n = 0;
        for (const auto &e : events)
            n += e.kind == kind;
        return n;
    }
    const JobEvent *first(JobEvent::Kind kind) const
    {
        for (const auto &e : events)
            if (e.kind == kind)
                return &e;
        return nullptr;
    }
};

inline JobRun run_job(const JobSpec &spec, const JobControl &control = {})
{
    JobRun run;
    run.summary = run_copy_job(spec, control, *run.counters, [&](const JobEvent &e) { run.events.push_back(e); });
    return run;
}

inline JobSpec spec_of(std::vector<std::string> sources, std::string dest,
                       ConflictPolicy conflict = ConflictPolicy::Refuse)
{
    JobSpec spec;
    spec.sources = std::move(sources);
    spec.destination = std::move(dest);
    spec.conflict = conflict;
    return spec;
}

} // namespace sanecopy::test
