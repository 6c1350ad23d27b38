// SPDX-License-Identifier: GPL-2.0-or-later
#include "JobModel.h"

#include <algorithm>
#include <cmath>

#include "Format.h"
#include "job_control.h"

namespace SaneCopy {

using sanecopy::JobState;

JobModel::JobModel(QObject *parent) : QAbstractListModel(parent) {}

int JobModel::rowCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : int(rows_.size()); }

QHash<int, QByteArray> JobModel::roleNames() const
{
    return {{TitleRole, "title"},
            {StatusRole, "status"},
            {StateRole, "state"},
            {DurableFractionRole, "durable"},
            {WrittenFractionRole, "written"},
            {RateRole, "rate"},
            {EtaRole, "eta"},
            {SafeToUnplugRole, "safe"},
            {CanEjectRole, "canEject"}};
}

void JobModel::addJob(quint64 jobId, const QString &title, const QString &destination, const QString &mountPoint,
                      const QString &blockDevice, bool removable)
{
    beginInsertRows({}, int(rows_.size()), int(rows_.size()));
    Row row;
    row.id = jobId;
    row.title = title;
    row.destination = destination;
    row.mountPoint = mountPoint;
    row.blockDevice = blockDevice;
    row.removable = removable;
    row.progress.jobId = jobId;
    row.progress.state = int(JobState::Queued);
    rows_.append(row);
    endInsertRows();
}

int JobModel::rowOf(quint64 jobId) const
{
    for (int i = 0; i < rows_.size(); ++i)
        if (rows_[i].id == jobId)
            return i;
    return -1;
}

quint64 JobModel::jobIdAt(int row) const { return row >= 0 && row < rows_.size() ? rows_[row].id : 0; }

qint64 JobModel::totalDurableBytes() const
{
    qint64 sum = 0;
    for (const Row &r : rows_)
        sum += r.progress.durableBytes - r.progress.unwrittenBytes;
    return sum;
}

qint64 JobModel::totalWrittenBytes() const
{
    qint64 sum = 0;
    for (const Row &r : rows_)
        sum += r.progress.writtenBytes - r.progress.unwrittenBytes;
    return sum;
}

qint64 JobModel::ownDirtyBytes() const
{
    qint64 sum = -1;
    for (const Row &r : rows_) {
        if (!r.finished && r.progress.ownDirtyBytes >= 0)
            sum = (sum < 0 ? 0 : sum) + r.progress.ownDirtyBytes;
    }
    return sum;
}

bool JobModel::anyRunning() const
{
    for (const Row &r : rows_)
        if (!r.finished)
            return true;
    return false;
}

JobModel::Destinations JobModel::unfinishedDestinations() const
{
    bool shares = false, devices = false;
    for (const Row &r : rows_) {
        if (!r.finished)
            (r.progress.share ? shares : devices) = true;
    }
    if (shares && devices)
        return Destinations::Both;
    return shares ? Destinations::Shares : devices ? Destinations::Devices : Destinations::None;
}

bool JobModel::anyFinished() const
{
    return std::any_of(rows_.cbegin(), rows_.cend(), [](const Row &r) { return r.finished; });
}

QString JobModel::statusOf(const Row &row) const
{
    if (row.finished)
        return finishedStatus(row);
    return row.cancelAsked ? cancellingStatus(row.progress) : runningStatus(row.progress);
}

QString JobModel::finishedStatus(const Row &row) const
{
    const JobProgress &p = row.progress;
    if (row.cancelled)
        return p.share ? tr("Cancelled. Nothing half-written was left, and nothing is left to write to the share.")
                       : tr("Cancelled. Nothing half-written was left, and the device has nothing left to write.");
    if (row.ejected)
        return row.finalMessage;
    if (row.deviceRemoved)
        // The bytes of complete files: a file cut off counts for nothing, though part of it reached the device.
        return tr("The device was removed before the copy finished. On it in complete files, which are kept: %1 "
                  "of %2. Plug it back in and copy again to finish the rest.")
            .arg(formatBytes(double(p.durableBytes)), formatBytes(double(p.totalBytes)));
    QString text = row.ok ? tr("Done: %1.").arg(summaryOf(row))
                          : tr("Finished with problems: %1 (see Details).")
                                .arg(tr("%n file(s) were not copied", nullptr, int(row.problems.size())));
    if (row.removable && p.durableBytes > 0)
        text += QLatin1Char(' ') + tr("Safe to unplug.");
    if (!row.finalMessage.isEmpty())
        text += QLatin1Char(' ') + row.finalMessage;
    return text;
}

QString JobModel::cancellingStatus(const JobProgress &p) const
{
    if (p.stalledSeconds <= 0)
        return tr("Cancelling…");
    // The job thread waits in a write or a sync that only the kernel can end: say so rather than look frozen.
    const QString waited = formatEta(p.stalledSeconds);
    return p.share ? tr("Cancelling: the share has not answered for %1, and the copy stops as soon as it answers or "
                        "the system gives up on it (a hard NFS mount waits for the server). Nothing half-written "
                        "stands under a real name.")
                         .arg(waited)
                   : tr("Cancelling: the device has not answered for %1, and the copy stops as soon as it answers or "
                        "the system gives up on it. Nothing half-written stands under a real name.")
                         .arg(waited);
}

QString JobModel::runningStatus(const JobProgress &p) const
{
    switch (JobState(p.state)) {
    case JobState::Queued:
        return tr("Waiting for the device: another copy to it runs first.");
    case JobState::Paused:
        return (p.share ? tr("Paused. %1 of %2 on the share.") : tr("Paused. %1 of %2 on the device."))
            .arg(formatBytes(double(p.durableBytes)), formatBytes(double(p.totalBytes)));
    default:
        break;
    }
    if (p.stalledSeconds > 0) {
        // Rate and ETA would be made up while nothing moves: say what is happening instead.
        const QString waited = formatEta(p.stalledSeconds);
        return (p.share ? tr("The share is not responding (%1). %2 of %3 on the share; the copy goes on when it "
                             "answers, or press Cancel.")
                        : tr("The device is not responding (%1). %2 of %3 on the device; the copy goes on when "
                             "it answers, or press Cancel."))
            .arg(waited, formatBytes(double(p.durableBytes)), formatBytes(double(p.totalBytes)));
    }
    const qint64 inCache = p.writtenBytes - p.durableBytes;
    QString text = (p.share ? tr("%1 of %2 on the share") : tr("%1 of %2 on the device"))
                       .arg(formatBytes(double(p.durableBytes)), formatBytes(double(p.totalBytes)));
    if (inCache > 0)
        text += tr(" (+%1 on its way)").arg(formatBytes(double(inCache)));
    text += tr(" · %1 · %2 left").arg(formatRate(p.deviceRate), formatEta(p.etaSeconds));
    if (p.filesTotal > 1)
        text += tr(" · file %1 of %2").arg(qMin(p.filesDone + 1, p.filesTotal)).arg(p.filesTotal);
    // The file on its way, by name ("name (verifying)" while it is read back).
    if (const QString name = p.currentFile.mid(p.currentFile.lastIndexOf(QLatin1Char('/')) + 1); !name.isEmpty())
        text += QStringLiteral(" · ") + name;
    return text;
}

QVariant JobModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rows_.size())
        return {};
    const auto reader = roleReaders().constFind(role);
    return reader == roleReaders().constEnd() ? QVariant() : (*reader)(*this, rows_[index.row()]);
}

// What each role reads off a row.
const QHash<int, JobModel::RoleReader> &JobModel::roleReaders()
{
    using M = const JobModel &;
    using R = const Row &;
    static const QHash<int, RoleReader> readers = {
        {Qt::DisplayRole, [](M, R r) -> QVariant { return r.title; }},
        {TitleRole, [](M, R r) -> QVariant { return r.title; }},
        {StatusRole, [](M m, R r) -> QVariant { return m.statusOf(r); }},
        {StateRole, [](M, R r) -> QVariant { return r.progress.state; }},
        {DurableFractionRole, [](M, R r) -> QVariant { return durableFraction(r); }},
        {WrittenFractionRole, [](M, R r) -> QVariant { return writtenFraction(r); }},
        {RateRole, [](M, R r) -> QVariant { return r.progress.deviceRate; }},
        {EtaRole, [](M, R r) -> QVariant { return r.progress.etaSeconds; }},
        {SafeToUnplugRole, [](M, R r) -> QVariant { return r.finished && r.ok && !r.cancelled; }},
        {CanEjectRole, [](M, R r) -> QVariant { return canEject(r); }},
        {MountPointRole, [](M, R r) -> QVariant { return r.mountPoint; }},
        {BlockDeviceRole, [](M, R r) -> QVariant { return r.blockDevice; }},
        {ProblemsRole, [](M, R r) -> QVariant { return r.problems; }},
        {JobIdRole, [](M, R r) -> QVariant { return r.id; }},
        {OwnDirtyRole, [](M, R r) -> QVariant { return r.progress.ownDirtyBytes; }},
        {DeviceRemovedRole, [](M, R r) -> QVariant { return r.deviceRemoved; }},
        {FinishedRole, [](M, R r) -> QVariant { return r.finished; }},
        {ResultsRole, [](M, R r) -> QVariant { return resultsOf(r); }},
        {RemovableRole, [](M, R r) -> QVariant { return r.removable; }},
        {ShareRole, [](M, R r) -> QVariant { return r.progress.share; }},
        {SummaryRole, [](M m, R r) -> QVariant { return r.finished ? m.summaryOf(r) : QString(); }},
        {OutcomeRole, [](M, R r) -> QVariant { return outcomeOf(r); }},
    };
    return readers;
}

double JobModel::durableFraction(const Row &row)
{
    // 100 % only after the final sync: until the job has finished, a full count still shows 99.9 %.
    if (row.finished && row.ok)
        return 1.0;
    const JobProgress &p = row.progress;
    const double total = double(qMax<qint64>(p.totalBytes, 1));
    return qMin(p.totalBytes > 0 ? double(p.durableBytes) / total : 0.0, row.finished ? 1.0 : 0.999);
}

double JobModel::writtenFraction(const Row &row)
{
    // Once the job has ended nothing is on its way any more: what did not reach the device never will.
    if (row.finished)
        return durableFraction(row);
    const JobProgress &p = row.progress;
    return qMin(1.0, p.totalBytes > 0 ? double(p.writtenBytes) / double(p.totalBytes) : 0.0);
}

bool JobModel::canEject(const Row &row)
{
    return row.finished && !row.ejected && !row.deviceRemoved && row.removable && !row.blockDevice.isEmpty() &&
           JobState(row.progress.state) != JobState::Running;
}

// What the bar says instead of a percentage once the job ended unfinished.
QString JobModel::outcomeOf(const Row &row)
{
    if (!row.finished)
        return QString();
    if (row.cancelled)
        return tr("Cancelled");
    if (!row.deviceRemoved)
        return QString();
    const double total = double(qMax<qint64>(row.progress.totalBytes, 1));
    return tr("Device removed at %1 %").arg(int(std::floor(100 * double(row.progress.durableBytes) / total)));
}

// "312 MiB in 41 files on the device in 8 s (38.1 MiB/s) · 1 renamed · 2 skipped · 41 verified, read back from the
// device" ("on the share" for a share): the numbers a finished job's one line and its notification need.
QString JobModel::summaryOf(const Row &row) const
{
    const JobProgress &p = row.progress;
    // What moved through the device, against the time it took: a resumed prefix did not.
    const double moved = double(p.durableBytes - p.unwrittenBytes);
    QString text = (p.share ? tr("%1 in %2 on the share") : tr("%1 in %2 on the device"))
                       .arg(formatBytes(double(p.durableBytes)), tr("%n file(s)", nullptr, int(row.copied)));
    if (p.elapsedSeconds >= 1)
        text += tr(" in %1 (%2)").arg(formatEta(p.elapsedSeconds), formatRate(moved / p.elapsedSeconds));
    if (row.renamed > 0)
        text += tr(" · %1 renamed").arg(row.renamed);
    if (row.skipped > 0)
        text += tr(" · %1 skipped").arg(row.skipped);
    if (row.problems.size() > row.skipped)
        text += tr(" · %1 failed").arg(row.problems.size() - row.skipped);
    if (row.verify && row.copied > 0)
        text +=
            (p.share ? tr(" · %1 verified, read back from the share") : tr(" · %1 verified, read back from the device"))
                .arg(row.copied);
    return text;
}

void JobModel::setVerify(quint64 jobId, bool verify)
{
    if (const int r = rowOf(jobId); r >= 0)
        rows_[r].verify = verify;
}

bool JobModel::removeFinished(quint64 jobId)
{
    const int r = rowOf(jobId);
    if (r < 0 || !rows_.at(r).finished)
        return false;
    beginRemoveRows({}, r, r);
    rows_.removeAt(r);
    endRemoveRows();
    return true;
}

void JobModel::onFileDone(quint64 jobId, const QString &source, const QString &target)
{
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    Row &row = rows_[r];
    ++row.copied;
    const QString from = source.mid(source.lastIndexOf(QLatin1Char('/')) + 1);
    const QString to = target.mid(target.lastIndexOf(QLatin1Char('/')) + 1);
    const bool renamed = !to.isEmpty() && to != from;
    row.renamed += renamed;
    if (row.copied > kFilesListed)
        ++row.unlisted;
    else if (renamed)
        row.results << tr("Renamed: %1 → %2").arg(source, target);
    else
        row.results << tr("Copied: %1 → %2").arg(source, target);
    // No dataChanged per file: the next progress tick (5 a second) refreshes the row.
}

QStringList JobModel::resultsOf(const Row &row)
{
    if (row.unlisted == 0)
        return row.results;
    const QString more = tr("… and %n more file(s) copied, not listed here", nullptr, int(row.unlisted));
    return row.results + QStringList {more};
}

void JobModel::changed(int row)
{
    const QModelIndex i = index(row);
    Q_EMIT dataChanged(i, i);
}

void JobModel::onProgress(const JobProgress &progress)
{
    const int r = rowOf(progress.jobId);
    if (r < 0)
        return;
    rows_[r].progress = progress;
    changed(r);
}

void JobModel::onSkipped(quint64 jobId, const QString &source, const QString &message)
{
    Q_UNUSED(source)
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    rows_[r].problems << tr("Skipped: %1").arg(message);
    rows_[r].results << tr("Skipped: %1").arg(message);
    ++rows_[r].skipped;
    changed(r);
}

void JobModel::onFailed(quint64 jobId, const QString &source, const QString &message)
{
    Q_UNUSED(source)
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    rows_[r].problems << message;
    rows_[r].results << tr("Failed: %1").arg(message);
    changed(r);
}

void JobModel::onFinished(quint64 jobId, bool ok, bool cancelled, qint64 bytes, qint64 filesCopied, qint64 errors)
{
    Q_UNUSED(bytes)
    Q_UNUSED(filesCopied)
    Q_UNUSED(errors)
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    Row &row = rows_[r];
    row.finished = true;
    row.ok = ok;
    row.cancelled = cancelled;
    row.progress.state = int(cancelled ? JobState::Cancelled : ok ? JobState::Done : JobState::Failed);
    row.progress.etaSeconds = 0;
    changed(r);
}

void JobModel::onCancelAsked(quint64 jobId)
{
    const int r = rowOf(jobId);
    if (r < 0 || rows_[r].finished)
        return;
    rows_[r].cancelAsked = true;
    changed(r);
}

void JobModel::onDeviceRemoved(quint64 jobId)
{
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    rows_[r].deviceRemoved = true;
    changed(r);
}

void JobModel::setEjected(quint64 jobId, bool ejected, const QString &message)
{
    const int r = rowOf(jobId);
    if (r < 0)
        return;
    rows_[r].ejected = ejected;
    rows_[r].finalMessage = message;
    changed(r);
}

} // namespace SaneCopy
