// SPDX-License-Identifier: GPL-2.0-or-later
#include "parallel_closer.h"

#include <algorithm>

namespace sanecopy {

ParallelCloser::ParallelCloser(std::size_t threads) : max_threads_(std::max<std::size_t>(1, threads)) {}

ParallelCloser::~ParallelCloser()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_.notify_all();
    for (std::thread &t : threads_)
        t.join();
}

std::vector<Status> ParallelCloser::close_all(const std::vector<PartFile *> &parts)
{
    std::vector<Status> results(parts.size());
    if (parts.empty())
        return results;
    std::unique_lock lock(mutex_);
    // As many threads as this round can keep busy, up to the limit; they stay for the next rounds.
    while (threads_.size() < std::min(max_threads_, parts.size()))
        threads_.emplace_back([this] { loop(); });
    parts_ = &parts;
    results_ = &results;
    next_ = 0;
    finished_ = 0;
    work_.notify_all();
    done_.wait(lock, [&] { return finished_ == parts.size(); });
    parts_ = nullptr;
    results_ = nullptr;
    return results;
}

void ParallelCloser::loop()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        work_.wait(lock, [&] { return stop_ || (parts_ && next_ < parts_->size()); });
        if (stop_)
            return;
        const std::size_t i = next_++;
        PartFile *part = (*parts_)[i];
        lock.unlock();
        Status closed = part->close_fd();
        lock.lock();
        (*results_)[i] = std::move(closed);
        if (++finished_ == parts_->size())
            done_.notify_all();
    }
}

} // namespace sanecopy
