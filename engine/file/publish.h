// SPDX-License-Identifier: GPL-2.0-or-later
//
// Safe publish: a file is written as ".<name>.part" beside its real name and takes the real name only once its
// data is durable. So no half file ever stands under a real name, and an old file being overwritten is replaced
// by rename only after its successor is safe: a failure at any point leaves the old file intact.
//
//   1. openat(pinned directory fd, ".<name>.part", O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC)
//   2. fdatasync (or the batch's one sync), then renameat2 onto the real name
//   3. fsync the directory (or the batch's one syncfs), or the rename itself may not survive a power cut.
// Until commit() succeeds, the destructor unlinks the part file.
//
// The one publish pipeline, which copies (job/job_files.cpp), batches of small files (small_batch.h) and streams
// (stream_writer.h) all go through: reserve_space() → the caller writes → durable (publish() on its own, or the
// batch's one syncfs) → verify → rename → directory sync (publish(), or the batch's next syncfs).
#pragma once

#include "device_probe.h"
#include "fd.h"
#include "result.h"

#include <functional>
#include <memory>
#include <string>
#include <sys/types.h>
#include <utility>

struct timespec;

namespace sanecopy {

enum class ConflictPolicy { Refuse, Skip, Rename, Overwrite };
const char *to_string(ConflictPolicy policy);

// A directory held open, so every name below it is resolved against the same folder even if something
// renames a path component meanwhile.
using SharedDirFd = std::shared_ptr<const UniqueFd>;

// ".<name>.part", shortened to fit NAME_MAX when |name| is long.
std::string part_name_for(const std::string &name);

// "name (1).ext", "name (2).ext", ...: the |n|th alternative for the Rename policy. Pure.
std::string alternative_name(const std::string &name, unsigned n);

class PartFile {
public:
    PartFile() = default;
    PartFile(PartFile &&other) noexcept;
    PartFile &operator=(PartFile &&other) noexcept;
    ~PartFile();

    // Creates the part file for |name| in |dir| (|dir_path| is for messages). A part file left by an earlier,
    // interrupted run is replaced, unless |replace_left| is false: then that fails with EEXIST.
    static Result<PartFile> create(SharedDirFd dir, const std::string &dir_path, const std::string &name,
                                   mode_t mode = 0600, bool replace_left = true);

    // A part file for |name| in |dir| that is not created yet: create_file() makes it. A batch onto a share
    // creates its files where they settle, side by side (SmallFileBatch, BatchedFile::to_write).
    static PartFile to_create(SharedDirFd dir, const std::string &dir_path, const std::string &name);
    // Creates the part file to_create() named, as create() does.
    Status create_file(mode_t mode, bool replace_left = true);

    // Opens the part file an interrupted run left for |name|, for resuming; |size| is what it holds. Fails with
    // ENOENT when there is none (or it is not a regular file), so the caller creates one.
    static Result<PartFile> reopen(SharedDirFd dir, const std::string &dir_path, const std::string &name,
                                   uint64_t &size);

    int fd() const { return fd_.get(); }
    const std::string &name() const { return name_; }
    const std::string &display_path() const { return display_; }
    const SharedDirFd &dir() const { return dir_; }
    const std::string &dir_path() const { return dir_path_; }
    bool valid() const { return fd_.valid(); }
    // commit() succeeded: the file stands under its real name.
    bool committed() const { return committed_; }

    // Applies the source's permission bits and modification time to the part file. The bits are left alone
    // when the part file was created with them already (see part_mode()).
    Status set_attributes(mode_t mode, const struct timespec &mtime);
    // Writes data and size to the device; |how| says whether the whole filesystem goes first (see DataSync).
    Status sync_data(DataSync how = DataSync::File);
    // Renames the part file to its real name under |policy| (Refuse: EEXIST if the name was taken meanwhile;
    // Rename: the first free alternative, reported through |final_name|). Does not sync the directory.
    Status commit(ConflictPolicy policy, std::string *final_name = nullptr);
    // Unlinks the part file now.
    void discard();
    // Lets go of the part file without removing it: after a device error, what is on the device stays there
    // for the next run to resume from.
    void keep();
    // A second descriptor on the part file, for reading it back.
    Result<UniqueFd> open_for_reading() const;
    // The descriptor can be closed early (a batch holds many part files); the name stays owned.
    Status close_fd();
    // The descriptor itself, for a caller that closes it elsewhere (background_closer.h); the name stays owned.
    UniqueFd take_fd() { return std::move(fd_); }
    // Holds |fd|, a read-only descriptor on the same part file, from now on, and returns the one held until now:
    // for a caller that closes the written descriptor early and syncs the file through the other (fill_part()).
    UniqueFd exchange_fd(UniqueFd fd)
    {
        std::swap(fd_, fd);
        read_only_ = true;
        return fd;
    }
    // Whether the descriptor held is the read-only one exchange_fd() gave: its close never waits for the device.
    bool holds_read_only() const { return read_only_; }

private:
    // A part file object for |name| in |dir|, with nothing opened yet.
    static PartFile named(SharedDirFd dir, const std::string &dir_path, const std::string &name);
    SharedDirFd dir_;
    UniqueFd fd_;
    std::string name_;    // real name
    std::string part_;    // part file name
    std::string display_; // dir_path/name, for messages
    std::string dir_path_;
    bool owned_ = false; // the part file exists and is ours to remove
    bool committed_ = false;
    bool read_only_ = false; // exchange_fd()
    int created_bits_ = -1;  // the permission bits it got at creation (umask applied); -1: unknown
};

// The bits a part file is created with for a source of |mode|: its permission bits, without set-user/group-ID
// and sticky. Created so, most files need no fchmod: the umask takes only what it would have taken anyway.
inline mode_t part_mode(mode_t mode) { return mode & 0777; }

// Step 1: reserves the space [from, to) will take, so a full stick is found before the copy, not at 97 %.
// KEEP_SIZE leaves the file's size growing with its data. ENOSPC and EDQUOT fail; filesystems without fallocate
// (or that refuse it) just write.
Status reserve_space(const PartFile &part, uint64_t from, uint64_t to);

// How a written part file becomes its real name.
struct PublishSteps {
    bool syncs = true; // false onto tmpfs: memory is the device
    DataSync data_sync = DataSync::File;
    ConflictPolicy policy = ConflictPolicy::Refuse;
    // Called once the data is on the device, before verify.
    std::function<void()> on_durable;
    // Reads the file back and compares it with its source; empty: no verify.
    std::function<Status(const PartFile &)> verify;
    // The data is durable already (a share's windows each synced to the server): no sync of the file's own.
    bool data_durable = false;
    // Called after verify, before the file takes its name: a job whose plan is still counting waits there
    // (JobSpec::count_while_copying). A failure leaves the part file, for the caller to remove.
    std::function<Status()> before_commit {};
};

// Steps 3 to 6 for a file made durable on its own: sync_data → on_durable → verify → commit → the folder's
// fsync. |final_name| gets the name the file took.
Status publish(PartFile &part, const PublishSteps &steps, std::string *final_name = nullptr);
// Steps 4 and 5 for a file whose data a batch made durable: verify → commit. The batch makes the renames durable
// together.
Status publish_synced(PartFile &part, const PublishSteps &steps, std::string *final_name = nullptr);

// Creates a symlink under its real name through a part name, with the same conflict rules as files.
Status publish_symlink(const SharedDirFd &dir, const std::string &dir_path, const std::string &name,
                       const std::string &target, const struct timespec &mtime, ConflictPolicy policy,
                       std::string *final_name = nullptr);

// Permission bits (without set-user/group-ID) and modification time onto an open file or folder. Filesystems
// that can't store them (FAT, some FUSE drivers) are not an error.
Status apply_attributes(int fd, mode_t mode, const struct timespec &mtime, const std::string &display);
bool cannot_store_attributes(int err);

// fsync on a directory, so that renames into it are durable.
Status sync_directory(int dirfd, const std::string &path);

} // namespace sanecopy
