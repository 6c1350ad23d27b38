// SPDX-License-Identifier: GPL-2.0-or-later
//
// Renders SaneCopy's window offscreen while it copies, and saves it as a PNG (docs/screenshot.png):
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot OUT.png SECONDS DEST FILE...
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot --unfinished OUT.png   (the question at start, when there are
//                                                                          unfinished copies under $XDG_STATE_HOME)
// A developer tool, not part of the app: it drives the same MainWindow through its command-line entry point.
#include "CommandLine.h"
#include "MainWindow.h"
#include "UnfinishedDialog.h"

#include <QApplication>
#include <QDir>
#include <QTimer>
#include <cstdio>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    const QStringList args = QApplication::arguments();
    if (args.size() == 3 && args.at(1) == QLatin1String("--unfinished")) {
        SaneCopy::MainWindow window;
        window.show();
        QObject::connect(&window, &SaneCopy::MainWindow::unfinishedOffered, &window, [&](int offered) {
            QTimer::singleShot(500, &window, [&, offered] {
                auto *dialog = window.findChild<SaneCopy::UnfinishedDialog *>();
                const bool ok = offered > 0 && dialog && dialog->grab().save(args.at(2));
                std::printf("%s %s\n", ok ? "saved" : "nothing unfinished, or could not save", qPrintable(args.at(2)));
                QApplication::exit(ok ? 0 : 1);
            });
        });
        window.offerUnfinished();
        return QApplication::exec();
    }
    if (args.size() < 5) {
        std::fprintf(stderr, "usage: %s OUT.png SECONDS DEST FILE...\n", argv[0]);
        return 2;
    }
    SaneCopy::MainWindow window;
    window.resize(980, 760);
    window.show();
    SaneCopy::CommandLine cmd;
    cmd.destination = QByteArray(argv[3]);
    for (int i = 4; i < argc; ++i)
        cmd.files << QByteArray(argv[i]);
    window.applyCommandLine(cmd);
    QTimer::singleShot(int(args.at(2).toDouble() * 1000), &window, [&] {
        const bool ok = window.grab().save(args.at(1));
        std::printf("%s %s\n", ok ? "saved" : "could not save", qPrintable(args.at(1)));
        QApplication::exit(ok ? 0 : 1);
    });
    return QApplication::exec();
}
