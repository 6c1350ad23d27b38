// SPDX-License-Identifier: GPL-2.0-or-later
#include "SourceDropArea.h"

#include <QFile>
#include <QListWidget>
#include <QMimeData>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

using namespace SaneCopy;

class TestSourceDropArea : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void uriListFromAFileManagerGivesLocalPaths()
    {
        QMimeData mime;
        // What Dolphin puts on a drag: text/uri-list, percent-encoded, CRLF-separated.
        mime.setData(QStringLiteral("text/uri-list"),
                     "file:///home/me/My%20Videos/holiday.mkv\r\nfile:///home/me/photos\r\nsmb://server/share/x\r\n");
        const PathList paths = SourceDropArea::localPaths(&mime);
        QCOMPARE(paths, (PathList {"/home/me/My Videos/holiday.mkv", "/home/me/photos"}));
    }

    void dropAddsSourcesOnceEach()
    {
        SourceDropArea area;
        QSignalSpy spy(&area, &SourceDropArea::sourcesChanged);
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(QStringLiteral("/tmp/a")), QUrl::fromLocalFile(QStringLiteral("/tmp/b"))});
        QVERIFY(area.addDropped(&mime));
        QCOMPARE(area.sources(), (PathList {"/tmp/a", "/tmp/b"}));
        QCOMPARE(spy.count(), 1);
        area.addSources({"/tmp/a"}); // already there
        QCOMPARE(spy.count(), 1);
        QCOMPARE(area.sources().size(), 2);
    }

    void foldersGetTheirIconWithoutAStatOnTheGuiThread()
    {
        QTemporaryDir dir;
        QFile f(dir.filePath(QStringLiteral("file.txt")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        SourceDropArea area;
        QSignalSpy known(&area, &SourceDropArea::foldersKnown);
        area.addSources({QFile::encodeName(dir.path()), QFile::encodeName(f.fileName())});
        auto *list = area.findChild<QListWidget *>();
        QVERIFY(list);
        QCOMPARE(list->count(), 2);
        // Listed at once, before anything was looked up; which one is a folder follows.
        QVERIFY(!list->item(0)->data(Qt::UserRole).toBool());
        QVERIFY(known.wait(5000));
        QVERIFY(list->item(0)->data(Qt::UserRole).toBool());
        QVERIFY(!list->item(1)->data(Qt::UserRole).toBool());
    }

    void nonFileDropIsIgnored()
    {
        SourceDropArea area;
        QMimeData mime;
        mime.setText(QStringLiteral("just text"));
        QDragEnterEvent enter(QPoint(5, 5), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QCoreApplication::sendEvent(&area, &enter);
        QVERIFY(!enter.isAccepted());
        QVERIFY(area.sources().isEmpty());
    }
};

QTEST_MAIN(TestSourceDropArea)
#include "TestSourceDropArea.moc"
