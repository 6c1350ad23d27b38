#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""SaneCopy's window in a real Plasma 6 session: plasmashell from Debian 13 under Xvfb with software OpenGL, in a
root made by `packaging/debian13.sh plasma` (Plasma's packages and this build's .deb). Not part of CI: the root is
a gigabyte more and the session takes a minute; the stand-ins on a private bus (tests/ui/TestPlasmaJobViews,
TestNotifier) check the same calls in CI.

plasma_check.py ROOT OUTDIR: copies 120 MiB onto a loop stick at 10 MB/s with `sanecopy --to`, and checks what
Plasma was told: one job view, with the file as its source and the stick's file as its destination, ended once
with no error; no notification of the window's own beside it (one notification a finished copy); the copy
identical. The screenshots go to OUTDIR (plasma-job-running.png, plasma-job-done.png).

plasma_check.py ROOT OUTDIR --kio-stall: the same file dropped through SaneCopy's KIO worker (kioclient onto
sanecopy:/, as Dolphin's "Safe Copy" place), the stick made to stand still for STALL_SECONDS mid-copy: one job
view from KIO, ended once with no error; one notification of the worker's, "The device is not answering", and it
withdrawn once the stick writes again; the copy identical. Screenshots: plasma-kio-stalled.png (during the
stall), plasma-kio-done.png. Exit 0 pass, 1 fail."""
import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

MiB = stick.MiB
HERE = os.path.dirname(os.path.abspath(__file__))
DISPLAY = ":7"
RATE = 10_000_000
STALL_SECONDS = 15


def mount(src, dst, mounts, rbind=False):
    """|src| on |dst|, recorded in |mounts| as soon as it is mounted, so it is undone whatever fails next."""
    os.makedirs(dst, exist_ok=True)
    subprocess.run(["mount", "--rbind" if rbind else "--bind", src, dst], check=True)
    mounts.append(dst)
    if rbind:
        subprocess.run(["mount", "--make-rslave", dst], check=True)


def end_processes_in(root):
    """Every process whose root is |root| (the session's, all started here), by pid."""
    def root_of(pid):
        try:
            return os.readlink(f"/proc/{pid}/root")
        except OSError:  # gone, or not ours to look at
            return None

    for sig in ("TERM", "KILL"):
        pids = [p for p in os.listdir("/proc") if p.isdigit() and root_of(p) == root]
        if not pids:
            return
        subprocess.run(["kill", f"-{sig}", *pids], capture_output=True)
        subprocess.run(["sleep", "2"])


SESSION = r"""
set -u
export HOME=/root XDG_RUNTIME_DIR=/run/user/0 DISPLAY={display} LANG=C.UTF-8
export LIBGL_ALWAYS_SOFTWARE=1 QT_QPA_PLATFORM=xcb KDE_FULL_SESSION=true XDG_CURRENT_DESKTOP=KDE
mkdir -p -m 700 $XDG_RUNTIME_DIR
rm -rf /root/.config/sanecopy /root/.local/share/sanecopy /root/.local/state/sanecopy
Xvfb {display} -screen 0 1280x800x24 -nolisten tcp +extension GLX >/mnt/out/xvfb.log 2>&1 &
for _ in $(seq 50); do [ -e /tmp/.X11-unix/X{n} ] && break; sleep 0.2; done
exec dbus-run-session -- bash -c '
names() {{ dbus-send --session --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames \
    | grep -o "\"org[^\"]*\""; }}
plasmashell --no-respawn >/mnt/out/plasmashell.log 2>&1 &
for _ in $(seq 120); do names | grep -q org.kde.plasmashell && break; sleep 0.5; done
names | grep -q org.kde.plasmashell || {{ echo "plasmashell never came on the bus"; exit 3; }}
sleep 8
bash /mnt/plasma/in_session.sh {mode}'
"""


def run_session(root, outdir, mode):
    mounts = []
    try:
        for d in ("proc", "sys", "dev"):
            mount(f"/{d}", os.path.join(root, d), mounts, rbind=True)
        mount(outdir, os.path.join(root, "mnt/out"), mounts)
        mount(HERE, os.path.join(root, "mnt/plasma"), mounts)
        script = SESSION.format(display=DISPLAY, n=DISPLAY[1:], mode=mode)
        # Into a file, not a pipe: the session's daemons would hold a pipe open after the script ends.
        with open(os.path.join(outdir, "session.log"), "w") as log:
            return subprocess.run(["chroot", root, "/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", script],
                                  stdout=log, stderr=subprocess.STDOUT, timeout=300).returncode
    finally:
        try:
            end_processes_in(root)
        finally:
            unmount(root, mounts)


def unmount(root, mounts):
    """What run_session mounted, last first, and the X server's leftovers."""
    for m in reversed(mounts):
        if subprocess.run(["umount", "-R", m], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-R", "-l", m], capture_output=True)
    for f in (f"tmp/.X{DISPLAY[1:]}-lock", f"tmp/.X11-unix/X{DISPLAY[1:]}"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(root, f))


def calls(bus_log):
    """(member, [string and number arguments]) of each call the monitor saw."""
    return [(member, args) for member, args, _ in timed_calls(bus_log)]


def timed_calls(bus_log):
    """(member, [string and number arguments], the call's time in seconds since the epoch) of each call."""
    out, current = [], None
    for line in open(bus_log, errors="replace"):
        m = re.search(r"member=(\w+)$", line.strip())
        if line.startswith("method call") and m:
            t = re.search(r"time=([0-9.]+)", line)
            current = (m.group(1), [], float(t.group(1)) if t else 0.0)
            out.append(current)
        elif current and re.match(r"\s+(string|uint32|uint64|int32)", line):
            current[1].append(line.split(None, 1)[1].strip().strip('"'))
    return out


def stall_when_asked(s, outdir, stop):
    """The stick stands still for STALL_SECONDS once the session says the copy runs (/mnt/out/copying), then
    writes again, which the session is told (/mnt/out/restored)."""
    copying, restored = os.path.join(outdir, "copying"), os.path.join(outdir, "restored")
    while not os.path.exists(copying):
        if stop.wait(0.2):
            return
    s.set_rate(1)  # a byte a second: no request of the copy's completes
    stop.wait(STALL_SECONDS)
    s.set_rate(RATE)
    open(restored, "w").close()


def session_with_stick(root, outdir, mode):
    with stick.Stick(size_mib=256, rate_bps=RATE, mnt=os.path.join(root, "media/stick")) as s:
        stop = threading.Event()
        staller = threading.Thread(target=stall_when_asked, args=(s, outdir, stop), daemon=True)
        if mode == "kio-stall":
            staller.start()
        try:
            return run_session(root, outdir, mode)
        finally:
            stop.set()
            if staller.is_alive():
                staller.join()
            s.set_rate(RATE)


def window_checks(seen):
    members = [m for m, _ in seen]
    fields = {args[1]: args[2] for m, args in seen if m == "setDescriptionField" and len(args) >= 3}
    ends = [args for m, args in seen if m == "terminate"]
    return [
        (members.count("requestView") == 1, f"one job view asked for ({members.count('requestView')})"),
        (fields.get("Source") == "/tmp/src/big.bin", f"its source is the file ({fields.get('Source')})"),
        (fields.get("Destination") == "/media/stick/big.bin",
         f"its destination is the file on the stick ({fields.get('Destination')})"),
        (len(ends) == 1 and ends[0] == [""], f"it ended once, with no error ({ends})"),
        (members.count("Notify") == 0, f"no notification of the window's own beside it ({members.count('Notify')})"),
    ]


def kio_stall_checks(seen, timed, restored_at):
    members = [m for m, _ in seen]
    # Notify: app name, replaced id, icon, summary, body, then the hints' strings.
    notes = [args for m, args in seen if m == "Notify"]
    stalled = [a for a in notes if len(a) > 4 and a[3] == "The device is not answering"]
    closed = [args for m, args in seen if m == "CloseNotification"]
    ends = [args for m, args in seen if m == "terminate"]
    return [
        (members.count("requestView") == 1, f"one job view asked for by KIO ({members.count('requestView')})"),
        (len(ends) == 1 and ends[0][:1] == ["0"], f"it ended once, with no error ({ends})"),
        (len(stalled) == 1, f"one notification that the device is not answering ({[a[3:5] for a in notes]})"),
        (bool(stalled) and "big.bin" in stalled[0][4] and "Do not unplug" in stalled[0][4],
         f"it names the file and says not to unplug ({stalled[0][4] if stalled else None})"),
        (len(closed) == 1, f"withdrawn once ({closed})"),
        (restored_at is not None and all(t > restored_at for m, _, t in timed if m == "CloseNotification"),
         "and only after the stick wrote again"),
    ]


def main():
    root, outdir = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])
    mode = "kio-stall" if "--kio-stall" in sys.argv[3:] else "window"
    stick.require_root_or_skip()
    stick.install_signal_hooks()
    os.makedirs(outdir, exist_ok=True)
    src = os.path.join(root, "tmp/src")
    os.makedirs(src, exist_ok=True)
    stick.make_file(os.path.join(src, "big.bin"), 120 * MiB)
    stick.syncfs(src)  # on its disk: the window's chart of the system's dirty memory shows the copy's, not this
    rc = session_with_stick(root, outdir, mode)
    print(open(os.path.join(outdir, "session.log"), errors="replace").read()[-3000:])
    seen = calls(os.path.join(outdir, "bus.log"))
    checks = [(rc == 0, f"the session ran, and the copy is identical (exit {rc})")]
    if mode == "kio-stall":
        restored = os.path.join(outdir, "restored")
        restored_at = os.path.getmtime(restored) if os.path.exists(restored) else None
        checks += kio_stall_checks(seen, timed_calls(os.path.join(outdir, "bus.log")), restored_at)
    else:
        checks += window_checks(seen)
    for ok, what in checks:
        print(("ok    " if ok else "FAIL  ") + what)
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
