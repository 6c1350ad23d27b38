// SPDX-License-Identifier: GPL-2.0-or-later
// Small sources opened and read ahead of the copy (job_runner.h, SourcePrefetch).
#include "job_runner.h"

#include "sys.h"

#include <algorithm>
#include <fcntl.h>

namespace sanecopy::job_detail {

void SourcePrefetch::fill(ItemEntries &entries, DirCache &dirs, uint64_t small_limit, const ResidencyOf &residency_of)
{
    if (ahead_.size() >= kFiles || bytes_ >= kBytes)
        return;
    const std::deque<ItemEntries::Entry> &upcoming = entries.ahead(kEntries);
    const std::size_t first = upcoming.front().seq;
    next_ = std::max(next_, first + 1);
    while (next_ - first < upcoming.size() && ahead_.size() < kFiles && bytes_ < kBytes) {
        const std::size_t index = next_++;
        const PlanEntry &e = upcoming[index - first].entry;
        if (e.kind != EntryKind::File || !e.skip_reason.empty() || e.size == 0 || e.size > small_limit)
            continue;
        const auto [parent_rel, name] = split_rel(join(entries.source_name(), e.rel));
        Status ignored; // whatever fails here fails again, and is reported, when the copy opens the file itself
        const SharedDirFd dir = dirs.get(parent_rel, ignored);
        if (!dir)
            continue;
        // As the copy opens it (JobRunner::open_source): never a FIFO's wait, never through a link.
        Source s;
        s.index = index;
        s.fd.reset(
            sys().openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
        if (!s.fd || sys().fstat(s.fd.get(), &s.st) < 0 || !S_ISREG(s.st.st_mode) ||
            uint64_t(s.st.st_size) > small_limit)
            continue;
        sys().fcntl_setfl(s.fd.get(), O_RDONLY);
        // What was cached before this read-ahead, or its pages would pass for someone else's and stay.
        s.residency = residency_of(e.rel, s.fd.get(), uint64_t(s.st.st_size));
        sys().fadvise(s.fd.get(), 0, s.st.st_size, POSIX_FADV_WILLNEED);
        bytes_ += uint64_t(s.st.st_size);
        ahead_.push_back(std::move(s));
    }
}

std::optional<SourcePrefetch::Source> SourcePrefetch::take(std::size_t index)
{
    while (!ahead_.empty() && ahead_.front().index <= index) {
        Source s = std::move(ahead_.front());
        ahead_.pop_front();
        bytes_ -= uint64_t(s.st.st_size);
        if (s.index == index)
            return s;
    }
    return std::nullopt;
}

} // namespace sanecopy::job_detail
