// SPDX-License-Identifier: GPL-2.0-or-later
#include "Format.h"

#include <QLocale>
#include <QObject>
#include <cmath>

namespace SaneCopy {

QString formatBytes(double bytes)
{
    return QLocale().formattedDataSize(qint64(bytes), bytes < 10 * 1024.0 * 1024 * 1024 ? 1 : 2,
                                       QLocale::DataSizeIecFormat);
}

QString formatRate(double bytesPerSecond)
{
    if (bytesPerSecond <= 0)
        return QStringLiteral("—");
    // The unit sizes are shown in (IEC: MiB), as sanecp does, so "X MiB left at Y MiB/s" divides in the head.
    return QLocale().formattedDataSize(qint64(bytesPerSecond), 1, QLocale::DataSizeIecFormat) + QStringLiteral("/s");
}

QString formatEta(double seconds)
{
    if (seconds < 0 || !std::isfinite(seconds))
        return QStringLiteral("—");
    if (seconds < 1)
        return QObject::tr("a moment");
    const long s = std::lround(seconds);
    if (s < 60)
        return QStringLiteral("%1 s").arg(s);
    if (s < 3600)
        return QStringLiteral("%1:%2 min").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2 h").arg(s / 3600).arg((s / 60) % 60, 2, 10, QLatin1Char('0'));
}

QString formatSizeAndDate(qint64 size, const QDateTime &modified)
{
    return QObject::tr("%1, modified %2")
        .arg(formatBytes(double(size)), QLocale().toString(modified, QLocale::ShortFormat));
}

QString whichIsNewer(qint64 newSize, const QDateTime &newTime, qint64 oldSize, const QDateTime &oldTime)
{
    return newTime > oldTime.addSecs(2)   ? QObject::tr("The new one is newer.")
           : oldTime > newTime.addSecs(2) ? QObject::tr("The existing one is newer.")
           : newSize == oldSize           ? QObject::tr("Both have the same size and time.")
                                          : QObject::tr("Both have the same time.");
}

} // namespace SaneCopy
