// SPDX-License-Identifier: GPL-2.0-or-later
//
// JobModel: one row per copy job, fed by EngineBridge's signals (or, in tests, by calling the same slots).
// It keeps the numbers and turns them into what a row shows: the durable fraction, the fraction still only in
// the page cache, the device's rate and the ETA from it, and a status line that says "Safe to unplug" only
// once the job's final sync has returned.
#pragma once

#include "EngineBridge.h"

#include <QAbstractListModel>
#include <QList>
#include <QStringList>

namespace SaneCopy {

class JobModel : public QAbstractListModel {
    Q_OBJECT
public:
    // A job's copied files listed by name in its results: a tree of a million files would otherwise hold a
    // million lines (about 750 bytes each) that nobody reads. Problems are always listed, however many.
    static constexpr qint64 kFilesListed = 10000;
    enum Role {
        TitleRole = Qt::UserRole + 1,
        StatusRole,          // one line for the user
        StateRole,           // sanecopy::JobState as int
        DurableFractionRole, // 0..1
        WrittenFractionRole, // 0..1, >= durable
        RateRole,            // device bytes/s
        EtaRole,             // seconds, -1 unknown
        SafeToUnplugRole,
        CanEjectRole, // finished well on a removable device whose block device is known
        MountPointRole,
        BlockDeviceRole,
        ProblemsRole, // QStringList of skipped files and errors
        JobIdRole,
        OwnDirtyRole,
        DeviceRemovedRole, // the job ended because its device went away
        FinishedRole,      // the engine is done with the job, however it ended
        OutcomeRole,       // what the bar says instead of a percentage once the job ended unfinished; else empty
        ResultsRole,   // QStringList, one line per file: copied (to where), renamed (to what), skipped (why), failed;
                       // past kFilesListed copied files, one line that counts the rest
        SummaryRole,   // one line: what happened, once the job has ended
        RemovableRole, // the destination is a removable device: "Safe to unplug" is what the user waits for
        ShareRole,     // the destination is a network share: its bytes are "on the share", not on a device
    };

    explicit JobModel(QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // A job the bridge has accepted. |mountPoint|/|blockDevice|/|removable| come from the plan.
    void addJob(quint64 jobId, const QString &title, const QString &destination, const QString &mountPoint,
                const QString &blockDevice, bool removable);
    // The job reads every file back (Verify): its result says how many were.
    void setVerify(quint64 jobId, bool verify);
    // Takes a finished job off the list; false when it is not finished (or not there).
    bool removeFinished(quint64 jobId);
    int rowOf(quint64 jobId) const;
    quint64 jobIdAt(int row) const;
    // Sums of what the jobs moved, for the charts: a resumed prefix or a hole is counted by progress, but it
    // never went through the page cache to the device.
    qint64 totalDurableBytes() const;
    qint64 totalWrittenBytes() const;
    qint64 ownDirtyBytes() const; // -1 when no running job knows it
    bool anyRunning() const;
    bool anyFinished() const;
    // Where the unfinished jobs' bytes go, for the words of the throughput chart.
    enum class Destinations { None, Devices, Shares, Both };
    Destinations unfinishedDestinations() const;

public Q_SLOTS:
    void onProgress(const SaneCopy::JobProgress &progress);
    void onFileDone(quint64 jobId, const QString &source, const QString &target);
    void onSkipped(quint64 jobId, const QString &source, const QString &message);
    void onFailed(quint64 jobId, const QString &source, const QString &message);
    void onFinished(quint64 jobId, bool ok, bool cancelled, qint64 bytes, qint64 filesCopied, qint64 errors);
    void setEjected(quint64 jobId, bool ejected, const QString &message);
    void onDeviceRemoved(quint64 jobId);
    // Cancel was pressed: the row says so until the job ends, which it may not do at once (a stalled share).
    void onCancelAsked(quint64 jobId);

private:
    struct Row {
        quint64 id = 0;
        QString title;
        QString destination;
        QString mountPoint;
        QString blockDevice;
        bool removable = false;
        JobProgress progress;
        bool finished = false;
        bool ok = false;
        bool cancelled = false;
        bool cancelAsked = false;
        bool ejected = false;
        bool deviceRemoved = false;
        QString finalMessage;
        QStringList problems;
        QStringList results;
        qint64 copied = 0, renamed = 0, skipped = 0;
        qint64 unlisted = 0; // copied files past kFilesListed, counted but not in |results|
        bool verify = false;
    };
    static QStringList resultsOf(const Row &row);
    using RoleReader = QVariant (*)(const JobModel &model, const Row &row);
    static const QHash<int, RoleReader> &roleReaders();
    static double durableFraction(const Row &row);
    static double writtenFraction(const Row &row);
    static bool canEject(const Row &row);
    static QString outcomeOf(const Row &row);
    QString summaryOf(const Row &row) const;
    QString statusOf(const Row &row) const;
    QString finishedStatus(const Row &row) const;
    QString runningStatus(const JobProgress &p) const;
    QString cancellingStatus(const JobProgress &p) const;
    void changed(int row);

    QList<Row> rows_;
};

} // namespace SaneCopy
