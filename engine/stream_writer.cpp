// SPDX-License-Identifier: GPL-2.0-or-later
#include "stream_writer.h"

#include "destination.h"
#include "page_cache_policy.h"
#include "sys.h"

#include <memory>

#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <utility>

namespace sanecopy {

StreamWriter::StreamWriter() = default;

// Member-wise: a moved-from writer owns no part file and no window thread, so its abort() does nothing.
StreamWriter::StreamWriter(StreamWriter &&other) noexcept = default;

StreamWriter &StreamWriter::operator=(StreamWriter &&other) noexcept
{
    if (this != &other) {
        // Our window thread must be gone before the descriptor it syncs is closed: the destructor sees to it.
        std::destroy_at(this);
        std::construct_at(this, std::move(other));
    }
    return *this;
}

StreamWriter::~StreamWriter() { abort(); }

std::string StreamWriter::part_path() const { return dir_path_ + "/" + part_name_for(part_.name()); }

void StreamWriter::abort()
{
    windows_.reset();
    part_.discard(); // after commit() it owns no name any more and only closes the descriptor
}

Status StreamWriter::fail(Status s)
{
    broken_ = s;
    return s;
}

Result<StreamWriter> StreamWriter::create(const std::string &target, const StreamOptions &options,
                                          ProgressCounters &counters)
{
    const auto [dir_path, name] = split_path(strip_trailing_slashes(target));
    if (name.empty() || name == "." || name == ".." || name == "/")
        return Status::from_errno(EINVAL, "create", target).with_detail("is not a file name");

    int raw = retry_eintr(
        [&] { return sys().openat(AT_FDCWD, dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0); });
    if (raw < 0)
        return Status::from_errno(errno, "open folder", dir_path);
    auto dir = std::make_shared<const UniqueFd>(raw);
    const std::string display = dir_path + "/" + name;

    DeviceInfo device;
    if (auto probed = probe_device(dir_path); probed.ok()) {
        device = probed.value();
    } else {
        // Without knowing the filesystem, take the mode that is right everywhere.
        device.writeback = WritebackMode::ChunkSync;
    }
    if (std::string why = name_problem(name, device.limits); !why.empty())
        return Status::from_errno(EINVAL, "create", display).with_detail(why);
    if (options.expected_size && *options.expected_size > device.limits.max_file_size)
        return Status::from_errno(EFBIG, "create", display)
            .with_detail("is larger than the destination's filesystem can store in one file (4 GiB - 1 on FAT32)");

    // The conflict is settled before the first byte, so a refused stream costs the sender nothing. The
    // commit checks again (RENAME_NOREPLACE), for a file that appears meanwhile.
    struct stat existing {};
    if (sys().fstatat(dir->get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0) {
        if (options.conflict == ConflictPolicy::Refuse || options.conflict == ConflictPolicy::Skip)
            return Status::from_errno(EEXIST, "exists", display);
        if (options.conflict == ConflictPolicy::Overwrite && S_ISDIR(existing.st_mode))
            return Status::from_errno(EISDIR, "overwrite", display).with_detail("is a folder; a file cannot replace it");
    }

    uint64_t resumed = 0;
    Result<PartFile> part = Status::from_errno(ENOENT, "open", display);
    if (options.resume)
        part = PartFile::reopen(dir, dir_path, name, resumed);
    // 0666: the umask applies, as to any new file. Explicit permission bits are set at finish().
    if (!part.ok()) {
        resumed = 0;
        part = PartFile::create(dir, dir_path, name, 0666);
    }
    if (!part.ok())
        return part.status();

    StreamWriter w;
    w.dir_ = std::move(dir);
    w.dir_path_ = dir_path;
    w.part_ = std::move(part.value());
    w.counters_ = &counters;
    w.mode_ = device.writeback;
    w.data_sync_ = device.data_sync;
    w.conflict_ = options.conflict;
    w.file_mode_ = options.mode;
    w.mtime_ = options.mtime;
    w.limits_ = options.limits;
    w.offset_ = w.chunk_start_ = w.resumed_ = resumed;
    if (resumed > 0) {
        // Already on the device, as far as anyone can tell; the final fdatasync settles it either way.
        counters.written_bytes.fetch_add(resumed, std::memory_order_relaxed);
        counters.durable_bytes.fetch_add(resumed, std::memory_order_relaxed);
        counters.unwritten_bytes.fetch_add(resumed, std::memory_order_relaxed);
        w.durable_ = resumed;
    }

    if (options.expected_size && *options.expected_size > 0 && w.mode_ != WritebackMode::None) {
        // KEEP_SIZE: the file's size grows with its data, so a stream that ends early is not padded.
        if (*options.expected_size <= resumed)
            ; // nothing left to reserve
        else if (sys().fallocate(w.part_.fd(), FALLOC_FL_KEEP_SIZE, off_t(resumed),
                                 off_t(*options.expected_size - resumed)) == 0)
            w.reserved_ = *options.expected_size;
        else if (errno == ENOSPC || errno == EDQUOT)
            return Status::from_errno(errno, "allocate", display); // |w| goes: the part file with it
        // Filesystems without fallocate just write.
    }

    w.windows_ = std::make_unique<WritebackWindows>(w.part_.fd(), w.mode_, display);
    w.plan_ = plan_chunks(0, w.limits_);
    w.meter_.start(monotonic_seconds(), w.durable_);
    return w;
}

uint64_t StreamWriter::leftover_part_size(const std::string &target)
{
    const auto [dir_path, name] = split_path(strip_trailing_slashes(target));
    struct stat st {};
    const std::string part = dir_path + "/" + part_name_for(name);
    if (sys().fstatat(AT_FDCWD, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return 0;
    return uint64_t(st.st_size);
}

void StreamWriter::take_durable(uint64_t bytes)
{
    if (bytes == 0)
        return;
    durable_ += bytes;
    counters_->durable_bytes.fetch_add(bytes, std::memory_order_relaxed);
    meter_.sample(monotonic_seconds(), durable_);
    counters_->device_rate.store(meter_.rate(), std::memory_order_relaxed);
}

Status StreamWriter::submit_chunk()
{
    const uint64_t len = offset_ - chunk_start_;
    if (len == 0)
        return {};
    uint64_t d = 0;
    Status s = windows_->submit(chunk_start_, len, plan_.windows, d);
    take_durable(d);
    if (!s)
        return fail(std::move(s));
    chunk_start_ = offset_;
    plan_ = plan_chunks(meter_.measured() ? meter_.rate() : 0, limits_);
    return {};
}

Status StreamWriter::write(const void *data, std::size_t len)
{
    if (!broken_.ok())
        return broken_;
    if (finished_ || !part_.valid())
        return Status::from_errno(EBADF, "write", part_.display_path());
    const char *p = static_cast<const char *>(data);
    while (len > 0) {
        // A block is cut at the chunk's end, so a chunk never outgrows its plan whatever the sender's block size.
        const uint64_t room = plan_.chunk_bytes - (offset_ - chunk_start_);
        const std::size_t piece = std::size_t(std::min<uint64_t>(len, room));
        std::size_t done = 0;
        while (done < piece) {
            ssize_t w = retry_eintr(
                [&] { return sys().pwrite(part_.fd(), p + done, piece - done, off_t(offset_ + done)); });
            if (w < 0)
                return fail(Status::from_errno(errno, "write", part_.display_path()));
            if (w == 0)
                return fail(Status::from_errno(EIO, "write", part_.display_path()));
            done += std::size_t(w);
        }
        offset_ += piece;
        counters_->written_bytes.fetch_add(piece, std::memory_order_relaxed);
        p += piece;
        len -= piece;
        if (offset_ - chunk_start_ >= plan_.chunk_bytes) {
            if (Status s = submit_chunk(); !s)
                return s;
        }
    }
    return {};
}

Status StreamWriter::finish(std::string *final_path)
{
    if (!broken_.ok())
        return broken_;
    if (finished_ || !part_.valid())
        return Status::from_errno(EBADF, "finish", part_.display_path());
    if (Status s = submit_chunk(); !s)
        return s;
    uint64_t d = 0;
    Status drained = windows_->drain(d);
    take_durable(d);
    if (!drained)
        return fail(std::move(drained));
    windows_.reset();

    if (reserved_ > offset_) {
        // The sender announced more than it sent: give the reserved blocks beyond the end back. A hole can't
        // be punched beyond the end of a file (ext4 ignores it), but a truncate to the size it has frees them.
        if (retry_eintr([&] { return sys().ftruncate(part_.fd(), off_t(offset_)); }) < 0)
            return fail(Status::from_errno(errno, "ftruncate", part_.display_path()));
    }
    // FAT can't store modes and some FUSE drivers neither modes nor times: best-effort there, as for copies.
    if (file_mode_ && sys().fchmod(part_.fd(), *file_mode_ & 07777 & ~mode_t(S_ISUID | S_ISGID)) < 0 &&
        !cannot_store_attributes(errno))
        return fail(Status::from_errno(errno, "fchmod", part_.display_path()));
    if (mtime_) {
        struct timespec times[2] = {{0, UTIME_OMIT}, *mtime_};
        if (sys().futimens(part_.fd(), times) < 0 && !cannot_store_attributes(errno))
            return fail(Status::from_errno(errno, "futimens", part_.display_path()));
    }

    const bool syncs = mode_ != WritebackMode::None;
    if (syncs) {
        if (Status s = part_.sync_data(data_sync_); !s)
            return fail(std::move(s));
    }
    take_durable(offset_ - durable_);

    std::string final_name;
    if (Status s = part_.commit(conflict_, &final_name); !s)
        return fail(std::move(s));
    finished_ = true;
    if (final_path)
        *final_path = dir_path_ + "/" + final_name;
    if (syncs) {
        // The file is published; a failure here says only that the rename may not survive a power cut.
        if (Status s = sync_directory(dir_->get(), dir_path_); !s)
            return fail(std::move(s));
    }
    return {};
}

} // namespace sanecopy
