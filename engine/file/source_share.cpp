// SPDX-License-Identifier: GPL-2.0-or-later
#include "source_share.h"

#include "fd.h"
#include "page_cache_policy.h"
#include "sys.h"
#include "sysmon.h"
#include "units.h"

#include <algorithm>
#include <fcntl.h>

namespace sanecopy {

SourceShare::SourceShare(unsigned members, uint64_t budget) : members_(members), budget_(budget), left_(members) {}

uint64_t SourceShare::default_budget()
{
    constexpr uint64_t kFloor = 64 * kMiB, kCeiling = 1024 * kMiB;
    const std::optional<MemInfo> memory = read_meminfo();
    return std::clamp(memory ? memory->available_bytes / 4 : kFloor, kFloor, kCeiling);
}

SourceResidency SourceShare::open(unsigned member, const std::string &path, int fd, uint64_t size, bool evict)
{
    std::shared_ptr<File> file;
    {
        std::lock_guard lock(mutex_);
        if (auto it = files_.find(path); it != files_.end())
            file = it->second;
    }
    if (!file) {
        // The first job to open it: what is cached now is someone else's. Taken outside the lock (mincore on a
        // big file takes a while); a second job opening the same file meanwhile takes the first one's.
        SourceResidency own = source_residency(fd, size, evict);
        auto made = std::make_shared<File>();
        made->resident = std::move(own.resident);
        made->evict = own.evict;
        made->done.assign(members_, false);
        std::lock_guard lock(mutex_);
        for (unsigned m = 0; m < members_; ++m)
            made->done[m] = left_[m];
        file = files_.try_emplace(path, std::move(made)).first->second;
    }
    SourceResidency r;
    r.evict = file->evict;
    r.resident = file->resident;
    r.shared = SharedSourceFile {shared_from_this(), file, member};
    return r;
}

bool SourceShare::may_drop(File &file, unsigned member, uint64_t bytes, bool whole)
{
    std::lock_guard lock(mutex_);
    bool others_done = true;
    for (unsigned m = 0; m < members_; ++m)
        others_done = others_done && (m == member || file.done[m]);
    if (others_done) {
        file.dropped = file.dropped || whole;
        return true;
    }
    if (kept_ + bytes > budget_)
        return true;
    kept_ += bytes;
    file.kept += bytes;
    return false;
}

void SourceShare::done(unsigned member, const std::string &path)
{
    std::shared_ptr<File> settled;
    {
        std::lock_guard lock(mutex_);
        const auto it = files_.find(path);
        if (it == files_.end() || member >= members_)
            return;
        it->second->done[member] = true;
        if (!std::all_of(it->second->done.begin(), it->second->done.end(), [](bool d) { return d; }))
            return;
        settled = it->second;
        kept_ -= settled->kept;
        files_.erase(it);
    }
    settle(path, *settled);
}

void SourceShare::leave(unsigned member)
{
    std::vector<std::pair<std::string, std::shared_ptr<File>>> settled;
    {
        std::lock_guard lock(mutex_);
        if (member >= members_)
            return;
        left_[member] = true;
        for (auto it = files_.begin(); it != files_.end();) {
            it->second->done[member] = true;
            if (std::all_of(it->second->done.begin(), it->second->done.end(), [](bool d) { return d; })) {
                kept_ -= it->second->kept;
                settled.emplace_back(it->first, it->second);
                it = files_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto &[path, file] : settled)
        settle(path, *file);
}

uint64_t SourceShare::kept_bytes() const
{
    std::lock_guard lock(mutex_);
    return kept_;
}

// Every job is done with |file|. What was kept for the others and not dropped by the last copy (the last job
// skipped the file, failed on it, or left) is dropped here, through a descriptor of its own.
void SourceShare::settle(const std::string &path, File &file)
{
    if (file.kept == 0 || file.dropped || !file.evict)
        return;
    UniqueFd fd(sys().openat(AT_FDCWD, path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0));
    struct stat st {};
    if (!fd || sys().fstat(fd.get(), &st) < 0 || !S_ISREG(st.st_mode))
        return;
    SourceResidency r;
    r.resident = std::move(file.resident);
    SourceCache(fd.get(), uint64_t(st.st_size), std::move(r)).release_all();
}

} // namespace sanecopy
