// SPDX-License-Identifier: GPL-2.0-or-later
//
// File names are bytes on Linux, not text: any byte but '/' and NUL, valid UTF-8 or not. QString can't hold a
// name that isn't UTF-8 without losing it, so the GUI keeps every path it copies as QByteArray, exactly as the
// kernel spells it, and turns it into text only to show it.
#pragma once

#include <QByteArray>
#include <QList>
#include <QString>

namespace SaneCopy {

using PathList = QList<QByteArray>;

// For showing only: invalid UTF-8 shows as U+FFFD.
QString displayPath(const QByteArray &path);
// A path as the desktop hands it over, made absolute against |cwd|: plain bytes, a file: URL (percent-encoded
// bytes), or KDE's spelling of a non-UTF-8 name (each byte 0x80..0xFF as U+10FE00..U+10FE7F, which is what a
// service menu's %F passes).
QByteArray pathFromArgument(const QByteArray &arg, const QByteArray &cwd);
// The local paths of a text/uri-list drop, decoded to bytes. Remote URLs and comments are left out.
PathList localPathsFromUriList(const QByteArray &uriList);
// KDE's spelling (U+10FE00 + byte - 0x80, as UTF-8) back to the bytes it stands for. Pure.
QByteArray kdeSpellingToBytes(const QByteArray &utf8);

} // namespace SaneCopy
