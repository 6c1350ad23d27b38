// SPDX-License-Identifier: GPL-2.0-or-later
#include "SaneCopyWorker.h"
#include "WorkerSupport.h"

#include "Devices.h"
#include "EngineJob.h"
#include "ExitCleanup.h"
#include "FolderRun.h"
#include "SaneCopyLogging.h"
#include "UrlMapping.h"

#include "background_closer.h"
#include "copy_job.h"
#include "device_probe.h"
#include "fd.h"
#include "stream_writer.h"
#include "sys.h"

#include <QCoreApplication>
#include <KIO/Global>
#include <KLocalizedString>

#include <QDateTime>
#include <QMimeDatabase>
#include <QUrl>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <vector>

using namespace SaneCopyKio;
using sanecopy::sys;
using sanecopy::UniqueFd;

// The plugin's metadata for KIO: the protocol and what it can do (sanecopy.json). The worker itself runs from
// kdemain() below.
class KIOPluginForMetaData : public QObject {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.kde.kio.worker.sanecopy" FILE "sanecopy.json")
};

extern "C" Q_DECL_EXPORT int kdemain(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    app.setApplicationName(QStringLiteral("kio_sanecopy"));
    if (argc != 4) {
        std::fprintf(stderr, "Usage: kio_sanecopy protocol domain-socket1 domain-socket2\n");
        return -1;
    }
    ExitCleanup::installHook();
    sanecopy::raise_open_file_limit(); // batches of small files hold a descriptor each (engine/base/sys.h)
    SaneCopyWorker worker(argv[2], argv[3]);
    worker.dispatchLoop();
    return 0;
}

SaneCopyWorker::SaneCopyWorker(const QByteArray &poolSocket, const QByteArray &appSocket)
    : KIO::WorkerBase(QByteArrayLiteral("sanecopy"), poolSocket, appSocket)
      // Files come one at a time, a copy of a small one taking tens of milliseconds: a few closes overlap at most.
      ,
      closer_(std::make_shared<sanecopy::BackgroundCloser>(16)),
      run_(std::make_unique<FolderRun>(closer_)),
      runCleanup_(std::make_unique<ExitCleanup>([this] { run_->shutdown(); }))
{}

SaneCopyWorker::~SaneCopyWorker() = default;

KIO::WorkerResult SaneCopyWorker::settleRun()
{
    const sanecopy::Status s = run_->settle();
    if (s.ok())
        return KIO::WorkerResult::pass();
    return failWithStatus(FileOp::Write, s, fromStd(s.path()));
}

KIO::WorkerResult SaneCopyWorker::failWith(FileOp op, int err, const QByteArray &path)
{
    const KioError e = kioErrorForStatus(op, err, displayPath(path), QString(), err == EEXIST && isDir(path));
    qCDebug(SANECOPY_KIO) << "error" << e.code << e.text << "errno" << err;
    return KIO::WorkerResult::fail(e.code, e.text);
}

KIO::WorkerResult SaneCopyWorker::failExists(const QByteArray &path) { return failWith(FileOp::Write, EEXIST, path); }

SaneCopyWorker::Resolved SaneCopyWorker::resolve(const QUrl &url, bool creating)
{
    Resolved r;
    const auto onDevice = devicePathFromUrl(url);
    if (!onDevice) {
        if (std::optional<QByteArray> local = localPathFromUrl(url))
            r.path = *local;
        else
            r.error = malformed(url);
        return r;
    }
    const auto notHere = [] {
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED,
                                       i18n("Safe Copy lists the devices that are plugged in. Open one of them, "
                                            "or drop the files onto it."));
    };
    if (onDevice->device.isEmpty()) {
        r.error = notHere();
        return r;
    }
    for (const sanecopy::RemovableMount &d : removableDevicesNow()) {
        if (fromStd(d.name) == onDevice->device) {
            r.path = fromStd(d.mount_point) + onDevice->rest;
            r.deviceRoot = onDevice->rest.isEmpty();
            return r;
        }
    }
    // Pulled out or unmounted since the list was shown; or a new name beside the devices.
    r.error = creating && onDevice->rest.isEmpty()
                  ? notHere()
                  : KIO::WorkerResult::fail(KIO::ERR_DOES_NOT_EXIST, url.toDisplayString());
    return r;
}

SaneCopyWorker::Resolved SaneCopyWorker::settleAndResolve(const QUrl &url, bool creating)
{
    if (KIO::WorkerResult settled = settleRun(); !settled.success()) {
        Resolved r;
        r.error = settled;
        return r;
    }
    return resolve(url, creating);
}

SaneCopyWorker::ResolvedPair SaneCopyWorker::resolvePair(const QUrl &src, const QUrl &dest, FileOp op)
{
    ResolvedPair pair;
    const Resolved from = resolve(src);
    const Resolved to = from.error ? Resolved() : resolve(dest, true);
    if (from.error || to.error) {
        pair.error = from.error ? from.error : to.error;
        return pair;
    }
    if (from.deviceRoot || to.deviceRoot) {
        pair.error = deviceIsNoFile();
        return pair;
    }
    pair.from = from.path;
    pair.to = to.path;
    const int r = op == FileOp::Rename ? ::lstat(pair.from.constData(), &pair.source)
                                       : ::stat(pair.from.constData(), &pair.source);
    if (r < 0)
        pair.error = failWith(op, errno, pair.from);
    return pair;
}

KIO::WorkerResult SaneCopyWorker::deviceIsNoFile()
{
    return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED,
                                   i18n("A device in Safe Copy can't be deleted, moved or renamed here. Unmount or "
                                        "eject it from the Places panel; rename its files inside it."));
}

KIO::WorkerResult SaneCopyWorker::failWithStatus(FileOp op, const sanecopy::Status &s, const QByteArray &path)
{
    // A pulled stick: KIO's own templates ("Could not write to file %1") would hide what happened.
    if (s.device_removed())
        return KIO::WorkerResult::fail(KIO::ERR_WORKER_DEFINED, QString::fromStdString(s.message()));
    const KioError e = kioErrorForStatus(op, s.err(), displayPath(path), QString::fromStdString(s.detail()));
    return KIO::WorkerResult::fail(e.code, e.text);
}

#include "SaneCopyWorker.moc"
