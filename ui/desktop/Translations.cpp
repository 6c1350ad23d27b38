// SPDX-License-Identifier: GPL-2.0-or-later
#include "Translations.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QLibraryInfo>
#include <QTranslator>

// The English catalogue compiled into the library (ui/po/CMakeLists.txt); a static library's resources are
// registered by hand.
static void registerEnglish() { Q_INIT_RESOURCE(sanecopy_en); }

namespace SaneCopy {

namespace {

// "de-DE" -> "de_DE", then "de": the folder names of share/locale.
QStringList candidates(const QStringList &languages)
{
    QStringList out;
    for (QString lang : languages) {
        lang.replace(QLatin1Char('-'), QLatin1Char('_'));
        for (const QString &name : {lang, lang.section(QLatin1Char('_'), 0, 0)})
            if (!name.isEmpty() && !out.contains(name))
                out << name;
    }
    return out;
}

QString catalogueFor(const QString &lang)
{
    const QStringList dirs = translationDirs();
    for (const QString &dir : dirs) {
        const QString path = dir + QLatin1Char('/') + lang + QLatin1String("/LC_MESSAGES/sanecopy_qt.qm");
        if (QFile::exists(path))
            return path;
    }
    return {};
}

} // namespace

QStringList translationDirs()
{
    QStringList dirs;
    if (const QString own = qEnvironmentVariable("SANECOPY_LOCALE_DIR"); !own.isEmpty())
        dirs << own;
    dirs << QStringLiteral(SANECOPY_LOCALE_DIR);
    return dirs;
}

QString loadTranslations(QCoreApplication *app, const QStringList &languages)
{
    // One of each, owned by the application and replaced on a second call (the tests switch languages).
    const QList<QTranslator *> installed =
        app->findChildren<QTranslator *>(QStringLiteral("sanecopy-translator"), Qt::FindDirectChildrenOnly);
    for (QTranslator *old : installed) {
        QCoreApplication::removeTranslator(old);
        delete old;
    }
    auto install = [app](const QString &file, const QString &name, const QString &dir) {
        auto *t = new QTranslator(app);
        t->setObjectName(QStringLiteral("sanecopy-translator"));
        if (!(dir.isEmpty() ? t->load(file) : t->load(name, dir)) || !QCoreApplication::installTranslator(t)) {
            delete t;
            return false;
        }
        return true;
    };
    QString loaded;
    const QStringList wanted = candidates(languages);
    for (const QString &lang : wanted) {
        if (const QString file = catalogueFor(lang); !file.isEmpty() && install(file, {}, {})) {
            loaded = lang;
            break;
        }
    }
    if (loaded.isEmpty()) {
        static const bool registered = (registerEnglish(), true);
        Q_UNUSED(registered)
        if (install(QStringLiteral(":/i18n/sanecopy_qt_en.qm"), {}, {}))
            loaded = QStringLiteral("en");
    }
    if (!loaded.isEmpty() && loaded != QLatin1String("en"))
        install({}, QStringLiteral("qtbase_") + loaded, QLibraryInfo::path(QLibraryInfo::TranslationsPath));
    return loaded;
}

} // namespace SaneCopy
