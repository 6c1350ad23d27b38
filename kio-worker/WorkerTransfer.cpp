// SPDX-License-Identifier: GPL-2.0-or-later
// The bytes: get() reads a file out, put() writes a stream through a StreamWriter, copy() runs a copy job (or
// hands a small file to the folder run).
#include "SaneCopyWorker.h"
#include "WorkerSupport.h"

#include "EngineJob.h"
#include "ExitCleanup.h"
#include "FolderRun.h"
#include "StallNotice.h"
#include "UrlMapping.h"
#include "SaneCopyLogging.h"

#include "copy_job.h"
#include "fd.h"
#include "job_control.h"
#include "job_queue.h"
#include "stream_writer.h"
#include "sys.h"

#include <KIO/Global>
#include <KLocalizedString>

#include <QMimeDatabase>

#include <cerrno>
#include <chrono>
#include <fcntl.h>

using namespace SaneCopyKio;
using sanecopy::sys;
using sanecopy::UniqueFd;

namespace {

// The words for a copy that has stood still for |seconds| (a stall, EngineJob.h), as the window's row says them.
QString notRespondingMessage(bool share, double seconds)
{
    const int n = int(seconds);
    return share ? i18ncp("@info:status", "The share has not answered for %1 second; the copy goes on when it does",
                          "The share has not answered for %1 seconds; the copy goes on when it does", n)
                 : i18ncp("@info:status", "The device has not answered for %1 second; the copy goes on when it does",
                          "The device has not answered for %1 seconds; the copy goes on when it does", n);
}

} // namespace

KIO::WorkerResult SaneCopyWorker::get(const QUrl &url)
{
    const Resolved pathTarget = settleAndResolve(url);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    UniqueFd fd;
    struct stat st {};
    if (KIO::WorkerResult opened = openForReading(path, fd, st); !opened.success())
        return opened;
    const uint64_t size = uint64_t(st.st_size);
    uint64_t pos = 0;
    bool ok = false;
    const qulonglong start = metaData(QStringLiteral("range-start")).toULongLong(&ok);
    if (ok && start > 0 && start < size) {
        canResume();
        pos = start;
    }
    totalSize(size);
    return sendData(fd.get(), path, pos);
}

// A regular file, opened for get(); a folder or anything else is refused.
KIO::WorkerResult SaneCopyWorker::openForReading(const QByteArray &path, UniqueFd &fd, struct stat &st)
{
    // O_NONBLOCK: a FIFO put where a file was must not hang the worker in open().
    fd.reset(sys().openat(AT_FDCWD, path.constData(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0));
    if (!fd)
        return failWith(FileOp::Read, errno, path);
    if (sys().fstat(fd.get(), &st) < 0)
        return failWith(FileOp::Read, errno, path);
    if (S_ISDIR(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_IS_DIRECTORY, displayPath(path));
    if (!S_ISREG(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_CANNOT_OPEN_FOR_READING, displayPath(path));
    sys().fcntl_setfl(fd.get(), O_RDONLY);
    sys().fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    return KIO::WorkerResult::pass();
}

// The file from |pos| to its end as data() messages, its type before the first.
KIO::WorkerResult SaneCopyWorker::sendData(int fd, const QByteArray &path, uint64_t pos)
{
    QByteArray buffer(int(kReadBlock), Qt::Uninitialized);
    bool typed = false;
    auto lastReport = std::chrono::steady_clock::now();
    for (;;) {
        if (wasKilled())
            return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(path));
        const ssize_t n = sys().pread(fd, buffer.data(), kReadBlock, off_t(pos));
        if (n < 0)
            return failWith(FileOp::Read, errno, path);
        if (!typed) {
            // KIO wants the type before the first data; the first block is there to sniff it from.
            mimeType(QMimeDatabase()
                         .mimeTypeForFileNameAndData(decodeFileName(splitPath(path).second), buffer.left(int(n)))
                         .name());
            typed = true;
        }
        if (n == 0)
            break;
        data(buffer.left(int(n)));
        pos += uint64_t(n);
        if (const auto now = std::chrono::steady_clock::now(); now - lastReport >= kProgressPeriod) {
            processedSize(pos);
            lastReport = now;
        }
    }
    data(QByteArray());
    processedSize(pos);
    return KIO::WorkerResult::pass();
}

KIO::WorkerResult SaneCopyWorker::put(const QUrl &url, int permissions, KIO::JobFlags flags)
{
    const Resolved pathTarget = settleAndResolve(url, true);
    if (pathTarget.error)
        return *pathTarget.error;
    const QByteArray &path = pathTarget.path;
    const sanecopy::StreamOptions options = streamOptions(path, permissions, flags);
    qCDebug(SANECOPY_KIO) << "put" << displayPath(path) << "through a stream writer, announced"
                          << options.expected_size.value_or(0) << "bytes";
    sanecopy::ProgressCounters counters;
    // One writer per device, across processes too (see EngineJob.cpp).
    sanecopy::JobSpec lane;
    lane.destination = toStd(path);
    const sanecopy::JobControl noCancel;
    const sanecopy::UniqueFd deviceLock = sanecopy::lock_device(sanecopy::JobQueue::default_lane(lane), noCancel);
    auto created = sanecopy::StreamWriter::create(toStd(path), options, counters);
    if (!created.ok())
        return failedToCreate(created.status(), path);
    sanecopy::StreamWriter &writer = created.value();
    ExitCleanup onExit([&writer] { writer.abort(); });
    KIO::WorkerResult fed = feed(writer, counters, path);
    if (const uint64_t announced = options.expected_size.value_or(0);
        fed.success() && writer.bytes_written() < announced) {
        // The sender announced more than it sent: a connection that broke off, whatever the sender's worker said.
        // Never published under the real name: kept for a resume like any stream cut short.
        fed = KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED,
                                      i18n("%1 was not finished: its source ended after %2 of the %3 bytes it "
                                           "announced. Copy it again to go on from there.",
                                           displayPath(path), writer.bytes_written(), announced));
    }
    if (!fed.success()) {
        // Cancelled, or the sender's source failed: what is on the device stays for the next put() of this file
        // to go on from (canResume() below). After a device error the writer can't vouch for it and removes it.
        if (sanecopy::Status kept = writer.keep_for_resume())
            qCDebug(SANECOPY_KIO) << "put interrupted," << writer.bytes_durable() << "bytes kept for a resume";
        else
            qCDebug(SANECOPY_KIO) << "put interrupted, nothing kept:" << kept.message().c_str();
        return fed;
    }
    if (sanecopy::Status s = writer.finish(); !s)
        return s.err() == EEXIST ? failExists(path) : failWithStatus(FileOp::Write, s, path);
    reportStream(counters);
    qCDebug(SANECOPY_KIO) << "put done," << writer.bytes_durable() << "bytes on the device";
    return KIO::WorkerResult::pass();
}

// What put() is told about the stream: the policy for a name in use, the mode, the time and size the sender
// gave, and whether to go on from a part file an interrupted put() left.
sanecopy::StreamOptions SaneCopyWorker::streamOptions(const QByteArray &path, int permissions, KIO::JobFlags flags)
{
    sanecopy::StreamOptions options;
    options.conflict =
        (flags & KIO::Overwrite) ? sanecopy::ConflictPolicy::Overwrite : sanecopy::ConflictPolicy::Refuse;
    if (permissions != -1)
        options.mode = mode_t(permissions);
    const QDateTime modified = QDateTime::fromString(metaData(QStringLiteral("modified")), Qt::ISODate);
    if (modified.isValid())
        options.mtime = toTimespec(modified);
    bool ok = false;
    const qulonglong size = metaData(QStringLiteral("size")).toULongLong(&ok);
    if (ok && size > 0)
        options.expected_size = size;
    options.closer = closer_;
    // A part file an interrupted put() of this same file kept (the same sender's time, and no bigger than the
    // size announced) is offered to the job through canResume(), or taken at once with KIO::Resume; the sender
    // then starts at its end, or at 0 if the job declines. Any other part file is replaced.
    const uint64_t kept = sanecopy::StreamWriter::resumable_part_size(toStd(path), options.mtime);
    if (kept > 0 && kept < options.expected_size.value_or(UINT64_MAX))
        options.resume = (flags & KIO::Resume) || canResume(KIO::filesize_t(kept));
    return options;
}

// The sender's data into |writer| until it says the end.
KIO::WorkerResult SaneCopyWorker::feed(sanecopy::StreamWriter &writer, const sanecopy::ProgressCounters &counters,
                                       const QByteArray &path)
{
    auto lastReport = std::chrono::steady_clock::now();
    for (;;) {
        if (wasKilled())
            return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(path));
        dataReq();
        QByteArray block;
        const int n = readData(block);
        if (n < 0)
            return KIO::WorkerResult::fail(KIO::ERR_CANNOT_WRITE, displayPath(path));
        if (n == 0)
            return KIO::WorkerResult::pass();
        if (sanecopy::Status s = writer.write(block.constData(), std::size_t(block.size())); !s)
            return failWithStatus(FileOp::Write, s, path);
        if (const auto now = std::chrono::steady_clock::now(); now - lastReport >= kProgressPeriod) {
            reportStream(counters);
            lastReport = now;
        }
    }
}

void SaneCopyWorker::reportStream(const sanecopy::ProgressCounters &counters)
{
    processedSize(counters.durable_bytes.load());
    speed(static_cast<unsigned long>(counters.device_rate.load()));
}

KIO::WorkerResult SaneCopyWorker::failedToCreate(const sanecopy::Status &s, const QByteArray &path)
{
    if (s.err() == EEXIST || s.err() == EISDIR)
        return failExists(path);
    return failWithStatus(FileOp::Write, s, path);
}

KIO::WorkerResult SaneCopyWorker::copy(const QUrl &src, const QUrl &dest, int /*permissions*/, KIO::JobFlags flags)
{
    // The folder run does not go idle under a copy, however long it takes (FolderRun.h).
    const FolderRun::Busy busy(*run_);
    const ResolvedPair paths = resolvePair(src, dest, FileOp::Read);
    if (paths.error)
        return *paths.error;
    const QByteArray &from = paths.from;
    const QByteArray &to = paths.to;
    const struct stat &st = paths.source;
    // KIO's CopyJob makes folders with mkdir() and copies their files one by one; a folder here is a mistake.
    if (S_ISDIR(st.st_mode))
        return KIO::WorkerResult::fail(KIO::ERR_IS_DIRECTORY, displayPath(from));
    const auto policy =
        (flags & KIO::Overwrite) ? sanecopy::ConflictPolicy::Overwrite : sanecopy::ConflictPolicy::Refuse;
    if (S_ISREG(st.st_mode)) {
        // A small file of a dropped folder: held, and on the device when the run settles (FolderRun.h).
        if (std::optional<KIO::WorkerResult> held = holdInRun(from, to, st, policy))
            return *held;
    }
    if (KIO::WorkerResult settled = settleRun(); !settled.success())
        return settled;
    return copyByJob(from, to, policy);
}

// The file into the folder run: its result when the run took it (or failed it), nullopt when the usual way copies it.
std::optional<KIO::WorkerResult> SaneCopyWorker::holdInRun(const QByteArray &from, const QByteArray &to,
                                                           const struct stat &st, sanecopy::ConflictPolicy policy)
{
    const sanecopy::Result<bool> held = run_->hold(toStd(from), toStd(to), policy);
    if (!held.ok()) {
        const sanecopy::Status &s = held.status();
        return failWithStatus(s.on_source() ? FileOp::Read : FileOp::Write, s, fromStd(s.path()));
    }
    if (!held.value())
        return std::nullopt;
    totalSize(KIO::filesize_t(st.st_size));
    processedSize(KIO::filesize_t(st.st_size));
    return KIO::WorkerResult::pass();
}

// One file as a copy job of its own, its progress passed on to KIO.
KIO::WorkerResult SaneCopyWorker::copyByJob(const QByteArray &from, const QByteArray &to,
                                            sanecopy::ConflictPolicy policy)
{
    sanecopy::JobSpec spec;
    spec.sources = {toStd(from)};
    spec.destination = toStd(to);
    spec.rule = sanecopy::DestinationRule::ExactTarget;
    // Permissions and modification time come from the source, as the engine always copies them.
    spec.conflict = policy;
    spec.closer = closer_;
    qCDebug(SANECOPY_KIO) << "copy" << displayPath(from) << "->" << displayPath(to) << "through the engine";
    uint64_t reportedTotal = 0;
    bool saidStalled = false;
    StallNotice notice(desktopNotifications(displayPath(to)));
    const EngineOutcome outcome =
        runEngineJob(spec, kProgressPeriod, [&](const sanecopy::ProgressCounters &c, double stalled) {
            if (wasKilled()) {
                // Now: KIO ends a worker that has not returned 5 s after a cancel, which a stalled device can make.
                notice.withdraw();
                return false;
            }
            if (const uint64_t total = c.total_bytes.load(); total != reportedTotal) {
                totalSize(total);
                reportedTotal = total;
            }
            processedSize(c.durable_bytes.load());
            // A stalled share or stick: no rate (the last one would be a lie), which Plasma's popup shows. The
            // words go too, as the window's row says them, but KIO drops a worker's infoMessage on the way to the
            // popup (it arrives naming the worker's job, which the tracker has no view for; test_kio_worker.py):
            // a notification of the worker's own says it there.
            speed(stalled > 0 ? 0 : static_cast<unsigned long>(c.device_rate.load()));
            if (stalled > 0 || saidStalled)
                infoMessage(stalled > 0 ? notRespondingMessage(c.share.load(), stalled) : QString());
            notice.update(stalled > 0, c.share.load(), sanecopy::monotonic_seconds());
            if (stalled > 0 && !saidStalled)
                qCDebug(SANECOPY_KIO) << "stalled: nothing moved for" << stalled << "s";
            else if (stalled == 0 && saidStalled)
                qCDebug(SANECOPY_KIO) << "moving again";
            saidStalled = stalled > 0;
            return true;
        });
    if (wasKilled())
        return KIO::WorkerResult::fail(KIO::ERR_USER_CANCELED, displayPath(to));
    // complete(), not ok(): a file the destination refused (a name FAT can't store) is a failed copy too.
    if (outcome.summary.complete()) {
        qCDebug(SANECOPY_KIO) << "copy done," << outcome.summary.bytes << "bytes on the device";
        return KIO::WorkerResult::pass();
    }
    return copyFailed(outcome, to);
}

KIO::WorkerResult SaneCopyWorker::copyFailed(const EngineOutcome &outcome, const QByteArray &to)
{
    if (!outcome.firstProblem)
        return KIO::WorkerResult::fail(KIO::ERR_CANNOT_WRITE, displayPath(to));
    const sanecopy::JobEvent &problem = *outcome.firstProblem;
    // A pulled stick, or a file left out: KIO's own templates ("Could not write to file %1") would hide what
    // happened.
    if (outcome.summary.device_removed || problem.kind == sanecopy::JobEvent::Kind::Skipped)
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED, QString::fromStdString(problem.message));
    const sanecopy::Status &s = problem.status;
    if (s.on_destination() && (s.err() == EEXIST || s.err() == EISDIR))
        return failExists(to);
    const QByteArray where = s.path().empty() ? to : fromStd(s.path());
    return failWithStatus(s.on_source() ? FileOp::Read : FileOp::Write, s, where);
}
