// SPDX-License-Identifier: GPL-2.0-or-later
//
// The plan of a copy: every entry below each source, counted before the first byte is written, so the job
// knows its total, and problems (names the target refuses, files too big for it, not enough space) are reported
// up front. The entries are counted, not kept: the run walks the tree again, folder by folder. The walk opens folders
// with openat(O_NOFOLLOW|O_DIRECTORY) from pinned descriptors and never follows a symlink, so links pointing out of the
// tree, or in loops, are just entries.
#pragma once

#include "destination.h"
#include "result.h"

#include <ctime>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <unordered_set>
#include <vector>

namespace sanecopy {

enum class EntryKind { Directory, File, Symlink, Special };

// Why an entry is left out of a copy, for front ends that count or word the reasons themselves.
enum class LeftOut {
    None,
    SpecialFile, // a FIFO, socket or device node
    RefusedName, // a name the destination's filesystem can't store
    TooBig,      // larger than one file on the destination's filesystem can be
    Unreadable,  // a folder that can't be listed
    Exists,      // the target exists and the conflict policy (or answer) said skip
    AfterError,  // the user chose to skip it after it failed
    NoRoom,      // JobSpec::fit_to_space: what fits went first, and this did not
    PartFile,    // an earlier copy's part file beside the file it belongs to, which is copied itself
    IntoItself,  // the folder the copy goes into, met inside the source under another path (a bind mount)
};
const char *to_string(LeftOut reason);

struct PlanEntry {
    EntryKind kind = EntryKind::File;
    std::string rel; // below the item's root, "" for the root itself; '/'-separated
    uint64_t size = 0;
    uint64_t allocated = 0; // st_blocks * 512: what a sparse file really needs on the target
    mode_t mode = 0;
    struct timespec mtime {};
    struct timespec ctime {}; // with ino: a file replaced under its name, or changed with its mtime put back
    dev_t dev = 0;
    ino_t ino = 0;
    bool hard_linked = false;         // a file with more names than this one
    LeftOut left_out = LeftOut::None; // set, with skip_reason, when the entry is reported and left out
    std::string skip_reason;
};

// One item of a plan. Its entries are not held: the run walks the tree again (TreeWalk) and meets each entry
// as the plan did, so a copy of a million files holds one path of folders, not a million paths.
struct ItemPlan {
    CopyItem item;
    bool found = false; // its source could be read: there is something to walk
    uint64_t bytes = 0; // of all its files, left out or not: what a move by renaming takes along
    uint64_t files = 0; // its files and links, left out or not
    // What the plan left out for want of room (JobSpec::fit_to_space), by PlanEntry::rel: the one decision that
    // depends on what came before it, so the run can't make it again entry by entry.
    std::unordered_set<std::string> no_room;
};

// One item's entries in pre-order (a folder before what it holds, names in byte order), read as they are
// needed: only the folders on the current path are open, and only their names are held. A folder that can't
// be opened is an entry marked LeftOut::Unreadable; what can't be read is reported through |on_error|.
// The folders |receiving| (where the copy goes) are never gone into: met below the root each is an entry
// marked LeftOut::IntoItself, and as the root itself an error, with nothing walked.
class TreeWalk {
public:
    // The entry |name| in the folder |dir|, shown in messages as |display|.
    TreeWalk(const std::string &dir, const std::string &name, std::string display, std::function<void(Status)> on_error,
             ReceivingFolders receiving = {});
    TreeWalk(const TreeWalk &) = delete;
    TreeWalk &operator=(const TreeWalk &) = delete;
    ~TreeWalk();

    // The next entry; false at the end.
    bool next(PlanEntry &e);

private:
    struct Folder;
    void enter(int fd, const std::string &rel, const std::string &display);

    std::vector<Folder> path_; // the open folders, outermost first
    std::optional<PlanEntry> root_;
    std::function<void(Status)> on_error_;
    ReceivingFolders receiving_;
};

// Walks |item| whole, for a caller that wants every entry at once.
// Why a FIFO, a socket or a device node is left out: "is a FIFO; only files, folders and links are copied".
std::string special_file_reason(mode_t mode);

} // namespace sanecopy
