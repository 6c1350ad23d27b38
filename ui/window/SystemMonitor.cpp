// SPDX-License-Identifier: GPL-2.0-or-later
#include "SystemMonitor.h"

#include "JobModel.h"
#include "TimeSeriesChart.h"
#include "sysmon.h"

#include <algorithm>

namespace SaneCopy {

SystemMonitor::SystemMonitor(JobModel *jobs, TimeSeriesChart *throughput, TimeSeriesChart *dirty, QObject *parent)
    : QObject(parent), jobs_(jobs), throughput_(throughput), dirty_(dirty)
{
    durableSeries_ = throughput_->addSeries(tr("on the device"), QColor(0x2e, 0x86, 0x4b));
    writtenSeries_ = throughput_->addSeries(tr("into the page cache"), QColor(0xe0, 0x8a, 0x1e));
    systemDirtySeries_ = dirty_->addSeries(tr("system Dirty + Writeback"), QColor(0xc0, 0x39, 0x2b));
    ownDirtySeries_ = dirty_->addSeries(tr("this copy"), QColor(0x29, 0x80, 0xb9));
    clock_.start();
    timer_.setInterval(500);
    connect(&timer_, &QTimer::timeout, this, &SystemMonitor::sample);
    timer_.start();
}

// The durable rate's name says where those bytes are: a NAS is no device to the user (JobModel's rows say "on the
// share" too). With nothing going on, the last name stays, with the line it names.
void SystemMonitor::nameDurableSeries()
{
    switch (jobs_->unfinishedDestinations()) {
    case JobModel::Destinations::None:
        return;
    case JobModel::Destinations::Devices:
        throughput_->setSeriesName(durableSeries_, tr("on the device"));
        return;
    case JobModel::Destinations::Shares:
        throughput_->setSeriesName(durableSeries_, tr("on the share"));
        return;
    case JobModel::Destinations::Both:
        throughput_->setSeriesName(durableSeries_, tr("on the devices and shares"));
        return;
    }
}

void SystemMonitor::sample()
{
    nameDurableSeries();
    const double now = clock_.elapsed() / 1000.0;
    const qint64 durable = jobs_->totalDurableBytes();
    const qint64 written = jobs_->totalWrittenBytes();
    history_.append({now, durable, written});
    while (history_.size() > 2 && history_.at(1).time <= now - 2.0)
        history_.removeFirst();
    const Point &from = history_.first();
    if (now > from.time) {
        const double dt = now - from.time;
        // A new job only adds to the sums; clamp anyway, a rate is never negative.
        throughput_->addSample(durableSeries_, now, std::max(0.0, double(durable - from.durable) / dt));
        throughput_->addSample(writtenSeries_, now, std::max(0.0, double(written - from.written) / dt));
    }

    if (auto mem = sanecopy::read_meminfo())
        dirty_->addSample(systemDirtySeries_, now, double(mem->dirty_bytes + mem->writeback_bytes));
    const qint64 own = jobs_->ownDirtyBytes();
    dirty_->addSample(ownDirtySeries_, now, own < 0 ? 0.0 : double(own));
}

} // namespace SaneCopy
