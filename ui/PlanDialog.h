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
class QPushButton;
class QTreeWidget;

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

    QList<QAbstractButton *> buttons() const;
    QTreeWidget *takenList() const { return taken_; }
    QComboBox *takenChoice() const { return takenChoice_; }

private:
    Choice choice_ = Choice::None;
    QDialogButtonBox *buttons_;
    QTreeWidget *taken_ = nullptr;
    QComboBox *takenChoice_ = nullptr;
};

} // namespace SaneCopy
