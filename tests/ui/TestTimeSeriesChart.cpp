// SPDX-License-Identifier: GPL-2.0-or-later
#include "TimeSeriesChart.h"

#include <QImage>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

class TestTimeSeriesChart : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void niceCeiling_data()
    {
        QTest::addColumn<double>("value");
        QTest::addColumn<double>("nice");
        QTest::newRow("37.2 MB/s") << 37.2 << 50.0;
        QTest::newRow("exact") << 40.0 << 50.0;
        QTest::newRow("just over a decade") << 101.0 << 200.0;
        QTest::newRow("quarter") << 2.3 << 2.5;
        QTest::newRow("tiny") << 0.013 << 0.02;
        QTest::newRow("nothing yet") << 0.0 << 1.0;
    }
    void niceCeiling()
    {
        QFETCH(double, value);
        QFETCH(double, nice);
        QCOMPARE(TimeSeriesChart::niceCeiling(value), nice);
    }

    void gridStepsAreRound_data()
    {
        QTest::addColumn<double>("top");
        QTest::addColumn<double>("step");
        QTest::addColumn<double>("axis");
        QTest::newRow("37.2 MiB/s") << 37.2 << 10.0 << 40.0;
        QTest::newRow("18.7 MiB dirty") << 18.7 << 5.0 << 20.0;
        QTest::newRow("24 MiB") << 24.0 << 5.0 << 25.0;
        QTest::newRow("a little") << 0.19 << 0.05 << 0.2;
        QTest::newRow("1500 MiB") << 1500.0 << 500.0 << 1500.0;
    }
    void gridStepsAreRound()
    {
        QFETCH(double, top);
        QFETCH(double, step);
        QFETCH(double, axis);
        TimeSeriesChart chart(QStringLiteral("Dirty"), QStringLiteral("MiB"), 1);
        const int s = chart.addSeries(QStringLiteral("system"), Qt::red);
        chart.addSample(s, 0, top);
        QCOMPARE(chart.axisStep(), step);
        QCOMPARE(chart.axisMaximum(), axis);
        // Every grid line is a whole number of steps, of which there are at most five.
        QVERIFY(chart.axisMaximum() / chart.axisStep() <= 5.0 + 1e-9);
    }

    void idleNoiseStaysSmallUnderTheFloor()
    {
        TimeSeriesChart chart(QStringLiteral("Dirty"), QStringLiteral("MiB"), 1024.0 * 1024.0);
        chart.setFloor(8);
        const int s = chart.addSeries(QStringLiteral("system"), Qt::red);
        chart.addSample(s, 0, 300 * 1024); // 300 KiB of someone else's writeback
        QCOMPARE(chart.axisMaximum(), 8.0);
        chart.addSample(s, 1, 19.0 * 1024 * 1024); // a copy: the axis follows it
        QCOMPARE(chart.axisMaximum(), 20.0);
    }

    void theTimeAxisFitsHowLongThereIsDataFor()
    {
        TimeSeriesChart chart(QStringLiteral("Throughput"), QStringLiteral("MiB/s"), 1);
        const int s = chart.addSeries(QStringLiteral("device"), Qt::darkGreen);
        chart.addSample(s, 100, 1);
        QCOMPARE(chart.span(), 30.0);
        chart.addSample(s, 145, 1);
        QCOMPARE(chart.span(), 60.0);
        chart.addSample(s, 400, 1);
        QCOMPARE(chart.span(), 120.0); // the window, at most
    }

    void samplesOutsideTheWindowAreDropped()
    {
        TimeSeriesChart chart(QStringLiteral("Throughput"), QStringLiteral("MB/s"), 1e6);
        const int s = chart.addSeries(QStringLiteral("device"), Qt::darkGreen);
        for (int t = 0; t <= 300; ++t)
            chart.addSample(s, t, 40e6);
        // 120 s at one sample a second, plus the one kept just outside so the line starts at the edge.
        QVERIFY(chart.sampleCount(s) <= 122);
        QVERIFY(chart.sampleCount(s) >= 120);
    }

    void axisFollowsWhatIsInTheWindowInDisplayUnits()
    {
        TimeSeriesChart chart(QStringLiteral("Dirty"), QStringLiteral("MiB"), 1024.0 * 1024.0);
        const int s = chart.addSeries(QStringLiteral("system"), Qt::red);
        chart.addSample(s, 0, 1500.0 * 1024 * 1024); // cp's 1.5 GiB...
        chart.addSample(s, 200, 20.0 * 1024 * 1024); // ...long gone
        QCOMPARE(chart.axisMaximum(), 20.0);
    }

    void rendersWithLegendAndAxes()
    {
        TimeSeriesChart chart(QStringLiteral("Throughput"), QStringLiteral("MB/s"), 1e6);
        const int a = chart.addSeries(QStringLiteral("on the device"), Qt::darkGreen);
        chart.resize(400, 200);
        for (int t = 0; t < 10; ++t)
            chart.addSample(a, t, 40e6);
        const QImage img = chart.grab().toImage();
        QVERIFY(!img.isNull());
        // The series colour is on screen: the line and the legend swatch were drawn.
        bool found = false;
        for (int y = 0; y < img.height() && !found; ++y)
            for (int x = 0; x < img.width() && !found; ++x)
                found = img.pixelColor(x, y) == QColor(Qt::darkGreen);
        QVERIFY(found);
    }
};

QTEST_MAIN(TestTimeSeriesChart)
#include "TestTimeSeriesChart.moc"
