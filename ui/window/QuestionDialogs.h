// SPDX-License-Identifier: GPL-2.0-or-later
//
// The questions a copy asks while it waits: "the target exists" (overwrite / skip / rename, each with "apply to
// all") and "this file failed" (retry / skip / abort, with "apply to all" for skip). Dialogs are window-modal and
// opened with open(), never exec(): the GUI thread keeps running while the job's thread waits for the answer.
// Questions from jobs on different devices queue up and are shown one at a time.
#pragma once

#include "ConflictMemory.h"

#include <QMessageBox>
#include <QDateTime>
#include <QObject>
#include <QPointer>
#include <QQueue>
#include <QString>

class QWidget;

namespace SaneCopy {

class EngineBridge;

class QuestionDialogs : public QObject {
    Q_OBJECT
public:
    QuestionDialogs(EngineBridge *bridge, QWidget *window);

    ConflictMemory &memory() { return memory_; }
    QMessageBox *currentDialog() const { return current_; }

public Q_SLOTS:
    void onConflict(quint64 jobId, quint64 questionId, const QString &source, const QString &target, qint64 sourceSize,
                    qint64 targetSize, bool targetIsFolder, const QDateTime &sourceModified,
                    const QDateTime &targetModified);
    void onError(quint64 jobId, quint64 questionId, const QString &source, const QString &message);

Q_SIGNALS:
    void dialogShown(QMessageBox *dialog);

private:
    struct Question {
        bool conflict;
        quint64 jobId;
        quint64 questionId;
        QString text;
        QString detail;
    };
    void showNext();
    bool answerFromMemory(const Question &q);

    EngineBridge *bridge_;
    QWidget *window_;
    ConflictMemory memory_;
    QQueue<Question> queue_;
    QPointer<QMessageBox> current_;
};

} // namespace SaneCopy
