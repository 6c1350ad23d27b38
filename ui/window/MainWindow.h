// SPDX-License-Identifier: GPL-2.0-or-later
//
// SaneCopy's window: what to copy (drop area), where (device picker), the queue of copies with their honest
// progress, and the two live charts. Before a copy starts, its plan is made off the GUI thread and any problem
// (not enough space, a file too big for FAT32, names the target refuses, special files) is shown first.
#pragma once

#include "CommandLine.h"
#include "EngineBridge.h"

#include "JobJournal.h"

#include <QHash>
#include <QMainWindow>
#include <QStringList>
#include <memory>
#include <optional>

class QCheckBox;
class QLabel;
class QPushButton;
class QToolButton;
class QAction;
class QMenu;
class QSystemTrayIcon;

namespace SaneCopy {

class DestinationPicker;
class DolphinPlace;
class EngineBridge;
class JobModel;
class MessageBar;
struct NotificationText;
class PlasmaJobViews;
class QueueView;
class QuestionDialogs;
class SourceDropArea;
class SystemMonitor;
class TimeSeriesChart;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    // Queues the files of |cmd|; starts at once when it names a destination, else asks for one.
    void applyCommandLine(const CommandLine &cmd);

    SourceDropArea *sourceArea() const { return sources_; }
    DestinationPicker *destinationPicker() const { return destination_; }
    MessageBar *messageBar() const { return messages_; }
    QueueView *queueView() const { return queue_; }
    JobModel *model() const { return model_; }
    EngineBridge *bridge() const { return bridge_; }
    QuestionDialogs *questions() const { return questions_; }
    TimeSeriesChart *throughputChart() const { return throughput_; }
    TimeSeriesChart *dirtyChart() const { return dirty_; }
    QLabel *hint() const { return hint_; }
    QPushButton *copyButton() const { return copy_; }
    QCheckBox *verifyBox() const { return verify_; }
    QCheckBox *moveBox() const { return move_; }
    QCheckBox *manifestBox() const { return manifest_; }
    QToolButton *clearFinishedButton() const { return clearFinished_; }
    JobJournal &journal() { return *journal_; }
    QSystemTrayIcon *trayIcon() const { return tray_; }
    // Settings > Show "Safe Copy" in Dolphin's Places; hidden without the KIO worker (the flatpak).
    DolphinPlace *dolphinPlace() const { return place_; }
    QAction *dolphinPlaceAction() const { return placeAction_; }
    // Tests: sanecopy-places from the build tree instead of the installed one.
    void setDolphinPlaceHelper(const QString &helper);
    // "SaneCopy: 2 copies, 45 % on the device": the tray icon's tooltip.
    QString backgroundStatus() const;

public Q_SLOTS:
    // Plans a copy of the current sources to the current destination, shows problems, then queues it.
    void startCopy();
    // Offers the copies an earlier run left unfinished (JobJournal), if there are any: resume, discard or later.
    void offerUnfinished();
    // Closing with copies running, "in the background": the window hides, a status-notifier icon shows their
    // progress (bytes on the device) and brings the window back when clicked.
    void keepCopyingInBackground();
    // Once per user, at a start where the KIO worker is installed and the place is not there: offers to add the
    // "Safe Copy" place to Dolphin. Nothing is changed unless the user says yes.
    void offerDolphinPlace();

Q_SIGNALS:
    // A plan found problems or names already taken and asks the user (PlanDialog); |problems| is what it lists,
    // empty when it shows only names already taken.
    void problemsShown(const QStringList &problems);
    void jobQueued(quint64 jobId);
    // The unfinished copies were looked at: |offered| of them are in the dialog now (0: no dialog).
    void unfinishedOffered(int offered);
    void wentToBackground();
    // In the background, the last copy ended: the application can quit (main() connects this to quit()).
    void backgroundCopiesDone();
    // Discarding unfinished copies is done: their part files are gone.
    void unfinishedDiscarded(qint64 partFilesRemoved);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    // A copy on its way to the queue: planned, maybe asked about, then submitted.
    struct PendingCopy {
        EngineBridge::Options options; // resume: finishing an unfinished copy, whose problems were shown already
        QString journalKey;            // its record, when it has one already
    };
    QWidget *buildCopyBox(QWidget *parent);
    QWidget *buildCopies(QWidget *parent);
    QWidget *buildCharts(QWidget *parent);
    void connectEngine();
    void connectWidgets();
    void mountThenCopy(const QString &block);
    void onPlanned(quint64 requestId, const PlanSummary &plan);
    void askAboutPlan(const PendingCopy &pending, const PlanSummary &plan);
    // What the end of a copy is notified as: sent by the window, or carried by Plasma's view of it.
    std::optional<NotificationText> endOfCopy(quint64 jobId, bool ok, bool cancelled, qint64 bytes) const;
    void queueCopy(const PendingCopy &copy, const PlanSummary &plan);
    void dropFromGroup(const EngineBridge::Options &options);
    void onFinished(quint64 jobId, bool ok, bool cancelled, qint64 bytes);
    void settleUnfinished(const QList<JournalEntry> &entries, const QList<bool> &present);
    void openUnfinished(const QList<JournalEntry> &entries, const QList<bool> &present);
    void eject(quint64 jobId);
    void updateHint();
    // Settings > Add to / Remove from Dolphin's context menu, inside flatpak only (see DolphinHook.h).
    void addDolphinHookMenu();
    // File > Quit (Ctrl+Q), Settings, Help > About; Enter presses Copy.
    void addMenus();
    void addHelpMenu();
    // Settings > Show "Safe Copy" in Dolphin's Places, checked as the places file says when the menu opens.
    void addDolphinPlaceAction(QMenu *settings);

    EngineBridge *bridge_;
    JobModel *model_;
    SourceDropArea *sources_;
    DestinationPicker *destination_;
    QPushButton *copy_;
    QCheckBox *verify_;
    QCheckBox *move_;
    QCheckBox *manifest_;
    QLabel *hint_;
    MessageBar *messages_; // questions that are not about a running copy
    QueueView *queue_;
    QToolButton *clearFinished_;
    QSystemTrayIcon *tray_ = nullptr;
    DolphinPlace *place_;
    QAction *placeAction_ = nullptr;
    TimeSeriesChart *throughput_;
    TimeSeriesChart *dirty_;
    SystemMonitor *monitor_;
    QuestionDialogs *questions_;
    PlasmaJobViews *jobViews_;
    QHash<quint64, PendingCopy> planning_;
    quint64 nextPlan_ = 1;
    std::unique_ptr<JobJournal> journal_;
    QHash<quint64, QString> journalKeys_; // job id -> its record
    QHash<quint64, QString> discarding_;  // discard request -> the record it ends
    bool closeWhenIdle_ = false;          // the user chose to cancel the running copies and quit
    bool closeNow_ = false;               // the user chose to stop them and finish them later
};

} // namespace SaneCopy
