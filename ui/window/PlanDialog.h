// SPDX-License-Identifier: GPL-2.0-or-later
//
// "Before copying": everything a plan found, in one dialog, before the first byte. The problems (no room, files
// too big for FAT32, names the filesystem refuses, special files, sources that can't be read) as a list that can
// be read and copied from; the files whose names are taken on the destination, each with both sides' size and
// time and which is newer, and one choice for all of them; and buttons that each do what they say.
#pragma once

#include "EngineBridge.h"

#include <QDialog>

class QAbstractButton;
class QComboBox;
class QDialogButtonBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTreeWidget;
class QVBoxLayout;

namespace SaneCopy {

class PlanDialog : public QDialog {
    Q_OBJECT
public:
    enum class Choice { None, Copy, CopyWithSafeNames, Elsewhere };
    // |destination| as the user reads it.
    PlanDialog(const PlanSummary &plan, const QString &destination, QWidget *parent = nullptr);

    // What the user pressed; None for Cancel or a closed dialog.
    Choice choice() const { return choice_; }
    // For the files already there: asked one by one (the default), or a sanecopy::ConflictPolicy for all.
    bool askForEach() const;
    int conflictPolicy() const;

    // What the choice for the names taken leaves: the space line, and what "copy what fits" copies.
    const PlanSummary::Room &room() const;
    // The problems as the dialog shows them now.
    QStringList problems() const;

    QList<QAbstractButton *> buttons() const;
    QTreeWidget *takenList() const { return taken_; }
    QComboBox *takenChoice() const { return takenChoice_; }

private:
    int choicePolicy() const;
    // Headline, problems and buttons for the choice made for the names taken: skipping them may leave room
    // for everything, replacing them may not.
    void showChoice();
    QString headline(const QStringList &problems, qint64 going) const;
    void addTakenList(QVBoxLayout *layout);
    void addButtons(QVBoxLayout *layout);

    const PlanSummary plan_;
    const QString destination_;
    Choice choice_ = Choice::None;
    QLabel *icon_;
    QLabel *headline_;
    QPlainTextEdit *problemList_;
    QDialogButtonBox *buttons_;
    QPushButton *go_;
    QPushButton *safeNames_;
    QPushButton *elsewhere_;
    QTreeWidget *taken_ = nullptr;
    QComboBox *takenChoice_ = nullptr;
};

} // namespace SaneCopy
