// SPDX-License-Identifier: GPL-2.0-or-later
//
// Renders SaneCopy's window offscreen while it copies, and saves it as a PNG (docs/screenshot.png):
//   QT_QPA_PLATFORM=offscreen sanecopy-screenshot OUT.png SECONDS DEST FILE...
// A developer tool, not part of the app: it drives the same MainWindow through its command-line entry point.
#include "CommandLine.h"
#include "MainWindow.h"

#include <QApplication>
#include <QDir>
#include <QTimer>
#include <cstdio>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    const QStringList args = QApplication::arguments();
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
