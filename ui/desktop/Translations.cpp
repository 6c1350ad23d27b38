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
    // Installed with another prefix than the build was configured with (cmake --install --prefix P): beside bin/.
    const QString beside = QDir::cleanPath(QCoreApplication::applicationDirPath() + QLatin1String("/../share/locale"));
    if (!dirs.contains(beside))
        dirs << beside;
    return dirs;
}

QString loadTranslations(QCoreApplication *app, const QStringList &languages)
{
    // Owned by the application and replaced on a second call (the tests switch languages).
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
    // English first: Qt asks the translator installed last first, so English is what a catalogue that lacks a
    // string (or a count's forms) falls back to, rather than the source's "file(s)". It is the one compiled in.
    static const bool registered = (registerEnglish(), true);
    Q_UNUSED(registered)
    install(QStringLiteral(":/i18n/sanecopy_qt_en.qm"), {}, {});
    const QStringList wanted = candidates(languages);
    for (const QString &lang : wanted) {
        if (const QString file = catalogueFor(lang); !file.isEmpty() && install(file, {}, {})) {
            install({}, QStringLiteral("qtbase_") + lang, QLibraryInfo::path(QLibraryInfo::TranslationsPath));
            return lang;
        }
        // English is the source's language: a user who prefers it gets it, even if a later language has a
        // catalogue (and if en/'s was purged from the disk).
        if (lang == QLatin1String("en") || lang.startsWith(QLatin1String("en_")))
            return QStringLiteral("en");
    }
    return QStringLiteral("en");
}

} // namespace SaneCopy
