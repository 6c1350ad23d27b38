// SPDX-License-Identifier: GPL-2.0-or-later
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sanecopy {

// A cold tree's inodes read ahead of a walk, on a few threads. The walk stats one entry at a time, and on a cold
// cache each stat waits on the source disk, which could answer several at once: here a million files took 4.8 s
// to walk from a cold cache on one thread, 2.5 s on four, and sanecp's first durable byte came about 1.5 s sooner.
// Nothing starts until the walk has met kWarmAfterEntries entries, so a small tree costs no thread; the threads end
// with the warmer.
class TreeWarmer {
public:
    explicit TreeWarmer(std::string root);
    TreeWarmer(const TreeWarmer &) = delete;
    TreeWarmer &operator=(const TreeWarmer &) = delete;
    ~TreeWarmer();

    // The walk met one more entry.
    void met_entry();

private:
    void run();
    // Lists |folder| and stats what it holds; returns its subfolders.
    std::vector<std::string> warm(const std::string &folder) const;

    const std::string root_;
    uint64_t met_ = 0;
    std::atomic<bool> stop_ {false};
    std::mutex mutex_; // for what follows
    std::condition_variable changed_;
    std::vector<std::string> folders_; // to warm, last in first out
    unsigned busy_ = 0;                // warmers listing a folder, which may add more
    std::vector<std::thread> threads_;
};

} // namespace sanecopy
