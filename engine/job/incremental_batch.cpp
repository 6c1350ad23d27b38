// SPDX-License-Identifier: GPL-2.0-or-later
#include "incremental_batch.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "background_closer.h"
#include "copy_file.h"
#include "copy_job.h"
#include "destination.h"
#include "job_control.h"
#include "sys.h"

#include <cerrno>

namespace sanecopy {

IncrementalBatch::IncrementalBatch(BatchLimits limits, std::shared_ptr<BackgroundCloser> closer)
    : limits_(limits), closer_(std::move(closer))
{}

IncrementalBatch::~IncrementalBatch() { discard(); }

Status IncrementalBatch::start(const std::string &dir)
{
    Result<DeviceInfo> device = probe_device(dir);
    if (!device.ok())
        return device.status();
    device_ = std::move(device.value());
    SmallFileBatch::Hooks hooks;
    hooks.durable = [](const BatchedFile &) {};
    hooks.failed = [this](BatchedFile &, Status s) {
        if (first_failure_.ok())
            first_failure_ = std::move(s);
    };
    hooks.published = [](BatchedFile &) {};
    // The closer only where a close sleeps; elsewhere a durable file is closed before its rename, as in a job.
    BackgroundCloser *closer = device_.mount_flags.flush ? closer_.get() : nullptr;
    // Onto a share each file's create, sync and rename is a round trip: there they run on threads of their own,
    // side by side, as a copy job's do (BatchedFile::to_write).
    BatchLimits limits = limits_;
    if (is_network_share(device_))
        limits.settle_threads = kShareSettleThreads;
    batch_ = std::make_unique<SmallFileBatch>(device_.writeback, device_.group_sync, limits,
                                              device_.limits.forbids_fat_chars, std::move(hooks), closer);
    return {};
}

// Whether a file for |dir|/|name| can be held: the folder is on the run's device (the first one starts the run),
// the device needs syncing (tmpfs keeps nothing to sync), and its filesystem takes the name (a refused one gets
// the usual way's explained error). False: the usual way copies it, and says what is wrong, if anything.
bool IncrementalBatch::takes(const std::string &dir, const std::string &name)
{
    struct stat dir_st {};
    if (sys().fstatat(AT_FDCWD, dir.c_str(), &dir_st, 0) < 0 || !S_ISDIR(dir_st.st_mode))
        return false;
    if (batch_ && dir_st.st_dev != device_.st_dev)
        return false;
    if (!batch_ && !start(dir).ok())
        return false;
    return device_.writeback != WritebackMode::None && name_problem(name, device_.limits).empty();
}

// The source, if it is a small regular file: false for a symbolic link (the usual way decides what becomes of
// it), anything else, or a bigger file.
Result<bool> IncrementalBatch::open_small(const std::string &source, UniqueFd &in, struct stat &st)
{
    // O_NONBLOCK: a FIFO put in the file's place must not make the open wait for a writer.
    in.reset(sys().openat(AT_FDCWD, source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0));
    if (!in && errno == ELOOP)
        return false;
    if (!in)
        return Status::source(errno, "open source", source);
    if (sys().fstat(in.get(), &st) < 0)
        return Status::source(errno, "stat source", source);
    if (!S_ISREG(st.st_mode) || uint64_t(st.st_size) > JobSpec {}.small_file_limit)
        return false;
    sys().fcntl_setfl(in.get(), O_RDONLY);
    return true;
}

Result<SharedDirFd> IncrementalBatch::folder(const std::string &dir)
{
    SharedDirFd &shared_dir = dirs_[dir];
    if (shared_dir)
        return shared_dir;
    UniqueFd dir_fd(sys().openat(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (!dir_fd) {
        const int err = errno;
        dirs_.erase(dir);
        return Status::destination(err, "open folder", dir);
    }
    shared_dir = std::make_shared<const UniqueFd>(std::move(dir_fd));
    return shared_dir;
}

// A file onto a share: created and written as its group settles (BatchedFile::to_write).
void IncrementalBatch::hold_to_write(const SharedDirFd &dir_fd, const std::string &dir, const std::string &name,
                                     const std::string &source, UniqueFd in, const struct stat &st,
                                     ConflictPolicy policy)
{
    BatchedFile f;
    f.part = PartFile::to_create(dir_fd, dir, name);
    f.source = source;
    f.bytes = uint64_t(st.st_size);
    f.policy = policy;
    f.attributes = PendingAttributes {st.st_mode, st.st_mtim};
    f.to_write = DataToWrite {std::move(in), choose_route(device_, st.st_dev),     &counters_, std::nullopt,
                              nullptr,       [this] { return discarding_.load(); }};
    batch_->add(std::move(f));
    ++held_;
}

Result<bool> IncrementalBatch::add(const std::string &source, const std::string &target, ConflictPolicy policy)
{
    const auto [dir, name] = split_path(target);
    if (!takes(dir, name))
        return false;
    UniqueFd in;
    struct stat st {};
    if (Result<bool> small = open_small(source, in, st); !small.ok() || !small.value())
        return small;
    Result<SharedDirFd> shared_dir = folder(dir);
    if (!shared_dir.ok())
        return shared_dir.status();
    // The same name held twice (or twice in different case, where names fold) would share a part file: the
    // second waits for a flush and goes the usual way.
    if (batch_->holds(shared_dir.value()->get(), name))
        return false;
    if (batch_->writes_side_by_side(policy)) {
        hold_to_write(shared_dir.value(), dir, name, source, std::move(in), st, policy);
        return true;
    }
    Result<PartFile> part = PartFile::create(shared_dir.value(), dir, name, part_mode(st.st_mode));
    if (!part.ok())
        return part.status();
    CopySession session(choose_route(device_, st.st_dev));
    ProgressCounters counters;
    FileCopyResult copied;
    Status s = copy_small_file_data(in.get(), part->fd(), uint64_t(st.st_size), session, counters, part->display_path(),
                                    copied);
    if (s)
        s = part->set_attributes(st.st_mode, st.st_mtim);
    if (!s)
        return s; // the part file is removed as |part| goes
    batch_->add({std::move(part.value()),
                 source,
                 copied.copied,
                 policy,
                 UniqueFd(),
                 {},
                 {},
                 false,
                 std::nullopt,
                 nullptr,
                 {},
                 {},
                 {},
                 {}});
    ++held_;
    return true;
}

Status IncrementalBatch::flush()
{
    if (batch_)
        batch_->flush();
    end_run();
    return std::exchange(first_failure_, Status());
}

void IncrementalBatch::discard()
{
    // Files not created yet are not created now (DataToWrite::stop): they fail unseen, with nothing of them left.
    discarding_ = true;
    if (batch_)
        batch_->discard();
    end_run();
    first_failure_ = Status();
    discarding_ = false;
}

void IncrementalBatch::end_run()
{
    batch_.reset();
    dirs_.clear();
    held_ = 0;
}

} // namespace sanecopy
