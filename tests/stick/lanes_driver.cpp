// SPDX-License-Identifier: GPL-2.0-or-later
//
// lanes_driver SRC DEST [SRC DEST]...: submits each pair as a job to one JobQueue with its default lanes (one per
// destination device), waits for all of them, and prints one JSON line per job in the order given:
//   {"dest": ..., "lane": ..., "ok": ..., "running_from": ..., "finished_at": ...}
// running_from is when a progress snapshot first said Running, finished_at when on_finished came, both in
// CLOCK_MONOTONIC seconds (Python's time.monotonic). sanecp runs a single job, so test_sanecp_stick.py's lanes
// case uses this to see which jobs wrote at the same time. Exit 0 when every job is ok, 1 if not, 2 on bad usage.
#include "job_queue.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace sanecopy;

namespace {

class Recorder : public JobObserver {
public:
    explicit Recorder(std::string dest) : dest_(std::move(dest)) {}

    // Both are called from the ticker and from the job's lane, which can overlap.
    void on_progress(const ProgressSnapshot &s) override
    {
        if (s.state != JobState::Running)
            return;
        const double now = monotonic_seconds();
        std::lock_guard lock(mutex_);
        if (running_from_ < 0)
            running_from_ = now;
    }
    void on_event(uint64_t, const JobEvent &e) override
    {
        // The JSON line says only ok or not; what went wrong goes to stderr, for whoever reads the test log.
        if (e.kind == JobEvent::Kind::Error || e.kind == JobEvent::Kind::Skipped)
            std::fprintf(stderr, "%s: %s: %s\n", dest_.c_str(), e.path.c_str(), e.message.c_str());
    }
    void on_finished(uint64_t, const JobSummary &summary) override
    {
        const double now = monotonic_seconds();
        std::lock_guard lock(mutex_);
        finished_at_ = now;
        ok_ = summary.ok();
    }

    std::string json(const std::string &lane) const
    {
        std::lock_guard lock(mutex_);
        char times[96];
        std::snprintf(times, sizeof times, "\"running_from\": %s, \"finished_at\": %s", number(running_from_).c_str(),
                      number(finished_at_).c_str());
        return "{\"dest\": " + quoted(dest_) + ", \"lane\": " + quoted(lane) + ", \"ok\": " + (ok_ ? "true" : "false") +
               ", " + times + "}";
    }

private:
    static std::string number(double t)
    {
        if (t < 0)
            return "null"; // never seen: the test reports it rather than compare a made-up time
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6f", t);
        return buf;
    }
    static std::string quoted(const std::string &s)
    {
        std::string out = "\"";
        for (const unsigned char c : s) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c < 0x20) {
                char esc[8];
                std::snprintf(esc, sizeof esc, "\\u%04x", c);
                out += esc;
            } else {
                out += static_cast<char>(c);
            }
        }
        return out + "\"";
    }

    const std::string dest_;
    mutable std::mutex mutex_;
    double running_from_ = -1;
    double finished_at_ = -1;
    bool ok_ = false;
};

} // namespace

int main(int argc, char **argv)
{
    if (argc < 3 || (argc - 1) % 2 != 0) {
        std::fprintf(stderr, "usage: %s SRC DEST [SRC DEST]...\n", argv[0]);
        return 2;
    }
    std::vector<JobSpec> specs;
    std::vector<std::shared_ptr<Recorder>> recorders;
    for (int i = 1; i + 1 < argc; i += 2) {
        JobSpec spec;
        spec.sources = {argv[i]};
        spec.destination = argv[i + 1];
        specs.push_back(spec);
        recorders.push_back(std::make_shared<Recorder>(spec.destination));
    }
    // The lane each job goes to (the queue asks the same function), printed so that a failing test tells a wrong
    // lane choice apart from a queue that does not keep to its lanes.
    std::vector<std::string> lanes;
    for (const auto &spec : specs)
        lanes.push_back(JobQueue::default_lane(spec));

    bool all_ok = true;
    {
        JobQueue queue(0.05);
        std::vector<std::shared_ptr<Job>> jobs;
        for (size_t i = 0; i < specs.size(); ++i)
            jobs.push_back(queue.submit(specs[i], recorders[i]));
        for (const auto &job : jobs)
            all_ok = job->wait().ok() && all_ok;
        queue.wait_idle();
    }
    for (size_t i = 0; i < specs.size(); ++i)
        std::printf("%s\n", recorders[i]->json(lanes[i]).c_str());
    return all_ok ? 0 : 1;
}
