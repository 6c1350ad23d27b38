#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A stand-in for Plasma's job view server, as KIO's job tracker looks for it (KIO's KDynamicJobTracker): the
service org.kde.kuiserver says no window of the application's own is needed and offers org.kde.JobViewServerV2 at
/JobViewServer, and org.kde.JobViewServer hands out one view (org.kde.JobViewV3) per job. What a view is told
through update() and terminate() is what Plasma's popup shows of a copy Dolphin started. It also serves
org.freedesktop.Notifications, whose Notify and CloseNotification calls are written the same way.

    job_view_standin.py -- COMMAND [ARG...]        (DBUS_SESSION_BUS_ADDRESS: the bus to serve on)

runs COMMAND on that bus once the services are there, writes each call as one JSON line to stdout,
{"t": CLOCK_MONOTONIC seconds, "call": NAME, "view": PATH, "args": [...]}, and exits with COMMAND's status."""
import json
import os
import subprocess
import sys
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "flatpak"))
import desktop_standin  # noqa: E402
from desktop_standin import plain  # noqa: E402  D-Bus values as JSON's

SERVER = "org.kde.JobViewServerV2"
VIEW = "org.kde.JobViewV3"


def emit(call, view="", args=()):
    print(json.dumps({"t": time.monotonic(), "call": call, "view": view, "args": [plain(a) for a in args]}),
          flush=True)


class JobView(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.path = path

    @dbus.service.method(VIEW, in_signature="a{sv}")
    def update(self, properties):
        emit("update", self.path, (properties,))

    @dbus.service.method(VIEW, in_signature="usa{sv}")
    def terminate(self, error_code, error_message, hints):
        emit("terminate", self.path, (error_code, error_message))

    @dbus.service.signal(VIEW)
    def cancelRequested(self):
        pass

    @dbus.service.signal(VIEW)
    def suspendRequested(self):
        pass

    @dbus.service.signal(VIEW)
    def resumeRequested(self):
        pass


class JobViewServer(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/JobViewServer")
        self.bus = bus
        self.views = []

    # KIO asks this first: False means "the server shows the jobs, no window of your own".
    @dbus.service.method("org.kde.kuiserver", out_signature="b")
    def requiresJobTracker(self):
        emit("requiresJobTracker")
        return False

    @dbus.service.method(SERVER, in_signature="sia{sv}", out_signature="o")
    def requestView(self, desktop_entry, capabilities, hints):
        path = f"/JobViewServer/JobView_{len(self.views) + 1}"
        self.views.append(JobView(self.bus, path))
        emit("requestView", path, (desktop_entry, capabilities, hints))
        return dbus.ObjectPath(path)


class Notifications(desktop_standin.Notifications):
    """The notification server of desktop_standin.py, its calls written with their time, ids and hints."""

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, timeout):
        nid = dbus.UInt32(replaces_id or self.next_id)
        self.next_id += 0 if replaces_id else 1
        emit("Notify", "", (nid, app_name, app_icon, summary, body, hints, timeout))
        return nid

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u")
    def CloseNotification(self, nid):
        emit("CloseNotification", "", (nid,))


def main():
    command = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    server = JobViewServer(bus)
    notifications = Notifications(bus)
    names = [dbus.service.BusName(n, bus)
             for n in ("org.kde.kuiserver", "org.kde.JobViewServer", "org.freedesktop.Notifications")]
    emit("ready", "", [n.get_name() for n in names])
    loop = GLib.MainLoop()
    child = subprocess.Popen(command, stdout=sys.stderr)  # stdout is the calls

    def check_child():
        if child.poll() is None:
            return True
        # What the child sent last (a view's terminate) may still wait on the bus: take it before leaving.
        GLib.timeout_add(500, loop.quit)
        return False

    GLib.timeout_add(100, check_child)
    loop.run()
    del server, notifications
    rc = child.wait()
    emit("exited", "", (rc,))
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main())
