// SPDX-License-Identifier: GPL-2.0-or-later
//
// The KIO worker for sanecopy:/: a local folder seen through SaneCopy's engine. Browsing, renaming and
// deleting are the plain system calls; every byte written goes through the engine (copy() runs a copy job,
// put() a StreamWriter), so a copy into a sanecopy:/ folder moves at the device's own speed, keeps little of
// it dirty in memory, reports as processed only bytes the device has (a dropped folder's small files: at most
// two groups ahead, FolderRun.h), and ends only once they are all on it.
//
// A thin adapter: URLs become paths in UrlMapping, errno becomes KIO::Error in ErrorMapping.
#pragma once

#include "ErrorMapping.h"
#include "conflict.h"
#include "fd.h"
#include "result.h"
#include "stream_writer.h"

#include <KIO/UDSEntry>
#include <KIO/WorkerBase>

#include <QByteArray>
#include <QHash>
#include <QString>

#include <memory>
#include <optional>
#include <sys/stat.h>
#include <vector>

namespace sanecopy {
class BackgroundCloser;
struct RemovableMount;
} // namespace sanecopy

namespace SaneCopyKio {
struct EngineOutcome;
class ExitCleanup;
class FolderRun;
} // namespace SaneCopyKio

class SaneCopyWorker : public KIO::WorkerBase {
public:
    SaneCopyWorker(const QByteArray &poolSocket, const QByteArray &appSocket);
    ~SaneCopyWorker() override;

    KIO::WorkerResult stat(const QUrl &url) override;
    KIO::WorkerResult mimetype(const QUrl &url) override;
    KIO::WorkerResult listDir(const QUrl &url) override;
    KIO::WorkerResult mkdir(const QUrl &url, int permissions) override;
    KIO::WorkerResult del(const QUrl &url, bool isFile) override;
    KIO::WorkerResult rename(const QUrl &src, const QUrl &dest, KIO::JobFlags flags) override;
    KIO::WorkerResult symlink(const QString &target, const QUrl &dest, KIO::JobFlags flags) override;
    KIO::WorkerResult chmod(const QUrl &url, int permissions) override;
    KIO::WorkerResult setModificationTime(const QUrl &url, const QDateTime &mtime) override;
    KIO::WorkerResult get(const QUrl &url) override;
    KIO::WorkerResult put(const QUrl &url, int permissions, KIO::JobFlags flags) override;
    KIO::WorkerResult copy(const QUrl &src, const QUrl &dest, int permissions, KIO::JobFlags flags) override;
    KIO::WorkerResult fileSystemFreeSpace(const QUrl &url) override;

private:
    // The local path a URL stands for: sanecopy:///abs/path and file:///abs/path directly, sanecopy://devices/NAME/a
    // through the device named NAME's mount point. |error| is set when there is none (a malformed URL, a device that
    // is not plugged in, the device list itself, which holds no files).
    struct Resolved {
        QByteArray path; // empty when |error| is set
        std::optional<KIO::WorkerResult> error;
        bool deviceRoot = false; // sanecopy://devices/NAME itself
    };
    // |creating|: the URL names something about to be made, so a name directly in the device list is a mistake to
    // explain (files go onto a device, not beside them), not a missing file.
    Resolved resolve(const QUrl &url, bool creating = false);
    // settleRun(), then resolve(): what the folder run held is settled before anything else is looked at.
    Resolved settleAndResolve(const QUrl &url, bool creating = false);
    // The two ends of a copy or rename, neither of them a device's own folder, and the source's stat: through a
    // link for a copy (FileOp::Read), of the link itself for a rename (FileOp::Rename), whose error it fails with.
    struct ResolvedPair {
        QByteArray from;
        QByteArray to;
        struct stat source {};
        std::optional<KIO::WorkerResult> error;
    };
    ResolvedPair resolvePair(const QUrl &src, const QUrl &dest, SaneCopyKio::FileOp op);
    // Deleting, moving or renaming a device's own folder: refused, with what to do instead.
    KIO::WorkerResult deviceIsNoFile();
    // sanecopy://devices/ itself: a folder that can't be written, holding one folder per device.
    KIO::WorkerResult statDeviceList();
    KIO::WorkerResult listDevices();
    // A device's folder in the list: its mount point's entry, named and labelled as the device.
    bool fillDeviceEntry(KIO::UDSEntry &entry, const sanecopy::RemovableMount &device);

    // Fills |entry| for |name| in the folder |dirfd|; false with errno set when it can't be stat'ed.
    bool fillEntry(KIO::UDSEntry &entry, int dirfd, const QByteArray &name, const QString &displayName);
    QString userName(uid_t uid);
    QString groupName(gid_t gid);
    // The error for |err| during |op| on |path|, the path as the text.
    KIO::WorkerResult failWith(SaneCopyKio::FileOp op, int err, const QByteArray &path);
    // ERR_FILE_ALREADY_EXIST or ERR_DIR_ALREADY_EXIST, by what stands at |path|.
    KIO::WorkerResult failExists(const QByteArray &path);
    // An engine error: its side picks the words, and a pulled stick is said as such.
    KIO::WorkerResult failWithStatus(SaneCopyKio::FileOp op, const sanecopy::Status &s, const QByteArray &path);
    // Every file the folder run holds published and on the device (FolderRun.h); called first by every
    // operation but a copy() the run takes. The failure of a held file, if one failed.
    KIO::WorkerResult settleRun();

    // rename(): with KIO::Overwrite, and without (never replacing what is there).
    KIO::WorkerResult renameReplacing(const QByteArray &from, const QByteArray &to);
    KIO::WorkerResult renameKeeping(const QByteArray &from, const QByteArray &to, const struct stat &st);
    // get()'s parts.
    KIO::WorkerResult openForReading(const QByteArray &path, sanecopy::UniqueFd &fd, struct stat &st);
    KIO::WorkerResult sendData(int fd, const QByteArray &path, uint64_t pos);
    // put()'s parts.
    sanecopy::StreamOptions streamOptions(const QByteArray &path, int permissions, KIO::JobFlags flags);
    KIO::WorkerResult feed(sanecopy::StreamWriter &writer, const sanecopy::ProgressCounters &counters,
                           const QByteArray &path);
    void reportStream(const sanecopy::ProgressCounters &counters);
    // The stream writer could not start: a name in use (a file or a folder) is "already exists".
    KIO::WorkerResult failedToCreate(const sanecopy::Status &s, const QByteArray &path);
    // copy()'s parts.
    std::optional<KIO::WorkerResult> holdInRun(const QByteArray &from, const QByteArray &to, const struct stat &st,
                                               sanecopy::ConflictPolicy policy);
    KIO::WorkerResult copyByJob(const QByteArray &from, const QByteArray &to, sanecopy::ConflictPolicy policy);
    KIO::WorkerResult copyFailed(const SaneCopyKio::EngineOutcome &outcome, const QByteArray &to);

    QHash<uid_t, QString> users_;
    QHash<gid_t, QString> groups_;
    // KIO hands the worker one file at a time, each its own copy job or stream: on a vfat "flush" mount, where
    // each close of a written file sleeps 100 ms, a file's close goes on here while the next file is copied
    // (copy_job.h, stream_writer.h).
    std::shared_ptr<sanecopy::BackgroundCloser> closer_;
    // A dropped folder's small files, made durable together (FolderRun.h).
    std::unique_ptr<SaneCopyKio::FolderRun> run_;
    // If KIO ends the process, what the run holds is discarded: no part file stays on the stick.
    std::unique_ptr<SaneCopyKio::ExitCleanup> runCleanup_;
};
