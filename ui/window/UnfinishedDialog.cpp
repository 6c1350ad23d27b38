// SPDX-License-Identifier: GPL-2.0-or-later
#include "UnfinishedDialog.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>

namespace SaneCopy {

UnfinishedDialog::UnfinishedDialog(const QList<JournalEntry> &entries, const QList<bool> &present, QWidget *parent)
    : QDialog(parent), entries_(entries)
{
    setWindowTitle(tr("Unfinished copies"));
    auto *layout = new QVBoxLayout(this);
    auto *text = new QLabel(
        tr("%n copy(ies) did not finish the last time SaneCopy ran (it was closed, or the computer stopped).", nullptr,
           int(entries.size())),
        this);
    text->setWordWrap(true);
    layout->addWidget(text);
    list_ = new QListWidget(this);
    for (int i = 0; i < entries.size(); ++i) {
        const bool there = i < present.size() && present.at(i);
        auto *item =
            new QListWidgetItem(describe(entries.at(i)) +
                                    (there ? QString() : QLatin1Char('\n') + tr("Not there now: plug the device in.")),
                                list_);
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
        item->setCheckState(there ? Qt::Checked : Qt::Unchecked);
    }
    list_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents); // as tall as its few lines
    layout->addWidget(list_, 1);
    auto *how = new QLabel(tr("Resume keeps what is on the device already and copies the rest; a big file "
                              "continues where its bytes stop matching the source. Discard removes the "
                              "unfinished parts; the files that were finished and the sources stay."),
                           this);
    how->setWordWrap(true);
    layout->addWidget(how);
    auto *buttons = new QDialogButtonBox(this);
    resume_ = buttons->addButton(tr("&Resume"), QDialogButtonBox::AcceptRole);
    discard_ = buttons->addButton(tr("&Discard"), QDialogButtonBox::DestructiveRole);
    later_ = buttons->addButton(tr("Decide &Later"), QDialogButtonBox::RejectRole);
    resume_->setDefault(true);
    layout->addWidget(buttons);
    connect(resume_, &QPushButton::clicked, this, [this] { choose(Choice::Resume); });
    connect(discard_, &QPushButton::clicked, this, [this] { choose(Choice::Discard); });
    connect(later_, &QPushButton::clicked, this, [this] { choose(Choice::Later); });
    // Nothing checked, nothing to resume or discard.
    auto follow = [this] {
        const bool any = !checkedEntries().isEmpty();
        resume_->setEnabled(any);
        discard_->setEnabled(any);
    };
    connect(list_, &QListWidget::itemChanged, this, follow);
    follow();
    setMinimumWidth(600);
}

void UnfinishedDialog::choose(Choice choice)
{
    choice_ = choice;
    if (choice == Choice::Later)
        reject();
    else
        accept();
}

QList<JournalEntry> UnfinishedDialog::checkedEntries() const
{
    QList<JournalEntry> out;
    for (int i = 0; i < list_->count() && i < entries_.size(); ++i)
        if (list_->item(i)->checkState() == Qt::Checked)
            out << entries_.at(i);
    return out;
}

QString UnfinishedDialog::describe(const JournalEntry &entry)
{
    const QString what = entry.sources.size() == 1 ? QFileInfo(displayPath(entry.sources.first())).fileName()
                                                   : tr("%n item(s)", nullptr, int(entry.sources.size()));
    const QString verb = entry.move ? tr("Move %1 to %2") : tr("Copy %1 to %2");
    return verb.arg(what, displayPath(entry.destination)) +
           (entry.queued.isValid()
                ? QLatin1Char('\n') + tr("Started %1").arg(QLocale().toString(entry.queued, QLocale::ShortFormat))
                : QString());
}

} // namespace SaneCopy
