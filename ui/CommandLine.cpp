// SPDX-License-Identifier: GPL-2.0-or-later
#include "CommandLine.h"

#include <QCommandLineParser>
#include <QDir>
#include <QUrl>

namespace SaneCopy {

namespace {
QString absolute(const QString &arg, const QString &cwd)
{
    if (arg.startsWith(QLatin1String("file:")))
        return QUrl(arg).toLocalFile();
    return QDir::cleanPath(QDir(cwd).absoluteFilePath(arg));
}
} // namespace

CommandLine parseCommandLine(const QStringList &arguments, const QString &workingDirectory)
{
    CommandLine result;
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Copies files at the device's own speed."));
    QCommandLineOption to(QStringList{QStringLiteral("to"), QStringLiteral("t")},
                          QStringLiteral("Start copying at once into DEST."), QStringLiteral("DEST"));
    parser.addOption(to);
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("Files and folders to copy."),
                                 QStringLiteral("[FILE...]"));
    if (!parser.parse(arguments)) {
        result.error = parser.errorText();
        return result;
    }
    for (const QString &arg : parser.positionalArguments())
        result.files << absolute(arg, workingDirectory);
    if (parser.isSet(to)) {
        result.destination = absolute(parser.value(to), workingDirectory);
        if (result.files.isEmpty())
            result.error = QStringLiteral("--to needs files to copy");
    }
    return result;
}

} // namespace SaneCopy
