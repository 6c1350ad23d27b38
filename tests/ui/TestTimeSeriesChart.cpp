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
