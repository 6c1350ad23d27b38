// SPDX-License-Identifier: GPL-2.0-or-later
#include "DestinationPicker.h"

#include "DeviceWatcher.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QIcon>
#include <QToolButton>

#include <algorithm>
#include <utility>

namespace SaneCopy {

namespace {
enum Kind { DeviceEntry, FolderEntry, UnmountedEntry, EveryStickEntry };
const QString kUnmounted = QStringLiteral("unmounted:");    // + block device: the item data of an unmounted stick
const QString kEveryStick = QStringLiteral("every-stick:"); // the item data of "Every stick at once"

bool isMountedStick(const Device &d) { return d.mounted() && !d.share; }
} // namespace

DestinationPicker::DestinationPicker(QWidget *parent, bool watch) : QWidget(parent)
{
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    combo_ = new QComboBox(this);
    combo_->setAccessibleName(tr("Destination"));
    combo_->setAccessibleDescription(tr("Where to copy: the plugged-in sticks and the mounted shares, or the folder "
                                        "chosen with Browse"));
    combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo_->setMinimumContentsLength(30);
    combo_->setPlaceholderText(tr("Choose where to copy"));
    layout->addWidget(combo_, 1);
    // A button, not a last entry in the list: arrowing through a closed list activates each entry it passes,
    // and an entry that opens a modal file dialog would open it under the user's fingers.
    browse_ = new QToolButton(this);
    browse_->setIcon(QIcon::fromTheme(QStringLiteral("folder-open")));
    browse_->setText(tr("&Browse…"));
    browse_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    browse_->setToolTip(tr("Copy into a folder of your choice"));
    layout->addWidget(browse_);
    refresh_ = new QToolButton(this);
    refresh_->setIcon(QIcon::fromTheme(QStringLiteral("view-refresh")));
    refresh_->setText(tr("Refresh"));
    refresh_->setToolTip(tr("Look for devices again"));
    layout->addWidget(refresh_);
    connect(refresh_, &QToolButton::clicked, this, &DestinationPicker::refreshDevices);
    if (watch) {
        auto *watcher = new DeviceWatcher(this);
        connect(watcher, &DeviceWatcher::changed, this, &DestinationPicker::refreshDevices);
    }
    connect(combo_, &QComboBox::activated, this, [this] {
        userChose_ = true;
        Q_EMIT destinationChanged(destination());
    });
    connect(browse_, &QToolButton::clicked, this, [this] {
        auto *dialog = new QFileDialog(this, tr("Copy into"), destination());
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->setFileMode(QFileDialog::Directory);
        dialog->setOption(QFileDialog::ShowDirsOnly);
        connect(dialog, &QFileDialog::fileSelected, this, &DestinationPicker::setDestination);
        dialog->open();
    });
    rebuild();
}

QString DestinationPicker::destination() const
{
    if (combo_->currentIndex() < 0)
        return {};
    const int kind = combo_->currentData(Qt::UserRole + 1).toInt();
    return kind == UnmountedEntry || kind == EveryStickEntry ? QString() : combo_->currentData().toString();
}

QStringList DestinationPicker::destinations() const
{
    if (combo_->currentIndex() >= 0 && combo_->currentData(Qt::UserRole + 1).toInt() == EveryStickEntry) {
        QStringList all;
        for (const Device &d : std::as_const(devices_))
            if (isMountedStick(d))
                all << d.mountPoint;
        return all;
    }
    const QString one = destination();
    return one.isEmpty() ? QStringList() : QStringList {one};
}

QString DestinationPicker::deviceToMount() const
{
    if (combo_->currentData(Qt::UserRole + 1).toInt() != UnmountedEntry)
        return {};
    return combo_->currentData().toString().mid(kUnmounted.size());
}

void DestinationPicker::setDestination(const QString &folder)
{
    const QString before = destination();
    userChose_ = true;
    const bool device =
        std::any_of(devices_.cbegin(), devices_.cend(), [&](const Device &d) { return d.mountPoint == folder; });
    if (!device) {
        custom_ = folder;
        rebuild();
    }
    combo_->setCurrentIndex(combo_->findData(folder));
    if (destination() != before)
        Q_EMIT destinationChanged(destination());
}

void DestinationPicker::setDevices(const QList<Device> &devices)
{
    const QString before = destination();
    devices_ = devices;
    rebuild();
    Q_EMIT devicesChanged();
    if (destination() != before)
        Q_EMIT destinationChanged(destination());
}

void DestinationPicker::refreshDevices() { setDevices(currentRemovableDevices()); }

void DestinationPicker::rebuild()
{
    const QString current = combo_->count() ? combo_->currentData().toString() : QString();
    const int currentKind = combo_->count() ? combo_->currentData(Qt::UserRole + 1).toInt() : -1;
    const bool currentWasDevice = currentKind == DeviceEntry || currentKind == UnmountedEntry;
    combo_->clear();
    for (const Device &d : std::as_const(devices_))
        addEntry(d.share ? QStringLiteral("folder-network") : QStringLiteral("drive-removable-media-usb"), d.describe(),
                 d.mounted() ? d.mountPoint : kUnmounted + d.blockDevice, d.mounted() ? DeviceEntry : UnmountedEntry);
    // A class's worth of sticks: the same files onto each at once (sanecp --to, source_share.h). Never chosen on
    // its own: a stick more or less is no sign the user wants them all.
    if (const auto sticks = std::count_if(devices_.cbegin(), devices_.cend(), isMountedStick); sticks >= 2)
        addEntry(QStringLiteral("drive-removable-media"), tr("Every stick at once (%n sticks)", nullptr, int(sticks)),
                 kEveryStick, EveryStickEntry);
    if (!custom_.isEmpty() && combo_->findData(custom_) < 0)
        addEntry(QStringLiteral("folder"), custom_, custom_, FolderEntry);
    const QString home = QDir::homePath();
    if (combo_->findData(home) < 0)
        addEntry(QStringLiteral("user-home"), tr("Home folder (%1)").arg(home), home, FolderEntry);
    combo_->setCurrentIndex(entryToKeep(current, currentWasDevice));
}

void DestinationPicker::addEntry(const QString &icon, const QString &text, const QString &data, int kind)
{
    combo_->addItem(QIcon::fromTheme(icon), text, data);
    combo_->setItemData(combo_->count() - 1, kind, Qt::UserRole + 1);
}

// What is selected stays selected while it exists: a folder the user chose, or a device (another stick coming or
// going does not move the selection). Otherwise a stick is chosen only when it is the one there: with none, or
// with two, a guess would copy somewhere the user did not say (the home folder, the wrong stick), so nothing is
// chosen and Copy waits.
int DestinationPicker::entryToKeep(const QString &current, bool currentWasDevice) const
{
    int keep = (userChose_ || currentWasDevice) && !current.isEmpty() ? combo_->findData(current) : -1;
    if (keep < 0 && current.startsWith(kUnmounted)) {
        // The stick chosen before it was mounted is mounted now: the same stick stays chosen.
        for (const Device &d : std::as_const(devices_))
            if (d.mounted() && d.blockDevice == current.mid(kUnmounted.size()))
                keep = combo_->findData(d.mountPoint);
    }
    // A share that is always mounted (a NAS in fstab) is no sign of where this copy should go: only a single
    // removable device is chosen on its own. Devices are the combo's first entries, in this order.
    if (keep < 0 && std::count_if(devices_.begin(), devices_.end(), [](const Device &d) { return !d.share; }) == 1)
        keep = int(std::find_if(devices_.begin(), devices_.end(), [](const Device &d) { return !d.share; }) -
                   devices_.begin());
    return keep;
}

} // namespace SaneCopy
