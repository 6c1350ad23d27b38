// SPDX-License-Identifier: GPL-2.0-or-later
// Small sources opened and read ahead of the copy, on a thread of their own (job_runner.h, SourcePrefetch).
#include "job_runner.h"

#include "sys.h"

#include <algorithm>
#include <fcntl.h>
#include <new>
#include <system_error>
#include <vector>

namespace sanecopy::job_detail {

SourcePrefetch::~SourcePrefetch()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

std::size_t SourcePrefetch::held() const { return requests_.size() + ahead_.size() + (working_ ? 1 : 0); }

void SourcePrefetch::fill(ItemEntries &entries, DirCache &dirs, uint64_t small_limit, const ResidencyOf &residency_of)
{
    std::unique_lock lock(mutex_);
    const std::size_t files = held();
    const uint64_t bytes = bytes_;
    // Topped up once half is taken, not file by file: the thread, caught up, waits, and each hand-over that
    // woke it was a wake-up (a tenth of the job's thread on 20,000 tiny files) for one file's work.
    if (no_thread_ || files > kFiles / 2 || bytes > kBytes / 2)
        return;
    lock.unlock();
    std::vector<Request> more = choose(entries, dirs, small_limit, files, bytes);
    if (!more.empty())
        hand_over(std::move(more), residency_of);
}

std::vector<SourcePrefetch::Request> SourcePrefetch::choose(ItemEntries &entries, DirCache &dirs, uint64_t small_limit,
                                                            std::size_t files, uint64_t bytes)
{
    // The walk and the folder cache are the job's thread's alone: read here, the thread only opens.
    const std::deque<ItemEntries::Entry> &upcoming = entries.ahead(kEntries);
    const std::size_t first = upcoming.front().seq;
    next_ = std::max(next_, first + 1);
    std::vector<Request> more;
    while (next_ - first < upcoming.size() && files + more.size() < kFiles && bytes < kBytes) {
        const std::size_t index = next_++;
        const PlanEntry &e = upcoming[index - first].entry;
        if (e.kind != EntryKind::File || !e.skip_reason.empty() || e.size == 0 || e.size > small_limit)
            continue;
        const auto [parent_rel, name] = split_rel(join(entries.source_name(), e.rel));
        Status ignored; // whatever fails here fails again, and is reported, when the copy opens the file itself
        SharedDirFd dir = dirs.get(parent_rel, ignored);
        if (!dir)
            continue;
        more.push_back({index, std::move(dir), name, e.rel, e.size, small_limit});
        bytes += e.size;
    }
    return more;
}

void SourcePrefetch::hand_over(std::vector<Request> more, const ResidencyOf &residency_of)
{
    std::unique_lock lock(mutex_);
    if (!residency_of_)
        residency_of_ = residency_of;
    for (Request &r : more) {
        bytes_ += r.planned;
        requests_.push_back(std::move(r));
    }
    if (!thread_.joinable()) {
        try {
            thread_ = std::thread([this] { run(); });
        } catch (const std::system_error &) {
            // Without a thread the copy opens every file itself, as it does a file nobody read ahead.
            no_thread_ = true;
            requests_.clear();
            bytes_ = 0;
            return;
        }
    }
    // A wake-up is a system call: only for a thread that waits.
    const bool wake = thread_idle_;
    lock.unlock();
    if (wake)
        wake_.notify_one();
}

bool SourcePrefetch::busy_up_to(std::size_t index) const { return working_ && *working_ <= index; }

std::optional<SourcePrefetch::Source> SourcePrefetch::take(std::size_t index)
{
    std::unique_lock lock(mutex_);
    if (busy_up_to(index)) {
        taker_waiting_ = true;
        done_.wait(lock, [&] { return !busy_up_to(index); });
        taker_waiting_ = false;
    }
    // Not begun yet: the copy opens it, and those before it it passed over, itself.
    while (!requests_.empty() && requests_.front().index <= index) {
        bytes_ -= requests_.front().planned;
        requests_.pop_front();
    }
    while (!ahead_.empty() && ahead_.front().index <= index) {
        Source s = std::move(ahead_.front());
        ahead_.pop_front();
        bytes_ -= uint64_t(s.st.st_size);
        if (s.index == index)
            return s;
    }
    return std::nullopt;
}

void SourcePrefetch::run()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        thread_idle_ = true;
        wake_.wait(lock, [&] { return stop_ || !requests_.empty(); });
        thread_idle_ = false;
        if (stop_)
            return;
        const Request r = std::move(requests_.front());
        requests_.pop_front();
        working_ = r.index;
        lock.unlock();
        std::optional<Source> s;
        try {
            s = open_one(r);
        } catch (...) { // out of memory: the copy opens it itself, and fails there if it must
            s.reset();
        }
        lock.lock();
        working_.reset();
        bytes_ -= r.planned;
        if (s) {
            try {
                ahead_.push_back(std::move(*s));
                bytes_ += uint64_t(ahead_.back().st.st_size);
            } catch (const std::bad_alloc &) {
                s.reset(); // closed: the copy opens it itself
            }
        }
        if (taker_waiting_)
            done_.notify_all();
    }
}

std::optional<SourcePrefetch::Source> SourcePrefetch::open_one(const Request &r) const
{
    // As the copy opens it (JobRunner::open_source): never a FIFO's wait, never through a link.
    Source s;
    s.index = r.index;
    s.fd.reset(
        sys().openat(r.dir->get(), r.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!s.fd || sys().fstat(s.fd.get(), &s.st) < 0 || !S_ISREG(s.st.st_mode) || uint64_t(s.st.st_size) > r.small_limit)
        return std::nullopt;
    sys().fcntl_setfl(s.fd.get(), O_RDONLY);
    // What was cached before this read-ahead, or its pages would pass for someone else's and stay.
    s.residency = residency_of_(r.rel, s.fd.get(), s.st);
    sys().fadvise(s.fd.get(), 0, s.st.st_size, POSIX_FADV_WILLNEED);
    return s;
}

} // namespace sanecopy::job_detail
