// SPDX-License-Identifier: GPL-2.0-or-later
//
// JobJournal: the window's queue as it changes, kept where a crash, a kill or a logout can't take it:
// $XDG_STATE_HOME/sanecopy/jobs/ (~/.local/state when unset; the flatpak's own state folder inside it). One
// file per job, written when the job is queued and removed when it ends, so whatever is left there at the next
// start is a copy that never finished.
//
// Two windows may run at once (and a second one must not resume the first one's running copy): each job's
// record has a lock file, held with flock() by the process that runs it. The kernel lets go of it when that
// process dies however it dies, so "unfinished" is exactly "recorded, and no process holds the lock".
//
// The files are small and written on the GUI thread with QSaveFile, so a half-written record never replaces a
// whole one; they live on the home disk, never on the device being copied to.
#pragma once

#include "EngineBridge.h"
#include "Paths.h"

#include <QDateTime>
#include <QHash>
#include <QList>
#include <QString>

namespace SaneCopy {

struct JournalEntry {
    QString key; // the record's name; set by record()
    PathList sources;
    QByteArray destination;
    bool verify = false;
    bool renameInvalid = false;
    bool move = false;
    bool manifest = false;
    QDateTime queued;
    // The answer the plan gave for every name already taken (a sanecopy::ConflictPolicy); -1: ask for each file.
    int conflict = -1;
    // "Copy What Fits": resumed, it copies what fits again, counting what is on the device already as there.
    bool fitToSpace = false;
};

class JobJournal {
public:
    // |folder| empty: defaultFolder().
    explicit JobJournal(const QString &folder = QString());
    ~JobJournal(); // lets go of every lock it holds; the records stay
    JobJournal(const JobJournal &) = delete;
    JobJournal &operator=(const JobJournal &) = delete;

    static QString defaultFolder();
    QString folder() const { return folder_; }

    // Records a job about to be queued, and holds it. Returns its key, or an empty key when the record could
    // not be written (errorString() says why): the copy still runs, it just won't be offered after a crash.
    QString record(JournalEntry entry);
    // The job ended (done, failed or cancelled): its record goes.
    void forget(const QString &key);

    // Records no running process holds: the unfinished copies of earlier runs. Each returned one is now held
    // by this journal, until forget() (resumed to its end, or discarded) or release() (decided later).
    QList<JournalEntry> claimUnfinished();
    void release(const QString &key);

    QString errorString() const { return error_; }

private:
    QString recordPath(const QString &key) const;
    QString lockPath(const QString &key) const;
    // Opens and locks |key|'s lock file without waiting. False when another process holds it.
    bool lock(const QString &key);

    QString folder_;
    QHash<QString, int> locks_; // key -> the descriptor holding its flock
    QString error_;
};

// What the journal keeps of a copy, and back: the choices that make it the same copy when it is resumed.
JournalEntry journalEntryFor(const EngineBridge::Options &o);
EngineBridge::Options optionsFor(const JournalEntry &e);

} // namespace SaneCopy
