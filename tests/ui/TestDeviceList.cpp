// SPDX-License-Identifier: GPL-2.0-or-later
// The destination list from a desktop's mountinfo and sysfs, as fixtures.
#include "DestinationPicker.h"
#include "DeviceList.h"

#include <QComboBox>
#include <QFile>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestDeviceList : public QObject {
    Q_OBJECT
private:
    static std::vector<sanecopy::MountEntry> fixtureMounts()
    {
        QFile f(QStringLiteral(SANECOPY_FIXTURES "/mountinfo/desktop.txt"));
        if (!f.open(QIODevice::ReadOnly))
            qFatal("fixture missing");
        const QByteArray text = f.readAll();
        return sanecopy::parse_mountinfo(std::string_view(text.constData(), size_t(text.size())));
    }

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void onlyRemovableDevicesByName()
    {
        const QList<Device> devices = removableDevices(
            fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"),
            [](const QString &mount, qint64 &size, qint64 &free) {
                size = mount.contains(QStringLiteral("Stick")) ? 16'000'000'000 : 64'000'000'000;
                free = size / 2;
                return true;
            });
        QCOMPARE(devices.size(), 2);
        QCOMPARE(devices[0].name, QStringLiteral("My Stick")); // the escaped space is unescaped
        QCOMPARE(devices[0].mountPoint, QStringLiteral("/media/anna/My Stick"));
        QCOMPARE(devices[0].blockDevice, QStringLiteral("sdb1"));
        QCOMPARE(devices[0].fsType, QStringLiteral("vfat"));
        QCOMPARE(devices[1].blockDevice, QStringLiteral("sdc1")); // a USB card reader that says removable=0
        QVERIFY(devices[0].describe().contains(QStringLiteral("free")));
    }

    void labelsFromUdisksWin()
    {
        const QList<Device> devices = removableDevices(
            fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"), {},
            [](const QString &block) { return block == QLatin1String("sdc1") ? QStringLiteral("BACKUP") : QString(); });
        QCOMPARE(devices.size(), 2);
        QCOMPARE(devices[0].name, QStringLiteral("BACKUP"));
        QCOMPARE(devices[0].size, qint64(-1)); // unknown, never shown as empty
        QVERIFY(!devices[0].describe().contains(QStringLiteral("free")));
    }

    void pickerListsDevicesFirstThenFolders()
    {
        DestinationPicker picker;
        Device d;
        d.mountPoint = QStringLiteral("/media/anna/STICK");
        d.name = QStringLiteral("STICK");
        d.blockDevice = QStringLiteral("sdb1");
        d.removable = true;
        picker.setDevices({d});
        auto *combo = picker.findChild<QComboBox *>();
        QVERIFY(combo);
        QCOMPARE(combo->itemData(0).toString(), QStringLiteral("/media/anna/STICK"));
        QCOMPARE(picker.destination(), QStringLiteral("/media/anna/STICK"));
        QVERIFY(combo->itemText(combo->count() - 1).startsWith(QStringLiteral("Choose")));
        picker.setDestination(QStringLiteral("/srv/backup"));
        QCOMPARE(picker.destination(), QStringLiteral("/srv/backup"));
    }
};

QTEST_MAIN(TestDeviceList)
#include "TestDeviceList.moc"
