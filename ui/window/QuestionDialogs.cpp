// SPDX-License-Identifier: GPL-2.0-or-later
#include "QuestionDialogs.h"

#include "EngineBridge.h"
#include "Format.h"
#include "copy_job.h"

#include <QCheckBox>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>

namespace SaneCopy {

using sanecopy::ConflictAnswer;
using sanecopy::ErrorAnswer;

QuestionDialogs::QuestionDialogs(EngineBridge *bridge, QWidget *window)
    : QObject(window), bridge_(bridge), window_(window)
{
    connect(bridge_, &EngineBridge::conflictAsked, this, &QuestionDialogs::onConflict);
    connect(bridge_, &EngineBridge::errorAsked, this, &QuestionDialogs::onError);
}

void QuestionDialogs::onConflict(quint64 jobId, quint64 questionId, const QString &source, const QString &target,
                                 qint64 sourceSize, qint64 targetSize, bool targetIsFolder,
                                 const QDateTime &sourceModified, const QDateTime &targetModified)
{
    Q_UNUSED(source)
    // Which one is newer is what decides most answers; it is said, not left to comparing two dates.
    const QString which = whichIsNewer(sourceSize, sourceModified, targetSize, targetModified);
    Question q {true, jobId, questionId, tr("“%1” already exists.").arg(target),
                targetIsFolder ? tr("It is a folder, so it can only be skipped or the copy renamed.")
                               : tr("Existing: %1.\nNew: %2.\n%3")
                                     .arg(formatSizeAndDate(targetSize, targetModified),
                                          formatSizeAndDate(sourceSize, sourceModified), which)};
    if (answerFromMemory(q))
        return;
    queue_.enqueue(q);
    showNext();
}

void QuestionDialogs::onError(quint64 jobId, quint64 questionId, const QString &source, const QString &message)
{
    Question q {false, jobId, questionId, tr("Could not copy “%1”.").arg(source), message};
    if (answerFromMemory(q))
        return;
    queue_.enqueue(q);
    showNext();
}

bool QuestionDialogs::answerFromMemory(const Question &q)
{
    const std::optional<int> remembered = q.conflict ? memory_.conflictAnswer(q.jobId) : memory_.errorAnswer(q.jobId);
    if (!remembered)
        return false;
    if (q.conflict)
        bridge_->answerConflict(q.questionId, *remembered);
    else
        bridge_->answerError(q.questionId, *remembered);
    return true;
}

void QuestionDialogs::showNext()
{
    if (current_ || queue_.isEmpty())
        return;
    const Question q = queue_.dequeue();
    // An answer given meanwhile ("apply to all" on an earlier question of the same job) settles this one.
    if (answerFromMemory(q)) {
        showNext();
        return;
    }
    auto *box = new QMessageBox(window_);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    box->setIcon(q.conflict ? QMessageBox::Question : QMessageBox::Warning);
    box->setWindowTitle(q.conflict ? tr("File exists") : tr("Copy error"));
    box->setText(q.text);
    box->setInformativeText(q.detail);
    auto *all = new QCheckBox(
        q.conflict ? tr("&Apply to all conflicts of this copy") : tr("&Apply to all errors of this copy"), box);
    box->setCheckBox(all);
    QHash<QAbstractButton *, int> answers;
    if (q.conflict) {
        answers.insert(box->addButton(tr("&Overwrite"), QMessageBox::DestructiveRole), int(ConflictAnswer::Overwrite));
        answers.insert(box->addButton(tr("&Skip"), QMessageBox::RejectRole), int(ConflictAnswer::Skip));
        QPushButton *rename = box->addButton(tr("&Rename"), QMessageBox::AcceptRole);
        answers.insert(rename, int(ConflictAnswer::Rename));
        // Apart from the three answers (ResetRole sits at the far side in every button layout), and never what
        // Escape does: Escape skips this one file.
        answers.insert(box->addButton(tr("Cancel the Copy"), QMessageBox::ResetRole), int(ConflictAnswer::Cancel));
        box->setDefaultButton(rename);
        box->setEscapeButton(answers.key(int(ConflictAnswer::Skip)));
    } else {
        QPushButton *retry = box->addButton(tr("&Retry"), QMessageBox::AcceptRole);
        answers.insert(retry, int(ErrorAnswer::Retry));
        answers.insert(box->addButton(tr("&Skip"), QMessageBox::RejectRole), int(ErrorAnswer::Skip));
        answers.insert(box->addButton(tr("A&bort"), QMessageBox::DestructiveRole), int(ErrorAnswer::Abort));
        box->setDefaultButton(retry);
    }
    current_ = box;
    connect(box, &QMessageBox::finished, this, [this, box, q, answers, all] {
        int answer =
            answers.value(box->clickedButton(), q.conflict ? int(ConflictAnswer::Skip) : int(ErrorAnswer::Skip));
        // Retrying every error automatically would loop; "all" means all conflicts, or skipping all errors.
        const bool remember = all->isChecked() && (q.conflict || answer != int(ErrorAnswer::Retry));
        if (q.conflict) {
            if (remember && answer != int(ConflictAnswer::Cancel))
                memory_.rememberConflict(q.jobId, answer);
            bridge_->answerConflict(q.questionId, answer);
        } else {
            if (remember)
                memory_.rememberError(q.jobId, answer);
            bridge_->answerError(q.questionId, answer);
        }
        current_ = nullptr;
        showNext();
    });
    box->open();
    Q_EMIT dialogShown(box);
}

} // namespace SaneCopy
