// SPDX-License-Identifier: GPL-2.0-or-later
// The path and folder helpers of a copy job (job_runner.h).
#include "job_runner.h"

#include "sys.h"

#include <cctype>
#include <fcntl.h>

namespace sanecopy {

namespace job_detail {

SharedDirFd open_dir(int at, const char *path, Status &error, const std::string &display, bool nofollow, Side side)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
    int fd = sys().openat(at, path, flags, 0);
    if (fd < 0) {
        error = Status(std::error_code(errno, std::generic_category()), "open folder", display, side);
        return {};
    }
    return std::make_shared<const UniqueFd>(fd);
}

std::string join(const std::string &a, const std::string &b)
{
    if (a.empty())
        return b;
    if (b.empty())
        return a;
    return a + "/" + b;
}

// JobSpec::resume: a target with the source's size and modification time (to what the filesystem stores) is a
// file the interrupted run published. rsync's quick check; reading the bytes back would cost a resumed copy as
// long as the copy itself.
bool quick_check(uint64_t size, const struct timespec &mtime, uint64_t target_size, const struct timespec &target_mtime,
                 const FsLimits &limits)
{
    if (size != target_size)
        return false;
    const auto ns = [](const struct timespec &t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
    const int64_t diff = ns(target_mtime) - ns(mtime);
    return (diff < 0 ? -diff : diff) < limits.mtime_window_ns;
}

std::pair<std::string, std::string> split_rel(const std::string &rel)
{
    const auto slash = rel.rfind('/');
    if (slash == std::string::npos)
        return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

bool below(const std::string &rel, const std::string &dir)
{
    return dir.empty() || (rel.size() > dir.size() && rel.compare(0, dir.size(), dir) == 0 && rel[dir.size()] == '/');
}

bool timespec_after(const struct timespec &a, const struct timespec &b)
{
    return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

std::string join_notes(const std::string &a, const std::string &b)
{
    return a.empty() ? b : b.empty() ? a : a + "; " + b;
}

// Where an entry below an item goes, relative to the item's target folder: the same path, or with
// JobSpec::rename_invalid every component the filesystem refuses under its safe name.
std::string target_rel(const std::string &rel, const JobSpec &spec, const FsLimits &limits)
{
    if (!spec.rename_invalid)
        return rel;
    std::string out;
    size_t start = 0;
    for (;;) {
        const size_t slash = rel.find('/', start);
        out = join(
            out, safe_name(rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start), limits));
        if (slash == std::string::npos)
            return out;
        start = slash + 1;
    }
}

std::string fold_case(std::string name, bool fold)
{
    if (fold)
        for (char &c : name)
            c = char(std::tolower(static_cast<unsigned char>(c)));
    return name;
}
// A big file's resume point (CopySession::checkpoint): its size and allocation on the device, and once its
// folder entry, so a crash or a pulled stick leaves a part file the next run finds and goes on from. Where every
// window is made durable by a sync of its own (WritebackMode::ChunkSync: shares, FUSE), size and allocation
// are durable with it: one more fdatasync on the copy's thread only drained the link (a round trip and an idle
// pipe every five seconds onto a share).
std::function<Status()> make_checkpoint(PartFile &part, DataSync how, WritebackMode writeback)
{
    const bool windows_sync = writeback == WritebackMode::ChunkSync;
    return [&part, how, windows_sync, entry_synced = false]() mutable -> Status {
        if (!windows_sync) {
            if (Status s = part.sync_data(how); !s)
                return s;
        }
        if (entry_synced)
            return {};
        Status s = sync_directory(part.dir()->get(), part.dir_path());
        // A share's "try again" (the SMB client making its connection anew): the next resume point tries again.
        if (!s && s.err() == EAGAIN && windows_sync)
            return {};
        entry_synced = true;
        return s;
    };
}

} // namespace job_detail

} // namespace sanecopy
