#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The sanecopy: KIO worker end to end: the real kioclient (KF6) or kioclient5 (KF5) loads the worker from the
build tree and copies onto a throttled loop-device stick (tests/stick/stick.py), one case per run:

    test_kio_worker.py --kf 6 --plugin-dir DIR CASE      (DIR holds kf6/kio/kio_sanecopy.so)

What is asserted is what a Dolphin user is promised: the bytes arrive identical, and when kioclient returns
the device has nothing left to write. Timings are printed, never asserted.
Exit 0 pass, 1 fail, 77 skip (not root, no kioclient, no loop devices or blkio throttle), with the reason.
"""
import argparse
import contextlib
import filecmp
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

MiB = 1 << 20
RATE = 40_000_000
DIRTY_BOUND = 32 * MiB
PLUGIN_DIR = None
KF = "5"
KIOCLIENT = "kioclient5"  # KF6's kde-cli-tools names it kioclient (kioclient5 there is a compatibility name)
DIRLISTER = None
RUNTIME_DIR = None  # this run's own XDG_RUNTIME_DIR: KIO's sockets, and so its workers, are told apart by it


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def url(scheme, path):
    """A file: or sanecopy: URL for a local path, every byte outside the unreserved set percent-encoded."""
    from urllib.parse import quote_from_bytes
    return f"{scheme}://" + quote_from_bytes(os.fsencode(path), safe="/")


def kioclient(*args, timeout=240, env_extra=None):
    """Runs kioclient against the build tree's worker. Returns (rc, stdout, stderr, seconds)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env.update({
        # The folder that holds kf6/kio (kf5/kio), not that folder itself.
        "QT_PLUGIN_PATH": PLUGIN_DIR,
        # Without a display kioclient aborts in xcb; offscreen needs none.
        "QT_QPA_PLATFORM": "offscreen",
        # The worker's debug lines reach kioclient's stderr: they show which worker did the copy.
        "QT_LOGGING_RULES": "sanecopy.kio.debug=true",
        "XDG_RUNTIME_DIR": RUNTIME_DIR,
    })
    start = time.monotonic()
    p = subprocess.run([KIOCLIENT, "--noninteractive", *args], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace", timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def assert_nothing_left(s, sampler, what):
    """Right after kioclient returned: the device has nothing dirty or under writeback, and a sync writes
    (almost) nothing more. The dirty counters are approximate (STAT_SLACK); the device's own write counter
    is not."""
    left = stick.durable_now(s.majmin)
    check(left <= stick.STAT_SLACK, f"{what}: {left} bytes still to write when kioclient returned")
    before = sampler.written_since_start()
    stick.syncfs(s.mnt)
    after = sampler.written_since_start()
    check(after - before <= 1 * MiB, f"{what}: a sync after kioclient returned still wrote {after - before} bytes")
    return left, after - before


def no_part_files(root):
    return not any(n.endswith(".part") for _, dirs, files in os.walk(root) for n in files + dirs)


def copy_onto_stick(s, src, dst, *extra):
    with stick.DirtySampler(s.majmin) as sampler:
        rc, out, err, secs = kioclient(*extra, "copy", url("file", src), url("sanecopy", dst))
        check(rc == 0, f"kioclient copy exited {rc}: {err.strip()}")
        left, synced = assert_nothing_left(s, sampler, "copy")
    return sampler, err, secs, left, synced


def case_big_file(work):
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "big file.bin"), 96 * MiB)
        stick.uncache(src)
        dst = os.path.join(s.mnt, "big file.bin")
        sampler, err, secs, left, synced = copy_onto_stick(s, src, dst)
        print(f"96 MiB at {RATE / 1e6:.0f} MB/s: kioclient returned after {secs:.2f} s "
              f"(the device alone needs {96 * MiB / RATE:.2f} s); peak dirty {sampler.peak / MiB:.1f} MiB; "
              f"left dirty at return {left / 1024:.0f} KiB; a sync then wrote {synced / 1024:.0f} KiB")
        check("through the engine" in err, f"the copy did not go through the sanecopy worker's copy(): {err}")
        check(sampler.peak <= DIRTY_BOUND, f"peak dirty {sampler.peak / MiB:.1f} MiB > 32 MiB")
        check(filecmp.cmp(src, dst, shallow=False), "copy differs")
        check(no_part_files(s.mnt), "a part file was left behind")


def case_folder(work):
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        tree = os.path.join(work, "holiday photos")
        stick.make_small_tree(os.path.join(tree, "small"), n=120, per_folder=40)
        os.makedirs(os.path.join(tree, "videos", "empty folder"))
        for i in range(3):
            stick.make_file(os.path.join(tree, "videos", f"clip {i}.mp4"), 12 * MiB)
        dst = os.path.join(s.mnt, "holiday photos")
        sampler, err, secs, left, synced = copy_onto_stick(s, tree, dst)
        print(f"folder of {sum(len(f) for _, _, f in os.walk(tree))} files: {secs:.2f} s, "
              f"peak dirty {sampler.peak / MiB:.1f} MiB, left {left / 1024:.0f} KiB, "
              f"sync then wrote {synced / 1024:.0f} KiB")
        check(sampler.peak <= DIRTY_BOUND, f"peak dirty {sampler.peak / MiB:.1f} MiB > 32 MiB")
        # The small files are held by the folder run (kio-worker/FolderRun.h) whatever CopyJob's order: a clip
        # copied the usual way between them (a second or more at this rate) once ended the run, and the small files
        # after it went through engine jobs of their own.
        engine_jobs = err.count("through the engine")
        print(f"files copied by an engine job of their own: {engine_jobs} (the 3 clips)")
        check(engine_jobs == 3, f"{engine_jobs} files went through engine jobs of their own, not the 3 clips alone")
        for d, dirs, files in os.walk(tree):
            rel = os.path.relpath(d, tree)
            other = os.path.join(dst, rel)
            check(os.path.isdir(other), f"missing folder {rel}")
            check(sorted(os.listdir(other)) == sorted(dirs + files), f"{rel}: {sorted(os.listdir(other))}")
            _, mismatch, errors = filecmp.cmpfiles(d, other, files, shallow=False)
            check(not mismatch and not errors, f"{rel}: contents differ: {(mismatch + errors)[:3]}")
        check(no_part_files(s.mnt), "a part file was left behind")


def case_ls(work):
    with stick.Stick(size_mib=64, rate_bps=RATE) as s:
        names = ["plain.txt", "with space.txt", "caf\u00e9", "quote\"d 'n' #hash?.txt", "folder"]
        for n in names[:-1]:
            with open(os.path.join(s.mnt, n), "w") as f:
                f.write(n)
        os.mkdir(os.path.join(s.mnt, "folder"))
        rc, out, err, _ = kioclient("ls", url("sanecopy", s.mnt))
        check(rc == 0, f"ls exited {rc}: {err}")
        listed = set(out.splitlines())
        print(f"ls: {sorted(listed)}")
        check(set(names) | {"lost+found"} <= listed, f"ls listed {sorted(listed)}")
        rc, out, err, _ = kioclient("ls", url("sanecopy", os.path.join(s.mnt, "no such folder")))
        check(rc == 1, f"ls of a missing folder exited {rc}")
        rc, out, err, _ = kioclient("stat", url("sanecopy", os.path.join(s.mnt, "with space.txt")))
        check(rc == 0 and "with space.txt" in out, f"stat exited {rc}: {out} {err}")


def case_missing_source(work):
    with stick.Stick(size_mib=64, rate_bps=RATE) as s:
        before = sorted(os.listdir(s.mnt))
        rc, _, err, _ = kioclient("copy", url("file", os.path.join(work, "no such file")),
                                  url("sanecopy", os.path.join(s.mnt, "x")))
        check(rc == 1, f"a missing file: source exited {rc}, want 1: {err}")
        rc, _, err, _ = kioclient("copy", url("sanecopy", os.path.join(s.mnt, "no such file")),
                                  url("file", os.path.join(work, "x")))
        check(rc == 1, f"a missing sanecopy: source exited {rc}, want 1: {err}")
        check("does not exist" in err, f"unexpected message: {err}")
        check(sorted(os.listdir(s.mnt)) == before, f"the stick changed: {os.listdir(s.mnt)}")
        check(not os.path.exists(os.path.join(work, "x")), "a target was created")


def case_overwrite(work):
    with stick.Stick(size_mib=128, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "new.bin"), 24 * MiB)
        dst = os.path.join(s.mnt, "target.bin")
        with open(dst, "wb") as f:
            f.write(b"the user's own file\n")
        stick.syncfs(s.mnt)
        rc, _, err, _ = kioclient("copy", url("file", src), url("sanecopy", dst))
        check(rc == 1, f"copy onto an existing file without --overwrite exited {rc}, want 1")
        check("already exists" in err, f"unexpected message: {err}")
        with open(dst, "rb") as f:
            check(f.read() == b"the user's own file\n", "the existing file was touched")
        check(no_part_files(s.mnt), "a part file was left behind")

        sampler, err, secs, left, synced = copy_onto_stick(s, src, dst, "--overwrite")
        print(f"overwrite: {secs:.2f} s, left {left / 1024:.0f} KiB, sync then wrote {synced / 1024:.0f} KiB")
        check(filecmp.cmp(src, dst, shallow=False), "the overwritten file differs from the source")
        check(no_part_files(s.mnt), "a part file was left behind")


def case_copy_back(work):
    with stick.Stick(size_mib=128, rate_bps=RATE) as s:
        on_stick = stick.make_file(os.path.join(s.mnt, "from stick.bin"), 32 * MiB)
        stick.syncfs(s.mnt)
        back = os.path.join(work, "back", "from stick.bin")
        os.makedirs(os.path.dirname(back))
        rc, _, err, secs = kioclient("copy", url("sanecopy", on_stick), url("file", back))
        check(rc == 0, f"copy from the stick exited {rc}: {err}")
        check("through the engine" in err, f"sanecopy: -> file: did not reach the worker's copy(): {err}")
        check(filecmp.cmp(on_stick, back, shallow=False), "the copy back differs")
        print(f"copy back: {secs:.2f} s")


def worker_pids():
    """The worker processes (KF5 kioslave5, KF6 kioworker) running this build's worker for this run's kioclient:
    KIO starts them detached from it, and names their socket under our XDG_RUNTIME_DIR. Other tests' workers are
    left alone."""
    plugin = worker_plugin().encode()
    socket_prefix = b"local:" + os.fsencode(RUNTIME_DIR) + b"/"
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if plugin in args and any(a.startswith(socket_prefix) for a in args):
                pids.append(int(pid))
        except OSError:
            pass
    return pids


def wait_workers_gone(timeout=15.0):
    deadline = time.monotonic() + timeout
    while worker_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    return not worker_pids()


def start_copy(src, dst):
    env = dict(os.environ, QT_PLUGIN_PATH=PLUGIN_DIR, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=RUNTIME_DIR)
    return subprocess.Popen([KIOCLIENT, "--noninteractive", "copy", url("file", src), url("sanecopy", dst)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")


def wait_for_part(mnt, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not no_part_files(mnt):
            return True
        time.sleep(0.05)
    return False


def case_cancel(work):
    """A copy that ends early leaves nothing: neither when KIO kills the job (SIGTERM to the worker, what
    Dolphin's cancel does) nor when the application itself goes away mid-copy (the worker is then ended by
    KIO from inside a progress report)."""
    with stick.Stick(size_mib=512, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "big.bin"), 200 * MiB)
        for how in ("job killed", "application gone"):
            p = start_copy(src, os.path.join(s.mnt, "big.bin"))
            check(wait_for_part(s.mnt), f"{how}: the copy never started")
            time.sleep(1.0)  # well into the copy, with windows in flight
            if how == "job killed":
                for pid in worker_pids():
                    os.kill(pid, signal.SIGTERM)
                rc = p.wait(timeout=60)
                check(rc == 1, f"{how}: kioclient exited {rc}, want 1")
            else:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=60)
            check(wait_workers_gone(), f"{how}: the worker is still running")
            check(no_part_files(s.mnt), f"{how}: a part file was left: {os.listdir(s.mnt)}")
            check(sorted(os.listdir(s.mnt)) == ["lost+found"], f"{how}: left on the stick: {os.listdir(s.mnt)}")
            left = stick.durable_now(s.majmin)
            check(left <= stick.STAT_SLACK, f"{how}: {left} bytes still to write after the worker ended")
            print(f"{how}: nothing left on the stick, {left / 1024:.0f} KiB dirty")


STALL_RATE = 10_000_000
STALL_SECONDS = 15
STALL_SAID = 10  # the job view says the device is not answering within this many seconds of the stall


def case_job_view_stall(work):
    """What Plasma's popup is told of a copy dropped through the worker (Dolphin's "Safe Copy" place) onto a stick
    that stops answering, through KIO's own job tracker talking to a stand-in for Plasma's job view server on a
    bus of the test's own (job_view_standin.py): the worker notices the stall and the stick's return (its log),
    the view's rate drops to 0 within STALL_SAID seconds of the stall, never before it, and comes back once the
    stick writes again; the copy then completes, identical, and the view ends once with no error.
    The worker also sends its words for it ("has not answered"), but KIO does not hand a worker's infoMessage on
    to the view: KCompositeJob passes it up naming the worker's own job, which the tracker has no view for. They
    are checked the same way if they ever arrive, and reported as a known gap while they do not. So the worker
    says it in a notification of its own (the stand-in serves org.freedesktop.Notifications too): one, within
    STALL_SAID seconds of the stall and not before, naming the file and telling not to unplug, withdrawn after the
    stick writes again (once it has for a while, or when the copy ends)."""
    standin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "job_view_standin.py")
    if shutil.which("dbus-daemon") is None:
        stick.skip("no dbus-daemon (Debian: dbus)")
    # python3-dbus and python3-gi are the distribution's: its own interpreter has them where another may not.
    python = next((py for py in (sys.executable, "/usr/bin/python3") if os.path.exists(py) and subprocess.run(
        [py, "-c", "import dbus, gi"], capture_output=True).returncode == 0), None)
    if python is None:
        stick.skip("no python3-dbus or python3-gi for the stand-in job view server")
    calls, err = [], []

    def read_calls(pipe):
        for line in pipe:
            try:
                calls.append(json.loads(line))
            except ValueError:
                err.append(line)

    with stick.Stick(size_mib=256, rate_bps=STALL_RATE) as s, SessionBus() as bus:
        src = stick.make_file(os.path.join(work, "big.bin"), 100 * MiB)
        stick.uncache(src)
        dst = os.path.join(s.mnt, "big.bin")
        env = dict(os.environ, QT_PLUGIN_PATH=PLUGIN_DIR, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=RUNTIME_DIR,
                   QT_LOGGING_RULES="sanecopy.kio.debug=true", DBUS_SESSION_BUS_ADDRESS=bus.address)
        # --interactive: as Dolphin's, the copy job is then shown by the job tracker (else kioclient hides it).
        p = subprocess.Popen([python, standin, "--", KIOCLIENT, "--interactive", "copy", url("file", src),
                              url("sanecopy", dst)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace", start_new_session=True)
        readers = [threading.Thread(target=lambda: err.extend(p.stderr), daemon=True),
                   threading.Thread(target=read_calls, args=(p.stdout,), daemon=True)]
        for r in readers:
            r.start()
        rc = None
        try:
            wait_for(lambda: p.poll() is not None or any(
                c["call"] == "update" and c["args"][0].get("processedBytes", 0) >= 8 * MiB for c in calls), 60)
            check(p.poll() is None, f"the copy ended before the stall; calls {[c['call'] for c in calls]}: "
                                    f"{''.join(err)[-500:]}")
            s.set_rate(1)  # a byte a second: no request of the copy's completes
            stalled_at = time.monotonic()
            time.sleep(STALL_SECONDS)
            s.set_rate(STALL_RATE)
            restored_at = time.monotonic()
            rc = p.wait(timeout=120)
        finally:
            s.set_rate(STALL_RATE)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)  # kioclient and the stand-in, whatever failed above
            p.wait()
            for r in readers:
                r.join(timeout=10)
        said_by_worker = [e.strip() for e in err if "sanecopy.kio" in e]
        messages = [(c["t"], c["args"][0]["infoMessage"]) for c in calls
                    if c["call"] == "update" and "infoMessage" in c["args"][0]]
        speeds = [(c["t"], c["args"][0]["speed"]) for c in calls if c["call"] == "update" and "speed" in c["args"][0]]
        print(f"stall at +0 s, back at +{restored_at - stalled_at:.1f} s; the view's rates of 0 at "
              f"{[round(t - stalled_at, 1) for t, v in speeds if v == 0][:3]}...; its infoMessage: "
              f"{[(round(t - stalled_at, 1), m) for t, m in messages]}")
        print("the worker said:", said_by_worker[-4:])
        check(rc == 0, f"kioclient exited {rc}: {''.join(err)[-500:]}")
        check(any("stalled: nothing moved" in e for e in said_by_worker), "the worker never noticed the stall")
        check(any("moving again" in e for e in said_by_worker), "the worker never noticed the stick was back")
        views = [c for c in calls if c["call"] == "requestView"]
        check(len(views) == 1, f"KIO asked for {len(views)} job views, want 1")
        # The rate the popup shows: the stick's while it writes, none (0) once it stands still, not the last one.
        # Before the first rate is measured the worker sends none (0) too: that is not counted.
        measured = next((t for t, v in speeds if v > 0), None)
        check(measured is not None and measured < stalled_at, "the view was never shown a rate before the stall")
        zero = [t for t, v in speeds if v == 0 and t > stalled_at]
        check(zero and zero[0] - stalled_at <= STALL_SAID,
              f"the view's rate was not 0 within {STALL_SAID} s of the stall: {zero[:1]}")
        check(not any(v == 0 for t, v in speeds if measured < t < stalled_at),
              "the view showed a rate of 0 before the stall")
        check(any(v > 0 for t, v in speeds if t > restored_at), "the view's rate stayed 0 after the stick came back")
        said = [t for t, m in messages if "has not answered" in m]
        if not said:
            print("KNOWN GAP: the job view was not given the worker's 'has not answered' words (KIO drops them)")
        else:
            check(stalled_at < said[0] <= stalled_at + STALL_SAID,
                  f"the job view was told {said[0] - stalled_at:.1f} s after the stall, want (0, {STALL_SAID}] s")
            check(any(t > restored_at and m == "" for t, m in messages),
                  "the job view still says the stick is not answering after it wrote again")
        ends = [c["args"] for c in calls if c["call"] == "terminate"]
        check(ends == [[0, ""]], f"the job view ended with {ends}, want once with no error")
        check_stall_notification(calls, stalled_at, restored_at)
        check(filecmp.cmp(src, dst, shallow=False), "copy differs")
        check(no_part_files(s.mnt), "a part file was left behind")


def check_stall_notification(calls, stalled_at, restored_at):
    """The worker's notification of a stall (StallNotice.h), as job_view_standin.py recorded its calls."""
    shown = [(c["t"], c["args"]) for c in calls if c["call"] == "Notify"]
    closed = [(c["t"], c["args"][0]) for c in calls if c["call"] == "CloseNotification"]
    print("notifications:", [(round(t - stalled_at, 1), a[3], a[4]) for t, a in shown],
          "closed at", [round(t - stalled_at, 1) for t, _ in closed])
    check(len(shown) == 1, f"{len(shown)} notifications of the stall, want 1")
    t, (nid, app, icon, summary, body, hints, timeout) = shown[0]
    check(stalled_at < t <= stalled_at + STALL_SAID,
          f"the stall was notified {t - stalled_at:.1f} s after it began, want (0, {STALL_SAID}] s")
    check(summary == "The device is not answering", f"the notification's title: {summary!r}")
    check("big.bin" in body and "Do not unplug" in body, f"the notification's text: {body!r}")
    check(hints.get("desktop-entry") == "io.github.sanecopy.SaneCopy", f"the notification's hints: {hints}")
    check(timeout == 600000, f"the notification's expiry is {timeout} ms, want 10 minutes, longer than most stalls")
    check([n for _, n in closed] == [nid], f"closed {closed}, want notification {nid} closed once")
    check(closed[0][0] > restored_at, "the notification was withdrawn before the stick wrote again")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def case_put_stream(work):
    """A non-local source: KIO reads it with its http worker and streams it to the worker's put()."""
    with stick.Stick(size_mib=128, rate_bps=RATE) as s:
        served = os.path.join(work, "served")
        os.makedirs(served)
        src = stick.make_file(os.path.join(served, "download.bin"), 48 * MiB)
        handler = lambda *a, **kw: QuietHandler(*a, directory=served, **kw)  # noqa: E731
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            dst = os.path.join(s.mnt, "download.bin")
            with stick.DirtySampler(s.majmin) as sampler:
                rc, _, err, secs = kioclient("copy", f"http://127.0.0.1:{server.server_address[1]}/download.bin",
                                             url("sanecopy", dst))
                check(rc == 0, f"copy from http exited {rc}: {err}")
                left, synced = assert_nothing_left(s, sampler, "put")
        finally:
            server.shutdown()
        print(f"http -> put: {secs:.2f} s, peak dirty {sampler.peak / MiB:.1f} MiB, left {left / 1024:.0f} KiB")
        check("through a stream writer" in err, f"the data did not go through put(): {err}")
        check(sampler.peak <= DIRTY_BOUND, f"peak dirty {sampler.peak / MiB:.1f} MiB > 32 MiB")
        check(filecmp.cmp(src, dst, shallow=False), "the streamed copy differs")
        check(no_part_files(s.mnt), "a part file was left behind")


class RangeHandler(QuietHandler):
    """Serves one file with the Range requests a resumed get() sends; with `stall_at` set it slows to a trickle
    after that many bytes until `release` is set, as a server far away does. Every request's first byte is
    logged."""
    stall_at = None
    release = threading.Event()
    starts = []

    def do_GET(self):
        path = self.translate_path(self.path)
        size = os.path.getsize(path)
        start = 0
        if self.headers.get("Range", "").startswith("bytes="):
            start = int(self.headers["Range"][6:].split("-")[0])
        type(self).starts.append(start)
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(size - start))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            for offset in range(start, size, 1 << 20):
                if self.stall_at is not None and offset >= self.stall_at:
                    break
                self.wfile.write(f.read(min(1 << 20, size - offset)))
            else:
                return
            # A trickle from here on: the worker gets a block now and then, and sees the job killed at the next.
            while not self.release.wait(0.1):
                block = f.read(64 * 1024)
                if not block:
                    return
                self.wfile.write(block)


def start_stream(source, dst):
    env = dict(os.environ, QT_PLUGIN_PATH=PLUGIN_DIR, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=RUNTIME_DIR,
               QT_LOGGING_RULES="sanecopy.kio.debug=true")
    return subprocess.Popen([KIOCLIENT, "--noninteractive", "copy", source, url("sanecopy", dst)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")


def case_put_resume(work):
    """A stream from http cancelled halfway (the server slows to a trickle; the job is killed, as Dolphin's Cancel
    and a failed source both end a put) keeps what reached the stick under the part name, stamped; the same copy
    again asks the server only for the rest (a Range request from there) and ends with the whole file."""
    with stick.Stick(size_mib=128, rate_bps=RATE) as s:
        served = os.path.join(work, "served")
        os.makedirs(served)
        src = stick.make_file(os.path.join(served, "video.bin"), 48 * MiB)
        RangeHandler.stall_at, RangeHandler.starts = 20 * MiB, []
        RangeHandler.release.clear()
        handler = lambda *a, **kw: RangeHandler(*a, directory=served, **kw)  # noqa: E731
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        source = f"http://127.0.0.1:{server.server_address[1]}/video.bin"
        dst = os.path.join(s.mnt, "video.bin")
        part = os.path.join(s.mnt, ".video.bin.part")
        try:
            p = start_stream(source, dst)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (os.path.exists(part) and os.path.getsize(part) >= 16 * MiB):
                time.sleep(0.1)
            check(os.path.exists(part), "the stream never started")
            time.sleep(1.0)  # all the server sent is with the worker, which waits for more
            for pid in worker_pids():
                os.kill(pid, signal.SIGTERM)
            rc = p.wait(timeout=60)
            err = p.stderr.read()
            check(rc != 0, f"a cancelled stream was reported as a success (exit {rc})")
            check(wait_workers_gone(), "the worker is still running")
            check(not os.path.exists(dst), "a cancelled stream was published under the real name")
            check(os.path.exists(part), f"nothing kept for a resume: {os.listdir(s.mnt)}\n{err[-2000:]}")
            kept = os.path.getsize(part)
            check(16 * MiB <= kept <= 24 * MiB, f"the part file holds {kept} bytes, not what was sent")
            # The sender's time when KIO passes it on (its "modified" metadata), else the worker's fixed stamp.
            stamp = int(os.stat(part).st_mtime)
            check(stamp == 315532802 or abs(stamp - int(os.stat(src).st_mtime)) <= 1,
                  f"the kept part file is stamped {stamp}, not as kept")
            print(f"cancelled after 20 MiB: {kept / MiB:.1f} MiB kept, stamped {stamp}")
            RangeHandler.stall_at = None
            RangeHandler.release.set()
            rc, _, err, _ = kioclient("copy", source, url("sanecopy", dst))
            check(rc == 0, f"the copy again exited {rc}: {err[-2000:]}")
        finally:
            RangeHandler.release.set()
            server.shutdown()
        check(filecmp.cmp(src, dst, shallow=False), "the resumed copy differs")
        check(no_part_files(s.mnt), "a part file was left behind")
        check(RangeHandler.starts[-1] == kept,
              f"the second copy asked for bytes from {RangeHandler.starts[-1]}, not from the {kept} kept")
        print(f"resumed: requests started at {RangeHandler.starts}")


def case_device_lock(work):
    """Dolphin runs each job in a worker process of its own: a copy onto a stick another process is writing to
    (here: a holder of the stick's lock, as a second sanecopy would be) waits for it, writes nothing meanwhile,
    and then completes."""
    import fcntl
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "second.bin"), 8 * MiB)
        dst = os.path.join(s.mnt, "second.bin")
        lock_dir = os.path.join(RUNTIME_DIR, "sanecopy")
        os.makedirs(lock_dir, mode=0o700, exist_ok=True)
        with open(os.path.join(lock_dir, f"bdi:{s.majmin}.lock"), "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            proc = start_copy(src, dst)
            time.sleep(1.5)  # time for the worker to start and meet the lock; the check below is what matters
            check(proc.poll() is None, "the copy finished while another writer held the device")
            check(no_part_files(s.mnt) and not os.path.exists(dst), "bytes were written while the device was held")
        _, err = proc.communicate(timeout=120)
        check(proc.returncode == 0, f"kioclient exited {proc.returncode} after the lock was released: {err}")
        check(filecmp.cmp(src, dst, shallow=False), "copy differs")


def removable_sysfs(work, *sticks):
    """A sysfs tree of this test's own in which only |sticks| exist, each marked removable: the worker lists the
    removable devices by /sys (SANECOPY_SYSFS_ROOT points it here), and a loop device is not one. Sticks that
    other tests mount meanwhile are not in it, so they are never listed."""
    root = tempfile.mkdtemp(prefix="sysfs-", dir=work)
    os.makedirs(os.path.join(root, "dev", "block"))
    os.makedirs(os.path.join(root, "block"))
    for s in sticks:
        dev_dir = os.path.join(root, "devices", "virtual", "block", s.name)
        os.makedirs(dev_dir)
        with open(os.path.join(dev_dir, "dev"), "w") as f:
            f.write(s.majmin + "\n")
        with open(os.path.join(dev_dir, "removable"), "w") as f:
            f.write("1\n")
        os.symlink(f"../../devices/virtual/block/{s.name}", os.path.join(root, "dev", "block", s.majmin))
        os.symlink(f"../devices/virtual/block/{s.name}", os.path.join(root, "block", s.name))
    return {"SANECOPY_SYSFS_ROOT": root}


def device_url(name, rest=""):
    from urllib.parse import quote_from_bytes
    return "sanecopy://devices/" + quote_from_bytes(os.fsencode(name + rest), safe="/")


def case_devices(work):
    """sanecopy://devices/, the "Safe Copy" place: it lists the plugged-in sticks, and a file and a folder dropped
    onto one are copied through the engine, durable when kioclient returns."""
    with stick.Stick(size_mib=192, rate_bps=RATE) as s:
        env = removable_sysfs(work, s)
        name = os.path.basename(s.mnt)  # no label, no model: the mount point names it
        rc, out, err, _ = kioclient("ls", "sanecopy://devices/", env_extra=env)
        check(rc == 0, f"ls sanecopy://devices/ exited {rc}: {err}")
        listed = [n for n in out.splitlines() if n not in (".", "")]
        print(f"ls sanecopy://devices/: {listed}")
        check(listed == [name], f"listed {listed}, want [{name!r}]")
        rc, out, err, _ = kioclient("stat", device_url(name), env_extra=env)
        check(rc == 0 and "free)" in out, f"stat of the device exited {rc}, or says no free space: {out} {err}")
        print("stat of the device: " + " ".join(line.strip() for line in out.splitlines() if "NAME" in line))

        # A file dropped onto the device's folder, as Dolphin drops: the folder is the destination.
        src = stick.make_file(os.path.join(work, "movie.mkv"), 48 * MiB)
        stick.uncache(src)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, _, err, secs = kioclient("copy", url("file", src), device_url(name), env_extra=env)
            check(rc == 0, f"copy onto the device exited {rc}: {err.strip()}")
            left, synced = assert_nothing_left(s, sampler, "copy onto the device")
        print(f"48 MiB onto sanecopy://devices/{name}: {secs:.2f} s, peak dirty {sampler.peak / MiB:.1f} MiB, "
              f"left {left / 1024:.0f} KiB, a sync then wrote {synced / 1024:.0f} KiB")
        check("through the engine" in err, f"the copy did not go through the worker's copy(): {err}")
        check(filecmp.cmp(src, os.path.join(s.mnt, "movie.mkv"), shallow=False), "the copy differs")

        # A folder, into a sub-folder of the device.
        os.mkdir(os.path.join(s.mnt, "backup"))
        tree = os.path.join(work, "notes")
        stick.make_small_tree(tree, n=30, per_folder=10)
        rc, _, err, _ = kioclient("copy", url("file", tree), device_url(name, "/backup/"), env_extra=env)
        check(rc == 0, f"folder copy onto the device exited {rc}: {err.strip()}")
        for d, _, files in os.walk(tree):
            other = os.path.join(s.mnt, "backup", "notes", os.path.relpath(d, tree))
            _, mismatch, errors = filecmp.cmpfiles(d, other, files, shallow=False)
            check(not mismatch and not errors, f"{other}: differs: {(mismatch + errors)[:3]}")
        rc, out, err, _ = kioclient("ls", device_url(name, "/backup"), env_extra=env)
        check(rc == 0 and "notes" in out.splitlines(), f"ls inside the device: {rc} {out} {err}")

        # Delete on a device's folder in the list (Dolphin offers it) removes nothing: the entry is a link to the
        # mount point for KIO's jobs, so the job does not walk into the stick, and the entry itself is refused.
        on_stick = sorted(os.listdir(s.mnt))
        rc, _, err, _ = kioclient("rm", device_url(name), env_extra=env)
        check(rc == 1 and "can't be deleted" in err, f"rm of the device's folder: {rc} {err}")
        check(sorted(os.listdir(s.mnt)) == on_stick,
              f"rm of the device's folder removed {set(on_stick) - set(os.listdir(s.mnt))}")
        rc, _, err, _ = kioclient("move", device_url(name), url("file", os.path.join(work, "moved")), env_extra=env)
        check(rc == 1 and sorted(os.listdir(s.mnt)) == on_stick, f"move of the device's folder: {rc} {err}")

        # The list itself holds no files, and a device that is not there is not there.
        before = sorted(os.listdir(s.mnt))
        rc, _, err, _ = kioclient("copy", url("file", src), "sanecopy://devices/movie.mkv", env_extra=env)
        check(rc == 1 and "devices that are plugged in" in err, f"copy onto the list itself: {rc} {err}")
        rc, _, err, _ = kioclient("stat", device_url("no such stick"), env_extra=env)
        check(rc == 1 and "does not exist" in err, f"stat of a missing device: {rc} {err}")
        check(sorted(os.listdir(s.mnt)) == before, f"the stick changed: {os.listdir(s.mnt)}")
        check(no_part_files(s.mnt), "a part file was left behind")
        # Without the test's sysfs, the loop device is no removable device: nothing is listed.
        rc, out, err, _ = kioclient("ls", "sanecopy://devices/")
        check(rc == 0 and name not in out.splitlines(), f"a loop device was listed as removable: {rc} {out} {err}")


def case_devices_fat_names(work):
    """A name exFAT can't store, dropped onto an exFAT stick through sanecopy://devices/, is refused with KIO's
    own error and the engine's reason; nothing of it is left on the stick."""
    with stick.Stick(size_mib=64, rate_bps=RATE, fs="exfat") as s:
        env = removable_sysfs(work, s)
        name = os.path.basename(s.mnt)
        rc, out, err, _ = kioclient("ls", "sanecopy://devices/", env_extra=env)
        check(rc == 0 and name in out.splitlines(), f"ls sanecopy://devices/: {rc} {out} {err}")
        src = os.path.join(work, "what? a: question.txt")
        with open(src, "w") as f:
            f.write("a name FAT refuses\n")
        rc, _, err, _ = kioclient("copy", url("file", src), device_url(name), env_extra=env)
        print(f"kioclient's message: {err.strip()[-200:]}")
        check(rc == 1, f"copy of a name exFAT refuses exited {rc}, want 1: {err}")
        check("can't store" in err or "cannot store" in err or "not allowed" in err,
              f"the reason is not said: {err}")
        check(os.listdir(s.mnt) == [], f"the stick holds {os.listdir(s.mnt)}")
        # The same content under a name it can store goes through.
        ok = os.path.join(work, "a question.txt")
        shutil.copy(src, ok)
        rc, _, err, _ = kioclient("copy", url("file", ok), device_url(name), env_extra=env)
        check(rc == 0, f"copy of a plain name exited {rc}: {err}")
        check(filecmp.cmp(ok, os.path.join(s.mnt, "a question.txt"), shallow=False), "the copy differs")
        # In German: the worker's own words (kio_sanecopy) and the engine's reason (sanecopy) it passes on.
        german = dict(env, **german_env(work))
        rc, out, err, _ = kioclient("stat", device_url(name), env_extra=german)
        check(rc == 0 and "frei)" in out, f"stat of the device in German: {rc} {out} {err}")
        rc, _, err, _ = kioclient("copy", url("file", src), device_url(name), env_extra=german)
        print(f"kioclient's message in German: {err.strip()[-200:]}")
        check(rc == 1 and "nicht speichern kann" in err, f"the reason in German: {rc} {err}")


def german_env(work):
    """A German session (stick.german_session), with the build folder's catalogues where KI18n looks for the
    worker's (XDG_DATA_DIRS' locale/) and the engine for its own (SANECOPY_LOCALE_DIR)."""
    catalogues = os.path.abspath(os.path.join(PLUGIN_DIR, "..", "locale"))
    if not os.path.isfile(os.path.join(catalogues, "de", "LC_MESSAGES", "kio_sanecopy.mo")):
        raise Failure(f"no German catalogue of the worker in {catalogues}")
    session = stick.german_session(work)
    if session is None:
        raise Failure("no German locale: none installed and no sources to make one (Debian: apt install locales)")
    data = tempfile.mkdtemp(prefix="xdg-data-", dir=work)
    os.symlink(catalogues, os.path.join(data, "locale"))
    return dict(session, SANECOPY_LOCALE_DIR=catalogues,
                XDG_DATA_DIRS=data + ":" + os.environ.get("XDG_DATA_DIRS", "/usr/local/share:/usr/share"))


class SessionBus:
    """A D-Bus session bus of this test's own (kded and the lister meet on it, and nothing of the machine's).
    |user|: a command prefix that runs the daemon as the user whose bus it is (a session bus admits only its own
    user)."""

    def __init__(self, user=()):
        self.user = list(user)

    # No service activation: with the system's service files, the first call to org.kde.kded5 (even this test's
    # own "is it loaded yet?") could start a second kded from the bus, without this test's plugin path, and the
    # kded this test started would then see the name taken and quietly exit.
    CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

    def __enter__(self):
        fd, self.config = tempfile.mkstemp(prefix="sanecopy-bus-", suffix=".conf")
        with os.fdopen(fd, "w") as f:
            f.write(self.CONFIG)
        os.chmod(self.config, 0o644)
        self.proc = subprocess.Popen(self.user + ["dbus-daemon", f"--config-file={self.config}", "--nofork",
                                                  "--print-address=1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.proc.stdout.readline().strip()
        check(self.address.startswith("unix:"), f"dbus-daemon said {self.address!r}")
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        os.unlink(self.config)
        return False


def wait_for(cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def case_devices_follow(work):
    """A view of sanecopy://devices/ follows the sticks with no reload: kded (the real kded5/kded6, in a KDE
    session of this test's own) loads the module from the build tree, and a KCoreDirLister, the lister under
    Dolphin's views, shows a stick once it is mounted and drops it once it is unmounted."""
    kded = "kded6" if KF == "6" else "kded5"
    if shutil.which(kded) is None or shutil.which("dbus-daemon") is None:
        stick.skip(f"{kded} or dbus-daemon not found (Debian: {'kded6' if KF == '6' else 'kded5'}, dbus)")
    with stick.Stick(size_mib=64, rate_bps=RATE) as s, SessionBus() as bus:
        name = os.path.basename(s.mnt)
        env = dict(os.environ)
        env.update(removable_sysfs(work, s))
        env.update({
            # A home of this test's own: kded's service cache and settings are not the machine's.
            "HOME": os.path.join(work, "home"), "XDG_CACHE_HOME": os.path.join(work, "home", ".cache"),
            "XDG_CONFIG_HOME": os.path.join(work, "home", ".config"),
            "DBUS_SESSION_BUS_ADDRESS": bus.address,
            # What a Plasma session sets: kded autoloads session modules only inside one.
            "KDE_FULL_SESSION": "true", "KDE_SESSION_VERSION": KF,
            "QT_PLUGIN_PATH": PLUGIN_DIR, "QT_QPA_PLATFORM": "offscreen", "XDG_RUNTIME_DIR": RUNTIME_DIR,
            "QT_LOGGING_RULES": "sanecopy.devices.debug=true",
        })
        # Unmounted before anything watches: the stick is "plugged in" below.
        subprocess.run(["umount", s.mnt], check=True)
        kded_log = open(os.path.join(work, "kded.log"), "w")
        daemon = subprocess.Popen([kded], env=env, stdout=kded_log, stderr=subprocess.STDOUT)
        lister = None
        try:
            # kded loads its modules after it has checked KDE's service cache (ksycoca), which a fresh home builds
            # first: seconds on a loaded machine.
            start = time.monotonic()
            loaded = lambda: "sanecopydevices" in subprocess.run(  # noqa: E731
                ["dbus-send", "--session", "--print-reply", f"--dest=org.kde.{kded}", "/kded",
                 f"org.kde.{kded}.loadedModules"], env=env, capture_output=True, text=True).stdout
            if not wait_for(loaded, 90):
                # What kded is doing, for whoever reads the failure.
                kded_log.flush()
                with open(kded_log.name, errors="replace") as f:
                    said = f.read()[-2000:]
                state = (f"exited {daemon.returncode}" if daemon.poll() is not None
                         else open(f"/proc/{daemon.pid}/wchan").read()) + f"; it said: {said}"
                trace = ""
                if daemon.poll() is None and shutil.which("gdb"):
                    trace = subprocess.run(["gdb", "-batch", "-p", str(daemon.pid), "-ex", "thread apply all bt 12"],
                                           capture_output=True, text=True, timeout=60).stdout[-3000:]
                raise Failure(f"{kded} did not load the module within 90 s ({state}):\n{trace}")
            print(f"{kded} loaded the module after {time.monotonic() - start:.1f} s")

            lister = subprocess.Popen([DIRLISTER, "sanecopy://devices/"], env=env, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            lines = []
            threading.Thread(target=lambda: [lines.append(l.rstrip("\n")) for l in lister.stdout],
                             daemon=True).start()
            check(wait_for(lambda: lines == ["names: "], 20), f"the empty list never showed: {lines}")
            start = time.monotonic()
            subprocess.run(["mount", s.dev, s.mnt], check=True)
            check(wait_for(lambda: lines[-1:] == [f"names: {name}"], 10), f"the stick never showed up: {lines}")
            print(f"mounted: the lister showed {name} after {time.monotonic() - start:.2f} s")
            start = time.monotonic()
            subprocess.run(["umount", s.mnt], check=True)
            check(wait_for(lambda: lines[-1:] == ["names: "], 10), f"the stick never went: {lines}")
            print(f"unmounted: the lister dropped it after {time.monotonic() - start:.2f} s; lines: {lines}")
        finally:
            if lister:
                lister.stdin.close()
                try:
                    lister.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    lister.kill()
            stick.stop(daemon)
            kded_log.close()
            with open(kded_log.name, errors="replace") as f:
                said = f.read().splitlines()
            print(f"{kded} said: {[l for l in said if 'sanecopy' in l or 'kded' in l][-8:]}")
            # Stick's own teardown expects its mount: put it back if a step above left it off.
            if not os.path.ismount(s.mnt):
                subprocess.run(["mount", s.dev, s.mnt])


def worker_plugin():
    return os.path.join(PLUGIN_DIR, f"kf{KF}", "kio", "kio_sanecopy.so")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global PLUGIN_DIR, RUNTIME_DIR, KF, KIOCLIENT, DIRLISTER
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin-dir", required=True)
    ap.add_argument("--kf", choices=["5", "6"], required=True, help="the KDE Frameworks the worker is built for")
    ap.add_argument("--dirlister", required=True, help="tests/kio-worker/dir_lister.cpp's program")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    PLUGIN_DIR = os.path.realpath(a.plugin_dir)
    DIRLISTER = a.dirlister
    KF = a.kf
    KIOCLIENT = "kioclient" if KF == "6" else "kioclient5"
    if shutil.which(KIOCLIENT) is None:
        stick.skip(f"{KIOCLIENT} not found (Debian: kde-cli-tools)")
    if not os.path.exists(worker_plugin()):
        stick.skip(f"no {worker_plugin()}: the worker was not built")
    stick.require_root_or_skip()
    with stick.workdir("sanecopy-kio-test-") as work:
        RUNTIME_DIR = os.path.join(work, "runtime")
        os.mkdir(RUNTIME_DIR, 0o700)
        return stick.run_case(CASES, a.case, work, Failure)


if __name__ == "__main__":
    sys.exit(main())
