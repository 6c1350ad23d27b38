// SPDX-License-Identifier: GPL-2.0-or-later
#include "SourceDropArea.h"

#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFile>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

#include <utility>
#include <QCoreApplication>
#include <QPointer>

#include <sys/stat.h>
#include <thread>

namespace SaneCopy {

SourceDropArea::SourceDropArea(QWidget *parent) : QWidget(parent)
{
    setAcceptDrops(true);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    list_ = new QListWidget(this);
    list_->setAccessibleName(tr("Files to copy"));
    list_->setAccessibleDescription(tr("The files and folders to copy; drop more here, or add them with the buttons "
                                       "below"));
    list_->setSelectionMode(QAbstractItemView::NoSelection);
    list_->setMinimumHeight(48);
    layout->addWidget(list_);

    auto *buttons = new QHBoxLayout;
    auto *addFiles = new QPushButton(QIcon::fromTheme(QStringLiteral("document-open")), tr("Add f&iles…"), this);
    auto *addFolder = new QPushButton(QIcon::fromTheme(QStringLiteral("folder-open")), tr("Add f&older…"), this);
    clear_ = new QPushButton(QIcon::fromTheme(QStringLiteral("edit-clear-list")), tr("C&lear"), this);
    addFiles->setToolTip(tr("Choose files to copy"));
    addFolder->setToolTip(tr("Choose a folder to copy, with everything in it"));
    clear_->setToolTip(tr("Empty the list of files to copy"));
    buttons->addWidget(addFiles);
    buttons->addWidget(addFolder);
    buttons->addStretch();
    buttons->addWidget(clear_);
    layout->addLayout(buttons);

    connect(addFiles, &QPushButton::clicked, this, [this] {
        PathList paths;
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Files to copy"));
        for (const QString &f : files)
            paths << QFile::encodeName(f);
        addSources(paths);
    });
    connect(addFolder, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder to copy"));
        if (!dir.isEmpty())
            addSources({QFile::encodeName(dir)});
    });
    connect(clear_, &QPushButton::clicked, this, &SourceDropArea::clear);
    refresh();
}

PathList SourceDropArea::localPaths(const QMimeData *mime)
{
    // The raw text/uri-list, not QMimeData::urls(): QUrl turns a percent-encoded byte that is not UTF-8 into text
    // and the name is lost.
    if (!mime || !mime->hasFormat(QStringLiteral("text/uri-list")))
        return {};
    return localPathsFromUriList(mime->data(QStringLiteral("text/uri-list")));
}

void SourceDropArea::addSources(const PathList &paths)
{
    bool added = false;
    for (const QByteArray &p : paths) {
        if (!p.isEmpty() && !sources_.contains(p)) {
            sources_ << p;
            added = true;
        }
    }
    if (added) {
        refresh();
        Q_EMIT sourcesChanged();
    }
}

void SourceDropArea::clear()
{
    if (sources_.isEmpty())
        return;
    sources_.clear();
    refresh();
    Q_EMIT sourcesChanged();
}

void SourceDropArea::refresh()
{
    list_->clear();
    // Empty, it is only a drop target: the window's height goes to the copies below.
    list_->setMaximumHeight(sources_.isEmpty() ? 56 : 140);
    if (sources_.isEmpty()) {
        auto *hint = new QListWidgetItem(tr("Drop files and folders here"), list_);
        hint->setFlags(Qt::NoItemFlags);
        hint->setTextAlignment(Qt::AlignCenter);
    }
    for (const QByteArray &p : std::as_const(sources_)) {
        auto *item = new QListWidgetItem(QIcon::fromTheme(QStringLiteral("text-x-generic")), displayPath(p), list_);
        item->setToolTip(displayPath(p));
    }
    clear_->setEnabled(!sources_.isEmpty());
    // Which entries are folders is looked up off the GUI thread: a stat on a dying or remote mount may hang.
    const quint64 generation = ++generation_;
    QPointer<SourceDropArea> guard(this);
    std::thread([guard, generation, paths = sources_] {
        QList<bool> dirs;
        for (const QByteArray &p : paths) {
            struct stat st {};
            dirs << (::stat(p.constData(), &st) == 0 && S_ISDIR(st.st_mode));
        }
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard, generation, dirs] {
                if (guard && guard->generation_ == generation)
                    guard->showFolders(dirs);
            },
            Qt::QueuedConnection);
    }).detach();
}

void SourceDropArea::showFolders(const QList<bool> &dirs)
{
    for (int i = 0; i < dirs.size() && i < list_->count(); ++i)
        if (dirs.at(i)) {
            list_->item(i)->setIcon(QIcon::fromTheme(QStringLiteral("folder")));
            list_->item(i)->setData(Qt::UserRole, true); // a folder, for tests that have no icon theme
        }
    Q_EMIT foldersKnown();
}

void SourceDropArea::dragEnterEvent(QDragEnterEvent *event)
{
    if (!localPaths(event->mimeData()).isEmpty())
        event->acceptProposedAction();
}

void SourceDropArea::dragMoveEvent(QDragMoveEvent *event)
{
    if (!localPaths(event->mimeData()).isEmpty())
        event->acceptProposedAction();
}

bool SourceDropArea::addDropped(const QMimeData *mime)
{
    const PathList paths = localPaths(mime);
    addSources(paths);
    return !paths.isEmpty();
}

void SourceDropArea::dropEvent(QDropEvent *event)
{
    if (addDropped(event->mimeData()))
        event->acceptProposedAction();
}

} // namespace SaneCopy
