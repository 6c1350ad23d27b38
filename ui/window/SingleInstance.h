// SPDX-License-Identifier: GPL-2.0-or-later
//
// One SaneCopy window per session. The first window owns the name io.github.sanecopy.SaneCopy on the session
// bus; a second `sanecopy [--move] [--to DEST] FILES` (a second "Safe Copy To…" click) hands its files to it and
// exits 0, and the running window queues them as a new copy. Paths go over the bus as bytes (ay), so a name that
// is not UTF-8 arrives as it is (Paths.h). Without a session bus every start opens its own window, as before.
#pragma once

#include "CommandLine.h"

#include <QDBusConnection>
#include <QObject>

namespace SaneCopy {

class MainWindow;

class SingleInstance : public QObject {
    Q_OBJECT
    Q_CLASSINFO("D-Bus Interface", "io.github.sanecopy.SaneCopy")
public:
    static QString serviceName() { return QStringLiteral("io.github.sanecopy.SaneCopy"); }
    static QString objectPath() { return QStringLiteral("/io/github/sanecopy/SaneCopy"); }

    // Hands |cmd| to the window that owns the name on |bus|. True when one took it: this process may exit.
    static bool handOver(const CommandLine &cmd, const QDBusConnection &bus = QDBusConnection::sessionBus());

    // Makes |window| the one: owns the name and takes hand-overs. False when the name is taken or there is no bus.
    SingleInstance(MainWindow *window, QDBusConnection bus = QDBusConnection::sessionBus());
    ~SingleInstance() override;
    bool isPrimary() const { return primary_; }
    // Another window took the name between this start's handOver() and its own claim: two starts at once (a
    // double click on "Safe Copy To…"). Its files go to that window after all (handOver() again).
    bool lostTheName() const { return lost_; }

public Q_SLOTS:
    // Over the bus. |files| are absolute paths; an empty |destination| asks for one, as on the command line.
    Q_SCRIPTABLE void Queue(const QList<QByteArray> &files, const QByteArray &destination, bool move);

private:
    MainWindow *window_;
    QDBusConnection bus_;
    bool primary_ = false;
    bool lost_ = false;
};

} // namespace SaneCopy
