// SPDX-License-Identifier: GPL-2.0-or-later
#include "DurableProgressBar.h"

#include <QPainter>
#include <QPainterPath>
#include <QStyleOption>
#include <algorithm>
#include <cmath>

namespace SaneCopy {

DurableProgressBar::DurableProgressBar(QWidget *parent) : QWidget(parent)
{
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    describe();
}

void DurableProgressBar::setShare(bool share)
{
    if (share == share_)
        return;
    share_ = share;
    describe();
}

void DurableProgressBar::describe()
{
    setAccessibleName(share_ ? tr("Progress on the share") : tr("Progress on the device"));
    const int percent = int(std::floor(durable_ * 100));
    if (!outcome_.isEmpty())
        setAccessibleDescription(outcome_);
    else
        setAccessibleDescription(share_ ? tr("%1 % on the share").arg(percent) : tr("%1 % on the device").arg(percent));
}

void DurableProgressBar::setFractions(double durable, double written)
{
    durable = std::clamp(durable, 0.0, 1.0);
    written = std::clamp(std::max(written, durable), 0.0, 1.0);
    if (durable == durable_ && written == written_)
        return;
    durable_ = durable;
    written_ = written;
    describe();
    update();
}

void DurableProgressBar::setOutcome(const QString &outcome)
{
    if (outcome == outcome_)
        return;
    outcome_ = outcome;
    describe();
    update();
}

QSize DurableProgressBar::sizeHint() const { return {240, fontMetrics().height() + 8}; }
QSize DurableProgressBar::minimumSizeHint() const { return {60, fontMetrics().height() + 4}; }

void DurableProgressBar::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF r = QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5);
    const qreal radius = 3;
    const QPalette &pal = palette();
    QPainterPath frame;
    frame.addRoundedRect(r, radius, radius);
    p.fillPath(frame, pal.color(QPalette::Base));
    if (!outcome_.isEmpty()) {
        p.fillPath(frame, pal.color(QPalette::Window));
        p.setPen(pal.color(QPalette::Mid));
        p.drawPath(frame);
        p.setPen(pal.color(QPalette::Text));
        p.drawText(rect(), Qt::AlignCenter, outcome_);
        return;
    }
    p.setClipPath(frame);
    const QColor solid = pal.color(QPalette::Highlight);
    QColor light = solid;
    light.setAlphaF(0.35);
    p.fillRect(QRectF(r.left(), r.top(), r.width() * written_, r.height()), light);
    p.fillRect(QRectF(r.left(), r.top(), r.width() * durable_, r.height()), solid);
    p.setClipping(false);
    p.setPen(pal.color(QPalette::Mid));
    p.drawPath(frame);
    // The percentage is of durable bytes, drawn in a colour that reads on both segments.
    const QString text = QStringLiteral("%1 %").arg(int(std::floor(durable_ * 100)));
    p.setPen(durable_ > 0.5 ? pal.color(QPalette::HighlightedText) : pal.color(QPalette::Text));
    p.drawText(rect(), Qt::AlignCenter, text);
}

} // namespace SaneCopy
