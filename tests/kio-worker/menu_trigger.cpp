// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy-menu-trigger PATH... TEXT: Dolphin's context menu for the PATHs selected, built from the user's own
// service menus, and its entry TEXT chosen, as a click in Dolphin does (KIO's launcher runs the menu's Exec
// line). Prints "action: TEXT" for every entry of the menu first. Exits 1 when TEXT is not in the menu or the
// launcher reports an error (its message box, read and closed here), 0 once the launcher has started it.
// tests/flatpak/ uses it on the service menu the flatpak writes, whose Exec runs `flatpak run`.
#include "context_menu.h"

#include <QApplication>
#include <QDeadlineTimer>
#include <cstdio>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QStringList args = app.arguments().mid(1);
    if (args.size() < 2) {
        std::fprintf(stderr, "usage: sanecopy-menu-trigger PATH... TEXT\n");
        return 2;
    }
    const QString text = args.takeLast();
    ContextMenu m(args);
    for (const QAction *a : allActions(m.menu))
        std::printf("action: %s\n", qPrintable(a->text()));
    std::fflush(stdout);
    QAction *action = findAction(m.menu, text);
    if (!action) {
        std::fprintf(stderr, "sanecopy-menu-trigger: no entry \"%s\" in the menu\n", qPrintable(text));
        return 1;
    }
    action->trigger();
    // The launcher forks inside trigger() and reports through queued signals: give them time to arrive.
    QDeadlineTimer deadline(3000);
    while (!deadline.hasExpired()) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
        if (QWidget *modal = QApplication::activeModalWidget()) {
            QString message;
            for (const QObject *child : modal->findChildren<QObject *>())
                message += child->property("text").toString() + QLatin1Char(' ');
            std::fprintf(stderr, "sanecopy-menu-trigger: the launcher failed: %s\n", qPrintable(message));
            return 1;
        }
    }
    std::printf("triggered: %s\n", qPrintable(text));
    return 0;
}
