// SPDX-License-Identifier: GPL-2.0-or-later
#include "ConflictMemory.h"

namespace SaneCopy {

std::optional<int> ConflictMemory::conflictAnswer(quint64 jobId) const
{
    if (auto it = conflicts_.constFind(jobId); it != conflicts_.constEnd())
        return *it;
    return std::nullopt;
}

std::optional<int> ConflictMemory::errorAnswer(quint64 jobId) const
{
    if (auto it = errors_.constFind(jobId); it != errors_.constEnd())
        return *it;
    return std::nullopt;
}

void ConflictMemory::forget(quint64 jobId)
{
    conflicts_.remove(jobId);
    errors_.remove(jobId);
}

} // namespace SaneCopy
