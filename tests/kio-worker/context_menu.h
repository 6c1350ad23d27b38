// SPDX-License-Identifier: GPL-2.0-or-later
//
// A file's context menu as Dolphin builds it: KFileItemActions::addActionsTo over the selection's
// KFileItemListProperties (Dolphin's DolphinContextMenu does exactly this), with the service menus of the
// user's data folders. Shared by test_dolphin_menu and sanecopy-menu-trigger.
#pragma once

#include <KFileItem>
#include <KFileItemActions>
#include <KFileItemListProperties>

#include <QAction>
#include <QMenu>
#include <QStringList>
#include <QUrl>
#include <QWidget>

namespace {

// Every action of a menu and its submenus, by text.
QList<QAction *> allActions(const QMenu &menu)
{
    QList<QAction *> out;
    for (QAction *a : menu.actions()) {
        out.append(a);
        if (a->menu())
            out.append(allActions(*a->menu()));
    }
    return out;
}

QAction *findAction(const QMenu &menu, const QString &text)
{
    for (QAction *a : allActions(menu)) {
        if (a->text() == text)
            return a;
    }
    return nullptr;
}

// The context menu's service-menu part for |paths| selected, as Dolphin fills it.
struct ContextMenu {
    explicit ContextMenu(const QStringList &paths)
    {
        KFileItemList items;
        for (const QString &p : paths)
            items.append(KFileItem(QUrl::fromLocalFile(p)));
        actions.setParentWidget(&parent);
        actions.setItemListProperties(KFileItemListProperties(items));
        actions.addActionsTo(&menu, KFileItemActions::MenuActionSource::All, {});
    }
    QWidget parent;
    KFileItemActions actions;
    QMenu menu;
};

} // namespace
