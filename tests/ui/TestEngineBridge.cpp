// SPDX-License-Identifier: GPL-2.0-or-later
// Real copies through the GUI's engine bridge into temporary folders: signals arrive on the GUI thread, the
// questions wait for their answers, and the bytes arrive intact.
#include "EngineBridge.h"
#include "copy_job.h"
#include "fault_syscalls.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QStandardPaths>
#include <QTest>
#include <QThread>

using namespace SaneCopy;

namespace {
void writeFile(const QString &path, qint64 size, char seed)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray block(1 << 16, seed);
    for (int i = 0; i < block.size(); ++i)
        block[i] = char(seed + i * 31);
    for (qint64 done = 0; done < size; done += block.size())
        f.write(block.constData(), qMin<qint64>(block.size(), size - done));
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The choices of a plain copy of |source| to |destination|, as the window makes them.
EngineBridge::Options copyOf(const QString &source, const QString &destination)
{
    EngineBridge::Options o;
    o.sources = {QFile::encodeName(source)};
    o.destination = QFile::encodeName(destination);
    return o;
}

} // namespace

class TestEngineBridge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void realCopyReportsOnTheGuiThread()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QVERIFY(dir.isValid());
        writeFile(dir.filePath(QStringLiteral("a.bin")), 6 << 20, 1);
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("out")));
        EngineBridge bridge(nullptr, 0.05);
        QSignalSpy finished(&bridge, &EngineBridge::finished);
        QSignalSpy done(&bridge, &EngineBridge::fileDone);
        bool progressOnGuiThread = true;
        qint64 lastDurable = 0;
        connect(&bridge, &EngineBridge::progress, this, [&](const JobProgress &p) {
            progressOnGuiThread &= QThread::currentThread() == thread();
            lastDurable = p.durableBytes;
        });
        const EngineBridge::Options o =
            copyOf(dir.filePath(QStringLiteral("a.bin")), dir.filePath(QStringLiteral("out")));
        const quint64 id = bridge.submit(o);
        QVERIFY(finished.wait(30000));
        QCOMPARE(finished.first().at(0).toULongLong(), id);
        QVERIFY(finished.first().at(1).toBool()); // ok
        QCOMPARE(done.count(), 1);
        QVERIFY(progressOnGuiThread);
        QCOMPARE(lastDurable, qint64(6 << 20));
        QCOMPARE(readAll(dir.filePath(QStringLiteral("out/a.bin"))), readAll(dir.filePath(QStringLiteral("a.bin"))));
    }

    void conflictWaitsForTheAnswer_data()
    {
        QTest::addColumn<int>("answer");
        QTest::addColumn<QByteArray>("expected");
        QTest::addColumn<bool>("renamedExists");
        QTest::newRow("skip") << int(sanecopy::ConflictAnswer::Skip) << QByteArray("old") << false;
        QTest::newRow("overwrite") << int(sanecopy::ConflictAnswer::Overwrite) << QByteArray("new") << false;
        QTest::newRow("rename") << int(sanecopy::ConflictAnswer::Rename) << QByteArray("old") << true;
    }
    void conflictWaitsForTheAnswer()
    {
        QFETCH(int, answer);
        QFETCH(QByteArray, expected);
        QFETCH(bool, renamedExists);
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QFile src(dir.filePath(QStringLiteral("f.txt")));
        QVERIFY(src.open(QIODevice::WriteOnly));
        src.write("new");
        src.close();
        QFile old(dir.filePath(QStringLiteral("out/f.txt")));
        QVERIFY(old.open(QIODevice::WriteOnly));
        old.write("old");
        old.close();

        EngineBridge bridge(nullptr, 0.05);
        QSignalSpy asked(&bridge, &EngineBridge::conflictAsked);
        QSignalSpy finished(&bridge, &EngineBridge::finished);
        const EngineBridge::Options o = copyOf(src.fileName(), dir.filePath(QStringLiteral("out")));
        bridge.submit(o);
        QVERIFY(asked.wait(10000));
        QCOMPARE(asked.first().at(3).toString(), old.fileName());
        // The job is waiting: nothing finishes until the user answers.
        QVERIFY(!finished.wait(300));
        bridge.answerConflict(asked.first().at(1).toULongLong(), answer);
        QVERIFY(finished.wait(10000));
        QCOMPARE(readAll(old.fileName()), expected);
        QCOMPARE(QFile::exists(dir.filePath(QStringLiteral("out/f (1).txt"))), renamedExists);
    }

    void failedFileAsksRetrySkipAbort()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        writeFile(dir.filePath(QStringLiteral("big.bin")), 4 << 20, 3);
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        sanecopy::test::FaultSyscalls fs;
        fs.data_errno = EIO;
        fs.fail_after_bytes = 1 << 20;
        sanecopy::ScopedSyscalls seam(fs);
        EngineBridge bridge(nullptr, 0.05);
        QSignalSpy asked(&bridge, &EngineBridge::errorAsked);
        QSignalSpy finished(&bridge, &EngineBridge::finished);
        const EngineBridge::Options o =
            copyOf(dir.filePath(QStringLiteral("big.bin")), dir.filePath(QStringLiteral("out")));
        bridge.submit(o);
        QVERIFY(asked.wait(10000));
        QVERIFY(asked.first().at(3).toString().contains(QStringLiteral("Input/output error")));
        fs.data_errno = 0; // the stick is back
        bridge.answerError(asked.first().at(1).toULongLong(), int(sanecopy::ErrorAnswer::Retry));
        QVERIFY(finished.wait(10000));
        QVERIFY(finished.first().at(1).toBool());
        QCOMPARE(readAll(dir.filePath(QStringLiteral("out/big.bin"))),
                 readAll(dir.filePath(QStringLiteral("big.bin"))));
    }

    void planListsProblemsWithoutWriting()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        EngineBridge bridge;
        QSignalSpy planned(&bridge, &EngineBridge::planned);
        bridge.planAsync(42, {QFile::encodeName(dir.filePath(QStringLiteral("missing")))},
                         QFile::encodeName(dir.filePath(QStringLiteral("out"))));
        QVERIFY(planned.wait(10000));
        QCOMPARE(planned.first().at(0).toULongLong(), quint64(42));
        const QStringList problems = planned.first().at(1).value<PlanSummary>().problems;
        QCOMPARE(problems.size(), 1);
        QVERIFY(problems.first().contains(QStringLiteral("No such file")));
        QVERIFY(QDir(dir.filePath(QStringLiteral("out"))).isEmpty());
    }

    // Plasma's view of a one-item copy names where the item goes, as the plan resolved it: into the folder, or the
    // exact name.
    void planSaysWhereTheFirstItemGoes()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QFile file(dir.filePath(QStringLiteral("photo.jpg")));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write("jpeg") == 4);
        file.close();
        EngineBridge bridge;
        QSignalSpy planned(&bridge, &EngineBridge::planned);
        const QByteArray source = QFile::encodeName(file.fileName());
        bridge.planAsync(1, {source}, QFile::encodeName(dir.filePath(QStringLiteral("out"))));
        bridge.planAsync(2, {source}, QFile::encodeName(dir.filePath(QStringLiteral("out/renamed.jpg"))));
        QTRY_COMPARE_WITH_TIMEOUT(planned.size(), 2, 10000);
        QHash<quint64, QString> targets;
        for (const QList<QVariant> &args : planned)
            targets.insert(args.at(0).toULongLong(), args.at(1).value<PlanSummary>().firstTarget);
        QCOMPARE(targets.value(1), dir.filePath(QStringLiteral("out/photo.jpg")));
        QCOMPARE(targets.value(2), dir.filePath(QStringLiteral("out/renamed.jpg")));
    }

    void cancelWhileAQuestionIsOpenDoesNotHang()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir(dir.path()).mkdir(QStringLiteral("out"));
        QFile src(dir.filePath(QStringLiteral("f")));
        QVERIFY(src.open(QIODevice::WriteOnly));
        src.write("x");
        src.close();
        QFile::copy(src.fileName(), dir.filePath(QStringLiteral("out/f")));
        auto *bridge = new EngineBridge(nullptr, 0.05);
        QSignalSpy asked(bridge, &EngineBridge::conflictAsked);
        const EngineBridge::Options o = copyOf(src.fileName(), dir.filePath(QStringLiteral("out")));
        bridge->submit(o);
        QVERIFY(asked.wait(10000));
        // regression: destroying the bridge with a job blocked on a question must not deadlock
        delete bridge;
        QVERIFY(QFile::exists(dir.filePath(QStringLiteral("out/f"))));
    }
};

QTEST_MAIN(TestEngineBridge)
#include "TestEngineBridge.moc"
