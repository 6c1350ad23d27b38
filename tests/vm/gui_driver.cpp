// SPDX-License-Identifier: GPL-2.0-or-later
//
// sanecopy-vm-gui: SaneCopy's own window, driven by the USB test guest (tests/vm/guest.py) the way a user would:
// through its command-line entry point and its buttons. It reads commands on stdin, one a line, and reports
// what the window shows on stdout, one JSON object a line:
//
//   copy DEST FILE...   start a copy, as `sanecopy --to DEST FILE...` does
//   copy-to NAME FILE...  add FILEs, choose the destination entry whose text starts with NAME, press Copy
//   eject               press the Eject button of the newest job's row
//   cancel              press the Cancel button of the newest job's row
//   ping N              answered with {"event":"pong","n":N} by the window's own thread: how long it takes is
//                       how long the window would keep a user waiting
//   shot PATH           save the window as a PNG
//   quit
//
//   {"event":"devices","devices":[{"mount":...,"name":...,"text":...}]}   the destination list changed
//   {"event":"job","id":...,"state":"running",...,"status":...,"durable":...,"finished":...,"removed":...,
//    "safe":...,"can_eject":...,"problems":[...]}   a job's row changed
//   {"event":"shot","path":...,"ok":...}   {"event":"error","what":...}
//
// Paths in commands are split at spaces: the guest uses none.
#include "DestinationPicker.h"
#include "JobModel.h"
#include "MainWindow.h"
#include "QueueView.h"
#include "SourceDropArea.h"
#include "Translations.h"
#include "job_control.h"

#include <QApplication>
#include <QComboBox>
#include <QPushButton>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QSocketNotifier>
#include <QToolButton>
#include <cstdio>
#include <unistd.h>

using namespace SaneCopy;

namespace {

void emitEvent(const QJsonObject &o)
{
    std::printf("%s\n", QJsonDocument(o).toJson(QJsonDocument::Compact).constData());
    std::fflush(stdout);
}

void reportError(const QString &what)
{
    emitEvent({{QStringLiteral("event"), QStringLiteral("error")}, {QStringLiteral("what"), what}});
}

void reportDevices(const DestinationPicker *picker)
{
    QJsonArray list;
    for (const Device &d : picker->devices())
        list.append(QJsonObject {{QStringLiteral("mount"), d.mountPoint},
                                 {QStringLiteral("name"), d.name},
                                 {QStringLiteral("block"), d.blockDevice},
                                 {QStringLiteral("mounted"), d.mounted()},
                                 {QStringLiteral("text"), d.describe()}});
    emitEvent({{QStringLiteral("event"), QStringLiteral("devices")},
               {QStringLiteral("devices"), list},
               {QStringLiteral("selected"), picker->destination()}});
}

void reportJob(const JobModel *model, int row)
{
    const QModelIndex i = model->index(row);
    emitEvent(
        {{QStringLiteral("event"), QStringLiteral("job")},
         {QStringLiteral("id"), qint64(i.data(JobModel::JobIdRole).toULongLong())},
         {QStringLiteral("state"),
          QString::fromUtf8(sanecopy::to_string(sanecopy::JobState(i.data(JobModel::StateRole).toInt())))},
         {QStringLiteral("finished"), i.data(JobModel::FinishedRole).toBool()},
         {QStringLiteral("status"), i.data(JobModel::StatusRole).toString()},
         {QStringLiteral("durable"), i.data(JobModel::DurableFractionRole).toDouble()},
         {QStringLiteral("safe"), i.data(JobModel::SafeToUnplugRole).toBool()},
         {QStringLiteral("removed"), i.data(JobModel::DeviceRemovedRole).toBool()},
         {QStringLiteral("can_eject"), i.data(JobModel::CanEjectRole).toBool()},
         {QStringLiteral("problems"), QJsonArray::fromStringList(i.data(JobModel::ProblemsRole).toStringList())}});
}

// The visible button |text| of the newest job's row, as the user sees it.
QToolButton *rowButton(MainWindow &window, const QString &text)
{
    QToolButton *found = nullptr;
    for (QToolButton *b : window.queueView()->findChildren<QToolButton *>())
        if (b->text() == text && b->isVisible())
            found = b;
    return found;
}

void press(MainWindow &window, const QString &text)
{
    if (QToolButton *b = rowButton(window, text))
        b->click();
    else
        reportError(QStringLiteral("no %1 button is shown").arg(text));
}

// Adds |files|, chooses the destination entry whose text starts with |entry|, presses Copy.
void copyTo(MainWindow &window, const QString &entry, const PathList &files)
{
    window.sourceArea()->addSources(files);
    auto *combo = window.destinationPicker()->findChild<QComboBox *>();
    const int index = combo ? combo->findText(entry, Qt::MatchStartsWith) : -1;
    if (index < 0)
        return reportError(QStringLiteral("no such destination entry"));
    combo->setCurrentIndex(index);
    Q_EMIT combo->activated(index); // what a click on the entry sends
    if (!window.copyButton()->isEnabled())
        return reportError(QStringLiteral("Copy is disabled"));
    window.copyButton()->click();
}

void shoot(MainWindow &window, const QString &path)
{
    const bool ok = window.grab().save(path);
    emitEvent({{QStringLiteral("event"), QStringLiteral("shot")},
               {QStringLiteral("path"), path},
               {QStringLiteral("ok"), ok}});
}

void command(MainWindow &window, const QByteArray &line)
{
    const QList<QByteArray> words = line.trimmed().split(' ');
    const QByteArray verb = words.value(0);
    if (verb == "copy" && words.size() >= 3) {
        CommandLine cmd;
        cmd.destination = words[1];
        cmd.files = words.mid(2);
        window.applyCommandLine(cmd);
    } else if (verb == "copy-to" && words.size() >= 3) {
        copyTo(window, QString::fromUtf8(words[1]), words.mid(2));
    } else if (verb == "eject") {
        press(window, QCoreApplication::translate("SaneCopy::JobRow", "Eject"));
    } else if (verb == "cancel") {
        press(window, QCoreApplication::translate("SaneCopy::JobRow", "Cancel"));
    } else if (verb == "ping" && words.size() == 2) {
        emitEvent({{QStringLiteral("event"), QStringLiteral("pong")}, {QStringLiteral("n"), words[1].toInt()}});
    } else if (verb == "shot" && words.size() == 2) {
        shoot(window, QString::fromLocal8Bit(words[1]));
    } else if (verb == "refresh") { // for a diagnosis only: what the list would show if it looked now
        window.destinationPicker()->refreshDevices();
    } else if (verb == "quit") {
        QApplication::quit();
    } else if (!verb.isEmpty()) {
        reportError(QString::fromUtf8("unknown command: " + line));
    }
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    loadTranslations(&app, QLocale::system().uiLanguages()); // as sanecopy does
    MainWindow window;
    window.resize(980, 760);
    window.show();

    DestinationPicker *picker = window.destinationPicker();
    QObject::connect(picker, &DestinationPicker::devicesChanged, &window, [picker] { reportDevices(picker); });
    JobModel *model = window.model();
    QObject::connect(model, &JobModel::dataChanged, &window, [model](const QModelIndex &from, const QModelIndex &to) {
        for (int r = from.row(); r <= to.row(); ++r)
            reportJob(model, r);
    });
    QObject::connect(model, &JobModel::rowsInserted, &window, [model](const QModelIndex &, int from, int to) {
        for (int r = from; r <= to; ++r)
            reportJob(model, r);
    });

    QByteArray pending;
    QSocketNotifier input(STDIN_FILENO, QSocketNotifier::Read);
    QObject::connect(&input, &QSocketNotifier::activated, &window, [&] {
        char buf[4096];
        const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
        if (n <= 0) {
            QApplication::quit(); // the guest went away
            return;
        }
        pending.append(buf, n);
        for (qsizetype nl; (nl = pending.indexOf('\n')) >= 0;) {
            const QByteArray line = pending.left(nl);
            pending.remove(0, nl + 1);
            command(window, line);
        }
    });
    reportDevices(picker);
    return QApplication::exec();
}
