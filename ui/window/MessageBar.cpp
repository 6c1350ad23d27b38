// SPDX-License-Identifier: GPL-2.0-or-later
#include "MessageBar.h"

#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace SaneCopy {

MessageBar::MessageBar(QWidget *parent) : QFrame(parent)
{
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    // The highlight colour, faint: the same in light and dark themes, and apart from the group boxes around it.
    QPalette p = palette();
    QColor tint = p.color(QPalette::Highlight);
    tint.setAlphaF(0.15);
    p.setColor(QPalette::Window, tint);
    setPalette(p);
    setAccessibleName(tr("Question"));

    auto *row = new QHBoxLayout(this);
    auto *icon = new QLabel(this);
    const int size = style()->pixelMetric(QStyle::PM_SmallIconSize) * 2;
    icon->setPixmap(
        QIcon::fromTheme(QStringLiteral("dialog-question"), style()->standardIcon(QStyle::SP_MessageBoxQuestion))
            .pixmap(size, size));
    icon->setAlignment(Qt::AlignTop);
    row->addWidget(icon);
    auto *words = new QVBoxLayout;
    text_ = new QLabel(this);
    text_->setWordWrap(true);
    text_->setTextFormat(Qt::PlainText);
    details_ = new QLabel(this);
    details_->setWordWrap(true);
    details_->setTextFormat(Qt::PlainText);
    QFont small = details_->font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    details_->setFont(small);
    words->addWidget(text_);
    words->addWidget(details_);
    row->addLayout(words, 1);
    buttons_ = new QHBoxLayout;
    row->addLayout(buttons_);
    auto *close = new QPushButton(
        QIcon::fromTheme(QStringLiteral("dialog-close"), style()->standardIcon(QStyle::SP_TitleBarCloseButton)),
        QString(), this);
    close->setFlat(true);
    close->setToolTip(tr("Close"));
    close->setAccessibleName(tr("Close this question"));
    connect(close, &QPushButton::clicked, this, [this] {
        if (!pending_.isEmpty())
            answered(pending_.first().dismissed);
    });
    row->addWidget(close, 0, Qt::AlignTop);
    hide();
}

void MessageBar::ask(Question question)
{
    pending_.append(std::move(question));
    if (pending_.size() == 1)
        showNext();
}

void MessageBar::showNext()
{
    while (QLayoutItem *item = buttons_->takeAt(0)) {
        item->widget()->hide();
        item->widget()->deleteLater(); // it may be the button whose click is running
        delete item;
    }
    if (pending_.isEmpty()) {
        hide();
        return;
    }
    const Question &q = pending_.first();
    text_->setText(q.text);
    details_->setText(q.details);
    details_->setVisible(!q.details.isEmpty());
    setAccessibleDescription(q.details.isEmpty() ? q.text : q.text + QLatin1Char('\n') + q.details);
    for (const Action &a : q.actions) {
        auto *button = new QPushButton(a.label, this);
        button->setDefault(buttons_->count() == 0);
        connect(button, &QPushButton::clicked, this, [this, run = a.run] { answered(run); });
        buttons_->addWidget(button);
    }
    show();
}

// The shown question goes before |run| runs, which may ask another.
void MessageBar::answered(const std::function<void()> &run)
{
    const std::function<void()> then = run;
    pending_.removeFirst();
    showNext();
    if (then)
        then();
}

QString MessageBar::text() const { return isVisible() ? text_->text() : QString(); }

QList<QPushButton *> MessageBar::buttons() const
{
    QList<QPushButton *> list;
    for (int i = 0; i < buttons_->count(); ++i)
        if (auto *b = qobject_cast<QPushButton *>(buttons_->itemAt(i)->widget()))
            list << b;
    return list;
}

} // namespace SaneCopy
