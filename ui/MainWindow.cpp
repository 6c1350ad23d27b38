// SPDX-License-Identifier: GPL-2.0-or-later
#include "MainWindow.h"

#include "DestinationPicker.h"
#include "DolphinHook.h"
#include "DolphinPlace.h"
#include "Format.h"
#include "EngineBridge.h"
#include "JobModel.h"
#include "Notifier.h"
#include "PlanDialog.h"
#include "PlasmaJobViews.h"
#include "QueueView.h"
#include "QuestionDialogs.h"
#include "SourceDropArea.h"
#include "SystemMonitor.h"
#include "TimeSeriesChart.h"
#include "Udisks.h"
#include "UnfinishedDialog.h"

#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QShortcut>
#include <QSplitter>
#include <QSystemTrayIcon>
#include <QToolButton>
#include <QVBoxLayout>

#include <thread>

// The icon resource lives in a static library, where the linker drops an initializer nothing refers to; this
// call refers to it. Q_INIT_RESOURCE must be used outside any namespace.
static void registerIconResource()
{
    Q_INIT_RESOURCE(sanecopy_icons);
}

namespace SaneCopy {

namespace {

// The installed theme icon, else the copy compiled into this library (sanecopy_icons.qrc): an uninstalled build,
// or a desktop whose icon path misses the install prefix, still shows SaneCopy's own icon. Qt draws the SVG
// through its qsvgicon plugin (Debian: libqt6svg6).
QIcon appIcon()
{
    static const bool registered = (registerIconResource(), true);
    Q_UNUSED(registered)
    return QIcon::fromTheme(QStringLiteral("io.github.sanecopy.SaneCopy"),
                            QIcon(QStringLiteral(":/icons/io.github.sanecopy.SaneCopy.svg")));
}

// What the journal keeps of a copy, and back: the choices that make it the same copy when it is resumed.
JournalEntry journalEntryFor(const EngineBridge::Options &o)
{
    return {{}, o.sources, o.destination, o.verify, o.renameInvalid, o.move, o.manifest, {},
            o.askOnConflict ? -1 : o.conflict, o.fitToSpace};
}

EngineBridge::Options optionsFor(const JournalEntry &e)
{
    EngineBridge::Options o;
    o.sources = e.sources;
    o.destination = e.destination;
    o.verify = e.verify;
    o.renameInvalid = e.renameInvalid;
    o.move = e.move;
    o.manifest = e.manifest;
    o.fitToSpace = e.fitToSpace;
    if (e.conflict >= 0) {
        o.conflict = e.conflict;
        o.askOnConflict = false;
    }
    return o;
}

} // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    setWindowTitle(tr("SaneCopy"));
    setWindowIcon(appIcon());
    bridge_ = new EngineBridge(this);
    place_ = new DolphinPlace(DolphinPlace::installedHelper(), this);
    model_ = new JobModel(this);
    journal_ = std::make_unique<JobJournal>();

    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);

    auto *what = new QGroupBox(tr("Copy"), central);
    auto *whatLayout = new QVBoxLayout(what);
    sources_ = new SourceDropArea(what);
    whatLayout->addWidget(sources_);
    auto *toRow = new QHBoxLayout;
    auto *toLabel = new QLabel(tr("&To:"), what);
    destination_ = new DestinationPicker(what);
    toLabel->setBuddy(destination_);
    copy_ = new QPushButton(QIcon::fromTheme(QStringLiteral("edit-copy")), tr("&Copy"), what);
    copy_->setDefault(true);
    toRow->addWidget(toLabel);
    toRow->addWidget(destination_, 1);
    toRow->addWidget(copy_);
    whatLayout->addLayout(toRow);
    // One row of short choices, each explained in its tooltip: the window's height goes to the copies.
    auto *choices = new QHBoxLayout;
    verify_ = new QCheckBox(tr("&Verify"), what);
    verify_->setToolTip(tr("Read every file back from the device once it is there, and compare it with the source."));
    move_ = new QCheckBox(tr("&Move"), what);
    move_->setToolTip(tr("Remove each source once its copy is safely on the device (and verified, when Verify is "
                         "on). Whatever could not be copied stays where it is."));
    manifest_ = new QCheckBox(tr("Write c&hecksums"), what);
    manifest_->setToolTip(tr("Write SHA256SUMS on the device, which sha256sum -c checks later."));
    for (QCheckBox *box : {verify_, move_, manifest_})
        choices->addWidget(box);
    choices->addStretch();
    whatLayout->addLayout(choices);
    hint_ = new QLabel(what);
    hint_->setWordWrap(true);
    whatLayout->addWidget(hint_);
    layout->addWidget(what);

    auto *split = new QSplitter(Qt::Vertical, central);
    // The copies, with a header that clears the finished ones.
    auto *copies = new QWidget(split);
    auto *copiesLayout = new QVBoxLayout(copies);
    copiesLayout->setContentsMargins(0, 0, 0, 0);
    auto *header = new QHBoxLayout;
    auto *copiesLabel = new QLabel(tr("<b>Copies</b>"), copies);
    clearFinished_ = new QToolButton(copies);
    clearFinished_->setIcon(QIcon::fromTheme(QStringLiteral("edit-clear-history")));
    clearFinished_->setText(tr("C&lear Finished"));
    clearFinished_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    header->addWidget(copiesLabel);
    header->addStretch();
    header->addWidget(clearFinished_);
    copiesLayout->addLayout(header);
    queue_ = new QueueView(model_, copies);
    copiesLayout->addWidget(queue_, 1);
    connect(clearFinished_, &QToolButton::clicked, queue_, &QueueView::clearFinished);
    // Enabled while there is something to clear.
    clearFinished_->setEnabled(false);
    auto followFinished = [this] { clearFinished_->setEnabled(model_->anyFinished()); };
    connect(model_, &JobModel::dataChanged, clearFinished_, followFinished);
    connect(model_, &JobModel::rowsRemoved, clearFinished_, followFinished);
    queue_->setEjectAvailable(Udisks::available());
    auto *charts = new QWidget(split);
    auto *chartLayout = new QHBoxLayout(charts);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    throughput_ = new TimeSeriesChart(tr("Throughput"), tr("MiB/s"), 1024.0 * 1024.0, charts);
    dirty_ = new TimeSeriesChart(tr("Dirty memory"), tr("MiB"), 1024.0 * 1024.0, charts);
    // Floors: the other programs' few hundred KiB of writeback stay a flat line at the bottom, not spikes.
    throughput_->setFloor(5);
    dirty_->setFloor(8);
    chartLayout->addWidget(throughput_);
    chartLayout->addWidget(dirty_);
    split->addWidget(copies);
    split->addWidget(charts);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // The same 3:2 from the start: the queue's own size hint is one row, which hid a second job below the fold.
    split->setSizes({300, 200});
    layout->addWidget(split, 1);
    setCentralWidget(central);

    monitor_ = new SystemMonitor(model_, throughput_, dirty_, this);
    questions_ = new QuestionDialogs(bridge_, this);

    connect(copy_, &QPushButton::clicked, this, &MainWindow::startCopy);
    connect(sources_, &SourceDropArea::sourcesChanged, this, &MainWindow::updateHint);
    connect(destination_, &DestinationPicker::destinationChanged, this, &MainWindow::updateHint);
    // UDisks2 may start after the window (or stop): Eject follows, checked whenever the devices change.
    connect(destination_, &DestinationPicker::devicesChanged, queue_,
            [this] { queue_->setEjectAvailable(Udisks::available()); });
    connect(bridge_, &EngineBridge::progress, model_, &JobModel::onProgress);
    connect(bridge_, &EngineBridge::fileDone, model_, &JobModel::onFileDone);
    connect(bridge_, &EngineBridge::skipped, model_, &JobModel::onSkipped);
    connect(bridge_, &EngineBridge::failed, model_, &JobModel::onFailed);
    connect(bridge_, &EngineBridge::deviceRemoved, model_, &JobModel::onDeviceRemoved);
    connect(bridge_, &EngineBridge::finished, model_, &JobModel::onFinished);
    connect(bridge_, &EngineBridge::finished, this,
            [this](quint64 id, bool ok, bool cancelled, qint64 bytes) { onFinished(id, ok, cancelled, bytes); });
    connect(bridge_, &EngineBridge::planned, this, &MainWindow::onPlanned);
    jobViews_ = new PlasmaJobViews(QDBusConnection::sessionBus(), this);
    connect(bridge_, &EngineBridge::progress, jobViews_, &PlasmaJobViews::onProgress);
    connect(jobViews_, &PlasmaJobViews::cancelRequested, bridge_, &EngineBridge::cancel);
    connect(jobViews_, &PlasmaJobViews::suspendRequested, bridge_, &EngineBridge::pause);
    connect(jobViews_, &PlasmaJobViews::resumeRequested, bridge_, &EngineBridge::resume);
    connect(bridge_, &EngineBridge::discarded, this, [this](quint64 id, qint64 removed, const QStringList &errors) {
        journal_->forget(discarding_.take(id));
        if (!errors.isEmpty())
            QMessageBox::warning(this, tr("Discard"), errors.join(QLatin1Char('\n')));
        Q_EMIT unfinishedDiscarded(removed);
    });
    connect(queue_, &QueueView::pauseRequested, bridge_, &EngineBridge::pause);
    connect(queue_, &QueueView::resumeRequested, bridge_, &EngineBridge::resume);
    connect(queue_, &QueueView::cancelRequested, bridge_, &EngineBridge::cancel);
    connect(queue_, &QueueView::ejectRequested, this, &MainWindow::eject);

    addMenus();

    destination_->refreshDevices();
    updateHint();
    resize(900, 720);
}

void MainWindow::addMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *quit = file->addAction(QIcon::fromTheme(QStringLiteral("application-exit")), tr("&Quit"), this,
                                    &QWidget::close);
    // The platform's Quit keys; a platform theme that knows none (offscreen, some minimal desktops) gets Ctrl+Q.
    QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
    if (quitKeys.isEmpty())
        quitKeys << QKeySequence(Qt::CTRL | Qt::Key_Q);
    quit->setShortcuts(quitKeys);
    addAction(quit); // the window's own too: the shortcut works wherever the focus is, menu bar or not
    if (DolphinHook::insideFlatpak())
        addDolphinHookMenu();
    else
        addDolphinPlaceAction(menuBar()->addMenu(tr("&Settings")));
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(windowIcon(), tr("&About SaneCopy"), this, [this] {
        QMessageBox::about(
            this, tr("About SaneCopy"),
            tr("<h3>SaneCopy %1</h3><p>Copies files at the device's own speed: when it says done, the data is on "
               "the device, and safe to unplug.</p><p>Licence: GNU General Public License, version 2 or later.</p>"
               "<p><a href=\"%2\">%2</a>: how it works, what it promises, and sanecp for the terminal.</p>")
                .arg(QStringLiteral(SANECOPY_VERSION), QStringLiteral("https://github.com/sanecopy/sanecopy#readme")));
    });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
    // Enter starts the copy when it can, wherever the focus is in the window: the Copy button is the
    // default, and a main window has no default button of its own.
    for (const QKeySequence &key : {QKeySequence(Qt::Key_Return), QKeySequence(Qt::Key_Enter)}) {
        auto *enter = new QShortcut(key, this);
        connect(enter, &QShortcut::activated, this, [this] {
            if (copy_->isEnabled())
                copy_->click();
        });
    }
}

void MainWindow::addDolphinHookMenu()
{
    QMenu *settings = menuBar()->addMenu(tr("&Settings"));
    QAction *toggle = settings->addAction(QIcon::fromTheme(QStringLiteral("system-file-manager")), QString());
    DolphinHook hook(DolphinHook::hostDataHome());
    auto refresh = [toggle, hook] {
        toggle->setText(hook.isInstalled() ? tr("Remove from Dolphin's context menu")
                                           : tr("Add to Dolphin's context menu"));
    };
    refresh();
    // The file may have been removed by hand since: ask again each time the menu opens.
    connect(settings, &QMenu::aboutToShow, toggle, refresh);
    connect(toggle, &QAction::triggered, this, [this, hook, refresh]() mutable {
        if (!(hook.isInstalled() ? hook.uninstall() : hook.install()))
            QMessageBox::warning(this, tr("Dolphin's context menu"),
                                 tr("Could not change %1: %2").arg(hook.menuPath(), hook.errorString()));
        refresh();
    });
}

void MainWindow::addDolphinPlaceAction(QMenu *settings)
{
    placeAction_ = settings->addAction(QIcon::fromTheme(QStringLiteral("system-file-manager")),
                                       tr("Show \u201cSafe Copy\u201d in Dolphin's &Places"));
    placeAction_->setCheckable(true);
    placeAction_->setToolTip(tr("A place in Dolphin that lists the plugged-in sticks: files dropped there are copied "
                                "at the stick's own speed, and the copy ends when they are on it."));
    placeAction_->setVisible(place_->available());
    settings->menuAction()->setVisible(place_->available()); // the only entry: no empty menu without it
    // The places file may have changed in Dolphin since: read it again each time the menu opens.
    connect(settings, &QMenu::aboutToShow, place_, &DolphinPlace::refresh);
    connect(place_, &DolphinPlace::stateKnown, placeAction_, [this](bool present) {
        const QSignalBlocker quiet(placeAction_);
        placeAction_->setChecked(present);
    });
    connect(placeAction_, &QAction::triggered, place_, &DolphinPlace::setPresent);
    connect(place_, &DolphinPlace::failed, this, [this](const QString &message) {
        const QSignalBlocker quiet(placeAction_);
        placeAction_->setChecked(place_->present());
        QMessageBox::warning(this, tr("Dolphin's Places"), tr("Could not change Dolphin's places: %1").arg(message));
    });
}

void MainWindow::setDolphinPlaceHelper(const QString &helper)
{
    auto *place = new DolphinPlace(helper, this);
    // The action follows the new helper: the old one's connections go with it.
    delete place_;
    place_ = place;
    if (placeAction_) {
        QMenu *settings = qobject_cast<QMenu *>(placeAction_->parent());
        delete placeAction_;
        if (settings)
            addDolphinPlaceAction(settings);
    }
}

void MainWindow::offerDolphinPlace()
{
    QSettings settings;
    const QString asked = QStringLiteral("dolphin/askedAboutPlace");
    if (!place_->available() || settings.value(asked, false).toBool())
        return;
    auto *once = new QObject(this);
    connect(place_, &DolphinPlace::stateKnown, once, [this, once, asked](bool present) {
        once->deleteLater();
        // Asked once, whatever the answer (Settings is where it changes after that); a place already there counts
        // as an answer. A helper that failed leaves the question for the next start.
        QSettings().setValue(asked, true);
        if (present)
            return;
        auto *box = new QMessageBox(QMessageBox::Question, tr("Safe Copy in Dolphin"),
                                    tr("Add \u201cSafe Copy\u201d to Dolphin's Places?"), QMessageBox::NoButton, this);
        box->setInformativeText(tr("It lists your plugged-in USB sticks and memory cards. Files you drop onto one "
                                   "there are copied at the stick's own speed, and Dolphin's copy ends only when they "
                                   "are safely on it.\n\nYou can change this later in Settings."));
        QPushButton *add = box->addButton(tr("&Add to Places"), QMessageBox::AcceptRole);
        box->addButton(tr("&Not Now"), QMessageBox::RejectRole);
        box->setDefaultButton(add);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->setObjectName(QStringLiteral("dolphinPlaceQuestion"));
        connect(box, &QMessageBox::finished, this, [this, box, add] {
            if (box->clickedButton() == add)
                place_->setPresent(true);
        });
        box->open();
    });
    connect(place_, &DolphinPlace::failed, once, &QObject::deleteLater);
    place_->refresh();
}

MainWindow::~MainWindow()
{
    // The copies still running stop here, interrupted, keeping their part files (JobQueue's destructor), and
    // only then do their journal records lose their locks: no other window can claim a copy still running.
    jobViews_->endAll(tr("SaneCopy was closed before the copy finished; it is offered again at the next start."));
    delete questions_;
    delete bridge_;
}

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
    // Two formats, each given exactly its own arguments: one .arg() too many would put the count where the
    // percentage goes ("1 copy, 1 %" whatever the progress).
    return running == 1 ? tr("SaneCopy: 1 copy, %1 % on the device").arg(percent)
                        : tr("SaneCopy: %1 copies, %2 % on the device").arg(running).arg(percent);
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
    auto *dialog = new UnfinishedDialog(entries, present, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::finished, this, [this, dialog] {
        const QList<JournalEntry> chosen = dialog->checkedEntries();
        QSet<QString> taken;
        for (const JournalEntry &e : chosen) {
            if (dialog->choice() == UnfinishedDialog::Choice::Later)
                break;
            taken.insert(e.key);
            PendingCopy copy{optionsFor(e), e.key};
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
    Q_EMIT unfinishedOffered(int(entries.size()));
}

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
    copy_->setEnabled(n > 0 && !(destination_->destination().isEmpty() && destination_->deviceToMount().isEmpty()));
    if (n == 0)
        hint_->setText(tr("Drop files or folders above, or add them with the buttons."));
    else
        hint_->setText((n == 1 ? tr("Choose where to copy 1 item, then press Copy.")
                               : tr("Choose where to copy %1 items, then press Copy.").arg(n)) +
                       QLatin1Char(' ') +
                       tr("The copy runs at the device's own speed; when it says done, the data is on the device."));
}

void MainWindow::startCopy()
{
    const PathList sources = sources_->sources();
    const QByteArray destination = QFile::encodeName(destination_->destination());
    if (sources.isEmpty())
        return;
    if (destination.isEmpty()) {
        const QString block = destination_->deviceToMount();
        if (block.isEmpty())
            return;
        // A stick nobody mounted yet: UDisks2 mounts it where the desktop would, then the copy goes on.
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
        return;
    }
    const quint64 id = nextPlan_++;
    PendingCopy copy;
    copy.options.sources = sources;
    copy.options.destination = destination;
    copy.options.verify = verify_->isChecked();
    copy.options.move = move_->isChecked();
    copy.options.manifest = manifest_->isChecked();
    planning_.insert(id, copy);
    copy_->setEnabled(false);
    hint_->setText(tr("Checking the destination…"));
    bridge_->planAsync(id, sources, destination);
}

void MainWindow::onPlanned(quint64 requestId, const PlanSummary &plan)
{
    if (!planning_.contains(requestId))
        return;
    PendingCopy copy = planning_.take(requestId);
    updateHint();
    // A resumed copy's problems were shown when it was first queued; much of it is on the device already.
    if (copy.options.resume || (plan.problemsFor(-1).isEmpty() && plan.taken.isEmpty())) {
        queueCopy(copy, plan);
        return;
    }
    // Problems and names already taken are shown before the first byte is written, and the user decides. The
    // list of what to copy stays until a copy is queued: Cancel or another destination keep it.
    auto *dialog = new PlanDialog(plan, displayPath(copy.options.destination), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowModality(Qt::WindowModal);
    connect(dialog, &QDialog::finished, this, [this, dialog, copy, plan]() mutable {
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
            destination_->browseButton()->setFocus(Qt::OtherFocusReason);
            hint_->setText(tr("Choose another destination for the same files, then press Copy."));
            break;
        case PlanDialog::Choice::None:
            break;
        }
    });
    dialog->open();
    Q_EMIT problemsShown(dialog->problems());
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
                                                     : tr("%1 items").arg(options.sources.size());
    const QString dest = displayPath(options.destination);
    const QString where = QFileInfo(dest).fileName().isEmpty() ? dest : QFileInfo(dest).fileName();
    model_->addJob(jobId, options.resume ? tr("%1 → %2 (resumed)").arg(what, where) : tr("%1 → %2").arg(what, where),
                   dest, plan.mountPoint, plan.blockDevice, plan.removable);
    model_->setVerify(jobId, options.verify);
    jobViews_->addJob(jobId, options.sources.size() == 1 ? displayPath(options.sources.first()) : what, dest);
    Q_EMIT jobQueued(jobId);
}

void MainWindow::onFinished(quint64 jobId, bool ok, bool cancelled, qint64 bytes)
{
    questions_->memory().forget(jobId);
    // A copy whose stick was pulled is unfinished: its record stays for the next start. Any other end is an end.
    const QString key = journalKeys_.take(jobId);
    const int jobRow = model_->rowOf(jobId);
    // Plasma's view ends with the job: an error text only for a failure (a cancel is the user's own doing).
    jobViews_->onFinished(jobId, ok || cancelled || jobRow < 0 ? QString()
                                                               : model_->index(jobRow).data(JobModel::StatusRole).toString());
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
    const int row = model_->rowOf(jobId);
    if (row < 0)
        return;
    const QModelIndex i = model_->index(row);
    const bool removable = !i.data(JobModel::BlockDeviceRole).toString().isEmpty() && i.data(JobModel::CanEjectRole).toBool();
    const QString title = i.data(JobModel::TitleRole).toString();
    sendNotification(i.data(JobModel::DeviceRemovedRole).toBool()
                         ? removedNotification(title)
                         : notificationFor(title, ok, cancelled, bytes, removable,
                                           i.data(JobModel::SummaryRole).toString()));
}

void MainWindow::eject(quint64 jobId)
{
    const int row = model_->rowOf(jobId);
    if (row < 0)
        return;
    const QString block = model_->index(row).data(JobModel::BlockDeviceRole).toString();
    model_->setEjected(jobId, false, tr("Ejecting…"));
    Udisks::eject(block, this, [this, jobId](bool ok, const QString &message) { model_->setEjected(jobId, ok, message); });
}

} // namespace SaneCopy
