// SPDX-License-Identifier: GPL-2.0-or-later
#include "PlanDialog.h"

#include "Format.h"

#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStyle>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "publish.h"

namespace SaneCopy {

namespace {
// The combo's entries, in order: data is the policy, or -1 for "ask".
constexpr int kAsk = -1;

// One side of a taken name, short enough for a table row: "300.0 KiB · 24/11/2026 07:26".
QString side(qint64 size, const QDateTime &modified)
{
    return QStringLiteral("%1 · %2").arg(formatBytes(double(size)), QLocale().toString(modified, QLocale::NarrowFormat));
}

// Which side is newer, in a word or two; times within 2 s (FAT's step) are the same time.
QString newer(const PlanSummary::Taken &t)
{
    if (t.targetIsDir)
        return PlanDialog::tr("a folder is there");
    return t.sourceTime > t.targetTime.addSecs(2)   ? PlanDialog::tr("this copy")
           : t.targetTime > t.sourceTime.addSecs(2) ? PlanDialog::tr("the one there")
           : t.sourceSize == t.targetSize          ? PlanDialog::tr("same size and time")
                                                   : PlanDialog::tr("same time");
}
} // namespace

PlanDialog::PlanDialog(const PlanSummary &plan, const QString &destination, QWidget *parent) : QDialog(parent)
{
    setWindowTitle(tr("Before copying"));
    auto *layout = new QVBoxLayout(this);

    const bool noRoom = plan.fitFiles >= 0;
    const qint64 going = noRoom ? plan.fitFiles : plan.files;
    const bool problems = !plan.problems.isEmpty();

    auto *head = new QHBoxLayout;
    auto *icon = new QLabel(this);
    icon->setPixmap(style()->standardIcon(problems ? QStyle::SP_MessageBoxWarning : QStyle::SP_MessageBoxQuestion)
                        .pixmap(32, 32));
    icon->setAlignment(Qt::AlignTop);
    head->addWidget(icon);
    auto *headline = new QLabel(this);
    headline->setObjectName(QStringLiteral("headline"));
    headline->setWordWrap(true);
    QString text;
    if (problems)
        text = going > 0 || plan.badNames > 0 ? tr("Some of this can't be copied to %1.").arg(destination)
                                              : tr("Nothing of this can be copied to %1.").arg(destination);
    else
        text = plan.taken.size() == 1 ? tr("One file of this copy is already on %1.").arg(destination)
                                      : tr("%1 files of this copy are already on %2.").arg(plan.taken.size()).arg(destination);
    headline->setText(QStringLiteral("<b>%1</b>").arg(text.toHtmlEscaped()));
    head->addWidget(headline, 1);
    layout->addLayout(head);

    if (problems) {
        // The whole list, selectable: a user may want to paste it somewhere, or read all 300 lines.
        auto *list = new QPlainTextEdit(plan.problems.join(QLatin1Char('\n')), this);
        list->setObjectName(QStringLiteral("problems"));
        list->setReadOnly(true);
        list->setLineWrapMode(QPlainTextEdit::NoWrap);
        // As tall as the list, up to 8 lines; the rest scrolls.
        const int lines = int(qMin<qsizetype>(plan.problems.size(), 8));
        list->setFixedHeight(list->fontMetrics().lineSpacing() * lines + 2 * list->frameWidth() + 12);
        layout->addWidget(list);
    }

    if (!plan.taken.isEmpty()) {
        auto *label = new QLabel(tr("Already there (%1):").arg(plan.taken.size()), this);
        layout->addWidget(label);
        taken_ = new QTreeWidget(this);
        taken_->setObjectName(QStringLiteral("taken"));
        taken_->setRootIsDecorated(false);
        taken_->setUniformRowHeights(true);
        taken_->setHeaderLabels({tr("File"), tr("This copy"), tr("Already there"), tr("Newer")});
        QList<QTreeWidgetItem *> rows;
        rows.reserve(plan.taken.size());
        for (const PlanSummary::Taken &t : plan.taken) {
            auto *row = new QTreeWidgetItem;
            row->setText(0, t.name);
            row->setToolTip(0, t.target);
            row->setText(1, side(t.sourceSize, t.sourceTime));
            row->setText(2, t.targetIsDir ? tr("a folder") : side(t.targetSize, t.targetTime));
            row->setText(3, newer(t));
            if (t.targetIsDir)
                row->setToolTip(3, tr("A folder has this name, and a file can't replace it: with \u201cReplace them\u201d "
                                      "it is reported as a failed file; \u201cKeep both\u201d copies it under a new name."));
            rows.append(row);
        }
        taken_->addTopLevelItems(rows);
        taken_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
        taken_->setMinimumHeight(taken_->fontMetrics().lineSpacing() * 6);
        layout->addWidget(taken_, 1);

        auto *form = new QFormLayout;
        takenChoice_ = new QComboBox(this);
        takenChoice_->addItem(tr("Ask for each file"), kAsk);
        takenChoice_->addItem(tr("Replace them"), int(sanecopy::ConflictPolicy::Overwrite));
        takenChoice_->addItem(tr("Skip them"), int(sanecopy::ConflictPolicy::Skip));
        takenChoice_->addItem(tr("Keep both (copy under a new name)"), int(sanecopy::ConflictPolicy::Rename));
        form->addRow(tr("&Files already there:"), takenChoice_);
        layout->addLayout(form);
    }

    // Each button copies what its label says: without room for everything, the files that fit, in order.
    buttons_ = new QDialogButtonBox(this);
    QPushButton *go = nullptr;
    if (going > 0) {
        const QString label = noRoom ? tr("Copy What Fits (%1 of the files, %2)").arg(plan.fitFiles).arg(formatBytes(double(plan.fitBytes)))
                              : problems ? tr("Copy the Rest (%1 files)").arg(plan.files)
                                         : tr("Copy (%1 files)").arg(plan.files);
        go = buttons_->addButton(label, QDialogButtonBox::AcceptRole);
        connect(go, &QPushButton::clicked, this, [this] { choice_ = Choice::Copy; accept(); });
    }
    // Names FAT/exFAT refuse can still go, under a safe name ('_' for what the filesystem can't store).
    QPushButton *rename = nullptr;
    if (plan.badNames > 0 && !noRoom) {
        rename = buttons_->addButton(tr("Copy with Safe Names"), QDialogButtonBox::AcceptRole);
        connect(rename, &QPushButton::clicked, this, [this] { choice_ = Choice::CopyWithSafeNames; accept(); });
    }
    QPushButton *elsewhere = buttons_->addButton(tr("Choose Another Destination"), QDialogButtonBox::ResetRole);
    connect(elsewhere, &QPushButton::clicked, this, [this] { choice_ = Choice::Elsewhere; accept(); });
    QPushButton *cancel = buttons_->addButton(QDialogButtonBox::Cancel);
    connect(cancel, &QPushButton::clicked, this, &QDialog::reject);
    QPushButton *preferred = go ? go : rename ? rename : elsewhere;
    preferred->setDefault(true);
    preferred->setFocus();
    layout->addWidget(buttons_);
    resize(plan.taken.isEmpty() ? 560 : 760, plan.taken.isEmpty() ? 260 : 420);
}

bool PlanDialog::askForEach() const { return !takenChoice_ || takenChoice_->currentData().toInt() == kAsk; }

int PlanDialog::conflictPolicy() const
{
    return askForEach() ? int(sanecopy::ConflictPolicy::Refuse) : takenChoice_->currentData().toInt();
}

QList<QAbstractButton *> PlanDialog::buttons() const { return buttons_->buttons(); }

} // namespace SaneCopy
