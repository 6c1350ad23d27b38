// SPDX-License-Identifier: GPL-2.0-or-later
#include "QueueView.h"

#include "DurableProgressBar.h"
#include "JobModel.h"
#include "job_control.h"

#include <QClipboard>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFrame>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QGridLayout>
#include <QLabel>
#include <QScrollBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace SaneCopy {

using sanecopy::JobState;

JobRow::JobRow(JobModel *model, quint64 jobId, QWidget *parent) : QWidget(parent), model_(model), jobId_(jobId)
{
    title_ = new QLabel(this);
    title_->setTextFormat(Qt::PlainText);
    QFont bold = title_->font();
    bold.setBold(true);
    title_->setFont(bold);
    bar_ = new DurableProgressBar(this);
    status_ = new QLabel(this);
    status_->setTextFormat(Qt::PlainText);
    status_->setWordWrap(true);
    // A finished job's result takes the bar's place: one line, the whole text in its tooltip.
    result_ = new QLabel(this);
    result_->setTextFormat(Qt::PlainText);
    result_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    result_->hide();
    makeButtons();
    layOut(makeSafeRow());
    refresh();
}

QToolButton *JobRow::makeButton(const QString &icon, const QString &text)
{
    auto *b = new QToolButton(this);
    b->setIcon(QIcon::fromTheme(icon));
    b->setText(text);
    b->setToolTip(text);
    b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    b->setFocusPolicy(Qt::StrongFocus);
    return b;
}

void JobRow::makeButtons()
{
    pause_ = makeButton(QStringLiteral("media-playback-pause"), tr("Pause"));
    cancel_ = makeButton(QStringLiteral("process-stop"), tr("Cancel"));
    cancel_->setToolTip(tr("Stop this copy: nothing half-written is left under a real name"));
    eject_ = makeButton(QStringLiteral("media-eject"), tr("Eject"));
    eject_->setToolTip(tr("Unmount the device and power it off, so it can be pulled out"));
    eject_->hide();
    details_ = makeButton(QStringLiteral("documentinfo"), tr("Details…"));
    details_->setToolTip(tr("What was copied, renamed, skipped or failed, file by file"));
    clear_ = makeButton(QStringLiteral("edit-clear-list"), tr("Clear"));
    clear_->setToolTip(tr("Take this finished copy off the list"));
    connect(details_, &QToolButton::clicked, this, &JobRow::showDetails);
    connect(clear_, &QToolButton::clicked, this, [this] { Q_EMIT clearRequested(jobId_); });
    connect(pause_, &QToolButton::clicked, this, [this] {
        if (paused_)
            Q_EMIT resumeRequested(jobId_);
        else
            Q_EMIT pauseRequested(jobId_);
    });
    connect(cancel_, &QToolButton::clicked, this, [this] {
        cancel_->setEnabled(false); // once is enough: the row says what happens next
        pause_->setEnabled(false);
        Q_EMIT cancelRequested(jobId_);
    });
    connect(eject_, &QToolButton::clicked, this, [this] { Q_EMIT ejectRequested(jobId_); });
}

// "Safe to unplug" stands out: an icon and bold type of its own, not a clause at the end of the status.
QHBoxLayout *JobRow::makeSafeRow()
{
    safe_ = new QLabel(this);
    safe_->setTextFormat(Qt::RichText);
    safe_->setText(QStringLiteral("<b>%1</b>").arg(tr("Safe to unplug").toHtmlEscaped()));
    auto *safeIcon = new QLabel(this);
    safeIcon->setPixmap(
        QIcon::fromTheme(QStringLiteral("emblem-ok-symbolic"), QIcon::fromTheme(QStringLiteral("dialog-ok")))
            .pixmap(16, 16));
    safeIcon->setVisible(false);
    connect(this, &JobRow::safeShown, safeIcon, &QWidget::setVisible);
    auto *safeRow = new QHBoxLayout;
    safeRow->addWidget(safeIcon);
    safeRow->addWidget(safe_);
    safeRow->addStretch();
    return safeRow;
}

void JobRow::layOut(QHBoxLayout *safeRow)
{
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(6, 6, 6, 6);
    auto *line = new QFrame(this);
    line->setFrameShape(QFrame::HLine);
    line->setFrameShadow(QFrame::Sunken);
    grid->addWidget(title_, 0, 0, 1, 6);
    grid->addWidget(bar_, 1, 0);
    grid->addWidget(result_, 1, 0);
    grid->addWidget(pause_, 1, 1);
    grid->addWidget(cancel_, 1, 2);
    grid->addWidget(eject_, 1, 3);
    grid->addWidget(details_, 1, 4);
    grid->addWidget(clear_, 1, 5);
    grid->addLayout(safeRow, 2, 0, 1, 6);
    grid->addWidget(status_, 3, 0, 1, 6);
    grid->addWidget(line, 4, 0, 1, 6);
    grid->setColumnStretch(0, 1);
}

void JobRow::refresh()
{
    const int row = model_->rowOf(jobId_);
    if (row < 0)
        return;
    const QModelIndex i = model_->index(row);
    title_->setText(i.data(JobModel::TitleRole).toString());
    bar_->setFractions(i.data(JobModel::DurableFractionRole).toDouble(),
                       i.data(JobModel::WrittenFractionRole).toDouble());
    bar_->setOutcome(i.data(JobModel::OutcomeRole).toString());
    bar_->setShare(i.data(JobModel::ShareRole).toBool());
    status_->setText(i.data(JobModel::StatusRole).toString());
    const QStringList problems = i.data(JobModel::ProblemsRole).toStringList();
    status_->setToolTip(problems.join(QLatin1Char('\n')));
    const auto state = JobState(i.data(JobModel::StateRole).toInt());
    const bool active = state == JobState::Queued || state == JobState::Running || state == JobState::Paused;
    paused_ = state == JobState::Paused;
    pause_->setVisible(active);
    // Once Cancel is pressed the row says what happens next; Pause or Resume would only contradict it.
    pause_->setEnabled(state != JobState::Queued && cancel_->isEnabled());
    pause_->setText(paused_ ? tr("Resume") : tr("Pause"));
    pause_->setToolTip(paused_ ? tr("Go on with this copy where it stopped")
                               : tr("Pause this copy: what is on the device stays, and Resume goes on from there"));
    pause_->setIcon(
        QIcon::fromTheme(paused_ ? QStringLiteral("media-playback-start") : QStringLiteral("media-playback-pause")));
    cancel_->setVisible(active);
    // Eject needs UDisks2; without it the button would only fail.
    const bool ejectable = i.data(JobModel::CanEjectRole).toBool() && ejectAvailable_;
    eject_->setVisible(ejectable);
    // A finished job is one line: no bar (its outcome is in words), its result, Details and Clear.
    const bool finished = i.data(JobModel::FinishedRole).toBool();
    const bool oneLine = finished && i.data(JobModel::OutcomeRole).toString().isEmpty();
    bar_->setVisible(!oneLine);
    result_->setVisible(oneLine);
    status_->setVisible(!oneLine);
    if (oneLine) {
        const QString text = i.data(JobModel::StatusRole).toString();
        result_->setToolTip(text);
        result_->setText(result_->fontMetrics().elidedText(text, Qt::ElideRight, qMax(result_->width(), 200)));
    }
    details_->setVisible(finished);
    clear_->setVisible(finished);
    const bool safe = i.data(JobModel::SafeToUnplugRole).toBool() && i.data(JobModel::RemovableRole).toBool();
    if (safe_->isVisibleTo(this) != safe) {
        safe_->setVisible(safe);
        Q_EMIT safeShown(safe);
    }
}

void JobRow::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    if (result_->isVisible()) // elided to the new width
        result_->setText(result_->fontMetrics().elidedText(result_->toolTip(), Qt::ElideRight, result_->width()));
}

void JobRow::showDetails()
{
    const int row = model_->rowOf(jobId_);
    if (row < 0)
        return;
    const QModelIndex i = model_->index(row);
    auto *dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(tr("%1: details").arg(i.data(JobModel::TitleRole).toString()));
    auto *layout = new QVBoxLayout(dialog);
    auto *summary = new QLabel(i.data(JobModel::StatusRole).toString(), dialog);
    summary->setWordWrap(true);
    layout->addWidget(summary);
    auto *text = new QPlainTextEdit(dialog);
    text->setReadOnly(true);
    text->setLineWrapMode(QPlainTextEdit::NoWrap);
    text->setPlainText(i.data(JobModel::ResultsRole).toStringList().join(QLatin1Char('\n')));
    layout->addWidget(text, 1);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QPushButton *copy = buttons->addButton(tr("&Copy All"), QDialogButtonBox::ActionRole);
    connect(copy, &QPushButton::clicked, text, [text] { QGuiApplication::clipboard()->setText(text->toPlainText()); });
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog->resize(720, 420);
    dialog->open();
}

QueueView::QueueView(JobModel *model, QWidget *parent) : QScrollArea(parent), model_(model)
{
    setWidgetResizable(true);
    setFrameShape(QFrame::StyledPanel);
    // A Tab stop of its own: the arrows and Page Up/Down scroll a long list.
    setAccessibleName(tr("Copies"));
    setAccessibleDescription(tr("The copies, newest last; the buttons of a row act on its copy"));
    content_ = new QWidget(this);
    rows_ = new QVBoxLayout(content_);
    rows_->setContentsMargins(0, 0, 0, 0);
    rows_->setSpacing(0);
    empty_ = new QLabel(tr("No copies yet. Drop files above, pick a destination, and press Copy."), content_);
    empty_->setAlignment(Qt::AlignCenter);
    empty_->setWordWrap(true);
    rows_->addWidget(empty_);
    rows_->addStretch();
    setWidget(content_);
    connect(verticalScrollBar(), &QScrollBar::rangeChanged, this, [this](int, int max) {
        if (scrollToNewest_) {
            verticalScrollBar()->setValue(max);
            scrollToNewest_ = false;
        }
    });

    connect(model_, &JobModel::rowsAboutToBeRemoved, this, [this](const QModelIndex &, int first, int last) {
        for (int r = first; r <= last; ++r)
            delete rowFor(model_->jobIdAt(r));
    });
    connect(model_, &JobModel::rowsRemoved, this, [this] { empty_->setVisible(model_->rowCount() == 0); });
    connect(model_, &JobModel::rowsInserted, this,
            [this](const QModelIndex &, int first, int last) { addRows(first, last); });
    connect(model_, &JobModel::dataChanged, this, [this](const QModelIndex &from, const QModelIndex &to) {
        for (int r = from.row(); r <= to.row(); ++r)
            if (JobRow *row = rowFor(model_->jobIdAt(r)))
                row->refresh();
    });
    addRows(0, model_->rowCount() - 1);
}

void QueueView::clearFinished()
{
    for (int r = model_->rowCount() - 1; r >= 0; --r)
        model_->removeFinished(model_->jobIdAt(r));
}

void QueueView::setEjectAvailable(bool available)
{
    ejectAvailable_ = available;
    const QList<JobRow *> rows = content_->findChildren<JobRow *>(Qt::FindDirectChildrenOnly);
    for (JobRow *row : rows)
        row->setEjectAvailable(available);
}

JobRow *QueueView::rowFor(quint64 jobId) const
{
    const QList<JobRow *> rows = content_->findChildren<JobRow *>(Qt::FindDirectChildrenOnly);
    for (JobRow *row : rows)
        if (row->jobId() == jobId)
            return row;
    return nullptr;
}

void QueueView::addRows(int first, int last)
{
    for (int r = first; r <= last; ++r) {
        auto *row = new JobRow(model_, model_->jobIdAt(r), content_);
        row->setEjectAvailable(ejectAvailable_);
        // Newest on top of the finished ones would reorder under the user's pointer; append instead.
        rows_->insertWidget(rows_->count() - 1, row);
        connect(row, &JobRow::clearRequested, model_, &JobModel::removeFinished);
        connect(row, &JobRow::pauseRequested, this, &QueueView::pauseRequested);
        connect(row, &JobRow::resumeRequested, this, &QueueView::resumeRequested);
        connect(row, &JobRow::cancelRequested, this, &QueueView::cancelRequested);
        connect(row, &JobRow::ejectRequested, this, &QueueView::ejectRequested);
        row->refresh();
    }
    // A new job is the one the user is waiting for. Rows are appended, so it is at the bottom; the scroll range
    // grows only once the layout has placed it.
    scrollToNewest_ = first <= last;
    empty_->setVisible(model_->rowCount() == 0);
}

} // namespace SaneCopy
