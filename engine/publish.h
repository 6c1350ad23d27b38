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
#pragma once

#include "device_probe.h"
#include "fd.h"
#include "result.h"

#include <memory>
#include <string>
#include <sys/types.h>

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
    // interrupted run is replaced.
    static Result<PartFile> create(SharedDirFd dir, const std::string &dir_path, const std::string &name,
                                   mode_t mode = 0600);

    // Opens the part file an interrupted run left for |name|, for resuming; |size| is what it holds. Fails with
    // ENOENT when there is none (or it is not a regular file), so the caller creates one.
    static Result<PartFile> reopen(SharedDirFd dir, const std::string &dir_path, const std::string &name,
                                   uint64_t &size);

    int fd() const { return fd_.get(); }
    const std::string &name() const { return name_; }
    const std::string &display_path() const { return display_; }
    bool valid() const { return fd_.valid(); }

    // Applies the source's permission bits and modification time to the part file.
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

private:
    SharedDirFd dir_;
    UniqueFd fd_;
    std::string name_;       // real name
    std::string part_;       // part file name
    std::string display_;    // dir_path/name, for messages
    bool owned_ = false;     // the part file exists and is ours to remove
};

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
