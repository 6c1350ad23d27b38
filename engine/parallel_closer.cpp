// SPDX-License-Identifier: GPL-2.0-or-later
#include "parallel_closer.h"

#include <algorithm>
#include <utility>

namespace sanecopy {

ParallelCloser::ParallelCloser(std::size_t threads) : max_threads_(std::max<std::size_t>(1, threads)) {}

ParallelCloser::~ParallelCloser()
{
    wait();
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_.notify_all();
    for (std::thread &t : threads_)
        t.join();
}

void ParallelCloser::start(std::vector<PartFile *> parts)
{
    wait();
    std::lock_guard lock(mutex_);
    // As many threads as this round can keep busy, up to the limit; they stay for the next rounds.
    while (threads_.size() < std::min(max_threads_, parts.size()))
        threads_.emplace_back([this] { loop(); });
    parts_ = std::move(parts);
    results_.assign(parts_.size(), Status());
    next_ = 0;
    finished_ = 0;
    work_.notify_all();
}

std::vector<Status> ParallelCloser::wait()
{
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return finished_ == parts_.size(); });
    parts_.clear();
    finished_ = 0;
    return std::exchange(results_, {});
}

void ParallelCloser::loop()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        work_.wait(lock, [&] { return stop_ || next_ < parts_.size(); });
        if (stop_)
            return;
        const std::size_t i = next_++;
        PartFile *part = parts_[i];
        lock.unlock();
        Status closed = part->close_fd();
        lock.lock();
        results_[i] = std::move(closed);
        if (++finished_ == parts_.size())
            done_.notify_all();
    }
}

} // namespace sanecopy
