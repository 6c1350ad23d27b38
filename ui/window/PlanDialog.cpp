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
    return QStringLiteral("%1 · %2").arg(formatBytes(double(size)),
                                         QLocale().toString(modified, QLocale::NarrowFormat));
}

// Which side is newer, in a word or two; times within 2 s (FAT's step) are the same time.
QString newer(const PlanSummary::Taken &t)
{
    if (t.targetIsDir)
        return PlanDialog::tr("a folder is there");
    return t.sourceTime > t.targetTime.addSecs(2)   ? PlanDialog::tr("this copy")
           : t.targetTime > t.sourceTime.addSecs(2) ? PlanDialog::tr("the one there")
           : t.sourceSize == t.targetSize           ? PlanDialog::tr("same size and time")
                                                    : PlanDialog::tr("same time");
}
} // namespace

PlanDialog::PlanDialog(const PlanSummary &plan, const QString &destination, QWidget *parent)
    : QDialog(parent), plan_(plan), destination_(destination)
{
    setWindowTitle(tr("Before copying"));
    auto *layout = new QVBoxLayout(this);
    auto *head = new QHBoxLayout;
    icon_ = new QLabel(this);
    icon_->setAlignment(Qt::AlignTop);
    head->addWidget(icon_);
    headline_ = new QLabel(this);
    headline_->setObjectName(QStringLiteral("headline"));
    headline_->setWordWrap(true);
    head->addWidget(headline_, 1);
    layout->addLayout(head);
    // The whole list, selectable: a user may want to paste it somewhere, or read all 300 lines.
    problemList_ = new QPlainTextEdit(this);
    problemList_->setObjectName(QStringLiteral("problems"));
    problemList_->setReadOnly(true);
    problemList_->setLineWrapMode(QPlainTextEdit::NoWrap);
    layout->addWidget(problemList_);
    if (!plan.taken.isEmpty())
        addTakenList(layout);
    addButtons(layout);
    showChoice();
    (go_->isVisibleTo(this) ? go_ : safeNames_->isVisibleTo(this) ? safeNames_ : elsewhere_)->setFocus();
    resize(plan.taken.isEmpty() ? 560 : 760, plan.taken.isEmpty() ? 260 : 420);
}

// The names already taken, side by side with what stands there, and one choice for all of them.
void PlanDialog::addTakenList(QVBoxLayout *layout)
{
    layout->addWidget(new QLabel(tr("Already there (%1):").arg(plan_.taken.size()), this));
    taken_ = new QTreeWidget(this);
    taken_->setObjectName(QStringLiteral("taken"));
    taken_->setRootIsDecorated(false);
    taken_->setUniformRowHeights(true);
    taken_->setHeaderLabels({tr("File"), tr("This copy"), tr("Already there"), tr("Newer")});
    QList<QTreeWidgetItem *> rows;
    rows.reserve(plan_.taken.size());
    for (const PlanSummary::Taken &t : plan_.taken) {
        auto *row = new QTreeWidgetItem;
        row->setText(0, t.name);
        row->setToolTip(0, t.target);
        row->setText(1, side(t.sourceSize, t.sourceTime));
        row->setText(2, t.targetIsDir ? tr("a folder") : side(t.targetSize, t.targetTime));
        row->setText(3, newer(t));
        if (t.targetIsDir)
            row->setToolTip(3,
                            tr("A folder has this name, and a file can't replace it: with \u201cReplace them\u201d "
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
    connect(takenChoice_, &QComboBox::currentIndexChanged, this, &PlanDialog::showChoice);
}

// Each button copies what its label says: without room for everything, the files that fit, in order.
void PlanDialog::addButtons(QVBoxLayout *layout)
{
    buttons_ = new QDialogButtonBox(this);
    go_ = buttons_->addButton(QString(), QDialogButtonBox::AcceptRole);
    connect(go_, &QPushButton::clicked, this, [this] {
        choice_ = Choice::Copy;
        accept();
    });
    // Names FAT/exFAT refuse can still go, under a safe name ('_' for what the filesystem can't store).
    safeNames_ = buttons_->addButton(tr("Copy with Safe Names"), QDialogButtonBox::AcceptRole);
    connect(safeNames_, &QPushButton::clicked, this, [this] {
        choice_ = Choice::CopyWithSafeNames;
        accept();
    });
    elsewhere_ = buttons_->addButton(tr("Choose Another Destination"), QDialogButtonBox::ResetRole);
    connect(elsewhere_, &QPushButton::clicked, this, [this] {
        choice_ = Choice::Elsewhere;
        accept();
    });
    QPushButton *cancel = buttons_->addButton(QDialogButtonBox::Cancel);
    connect(cancel, &QPushButton::clicked, this, &QDialog::reject);
    layout->addWidget(buttons_);
}

void PlanDialog::showChoice()
{
    const PlanSummary::Room &room = this->room();
    const QStringList problems = this->problems();
    const bool noRoom = room.fitFiles >= 0;
    const qint64 going = noRoom ? room.fitFiles : room.files;
    icon_->setPixmap(
        style()
            ->standardIcon(problems.isEmpty() ? QStyle::SP_MessageBoxQuestion : QStyle::SP_MessageBoxWarning)
            .pixmap(32, 32));
    headline_->setText(QStringLiteral("<b>%1</b>").arg(headline(problems, going).toHtmlEscaped()));
    problemList_->setPlainText(problems.join(QLatin1Char('\n')));
    problemList_->setVisible(!problems.isEmpty());
    // As tall as the list, up to 8 lines; the rest scrolls.
    const int lines = int(qBound(qsizetype(1), problems.size(), qsizetype(8)));
    problemList_->setFixedHeight(problemList_->fontMetrics().lineSpacing() * lines + 2 * problemList_->frameWidth() +
                                 12);
    const QString files = tr("%n file(s)", nullptr, int(going));
    go_->setText(
        noRoom ? tr("Copy What Fits (%1 of the files, %2)").arg(room.fitFiles).arg(formatBytes(double(room.fitBytes)))
        : !problems.isEmpty() ? tr("Copy the Rest (%1)").arg(files)
                              : tr("Copy (%1)").arg(files));
    go_->setVisible(going > 0);
    safeNames_->setVisible(plan_.badNames > 0 && !noRoom);
    QPushButton *preferred = going > 0 ? go_ : safeNames_->isVisibleTo(this) ? safeNames_ : elsewhere_;
    for (QPushButton *b : {go_, safeNames_, elsewhere_})
        b->setDefault(b == preferred);
}

QString PlanDialog::headline(const QStringList &problems, qint64 going) const
{
    const bool skipping = choicePolicy() == int(sanecopy::ConflictPolicy::Skip);
    if (!problems.isEmpty())
        return going > 0 || plan_.badNames > 0 ? tr("Some of this can't be copied to %1.").arg(destination_)
                                               : tr("Nothing of this can be copied to %1.").arg(destination_);
    if (skipping && going == 0)
        return tr("All of this is already on %1: nothing is left to copy.").arg(destination_);
    return tr("%n file(s) of this copy already on %1.", nullptr, int(plan_.taken.size())).arg(destination_);
}

int PlanDialog::choicePolicy() const { return takenChoice_ ? takenChoice_->currentData().toInt() : kAsk; }

const PlanSummary::Room &PlanDialog::room() const { return plan_.roomFor(choicePolicy()); }

QStringList PlanDialog::problems() const { return plan_.problemsFor(choicePolicy()); }

bool PlanDialog::askForEach() const { return choicePolicy() == kAsk; }

int PlanDialog::conflictPolicy() const { return askForEach() ? int(sanecopy::ConflictPolicy::Refuse) : choicePolicy(); }

QList<QAbstractButton *> PlanDialog::buttons() const { return buttons_->buttons(); }

} // namespace SaneCopy
