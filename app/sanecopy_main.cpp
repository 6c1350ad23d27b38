// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy [--to DEST] [FILE...]: the GUI.
#include "CommandLine.h"
#include "MainWindow.h"
#include "NetworkUrls.h"
#include "SingleInstance.h"
#include "Translations.h"
#include "sys.h"

#include <QApplication>
#include <QDBusConnection>
#include <QDir>
#include <QFile>
#include <QLocale>
#include <QMessageBox>
#include <cstdio>

namespace {

void printHelp()
{
    std::printf("Usage: sanecopy [--move] [--to DEST] [FILE...]\n"
                "Copies files at the device's own speed; \"done\" means the data is on the device.\n"
                "\n"
                "Options:\n"
                "  --to DEST   start copying FILEs into DEST at once\n"
                "  --move      move instead: each source goes once its copy is on the device\n"
                "  --version   print the version and exit\n"
                "\n"
                "With FILEs and no --to, the window opens with them queued and asks where to copy them.\n"
                "FILEs and DEST may be network URLs (smb://, sftp://...): they are copied through the\n"
                "folder kio-fuse mounts for them.\n"
                "A window already running takes the FILEs instead (this one then exits 0).\n"
                "Copies a crash, a kill or a logout left unfinished are offered at the next start: resume\n"
                "(what is on the device stays; files with the source's size and time count as copied),\n"
                "discard (their part files are removed), or later. They are kept in\n"
                "$XDG_STATE_HOME/sanecopy/jobs.\n");
}

// Network URLs (Dolphin's network folders) become kio-fuse's local paths. What can't is said on stderr and in a
// dialog, before any window of this process: the user just chose the menu entry and waits for an answer. False
// when nothing is left to do.
bool openNetworkUrls(SaneCopy::CommandLine &cmd)
{
    if (!cmd.hasNetworkUrls())
        return true;
    SaneCopy::resolveNetworkUrls(cmd, QDBusConnection::sessionBus());
    if (cmd.problems.isEmpty())
        return true;
    const QString said = cmd.problems.join(QLatin1Char('\n'));
    std::fprintf(stderr, "sanecopy: %s\n", qPrintable(said));
    QMessageBox::warning(nullptr, QStringLiteral("SaneCopy"), said);
    return !cmd.files.isEmpty();
}

} // namespace

int main(int argc, char **argv)
{
    // The arguments as the bytes they are: a file name need not be UTF-8 (see ui/jobs/Paths.h). Read before the
    // application object exists, so --help and a usage error work in a terminal without a display.
    QList<QByteArray> args;
    for (int i = 1; i < argc; ++i)
        args << QByteArray(argv[i]);
    SaneCopy::CommandLine cmd = SaneCopy::parseCommandLine(args, QFile::encodeName(QDir::currentPath()));
    if (cmd.help) {
        printHelp();
        return 0;
    }
    if (cmd.version) {
        std::printf("sanecopy %s\n", SANECOPY_VERSION);
        return 0;
    }
    if (!cmd.error.isEmpty()) {
        std::fprintf(stderr, "sanecopy: %s\n", qPrintable(cmd.error));
        return 2;
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("SaneCopy"));
    QApplication::setApplicationVersion(QStringLiteral(SANECOPY_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.github.sanecopy.SaneCopy"));
    SaneCopy::loadTranslations(&app, QLocale::system().uiLanguages());
    if (!openNetworkUrls(cmd))
        return 1;
    // A window is running already (a second "Safe Copy To…" click): it queues these files, and this process goes.
    if (SaneCopy::SingleInstance::handOver(cmd))
        return 0;
    sanecopy::raise_open_file_limit(); // batches of small files hold a descriptor each (engine/base/sys.h)
    SaneCopy::MainWindow window;
    SaneCopy::SingleInstance instance(&window);
    // Started together with another sanecopy, which got the name first: that window takes these files too.
    if (instance.lostTheName() && SaneCopy::SingleInstance::handOver(cmd))
        return 0;
    // Closed "in the background", the window is hidden: the application ends when its last copy does.
    QObject::connect(&window, &SaneCopy::MainWindow::backgroundCopiesDone, &app, &QCoreApplication::quit);
    // The window knows the fallback to the icon compiled into the library when the theme has none.
    QApplication::setWindowIcon(window.windowIcon());
    window.show();
    window.applyCommandLine(cmd);
    // Copies a crash, a kill or a logout left unfinished are offered once the window is up.
    window.offerUnfinished();
    // Once per user, where the KIO worker is installed: the "Safe Copy" place in Dolphin.
    window.offerDolphinPlace();
    return QApplication::exec();
}
