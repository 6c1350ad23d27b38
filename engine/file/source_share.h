// SPDX-License-Identifier: GPL-2.0-or-later
//
// One source onto several devices at once (sanecp --to A --to B ...: a classroom's sticks): one job a device, each
// at its device's own speed, and the source read from its disk once.
//
// Alone, a job drops the source's pages behind itself (SourceCache). Beside others, the pages it read are what
// the slower jobs read next, so it keeps them instead: the clean pages of a file stay until every job is done with
// it, and the last one drops them as it goes, as a job alone would. Which pages were cached before the copy (and
// are left alone) is taken once, by the first job to open the file, and used by all: to a job that came later,
// the first one's pages would pass for someone else's and stay.
//
// What is kept is bounded by a budget of memory: past it a job drops behind itself as when alone, and a slower
// device reads that part from the source disk again. A fast device is never held back for a slow one.
//
// Files are known by their source path, as every job of the group walks the same sources. A job says when it is
// done with a file (copied, skipped, failed), and leaves the group when it ends for any reason (done, cancelled,
// its device pulled): from then on it needs nothing, and no file waits for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unordered_map>
#include <vector>

namespace sanecopy {

struct SourceResidency;

class SourceShare : public std::enable_shared_from_this<SourceShare> {
public:
    // |members| jobs, numbered 0 .. members - 1; |budget| bytes of kept pages at most.
    SourceShare(unsigned members, uint64_t budget);
    // A quarter of the memory available now, at most 1 GiB, at least 64 MiB.
    static uint64_t default_budget();
    // The group of |jobs| copies of the same sources with the default budget; none for a single copy.
    static std::shared_ptr<SourceShare> for_jobs(std::size_t jobs);

    // The residency of |path|, opened as |fd| (|st| its fstat) by |member| before its first read: the group's, taken
    // now when |member| is the first to open it. The SourceCache made with it asks this group before dropping.
    SourceResidency open(unsigned member, const std::string &path, int fd, const struct stat &st, bool evict);
    // |member| is done with |path|. The last one to be done drops what was kept of it, if its own copy did not.
    void done(unsigned member, const std::string &path);
    // |member| needs nothing more: every file waiting for it is done for it.
    void leave(unsigned member);

    uint64_t kept_bytes() const;

    // One file as the group sees it (SourceCache's side).
    struct File;
    // Whether |member| may drop its pages of |file| up to |end| behind itself now: when every other job is done
    // with it, or when keeping them would pass the budget. Otherwise they are counted as kept, for the others
    // (once, however many jobs keep them). |whole|: the drop of the whole file at the end of the job's copy of it.
    bool may_drop(File &file, unsigned member, uint64_t end, bool whole);

private:
    const std::shared_ptr<File> &entry(const std::string &path);
    void settle(const std::string &path, File &file);

    const unsigned members_;
    const uint64_t budget_;
    mutable std::mutex mutex_;
    uint64_t kept_ = 0;
    std::vector<bool> left_;
    std::unordered_map<std::string, std::shared_ptr<File>> files_;
};

struct SourceShare::File {
    std::vector<unsigned char> resident; // the group's residency (SourceResidency::resident)
    bool evict = true;
    bool residency_taken = false; // by the first job to open it (a job done before opening it takes none)
    std::vector<bool> done;       // by member
    uint64_t kept = 0;            // its first |kept| bytes are kept for others (counted once in the budget)
    bool dropped = false;         // the last job's own copy dropped them
};

// What a SourceCache of a group's job needs: the group, the file, and which job it is.
struct SharedSourceFile {
    std::shared_ptr<SourceShare> share;
    std::shared_ptr<SourceShare::File> file;
    unsigned member = 0;
};

} // namespace sanecopy
