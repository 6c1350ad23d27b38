// SPDX-License-Identifier: GPL-2.0-or-later
#include "background_closer.h"

#include <algorithm>
#include <system_error>
#include <utility>

namespace sanecopy {

BackgroundCloser::BackgroundCloser(std::size_t threads) : max_threads_(std::max<std::size_t>(1, threads)) {}

BackgroundCloser::~BackgroundCloser()
{
    drain();
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    work_.notify_all();
    for (std::thread &t : threads_)
        t.join();
}

void BackgroundCloser::close(UniqueFd fd)
{
    if (!fd.valid())
        return;
    std::unique_lock lock(mutex_);
    // A new thread only when every one there is busy: they stay for the next files. One that can't be started
    // (EAGAIN) leaves the close to the caller when no thread is there to take it.
    if (threads_.size() < max_threads_ && closing_ + queue_.size() + 1 > threads_.size()) {
        try {
            threads_.emplace_back([this] { loop(); });
        } catch (const std::system_error &) {
            if (threads_.empty()) {
                lock.unlock();
                fd.reset();
                return;
            }
        }
    }
    queue_.push_back(std::move(fd));
    work_.notify_one();
}

void BackgroundCloser::drain()
{
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && closing_ == 0; });
}

void BackgroundCloser::loop()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty())
            return; // stop_, and nothing left
        UniqueFd fd = std::move(queue_.front());
        queue_.pop_front();
        ++closing_;
        lock.unlock();
        fd.reset(); // through the syscall seam; the result says nothing new (see the header)
        lock.lock();
        if (--closing_ == 0 && queue_.empty())
            idle_.notify_all();
    }
}

namespace {

struct Unwaited {
    std::mutex mutex;
    std::condition_variable none_left;
    std::size_t closing = 0;
};

// Never destroyed: a close may still be waiting for a server while the process exits.
Unwaited &unwaited()
{
    static auto *const state = new Unwaited;
    return *state;
}

} // namespace

void close_unwaited(UniqueFd fd)
{
    if (!fd.valid())
        return;
    Unwaited &u = unwaited();
    auto closed = [&u] {
        std::lock_guard lock(u.mutex);
        if (--u.closing == 0)
            u.none_left.notify_all();
    };
    {
        std::lock_guard lock(u.mutex);
        ++u.closing;
    }
    try {
        std::thread([fd = std::move(fd), closed]() mutable {
            fd.reset(); // through the syscall seam; its result says nothing new (see close_unwaited)
            closed();
        }).detach();
    } catch (const std::system_error &) {
        closed(); // the descriptor went with the thread's callable, closed on this thread
    }
}

void wait_unwaited_closes()
{
    Unwaited &u = unwaited();
    std::unique_lock lock(u.mutex);
    u.none_left.wait(lock, [&] { return u.closing == 0; });
}

} // namespace sanecopy
