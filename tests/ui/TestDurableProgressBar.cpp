// SPDX-License-Identifier: GPL-2.0-or-later
#include "DurableProgressBar.h"

#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestDurableProgressBar : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void fractionsAreClampedAndOrdered()
    {
        DurableProgressBar bar;
        bar.setFractions(0.5, 0.2); // written can never be behind durable
        QCOMPARE(bar.durable(), 0.5);
        QCOMPARE(bar.written(), 0.5);
        bar.setFractions(-1, 7);
        QCOMPARE(bar.durable(), 0.0);
        QCOMPARE(bar.written(), 1.0);
    }

    void drawsTwoShades()
    {
        DurableProgressBar bar;
        bar.resize(200, 20);
        bar.setFractions(0.25, 0.75);
        const QImage img = bar.grab().toImage();
        const QColor solid = img.pixelColor(20, 2);  // inside the durable part
        const QColor light = img.pixelColor(140, 2); // handed over, not yet on the device
        const QColor empty = img.pixelColor(190, 2);
        QVERIFY(solid != light);
        QVERIFY(light != empty);
        QVERIFY(solid != empty);
    }

    void aShareSaysOnTheShareToAScreenReader()
    {
        DurableProgressBar bar;
        bar.setFractions(0.42, 0.5);
        QCOMPARE(bar.accessibleName(), QStringLiteral("Progress on the device"));
        QCOMPARE(bar.accessibleDescription(), QStringLiteral("42 % on the device"));
        bar.setShare(true);
        QCOMPARE(bar.accessibleName(), QStringLiteral("Progress on the share"));
        QCOMPARE(bar.accessibleDescription(), QStringLiteral("42 % on the share"));
        bar.setOutcome(QStringLiteral("Cancelled"));
        QCOMPARE(bar.accessibleDescription(), QStringLiteral("Cancelled"));
    }

    void anEndedJobSaysSoWithoutAColouredFill()
    {
        DurableProgressBar bar;
        bar.resize(200, 20);
        bar.setFractions(0.72, 0.9);
        bar.setOutcome(QStringLiteral("Cancelled"));
        QCOMPARE(bar.accessibleDescription(), QStringLiteral("Cancelled"));
        const QImage img = bar.grab().toImage();
        const QColor highlight = bar.palette().color(QPalette::Highlight);
        for (int x = 2; x < 198; x += 4)
            QVERIFY2(img.pixelColor(x, 2) != highlight, qPrintable(QString::number(x)));
        bar.setOutcome({});
        QVERIFY(bar.grab().toImage().pixelColor(20, 2) == highlight);
    }
};

QTEST_MAIN(TestDurableProgressBar)
#include "TestDurableProgressBar.moc"
