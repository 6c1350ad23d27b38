// SPDX-License-Identifier: GPL-2.0-or-later
#include "UrlMapping.h"

#include <QVector>

namespace SaneCopyKio {

namespace {

constexpr uint kLegacyFirst = 0x10FE00; // U+10FE00 + (byte - 0x80) stands for a raw byte >= 0x80
constexpr uint kLegacyLast = 0x10FE7F;

void appendUtf8(QByteArray &out, uint cp)
{
    if (cp < 0x80) {
        out.append(char(cp));
    } else if (cp < 0x800) {
        out.append(char(0xC0 | (cp >> 6)));
        out.append(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.append(char(0xE0 | (cp >> 12)));
        out.append(char(0x80 | ((cp >> 6) & 0x3F)));
        out.append(char(0x80 | (cp & 0x3F)));
    } else {
        out.append(char(0xF0 | (cp >> 18)));
        out.append(char(0x80 | ((cp >> 12) & 0x3F)));
        out.append(char(0x80 | ((cp >> 6) & 0x3F)));
        out.append(char(0x80 | (cp & 0x3F)));
    }
}

} // namespace

QString decodeFileName(const QByteArray &bytes)
{
    // Valid UTF-8 survives a round trip through QString unchanged; anything else (a stray byte, an overlong
    // form, a leading BOM that fromUtf8 drops) does not.
    QString text = QString::fromUtf8(bytes);
    if (text.toUtf8() == bytes)
        return text;
    QString out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const uchar b = uchar(c);
        if (b < 0x80)
            out.append(QLatin1Char(char(b)));
        else
            out.append(QChar(QChar::highSurrogate(kLegacyFirst + b - 0x80)))
                .append(QChar(QChar::lowSurrogate(kLegacyFirst + b - 0x80)));
    }
    return out;
}

QByteArray encodeFileName(const QString &name)
{
    QByteArray out;
    out.reserve(name.size() * 3);
    const QVector<uint> cps = name.toUcs4();
    for (const uint cp : cps) {
        if (cp >= kLegacyFirst && cp <= kLegacyLast)
            out.append(char(0x80 + (cp - kLegacyFirst)));
        else if (cp >= 0xD800 && cp <= 0xDFFF)
            out.append('?'); // a lone surrogate has no UTF-8 form
        else
            appendUtf8(out, cp);
    }
    return out;
}

QByteArray legacyBytesToRaw(const QByteArray &bytes)
{
    // U+10FE00..U+10FE7F in UTF-8: F4 8F B8 80..BF, then F4 8F B9 80..BF.
    QByteArray out;
    out.reserve(bytes.size());
    for (int i = 0; i < bytes.size();) {
        if (i + 3 < bytes.size() && uchar(bytes[i]) == 0xF4 && uchar(bytes[i + 1]) == 0x8F &&
            (uchar(bytes[i + 2]) == 0xB8 || uchar(bytes[i + 2]) == 0xB9) && (uchar(bytes[i + 3]) & 0xC0) == 0x80) {
            const uint low = ((uchar(bytes[i + 2]) & 0x01) << 6) | (uchar(bytes[i + 3]) & 0x3F);
            out.append(char(0x80 + low));
            i += 4;
        } else {
            out.append(bytes[i]);
            ++i;
        }
    }
    return out;
}

QString displayPath(const QByteArray &path)
{
    const QList<QByteArray> parts = path.split('/');
    QStringList out;
    out.reserve(parts.size());
    for (const QByteArray &p : parts)
        out.append(decodeFileName(p));
    return out.join(QLatin1Char('/'));
}

std::optional<QByteArray> localPathFromUrl(const QUrl &url)
{
    if (!url.isValid())
        return std::nullopt;
    const QString scheme = url.scheme();
    if (scheme != QLatin1String(kScheme) && scheme != QLatin1String("file"))
        return std::nullopt;
    const QString host = url.host();
    if (!host.isEmpty() && host != QLatin1String("localhost"))
        return std::nullopt;
    // A '?' or '#' that reached us unencoded split the path: whatever was meant, it is not the whole name.
    if (url.hasQuery() || url.hasFragment())
        return std::nullopt;
    // FullyEncoded keeps bytes that are not UTF-8 as %XX, so decoding it gives the path's exact bytes.
    QByteArray path = legacyBytesToRaw(QByteArray::fromPercentEncoding(url.path(QUrl::FullyEncoded).toLatin1()));
    if (path.isEmpty())
        path = "/";
    if (path.front() != '/' || path.contains('\0'))
        return std::nullopt;
    while (path.size() > 1 && path.endsWith('/'))
        path.chop(1);
    return path;
}

std::optional<DevicePath> devicePathFromUrl(const QUrl &url)
{
    if (!url.isValid() || url.scheme() != QLatin1String(kScheme) || url.host() != QLatin1String(kDevicesHost))
        return std::nullopt;
    if (url.hasQuery() || url.hasFragment())
        return std::nullopt;
    const QByteArray path = legacyBytesToRaw(QByteArray::fromPercentEncoding(url.path(QUrl::FullyEncoded).toLatin1()));
    if (path.contains('\0') || (!path.isEmpty() && path.front() != '/'))
        return std::nullopt;
    QList<QByteArray> parts;
    const QList<QByteArray> pieces = path.split('/');
    for (const QByteArray &part : pieces) {
        if (part.isEmpty())
            continue;
        // The device's name is the boundary: "STICK/../other" must not climb out of the stick.
        if (part == "." || part == "..")
            return std::nullopt;
        parts.append(part);
    }
    DevicePath out;
    if (parts.isEmpty())
        return out;
    out.device = parts.takeFirst();
    for (const QByteArray &part : parts)
        out.rest.append('/').append(part);
    return out;
}

QUrl devicesUrl(const QByteArray &device)
{
    // Built the way KIO builds a listed item's URL (the folder's URL plus its UDS_NAME), so the URL of a device's
    // folder sent in a KDirNotify signal is the very URL Dolphin holds for it: QUrl keeps "%28" and "(" apart.
    QUrl url;
    url.setScheme(QLatin1String(kScheme));
    url.setHost(QLatin1String(kDevicesHost));
    url.setPath(QLatin1Char('/') + decodeFileName(device));
    return url;
}

QUrl urlFromLocalPath(const QByteArray &path, const QString &scheme)
{
    // Plain QByteArray appends: with QStringBuilder on (KDE's compiler settings) the concatenation would be a
    // builder, which Qt 6.8's QUrl::fromEncoded(QByteArrayView) does not take.
    QByteArray encoded = scheme.toLatin1();
    encoded.append("://").append(path.toPercentEncoding("/"));
    return QUrl::fromEncoded(encoded, QUrl::StrictMode);
}

} // namespace SaneCopyKio
