// SPDX-License-Identifier: GPL-2.0-or-later
//
// How numbers read in the GUI: sizes in binary units, rates per second, an ETA a person can read.
#pragma once

#include <QDateTime>
#include <QString>

namespace SaneCopy {

QString formatBytes(double bytes);
QString formatRate(double bytesPerSecond); // "38.1 MB/s": devices are sold in decimal megabytes
QString formatEta(double seconds);         // "about 2 min", "18 s", "—" when unknown
// "5.0 MiB, modified 23/11/2026 14:02": one side of a file that exists already.
QString formatSizeAndDate(qint64 size, const QDateTime &modified);
// Which of a new file and the one already there is newer, in words: what decides most answers. Times within 2 s
// (FAT's step) are the same time.
QString whichIsNewer(qint64 newSize, const QDateTime &newTime, qint64 oldSize, const QDateTime &oldTime);

} // namespace SaneCopy
