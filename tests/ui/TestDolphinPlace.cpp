// SPDX-License-Identifier: GPL-2.0-or-later
//
// The "Safe Copy" place from the window: Settings' checkable action and the question asked once at the first
// start, through the real sanecopy-places (KDE's KFilePlacesModel) in a home of the test's own. Without the KIO
// worker built (no KDE Frameworks), the cases that need the helper skip and say so.
#include "DolphinPlace.h"
#include "MainWindow.h"
#include "MessageBar.h"
#include "PrivateBus.h"

#include <QAction>
#include <QDBusConnection>
#include <QFile>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace SaneCopy;

// kded6 as far as the place needs it: the modules it was asked to load.
class FakeKded : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.kde.kded6")
public:
    QStringList loaded;
public Q_SLOTS:
    Q_SCRIPTABLE bool loadModule(const QString &name)
    {
        loaded << name;
        return true;
    }
};

class TestDolphinPlace : public QObject {
    Q_OBJECT

    Test::PrivateBus bus_;
    QString busAddress_;
    QTemporaryDir home_;
    const QString helper_ = QStringLiteral(SANECOPY_PLACES_HELPER_FOR_TESTS);

    QByteArray placesFile() const
    {
        QFile f(home_.filePath(QStringLiteral("data/user-places.xbel")));
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }
    void needHelper()
    {
        if (helper_.isEmpty())
            QSKIP("sanecopy-places is not built (no KDE Frameworks): nothing to add the place with");
    }
    bool waitKnown(DolphinPlace &place, bool want)
    {
        QSignalSpy known(&place, &DolphinPlace::stateKnown);
        QSignalSpy failed(&place, &DolphinPlace::failed);
        return known.wait(30000) && failed.isEmpty() && known.constLast().value(0).toBool() == want;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(home_.isValid());
        // The helper and the window both read these: nothing of the user's own is touched.
        qputenv("XDG_DATA_HOME", home_.filePath(QStringLiteral("data")).toUtf8());
        qputenv("XDG_CONFIG_HOME", home_.filePath(QStringLiteral("config")).toUtf8());
        QCoreApplication::setOrganizationName(QStringLiteral("SaneCopyTest"));
        // A session bus of the test's own, before anything connects to one: the place asks kded over it.
        busAddress_ = bus_.start();
        if (!busAddress_.isEmpty())
            qputenv("DBUS_SESSION_BUS_ADDRESS", busAddress_.toUtf8());
    }

    void addingThePlaceAsksTheSessionsKdedToLoadTheModule()
    {
        needHelper();
        if (busAddress_.isEmpty())
            QSKIP(qPrintable(bus_.skipReason()));
        QDBusConnection kdedBus = QDBusConnection::connectToBus(busAddress_, QStringLiteral("kded"));
        FakeKded kded;
        QVERIFY(kdedBus.registerObject(QStringLiteral("/kded"), &kded, QDBusConnection::ExportScriptableSlots));
        QVERIFY(kdedBus.registerService(QStringLiteral("org.kde.kded6")));
        DolphinPlace place(helper_);
        place.setPresent(true);
        QVERIFY(waitKnown(place, true));
        QTRY_COMPARE(kded.loaded, QStringList {QStringLiteral("sanecopydevices")});
        place.setPresent(false);
        QVERIFY(waitKnown(place, false));
        QTest::qWait(200);
        QCOMPARE(kded.loaded.size(), 1); // removing loads nothing
        kdedBus.unregisterService(QStringLiteral("org.kde.kded6"));
    }

    void addsAndRemovesThroughTheHelper()
    {
        needHelper();
        DolphinPlace place(helper_);
        QVERIFY(place.available());
        place.refresh();
        QVERIFY(waitKnown(place, false));
        place.setPresent(true);
        QVERIFY(waitKnown(place, true));
        QVERIFY(placesFile().contains("sanecopy://devices/"));
        QVERIFY(placesFile().contains("file://")); // KDE's Home place came with it
        place.setPresent(false);
        QVERIFY(waitKnown(place, false));
        QVERIFY(!placesFile().contains("sanecopy://devices/"));
    }

    void aHelperThatFailsIsSaid()
    {
        DolphinPlace place(QStringLiteral("/bin/false"));
        QSignalSpy failed(&place, &DolphinPlace::failed);
        place.setPresent(true);
        QVERIFY(failed.wait(10000));
        QVERIFY(!place.known());
    }

    void withoutTheWorkerThereIsNoSetting()
    {
        MainWindow window;
        window.setDolphinPlaceHelper(QString());
        QVERIFY(window.dolphinPlaceAction());
        QVERIFY(!window.dolphinPlaceAction()->isVisible());
        // Nor an empty Settings menu.
        const auto menus = window.dolphinPlaceAction()->associatedObjects();
        QVERIFY(!menus.isEmpty());
        for (QObject *menu : menus)
            if (auto *m = qobject_cast<QMenu *>(menu))
                QVERIFY(!m->menuAction()->isVisible());
        QSettings().remove(QStringLiteral("dolphin"));
        window.offerDolphinPlace(); // nothing to offer: no question, nothing remembered
        QVERIFY(!QSettings().contains(QStringLiteral("dolphin/askedAboutPlace")));
    }

    void theSettingFollowsThePlacesFile()
    {
        needHelper();
        MainWindow window;
        window.setDolphinPlaceHelper(helper_);
        QAction *action = window.dolphinPlaceAction();
        QVERIFY(action && action->isVisible() && action->isCheckable());
        QSignalSpy known(window.dolphinPlace(), &DolphinPlace::stateKnown);
        action->trigger(); // unchecked -> checked: add
        QVERIFY(known.wait(30000));
        QVERIFY(action->isChecked());
        QVERIFY(placesFile().contains("sanecopy://devices/"));
        action->trigger();
        QVERIFY(known.wait(30000));
        QVERIFY(!action->isChecked());
        QVERIFY(!placesFile().contains("sanecopy://devices/"));
    }

    void theFirstStartAsksOnceAndAddsOnYes()
    {
        needHelper();
        QSettings().remove(QStringLiteral("dolphin"));
        MainWindow window;
        window.setDolphinPlaceHelper(helper_);
        window.show();
        window.offerDolphinPlace();
        // Asked inside the window, not in a dialog over it.
        MessageBar *bar = window.messageBar();
        QVERIFY(QTest::qWaitFor([&] { return bar->isVisible(); }, 30000));
        QVERIFY(!window.findChild<QDialog *>());
        QVERIFY2(bar->text().contains(QStringLiteral("Dolphin")), qPrintable(bar->text()));
        QAbstractButton *add = nullptr;
        for (QAbstractButton *b : bar->buttons())
            if (b->text().contains(QStringLiteral("Add")))
                add = b;
        QVERIFY(add);
        QSignalSpy known(window.dolphinPlace(), &DolphinPlace::stateKnown);
        add->click();
        QVERIFY(known.wait(30000));
        QVERIFY(placesFile().contains("sanecopy://devices/"));

        // Asked once: a second start says nothing, even with the place gone again.
        DolphinPlace remover(helper_);
        remover.setPresent(false);
        QVERIFY(waitKnown(remover, false));
        MainWindow again;
        again.setDolphinPlaceHelper(helper_);
        again.show();
        again.offerDolphinPlace();
        QTest::qWait(3000);
        QVERIFY(!again.messageBar()->isVisible());
    }
};

QTEST_MAIN(TestDolphinPlace)
#include "TestDolphinPlace.moc"
