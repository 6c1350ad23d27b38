// SPDX-License-Identifier: GPL-2.0-or-later
// A copy from the window's choices to the queue: planned off the GUI thread, asked about when the plan found
// problems, queued, and at its end notified and ejected.
#include "MainWindow.h"

#include "DestinationPicker.h"
#include "Format.h"
#include "EngineBridge.h"
#include "JobModel.h"
#include "Notifier.h"
#include "PlanDialog.h"
#include "PlasmaJobViews.h"
#include "QueueView.h"
#include "QuestionDialogs.h"
#include "SourceDropArea.h"
#include "Udisks.h"

#include <QCheckBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSystemTrayIcon>
#include <QToolButton>

namespace SaneCopy {

void MainWindow::applyCommandLine(const CommandLine &cmd)
{
    sources_->addSources(cmd.files);
    if (cmd.move)
        move_->setChecked(true);
    if (!cmd.destination.isEmpty())
        destination_->setDestination(QFile::decodeName(cmd.destination));
    if (cmd.startNow())
        startCopy();
    else if (!cmd.files.isEmpty())
        destination_->setFocus(Qt::OtherFocusReason);
    updateHint();
}

void MainWindow::updateHint()
{
    const int n = int(sources_->sources().size());
    copy_->setEnabled(n > 0 && !(destination_->destinations().isEmpty() && destination_->deviceToMount().isEmpty()));
    if (n == 0)
        hint_->setText(tr("Drop files or folders above, or add them with the buttons."));
    else
        hint_->setText(tr("Choose where to copy %n item(s), then press Copy.", nullptr, n) + QLatin1Char(' ') +
                       tr("The copy runs at the device's own speed; when it says done, the data is on the device."));
}

void MainWindow::startCopy()
{
    const PathList sources = sources_->sources();
    const QStringList destinations = destination_->destinations();
    if (sources.isEmpty())
        return;
    if (destinations.isEmpty()) {
        mountThenCopy(destination_->deviceToMount());
        return;
    }
    if (destinations.size() > 1 && move_->isChecked()) {
        hint_->setText(tr("A move goes to one place: choose one stick, or untick Move to copy onto every stick."));
        return;
    }
    // Every stick at once: a copy a stick, each planned and queued on its own, the source read once for all.
    const auto share = sanecopy::SourceShare::for_jobs(std::size_t(destinations.size()));
    for (int i = 0; i < destinations.size(); ++i) {
        const quint64 id = nextPlan_++;
        PendingCopy copy;
        copy.options.sources = sources;
        copy.options.destination = QFile::encodeName(destinations[i]);
        copy.options.move = move_->isChecked();
        copy.options.verify = verify_->isChecked();
        copy.options.manifest = manifest_->isChecked();
        copy.options.share = share;
        copy.options.shareMember = unsigned(i);
        planning_.insert(id, copy);
        bridge_->planAsync(id, sources, copy.options.destination);
    }
    copy_->setEnabled(false);
    hint_->setText(tr("Checking the destination…"));
}

// A stick nobody mounted yet: UDisks2 mounts it where the desktop would, then the copy goes on.
void MainWindow::mountThenCopy(const QString &block)
{
    if (block.isEmpty())
        return;
    copy_->setEnabled(false);
    hint_->setText(tr("Mounting the stick…"));
    Udisks::mount(block, this, [this](bool ok, const QString &mountPointOrMessage) {
        if (!ok) {
            updateHint();
            hint_->setText(mountPointOrMessage);
            return;
        }
        destination_->refreshDevices();
        destination_->setDestination(mountPointOrMessage);
        startCopy();
    });
}

void MainWindow::onPlanned(quint64 requestId, const PlanSummary &plan)
{
    if (!planning_.contains(requestId))
        return;
    PendingCopy copy = planning_.take(requestId);
    updateHint();
    // A resumed copy's problems were shown when it was first queued; much of it is on the device already.
    if (copy.options.resume || (plan.problemsFor(-1).isEmpty() && plan.taken.isEmpty()))
        queueCopy(copy, plan);
    else
        askAboutPlan(copy, plan);
}

// Problems and names already taken are shown before the first byte is written, and the user decides. The list
// of what to copy stays until a copy is queued: Cancel or another destination keep it.
void MainWindow::askAboutPlan(const PendingCopy &pending, const PlanSummary &plan)
{
    auto *dialog = new PlanDialog(plan, displayPath(pending.options.destination), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowModality(Qt::WindowModal);
    connect(dialog, &QDialog::finished, this, [this, dialog, copy = pending, plan]() mutable {
        switch (dialog->choice()) {
        case PlanDialog::Choice::Copy:
        case PlanDialog::Choice::CopyWithSafeNames:
            copy.options.renameInvalid = dialog->choice() == PlanDialog::Choice::CopyWithSafeNames;
            copy.options.fitToSpace = dialog->room().fitFiles >= 0;
            // One answer for every name already taken; "ask for each" leaves the questions to come file by file.
            if (!dialog->askForEach()) {
                copy.options.conflict = dialog->conflictPolicy();
                copy.options.askOnConflict = false;
            }
            queueCopy(copy, plan);
            break;
        case PlanDialog::Choice::Elsewhere:
            dropFromGroup(copy.options);
            destination_->browseButton()->setFocus(Qt::OtherFocusReason);
            hint_->setText(tr("Choose another destination for the same files, then press Copy."));
            break;
        case PlanDialog::Choice::None:
            dropFromGroup(copy.options);
            break;
        }
    });
    dialog->open();
    Q_EMIT problemsShown(dialog->problems());
}

// A copy of "every stick at once" that the user called off before it was queued: the others stop keeping the
// source's pages for it.
void MainWindow::dropFromGroup(const EngineBridge::Options &options)
{
    if (options.share)
        options.share->leave(options.shareMember);
}

void MainWindow::queueCopy(const PendingCopy &copy, const PlanSummary &plan)
{
    const EngineBridge::Options &options = copy.options;
    if (!options.resume)
        sources_->clear(); // queued: the list is free for the next copy
    updateHint();
    QString key = copy.journalKey;
    if (key.isEmpty())
        key = journal_->record(journalEntryFor(options));
    const quint64 jobId = bridge_->submit(options);
    journalKeys_.insert(jobId, key);
    const QString what = options.sources.size() == 1 ? QFileInfo(displayPath(options.sources.first())).fileName()
                                                     : tr("%n item(s)", nullptr, int(options.sources.size()));
    const QString dest = displayPath(options.destination);
    const QString where = QFileInfo(dest).fileName().isEmpty() ? dest : QFileInfo(dest).fileName();
    model_->addJob(jobId, options.resume ? tr("%1 → %2 (resumed)").arg(what, where) : tr("%1 → %2").arg(what, where),
                   dest, plan.mountPoint, plan.blockDevice, plan.removable);
    model_->setVerify(jobId, options.verify);
    const QString first = displayPath(options.sources.first());
    const bool one = options.sources.size() == 1;
    jobViews_->addJob(
        jobId, one ? first : tr("%1 and %2 more").arg(QFileInfo(first).fileName()).arg(options.sources.size() - 1),
        one && !plan.firstTarget.isEmpty() ? plan.firstTarget : dest);
    Q_EMIT jobQueued(jobId);
}

void MainWindow::onFinished(quint64 jobId, bool ok, bool cancelled, qint64 bytes)
{
    questions_->memory().forget(jobId);
    // A copy whose stick was pulled is unfinished: its record stays for the next start. Any other end is an end.
    const QString key = journalKeys_.take(jobId);
    const int jobRow = model_->rowOf(jobId);
    // Plasma's view ends with the job, with the headline the window would notify: its notification is the one.
    // An error text only for a failure (a cancel is the user's own doing).
    const std::optional<NotificationText> end = endOfCopy(jobId, ok, cancelled, bytes);
    const bool plasmaSaysIt = jobViews_->onFinished(
        jobId, {ok || cancelled || jobRow < 0 ? QString() : model_->index(jobRow).data(JobModel::StatusRole).toString(),
                end ? end->summary : QString(), cancelled});
    if (jobRow >= 0 && model_->index(jobRow).data(JobModel::DeviceRemovedRole).toBool())
        journal_->release(key);
    else
        journal_->forget(key);
    if (closeWhenIdle_ && !model_->anyRunning()) {
        closeNow_ = true;
        close();
    }
    // Copying in the background, and the last copy is done (its notification said so): nothing is left to show.
    if (tray_ && tray_->isVisible() && !isVisible() && !model_->anyRunning()) {
        tray_->hide();
        Q_EMIT backgroundCopiesDone();
    }
    destination_->refreshDevices(); // the free space changed
    if (end && !plasmaSaysIt)
        sendNotification(*end);
}

std::optional<NotificationText> MainWindow::endOfCopy(quint64 jobId, bool ok, bool cancelled, qint64 bytes) const
{
    const int row = model_->rowOf(jobId);
    if (row < 0)
        return std::nullopt;
    const QModelIndex i = model_->index(row);
    const bool removable =
        !i.data(JobModel::BlockDeviceRole).toString().isEmpty() && i.data(JobModel::CanEjectRole).toBool();
    const QString title = i.data(JobModel::TitleRole).toString();
    return i.data(JobModel::DeviceRemovedRole).toBool()
               ? removedNotification(title)
               : notificationFor(title, ok, cancelled, bytes, removable, i.data(JobModel::SummaryRole).toString());
}

void MainWindow::eject(quint64 jobId)
{
    const int row = model_->rowOf(jobId);
    if (row < 0)
        return;
    const QString block = model_->index(row).data(JobModel::BlockDeviceRole).toString();
    model_->setEjected(jobId, false, tr("Ejecting…"));
    Udisks::eject(block, this,
                  [this, jobId](bool ok, const QString &message) { model_->setEjected(jobId, ok, message); });
}

} // namespace SaneCopy
