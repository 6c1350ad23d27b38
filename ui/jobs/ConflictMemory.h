// SPDX-License-Identifier: GPL-2.0-or-later
//
// "Apply to all": the answers a user gave once for the rest of a job, kept apart from the dialogs so the rule
// is testable. Conflicts and errors are remembered separately, per job.
#pragma once

#include <QHash>
#include <optional>

namespace SaneCopy {

class ConflictMemory {
public:
    void rememberConflict(quint64 jobId, int answer) { conflicts_.insert(jobId, answer); }
    void rememberError(quint64 jobId, int answer) { errors_.insert(jobId, answer); }
    std::optional<int> conflictAnswer(quint64 jobId) const;
    std::optional<int> errorAnswer(quint64 jobId) const;
    void forget(quint64 jobId);

private:
    QHash<quint64, int> conflicts_;
    QHash<quint64, int> errors_;
};

} // namespace SaneCopy
