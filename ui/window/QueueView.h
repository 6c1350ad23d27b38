// SPDX-License-Identifier: GPL-2.0-or-later
//
// The queue: one row per job of JobModel, each with its durable/written bar, its status line (device rate and
// ETA), and Pause/Resume, Cancel and Eject buttons. Rows are widgets rather than a delegate so every button is
// a real, focusable, keyboard-usable control.
#pragma once

#include <QPointer>
#include <QScrollArea>

class QHBoxLayout;
class QLabel;
class QToolButton;
class QVBoxLayout;

namespace SaneCopy {

class DurableProgressBar;
class JobModel;

class JobRow : public QWidget {
    Q_OBJECT
public:
    JobRow(JobModel *model, quint64 jobId, QWidget *parent = nullptr);
    quint64 jobId() const { return jobId_; }
    void refresh();
    void setEjectAvailable(bool available)
    {
        ejectAvailable_ = available;
        refresh();
    }

    DurableProgressBar *bar() const { return bar_; }
    QLabel *status() const { return status_; }
    QToolButton *pauseButton() const { return pause_; }
    QToolButton *cancelButton() const { return cancel_; }
    QToolButton *ejectButton() const { return eject_; }
    QToolButton *detailsButton() const { return details_; }
    QToolButton *clearButton() const { return clear_; }
    QLabel *safeToUnplug() const { return safe_; }
    QLabel *result() const { return result_; }
    // The finished job's results, in a window of their own that can be copied from.
    void showDetails();

protected:
    void resizeEvent(QResizeEvent *event) override;

Q_SIGNALS:
    void pauseRequested(quint64 jobId);
    void resumeRequested(quint64 jobId);
    void cancelRequested(quint64 jobId);
    void ejectRequested(quint64 jobId);
    void clearRequested(quint64 jobId);
    void safeShown(bool shown);

private:
    QToolButton *makeButton(const QString &icon, const QString &text);
    void makeButtons();
    QHBoxLayout *makeSafeRow();
    void layOut(QHBoxLayout *safeRow);
    JobModel *model_;
    quint64 jobId_;
    QLabel *safe_;
    QLabel *result_;
    QToolButton *details_;
    QToolButton *clear_;
    QLabel *title_;
    DurableProgressBar *bar_;
    QLabel *status_;
    QToolButton *pause_;
    QToolButton *cancel_;
    QToolButton *eject_;
    bool paused_ = false;
    bool ejectAvailable_ = false;
};

class QueueView : public QScrollArea {
    Q_OBJECT
public:
    explicit QueueView(JobModel *model, QWidget *parent = nullptr);
    JobRow *rowFor(quint64 jobId) const;
    // Whether Eject can work (UDisks2 is there); rows already shown follow too.
    void setEjectAvailable(bool available);
    bool ejectAvailable() const { return ejectAvailable_; }

public Q_SLOTS:
    // Takes every finished job off the list; running and queued ones stay.
    void clearFinished();

Q_SIGNALS:
    void pauseRequested(quint64 jobId);
    void resumeRequested(quint64 jobId);
    void cancelRequested(quint64 jobId);
    void ejectRequested(quint64 jobId);

private:
    void addRows(int first, int last);

    JobModel *model_;
    QWidget *content_;
    QVBoxLayout *rows_;
    QLabel *empty_;
    bool ejectAvailable_ = false;
    bool scrollToNewest_ = false; // a job was added: show it once the layout has made room for it
};

} // namespace SaneCopy
