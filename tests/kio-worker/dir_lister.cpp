// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy-test-dirlister URL: lists URL with KCoreDirLister, the lister under Dolphin's views, and prints the
// names it holds, one line "names: a|b|c" each time they change, until stdin closes. test_kio_worker.py uses it
// to see what a Dolphin window showing sanecopy://devices/ would show as sticks come and go.
#include <KCoreDirLister>
#include <KFileItem>

#include <QCoreApplication>
#include <QSocketNotifier>
#include <QStringList>
#include <QUrl>

#include <cstdio>
#include <unistd.h>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    // KIO's jobs hold the application's quit lock while they run; with no window the end of the first listing
    // would end the program.
    QCoreApplication::setQuitLockEnabled(false);
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s URL\n", argv[0]);
        return 2;
    }
    KCoreDirLister lister;
    lister.setAutoErrorHandlingEnabled(false);
    QString last = QStringLiteral("-");
    auto print = [&] {
        QStringList names;
        const KFileItemList items = lister.items();
        for (const KFileItem &item : items)
            names.append(item.name());
        names.sort();
        const QString line = names.join(QLatin1Char('|'));
        if (line == last)
            return;
        last = line;
        std::printf("names: %s\n", qPrintable(line));
        std::fflush(stdout);
    };
    QObject::connect(&lister, qOverload<>(&KCoreDirLister::completed), &app, print); // KF5 has a deprecated overload
    QObject::connect(&lister, &KCoreDirLister::itemsAdded, &app, print);
    QObject::connect(&lister, &KCoreDirLister::itemsDeleted, &app, print);
    QSocketNotifier input(STDIN_FILENO, QSocketNotifier::Read);
    QObject::connect(&input, &QSocketNotifier::activated, &app, [&] {
        char buf[64];
        if (::read(STDIN_FILENO, buf, sizeof buf) <= 0)
            app.quit();
    });
    lister.openUrl(QUrl(QString::fromLocal8Bit(argv[1])));
    return app.exec();
}
