// SPDX-License-Identifier: GPL-2.0-or-later
#include "WorkerSupport.h"

#include "fd.h"
#include "sys.h"

#include <KIO/Global>

#include <fcntl.h>

namespace SaneCopyKio {

using sanecopy::sys;
using sanecopy::UniqueFd;

KIO::WorkerResult malformed(const QUrl &url)
{
    return KIO::WorkerResult::fail(KIO::ERR_MALFORMED_URL, url.toDisplayString());
}

std::string toStd(const QByteArray &bytes) { return std::string(bytes.constData(), std::size_t(bytes.size())); }
QByteArray fromStd(const std::string &s) { return QByteArray(s.data(), int(s.size())); }

std::pair<QByteArray, QByteArray> splitPath(const QByteArray &path)
{
    const int slash = path.lastIndexOf('/');
    if (slash <= 0)
        return {QByteArrayLiteral("/"), path.mid(slash + 1)};
    return {path.left(slash), path.mid(slash + 1)};
}

void syncParent(const QByteArray &path)
{
    const QByteArray parent = splitPath(path).first;
    UniqueFd dir(sys().openat(AT_FDCWD, parent.constData(), O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
    if (dir)
        sys().fsync(dir.get());
}

bool isDir(const QByteArray &path)
{
    struct stat st {};
    return ::lstat(path.constData(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct timespec toTimespec(const QDateTime &t)
{
    const qint64 ms = t.toMSecsSinceEpoch();
    struct timespec ts {};
    ts.tv_sec = time_t(ms / 1000);
    ts.tv_nsec = long(ms % 1000) * 1000000L;
    if (ts.tv_nsec < 0) {
        ts.tv_sec -= 1;
        ts.tv_nsec += 1000000000L;
    }
    return ts;
}

} // namespace SaneCopyKio
