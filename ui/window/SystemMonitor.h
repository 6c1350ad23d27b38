// SPDX-License-Identifier: GPL-2.0-or-later
//
// Feeds the two charts twice a second: the devices' true rate (durable bytes/s, summed over the running jobs)
// against the rate the page cache accepts data (written bytes/s), and the system's Dirty + Writeback from
// /proc/meminfo against this copy's own dirty pages (cachestat, where the kernel has it).
#pragma once

#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QTimer>

namespace SaneCopy {

class JobModel;
class TimeSeriesChart;

class SystemMonitor : public QObject {
    Q_OBJECT
public:
    SystemMonitor(JobModel *jobs, TimeSeriesChart *throughput, TimeSeriesChart *dirty, QObject *parent = nullptr);

    void setInterval(int ms) { timer_.setInterval(ms); }

public Q_SLOTS:
    void sample();

private:
    void nameDurableSeries();
    JobModel *jobs_;
    TimeSeriesChart *throughput_;
    TimeSeriesChart *dirty_;
    QTimer timer_;
    QElapsedTimer clock_;
    struct Point {
        double time;
        qint64 durable;
        qint64 written;
    };
    // Rates are taken over a sliding two seconds: durable bytes advance a window at a time (a few MiB every
    // tenth of a second), so a half-second difference alone would saw up and down around the true rate.
    QList<Point> history_;
    int durableSeries_, writtenSeries_, systemDirtySeries_, ownDirtySeries_;
};

} // namespace SaneCopy
