// SPDX-License-Identifier: GPL-2.0-or-later
#include "Paths.h"

#include <QFile>

namespace SaneCopy {

QString displayPath(const QByteArray &path) { return QString::fromUtf8(path); }

QByteArray kdeSpellingToBytes(const QByteArray &utf8)
{
    // U+10FE00..U+10FE7F in UTF-8: F4 8F B8 80..BF, then F4 8F B9 80..BF.
    QByteArray out;
    out.reserve(utf8.size());
    for (qsizetype i = 0; i < utf8.size();) {
        const auto b = [&](qsizetype k) { return uchar(utf8[i + k]); };
        if (i + 3 < utf8.size() && b(0) == 0xF4 && b(1) == 0x8F && (b(2) == 0xB8 || b(2) == 0xB9) &&
            (b(3) & 0xC0) == 0x80) {
            out.append(char(0x80 + (((b(2) & 0x01) << 6) | (b(3) & 0x3F))));
            i += 4;
        } else {
            out.append(utf8[i]);
            ++i;
        }
    }
    return out;
}

namespace {
// "file:///a%20b", "file://localhost/a": the path's bytes; empty for anything not local.
QByteArray localPathFromUrl(const QByteArray &url)
{
    if (!url.startsWith("file:"))
        return {};
    QByteArray rest = url.mid(5);
    if (rest.startsWith("//")) {
        rest = rest.mid(2);
        const qsizetype slash = rest.indexOf('/');
        if (slash < 0)
            return {};
        const QByteArray host = rest.left(slash);
        if (!host.isEmpty() && host != "localhost")
            return {};
        rest = rest.mid(slash);
    }
    return QByteArray::fromPercentEncoding(rest);
}
} // namespace

QByteArray pathFromArgument(const QByteArray &arg, const QByteArray &cwd)
{
    QByteArray path = arg.startsWith("file:") ? localPathFromUrl(arg) : kdeSpellingToBytes(arg);
    if (path.isEmpty())
        return {};
    if (!path.startsWith('/'))
        path = (cwd.endsWith('/') ? cwd : cwd + '/') + path;
    while (path.size() > 1 && path.endsWith('/'))
        path.chop(1);
    return path;
}

PathList localPathsFromUriList(const QByteArray &uriList)
{
    PathList paths;
    const QList<QByteArray> lines = uriList.split('\n');
    for (QByteArray line : lines) {
        line = line.trimmed();
        if (line.isEmpty() || line.startsWith('#'))
            continue;
        const QByteArray path = localPathFromUrl(line);
        if (!path.isEmpty())
            paths << path;
    }
    return paths;
}

} // namespace SaneCopy
