// SPDX-License-Identifier: GPL-2.0-or-later
#include "CommandLine.h"

namespace SaneCopy {

// Parsed by hand rather than with QCommandLineParser: that one takes QStrings, and a file name that is not
// UTF-8 would not survive the trip.
CommandLine parseCommandLine(const QList<QByteArray> &arguments, const QByteArray &cwd)
{
    CommandLine result;
    bool options = true;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        const QByteArray &arg = arguments[i];
        if (options && arg == "--") {
            options = false;
        } else if (options && (arg == "--help" || arg == "-h")) {
            result.help = true;
        } else if (options && arg == "--move") {
            result.move = true;
        } else if (options && (arg == "--to" || arg == "-t")) {
            if (i + 1 >= arguments.size()) {
                result.error = QStringLiteral("--to needs a destination folder");
                return result;
            }
            result.destination = pathFromArgument(arguments[++i], cwd);
        } else if (options && arg.startsWith("--to=")) {
            result.destination = pathFromArgument(arg.mid(5), cwd);
        } else if (options && arg.startsWith('-') && arg.size() > 1) {
            result.error = QStringLiteral("unknown option: %1").arg(QString::fromUtf8(arg));
            return result;
        } else if (QByteArray path = pathFromArgument(arg, cwd); !path.isEmpty()) {
            result.files << path;
        }
    }
    if (!result.destination.isEmpty() && result.files.isEmpty())
        result.error = QStringLiteral("--to needs files to copy");
    return result;
}

} // namespace SaneCopy
