// SPDX-License-Identifier: GPL-2.0-or-later
//
// Each copy in Plasma's notification area, against a fake job view server on a private bus (never the user's):
// the view is asked for, gets bytes on the device (never bytes in the page cache), ends with the job, and Plasma's
// Cancel, Pause and Resume come back. Without a server nothing breaks and nothing waits.
#include "PlasmaJobViews.h"

#include "job_control.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QDBusObjectPath>
#include <QDBusVariant>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "PrivateBus.h"

#include <unistd.h>

using namespace SaneCopy;

// One job view as Plasma keeps it: the last value of each call.
class FakeJobView : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.kde.JobViewV2")
public:
    QHash<QString, qulonglong> total, processed;
    uint percent = 0;
    qulonglong speed = 0;
    bool suspended = false;
    bool terminated = false;
    QString terminateMessage;
    QStringList description;
    QString title; // the last info message: Plasma's title for the view
    uint error = 0;
    int calls = 0;

public Q_SLOTS:
    Q_SCRIPTABLE void terminate(const QString &m) { terminated = true, terminateMessage = m, ++calls; }
    Q_SCRIPTABLE void setSuspended(bool s) { suspended = s, ++calls; }
    Q_SCRIPTABLE void setTotalAmount(qulonglong a, const QString &u) { total[u] = a, ++calls; }
    Q_SCRIPTABLE void setProcessedAmount(qulonglong a, const QString &u) { processed[u] = a, ++calls; }
    Q_SCRIPTABLE void setPercent(uint p) { percent = p, ++calls; }
    Q_SCRIPTABLE void setSpeed(qulonglong s) { speed = s, ++calls; }
    Q_SCRIPTABLE void setInfoMessage(const QString &m) { description << m, title = m, ++calls; }
    Q_SCRIPTABLE void setError(uint e) { error = e, ++calls; }
    Q_SCRIPTABLE bool setDescriptionField(uint, const QString &n, const QString &v)
    {
        description << n + QLatin1String(": ") + v, ++calls;
        return true;
    }
    Q_SCRIPTABLE void clearDescriptionField(uint) { ++calls; }
    Q_SCRIPTABLE void setDestUrl(const QDBusVariant &) { ++calls; }

Q_SIGNALS:
    Q_SCRIPTABLE void cancelRequested();
    Q_SCRIPTABLE void suspendRequested();
    Q_SCRIPTABLE void resumeRequested();
};

class FakeJobViewServer : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "org.kde.JobViewServer")
public:
    explicit FakeJobViewServer(QDBusConnection bus) : bus_(bus) {}
    QList<FakeJobView *> views;
    QStringList requests;

public Q_SLOTS:
    Q_SCRIPTABLE QDBusObjectPath requestView(const QString &app, const QString &icon, int capabilities)
    {
        requests << QStringLiteral("%1 %2 %3").arg(app, icon).arg(capabilities);
        auto *view = new FakeJobView;
        view->setParent(this);
        const QString path = QStringLiteral("/JobViewServer/JobView_%1").arg(views.size() + 1);
        bus_.registerObject(path, view, QDBusConnection::ExportScriptableContents);
        views << view;
        return QDBusObjectPath(path);
    }

private:
    QDBusConnection bus_;
};

// The fake server on a connection of its own, under Plasma's name, for one test: gone with the scope.
struct ServedFake {
    QDBusConnection plasma;
    FakeJobViewServer server {plasma};
    explicit ServedFake(const QString &address, const QString &name)
        : plasma(QDBusConnection::connectToBus(address, name))
    {}
    bool serve()
    {
        return plasma.registerObject(PlasmaJobViews::serverPath(), &server,
                                     QDBusConnection::ExportScriptableContents) &&
               plasma.registerService(PlasmaJobViews::serverService());
    }
    ~ServedFake()
    {
        plasma.unregisterService(PlasmaJobViews::serverService());
        plasma.unregisterObject(PlasmaJobViews::serverPath());
    }
};

class TestPlasmaJobViews : public QObject {
    Q_OBJECT

    Test::PrivateBus bus_;
    QString address_;

    static JobProgress progress(quint64 id, sanecopy::JobState state, qint64 durable, qint64 written)
    {
        JobProgress p;
        p.jobId = id;
        p.state = int(state);
        p.totalBytes = 100 << 20;
        p.durableBytes = durable;
        p.writtenBytes = written;
        p.filesDone = 1;
        p.filesTotal = 3;
        p.deviceRate = 40e6;
        return p;
    }

private Q_SLOTS:
    void initTestCase() { SANECOPY_START_PRIVATE_BUS(bus_, address_); }

    void aCopyShowsBytesOnTheDeviceAndEndsWithTheJob()
    {
        ServedFake fake(address_, QStringLiteral("plasma"));
        QVERIFY(fake.serve());
        FakeJobViewServer &server = fake.server;

        PlasmaJobViews views(QDBusConnection::connectToBus(address_, QStringLiteral("app")));
        QSignalSpy cancel(&views, &PlasmaJobViews::cancelRequested);
        QSignalSpy suspend(&views, &PlasmaJobViews::suspendRequested);
        views.addJob(7, QStringLiteral("/home/me/video.mkv"), QStringLiteral("/media/me/STICK"));
        QTRY_VERIFY(!views.viewPath(7).isEmpty());
        QCOMPARE(server.requests, QStringList {QStringLiteral("SaneCopy io.github.sanecopy.SaneCopy 3")});
        FakeJobView *view = server.views.first();
        QTRY_VERIFY(view->description.join(QLatin1Char('\n')).contains(QStringLiteral("Destination: /media/me/STICK")));

        // 30 MiB on the device, 54 MiB handed to the kernel: Plasma is told 30.
        views.onProgress(progress(7, sanecopy::JobState::Running, 30 << 20, 54 << 20));
        QTRY_COMPARE(view->processed.value(QStringLiteral("bytes")), qulonglong(30 << 20));
        QCOMPARE(view->total.value(QStringLiteral("bytes")), qulonglong(100 << 20));
        QCOMPARE(view->total.value(QStringLiteral("files")), qulonglong(3));
        QTRY_COMPARE(view->percent, 30u);
        // Each call is a message of its own: the speed comes after the percentage, so wait for it too.
        QTRY_COMPARE(view->speed, qulonglong(40000000));
        // A full count is not 100 % before the final sync.
        views.onProgress(progress(7, sanecopy::JobState::Running, 100 << 20, 100 << 20));
        QTRY_COMPARE(view->processed.value(QStringLiteral("bytes")), qulonglong(100 << 20));
        QTRY_COMPARE(view->percent, 99u); // set after the bytes: it may still be on its way
        views.onProgress(progress(7, sanecopy::JobState::Paused, 100 << 20, 100 << 20));
        QTRY_VERIFY(view->suspended);

        // Plasma's buttons come back as the job's.
        Q_EMIT view->suspendRequested();
        QTRY_COMPARE(suspend.count(), 1);
        Q_EMIT view->cancelRequested();
        QTRY_COMPARE(cancel.count(), 1);
        QCOMPARE(cancel.first().first().toULongLong(), quint64(7));

        // The end is Plasma's one notification of the copy, with the window's headline.
        QVERIFY(views.onFinished(7, {{}, QStringLiteral("Safe to unplug"), false}));
        QTRY_VERIFY(view->terminated);
        QVERIFY(view->terminateMessage.isEmpty());
        QCOMPARE(view->percent, 100u);
        QCOMPARE(view->title, QStringLiteral("Safe to unplug"));
        QCOMPARE(view->error, 0u);
        // Nothing more goes to an ended view.
        const int calls = view->calls;
        views.onProgress(progress(7, sanecopy::JobState::Running, 1, 1));
        QTest::qWait(100);
        QCOMPARE(view->calls, calls);
    }

    void aFailureIsShownAsOne()
    {
        ServedFake fake(address_, QStringLiteral("plasma2"));
        QVERIFY(fake.serve());
        FakeJobViewServer &server = fake.server;
        PlasmaJobViews views(QDBusConnection::connectToBus(address_, QStringLiteral("app2")));
        views.addJob(1, QStringLiteral("/a"), QStringLiteral("/media/STICK"));
        // Ended before the server answered: the view is ended as soon as it exists, and the window notifies.
        QVERIFY(!views.onFinished(1, {QStringLiteral("The device was removed before the copy finished"), {}, false}));
        QTRY_COMPARE(server.views.size(), 1);
        QTRY_VERIFY(server.views.first()->terminated);
        QCOMPARE(server.views.first()->terminateMessage,
                 QStringLiteral("The device was removed before the copy finished"));
    }

    void aCancelledCopyLeavesNoNotification()
    {
        ServedFake fake(address_, QStringLiteral("plasma4"));
        QVERIFY(fake.serve());
        PlasmaJobViews views(QDBusConnection::connectToBus(address_, QStringLiteral("app4")));
        views.addJob(2, QStringLiteral("/a"), QStringLiteral("/media/STICK/a"));
        QTRY_VERIFY(!views.viewPath(2).isEmpty());
        // Plasma drops a view that ends "cancelled by the user"; the window's own notification says what was left.
        QVERIFY(!views.onFinished(2, {{}, QStringLiteral("Copy cancelled"), true}));
        FakeJobView *view = fake.server.views.first();
        QTRY_VERIFY(view->terminated);
        QCOMPARE(view->error, 1u);
        QVERIFY(!view->description.contains(QStringLiteral("Copy cancelled")));
    }

    void theViewsEndEvenWhenTheProgramEndsAtOnce()
    {
        ServedFake fake(address_, QStringLiteral("plasma3"));
        QVERIFY(fake.serve());
        FakeJobViewServer &server = fake.server;
        // This binary again, as a window closed with a copy running: endAll(), then the process is gone.
        QProcess app;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("SANECOPY_TEST_BUS"), address_);
        app.setProcessEnvironment(env);
        app.setProcessChannelMode(QProcess::ForwardedChannels);
        app.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--end-all-and-exit")});
        QSignalSpy done(&app, &QProcess::finished);
        QVERIFY(done.wait(20000));
        QCOMPARE(app.exitCode(), 0);
        QCOMPARE(server.views.size(), 1);
        // Whatever the bus had is delivered; give this thread's loop the moment to run it.
        QTRY_VERIFY_WITH_TIMEOUT(server.views.first()->terminated, 2000);
        QVERIFY(server.views.first()->terminateMessage.contains(QStringLiteral("closed")));
    }

    void withoutAServerNothingBreaks()
    {
        PlasmaJobViews views(QDBusConnection::connectToBus(address_, QStringLiteral("alone")));
        QElapsedTimer t;
        t.start();
        views.addJob(1, QStringLiteral("/a"), QStringLiteral("/b"));
        views.onProgress(progress(1, sanecopy::JobState::Running, 1, 2));
        QVERIFY(!views.onFinished(1, {})); // no view: the window notifies
        QVERIFY(t.elapsed() < 1000);       // nothing waited for an answer
        QTest::qWait(200);
        QVERIFY(views.viewPath(1).isEmpty());
        // And with no bus at all.
        PlasmaJobViews none(QDBusConnection(QStringLiteral("not connected")));
        none.addJob(2, QStringLiteral("/a"), QStringLiteral("/b"));
        none.onProgress(progress(2, sanecopy::JobState::Running, 1, 2));
        QVERIFY(!none.onFinished(2, {}));
    }
};

// --end-all-and-exit: a copy with its view, ended by endAll() as the window goes, and the process leaves at once,
// without the event loop or any destructor that might still send what was queued.
int main(int argc, char **argv)
{
    if (argc == 2 && qstrcmp(argv[1], "--end-all-and-exit") == 0) {
        QCoreApplication app(argc, argv);
        PlasmaJobViews views(
            QDBusConnection::connectToBus(qEnvironmentVariable("SANECOPY_TEST_BUS"), QStringLiteral("app")));
        views.addJob(3, QStringLiteral("/a"), QStringLiteral("/media/STICK"));
        if (!QTest::qWaitFor([&] { return !views.viewPath(3).isEmpty(); }, 10000))
            return 2;
        views.endAll(QStringLiteral("SaneCopy was closed"));
        ::_exit(0);
    }
    QApplication app(argc, argv);
    TestPlasmaJobViews test;
    return QTest::qExec(&test, argc, argv);
}
#include "TestPlasmaJobViews.moc"
