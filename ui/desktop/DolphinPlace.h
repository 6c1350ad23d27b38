// SPDX-License-Identifier: GPL-2.0-or-later
//
// The "Safe Copy" place in Dolphin's Places panel (sanecopy://devices/: the plugged-in sticks, seen through the
// KIO worker), added and removed only when the user says so: from Settings, or from the question asked once at
// the first start. The edit itself is sanecopy-places' (kio-worker/Places.cpp), which goes through KDE's own
// KFilePlacesModel; this class runs it without blocking the window.
//
// Native installs only: the flatpak can't install the worker, and offers the service menu instead (DolphinHook).
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>

namespace SaneCopy {

class DolphinPlace : public QObject {
    Q_OBJECT
public:
    // |helper|: sanecopy-places' path; empty means there is none (no worker installed).
    explicit DolphinPlace(const QString &helper = installedHelper(), QObject *parent = nullptr);

    // The helper installed beside the worker, if it is there.
    static QString installedHelper();
    bool available() const { return !helper_.isEmpty(); }
    bool known() const { return known_; }
    bool present() const { return present_; }

    // Asks whether the place is there: stateKnown() follows.
    void refresh();
    // Adds or removes it: stateKnown() follows, or failed() with the helper's words.
    void setPresent(bool present);

Q_SIGNALS:
    void stateKnown(bool present);
    void failed(const QString &message);

private:
    static constexpr int kHelperTimeoutMs = 30000;
    void run(const QString &verb);
    void startNext();
    // Asks the session's kded to load the module that keeps the place current (kio-worker/DevicesNotifier.h).
    void loadDevicesModule();

    QString helper_;
    QStringList pending_;        // verbs waiting for the helper that runs
    QObject *running_ = nullptr; // that helper's process
    bool known_ = false;
    bool present_ = false;
};

} // namespace SaneCopy
