// SPDX-License-Identifier: GPL-2.0-or-later
//
// MessageBar: a question inside the window, above the copies, for what is not about a running copy (may SaneCopy
// add its place to Dolphin, copies a past session left unfinished). A dialog would cover the copy in progress
// and take the keyboard from it; the bar waits until the user gets to it. KDE Frameworks has this as
// KMessageWidget, which the window can't link: it is Qt only, so the same build runs beside KF5 and KF6.
#pragma once

#include <QFrame>
#include <QList>

#include <functional>

class QHBoxLayout;
class QLabel;
class QPushButton;

namespace SaneCopy {

class MessageBar : public QFrame {
    Q_OBJECT
public:
    struct Action {
        QString label;
        std::function<void()> run;
    };
    struct Question {
        QString text;
        QString details;                 // below the text, smaller
        QList<Action> actions;           // one button each; the first is the default (Enter)
        std::function<void()> dismissed; // the bar closed without an answer
    };

    explicit MessageBar(QWidget *parent = nullptr);

    // Shows |question| now, or once those asked before it are answered.
    void ask(Question question);
    QString text() const;
    QList<QPushButton *> buttons() const;

private:
    void showNext();
    void answered(const std::function<void()> &run);
    QLabel *text_;
    QLabel *details_;
    QHBoxLayout *buttons_;
    QList<Question> pending_; // the first is the one shown
};

} // namespace SaneCopy
