// SPDX-License-Identifier: GPL-2.0-or-later
//
// Renders SaneCopy's window offscreen while it copies, and saves it as a PNG (docs/screenshot.png):
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot OUT.png SECONDS DEST FILE...
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot --unfinished OUT.png   (the question at start, when there are
//                                                                          unfinished copies under $XDG_STATE_HOME)
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot --states OUTDIR WORKDIR  (the window empty, the plan dialog, a
//       conflict, a cancelled copy and two copies queued, each saved as OUTDIR/window-STATE.png; WORKDIR gets
//       the files they need)
//   sanecopy-screenshot --background OUT.png WORKDIR  (copying in the background: the tray icon and its tooltip;
//       on an X display with a system tray, see tests/ui/test_background.py)
// SANECOPY_SCREENSHOT_COLORS=FILE.colors gives the window a KDE color scheme (BreezeDark.colors) and
// SANECOPY_SCREENSHOT_ICONS=NAME an icon theme (breeze-dark), as Plasma's platform theme would: a screenshot of
// the dark scheme without a Plasma session. QT_STYLE_OVERRIDE=Breeze picks the style, QT_SCALE_FACTOR=2 gives 200 %.
// A developer tool, not part of the app: it drives the same MainWindow through its command-line entry point.
#include "CommandLine.h"
#include "MainWindow.h"
#include "PlanDialog.h"
#include "DestinationPicker.h"
#include "JobModel.h"
#include "QuestionDialogs.h"
#include "QueueView.h"
#include "SourceDropArea.h"
#include "Translations.h"
#include "UnfinishedDialog.h"
#include "fault_syscalls.h"

#include <QAbstractButton>
#include <QCheckBox>
#include <QFile>
#include <QMessageBox>
#include <sys/stat.h>

#include <QApplication>
#include <QDir>
#include <QIcon>
#include <QLocale>
#include <QPalette>
#include <QSettings>
#include <QScreen>
#include <QSystemTrayIcon>
#include <QToolTip>
#include <QEventLoop>
#include <QTimer>
#include <cstdio>

namespace {

// The palette of a KDE color scheme file: each group's BackgroundNormal and ForegroundNormal ("r,g,b") for the
// roles Plasma's platform theme gives them.
QPalette paletteFrom(const QString &colorsFile)
{
    QSettings scheme(colorsFile, QSettings::IniFormat);
    auto color = [&](const char *group, const char *key) {
        const QStringList rgb =
            scheme.value(QStringLiteral("Colors:%1/%2").arg(QLatin1String(group), QLatin1String(key))).toStringList();
        return rgb.size() >= 3 ? QColor(rgb[0].toInt(), rgb[1].toInt(), rgb[2].toInt()) : QColor();
    };
    // Light, mid and dark shades (grid lines, frames) derived from the button and window colours, as Qt does.
    const QColor button = color("Button", "BackgroundNormal"), window = color("Window", "BackgroundNormal");
    QPalette p = button.isValid() && window.isValid() ? QPalette(button, window) : QApplication::palette();
    const struct {
        const char *group;
        QPalette::ColorRole background, foreground;
    } roles[] = {{"Window", QPalette::Window, QPalette::WindowText},
                 {"View", QPalette::Base, QPalette::Text},
                 {"Button", QPalette::Button, QPalette::ButtonText},
                 {"Selection", QPalette::Highlight, QPalette::HighlightedText},
                 {"Tooltip", QPalette::ToolTipBase, QPalette::ToolTipText}};
    for (const auto &r : roles) {
        if (const QColor bg = color(r.group, "BackgroundNormal"); bg.isValid())
            p.setColor(r.background, bg);
        if (const QColor fg = color(r.group, "ForegroundNormal"); fg.isValid())
            p.setColor(r.foreground, fg);
    }
    if (const QColor alt = color("View", "BackgroundAlternate"); alt.isValid())
        p.setColor(QPalette::AlternateBase, alt);
    if (const QColor inactive = color("Window", "ForegroundInactive"); inactive.isValid())
        p.setColor(QPalette::PlaceholderText, inactive);
    return p;
}

bool save(QWidget *w, const QString &path)
{
    const bool ok = w->grab().save(path);
    std::printf("%s %s\n", ok ? "saved" : "could not save", qPrintable(path));
    return ok;
}

void write(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    if (f.open(QIODevice::WriteOnly))
        f.write(bytes);
}

// The photos (three of them on the destination already), a video, and a FIFO among the photos.
void makeSources(const QString &work)
{
    QDir(work).mkpath(QStringLiteral("src/Holiday photos"));
    QDir(work).mkpath(QStringLiteral("dest/Holiday photos"));
    for (int i = 0; i < 6; ++i) {
        const QString name = QStringLiteral("/Holiday photos/IMG_%1.jpg").arg(i, 4, 10, QLatin1Char('0'));
        write(work + QStringLiteral("/src") + name, QByteArray(300 * 1024 + i, 'p'));
        if (i < 3) // three of them are on the destination already
            write(work + QStringLiteral("/dest") + name, QByteArray(290 * 1024, 'o'));
    }
    write(work + QStringLiteral("/src/video.mp4"), QByteArray(64 << 20, 'v'));
    ::mkfifo(QFile::encodeName(work + QStringLiteral("/src/Holiday photos/pipe")).constData(), 0644);
}

// The plan dialog and the first question of a copy of the photos, each saved; false when a save failed.
bool planAndAsk(SaneCopy::MainWindow &window, const QString &out, const QString &work)
{
    // The plan: a special file in the folder, and three photos already there ("ask for each file" is kept).
    bool ok = true;
    const QByteArray dest = QFile::encodeName(work + QStringLiteral("/dest"));
    window.sourceArea()->addSources({QFile::encodeName(work + QStringLiteral("/src/Holiday photos"))});
    window.destinationPicker()->setDestination(QFile::decodeName(dest));
    QEventLoop loop;
    QObject::connect(&window, &SaneCopy::MainWindow::problemsShown, &loop, [&] {
        QTimer::singleShot(300, &loop, [&] {
            auto *box = window.findChild<SaneCopy::PlanDialog *>();
            ok = box && save(box, out + QStringLiteral("/window-plan.png")) && ok;
            for (QAbstractButton *b : box ? box->buttons() : QList<QAbstractButton *>())
                if (b->text().startsWith(QLatin1String("Copy the Rest")))
                    b->click();
        });
    });
    // Then the first existing photo asks.
    QObject::connect(
        window.questions(), &SaneCopy::QuestionDialogs::dialogShown, &loop,
        [&](QMessageBox *box) {
            QTimer::singleShot(300, &loop, [&, box] {
                ok = save(box, out + QStringLiteral("/window-conflict.png")) && ok;
                box->checkBox()->setChecked(true);
                for (QAbstractButton *b : box->buttons())
                    if (b->text() == QLatin1String("&Skip"))
                        b->click();
                loop.quit();
            });
        },
        Qt::SingleShotConnection);
    window.startCopy();
    loop.exec();
    return ok;
}

// Each state in turn, driven through the window's own entry points; the copy is slowed by the syscall seam
// (256 KiB every 20 ms) so it can be caught running and cancelled.
int states(const QString &out, const QString &work)
{
    makeSources(work);
    auto slow = sanecopy::test::SlowSeam::to_watch();

    SaneCopy::MainWindow window;
    window.resize(980, 700);
    window.show();
    QApplication::processEvents();
    bool ok = save(&window, out + QStringLiteral("/window-empty.png"));

    const QByteArray dest = QFile::encodeName(work + QStringLiteral("/dest"));
    ok = planAndAsk(window, out, work) && ok;
    QEventLoop loop;

    // A copy cancelled halfway.
    SaneCopy::CommandLine video;
    video.files = {QFile::encodeName(work + QStringLiteral("/src/video.mp4"))};
    video.destination = dest;
    window.applyCommandLine(video);
    QTimer::singleShot(2500, &loop, [&] {
        const int row = window.model()->rowCount() - 1;
        window.queueView()->cancelRequested(window.model()->jobIdAt(row));
        QTimer::singleShot(1500, &loop, [&] { loop.quit(); });
    });
    loop.exec();
    ok = save(&window, out + QStringLiteral("/window-cancelled.png")) && ok;

    // Two copies queued at once: the video runs, and the second copy to the same device waits its turn.
    window.applyCommandLine(video);
    SaneCopy::CommandLine photos;
    photos.files = {QFile::encodeName(work + QStringLiteral("/src/Holiday photos/IMG_0004.jpg")),
                    QFile::encodeName(work + QStringLiteral("/src/Holiday photos/IMG_0005.jpg"))};
    QDir(work).mkpath(QStringLiteral("dest/Later"));
    photos.destination = QFile::encodeName(work + QStringLiteral("/dest/Later"));
    QTimer::singleShot(300, &loop, [&] { window.applyCommandLine(photos); });
    QTimer::singleShot(2500, &loop, [&] { loop.quit(); });
    loop.exec();
    ok = save(&window, out + QStringLiteral("/window-two-jobs.png")) && ok;
    return ok ? 0 : 1;
}

// Copying in the background: the window closed into a system-tray icon whose tooltip carries the copy's bytes on
// the device. Needs a real X display with a tray (Xvfb and stalonetray in tests/ui/test_background.py); the
// whole screen is saved, the icon's own tooltip showing. Exit 77 when there is no tray.
int background(const QString &out, const QString &work)
{
    if (!QSystemTrayIcon::isSystemTrayAvailable()) {
        std::printf("SKIP: no system tray on this display\n");
        return 77;
    }
    QDir(work).mkpath(QStringLiteral("dest"));
    write(work + QStringLiteral("/Holiday video.mp4"), QByteArray(96 << 20, 'v'));
    auto slow = sanecopy::test::SlowSeam::to_watch();

    SaneCopy::MainWindow window;
    window.resize(900, 600);
    window.show();
    SaneCopy::CommandLine cmd;
    cmd.files = {QFile::encodeName(work + QStringLiteral("/Holiday video.mp4"))};
    cmd.destination = QFile::encodeName(work + QStringLiteral("/dest"));
    window.applyCommandLine(cmd);
    int rc = 1;
    QTimer::singleShot(2500, &window, [&] { window.keepCopyingInBackground(); });
    QTimer::singleShot(5000, &window, [&] {
        QSystemTrayIcon *tray = window.trayIcon();
        const QString tip = tray ? tray->toolTip() : QString();
        std::printf("window %s, tray %s, tooltip: %s\n", window.isVisible() ? "shown" : "hidden",
                    tray && tray->isVisible() ? "shown" : "missing", qPrintable(tip));
        if (!tray || !tray->isVisible() || window.isVisible() || !tip.contains(QStringLiteral("on the device"))) {
            QApplication::exit(1);
            return;
        }
        // The tooltip a pointer resting on the icon shows.
        QToolTip::showText(tray->geometry().bottomLeft() + QPoint(4, 4), tip);
        QTimer::singleShot(800, &window, [&] {
            const bool ok = QGuiApplication::primaryScreen()->grabWindow(0).save(out);
            std::printf("%s %s\n", ok ? "saved" : "could not save", qPrintable(out));
            rc = ok ? 0 : 1;
            QApplication::exit(rc);
        });
    });
    QApplication::exec();
    return rc;
}

// The language, and the colours and icons a Plasma session would give (the environment variables above).
void lookAsTheSessionWould(QApplication &app)
{
    SaneCopy::loadTranslations(&app, QLocale::system().uiLanguages()); // as sanecopy does
    if (const QString colors = qEnvironmentVariable("SANECOPY_SCREENSHOT_COLORS"); !colors.isEmpty())
        QApplication::setPalette(paletteFrom(colors));
    if (const QString icons = qEnvironmentVariable("SANECOPY_SCREENSHOT_ICONS"); !icons.isEmpty())
        QIcon::setThemeName(icons);
}

// --unfinished OUT.png
int unfinished(const QString &out)
{
    SaneCopy::MainWindow window;
    window.show();
    QObject::connect(&window, &SaneCopy::MainWindow::unfinishedOffered, &window, [&](int offered) {
        QTimer::singleShot(500, &window, [&, offered] {
            auto *dialog = window.findChild<SaneCopy::UnfinishedDialog *>();
            const bool ok = offered > 0 && dialog && dialog->grab().save(out);
            std::printf("%s %s\n", ok ? "saved" : "nothing unfinished, or could not save", qPrintable(out));
            QApplication::exit(ok ? 0 : 1);
        });
    });
    window.offerUnfinished();
    return QApplication::exec();
}

// OUT.png SECONDS DEST FILE...: the window that many seconds into a copy.
int copying(const QString &out, double seconds, int argc, char **argv)
{
    SaneCopy::MainWindow window;
    window.resize(980, 760);
    window.show();
    SaneCopy::CommandLine cmd;
    cmd.destination = QByteArray(argv[3]);
    for (int i = 4; i < argc; ++i)
        cmd.files << QByteArray(argv[i]);
    window.applyCommandLine(cmd);
    QTimer::singleShot(int(seconds * 1000), &window, [&] {
        const bool ok = window.grab().save(out);
        std::printf("%s %s\n", ok ? "saved" : "could not save", qPrintable(out));
        QApplication::exit(ok ? 0 : 1);
    });
    return QApplication::exec();
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    lookAsTheSessionWould(app);
    const QStringList args = QApplication::arguments();
    if (args.size() == 4 && args.at(1) == QLatin1String("--states"))
        return states(args.at(2), args.at(3));
    if (args.size() == 4 && args.at(1) == QLatin1String("--background"))
        return background(args.at(2), args.at(3));
    if (args.size() == 3 && args.at(1) == QLatin1String("--unfinished"))
        return unfinished(args.at(2));
    if (args.size() < 5) {
        std::fprintf(stderr, "usage: %s OUT.png SECONDS DEST FILE...\n", argv[0]);
        return 2;
    }
    return copying(args.at(1), args.at(2).toDouble(), argc, argv);
}
