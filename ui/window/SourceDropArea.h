// SPDX-License-Identifier: GPL-2.0-or-later
//
// The sources of the next copy: a list that takes drops of text/uri-list (Dolphin and every other file
// manager), plus buttons to add files or a folder and to clear the list.
#pragma once

#include "Paths.h"

#include <QStringList>
#include <QWidget>

class QListWidget;
class QMimeData;
class QPushButton;

namespace SaneCopy {

class SourceDropArea : public QWidget {
    Q_OBJECT
public:
    explicit SourceDropArea(QWidget *parent = nullptr);

    PathList sources() const { return sources_; }
    void addSources(const PathList &paths);
    void clear();

    // Pure: the local paths in a drop (text/uri-list), as bytes. Remote URLs are left out: the engine copies local
    // files.
    static PathList localPaths(const QMimeData *mime);
    // What a drop does: adds its local paths. False when it had none.
    bool addDropped(const QMimeData *mime);

Q_SIGNALS:
    void sourcesChanged();
    // The folder icons are on: which entries are folders was found out (off the GUI thread).
    void foldersKnown();

protected:
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dragMoveEvent(QDragMoveEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void refresh();
    void showFolders(const QList<bool> &dirs);
    quint64 generation_ = 0; // of the list: a late answer about an older list is dropped

    PathList sources_;
    QListWidget *list_;
    QPushButton *clear_;
};

} // namespace SaneCopy
