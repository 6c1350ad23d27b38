// SPDX-License-Identifier: GPL-2.0-or-later
#include "SourceDropArea.h"

#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

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
        addSources(QFileDialog::getOpenFileNames(this, tr("Files to copy")));
    });
    connect(addFolder, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder to copy"));
        if (!dir.isEmpty())
            addSources({dir});
    });
    connect(clear_, &QPushButton::clicked, this, &SourceDropArea::clear);
    refresh();
}

QStringList SourceDropArea::localPaths(const QMimeData *mime)
{
    QStringList paths;
    if (!mime || !mime->hasUrls())
        return paths;
    for (const QUrl &url : mime->urls()) {
        if (url.isLocalFile() && !url.toLocalFile().isEmpty())
            paths << url.toLocalFile();
    }
    return paths;
}

void SourceDropArea::addSources(const QStringList &paths)
{
    bool added = false;
    for (const QString &p : paths) {
        if (!p.isEmpty() && !sources_.contains(p)) {
            sources_ << p;
            added = true;
        }
    }
    if (added) {
        refresh();
        Q_EMIT sourcesChanged(sources_);
    }
}

void SourceDropArea::clear()
{
    if (sources_.isEmpty())
        return;
    sources_.clear();
    refresh();
    Q_EMIT sourcesChanged(sources_);
}

void SourceDropArea::refresh()
{
    list_->clear();
    if (sources_.isEmpty()) {
        auto *hint = new QListWidgetItem(tr("Drop files and folders here"), list_);
        hint->setFlags(Qt::NoItemFlags);
        hint->setTextAlignment(Qt::AlignCenter);
    }
    for (const QString &p : sources_) {
        const QFileInfo info(p);
        auto *item = new QListWidgetItem(QIcon::fromTheme(info.isDir() ? QStringLiteral("folder")
                                                                        : QStringLiteral("text-x-generic")),
                                         p, list_);
        item->setToolTip(p);
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
    const QStringList paths = localPaths(mime);
    addSources(paths);
    return !paths.isEmpty();
}

void SourceDropArea::dropEvent(QDropEvent *event)
{
    if (addDropped(event->mimeData()))
        event->acceptProposedAction();
}

} // namespace SaneCopy
