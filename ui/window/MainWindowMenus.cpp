// SPDX-License-Identifier: GPL-2.0-or-later
// The window's menus, and what it offers Dolphin: the "Safe Copy" place, or inside flatpak the context menu.
#include "MainWindow.h"

#include "DolphinHook.h"
#include "DolphinPlace.h"
#include "MessageBar.h"

#include <QApplication>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QShortcut>

namespace SaneCopy {

void MainWindow::addMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *quit =
        file->addAction(QIcon::fromTheme(QStringLiteral("application-exit")), tr("&Quit"), this, &QWidget::close);
    // The platform's Quit keys; a platform theme that knows none (offscreen, some minimal desktops) gets Ctrl+Q.
    QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
    if (quitKeys.isEmpty())
        quitKeys << QKeySequence(Qt::CTRL | Qt::Key_Q);
    quit->setShortcuts(quitKeys);
    addAction(quit); // the window's own too: the shortcut works wherever the focus is, menu bar or not
    if (DolphinHook::insideFlatpak())
        addDolphinHookMenu();
    else
        addDolphinPlaceAction(menuBar()->addMenu(tr("&Settings")));
    addHelpMenu();
    // Enter starts the copy when it can, wherever the focus is in the window: the Copy button is the
    // default, and a main window has no default button of its own.
    for (const QKeySequence &key : {QKeySequence(Qt::Key_Return), QKeySequence(Qt::Key_Enter)}) {
        auto *enter = new QShortcut(key, this);
        connect(enter, &QShortcut::activated, this, [this] {
            if (copy_->isEnabled())
                copy_->click();
        });
    }
}

void MainWindow::addHelpMenu()
{
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(windowIcon(), tr("&About SaneCopy"), this, [this] {
        QMessageBox::about(
            this, tr("About SaneCopy"),
            tr("<h3>SaneCopy %1</h3><p>Copies files at the device's own speed: when it says done, the data is on "
               "the device, and safe to unplug.</p><p>Licence: GNU General Public License, version 2 or later.</p>"
               "<p><a href=\"%2\">%2</a>: how it works, what it promises, and sanecp for the terminal.</p>")
                .arg(QStringLiteral(SANECOPY_VERSION), QStringLiteral("https://github.com/sanecopy/sanecopy#readme")));
    });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

void MainWindow::addDolphinHookMenu()
{
    QMenu *settings = menuBar()->addMenu(tr("&Settings"));
    QAction *toggle = settings->addAction(QIcon::fromTheme(QStringLiteral("system-file-manager")), QString());
    DolphinHook hook(DolphinHook::hostDataHome());
    auto refresh = [toggle, hook] {
        toggle->setText(hook.isInstalled() ? tr("Remove from Dolphin's context menu")
                                           : tr("Add to Dolphin's context menu"));
    };
    refresh();
    // The file may have been removed by hand since: ask again each time the menu opens.
    connect(settings, &QMenu::aboutToShow, toggle, refresh);
    connect(toggle, &QAction::triggered, this, [this, hook, refresh]() mutable {
        if (!(hook.isInstalled() ? hook.uninstall() : hook.install()))
            QMessageBox::warning(this, tr("Dolphin's context menu"),
                                 tr("Could not change %1: %2").arg(hook.menuPath(), hook.errorString()));
        refresh();
    });
}

void MainWindow::addDolphinPlaceAction(QMenu *settings)
{
    placeAction_ = settings->addAction(QIcon::fromTheme(QStringLiteral("system-file-manager")),
                                       tr("Show \u201cSafe Copy\u201d in Dolphin's &Places"));
    placeAction_->setCheckable(true);
    placeAction_->setToolTip(tr("A place in Dolphin that lists the plugged-in sticks: files dropped there are copied "
                                "at the stick's own speed, and the copy ends when they are on it."));
    placeAction_->setVisible(place_->available());
    settings->menuAction()->setVisible(place_->available()); // the only entry: no empty menu without it
    // The places file may have changed in Dolphin since: read it again each time the menu opens.
    connect(settings, &QMenu::aboutToShow, place_, &DolphinPlace::refresh);
    connect(place_, &DolphinPlace::stateKnown, placeAction_, [this](bool present) {
        const QSignalBlocker quiet(placeAction_);
        placeAction_->setChecked(present);
    });
    connect(placeAction_, &QAction::triggered, place_, &DolphinPlace::setPresent);
    connect(place_, &DolphinPlace::failed, this, [this](const QString &message) {
        const QSignalBlocker quiet(placeAction_);
        placeAction_->setChecked(place_->present());
        QMessageBox::warning(this, tr("Dolphin's Places"), tr("Could not change Dolphin's places: %1").arg(message));
    });
}

void MainWindow::setDolphinPlaceHelper(const QString &helper)
{
    auto *place = new DolphinPlace(helper, this);
    // The action follows the new helper: the old one's connections go with it.
    delete place_;
    place_ = place;
    if (placeAction_) {
        QMenu *settings = qobject_cast<QMenu *>(placeAction_->parent());
        delete placeAction_;
        if (settings)
            addDolphinPlaceAction(settings);
    }
}

void MainWindow::offerDolphinPlace()
{
    QSettings settings;
    const QString asked = QStringLiteral("dolphin/askedAboutPlace");
    if (!place_->available() || settings.value(asked, false).toBool())
        return;
    auto *once = new QObject(this);
    connect(place_, &DolphinPlace::stateKnown, once, [this, once, asked](bool present) {
        once->deleteLater();
        // Asked once, whatever the answer (Settings is where it changes after that); a place already there counts
        // as an answer. A helper that failed leaves the question for the next start.
        QSettings().setValue(asked, true);
        if (present)
            return;
        // In the window, not over it: a copy started with the window (--to) stays in view.
        messages_->ask({tr("Add \u201cSafe Copy\u201d to Dolphin's Places?"),
                        tr("It lists your plugged-in USB sticks and memory cards. Files you drop onto one there are "
                           "copied at the stick's own speed, and Dolphin's copy ends only when they are safely on "
                           "it. You can change this later in Settings."),
                        {{tr("&Add to Places"), [this] { place_->setPresent(true); }}, {tr("Not No&w"), {}}},
                        {}});
    });
    connect(place_, &DolphinPlace::failed, once, &QObject::deleteLater);
    place_->refresh();
}

} // namespace SaneCopy
