#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""SaneCopy installed as a user flatpak, run inside its sandbox by an ordinary user, as a Flathub user would.

Run by packaging/flatpak/standin.sh as root in the Debian 13 build root (pivot_root'ed, so bwrap may make user
namespaces), after flatpak-builder installed the app for --user. Root only sets up what a desktop gives a user
(a throttled loop-device stick mounted under /run/media/USER/STICK, an X server, a session bus with stand-ins for
Plasma's job view server and the notification server, an empty system bus) and reads the stick's own counters;
every SaneCopy command runs as the user, through `flatpak run`.

Prints TAP and a closing `N passed, N failed` line; exits 1 if any check failed. Everything it made (the stick,
the mount, the processes, the user's test files) is taken down on every exit path.
"""
import argparse
import filecmp
import glob
import hashlib
import json
import os
import pwd
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

APP = "io.github.sanecopy.SaneCopy"
MiB = 1 << 20
RATE = 20_000_000
# How far a progress figure may run ahead of what the device took: one chunk in flight plus the filesystem's
# own accounting (tests/stick uses the same bound).
AHEAD_SLACK = 8 * MiB
HERE = os.path.dirname(os.path.abspath(__file__))

_count = 0
_failed = 0


def tap(ok, what, detail=""):
    global _count, _failed
    _count += 1
    if not ok:
        _failed += 1
    print(f"{'ok' if ok else 'not ok'} {_count} - {what}" + (f" # {detail}" if detail else ""), flush=True)
    return ok


def diag(text):
    for line in str(text).rstrip().splitlines():
        print(f"# {line}", flush=True)


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MiB), b""):
            h.update(block)
    return h.hexdigest()


class Desktop:
    """What a Plasma session gives the user, made here and taken down on exit: a runtime folder, a session bus with
    the two stand-in services, an empty system bus (no UDisks2 on it), and an X server."""

    def __init__(self, user):
        pw = pwd.getpwnam(user)
        self.user, self.uid, self.gid, self.home = user, pw.pw_uid, pw.pw_gid, pw.pw_dir
        self.runtime = f"/run/user/{self.uid}"
        self.procs = []
        self.events = queue.Queue()
        self.log = []  # every stand-in call seen, in order, with the time it was read

    def env(self):
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "USER": self.user, "LOGNAME": self.user,
                "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": self.runtime, "DISPLAY": ":71",
                "DBUS_SESSION_BUS_ADDRESS": f"unix:path={self.runtime}/bus",
                "DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={self.runtime}/system_bus",
                # KIO's launcher forks instead of asking systemd for a scope (there is no user manager here).
                "_KDE_APPLICATIONS_AS_FORKING": "1"}

    def as_user(self, cmd):
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--", *cmd]

    def run(self, cmd, timeout=300, **kw):
        return subprocess.run(self.as_user(cmd), env=self.env(), cwd=self.home, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout, **kw)

    def start(self, cmd, **kw):
        p = subprocess.Popen(self.as_user(cmd), env=self.env(), cwd=self.home, **kw)
        self.procs.append(p)
        return p

    def __enter__(self):
        os.makedirs(self.runtime, mode=0o700, exist_ok=True)
        os.chown(self.runtime, self.uid, self.gid)
        for name in ("bus", "system_bus"):
            self.start(["dbus-daemon", "--session", "--nofork", f"--address=unix:path={self.runtime}/{name}"],
                       stdout=subprocess.DEVNULL)
        self.start(["Xvfb", ":71", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(os.path.exists(f"{self.runtime}/{n}") for n in ("bus", "system_bus")) and \
                    self.run(["xdpyinfo"]).returncode == 0:
                break
            time.sleep(0.2)
        standin = self.start([sys.executable, os.path.join(HERE, "desktop_standin.py")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, args=(standin.stdout,), daemon=True).start()
        first = self.events.get(timeout=20)
        assert first["call"] == "ready", first
        return self

    def _read(self, stream):
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event["t"] = time.monotonic()
            self.log.append(event)
            self.events.put(event)

    def wait_event(self, pred, timeout):
        """The first stand-in call from now on for which pred holds, or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if pred(event):
                return event
        return None

    def calls(self, name, view=None):
        return [e for e in self.log if e["call"] == name and (view is None or e["view"] == view)]

    def __exit__(self, *exc):
        self.run(["flatpak", "kill", APP])
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        return False


def sanecp(desk, args, timeout=300):
    return desk.run(["flatpak", "run", "--command=sanecp", APP, *args], timeout=timeout)


def sanecp_watched(desk, s, args):
    """sanecp --json in the sandbox, each progress record checked against the stick's own counter read right
    after it. Returns (rc, records, stderr, worst excess, bytes the stick still had to write at return)."""
    base = s.written_bytes()
    proc = desk.start(["flatpak", "run", "--command=sanecp", APP, "--json", *args], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    records, worst = [], 0
    for line in proc.stdout:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        records.append(rec)
        if rec.get("type") == "progress":
            worst = max(worst, rec["durable_bytes"] - (s.written_bytes() - base))
    err = proc.stderr.read()
    rc = proc.wait()
    return rc, records, err, worst, s.durable_now()


def check_installed(desk):
    info = desk.run(["flatpak", "--user", "info", APP])
    tap(info.returncode == 0 and "org.kde.Platform/x86_64/6.11" in info.stdout,
        "the app is installed for the user against org.kde.Platform//6.11", info.stderr.strip()[:200])
    version = sanecp(desk, ["--version"])
    tap(version.returncode == 0 and version.stdout.strip() != "", "sanecp runs in the sandbox",
        (version.stdout + version.stderr).strip()[:200])


def check_probe(desk, s, build):
    """What the engine reads of the device (/proc/self/mountinfo, /sys/block, statfs) inside the sandbox is what
    it reads outside."""
    inside = sanecp(desk, ["--probe", s.mnt])
    outside = desk.run([os.path.join(build, "app", "sanecp"), "--probe", s.mnt])
    ok = inside.returncode == 0 and outside.returncode == 0
    a = json.loads(inside.stdout) if ok else {}
    b = json.loads(outside.stdout) if ok else {}
    for key in ("free_bytes",):  # moves as earlier checks write
        a.pop(key, None), b.pop(key, None)
    tap(ok and a == b, "sanecp --probe sees the stick in the sandbox as it does outside",
        f"inside {inside.stdout.strip() or inside.stderr.strip()}; outside {outside.stdout.strip()}")
    tap(a.get("disk") == s.name and a.get("writeback") == "windows",
        "the probe finds the stick's disk and keeps writeback windows", f"disk {a.get('disk')}, {a.get('writeback')}")


def check_file(desk, s):
    src = os.path.join(desk.home, "flatpak-test", "video.bin")
    stick.make_file(src, 96 * MiB)
    os.chown(src, desk.uid, desk.gid)
    stick.drop_caches([src])
    rc, records, err, worst, left = sanecp_watched(desk, s, [src, s.mnt + "/"])
    target = os.path.join(s.mnt, "video.bin")
    tap(rc == 0 and os.path.exists(target) and filecmp.cmp(src, target, shallow=False),
        "sanecp in the sandbox copies a 96 MiB file onto the stick, byte-identical", err.strip()[:300])
    tap(left <= stick.STAT_SLACK, "nothing is left to write on the stick when sanecp returns",
        f"{left / MiB:.2f} MiB left")
    progress = [r for r in records if r.get("type") == "progress"]
    tap(len(progress) >= 4 and worst <= AHEAD_SLACK, "progress never ran ahead of what the stick took",
        f"{len(progress)} records, at most {worst / MiB:.2f} MiB ahead")


def check_tree(desk, s):
    root = os.path.join(desk.home, "flatpak-test", "Photos")
    os.makedirs(root)
    n, total = stick.make_small_tree(root, n=300, per_folder=60)
    os.symlink("000/f00000.bin" if os.path.exists(os.path.join(root, "000/f00000.bin")) else "nowhere",
               os.path.join(root, "link"))
    subprocess.run(["chown", "-R", "-h", f"{desk.uid}:{desk.gid}", root], check=True)
    rc, _, err, worst, left = sanecp_watched(desk, s, [root, s.mnt + "/"])
    diff = subprocess.run(["diff", "-r", "--no-dereference", root, os.path.join(s.mnt, "Photos")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tap(rc == 0 and diff.returncode == 0, f"a tree of {n} files ({total / MiB:.1f} MiB) and a link copies identically",
        (err + diff.stdout).strip()[:300])
    tap(left <= stick.STAT_SLACK and worst <= AHEAD_SLACK, "the tree is on the stick when sanecp returns",
        f"{left / MiB:.2f} MiB left, progress at most {worst / MiB:.2f} MiB ahead")


def check_exit_codes(desk, s):
    src = os.path.join(desk.home, "flatpak-test", "video.bin")
    before = os.stat(os.path.join(s.mnt, "video.bin"))
    again = sanecp(desk, [src, s.mnt + "/"])
    after = os.stat(os.path.join(s.mnt, "video.bin"))
    tap(again.returncode == 1 and "exists" in again.stderr and before.st_mtime_ns == after.st_mtime_ns,
        "an existing target is refused with exit 1 and left alone, as outside", again.stderr.strip()[:200])
    usage = sanecp(desk, ["--no-such-option", src, s.mnt])
    tap(usage.returncode == 2, "a usage error exits 2, as outside", f"exit {usage.returncode}")


def check_hidden_paths(desk, s):
    """A folder the sandbox does not show: a clear message that says why and how to grant it, nothing copied."""
    hidden = "/opt/sanecopy-flatpak-test"
    os.makedirs(hidden, exist_ok=True)
    os.chown(hidden, desk.uid, desk.gid)
    try:
        src = os.path.join(desk.home, "flatpak-test", "video.bin")
        r = sanecp(desk, [src, hidden + "/"])
        tap(r.returncode == 1 and f"flatpak override --user --filesystem={hidden} {APP}" in r.stderr
            and not os.listdir(hidden),
            "a destination outside the sandbox's folders is refused, with the override that grants it",
            r.stderr.strip()[:300])
        r = sanecp(desk, ["/etc/hostname", s.mnt + "/"])
        tap(r.returncode in (0, 1) and "Traceback" not in r.stderr and "terminate" not in r.stderr,
            "a system file the sandbox replaces is a clear result, not a crash", f"exit {r.returncode}")
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


def check_move(desk, s):
    folder = os.path.join(desk.home, "flatpak-test", "to-move")
    os.makedirs(folder)
    src = stick.make_file(os.path.join(folder, "clip.bin"), 6 * MiB)
    digest = sha(src)
    subprocess.run(["chown", "-R", f"{desk.uid}:{desk.gid}", folder], check=True)
    r = sanecp(desk, ["--move", src, s.mnt + "/"])
    target = os.path.join(s.mnt, "clip.bin")
    tap(r.returncode == 0 and not os.path.exists(src) and os.path.exists(target) and sha(target) == digest,
        "Safe Move removes the source in the home folder once its copy is on the stick", r.stderr.strip()[:200])


def window_copy(desk, s, src, args=()):
    """`flatpak run APP --to STICK SRC` (the first window, or a second start handing over to it), followed on the
    stand-in job view server to its end. Returns (process, view, worst excess of progress over the stick, what
    the stick still had to write when the view ended), or (process, None, ...) when no view came."""
    base = s.written_bytes()
    seen = len(desk.calls("requestView"))
    proc = desk.start(["flatpak", "run", APP, *args, "--to", s.mnt, src], stdout=subprocess.DEVNULL,
                      stderr=subprocess.PIPE, text=True)
    ev = desk.wait_event(lambda e: e["call"] == "requestView" and len(desk.calls("requestView")) > seen, 90)
    if ev is None:
        return proc, None, 0, 0
    view, worst = ev["view"], 0
    while True:
        e = desk.wait_event(lambda e: e["view"] == view, 180)
        if e is None:
            return proc, view, worst, None
        if e["call"] == "setProcessedAmount" and e["args"][1] == "bytes":
            worst = max(worst, e["args"][0] - (s.written_bytes() - base))
        if e["call"] == "terminate":
            return proc, view, worst, s.durable_now()


def check_window(desk, s, shots, removable):
    folder = os.path.join(desk.home, "flatpak-test", "window")
    os.makedirs(folder)
    first = stick.make_file(os.path.join(folder, "holiday.mkv"), 64 * MiB)
    second = stick.make_file(os.path.join(folder, "second.mkv"), 16 * MiB)
    subprocess.run(["chown", "-R", f"{desk.uid}:{desk.gid}", folder], check=True)

    window, view, worst, left = window_copy(desk, s, first)
    tap(view is not None, "the window in the sandbox shows its copy on the job view server (org.kde.kuiserver)")
    target = os.path.join(s.mnt, "holiday.mkv")
    tap(left is not None and os.path.exists(target) and filecmp.cmp(first, target, shallow=False),
        "sanecopy --to STICK copies the file, byte-identical")
    percents = [e["args"][0] for e in desk.calls("setPercent", view)]
    tap(left is not None and left <= stick.STAT_SLACK and worst <= AHEAD_SLACK and percents and percents[-1] == 100,
        "the job view's bytes never ran ahead of the stick, and 100 % came with the data on it",
        f"at most {worst / MiB:.2f} MiB ahead; {0 if left is None else left / MiB:.2f} MiB left at the end; "
        f"percents {percents[:3]}...{percents[-2:]}")
    # A loop device is no removable disk: its headline is "Copy done" ("Safe to unplug" on a stick, as the probe
    # says; the USB VM sees that one). With a job view, Plasma's notification of the finished view is the one:
    # it carries the headline as the view's title, and the window sends none of its own.
    headline = "Safe to unplug" if removable else "Copy done"
    titles = [e["args"][0] for e in desk.calls("setInfoMessage", view)] if view else []
    note = desk.wait_event(lambda e: e["call"] == "Notify", 3) or next(iter(desk.calls("Notify")), None)
    tap(titles and titles[-1] == headline and note is None,
        f"the end of the copy is one notification, the job view's, titled \"{headline}\"",
        f"titles {titles}; notification {json.dumps(note['args']) if note else 'none'}")
    sources = [e["args"] for e in desk.calls("setDescriptionField", view)] if view else []
    tap([1, "Destination", target] in [list(a) for a in sources] and [0, "Source", first] in [list(a) for a in sources],
        "the job view names the file as its source, and where it goes on the stick as its destination",
        json.dumps(sources))

    # A second start (a second "Safe Copy To…") hands its file over to the running window and exits 0.
    start = time.monotonic()
    handed, view2, _, left2 = window_copy(desk, s, second)
    rc = handed.wait(timeout=60)
    target2 = os.path.join(s.mnt, "second.mkv")
    tap(rc == 0 and window.poll() is None and view2 is not None and left2 is not None
        and filecmp.cmp(second, target2, shallow=False),
        "a second flatpak run hands its file to the first window, which copies it",
        f"exit {rc} after {time.monotonic() - start:.1f} s; "
        f"first window {'running' if window.poll() is None else 'gone'}")
    shot(desk, shots, "flatpak-window.png")
    return window


def shot(desk, shots, name):
    if not shots:
        return
    os.makedirs(shots, exist_ok=True)
    path = os.path.join(shots, name)
    r = subprocess.run(["import", "-display", ":71", "-window", "root", path], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    diag(f"screenshot {path}" if r.returncode == 0 else f"no screenshot {path}: {r.stderr.strip()}")


def xdo(desk, *args):
    return desk.run(["xdotool", *args], timeout=60)


def window_id(desk, name, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = xdo(desk, "search", "--onlyvisible", "--name", name)
        ids = r.stdout.split()
        if ids:
            return ids[-1]
        time.sleep(0.3)
    return None


def check_service_menu(desk, shots):
    """Settings > Add to Dolphin's context menu, chosen from the keyboard in the sandboxed window, writes the
    menu where the host's Dolphin reads it."""
    menu = os.path.join(desk.home, ".local/share/kio/servicemenus", APP + ".desktop")
    win = window_id(desk, "^SaneCopy$")
    if win:
        xdo(desk, "windowfocus", "--sync", win)
        xdo(desk, "key", "alt+s")
        time.sleep(0.7)
        xdo(desk, "key", "Down", "Return")
        deadline = time.monotonic() + 10
        while not os.path.exists(menu) and time.monotonic() < deadline:
            time.sleep(0.2)
    text = open(menu, encoding="utf-8").read() if os.path.exists(menu) else ""
    tap(f"Exec=flatpak run {APP} %F" in text and f"Exec=flatpak run {APP} --move %F" in text
        and os.stat(menu).st_mode & 0o100,
        "Settings > Add to Dolphin's context menu writes the host's ~/.local/share/kio/servicemenus menu",
        f"window {win}, {menu} {'written' if text else 'missing'}")
    return bool(text)


def sandboxed_sanecopy_with(arg):
    """The pid of a sanecopy process whose last argument is |arg| (inside a sandbox: flatpak's own processes
    are `flatpak run ...` and `bwrap ...`), or None."""
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            argv = open(cmdline, "rb").read().split(b"\0")[:-1]
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"sanecopy" and argv[-1] == os.fsencode(arg):
            return int(cmdline.split("/")[2])
    return None


def check_dolphin(desk, build, shots):
    """Dolphin's own menu code lists the flatpak's "Safe Copy To…" for a file, and choosing it starts the
    sandboxed window with that file (KIO's launcher runs the menu's `flatpak run`)."""
    src = os.path.join(desk.home, "flatpak-test", "video.bin")
    trigger = os.path.join(build, "tests", "kio-worker", "sanecopy-menu-trigger")
    # Its output to a file: the window it starts inherits its descriptors, and a pipe would stay open with it.
    out = os.path.join(desk.home, "flatpak-test", "menu-trigger.txt")
    with open(out, "w") as f:
        # On the X display, not offscreen: what it starts inherits its environment, and the window must show.
        p = desk.start([trigger, src, "Safe Copy To\u2026"], stdout=f, stderr=subprocess.STDOUT)
        rc = p.wait(timeout=60)
    text = open(out, encoding="utf-8").read()
    tap(rc == 0 and "action: Safe Copy To\u2026" in text and "action: Safe Move To\u2026" in text,
        "Dolphin's context menu code lists Safe Copy To\u2026 and Safe Move To\u2026 for a file",
        text.strip().replace("\n", "; ")[:300])
    pid = None
    deadline = time.monotonic() + 60
    while pid is None and time.monotonic() < deadline:
        pid = sandboxed_sanecopy_with(src)
        time.sleep(0.3)
    win = window_id(desk, "^SaneCopy$", timeout=60) if pid else None
    tap(pid is not None and win is not None,
        "choosing it starts the window inside the sandbox with the file (flatpak run ... %F)",
        f"process {pid}, window {win}")
    if win:
        time.sleep(2)
        shot(desk, shots, "flatpak-from-dolphin.png")
    desk.run(["flatpak", "kill", APP])
    if shots:
        dolphin_menu_shot(desk, src, shots)


def dolphin_menu_shot(desk, src, shots):
    """Dolphin 25 with a file's context menu open, the flatpak's menu among its entries: a picture for docs/."""
    p = desk.start(["dolphin", "--new-window", "--select", src], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    try:
        r = xdo(desk, "search", "--sync", "--onlyvisible", "--class", "dolphin")
        win = r.stdout.split()[0] if r.stdout.split() else None
        if win:
            xdo(desk, "windowsize", win, "1024", "640")
            xdo(desk, "windowmove", win, "0", "0")
            xdo(desk, "windowfocus", "--sync", win)
            time.sleep(3)
            xdo(desk, "key", "Menu")
            time.sleep(2)
            shot(desk, shots, "flatpak-dolphin-menu.png")
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def check_unfinished(desk, s, shots):
    """A copy killed mid-file leaves its record where the sandbox keeps state; the next start offers it, and
    Resume finishes it from the part file."""
    folder = os.path.join(desk.home, "flatpak-test", "long")
    os.makedirs(folder)
    src = stick.make_file(os.path.join(folder, "movie.bin"), 120 * MiB)
    digest = sha(src)
    subprocess.run(["chown", "-R", f"{desk.uid}:{desk.gid}", folder], check=True)
    state = os.path.join(desk.home, ".var/app", APP, ".local/state/sanecopy/jobs")
    s.set_rate(6_000_000)
    base = s.written_bytes()
    proc = desk.start(["flatpak", "run", APP, "--to", s.mnt, src], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (glob.glob(state + "/*") and s.written_bytes() - base > 24 * MiB):
        time.sleep(0.2)
    records = glob.glob(state + "/*")
    desk.run(["flatpak", "kill", APP])
    proc.wait(timeout=30)
    parts = glob.glob(os.path.join(s.mnt, ".movie.bin.part*"))
    tap(bool(records) and bool(glob.glob(state + "/*")) and bool(parts),
        "a killed copy leaves its record under ~/.var/app/<id>/.local/state and its part file on the stick",
        f"records {records}, part files {parts}")
    s.set_rate(RATE)
    again = desk.start(["flatpak", "run", APP], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dialog = window_id(desk, "^Unfinished copies$", timeout=60)
    tap(dialog is not None, "the next start offers the unfinished copy")
    target = os.path.join(s.mnt, "movie.bin")
    if dialog:
        shot(desk, shots, "flatpak-unfinished.png")
        xdo(desk, "windowfocus", "--sync", dialog)
        xdo(desk, "key", "Return")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (os.path.exists(target) and not glob.glob(state + "/*")):
            time.sleep(0.5)
    tap(os.path.exists(target) and sha(target) == digest and not glob.glob(state + "/*"),
        "Resume finishes it: the file is whole on the stick and the record is gone")
    desk.run(["flatpak", "kill", APP])
    again.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--user", required=True)
    ap.add_argument("--build", required=True, help="the build root's build of the checkout (tests/kio-worker)")
    ap.add_argument("--shots", default="", help="folder for screenshots")
    args = ap.parse_args()
    stick.require_root_or_skip()
    stick.install_signal_hooks()
    print("TAP version 13", flush=True)
    with Desktop(args.user) as desk:
        work = os.path.join(desk.home, "flatpak-test")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(os.path.join(desk.home, ".var/app", APP), ignore_errors=True)
        shutil.rmtree(os.path.join(desk.home, ".local/share/kio"), ignore_errors=True)
        os.makedirs(work)
        mnt = f"/run/media/{args.user}/STICK"
        try:
            with stick.Stick(size_mib=768, rate_bps=RATE, mnt=mnt, owner=(desk.uid, desk.gid)) as s:
                check_installed(desk)
                check_probe(desk, s, args.build)
                check_file(desk, s)
                check_tree(desk, s)
                check_exit_codes(desk, s)
                check_hidden_paths(desk, s)
                check_move(desk, s)
                removable = json.loads(sanecp(desk, ["--probe", s.mnt]).stdout or "{}").get("removable")
                window = check_window(desk, s, args.shots, removable)
                check_service_menu(desk, args.shots)
                desk.run(["flatpak", "kill", APP])
                window.wait(timeout=30)
                check_dolphin(desk, args.build, args.shots)
                check_unfinished(desk, s, args.shots)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            for folder in (f"/run/media/{args.user}", "/run/media"):
                try:
                    os.rmdir(folder)
                except OSError:
                    pass
    print(f"1..{_count}")
    print(f"{_count - _failed} passed, {_failed} failed", flush=True)
    return 1 if _failed else 0


if __name__ == "__main__":
    sys.exit(main())
