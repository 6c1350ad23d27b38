// SPDX-License-Identifier: GPL-2.0-or-later
//
// EngineBridge: the engine's JobQueue seen from the GUI thread. The engine calls back on its own threads
// (a ticker for progress, each job's lane for events and questions); every callback is handed to this object's
// thread as a queued call, so widgets only ever see signals on the GUI thread, at the ticker's rate (5 a second
// per job), never per chunk.
//
// Questions (an existing target, a failed file) block the job's thread until answerConflict()/answerError() is
// called; the GUI thread never waits. Questions still open when the bridge goes away are answered Cancel/Abort.
#pragma once

#include "copy_job.h"
#include "job_queue.h"
#include "Paths.h"

#include <QDateTime>
#include <QHash>
#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <mutex>
#include <vector>

namespace SaneCopy {

// One job's numbers, as the GUI keeps them.
struct JobProgress {
    quint64 jobId = 0;
    int state = 0; // sanecopy::JobState
    qint64 totalBytes = 0;
    qint64 durableBytes = 0;
    qint64 writtenBytes = 0;
    qint64 unwrittenBytes = 0; // counted in both above without being moved: a resumed prefix, holes
    qint64 filesDone = 0;
    qint64 filesTotal = 0;
    QString currentFile;
    double deviceRate = 0;
    double etaSeconds = -1;
    qint64 ownDirtyBytes = -1;
    double elapsedSeconds = 0;
    double stalledSeconds = 0; // the running copy has not moved for this long (0: it moves)
    bool share = false;        // the destination is a network share
};

// What a plan found, before the first byte (EngineBridge::planAsync).
struct PlanSummary {
    QStringList problems; // one line each, for the dialog; the space line is in |room|
    qint64 totalBytes = 0;
    qint64 files = 0; // files and links that will be copied
    QString mountPoint;
    QString blockDevice;
    // Where the first source goes, as the plan resolved the destination ("/media/stick/photo.jpg" for a file dropped
    // on the stick's folder, the name itself for an exact target): Plasma's view of a one-item copy shows it. Read
    // from the plan, so the GUI thread never stats a destination that may be a share that stopped answering.
    QString firstTarget;
    bool removable = false;
    int badNames = 0; // problems that are names the target refuses (a safe name would fix them)
    // Whether the copy fits on the device depends on what becomes of the names already taken: skipped, they need
    // no room; replaced, the difference (and the largest once); asked one by one or kept both, their full size.
    struct Room {
        QString problem;  // "not enough space: ...", empty when everything fits
        qint64 files = 0; // files and links the copy writes
        // When not everything fits: what "copy what fits" would copy (JobSpec::fit_to_space); -1 when it fits.
        qint64 fitFiles = -1;
        qint64 fitBytes = 0;
    };
    Room room;          // names taken asked for one by one, or kept both
    Room roomIfSkipped; // the same as |room| when no name is taken
    Room roomIfReplaced;
    // For a sanecopy::ConflictPolicy, or -1 for "ask for each".
    const Room &roomFor(int policy) const;
    // Problems and the space line for |policy|: what the user reads before the first byte.
    QStringList problemsFor(int policy) const;
    // Files whose names are taken on the destination (sanecopy::JobPlan::taken): shown with the problems, so one
    // answer can settle them all.
    struct Taken {
        QString name;   // below the destination, as the user reads it
        QString target; // the whole path
        qint64 sourceSize = 0;
        qint64 targetSize = 0;
        QDateTime sourceTime;
        QDateTime targetTime;
        bool targetIsDir = false;
    };
    QList<Taken> taken;
};

class EngineBridge : public QObject {
    Q_OBJECT
public:
    struct Options {
        PathList sources;
        QByteArray destination;
        int conflict = int(sanecopy::ConflictPolicy::Refuse);
        bool askOnConflict = true;
        bool askOnError = true;
        bool verify = false;        // read each file back from the device and compare hashes
        bool renameInvalid = false; // copy names the target refuses under a safe name
        bool move = false;          // Safe Move: sources removed once their copies are on the device
        bool manifest = false;      // SHA256SUMS on the destination
        bool resume = false;        // finishing an interrupted copy (sanecopy::JobSpec::resume)
        bool fitToSpace = false;    // copy what fits when not everything does (sanecopy::JobSpec::fit_to_space)
        // One of several copies of the same sources onto other sticks at once: the source is read once for all
        // (sanecopy::JobSpec::source_share).
        std::shared_ptr<sanecopy::SourceShare> share;
        unsigned shareMember = 0;
    };

    explicit EngineBridge(QObject *parent = nullptr, double tickSeconds = 0.2);
    ~EngineBridge() override;

    // Queues a copy. Returns its id (ids start at 1).
    quint64 submit(const Options &options);
    void pause(quint64 jobId);
    void resume(quint64 jobId);
    void cancel(quint64 jobId);

    // The plan of a copy, computed on a worker thread: planned() arrives with |requestId| when it is known.
    void planAsync(quint64 requestId, const PathList &sources, const QByteArray &destination);

    // Removes the part files an interrupted copy left (sanecopy::discard_unfinished), on a worker thread:
    // discarded() arrives with |requestId|.
    void discardAsync(quint64 requestId, const Options &options);

public Q_SLOTS:
    void answerConflict(quint64 questionId, int answer); // sanecopy::ConflictAnswer
    void answerError(quint64 questionId, int answer);    // sanecopy::ErrorAnswer

Q_SIGNALS:
    void progress(const SaneCopy::JobProgress &progress);
    void fileDone(quint64 jobId, const QString &source, const QString &target);
    void skipped(quint64 jobId, const QString &source, const QString &message);
    void failed(quint64 jobId, const QString &source, const QString &message);
    void finished(quint64 jobId, bool ok, bool cancelled, qint64 bytes, qint64 filesCopied, qint64 errors);
    // Just before finished(): the job ended because its destination's device went away (a pulled stick).
    void deviceRemoved(quint64 jobId);
    void conflictAsked(quint64 jobId, quint64 questionId, const QString &source, const QString &target,
                       qint64 sourceSize, qint64 targetSize, bool targetIsFolder, const QDateTime &sourceModified,
                       const QDateTime &targetModified);
    void errorAsked(quint64 jobId, quint64 questionId, const QString &source, const QString &message);
    void discarded(quint64 requestId, qint64 partFilesRemoved, const QStringList &errors);
    void planned(quint64 requestId, const SaneCopy::PlanSummary &plan);

private:
    class Observer;
    struct Pending;
    // Posts a question to the GUI thread and blocks the calling (engine) thread until it is answered.
    int ask(const std::function<void(quint64 questionId)> &post, int answerIfGone);

    std::unique_ptr<sanecopy::JobQueue> queue_;
    QHash<quint64, std::shared_ptr<sanecopy::Job>> jobs_;
    QHash<quint64, std::shared_ptr<Pending>> pending_;
    // Every question asked and not yet answered, also those still on their way to this thread: the
    // destructor answers them all, or a job blocked in ask() would keep the queue from shutting down.
    std::mutex askedMutex_;
    std::vector<std::weak_ptr<Pending>> asked_;
    quint64 nextQuestion_ = 1;
};

} // namespace SaneCopy

Q_DECLARE_METATYPE(SaneCopy::JobProgress)
Q_DECLARE_METATYPE(SaneCopy::PlanSummary)
