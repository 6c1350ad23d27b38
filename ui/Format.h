// SPDX-License-Identifier: GPL-2.0-or-later
//
// How numbers read in the GUI: sizes in binary units, rates per second, an ETA a person can read.
#pragma once

#include <QString>

namespace SaneCopy {

QString formatBytes(double bytes);
QString formatRate(double bytesPerSecond);   // "38.1 MB/s": devices are sold in decimal megabytes
QString formatEta(double seconds);           // "about 2 min", "18 s", "—" when unknown

} // namespace SaneCopy
