// SPDX-License-Identifier: GPL-2.0-or-later
// Closing with copies running, copying on in the background, and the copies an earlier run left unfinished.
#include "MainWindow.h"

#include "MessageBar.h"

#include "EngineBridge.h"
#include "JobModel.h"
#include "MessageBar.h"
#include "UnfinishedDialog.h"

#include <QCloseEvent>
#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSet>
#include <QSystemTrayIcon>

#include <thread>

namespace SaneCopy {

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (closeNow_ || !model_->anyRunning()) {
        event->accept();
        return;
    }
    event->ignore();
    auto *box = new QMessageBox(this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setIcon(QMessageBox::Question);
    box->setWindowTitle(tr("Copies are running"));
    box->setText(tr("Stop the running copies?"));
    box->setInformativeText(tr("Stopped, they are offered again the next time SaneCopy starts, and go on from "
                               "where they were. Cancelled, their unfinished parts are removed."));
    QPushButton *later = box->addButton(tr("&Stop, Finish Later"), QMessageBox::AcceptRole);
    QPushButton *cancel = box->addButton(tr("&Cancel Copies"), QMessageBox::DestructiveRole);
    // Where the desktop has a system tray (Plasma's status notifier), the copies can go on without the window.
    QPushButton *background = QSystemTrayIcon::isSystemTrayAvailable()
                                  ? box->addButton(tr("Keep Copying in the &Background"), QMessageBox::ApplyRole)
                                  : nullptr;
    QPushButton *keep = box->addButton(tr("&Keep Copying"), QMessageBox::RejectRole);
    box->setDefaultButton(background ? background : keep);
    box->setEscapeButton(keep);
    connect(box, &QMessageBox::finished, this, [this, box, later, cancel, background] {
        if (background && box->clickedButton() == background) {
            keepCopyingInBackground();
        } else if (box->clickedButton() == later) {
            closeNow_ = true;
            close();
        } else if (box->clickedButton() == cancel) {
            closeWhenIdle_ = true;
            for (int row = 0; row < model_->rowCount(); ++row)
                bridge_->cancel(model_->jobIdAt(row));
        }
    });
    box->open();
}

void MainWindow::keepCopyingInBackground()
{
    if (!tray_) {
        tray_ = new QSystemTrayIcon(windowIcon(), this);
        connect(tray_, &QSystemTrayIcon::activated, this, [this] {
            tray_->hide();
            showNormal();
            raise();
            activateWindow();
        });
        // The icon's tooltip: the copies' bytes on the device, never what is only in the page cache.
        connect(model_, &JobModel::dataChanged, tray_, [this] { tray_->setToolTip(backgroundStatus()); });
    }
    tray_->setToolTip(backgroundStatus());
    tray_->show();
    hide();
    Q_EMIT wentToBackground();
}

QString MainWindow::backgroundStatus() const
{
    qint64 durable = 0, total = 0;
    int running = 0;
    for (int row = 0; row < model_->rowCount(); ++row) {
        const QModelIndex i = model_->index(row);
        if (i.data(JobModel::FinishedRole).toBool())
            continue;
        ++running;
        total += 1000000;
        durable += qint64(1000000 * i.data(JobModel::DurableFractionRole).toDouble());
    }
    if (running == 0)
        return tr("SaneCopy: done");
    const int percent = int(100 * durable / total);
    // The count is %n, the translation's plural form; %1 the percentage, its only .arg().
    return tr("SaneCopy: %n copy(ies), %1 % on the device", nullptr, running).arg(percent);
}

void MainWindow::offerUnfinished()
{
    const QList<JournalEntry> entries = journal_->claimUnfinished();
    if (entries.isEmpty()) {
        Q_EMIT unfinishedOffered(0);
        return;
    }
    // Whether each destination is there now: a stat of a mount point may hang on a dying device, so not here.
    QPointer<MainWindow> guard(this);
    std::thread([guard, entries] {
        QList<bool> present;
        for (const JournalEntry &e : entries)
            present << QFileInfo(QFile::decodeName(e.destination)).isDir();
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, entries, present] {
                if (guard)
                    guard->settleUnfinished(entries, present);
            },
            Qt::QueuedConnection);
    }).detach();
}

void MainWindow::settleUnfinished(const QList<JournalEntry> &entries, const QList<bool> &present)
{
    // A copy already running (started with the window) is not covered by the question: it waits in the window.
    if (model_->anyRunning()) {
        const auto later = [this, entries] {
            for (const JournalEntry &e : entries)
                journal_->release(e.key);
        };
        messages_->ask({tr("%n copy(ies) left unfinished by an earlier session.", nullptr, int(entries.size())),
                        tr("Resume keeps what is on the device and copies the rest."),
                        {{tr("&Review…"), [this, entries, present] { openUnfinished(entries, present); }},
                         {tr("&Decide Later"), later}},
                        later});
        Q_EMIT unfinishedOffered(int(entries.size()));
        return;
    }
    openUnfinished(entries, present);
    Q_EMIT unfinishedOffered(int(entries.size()));
}

void MainWindow::openUnfinished(const QList<JournalEntry> &entries, const QList<bool> &present)
{
    auto *dialog = new UnfinishedDialog(entries, present, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::finished, this, [this, dialog] {
        const QList<JournalEntry> chosen = dialog->checkedEntries();
        QSet<QString> taken;
        for (const JournalEntry &e : chosen) {
            if (dialog->choice() == UnfinishedDialog::Choice::Later)
                break;
            taken.insert(e.key);
            PendingCopy copy {optionsFor(e), e.key};
            copy.options.resume = true;
            const quint64 id = nextPlan_++;
            if (dialog->choice() == UnfinishedDialog::Choice::Resume) {
                planning_.insert(id, copy);
                bridge_->planAsync(id, copy.options.sources, copy.options.destination);
            } else {
                discarding_.insert(id, e.key);
                const EngineBridge::Options options = optionsFor(e);
                bridge_->discardAsync(id, options);
            }
        }
        // The rest stays recorded, for the next start.
        for (const JournalEntry &e : dialog->entries())
            if (!taken.contains(e.key))
                journal_->release(e.key);
    });
    dialog->open();
}

} // namespace SaneCopy
