// SPDX-License-Identifier: GPL-2.0-or-later
//
// The window in German, from the catalogue the build made of ui/po/de.po: LANGUAGE=de picks it (ctest sets it
// for this test), the buttons and the counts read German with the right plural forms, and English counts are
// right too ("1 file", "2 files", never "file(s)"), from the English catalogue compiled in.
#include "JobModel.h"
#include "MainWindow.h"
#include "Translations.h"

#include <QLocale>
#include <QPushButton>
#include <QStandardPaths>
#include <QTest>

using namespace SaneCopy;

namespace {

// The status of a finished job that copied |files| files.
QString doneWith(int files)
{
    JobModel model;
    model.addJob(1, QStringLiteral("a → STICK"), QStringLiteral("/media/STICK"), QStringLiteral("/media/STICK"),
                 QStringLiteral("sdb1"), true);
    for (int i = 0; i < files; ++i)
        model.onFileDone(1, QStringLiteral("/src/%1").arg(i), QStringLiteral("/media/STICK/%1").arg(i));
    model.onFinished(1, true, false, 10, files, 0);
    return model.index(0).data(JobModel::StatusRole).toString();
}

} // namespace

class TestTranslations : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void languageDePicksTheGermanCatalogue()
    {
        QVERIFY2(qEnvironmentVariable("LANGUAGE") == QLatin1String("de"), "ctest sets LANGUAGE=de for this test");
        QCOMPARE(QLocale::system().uiLanguages().value(0).left(2), QStringLiteral("de"));
        QCOMPARE(loadTranslations(qApp, QLocale::system().uiLanguages()), QStringLiteral("de"));
        MainWindow w;
        QCOMPARE(w.copyButton()->text(), QStringLiteral("&Kopieren"));
        QCOMPARE(w.windowTitle(), QStringLiteral("SaneCopy"));
    }

    void germanCountsHaveGermanPluralForms()
    {
        QCOMPARE(loadTranslations(qApp, {QStringLiteral("de-DE")}), QStringLiteral("de"));
        const QString one = doneWith(1), two = doneWith(2);
        QVERIFY2(one.startsWith(QStringLiteral("Fertig: ")) &&
                     one.contains(QStringLiteral(" in 1 Datei auf dem Gerät")),
                 qPrintable(one));
        QVERIFY2(two.contains(QStringLiteral(" in 2 Dateien auf dem Gerät")), qPrintable(two));
    }

    void englishCountsHaveEnglishPluralFormsWhateverTheLanguage()
    {
        // A language with no catalogue: the English one, compiled in.
        QCOMPARE(loadTranslations(qApp, {QStringLiteral("fr-FR")}), QStringLiteral("en"));
        const QString one = doneWith(1), two = doneWith(2);
        QVERIFY2(one.contains(QStringLiteral(" in 1 file on the device")), qPrintable(one));
        QVERIFY2(two.contains(QStringLiteral(" in 2 files on the device")), qPrintable(two));
        QVERIFY2(!one.contains(QStringLiteral("(s)")) && !two.contains(QStringLiteral("(s)")), qPrintable(two));
        MainWindow w;
        QCOMPARE(w.copyButton()->text(), QStringLiteral("&Copy"));
    }
};

QTEST_MAIN(TestTranslations)
#include "TestTranslations.moc"
