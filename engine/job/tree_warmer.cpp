// SPDX-License-Identifier: GPL-2.0-or-later
// A tree's inodes read ahead of the plan's walk (tree_plan.h, TreeWarmer).
#include "tree_warmer.h"

#include "fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

namespace sanecopy {

namespace {
// Below this many entries met by the walk, a tree is small, or cached, enough: no threads are started.
constexpr uint64_t kWarmAfterEntries = 20000;
constexpr unsigned kWarmers = 3;
} // namespace

TreeWarmer::TreeWarmer(std::string root) : root_(std::move(root)) {}

TreeWarmer::~TreeWarmer()
{
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
    for (std::thread &t : threads_)
        t.join();
}

void TreeWarmer::met_entry()
{
    if (++met_ != kWarmAfterEntries)
        return;
    {
        std::lock_guard lock(mutex_);
        folders_.push_back(root_);
    }
    for (unsigned i = 0; i < kWarmers; ++i)
        threads_.emplace_back([this] { run(); });
}

// Folders are taken last in, first out: each warmer goes deep, as the walk does, rather than across the tree. A
// warmer with nothing to take waits while another lists a folder, which may add more.
void TreeWarmer::run()
{
    std::unique_lock lock(mutex_);
    for (;;) {
        changed_.wait(lock, [this] { return stop_ || !folders_.empty() || busy_ == 0; });
        if (stop_ || folders_.empty())
            return;
        const std::string folder = std::move(folders_.back());
        folders_.pop_back();
        ++busy_;
        lock.unlock();
        std::vector<std::string> found = warm(folder);
        lock.lock();
        --busy_;
        for (std::string &f : found)
            folders_.push_back(std::move(f));
        changed_.notify_all();
    }
}

// Lists |folder| and stats what it holds, so the walk finds the inodes in memory. The system calls are made
// directly, not through the seam (sys.h): nothing found here is used, and a test's faults or counts are for
// the walk itself.
std::vector<std::string> TreeWarmer::warm(const std::string &folder) const
{
    std::vector<std::string> subfolders;
    UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd)
        return subfolders;
    DIR *dir = ::fdopendir(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!dir)
        return subfolders;
    while (const dirent *e = ::readdir(dir)) {
        if (stop_)
            break;
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
            continue;
        struct stat st {};
        if (::fstatat(fd.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            subfolders.push_back(folder + "/" + e->d_name);
    }
    ::closedir(dir);
    return subfolders;
}

} // namespace sanecopy
