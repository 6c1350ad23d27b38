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

namespace {
bool everyone_done(const SourceShare::File &file)
{
    return std::all_of(file.done.begin(), file.done.end(), [](bool d) { return d; });
}
} // namespace

SourceShare::SourceShare(unsigned members, uint64_t budget) : members_(members), budget_(budget), left_(members) {}

uint64_t SourceShare::default_budget()
{
    constexpr uint64_t kFloor = 64 * kMiB, kCeiling = 1024 * kMiB;
    const std::optional<MemInfo> memory = read_meminfo();
    return std::clamp(memory ? memory->available_bytes / 4 : kFloor, kFloor, kCeiling);
}

std::shared_ptr<SourceShare> SourceShare::for_jobs(std::size_t jobs)
{
    return jobs > 1 ? std::make_shared<SourceShare>(unsigned(jobs), default_budget()) : nullptr;
}

SourceResidency SourceShare::open(unsigned member, const std::string &path, int fd, const struct stat &st, bool evict)
{
    bool taken = false;
    {
        std::lock_guard lock(mutex_);
        if (auto it = files_.find(path); it != files_.end())
            taken = it->second->residency_taken;
    }
    // The first job to open it: what is cached now is someone else's. Taken outside the lock (mincore on a big
    // file takes a while); a second job opening the same file meanwhile keeps the first one's.
    std::optional<SourceResidency> own;
    if (!taken)
        own = source_residency(fd, st, evict);
    std::lock_guard lock(mutex_);
    const std::shared_ptr<File> &file = entry(path);
    if (!file->residency_taken && own) {
        file->resident = std::move(own->resident);
        file->evict = own->evict;
        file->residency_taken = true;
    }
    SourceResidency r;
    r.evict = file->evict;
    r.resident = file->resident;
    r.shared = SharedSourceFile {shared_from_this(), file, member};
    return r;
}

// Under the lock: |path|'s entry, made (waiting for every job still in the group) when it has none.
const std::shared_ptr<SourceShare::File> &SourceShare::entry(const std::string &path)
{
    auto [it, made] = files_.try_emplace(path);
    if (made) {
        it->second = std::make_shared<File>();
        it->second->done = left_;
    }
    return it->second;
}

bool SourceShare::may_drop(File &file, unsigned member, uint64_t end, bool whole)
{
    std::lock_guard lock(mutex_);
    bool others_done = true;
    for (unsigned m = 0; m < members_; ++m)
        others_done = others_done && (m == member || file.done[m]);
    if (others_done) {
        file.dropped = file.dropped || whole;
        return true;
    }
    // Pages already kept (by a faster job, up to |kept|) cost nothing more; only what lies beyond them does.
    const uint64_t more = end > file.kept ? end - file.kept : 0;
    if (kept_ + more > budget_)
        return true;
    kept_ += more;
    file.kept += more;
    return false;
}

void SourceShare::done(unsigned member, const std::string &path)
{
    std::shared_ptr<File> settled;
    {
        std::lock_guard lock(mutex_);
        if (member >= members_)
            return;
        // Done before anyone opened it (skipped, refused, there already): the others need not wait for this job.
        const std::shared_ptr<File> &file = entry(path);
        file->done[member] = true;
        if (!everyone_done(*file))
            return;
        settled = file;
        kept_ -= settled->kept;
        files_.erase(path);
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
            if (everyone_done(*it->second)) {
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
