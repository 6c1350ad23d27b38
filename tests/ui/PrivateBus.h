// SPDX-License-Identifier: GPL-2.0-or-later
//
// A session bus of a test's own, so D-Bus tests never touch the user's session. The daemon goes with this object.
// It reads a configuration of its own, with no service folders: a name nobody owns is unknown at once, as on a
// desktop without that service, instead of started from the machine's .service files (the session's default
// would start an installed kio-fuse, and the kiod it starts in turn, which outlive the bus).
#pragma once

#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QString>
#include <QTemporaryDir>
#include <QTest>

namespace SaneCopy::Test {

class PrivateBus {
public:
    // Empty when it could not start; then skipReason() says why.
    QString start()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("dbus-daemon")).isEmpty()) {
            skip_ = QStringLiteral("SKIP: dbus-daemon is missing (Debian: dbus); packaging/dev.sh installs it");
            return {};
        }
        if (!dir_.isValid()) {
            skip_ = QStringLiteral("no temporary folder for the bus: ") + dir_.errorString();
            return {};
        }
        const QString config = dir_.filePath(QStringLiteral("session.conf"));
        QFile file(config);
        if (!file.open(QIODevice::WriteOnly) || file.write(kConfig.arg(dir_.path()).toUtf8()) < 0 || !file.flush()) {
            skip_ = QStringLiteral("could not write ") + config + QStringLiteral(": ") + file.errorString();
            return {};
        }
        file.close();
        daemon_.start(QStringLiteral("dbus-daemon"), {QStringLiteral("--config-file=") + config,
                                                      QStringLiteral("--nofork"), QStringLiteral("--print-address=1")});
        if (!daemon_.waitForReadyRead(10000)) {
            skip_ = QStringLiteral("dbus-daemon did not start: ") + daemon_.errorString();
            return {};
        }
        return QString::fromUtf8(daemon_.readLine()).trimmed();
    }
    QString skipReason() const { return skip_; }
    ~PrivateBus()
    {
        daemon_.kill();
        daemon_.waitForFinished();
    }

private:
    // What the session bus's own configuration allows, without <standard_session_servicedirs/>.
    static inline const QString kConfig =
        QStringLiteral("<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                       " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                       "<busconfig>\n"
                       "  <type>session</type>\n"
                       "  <listen>unix:dir=%1</listen>\n"
                       "  <auth>EXTERNAL</auth>\n"
                       "  <policy context=\"default\">\n"
                       "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
                       "    <allow eavesdrop=\"true\"/>\n"
                       "    <allow own=\"*\"/>\n"
                       "  </policy>\n"
                       "</busconfig>\n");

    QTemporaryDir dir_;
    QProcess daemon_;
    QString skip_;
};

} // namespace SaneCopy::Test

// In a test's initTestCase(): |bus| started and its address in |address|. Without dbus-daemon the test is
// skipped, saying why; a daemon that would not start fails it.
#define SANECOPY_START_PRIVATE_BUS(bus, address)                                                                       \
    do {                                                                                                               \
        (address) = (bus).start();                                                                                     \
        if ((address).isEmpty() && (bus).skipReason().startsWith(QLatin1String("SKIP")))                               \
            QSKIP(qPrintable((bus).skipReason()));                                                                     \
        QVERIFY2(!(address).isEmpty(), qPrintable((bus).skipReason()));                                                \
    } while (false)
