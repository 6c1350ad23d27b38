// SPDX-License-Identifier: GPL-2.0-or-later
//
// UnfinishedDialog: at start, the copies an earlier run left unfinished (JobJournal), each with a checkbox, and
// three ways on: Resume the checked ones (what was published is kept, big files continue from their part
// files), Discard them (their part files are removed; finished files and the sources stay), or decide later
// (they are offered again at the next start). A copy whose destination is not there now (the stick is not
// plugged in) starts unchecked and says so.
#pragma once

#include "JobJournal.h"

#include <QDialog>
#include <QList>

class QListWidget;
class QPushButton;

namespace SaneCopy {

class UnfinishedDialog : public QDialog {
    Q_OBJECT
public:
    enum class Choice { Later, Resume, Discard };

    // |present|: per entry, whether its destination exists now.
    UnfinishedDialog(const QList<JournalEntry> &entries, const QList<bool> &present, QWidget *parent = nullptr);

    Choice choice() const { return choice_; }
    // The entries checked when the dialog closed; with Later, none.
    QList<JournalEntry> checkedEntries() const;
    const QList<JournalEntry> &entries() const { return entries_; }

    QListWidget *list() const { return list_; }
    QPushButton *resumeButton() const { return resume_; }
    QPushButton *discardButton() const { return discard_; }
    QPushButton *laterButton() const { return later_; }

    // What a copy was and where to, then on a second line when it was queued.
    static QString describe(const JournalEntry &entry);

private:
    void choose(Choice choice);

    QList<JournalEntry> entries_;
    QListWidget *list_;
    QPushButton *resume_;
    QPushButton *discard_;
    QPushButton *later_;
    Choice choice_ = Choice::Later;
};

} // namespace SaneCopy
