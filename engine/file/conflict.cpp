// SPDX-License-Identifier: GPL-2.0-or-later
#include "conflict.h"

#include "i18n.h"

#include <cerrno>

namespace sanecopy {

namespace {

ConflictPolicy policy_for(ConflictAnswer answer)
{
    switch (answer) {
    case ConflictAnswer::Overwrite:
        return ConflictPolicy::Overwrite;
    case ConflictAnswer::Skip:
        return ConflictPolicy::Skip;
    case ConflictAnswer::Rename:
    case ConflictAnswer::Cancel:
        break;
    }
    return ConflictPolicy::Rename;
}

} // namespace

ConflictDecision resolve_conflict(const ExistingTarget &existing, ConflictPolicy policy,
                                  std::optional<ConflictAnswer> answer, const std::string &target)
{
    using Outcome = ConflictDecision::Outcome;
    if (!existing.exists)
        return {Outcome::Proceed, policy == ConflictPolicy::Skip ? ConflictPolicy::Refuse : policy, {}};
    if (answer == ConflictAnswer::Cancel)
        return {Outcome::Cancel, policy, {}};
    if (answer)
        policy = policy_for(*answer);
    switch (policy) {
    case ConflictPolicy::Skip:
        return {Outcome::Skip, policy, {}};
    case ConflictPolicy::Refuse:
        return {Outcome::Fail, policy,
                Status::destination(EEXIST, "exists", target)
                    .with_detail(i18n("already exists; not overwritten (use --overwrite or --skip-existing)"))};
    case ConflictPolicy::Overwrite:
        if (existing.is_dir)
            return {Outcome::Fail, policy,
                    Status::destination(EISDIR, "overwrite", target)
                        .with_detail(i18n("is a folder; a file cannot replace it"))};
        break;
    case ConflictPolicy::Rename:
        break;
    }
    return {Outcome::Proceed, policy, {}};
}

} // namespace sanecopy
