// SPDX-License-Identifier: GPL-2.0-or-later
//
// A small live line chart: a few series over a sliding time window, with a y axis in one unit, nice tick
// values and a legend. Written by hand with QPainter because Qt Charts is deprecated since Qt 6.10, and its
// successor Qt Graphs has no widgets API; this is all the charting SaneCopy needs, in about 200 lines.
#pragma once

#include <QColor>
#include <QList>
#include <QPointF>
#include <QString>
#include <QWidget>

class QFontMetrics;
class QPainter;

namespace SaneCopy {

class TimeSeriesChart : public QWidget {
    Q_OBJECT
public:
    explicit TimeSeriesChart(const QString &title, const QString &unit, double unitScale, QWidget *parent = nullptr);

    // Adds a series; returns its index. Values are in base units (bytes, bytes/s): they are divided by
    // |unitScale| for display.
    int addSeries(const QString &name, const QColor &color);
    // Appends a sample at |time| seconds (any monotonic clock). Samples older than the window are dropped.
    void addSample(int series, double time, double value);
    // Renames a series (its legend and the text equivalent).
    void setSeriesName(int series, const QString &name);
    QString seriesName(int series) const { return series_.at(series).name; }
    void setWindow(double seconds) { window_ = seconds; }
    double window() const { return window_; }
    // The span the x axis shows: 30, 60 or 120 s (at most the window), as long as there are samples for, so a copy
    // that just started is not a line squeezed against the right edge.
    double span() const;
    // The y axis never goes below this (display units): idle noise stays small instead of being scaled into spikes.
    void setFloor(double displayUnits) { floor_ = displayUnits; }

    int sampleCount(int series) const { return int(series_.at(series).points.size()); }
    // The top of the y axis, in display units, for what is in the span now: a whole number of axisStep()s.
    double axisMaximum() const;
    // The distance between the y axis's grid lines: 1, 2 or 5 times a power of ten, for at most five of them.
    double axisStep() const;
    // Pure: that step for a largest value of |top|.
    static double niceStep(double top);

    // Pure: the smallest "nice" value (1, 2, 2.5 or 5 times a power of ten) at or above |value|.
    static double niceCeiling(double value);

    // What the chart shows now, in words, for a screen reader (also its accessible description): each series'
    // latest value, "Throughput: on the device 8.5 MiB/s, into the page cache 16.0 MiB/s".
    QString textEquivalent() const;

    QSize sizeHint() const override { return {360, 160}; }
    QSize minimumSizeHint() const override { return {200, 110}; }

protected:
    void paintEvent(QPaintEvent *) override;

private:
    double dataTop() const;
    QRect plotArea(const QFontMetrics &fm, int &labelRight) const;
    void drawYAxis(QPainter &p, const QRect &plot, int labelRight) const;
    void drawXAxis(QPainter &p, const QRect &plot) const;
    void drawSeries(QPainter &p, const QRect &plot) const;
    void drawLegend(QPainter &p, int x) const;
    struct Series {
        QString name;
        QColor color;
        QList<QPointF> points; // (time, value in display units)
    };
    QString title_;
    QString unit_;
    double unitScale_;
    double window_ = 120;
    double latest_ = 0;
    double first_ = -1; // time of the first sample
    double floor_ = 0;
    QList<Series> series_;
};

} // namespace SaneCopy
