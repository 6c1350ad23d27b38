// SPDX-License-Identifier: GPL-2.0-or-later
#include "MainWindow.h"

#include "DestinationPicker.h"
#include "DolphinPlace.h"
#include "EngineBridge.h"
#include "JobModel.h"
#include "MessageBar.h"
#include "PlasmaJobViews.h"
#include "QueueView.h"
#include "QuestionDialogs.h"
#include "SourceDropArea.h"
#include "SystemMonitor.h"
#include "TimeSeriesChart.h"
#include "Udisks.h"

#include <QCheckBox>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

// The icon resource lives in a static library, where the linker drops an initializer nothing refers to; this
// call refers to it. Q_INIT_RESOURCE must be used outside any namespace.
static void registerIconResource() { Q_INIT_RESOURCE(sanecopy_icons); }

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
    messages_ = new MessageBar(central);
    messages_->setObjectName(QStringLiteral("messages"));
    layout->addWidget(messages_);
    layout->addWidget(buildCopyBox(central));
    auto *split = new QSplitter(Qt::Vertical, central);
    split->addWidget(buildCopies(split));
    split->addWidget(buildCharts(split));
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // The same 3:2 from the start: the queue's own size hint is one row, which hid a second job below the fold.
    split->setSizes({300, 200});
    layout->addWidget(split, 1);
    setCentralWidget(central);

    monitor_ = new SystemMonitor(model_, throughput_, dirty_, this);
    questions_ = new QuestionDialogs(bridge_, this);
    connectEngine();
    connectWidgets();
    addMenus();

    destination_->refreshDevices();
    updateHint();
    resize(900, 720);
}

// What to copy, where to, and the choices: the window's top.
QWidget *MainWindow::buildCopyBox(QWidget *parent)
{
    auto *what = new QGroupBox(tr("Copy"), parent);
    auto *whatLayout = new QVBoxLayout(what);
    sources_ = new SourceDropArea(what);
    whatLayout->addWidget(sources_);
    auto *toRow = new QHBoxLayout;
    auto *toLabel = new QLabel(tr("&To:"), what);
    destination_ = new DestinationPicker(what);
    toLabel->setBuddy(destination_);
    copy_ = new QPushButton(QIcon::fromTheme(QStringLiteral("edit-copy")), tr("&Copy"), what);
    copy_->setToolTip(tr("Copy the files above to where they go, at the device's own speed (Enter)."));
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
    manifest_ = new QCheckBox(tr("Write chec&ksums"), what);
    manifest_->setToolTip(tr("Write SHA256SUMS on the device, which sha256sum -c checks later."));
    for (QCheckBox *box : {verify_, move_, manifest_})
        choices->addWidget(box);
    choices->addStretch();
    whatLayout->addLayout(choices);
    hint_ = new QLabel(what);
    hint_->setWordWrap(true);
    whatLayout->addWidget(hint_);
    // Tab goes as the eye reads, and Copy comes after the choices that change what it does.
    QWidget::setTabOrder(destination_->refreshButton(), verify_);
    QWidget::setTabOrder(verify_, move_);
    QWidget::setTabOrder(move_, manifest_);
    QWidget::setTabOrder(manifest_, copy_);
    return what;
}

// The copies, with a header that clears the finished ones.
QWidget *MainWindow::buildCopies(QWidget *parent)
{
    auto *copies = new QWidget(parent);
    auto *copiesLayout = new QVBoxLayout(copies);
    copiesLayout->setContentsMargins(0, 0, 0, 0);
    auto *header = new QHBoxLayout;
    auto *copiesLabel = new QLabel(tr("<b>Copies</b>"), copies);
    clearFinished_ = new QToolButton(copies);
    clearFinished_->setIcon(QIcon::fromTheme(QStringLiteral("edit-clear-history")));
    clearFinished_->setText(tr("Clear Fi&nished"));
    clearFinished_->setToolTip(tr("Take every finished copy off the list."));
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
    return copies;
}

QWidget *MainWindow::buildCharts(QWidget *parent)
{
    auto *charts = new QWidget(parent);
    auto *chartLayout = new QHBoxLayout(charts);
    chartLayout->setContentsMargins(0, 0, 0, 0);
    throughput_ = new TimeSeriesChart(tr("Throughput"), tr("MiB/s"), 1024.0 * 1024.0, charts);
    dirty_ = new TimeSeriesChart(tr("Dirty memory"), tr("MiB"), 1024.0 * 1024.0, charts);
    // Floors: the other programs' few hundred KiB of writeback stay a flat line at the bottom, not spikes.
    throughput_->setFloor(5);
    dirty_->setFloor(8);
    chartLayout->addWidget(throughput_);
    chartLayout->addWidget(dirty_);
    return charts;
}

// The engine's jobs into the model, the window and Plasma's job views, and back.
void MainWindow::connectEngine()
{
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
    connect(jobViews_, &PlasmaJobViews::cancelRequested, model_, &JobModel::onCancelAsked);
    connect(jobViews_, &PlasmaJobViews::suspendRequested, bridge_, &EngineBridge::pause);
    connect(jobViews_, &PlasmaJobViews::resumeRequested, bridge_, &EngineBridge::resume);
    connect(bridge_, &EngineBridge::discarded, this, [this](quint64 id, qint64 removed, const QStringList &errors) {
        journal_->forget(discarding_.take(id));
        if (!errors.isEmpty())
            QMessageBox::warning(this, tr("Discard"), errors.join(QLatin1Char('\n')));
        Q_EMIT unfinishedDiscarded(removed);
    });
}

void MainWindow::connectWidgets()
{
    connect(copy_, &QPushButton::clicked, this, &MainWindow::startCopy);
    connect(sources_, &SourceDropArea::sourcesChanged, this, &MainWindow::updateHint);
    connect(destination_, &DestinationPicker::destinationChanged, this, &MainWindow::updateHint);
    // UDisks2 may start after the window (or stop): Eject follows, checked whenever the devices change.
    connect(destination_, &DestinationPicker::devicesChanged, queue_,
            [this] { queue_->setEjectAvailable(Udisks::available()); });
    connect(queue_, &QueueView::pauseRequested, bridge_, &EngineBridge::pause);
    connect(queue_, &QueueView::resumeRequested, bridge_, &EngineBridge::resume);
    connect(queue_, &QueueView::cancelRequested, bridge_, &EngineBridge::cancel);
    connect(queue_, &QueueView::cancelRequested, model_, &JobModel::onCancelAsked);
    connect(queue_, &QueueView::ejectRequested, this, &MainWindow::eject);
}

MainWindow::~MainWindow()
{
    // The copies still running stop here, interrupted, keeping their part files (JobQueue's destructor), and
    // only then do their journal records lose their locks: no other window can claim a copy still running.
    jobViews_->endAll(tr("SaneCopy was closed before the copy finished; it is offered again at the next start."));
    delete questions_;
    delete bridge_;
}

} // namespace SaneCopy
