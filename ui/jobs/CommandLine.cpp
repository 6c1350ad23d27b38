// SPDX-License-Identifier: GPL-2.0-or-later
#include "CommandLine.h"

namespace SaneCopy {

namespace {

// One option at |i| (moved past a value it takes), into |result|. False when |arg| is not an option.
bool takeOption(const QList<QByteArray> &arguments, qsizetype &i, const QByteArray &cwd, CommandLine &result)
{
    const QByteArray &arg = arguments[i];
    if (arg == "--help" || arg == "-h") {
        result.help = true;
    } else if (arg == "--version") {
        result.version = true;
    } else if (arg == "--move") {
        result.move = true;
    } else if (arg == "--to" || arg == "-t") {
        if (i + 1 < arguments.size())
            result.destination = pathFromArgument(arguments[++i], cwd);
        else
            result.error = QStringLiteral("--to needs a destination folder");
    } else if (arg.startsWith("--to=")) {
        result.destination = pathFromArgument(arg.mid(5), cwd);
    } else if (arg.startsWith('-') && arg.size() > 1) {
        result.error = QStringLiteral("unknown option: %1").arg(QString::fromUtf8(arg));
    } else {
        return false;
    }
    return true;
}

} // namespace

// Parsed by hand rather than with QCommandLineParser: that one takes QStrings, and a file name that is not
// UTF-8 would not survive the trip.
CommandLine parseCommandLine(const QList<QByteArray> &arguments, const QByteArray &cwd)
{
    CommandLine result;
    bool options = true;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        if (options && arguments[i] == "--") {
            options = false;
            continue;
        }
        if (options && takeOption(arguments, i, cwd, result)) {
            if (!result.error.isEmpty())
                return result;
            continue;
        }
        if (QByteArray path = pathFromArgument(arguments[i], cwd); !path.isEmpty())
            result.files << path;
    }
    if (!result.destination.isEmpty() && result.files.isEmpty())
        result.error = QStringLiteral("--to needs files to copy");
    return result;
}

} // namespace SaneCopy
