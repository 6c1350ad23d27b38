// SPDX-License-Identifier: GPL-2.0-or-later
//
// A progress bar with two segments: bytes on the device (solid), and bytes handed to the kernel but not yet on
// the device (lighter). QProgressBar has one value only, and the gap between the two is what SaneCopy is about.
#pragma once

#include <QWidget>

namespace SaneCopy {

class DurableProgressBar : public QWidget {
    Q_OBJECT
public:
    explicit DurableProgressBar(QWidget *parent = nullptr);

    void setFractions(double durable, double written);
    // A job that ended without finishing (cancelled, its device removed): the bar says so in words, on a
    // neutral track, instead of a coloured partial fill that reads as "still going". Empty: progress as usual.
    void setOutcome(const QString &outcome);
    QString outcome() const { return outcome_; }
    // Onto a network share: the bar's words for a screen reader say "on the share", not "on the device".
    void setShare(bool share);
    double durable() const { return durable_; }
    double written() const { return written_; }
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent *) override;

private:
    double durable_ = 0;
    double written_ = 0;
    QString outcome_;
    bool share_ = false;
    void describe();
};

} // namespace SaneCopy
