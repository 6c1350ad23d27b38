// SPDX-License-Identifier: GPL-2.0-or-later
//
// The plan of a copy: every entry below each source, found before the first byte is written, so the job knows
// its total, and problems (names the target refuses, files too big for it, not enough space) are reported up
// front. The walk opens folders with openat(O_NOFOLLOW|O_DIRECTORY) from pinned descriptors and never follows
// a symlink, so links pointing out of the tree, or in loops, are just entries.
#pragma once

#include "destination.h"
#include "result.h"

#include <ctime>
#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
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
};
const char *to_string(LeftOut reason);

struct PlanEntry {
    EntryKind kind = EntryKind::File;
    std::string rel; // below the item's root, "" for the root itself; '/'-separated
    uint64_t size = 0;
    uint64_t allocated = 0; // st_blocks * 512: what a sparse file really needs on the target
    mode_t mode = 0;
    struct timespec mtime {};
    dev_t dev = 0;
    LeftOut left_out = LeftOut::None; // set, with skip_reason, when the entry is reported and left out
    std::string skip_reason;
};

struct ItemPlan {
    CopyItem item;
    std::vector<PlanEntry> entries; // pre-order: a folder comes before what it holds
};

// Walks |item|. Entries that can't be read are reported through |on_error| and left out.
ItemPlan plan_item(const CopyItem &item, const std::function<void(Status)> &on_error);

// "FIFO", "socket", "character device", "block device".
const char *special_kind(mode_t mode);

} // namespace sanecopy
