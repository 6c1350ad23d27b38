// SPDX-License-Identifier: GPL-2.0-or-later
#include "DolphinPlace.h"

#include <QDBusConnection>
#include <QDBusMessage>
#include <QFileInfo>
#include <QProcess>
#include <QTimer>

namespace SaneCopy {

DolphinPlace::DolphinPlace(const QString &helper, QObject *parent) : QObject(parent), helper_(helper) {}

QString DolphinPlace::installedHelper()
{
#ifdef SANECOPY_PLACES_HELPER
    QString path = QStringLiteral(SANECOPY_PLACES_HELPER);
    if (QFileInfo(path).isExecutable())
        return path;
#endif
    return {};
}

void DolphinPlace::loadDevicesModule()
{
    // kded autoloads its modules when the session starts; one installed since then (the package was installed in
    // this session) loads when asked. Whichever kded runs takes it; with none running, nothing is started.
    for (const QString &kded : {QStringLiteral("kded6"), QStringLiteral("kded5")}) {
        QDBusMessage call =
            QDBusMessage::createMethodCall(QStringLiteral("org.kde.") + kded, QStringLiteral("/kded"),
                                           QStringLiteral("org.kde.") + kded, QStringLiteral("loadModule"));
        call << QStringLiteral("sanecopydevices");
        call.setAutoStartService(false); // outside Plasma no kded is started for this
        QDBusConnection::sessionBus().send(call);
    }
}

void DolphinPlace::refresh() { run(QStringLiteral("status")); }

void DolphinPlace::setPresent(bool present) { run(present ? QStringLiteral("add") : QStringLiteral("remove")); }

void DolphinPlace::run(const QString &verb)
{
    if (!available())
        return;
    // One helper at a time, each reading and writing the places file: answers arrive in the order asked, and two
    // never write at once. A status already waiting needs no second one.
    if (verb != QLatin1String("status") || !pending_.contains(verb))
        pending_.append(verb);
    startNext();
}

void DolphinPlace::startNext()
{
    if (running_ || pending_.isEmpty())
        return;
    const QString verb = pending_.takeFirst();
    auto *process = new QProcess(this);
    running_ = process;
    process->setProgram(helper_);
    process->setArguments({verb});
    // KDE's places code never waits on anything; a helper that hangs anyway is ended, and said so.
    auto *timeout = new QTimer(process);
    timeout->setSingleShot(true);
    connect(timeout, &QTimer::timeout, process, &QProcess::kill);
    timeout->start(kHelperTimeoutMs);
    const auto done = [this, process](const QString &failure) {
        process->deleteLater();
        running_ = nullptr;
        if (!failure.isEmpty())
            Q_EMIT failed(failure);
        startNext();
    };
    connect(process, &QProcess::finished, this,
            [this, process, verb, timeout, done](int code, QProcess::ExitStatus status) {
                const QString out = QString::fromUtf8(process->readAllStandardOutput()).trimmed();
                const QString err = QString::fromLocal8Bit(process->readAllStandardError()).trimmed();
                if (status != QProcess::NormalExit || code != 0) {
                    done(!timeout->isActive()
                             ? tr("sanecopy-places %1 did not finish in %2 s").arg(verb).arg(kHelperTimeoutMs / 1000)
                         : err.isEmpty() ? tr("sanecopy-places %1 failed (exit %2)").arg(verb).arg(code)
                                         : err);
                    return;
                }
                known_ = true;
                present_ =
                    verb == QLatin1String("status") ? out == QLatin1String("present") : verb == QLatin1String("add");
                if (verb == QLatin1String("add"))
                    loadDevicesModule();
                Q_EMIT stateKnown(present_);
                done(QString());
            });
    connect(process, &QProcess::errorOccurred, this, [this, process, done](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart) // the rest end in finished()
            done(tr("Could not run %1: %2").arg(helper_, process->errorString()));
    });
    process->start();
}

} // namespace SaneCopy
