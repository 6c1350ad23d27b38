// SPDX-License-Identifier: GPL-2.0-or-later
//
// The window in the user's language: the catalogue sanecopy_qt.qm (made from ui/po/LANG.po) of the first of the
// user's languages that has one, and Qt's own qtbase_LANG.qm for the file dialogs' and message boxes' buttons.
// Beneath it always the English one, compiled in: it holds the English plural forms ("1 file", "2 files") of the
// strings counted with %n, for English and for what a catalogue lacks.
#pragma once

#include <QString>
#include <QStringList>

class QCoreApplication;

namespace SaneCopy {

// Where catalogues are looked for, in order: $SANECOPY_LOCALE_DIR (an uninstalled build: BUILD/locale), the
// share/locale the build was configured for, then share/locale beside the program's bin/.
QStringList translationDirs();

// Installs the catalogues for |languages| ("de-DE", "de": QLocale::uiLanguages(), which follows LANGUAGE and
// LC_MESSAGES) into |app|, replacing those installed before. Returns the language whose catalogue was loaded.
QString loadTranslations(QCoreApplication *app, const QStringList &languages);

} // namespace SaneCopy
