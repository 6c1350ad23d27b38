#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Real Dolphin under Xvfb with the "Safe Copy" place: sanecopy-places adds it to a home of the test's own, a
throttled loop-device stick labelled KINGSTON is plugged in (a sysfs and udev tree of the test's own make it a
removable device with a label), and Dolphin opens sanecopy://devices/. Asserted: Dolphin's worker listed the
stick, the places file Dolphin read holds the place, and the window was drawn; the screenshot goes to OUT.png
(docs/dolphin-safe-copy-place.png is one, looked at).

    test_dolphin_place.py --plugin-dir DIR --helper sanecopy-places OUT.png
Exit 0 pass, 1 fail, 77 skip (not root, no Dolphin, Xvfb, xdotool or ImageMagick), with the reason.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_kio_worker import removable_sysfs, SessionBus, Failure, check  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--helper", required=True)
    ap.add_argument("out")
    a = ap.parse_args()
    for tool, pkg in (("dolphin", "dolphin"), ("Xvfb", "xvfb"), ("xdotool", "xdotool"), ("import", "imagemagick"),
                      ("xdpyinfo", "x11-utils"), ("dbus-daemon", "dbus")):
        if shutil.which(tool) is None:
            stick.skip(f"{tool} not found (Debian: {pkg}); Dolphin's Places are not checked here")
    stick.require_root_or_skip()
    work = tempfile.mkdtemp(prefix="sanecopy-dolphin-", dir="/var/tmp")
    # Dolphin and its bus run as an ordinary user, as on a desktop (root gets a warning banner, and could read
    # what a user can't): nobody, with a home in this test's folder.
    user = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    os.chmod(work, 0o755)
    xvfb = dolphin = None
    try:
        # They may not reach the build tree (a checkout under /root, whose mode is 700): the worker's plugins and
        # the helper are copied into this test's folder, which they can read.
        plugin_dir = os.path.join(work, "plugins")
        shutil.copytree(os.path.realpath(a.plugin_dir), plugin_dir)
        helper = os.path.join(work, os.path.basename(a.helper))
        shutil.copy2(a.helper, helper)
        home = os.path.join(work, "home")
        runtime = os.path.join(work, "runtime")
        os.makedirs(home)
        os.mkdir(runtime, 0o700)
        for d in (home, runtime):
            shutil.chown(d, "nobody", "nogroup")
        with stick.Stick(size_mib=128, rate_bps=40_000_000) as s, SessionBus(user) as bus:
            env = dict(os.environ)
            env.update(removable_sysfs(work, s))
            os.chmod(env["SANECOPY_SYSFS_ROOT"], 0o755)
            udev = os.path.join(work, "udev")
            os.mkdir(udev)
            with open(os.path.join(udev, "b" + s.majmin), "w") as f:
                f.write("E:ID_FS_TYPE=ext4\nE:ID_FS_LABEL=KINGSTON\nE:ID_FS_LABEL_ENC=KINGSTON\n")
            env.update({
                "SANECOPY_UDEV_ROOT": udev, "HOME": home, "XDG_RUNTIME_DIR": runtime,
                "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
                "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                "XDG_CACHE_HOME": os.path.join(home, ".cache"), "DBUS_SESSION_BUS_ADDRESS": bus.address,
                "QT_PLUGIN_PATH": plugin_dir, "QT_LOGGING_RULES": "sanecopy.kio.debug=true",
                "DISPLAY": ":78", "QT_QPA_PLATFORM": "xcb", "LANG": "C.UTF-8",
            })
            # The app's icon where an installed package puts it: the place shows with it.
            icon_dir = os.path.join(home, ".local", "share", "icons", "hicolor", "scalable", "apps")
            os.makedirs(icon_dir)
            shutil.copy(os.path.join(HERE, "..", "..", "icons", "io.github.sanecopy.SaneCopy.svg"), icon_dir)
            subprocess.run(["chown", "-R", "nobody:nogroup", os.path.join(home, ".local")], check=True)
            with open(os.path.join(s.mnt, "holiday.jpg"), "wb") as f:
                f.write(os.urandom(1 << 20))
            p = subprocess.run(user + [helper, "add"], env=dict(env, QT_QPA_PLATFORM="offscreen"), capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 0, f"sanecopy-places add: {p.returncode} {p.stderr}")
            with open(os.path.join(home, ".local", "share", "user-places.xbel")) as f:
                check("sanecopy://devices/" in f.read(), "the places file has no Safe Copy place")

            xvfb = subprocess.Popen(["Xvfb", ":78", "-screen", "0", "1024x640x24", "-nolisten", "tcp"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if subprocess.run(["xdpyinfo", "-display", ":78"], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)
            log_path = os.path.join(work, "dolphin.log")
            dolphin = subprocess.Popen(user + ["dolphin", "--new-window", "sanecopy://devices/"], env=env,
                                       stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
            win = subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--class", "dolphin"], env=env,
                                 capture_output=True, text=True, timeout=60).stdout.split()
            check(win, "no Dolphin window appeared")
            subprocess.run(["xdotool", "windowsize", win[0], "1024", "640", "windowmove", win[0], "0", "0"], env=env)
            listed = False
            for _ in range(150):
                with open(log_path, errors="replace") as f:
                    if 'device "KINGSTON"' in f.read():
                        listed = True
                        break
                time.sleep(0.1)
            check(listed, "Dolphin's sanecopy worker never listed the stick")
            # The Details view (Ctrl+3): the device's name and free space in one line, with its size and date.
            subprocess.run(["xdotool", "windowfocus", "--sync", win[0], "key", "--window", win[0], "ctrl+3"], env=env)
            time.sleep(3)  # icons and the places panel drawn
            check(dolphin.poll() is None, f"Dolphin exited {dolphin.returncode}")
            os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
            subprocess.run(["import", "-display", ":78", "-window", "root", a.out], env=env, check=True, timeout=60)
            colours = subprocess.run(["identify", "-format", "%k", a.out], capture_output=True, text=True).stdout
            check(colours.isdigit() and int(colours) > 16, f"the screenshot looks blank ({colours} colours)")
            print(f"Dolphin showed sanecopy://devices/ with KINGSTON; screenshot: {a.out} ({colours} colours)")
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        for proc in (dolphin, xvfb):
            if proc and proc.poll() is None:
                stick.stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
