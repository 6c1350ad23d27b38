// SPDX-License-Identifier: GPL-2.0-or-later
//
// A session bus of a test's own (dbus-daemon --session), so D-Bus tests never touch the user's session. The
// daemon goes with this object.
#pragma once

#include <QProcess>
#include <QStandardPaths>
#include <QString>
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
        daemon_.start(QStringLiteral("dbus-daemon"),
                      {QStringLiteral("--session"), QStringLiteral("--nofork"), QStringLiteral("--print-address=1")});
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
