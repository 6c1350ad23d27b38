// SPDX-License-Identifier: GPL-2.0-or-later
#include "TimeSeriesChart.h"

#include <QAccessibleWidget>
#include <QLocale>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace SaneCopy {

namespace {

// Screen readers announce the chart as a chart (QAccessible::Chart), not as a blank panel; its description is
// the text equivalent.
QAccessibleInterface *chartAccessible(const QString &className, QObject *object)
{
    if (className == QLatin1String("SaneCopy::TimeSeriesChart") && object && object->isWidgetType())
        return new QAccessibleWidget(static_cast<QWidget *>(object), QAccessible::Chart);
    return nullptr;
}

} // namespace

TimeSeriesChart::TimeSeriesChart(const QString &title, const QString &unit, double unitScale, QWidget *parent)
    : QWidget(parent), title_(title), unit_(unit), unitScale_(unitScale)
{
    static const bool installed = (QAccessible::installFactory(chartAccessible), true);
    Q_UNUSED(installed)
    setAccessibleName(title);
    setAccessibleDescription(textEquivalent());
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QString TimeSeriesChart::textEquivalent() const
{
    QStringList parts;
    for (const Series &s : series_)
        parts << (s.points.isEmpty()
                      ? tr("%1 no value yet").arg(s.name)
                      : tr("%1 %2 %3").arg(s.name, QLocale().toString(s.points.constLast().y(), 'f', 1), unit_));
    return parts.isEmpty() ? title_ : tr("%1: %2").arg(title_, parts.join(QLatin1String(", ")));
}

int TimeSeriesChart::addSeries(const QString &name, const QColor &color)
{
    series_.append({name, color, {}});
    setAccessibleDescription(textEquivalent());
    return int(series_.size()) - 1;
}

void TimeSeriesChart::setSeriesName(int series, const QString &name)
{
    if (series_[series].name == name)
        return;
    series_[series].name = name;
    setAccessibleDescription(textEquivalent());
    update();
}

void TimeSeriesChart::addSample(int series, double time, double value)
{
    if (series < 0 || series >= series_.size())
        return;
    latest_ = std::max(latest_, time);
    if (first_ < 0 || time < first_)
        first_ = time;
    series_[series].points.append({time, value / unitScale_});
    for (Series &s : series_) {
        // Keep one point just outside the window so the line enters from the left edge.
        while (s.points.size() > 2 && s.points.at(1).x() < latest_ - window_)
            s.points.removeFirst();
    }
    // Said again only when it reads differently, so a screen reader is not told the same numbers each tick.
    if (const QString text = textEquivalent(); text != accessibleDescription())
        setAccessibleDescription(text);
    update();
}

double TimeSeriesChart::niceCeiling(double value)
{
    if (!(value > 0))
        return 1;
    const double magnitude = std::pow(10.0, std::floor(std::log10(value)));
    for (double step : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        if (value <= step * magnitude * (1 + 1e-9))
            return step * magnitude;
    }
    return 10 * magnitude;
}

double TimeSeriesChart::niceStep(double top)
{
    if (!(top > 0))
        return 1;
    const double rough = top / 5; // at most five steps
    const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
    for (double step : {1.0, 2.0, 5.0, 10.0}) {
        if (rough <= step * magnitude * (1 + 1e-9))
            return step * magnitude;
    }
    return 10 * magnitude;
}

double TimeSeriesChart::span() const
{
    const double have = first_ < 0 ? 0 : latest_ - first_;
    for (double s : {30.0, 60.0})
        if (have <= s && s < window_)
            return s;
    return window_;
}

// The largest value in the span, or the floor.
double TimeSeriesChart::dataTop() const
{
    double top = floor_;
    for (const Series &s : series_)
        for (const QPointF &pt : s.points)
            if (pt.x() >= latest_ - span())
                top = std::max(top, pt.y());
    return top;
}

double TimeSeriesChart::axisStep() const
{
    const double top = dataTop();
    return niceStep(top > 0 ? top : 1);
}

double TimeSeriesChart::axisMaximum() const
{
    const double step = axisStep();
    return std::max(step, std::ceil(dataTop() / step - 1e-9) * step);
}

// Where the plot goes: right of the widest y label, below the title, above the x labels and the legend. Empty
// when the widget is too small to draw one.
QRect TimeSeriesChart::plotArea(const QFontMetrics &fm, int &labelRight) const
{
    const double step = axisStep();
    const int steps = int(std::lround(axisMaximum() / step));
    int labelWidth = 0;
    for (int i = 0; i <= steps; ++i)
        labelWidth = std::max(labelWidth, fm.horizontalAdvance(QString::number(step * i, 'g', 4)));
    labelRight = labelWidth + 10;
    const int titleHeight = fm.height() + 4;
    const int legendHeight = fm.height() + 4;
    // Half a line of room above the plot, so the top y label never runs into the title.
    const int plotTop = titleHeight + fm.height() / 2 + 2;
    const QRect plot(labelRight, plotTop, width() - labelRight - 8,
                     height() - plotTop - legendHeight - fm.height() - 6);
    return plot.width() < 20 || plot.height() < 20 ? QRect() : plot;
}

void TimeSeriesChart::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm = fontMetrics();
    p.fillRect(rect(), palette().color(QPalette::Base));
    int labelRight = 0;
    const QRect plot = plotArea(fm, labelRight);
    if (plot.isNull())
        return;
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, 2, width() - 8, fm.height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("%1 (%2)").arg(title_, unit_));
    drawYAxis(p, plot, labelRight);
    drawXAxis(p, plot);
    p.setClipRect(plot.adjusted(-1, -1, 1, 1));
    drawSeries(p, plot);
    p.setClipping(false);
    drawLegend(p, plot.left());
}

// Grid and y labels: round steps up to the top.
void TimeSeriesChart::drawYAxis(QPainter &p, const QRect &plot, int labelRight) const
{
    const QFontMetrics fm = fontMetrics();
    const double top = axisMaximum(), step = axisStep();
    const int steps = int(std::lround(top / step));
    QColor grid = palette().color(QPalette::Mid);
    grid.setAlphaF(0.5);
    for (int i = 0; i <= steps; ++i) {
        const double v = step * i;
        const int y = plot.bottom() - int(plot.height() * v / top);
        p.setPen(grid);
        p.drawLine(plot.left(), y, plot.right(), y);
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRect(0, y - fm.height() / 2, labelRight - 4, fm.height()), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(v, 'g', 4));
    }
}

// X labels: seconds ago, every 10, 15 or 30 s.
void TimeSeriesChart::drawXAxis(QPainter &p, const QRect &plot) const
{
    const QFontMetrics fm = fontMetrics();
    const double shown = span();
    const int every = shown <= 30 ? 10 : shown <= 60 ? 15 : 30;
    for (int ago = int(shown) / every * every; ago >= 0; ago -= every) {
        const int x = plot.left() + int(plot.width() * (1 - ago / shown));
        const QString label = ago == 0 ? tr("now") : tr("-%1 s").arg(ago);
        const int w = fm.horizontalAdvance(label);
        // Centred under its tick, but kept inside the widget at both ends.
        const int lx = std::clamp(x - w / 2, 2, width() - w - 2);
        p.drawText(QRect(lx, plot.bottom() + 2, w, fm.height()), Qt::AlignLeft | Qt::AlignTop, label);
    }
}

void TimeSeriesChart::drawSeries(QPainter &p, const QRect &plot) const
{
    const double top = axisMaximum(), shown = span();
    // The first series is the one that matters most: drawn last, on top, and a little wider.
    for (auto it = series_.crbegin(); it != series_.crend(); ++it) {
        const Series &s = *it;
        if (s.points.isEmpty())
            continue;
        QPainterPath path;
        bool first = true;
        for (const QPointF &pt : s.points) {
            const double x = plot.left() + plot.width() * (1 - (latest_ - pt.x()) / shown);
            const double y = plot.bottom() - plot.height() * std::min(pt.y() / top, 1.0);
            if (first)
                path.moveTo(x, y);
            else
                path.lineTo(x, y);
            first = false;
        }
        p.setPen(QPen(s.color, it == std::prev(series_.crend()) ? 2.5 : 1.5));
        p.drawPath(path);
    }
}

void TimeSeriesChart::drawLegend(QPainter &p, int x) const
{
    const QFontMetrics fm = fontMetrics();
    const int y = height() - (fm.height() + 4) + 2;
    for (const Series &s : series_) {
        p.fillRect(QRect(x, y + fm.height() / 2 - 2, 14, 4), s.color);
        x += 18;
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QPoint(x, y + fm.ascent()), s.name);
        x += fm.horizontalAdvance(s.name) + 16;
    }
}

} // namespace SaneCopy
