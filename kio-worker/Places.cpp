// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy-places status|add|remove: the "Safe Copy" place (sanecopy://devices/) in the user's places, the list
// Dolphin's Places panel and KDE's file dialogs share (user-places.xbel). The SaneCopy window runs it from its
// Settings and, once, from a question at the first start; it never changes the list on its own.
//
// Why a program of its own, in this folder: the edit goes through KFilePlacesModel, KDE's own code for that file,
// so the file keeps KDE's format and versioning, a new file gets KDE's default places around ours, and a running
// Dolphin sees the change (KBookmarkManager watches the file). The window is Qt 6 without KDE Frameworks on
// Debian 12 and can't link it.
//
// Exit: 0 done (status prints "present" or "absent"), 1 the places list can't be written, 2 usage.
#include "UrlMapping.h"

#include <KFilePlacesModel>
#include <KLocalizedString>

#include <QCoreApplication>
#include <QFile>
#include <QGuiApplication>
#include <QStandardPaths>
#include <QUrl>
#include <QXmlStreamReader>

#include <cstdio>

namespace {

// Every entry that is the device list: the user may have added it twice by hand.
QList<QPersistentModelIndex> placesOf(const KFilePlacesModel &model, const QUrl &url)
{
    QList<QPersistentModelIndex> out;
    for (int row = 0; row < model.rowCount(); ++row) {
        const QModelIndex index = model.index(row, 0);
        if (model.url(index).matches(url, QUrl::StripTrailingSlash))
            out.append(index);
    }
    return out;
}

// Whether the places file on disk holds a bookmark for |url|, as KBookmarkManager writes it (href fully encoded).
bool placesFileHas(const QUrl &url)
{
    QFile file(QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
               QStringLiteral("/user-places.xbel"));
    if (!file.open(QIODevice::ReadOnly))
        return false;
    QXmlStreamReader xml(&file);
    while (!xml.atEnd()) {
        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("bookmark") &&
            QUrl(xml.attributes().value(QLatin1String("href")).toString()).matches(url, QUrl::StripTrailingSlash))
            return true;
    }
    return false;
}

} // namespace

int main(int argc, char **argv)
{
    // KFilePlacesModel hands out icons, which need a GUI application; the helper shows no window, and runs
    // without a display (offscreen) as well as with one. Not a QApplication: KF5's bookmark manager would answer a
    // failed save with a message box that nobody can close here.
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QGuiApplication app(argc, argv);
    const QStringList args = app.arguments();
    const QString verb = args.value(1);
    if (args.size() != 2 ||
        (verb != QLatin1String("status") && verb != QLatin1String("add") && verb != QLatin1String("remove"))) {
        std::fprintf(stderr, "usage: sanecopy-places status|add|remove\n");
        return 2;
    }
    const QUrl url = SaneCopyKio::devicesUrl();
    KFilePlacesModel model;
    const QList<QPersistentModelIndex> found = placesOf(model, url);
    if (verb == QLatin1String("status")) {
        std::printf("%s\n", found.isEmpty() ? "absent" : "present");
        return 0;
    }
    if (verb == QLatin1String("add")) {
        if (found.isEmpty())
            model.addPlace(i18n("Safe Copy"), url, QStringLiteral("io.github.sanecopy.SaneCopy"));
    } else {
        for (const QPersistentModelIndex &index : found)
            model.removePlace(index);
    }
    // KFilePlacesModel saves as it changes. Whether it took is read from the file itself: another model in this
    // process would share the first one's bookmark manager, and with it what is in memory.
    if (placesFileHas(url) == (verb == QLatin1String("remove"))) {
        std::fprintf(stderr, "sanecopy-places: could not change the places list (user-places.xbel)\n");
        return 1;
    }
    return 0;
}
