// SPDX-License-Identifier: GPL-2.0-or-later
//
// What happens to a file whose target name is taken: a pure function of what is there, the job's policy and,
// when the user was asked, the answer. Copies, links and KIO streams all settle their conflicts here, before
// the first byte; the rename that publishes the file checks again (RENAME_NOREPLACE), for a name taken
// meanwhile.
#pragma once

#include "publish.h"
#include "result.h"

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>

namespace sanecopy {

// Asked on the job's own thread when a file's target exists and the spec says to ask. The caller may block
// (the GUI waits for its dialog); the copy waits with it, holding no dirty data.
struct ConflictQuestion {
    std::string source;
    std::string target;
    uint64_t source_size = 0;
    uint64_t target_size = 0;
    bool target_is_dir = false;
    struct timespec source_mtime {};
    struct timespec target_mtime {};
};
enum class ConflictAnswer { Overwrite, Skip, Rename, Cancel };

// What stands under the target name.
struct ExistingTarget {
    bool exists = false;
    bool is_dir = false;
    uint64_t size = 0;
    struct timespec mtime {};
};

struct ConflictDecision {
    enum class Outcome { Proceed, Skip, Fail, Cancel };
    Outcome outcome = Outcome::Proceed;
    // Proceed: the policy the publishing rename applies (Refuse for a free name, so a name taken meanwhile is
    // never replaced).
    ConflictPolicy policy = ConflictPolicy::Refuse;
    Status error; // Fail: what the user reads
};

// |answer| is the user's, when asked; it overrides |policy|. |target| names the target in messages. Pure.
ConflictDecision resolve_conflict(const ExistingTarget &existing, ConflictPolicy policy,
                                  std::optional<ConflictAnswer> answer, const std::string &target);

} // namespace sanecopy
