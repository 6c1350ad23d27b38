// SPDX-License-Identifier: GPL-2.0-or-later
#include "DolphinPlace.h"

#include <QFileInfo>
#include <QProcess>

namespace SaneCopy {

DolphinPlace::DolphinPlace(const QString &helper, QObject *parent) : QObject(parent), helper_(helper) {}

QString DolphinPlace::installedHelper()
{
#ifdef SANECOPY_PLACES_HELPER
    const QString path = QStringLiteral(SANECOPY_PLACES_HELPER);
    if (QFileInfo(path).isExecutable())
        return path;
#endif
    return {};
}

void DolphinPlace::refresh() { run(QStringLiteral("status")); }

void DolphinPlace::setPresent(bool present) { run(present ? QStringLiteral("add") : QStringLiteral("remove")); }

void DolphinPlace::run(const QString &verb)
{
    if (!available())
        return;
    auto *process = new QProcess(this);
    process->setProgram(helper_);
    process->setArguments({verb});
    connect(process, &QProcess::finished, this, [this, process, verb](int code, QProcess::ExitStatus status) {
        process->deleteLater();
        const QString out = QString::fromUtf8(process->readAllStandardOutput()).trimmed();
        const QString err = QString::fromLocal8Bit(process->readAllStandardError()).trimmed();
        if (status != QProcess::NormalExit || code != 0) {
            Q_EMIT failed(err.isEmpty() ? tr("sanecopy-places %1 failed (exit %2)").arg(verb).arg(code) : err);
            return;
        }
        known_ = true;
        present_ = verb == QLatin1String("status") ? out == QLatin1String("present") : verb == QLatin1String("add");
        Q_EMIT stateKnown(present_);
    });
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart)
            return; // the rest end in finished()
        process->deleteLater();
        Q_EMIT failed(tr("Could not run %1: %2").arg(helper_, process->errorString()));
    });
    process->start();
}

} // namespace SaneCopy
