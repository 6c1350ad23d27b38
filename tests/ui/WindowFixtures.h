// SPDX-License-Identifier: GPL-2.0-or-later
//
// What several window tests build alike: a plugged-in stick for the destination list, and a job's progress.
#pragma once

#include "DeviceList.h"
#include "EngineBridge.h"
#include "job_control.h"

namespace SaneCopy::Test {

// A removable stick mounted at |mountPoint|, as the device watcher would list it.
inline Device stickAt(const QString &mountPoint, const QString &name = QStringLiteral("STICK"))
{
    Device d;
    d.mountPoint = mountPoint;
    d.name = name;
    d.blockDevice = name.toLower() + QStringLiteral("1");
    d.removable = true;
    return d;
}

inline JobProgress progressOf(quint64 id, sanecopy::JobState state, qint64 total, qint64 durable, qint64 written,
                              double rate = 0, double eta = -1)
{
    JobProgress p;
    p.jobId = id;
    p.state = int(state);
    p.totalBytes = total;
    p.durableBytes = durable;
    p.writtenBytes = written;
    p.deviceRate = rate;
    p.etaSeconds = eta;
    p.filesTotal = 1;
    return p;
}

} // namespace SaneCopy::Test
