// SPDX-License-Identifier: GPL-2.0-or-later
//
// The window in the pseudo-locale en_XA (ui/po/pseudo_locale.py: every string about 40 % longer and accented),
// state by state: no text is clipped (a label or button narrower than its text needs, a wrapped label shorter
// than its lines) and none overlaps another, and the window still fits a 1366 pixel wide screen. Each state is
// saved as a PNG in the build folder (screenshots/pseudo-STATE.png) for a look.
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "MessageBar.h"
#include "PlanDialog.h"
#include "QueueView.h"
#include "SourceDropArea.h"
#include "Translations.h"
#include "WindowFixtures.h"
#include "test_paths.h"

#include <QAbstractButton>
#include <QDir>
#include <QFile>
#include <QGroupBox>
#include <QLabel>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace SaneCopy;
using sanecopy::JobState;

namespace {

QString describe(const QWidget *w)
{
    QString text;
    if (auto *l = qobject_cast<const QLabel *>(w))
        text = l->text();
    else if (auto *b = qobject_cast<const QAbstractButton *>(w))
        text = b->text();
    return QStringLiteral("%1 \"%2\" at %3x%4")
        .arg(QString::fromUtf8(w->metaObject()->className()), text.left(60))
        .arg(w->width())
        .arg(w->height());
}

bool hasText(const QWidget *w)
{
    if (auto *l = qobject_cast<const QLabel *>(w))
        return !l->text().isEmpty();
    if (auto *b = qobject_cast<const QAbstractButton *>(w))
        return !b->text().isEmpty();
    return false;
}

// Whether |w|'s text is cut off: a label or button narrower than its text, a wrapped label shorter than its lines.
bool clipped(const QWidget *w)
{
    if (auto *b = qobject_cast<const QAbstractButton *>(w))
        return b->sizeHint().width() > b->width() + 1;
    auto *l = qobject_cast<const QLabel *>(w);
    // A label that elides on purpose (a finished copy's one line, its whole text in the tooltip) gives up its
    // width: its size policy says so.
    if (!l || l->sizePolicy().horizontalPolicy() == QSizePolicy::Ignored)
        return false;
    if (l->wordWrap())
        return l->heightForWidth(l->width()) > l->height() + 1;
    return l->minimumSizeHint().width() > l->width() + 1 || l->contentsRect().height() + 1 < l->fontMetrics().height();
}

// The pairs of |texts| that lie over each other where both show (a row scrolled out of the list's view shows
// nowhere, and covers nothing).
QStringList overlapsIn(QWidget *top, const QList<QWidget *> &texts)
{
    auto shown = [top](const QWidget *w) {
        return w->visibleRegion().boundingRect().translated(w->mapTo(top, QPoint()));
    };
    QStringList out;
    for (int i = 0; i < texts.size(); ++i)
        for (int j = i + 1; j < texts.size(); ++j) {
            const bool nested = texts[i]->isAncestorOf(texts[j]) || texts[j]->isAncestorOf(texts[i]);
            if (!nested && shown(texts[i]).intersects(shown(texts[j])))
                out << QStringLiteral("overlap: ") + describe(texts[i]) + QStringLiteral(" / ") + describe(texts[j]);
        }
    return out;
}

// What of |top| shows text cut off, or over other text; |checked| counts the texts looked at.
QStringList problemsIn(QWidget *top, int &checked)
{
    QStringList out;
    QList<QWidget *> texts;
    for (QWidget *w : top->findChildren<QWidget *>()) {
        if (!w->isVisibleTo(top) || !hasText(w))
            continue;
        texts << w;
        ++checked;
        if (clipped(w))
            out << QStringLiteral("clipped: ") + describe(w);
    }
    return out + overlapsIn(top, texts);
}

void shoot(QWidget *w, const QString &state)
{
    const QString dir = QStringLiteral(SANECOPY_UI_TEST_DIR "/screenshots");
    QDir().mkpath(dir);
    w->grab().save(dir + QStringLiteral("/pseudo-%1.png").arg(state));
}

JobProgress progress(quint64 id, JobState state, qint64 total, qint64 durable, qint64 written, double rate)
{
    JobProgress p =
        Test::progressOf(id, state, total, durable, written, rate, rate > 0 ? double(total - durable) / rate : -1);
    p.currentFile = QStringLiteral("/home/me/Videos/holiday.mkv");
    return p;
}

} // namespace

class TestPseudoLocale : public QObject {
    Q_OBJECT

    // Lays |w| out at the size the window opens with (or larger, when its content asks for more), then checks.
    void check(QWidget *w, const QString &state, int atLeast)
    {
        QTest::qWait(50); // rows added to a shown layout are shown when events run
        w->resize(w->size().expandedTo(w->minimumSizeHint()));
        QCoreApplication::processEvents();
        shoot(w, state);
        int checked = 0;
        const QStringList problems = problemsIn(w, checked);
        QVERIFY2(checked >= atLeast, qPrintable(state + QStringLiteral(": only %1 texts looked at").arg(checked)));
        QVERIFY2(problems.isEmpty(), qPrintable(state + QStringLiteral(":\n") + problems.join(QLatin1Char('\n'))));
        QVERIFY2(w->minimumSizeHint().width() <= 1366,
                 qPrintable(state + QStringLiteral(": needs %1 pixels across").arg(w->minimumSizeHint().width())));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCOMPARE(loadTranslations(qApp, {QStringLiteral("en_XA")}), QStringLiteral("en_XA"));
        QVERIFY(QCoreApplication::translate("SaneCopy::MainWindow", "&Copy").startsWith(QStringLiteral("⟦")));
    }

    void theWindowStateByState()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        MainWindow w;
        w.resize(980, 760);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        check(&w, QStringLiteral("empty"), 12);

        w.sourceArea()->addSources({QFile::encodeName(dir.path())});
        Device stick = Test::stickAt(dir.path());
        stick.size = 16LL << 30;
        stick.free = 12LL << 30;
        w.destinationPicker()->setDevices({stick});
        check(&w, QStringLiteral("ready"), 12);

        // Copies in each state a row can be in.
        JobModel *m = w.model();
        w.queueView()->setEjectAvailable(true);
        m->addJob(1, QStringLiteral("holiday.mkv → STICK"), dir.path(), dir.path(), QStringLiteral("sdb1"), true);
        m->onProgress(progress(1, JobState::Running, 4LL << 30, 1LL << 30, (1LL << 30) + (20 << 20), 38e6));
        m->addJob(2, QStringLiteral("photos → STICK"), dir.path(), dir.path(), QStringLiteral("sdb1"), true);
        m->onProgress(progress(2, JobState::Paused, 2LL << 30, 1LL << 29, 1LL << 29, 0));
        m->addJob(3, QStringLiteral("big.iso → photos on nas"), QStringLiteral("/mnt/nas"), QStringLiteral("/mnt/nas"),
                  QString(), false);
        JobProgress stalled = progress(3, JobState::Running, 1000 << 20, 300 << 20, 310 << 20, 0);
        stalled.stalledSeconds = 12;
        stalled.share = true;
        m->onProgress(stalled);
        check(&w, QStringLiteral("copying"), 20);

        for (int i = 0; i < 2; ++i)
            m->onFileDone(1, QStringLiteral("/src/%1").arg(i), dir.path() + QStringLiteral("/%1").arg(i));
        m->onProgress(progress(1, JobState::Done, 4LL << 30, 4LL << 30, 4LL << 30, 38e6));
        m->onFinished(1, true, false, 4LL << 30, 2, 0);
        m->onFinished(2, false, true, 1LL << 29, 0, 0);
        check(&w, QStringLiteral("finished"), 20);

        w.messageBar()->ask(
            {QCoreApplication::translate("SaneCopy::MainWindow", "Add “Safe Copy” to Dolphin's Places?"),
             QCoreApplication::translate(
                 "SaneCopy::MainWindow",
                 "It lists your plugged-in USB sticks and memory cards. Files you drop onto one there "
                 "are copied at the stick's own speed, and Dolphin's copy ends only when they are "
                 "safely on it. You can change this later in Settings."),
             {{QCoreApplication::translate("SaneCopy::MainWindow", "&Add to Places"), [] {}},
              {QCoreApplication::translate("SaneCopy::MainWindow", "Not No&w"), [] {}}},
             {}});
        check(&w, QStringLiteral("question"), 22);
    }

    void thePlanDialog()
    {
        QTemporaryDir dir(QStringLiteral("/var/tmp/sanecopy-ui-XXXXXX"));
        QDir d(dir.path());
        QVERIFY(d.mkpath(QStringLiteral("src/photos")) && d.mkpath(QStringLiteral("out/photos")));
        for (const char *name : {"src/photos/a.jpg", "src/photos/b.jpg", "out/photos/a.jpg", "out/photos/b.jpg"}) {
            QFile f(d.filePath(QLatin1String(name)));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write("photo") == 5);
        }
        MainWindow w;
        w.resize(980, 760);
        w.show();
        w.sourceArea()->addSources({QFile::encodeName(d.filePath(QStringLiteral("src/photos")))});
        w.destinationPicker()->setDestination(d.filePath(QStringLiteral("out")));
        w.startCopy();
        PlanDialog *dialog = nullptr;
        QVERIFY(QTest::qWaitFor(
            [&] { return (dialog = w.findChild<PlanDialog *>()) != nullptr && dialog->isVisible(); }, 10000));
        check(dialog, QStringLiteral("plan"), 6);
        dialog->reject();
    }
};

QTEST_MAIN(TestPseudoLocale)
#include "TestPseudoLocale.moc"
