// SPDX-License-Identifier: GPL-2.0-or-later
#include "stream_writer.h"

#include "background_closer.h"
#include "conflict.h"
#include "copy_file.h"
#include "i18n.h"
#include "paths.h"
#include "page_cache_policy.h"
#include "sys.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <tuple>
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
    // A share that stopped answering under the stream: its client writes again what it could not send when the
    // part file is closed, and waits for the server as long again, and so would an unlink (JobRunner::part_failed
    // in a copy). The part file stays, unstamped, so no stream goes on from it (the next one replaces it), and
    // its close goes to the closer: the error is said first. A share that answered (full, say) gets its space back.
    if (closer_ && part_.valid() && !finished_ && broken_.on_destination() && keeps_part_file(broken_.err()) &&
        is_network_share(device_)) {
        closer_->close(part_.take_fd());
        part_.keep();
        return;
    }
    part_.discard(); // after commit() it owns no name any more and only closes the descriptor
}

Status StreamWriter::fail(Status s)
{
    // A pulled stick says so, in the KIO worker as in a copy.
    broken_ = explain_device_loss(std::move(s), device_);
    return broken_;
}

namespace {

// The target's folder, its device, and whether the target may be written at all: a name the filesystem can't
// store, a size it can't hold and an existing target are all refused before the first byte.
struct StreamTarget {
    SharedDirFd dir;
    std::string dir_path;
    std::string name;
    std::string display;
    DeviceInfo device;
};

Result<StreamTarget> check_target(const std::string &target, const StreamOptions &options)
{
    StreamTarget t;
    std::tie(t.dir_path, t.name) = split_path(strip_trailing_slashes(target));
    if (t.name.empty() || t.name == "." || t.name == ".." || t.name == "/")
        return Status::from_errno(EINVAL, "create", target).with_detail(i18n("is not a file name"));
    int raw = sys().openat(AT_FDCWD, t.dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (raw < 0)
        return Status::destination(errno, "open folder", t.dir_path);
    t.dir = std::make_shared<const UniqueFd>(raw);
    t.display = t.dir_path + "/" + t.name;
    if (auto probed = probe_device(t.dir_path); probed.ok())
        t.device = probed.value();
    else
        t.device.writeback = WritebackMode::ChunkSync; // unknown filesystem: the mode that is right everywhere
    if (std::string why = name_problem(t.name, t.device.limits); !why.empty())
        return Status::destination(EINVAL, "create", t.display).with_detail(why);
    if (options.expected_size && *options.expected_size > t.device.limits.max_file_size)
        return Status::destination(EFBIG, "create", t.display)
            .with_detail(
                i18n("is larger than the destination's filesystem can store in one file (4 GiB - 1 on FAT32)"));
    // The conflict is settled before the first byte, so a refused stream costs the sender nothing. The commit
    // checks again (RENAME_NOREPLACE), for a file that appears meanwhile.
    ExistingTarget existing;
    struct stat st {};
    if (sys().fstatat(t.dir->get(), t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
        existing = {true, S_ISDIR(st.st_mode), uint64_t(st.st_size), st.st_mtim};
    const ConflictDecision d = resolve_conflict(existing, options.conflict, std::nullopt, t.display);
    if (d.outcome == ConflictDecision::Outcome::Skip)
        return Status::destination(EEXIST, "exists", t.display);
    if (d.outcome != ConflictDecision::Outcome::Proceed)
        return d.error;
    return t;
}

} // namespace

Result<StreamWriter> StreamWriter::create(const std::string &target, const StreamOptions &options,
                                          ProgressCounters &counters)
{
    Result<StreamTarget> t = check_target(target, options);
    if (!t.ok())
        return t.status();
    uint64_t resumed = 0;
    Result<PartFile> part = Status::destination(ENOENT, "open", t->display);
    if (options.resume)
        part = PartFile::reopen(t->dir, t->dir_path, t->name, resumed);
    // 0666: the umask applies, as to any new file. Explicit permission bits are set at finish().
    if (!part.ok()) {
        resumed = 0;
        part = PartFile::create(t->dir, t->dir_path, t->name, 0666);
    }
    if (!part.ok())
        return part.status();

    StreamWriter w;
    w.dir_ = t->dir;
    w.dir_path_ = t->dir_path;
    w.part_ = std::move(part.value());
    w.counters_ = &counters;
    w.device_ = t->device;
    w.conflict_ = options.conflict == ConflictPolicy::Skip ? ConflictPolicy::Refuse : options.conflict;
    w.file_mode_ = options.mode;
    w.mtime_ = options.mtime;
    w.closer_ = options.closer;
    w.limits_ = options.limits;
    // Onto a share, as a copy job's big file goes (its writes are buffered: not the O_DIRECT limits).
    const bool share = is_network_share(w.device_);
    if (share)
        w.limits_ = share_chunk_limits(w.limits_, false);
    if (w.limits_.request == 0)
        w.limits_.request = w.device_.max_request_bytes; // ChunkLimits::request
    w.limits_ = w.limits_.checked();
    w.offset_ = w.chunk_start_ = w.piece_start_ = w.resumed_ = w.durable_ = resumed;
    if (resumed > 0) {
        // Already on the device, as far as anyone can tell; the final fdatasync settles it either way.
        counters.written_bytes.fetch_add(resumed, std::memory_order_relaxed);
        counters.durable_bytes.fetch_add(resumed, std::memory_order_relaxed);
        counters.unwritten_bytes.fetch_add(resumed, std::memory_order_relaxed);
    }
    // KEEP_SIZE: the file's size grows with its data, so a stream that ends early is not padded.
    if (options.expected_size && *options.expected_size > resumed && reserves_space_up_front(w.device_)) {
        if (Status rs = reserve_space(w.part_, resumed, *options.expected_size); !rs)
            return rs; // |w| goes: the part file with it
        w.reserved_ = *options.expected_size;
    }
    w.windows_ = std::make_unique<WritebackWindows>(w.part_.fd(), w.device_.writeback, t->display);
    if (evicted_means_committed(w.device_))
        w.windows_->count_evicted_as_committed();
    w.plan_ = plan_chunks(0, w.limits_);
    if (share)
        w.meter_.measure_first_over(share_first_rate_bytes(w.limits_));
    w.meter_.start(monotonic_seconds(), w.durable_);
    return w;
}

namespace {

// The stamp of a part file kept for a stream whose sender gave no time: 1980-01-01 00:00:02 UTC, which FAT, exFAT
// and NTFS all store and which no file being written has.
constexpr struct timespec kKeptWithoutTime {315532802, 0};

} // namespace

uint64_t StreamWriter::resumable_part_size(const std::string &target, const std::optional<struct timespec> &mtime)
{
    const auto [dir_path, name] = split_path(strip_trailing_slashes(target));
    struct stat st {};
    const std::string part = dir_path + "/" + part_name_for(name);
    if (sys().fstatat(AT_FDCWD, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return 0;
    // FAT keeps times to 2 s, rounded down: a second either way is the same stamp.
    const struct timespec stamp = mtime.value_or(kKeptWithoutTime);
    if (std::llabs(static_cast<long long>(st.st_mtim.tv_sec) - static_cast<long long>(stamp.tv_sec)) > 1)
        return 0;
    return uint64_t(st.st_size);
}

Status StreamWriter::keep_for_resume()
{
    Status s = seal_for_resume();
    if (s)
        part_.keep();
    else
        abort();
    return s;
}

// keep_for_resume()'s steps, in the order that makes the stamp mean "everything before it is on the device".
Status StreamWriter::seal_for_resume()
{
    if (finished_ || !part_.valid())
        return Status::destination(EBADF, "keep", part_.display_path());
    if (!broken_.ok())
        return broken_; // the device failed: what it holds can't be vouched for
    if (offset_ == 0)
        return Status::destination(ENODATA, "keep (nothing was sent)", part_.display_path());
    if (Status s = write_out(); !s)
        return s;
    if (sys().ftruncate(part_.fd(), off_t(offset_)) < 0) // gives back what was reserved beyond the end
        return Status::destination(errno, "ftruncate", part_.display_path());
    if (Status s = part_.sync_data(device_.data_sync); !s)
        return s;
    struct timespec times[2] = {{0, UTIME_OMIT}, mtime_.value_or(kKeptWithoutTime)};
    if (sys().futimens(part_.fd(), times) < 0)
        return Status::destination(errno, "futimens", part_.display_path());
    if (sys().fsync(part_.fd()) < 0) // fdatasync may leave a time alone; fsync carries it
        return Status::destination(errno, "fsync", part_.display_path());
    return {};
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
    chunk_start_ = piece_start_ = offset_;
    plan_ = plan_chunks(meter_.measured() ? meter_.rate() : 0, limits_);
    return {};
}

Status StreamWriter::write(const void *data, std::size_t len)
{
    if (!broken_.ok())
        return broken_;
    if (finished_ || !part_.valid())
        return Status::destination(EBADF, "write", part_.display_path());
    const char *p = static_cast<const char *>(data);
    while (len > 0) {
        // A block is cut at the chunk's end, so a chunk never outgrows its plan whatever the sender's block size;
        // onto a share at the piece's end too (below).
        uint64_t room = plan_.chunk_bytes - (offset_ - chunk_start_);
        if (device_.writeback == WritebackMode::ChunkSync)
            room = std::min(room, piece_start_ + kSharePiece - offset_);
        const std::size_t piece = std::size_t(std::min<uint64_t>(len, room));
        std::size_t done = 0;
        while (done < piece) {
            ssize_t w = sys().pwrite(part_.fd(), p + done, piece - done, off_t(offset_ + done));
            if (w < 0)
                return fail(Status::destination(errno, "write", part_.display_path()));
            if (w == 0)
                return fail(Status::destination(EIO, "write", part_.display_path()));
            done += std::size_t(w);
        }
        offset_ += piece;
        counters_->written_bytes.fetch_add(piece, std::memory_order_relaxed);
        p += piece;
        len -= piece;
        if (offset_ - chunk_start_ >= plan_.chunk_bytes) {
            if (Status s = submit_chunk(); !s)
                return s;
        } else if (offset_ - piece_start_ >= kSharePiece) {
            // Onto a share (ChunkSync) the piece goes to the link now, not once the chunk is whole: a copy's
            // reason (copy_file.cpp, move_in_pieces). Nothing elsewhere.
            windows_->start_piece(piece_start_, offset_ - piece_start_);
            piece_start_ = offset_;
        }
    }
    return {};
}

// The last chunk submitted and every window waited for: all bytes written are durable, and no window thread is left.
Status StreamWriter::write_out()
{
    if (Status s = submit_chunk(); !s)
        return s;
    uint64_t d = 0;
    Status drained = windows_->drain(d);
    take_durable(d);
    if (!drained)
        return fail(std::move(drained));
    windows_.reset();
    return {};
}

Status StreamWriter::finish(std::string *final_path)
{
    if (!broken_.ok())
        return broken_;
    if (finished_ || !part_.valid())
        return Status::destination(EBADF, "finish", part_.display_path());
    if (Status s = write_out(); !s)
        return s;
    if (Status s = settle_attributes(); !s)
        return fail(std::move(s));

    PublishSteps steps {device_.writeback != WritebackMode::None, device_.data_sync, conflict_, {}, {}};
    steps.on_durable = [this] { take_durable(offset_ - durable_); };
    std::string final_name;
    Status s = publish(part_, steps, &final_name);
    if (part_.committed()) { // renamed: the file is published, whatever the folder's sync said
        finished_ = true;
        if (final_path)
            *final_path = dir_path_ + "/" + final_name;
        if (closer_ && device_.mount_flags.flush)
            closer_->close(part_.take_fd()); // durable under its name: the close's 100 ms sleep need not be waited for
    }
    return s ? s : fail(std::move(s));
}

// Gives back what was reserved beyond the end, and applies the sender's permission bits and time.
Status StreamWriter::settle_attributes()
{
    if (reserved_ > offset_) {
        // The sender announced more than it sent: give the reserved blocks beyond the end back. A hole can't
        // be punched beyond the end of a file (ext4 ignores it), but a truncate to the size it has frees them.
        if (sys().ftruncate(part_.fd(), off_t(offset_)) < 0)
            return Status::destination(errno, "ftruncate", part_.display_path());
    }
    // FAT can't store modes and some FUSE drivers neither modes nor times: best-effort there, as for copies.
    if (file_mode_ && sys().fchmod(part_.fd(), *file_mode_ & 07777 & ~mode_t(S_ISUID | S_ISGID)) < 0 &&
        !cannot_store_attributes(errno))
        return Status::destination(errno, "fchmod", part_.display_path());
    if (mtime_) {
        struct timespec times[2] = {{0, UTIME_OMIT}, *mtime_};
        if (sys().futimens(part_.fd(), times) < 0 && !cannot_store_attributes(errno))
            return Status::destination(errno, "futimens", part_.display_path());
    }
    return {};
}

} // namespace sanecopy
