// SPDX-License-Identifier: GPL-2.0-or-later
// The destination list from a desktop's mountinfo and sysfs, as fixtures.
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "DeviceWatcher.h"
#include "test_paths.h"

#include <QComboBox>
#include <QToolButton>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <sys/mount.h>
#include <unistd.h>

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
        const QList<Device> devices =
            removableDevices(fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"),
                             [](const QString &mount, qint64 &size, qint64 &free) {
                                 size = mount.contains(QStringLiteral("Stick")) ? 16'000'000'000 : 64'000'000'000;
                                 free = size / 2;
                                 return true;
                             });
        QCOMPARE(devices.size(), 2);
        // Sorted by name. A USB card reader that says removable=0, named by its model (sysfs), comes first.
        QCOMPARE(devices[0].blockDevice, QStringLiteral("sdc1"));
        QCOMPARE(devices[0].name, QStringLiteral("Generic USB SD Reader"));
        QCOMPARE(devices[1].name, QStringLiteral("My Stick")); // the escaped space is unescaped
        QCOMPARE(devices[1].mountPoint, QStringLiteral("/media/anna/My Stick"));
        QCOMPARE(devices[1].blockDevice, QStringLiteral("sdb1"));
        QCOMPARE(devices[1].fsType, QStringLiteral("vfat"));
        QVERIFY(devices[1].describe().contains(QStringLiteral("free")));
    }

    void labelsFromUdisksWin()
    {
        const QList<Device> devices =
            removableDevices(fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"), {}, [](const QString &block) {
                return block == QLatin1String("sdc1") ? QStringLiteral("BACKUP") : QString();
            });
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
        // Then the home folder; any other folder is behind Browse…, not an entry that opens a dialog.
        QVERIFY(combo->itemText(combo->count() - 1).startsWith(QStringLiteral("Home folder")));
        QVERIFY(picker.browseButton()->isVisibleTo(&picker));
        picker.setDestination(QStringLiteral("/srv/backup"));
        QCOMPARE(picker.destination(), QStringLiteral("/srv/backup"));
    }

    static Device stick(const char *mountPoint, const char *name)
    {
        Device d;
        d.mountPoint = QString::fromUtf8(mountPoint);
        d.name = QString::fromUtf8(name);
        d.blockDevice = d.name.toLower() + QStringLiteral("1");
        d.removable = true;
        return d;
    }

    void selectionStaysWhileItExists()
    {
        DestinationPicker picker(nullptr, false);
        picker.setDevices({stick("/media/a", "A"), stick("/media/b", "B")});
        QCOMPARE(picker.destination(), QString()); // two sticks: which one is the user's to say
        picker.setDestination(QStringLiteral("/media/b"));
        // Another stick comes, listed first: the chosen one stays chosen.
        picker.setDevices({stick("/media/c", "0C"), stick("/media/a", "A"), stick("/media/b", "B")});
        QCOMPARE(picker.destination(), QStringLiteral("/media/b"));
        // The chosen one is pulled out: the selection can't stay on it.
        QSignalSpy changed(&picker, &DestinationPicker::destinationChanged);
        picker.setDevices({stick("/media/c", "0C"), stick("/media/a", "A")});
        QCOMPARE(picker.destination(), QString()); // and no other is guessed instead
        QCOMPARE(changed.count(), 1);
    }

    void anotherStickDoesNotMoveTheSelectedDevice()
    {
        DestinationPicker picker(nullptr, false);
        picker.setDevices({stick("/media/a", "A")});
        QCOMPARE(picker.destination(), QStringLiteral("/media/a"));
        picker.setDevices({stick("/media/c", "0C"), stick("/media/a", "A")});
        QCOMPARE(picker.destination(), QStringLiteral("/media/a"));
    }

    void theOneStickIsChosenNothingElseIsGuessed()
    {
        DestinationPicker picker(nullptr, false);
        picker.setDevices({});
        QCOMPARE(picker.destination(), QString());               // no stick: not the home folder either
        QVERIFY(picker.list()->findData(QDir::homePath()) >= 0); // though it is one choice away
        QSignalSpy devices(&picker, &DestinationPicker::devicesChanged);
        QSignalSpy changed(&picker, &DestinationPicker::destinationChanged);
        picker.setDevices({stick("/media/a", "A")});
        QCOMPARE(picker.destination(), QStringLiteral("/media/a"));
        QCOMPARE(devices.count(), 1);
        QCOMPARE(changed.count(), 1);
    }

    void sharesAreListedByServerAndNeverGuessed()
    {
        // The fixture's sshfs mount, named as a person knows it; gvfs's one mount for every remote folder is not
        // a share.
        const QList<Device> shares = networkShares(fixtureMounts(), {});
        QCOMPARE(shares.size(), 1);
        QCOMPARE(shares[0].name, QStringLiteral("srv on nas"));
        QCOMPARE(shares[0].mountPoint, QStringLiteral("/home/anna/remote"));
        QVERIFY(shares[0].share);
        QVERIFY(!shares[0].removable);

        DestinationPicker picker(nullptr, false);
        picker.setDevices(shares);
        QCOMPARE(picker.destination(), QString()); // a share always mounted says nothing about this copy
        QCOMPARE(picker.list()->itemData(0).toString(), QStringLiteral("/home/anna/remote"));
        picker.setDevices(QList<Device> {stick("/media/a", "A")} + shares);
        QCOMPARE(picker.destination(), QStringLiteral("/media/a")); // the one stick still is
        DestinationPicker sharesFirst(nullptr, false);
        sharesFirst.setDevices(shares + QList<Device> {stick("/media/a", "A")});
        QCOMPARE(sharesFirst.destination(), QStringLiteral("/media/a")); // wherever it stands in the list
    }

    void unmountedStickFromSysfsAndUdev()
    {
        const QList<Device> devices = unmountedRemovableDevices(
            fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"), QStringLiteral(SANECOPY_FIXTURES "/udev"));
        // sdb1 is mounted, sdb holds only a partition table, the NVMe disk and loop3 are not removable.
        QCOMPARE(devices.size(), 1);
        QCOMPARE(devices[0].blockDevice, QStringLiteral("sdb2"));
        QCOMPARE(devices[0].fsType, QStringLiteral("exfat"));
        QCOMPARE(devices[0].name, QStringLiteral("PHOTOS 2026")); // udev's escaped label, not its '_' form
        QCOMPARE(devices[0].size, qint64(2097152) * 512);
        QVERIFY(!devices[0].mounted());
        QVERIFY(devices[0].describe().contains(QStringLiteral("not mounted yet")));
        // UDisks2's label wins when it is there.
        const QList<Device> labelled = unmountedRemovableDevices(
            fixtureMounts(), QStringLiteral(SANECOPY_FIXTURES "/sysfs"), QStringLiteral(SANECOPY_FIXTURES "/udev"),
            [](const QString &) { return QStringLiteral("Holiday"); });
        QCOMPARE(labelled.value(0).name, QStringLiteral("Holiday"));
    }

    void anUnmountedStickIsAChoiceToMount()
    {
        DestinationPicker picker(nullptr, false);
        Device photos = stick("", "PHOTOS");
        photos.blockDevice = QStringLiteral("sdb2");
        picker.setDevices({photos});
        QCOMPARE(picker.destination(), QString()); // nothing to copy into until it is mounted
        QCOMPARE(picker.deviceToMount(), QStringLiteral("sdb2"));
        // Mounted now (by the window or the desktop), listed after another stick: it stays the choice.
        photos.mountPoint = QStringLiteral("/media/anna/PHOTOS");
        picker.setDevices({stick("/media/a", "A"), photos});
        QCOMPARE(picker.destination(), QStringLiteral("/media/anna/PHOTOS"));
        QCOMPARE(picker.deviceToMount(), QString());
    }

    void watcherSeesMountAndUnmount()
    {
        if (::geteuid() != 0)
            QSKIP("SKIPPED LOUDLY: needs root to mount a tmpfs; packaging/dev.sh test runs the suite as root");
        // Mountinfo alone: a udev or UDisks2 event elsewhere on the machine must not pass this test.
        DeviceWatcher watcher(nullptr, 50, DeviceWatcher::Mounts);
        QVERIFY(watcher.watchesMounts());
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QByteArray path = QFile::encodeName(dir.path());
        QSignalSpy spy(&watcher, &DeviceWatcher::changed);
        QCOMPARE(::mount("sanecopy-test", path.constData(), "tmpfs", 0, "size=1m"), 0);
        // Unmounted even when a check below fails.
        struct Unmount {
            QByteArray path;
            ~Unmount()
            {
                if (!path.isEmpty())
                    ::umount2(path.constData(), MNT_DETACH);
            }
        } guard {path};
        QVERIFY(spy.wait(5000));
        spy.clear();
        QCOMPARE(::umount2(path.constData(), 0), 0);
        guard.path.clear();
        QVERIFY(spy.wait(5000));
    }
};

QTEST_MAIN(TestDeviceList)
#include "TestDeviceList.moc"
