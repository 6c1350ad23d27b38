#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Copying in the background, on a real X display with a system tray: Xvfb and stalonetray or trayer (XEmbed trays,
what Qt's tray icon falls back to without a StatusNotifier host). sanecopy-screenshot --background starts a slowed copy,
closes the window into the tray, checks the icon is there with the copy's bytes on the device in its tooltip, and
saves the screen with that tooltip showing.

    test_background.py SCREENSHOT_PROGRAM OUT.png
Exit 0 pass, 1 fail, 77 skip (no Xvfb, or neither tray program), with the reason.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

DISPLAY = ":83"


def main():
    program, out = sys.argv[1], sys.argv[2]
    for tool, pkg in (("Xvfb", "xvfb"), ("xdpyinfo", "x11-utils")):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} not found (Debian: {pkg}); the background state is not shown here")
            return 77
    # Either small XEmbed tray will do: stalonetray (Debian 13), trayer (Debian 12).
    if shutil.which("stalonetray"):
        tray = ["stalonetray", "--geometry", "4x1+8+8", "--icon-size", "32", "--background", "#e8e8e8",
                "--grow-gravity", "W"]
    elif shutil.which("trayer"):
        tray = ["trayer", "--edge", "top", "--align", "left", "--widthtype", "pixel", "--width", "140",
                "--heighttype", "pixel", "--height", "36", "--transparent", "false", "--tint", "0xe8e8e8"]
    else:
        print("SKIP: no X system tray program (Debian: stalonetray or trayer); the background state is not shown here")
        return 77
    work = tempfile.mkdtemp(prefix="sanecopy-background-", dir="/var/tmp")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    procs = []
    try:
        procs.append(subprocess.Popen(["Xvfb", DISPLAY, "-screen", "0", "420x110x24", "-nolisten", "tcp"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(100):
            if subprocess.run(["xdpyinfo", "-display", DISPLAY], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        env = dict(os.environ, DISPLAY=DISPLAY, QT_QPA_PLATFORM="xcb", XDG_STATE_HOME=os.path.join(work, "state"),
                   # No session bus: Qt's tray icon then embeds itself in the X tray instead of looking for a
                   # StatusNotifier host.
                   DBUS_SESSION_BUS_ADDRESS="unix:path=/nonexistent/sanecopy-test-bus")
        procs.append(subprocess.Popen(tray, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1)
        p = subprocess.run([program, "--background", out, work], env=env, capture_output=True, text=True,
                           timeout=120)
        print(p.stdout.strip())
        if p.returncode == 77:
            print(f"FAIL: {tray[0]} runs, yet Qt found no system tray")
            return 1
        if p.returncode != 0:
            print(f"FAIL: exit {p.returncode}: {p.stderr.strip()[-500:]}")
            return 1
        tip = [line for line in p.stdout.splitlines() if "tooltip:" in line]
        if not tip or "window hidden, tray shown" not in tip[0] or "1 copy, " not in tip[0]:
            print(f"FAIL: the tray's state was not what closing into the background promises: {tip}")
            return 1
        # 96 MiB at about 12 MiB/s (the slowed seam), 2.5 s after the window closed: well past 1 %, well short of
        # 100 %. The percentage is the copy's, not the count of copies.
        percent = int(tip[0].split("1 copy, ")[1].split(" %")[0])
        if not 5 <= percent <= 95:
            print(f"FAIL: {percent} % on the device is not this copy's progress: {tip[0]}")
            return 1
        if "Argument missing" in p.stderr:
            print(f"FAIL: a message was formatted wrongly: {p.stderr.strip()[-300:]}")
            return 1
        print("PASS")
        return 0
    finally:
        for proc in reversed(procs):
            stick.stop(proc)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
