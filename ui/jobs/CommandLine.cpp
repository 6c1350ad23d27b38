// SPDX-License-Identifier: GPL-2.0-or-later
#include "CommandLine.h"

#include "paths.h"

#include <sys/stat.h>

namespace SaneCopy {

namespace {

// A network URL that names no local path (a folder called "smb:" in |cwd| would be one).
bool isNetworkUrl(const QByteArray &arg, const QByteArray &cwd)
{
    if (!sanecopy::looks_like_network_url(std::string_view(arg.constData(), size_t(arg.size()))))
        return false;
    struct stat st {};
    return ::lstat(pathFromArgument(arg, cwd).constData(), &st) != 0;
}

// --to's value: a path, or a network URL kept as it is.
void setDestination(const QByteArray &value, const QByteArray &cwd, CommandLine &result)
{
    if (isNetworkUrl(value, cwd))
        result.networkDestination = value;
    else
        result.destination = pathFromArgument(value, cwd);
}

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
            setDestination(arguments[++i], cwd, result);
        else
            result.error = QStringLiteral("--to needs a destination folder");
    } else if (arg.startsWith("--to=")) {
        setDestination(arg.mid(5), cwd, result);
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
        if (isNetworkUrl(arguments[i], cwd))
            result.networkFiles << arguments[i];
        else if (QByteArray path = pathFromArgument(arguments[i], cwd); !path.isEmpty())
            result.files << path;
    }
    const bool destinationGiven = !result.destination.isEmpty() || !result.networkDestination.isEmpty();
    if (destinationGiven && result.files.isEmpty() && result.networkFiles.isEmpty())
        result.error = QStringLiteral("--to needs files to copy");
    return result;
}

} // namespace SaneCopy
