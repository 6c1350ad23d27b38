// SPDX-License-Identifier: GPL-2.0-or-later
//
// From URLs to local paths and back, as pure functions: sanecopy:///abs/path is the local path /abs/path.
//
// Paths are bytes, not text. Two spellings of a byte that is not UTF-8 reach the worker, and both must find the
// same file:
//   - percent-encoded in the URL ("%FF"), as kioclient5 and the service-menu helper send it;
//   - as KDE spells file names that are not UTF-8: KF5's file worker decodes such a name byte by byte, each
//     byte >= 0x80 becoming U+10FE00 + (byte - 0x80), so a name Dolphin got from a listing comes back in a URL
//     as those characters.
// Names this worker lists are spelled the KDE way too, so Dolphin builds child URLs that map back to the
// same bytes.
#pragma once

#include <QByteArray>
#include <QString>
#include <QUrl>

#include <optional>

namespace SaneCopyKio {

inline constexpr char kScheme[] = "sanecopy";
// sanecopy://devices/ lists the removable devices mounted now, one folder each; sanecopy://devices/STICK/a/b is
// a/b on the device named STICK. A host of its own keeps every sanecopy:///abs/path meaning what it did.
inline constexpr char kDevicesHost[] = "devices";

// A name (or path) as KDE spells it: UTF-8 when it is valid UTF-8, else byte by byte with U+10FE00 + (byte - 0x80)
// for the bytes >= 0x80.
QString decodeFileName(const QByteArray &bytes);

// The inverse of decodeFileName: UTF-8, except U+10FE00..U+10FE7F, each of which stands for one raw byte.
QByteArray encodeFileName(const QString &name);

// Replaces the UTF-8 encodings of U+10FE00..U+10FE7F in |bytes| by the raw bytes they stand for. Applied to a
// path as it came in argv from a program that spelled a file name the KDE way.
QByteArray legacyBytesToRaw(const QByteArray &bytes);

// A path per component through decodeFileName, for messages: "/media/stick/caf\u00e9" stays readable even
// when another component is not UTF-8.
QString displayPath(const QByteArray &path);

// The local path for a sanecopy: or file: URL: absolute, without a trailing slash (except "/"), as raw bytes.
// nullopt for any other scheme, a host other than "" or "localhost", a relative path, or a NUL byte.
std::optional<QByteArray> localPathFromUrl(const QUrl &url);

// The URL for a local path (raw bytes, absolute) under |scheme|: every byte outside the unreserved set and '/'
// percent-encoded, so nothing in a name (' ', '#', '?', '%', a newline, a byte that is not UTF-8) is read as URL
// syntax.
QUrl urlFromLocalPath(const QByteArray &path, const QString &scheme = QString::fromLatin1(kScheme));

// Where a sanecopy://devices/ URL points: |device| is the device's folder name as bytes (empty for the list
// itself), |rest| the path below the device's root ("" or "/a/b", bytes, no trailing slash).
struct DevicePath {
    QByteArray device;
    QByteArray rest;
};

// nullopt for any URL not under sanecopy://devices/, and for one whose path holds "." or ".." components, a NUL
// byte, a query or a fragment.
std::optional<DevicePath> devicePathFromUrl(const QUrl &url);

// sanecopy://devices/ (for an empty |device|), or the folder |device| in it, as KIO spells a listed item's URL.
QUrl devicesUrl(const QByteArray &device = QByteArray());

} // namespace SaneCopyKio
