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
#include <sys/stat.h>

namespace SaneCopy {

SourceDropArea::SourceDropArea(QWidget *parent) : QWidget(parent)
{
    setAcceptDrops(true);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    list_ = new QListWidget(this);
    list_->setAccessibleName(tr("Files to copy"));
    list_->setSelectionMode(QAbstractItemView::NoSelection);
    list_->setMinimumHeight(72);
    list_->setMaximumHeight(140);
    layout->addWidget(list_);

    auto *buttons = new QHBoxLayout;
    auto *addFiles = new QPushButton(QIcon::fromTheme(QStringLiteral("document-open")), tr("Add &files…"), this);
    auto *addFolder = new QPushButton(QIcon::fromTheme(QStringLiteral("folder-open")), tr("Add f&older…"), this);
    clear_ = new QPushButton(QIcon::fromTheme(QStringLiteral("edit-clear-list")), tr("C&lear"), this);
    buttons->addWidget(addFiles);
    buttons->addWidget(addFolder);
    buttons->addStretch();
    buttons->addWidget(clear_);
    layout->addLayout(buttons);

    connect(addFiles, &QPushButton::clicked, this, [this] {
        PathList paths;
        for (const QString &f : QFileDialog::getOpenFileNames(this, tr("Files to copy")))
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
    if (sources_.isEmpty()) {
        auto *hint = new QListWidgetItem(tr("Drop files and folders here"), list_);
        hint->setFlags(Qt::NoItemFlags);
        hint->setTextAlignment(Qt::AlignCenter);
    }
    for (const QByteArray &p : sources_) {
        struct stat st {};
        const bool dir = ::stat(p.constData(), &st) == 0 && S_ISDIR(st.st_mode);
        auto *item = new QListWidgetItem(QIcon::fromTheme(dir ? QStringLiteral("folder") : QStringLiteral("text-x-generic")),
                                         displayPath(p), list_);
        item->setToolTip(displayPath(p));
    }
    clear_->setEnabled(!sources_.isEmpty());
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
