// SPDX-License-Identifier: GPL-2.0-or-later
//
// The window in German, from the catalogue the build made of ui/po/de.po: LANGUAGE=de picks it (ctest sets it
// for this test), the buttons and the counts read German with the right plural forms, and English counts are
// right too ("1 file", "2 files", never "file(s)"), from the English catalogue compiled in.
#include "DestinationPicker.h"
#include "DeviceList.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "MessageBar.h"
#include "SourceDropArea.h"
#include "Translations.h"
#include "WindowFixtures.h"

#include <QAbstractButton>
#include <QFile>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QPushButton>
#include <QTemporaryDir>
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

// The Alt+letter of |text| ("&Copy": c), or 0.
QChar mnemonicOf(const QString &text)
{
    for (qsizetype i = text.indexOf(QLatin1Char('&')); i >= 0 && i + 1 < text.size();
         i = text.indexOf(QLatin1Char('&'), i + 2)) {
        if (text.at(i + 1) != QLatin1Char('&'))
            return text.at(i + 1).toLower();
    }
    return {};
}

// The texts of |w| that share an Alt+letter with another shown at the same time: the menus, the buttons and
// check boxes, and the labels that lead to a control. Two on one letter only move the focus between them.
QStringList clashesIn(QWidget *w)
{
    QMultiHash<QChar, QString> byLetter;
    for (QAction *menu : w->findChild<QMenuBar *>()->actions())
        byLetter.insert(mnemonicOf(menu->text()), menu->text());
    for (QAbstractButton *b : w->findChildren<QAbstractButton *>())
        if (b->isVisibleTo(w) && b->isEnabled())
            byLetter.insert(mnemonicOf(b->text()), b->text());
    for (QLabel *l : w->findChildren<QLabel *>())
        if (l->isVisibleTo(w) && l->buddy())
            byLetter.insert(mnemonicOf(l->text()), l->text());
    QStringList out;
    for (const QChar &letter : byLetter.uniqueKeys())
        if (!letter.isNull() && byLetter.count(letter) > 1)
            out << QStringLiteral("Alt+%1: %2")
                       .arg(letter, QStringList(byLetter.values(letter)).join(QLatin1String(", ")));
    return out;
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

    void noTwoControlsShareAnAltLetter_data()
    {
        QTest::addColumn<QString>("language");
        QTest::newRow("English") << QStringLiteral("en");
        QTest::newRow("German") << QStringLiteral("de");
    }
    void noTwoControlsShareAnAltLetter()
    {
        QFETCH(QString, language);
        QCOMPARE(loadTranslations(qApp, {language}), language);
        QTemporaryDir dir;
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        // Everything enabled that can be: files, a stick, a finished copy, and the Places question in the bar.
        w.sourceArea()->addSources({QFile::encodeName(dir.path())});
        Device stick = Test::stickAt(dir.path());
        w.destinationPicker()->setDevices({stick});
        w.model()->addJob(1, QStringLiteral("a → STICK"), dir.path(), dir.path(), QStringLiteral("sdb1"), true);
        w.model()->onFinished(1, true, false, 10, 1, 0);
        w.messageBar()->ask(
            {QCoreApplication::translate("SaneCopy::MainWindow", "Add “Safe Copy” to Dolphin's Places?"),
             {},
             {{QCoreApplication::translate("SaneCopy::MainWindow", "&Add to Places"), [] {}},
              {QCoreApplication::translate("SaneCopy::MainWindow", "Not No&w"), [] {}}},
             {}});
        QTest::qWait(50);
        const QStringList clashes = clashesIn(&w);
        QVERIFY2(clashes.isEmpty(), qPrintable(clashes.join(QLatin1Char('\n'))));
        // And the copies' own question in the bar, which comes instead of the other.
        MainWindow again;
        again.show();
        again.messageBar()->ask({QStringLiteral("?"),
                                 {},
                                 {{QCoreApplication::translate("SaneCopy::MainWindow", "&Review…"), [] {}},
                                  {QCoreApplication::translate("SaneCopy::MainWindow", "&Decide Later"), [] {}}},
                                 {}});
        QTest::qWait(50);
        const QStringList more = clashesIn(&again);
        QVERIFY2(more.isEmpty(), qPrintable(more.join(QLatin1Char('\n'))));
    }
};

QTEST_MAIN(TestTranslations)
#include "TestTranslations.moc"
