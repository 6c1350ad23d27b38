#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Stand-ins for the two desktop services the sandboxed window talks to, on the session bus it is given:
Plasma's job view server (org.kde.kuiserver: org.kde.JobViewServer.requestView, then org.kde.JobViewV2 on each
view) and the notification server (org.freedesktop.Notifications). Each call is written to stdout as one JSON
line, {"call": NAME, "view": PATH, "args": [...]}, for tests/flatpak/test_flatpak.py to read. Only the calls
SaneCopy makes are answered; flatpak's D-Bus proxy decides whether they get here at all, which is what is tested.
"""
import json
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib


def emit(call, view="", args=()):
    print(json.dumps({"call": call, "view": view, "args": [plain(a) for a in args]}), flush=True)


def plain(value):
    if isinstance(value, (dbus.String, dbus.ObjectPath)):
        return str(value)
    if isinstance(value, dbus.Boolean):
        return bool(value)
    if isinstance(value, (dbus.Int32, dbus.UInt32, dbus.Int64, dbus.UInt64, dbus.Byte, dbus.Int16, dbus.UInt16)):
        return int(value)
    if isinstance(value, dbus.Double):
        return float(value)
    if isinstance(value, (dbus.Array, list)):
        return [plain(v) for v in value]
    if isinstance(value, (dbus.Dictionary, dict)):
        return {str(k): plain(v) for k, v in value.items()}
    return str(value)


VIEW = "org.kde.JobViewV2"


class JobView(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.path = path

    def _log(self, name, *args):
        emit(name, self.path, args)

    @dbus.service.method(VIEW, in_signature="s")
    def setInfoMessage(self, text):
        self._log("setInfoMessage", text)

    @dbus.service.method(VIEW, in_signature="uss")
    def setDescriptionField(self, number, name, value):
        self._log("setDescriptionField", number, name, value)
        return True

    @dbus.service.method(VIEW, in_signature="u")
    def clearDescriptionField(self, number):
        self._log("clearDescriptionField", number)

    @dbus.service.method(VIEW, in_signature="v")
    def setDestUrl(self, url):
        self._log("setDestUrl", url)

    @dbus.service.method(VIEW, in_signature="ts")
    def setTotalAmount(self, amount, unit):
        self._log("setTotalAmount", amount, unit)

    @dbus.service.method(VIEW, in_signature="ts")
    def setProcessedAmount(self, amount, unit):
        self._log("setProcessedAmount", amount, unit)

    @dbus.service.method(VIEW, in_signature="u")
    def setPercent(self, percent):
        self._log("setPercent", percent)

    @dbus.service.method(VIEW, in_signature="t")
    def setSpeed(self, speed):
        self._log("setSpeed", speed)

    @dbus.service.method(VIEW, in_signature="b")
    def setSuspended(self, suspended):
        self._log("setSuspended", suspended)

    @dbus.service.method(VIEW, in_signature="u")
    def setError(self, code):
        self._log("setError", code)

    @dbus.service.method(VIEW, in_signature="s")
    def terminate(self, message):
        self._log("terminate", message)

    @dbus.service.signal(VIEW)
    def cancelRequested(self):
        pass


class JobViewServer(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/JobViewServer")
        self.bus = bus
        self.views = []

    @dbus.service.method("org.kde.JobViewServer", in_signature="ssi", out_signature="o")
    def requestView(self, app_name, app_icon, capabilities):
        path = f"/JobViewServer/JobView_{len(self.views) + 1}"
        self.views.append(JobView(self.bus, path))
        emit("requestView", path, (app_name, app_icon, capabilities))
        return dbus.ObjectPath(path)


class Notifications(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.next_id = 1

    @dbus.service.method("org.freedesktop.Notifications", in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, timeout):
        emit("Notify", "", (app_name, summary, body))
        self.next_id += 1
        return dbus.UInt32(self.next_id - 1)

    @dbus.service.method("org.freedesktop.Notifications", out_signature="as")
    def GetCapabilities(self):
        return ["body", "actions"]

    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("sanecopy-test", "SaneCopy", "1", "1.2")

    @dbus.service.method("org.freedesktop.Notifications", in_signature="u")
    def CloseNotification(self, nid):
        emit("CloseNotification", "", (nid,))


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    keep = [JobViewServer(bus), Notifications(bus)]
    names = [dbus.service.BusName("org.kde.kuiserver", bus), dbus.service.BusName("org.freedesktop.Notifications", bus)]
    emit("ready", "", [n.get_name() for n in names])
    loop = GLib.MainLoop()
    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_HUP | GLib.IO_IN, lambda *a: loop.quit())
    loop.run()
    del keep


if __name__ == "__main__":
    main()
