// SPDX-License-Identifier: GPL-2.0-or-later
//
// cp's destination rules, resolved before anything is opened for writing:
//   - DEST is an existing folder: every SOURCE goes into it under its own name;
//   - one SOURCE and a DEST that is not a folder: SOURCE is copied as DEST (its parent folder must exist);
//   - DEST ending in '/' must be an existing folder;
//   - several SOURCEs need DEST to be a folder;
//   - a folder is never copied into itself or below itself.
// Symlinks given as sources are copied as links, like everywhere else in a tree.
#pragma once

#include "paths.h" // strip_trailing_slashes, split_path: most users of the rules need them
#include "result.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace sanecopy {

// A folder by its device and inode, whatever path leads to it; all zero when unknown.
struct FolderId {
    dev_t dev = 0;
    ino_t ino = 0;
    bool known() const { return ino != 0; }
    bool is(const struct stat &st) const { return known() && st.st_dev == dev && st.st_ino == ino; }
};

// Where a folder item's copy goes, by identity: the folder that receives it and, when it exists already (a
// merge), its own target folder. A walk of the source leaves either out wherever it meets it (TreeWalk).
struct ReceivingFolders {
    FolderId folder;
    FolderId target;
    bool is(const struct stat &st) const { return folder.is(st) || target.is(st); }
};

struct CopyItem {
    std::string source;     // as given
    std::string source_dir; // folder holding the source ("." when none was given)
    std::string source_name;
    std::string target_dir; // existing folder that receives it
    std::string target_name;
    bool source_is_dir = false;
    // Nothing stood at target_dir/target_name when it was resolved (ENOENT): the plan and the run take that
    // answer rather than asking again, a round trip each onto a share. Whatever appears there meanwhile still
    // meets the publish step's no-replace rename.
    bool target_absent = false;
    // For a folder: where it goes. Its walk leaves those folders out wherever it meets them, so a destination
    // inside the source under a path of its own (a bind mount of a subfolder) is not copied into itself over
    // and over; the path check sees only what the paths say.
    ReceivingFolders receiving;

    // Whether the entry |rel| below the item (empty: the item itself), named |name| in target_dir, is that target.
    bool known_absent(const std::string &rel, const std::string &name) const
    {
        return target_absent && rel.empty() && name == target_name;
    }
};

struct Resolution {
    std::vector<CopyItem> items;
    std::vector<Status> errors; // per source (missing, into itself, ...): those sources are left out
    Status fatal;               // the destination itself is unusable: nothing is copied
};

// How DEST is read. FollowCp: cp's rules above. ExactTarget: DEST is the name the single source gets, even if a
// folder of that name exists (that is a conflict, not "into it"); KIO and the GUI's per-file jobs mean that.
enum class DestinationRule { FollowCp, ExactTarget };

// |on_folder|, when given, learns the receiving folder as soon as it is known, before the sources' targets are
// looked up in it (plan_job probes the folder's device meanwhile: onto a share each is a round trip).
// |may_replace|: false when an existing target is skipped or kept beside: then a link that points to its own
// target is copied as any other link would be (skipped, or renamed) instead of refused.
Resolution resolve_destination(const std::vector<std::string> &sources, const std::string &dest,
                               DestinationRule rule = DestinationRule::FollowCp,
                               const std::function<void(const std::string &folder)> &on_folder = {},
                               bool may_replace = true);

// Inside a flatpak sandbox (/.flatpak-info exists), a path the user sees on the host may not exist for SaneCopy:
// what the sandbox shows, and the `flatpak override` that lets it reach |path|. Empty outside a sandbox.
std::string sandbox_note(const std::string &path);

} // namespace sanecopy
