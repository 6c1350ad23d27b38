# SPDX-License-Identifier: GPL-2.0-or-later
"""A slow USB stick made of a loop device, for integration tests and the benchmark.

Needs root. A Stick is an image file on the system disk, attached with direct I/O,
formatted, mounted, and write-throttled in the cgroup-v1 blkio root group. Each
Stick owns its image, loop device, mount point and throttle line, so tests can run
in parallel. The Python tests also share a few small pieces from here: workdir(),
run_case() and stop().
"""

import atexit
import contextlib
import ctypes
import ctypes.util
import fcntl
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import namedtuple

SKIP_CODE = 77
MiB = 1 << 20
THROTTLE_FILE = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"
DEBUGFS = "/sys/kernel/debug"
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP_CODE)


@contextlib.contextmanager
def workdir(prefix):
    """A fresh folder in /var/tmp for one test run, removed with all it holds when the block ends."""
    work = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_case(cases, name, work, failure, skipped=()):
    """Runs the test case cases[name] in the folder work and prints PASS, FAIL or SKIP with its name; returns the
    exit status. A `failure` exception fails the case, a `skipped` one skips it."""
    try:
        cases[name](work)
    except skipped as e:
        print(f"SKIP: {name}: {e}")
        return SKIP_CODE
    except failure as e:
        print(f"FAIL: {name}: {e}")
        return 1
    print(f"PASS: {name}")
    return 0


def stop(proc):
    """Ends a test's helper program: SIGTERM, then SIGKILL if it has not exited within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def require_root_or_skip():
    if os.geteuid() != 0:
        skip("needs root (loop devices, mount, blkio throttle)")
    for tool in ("losetup", "mount", "umount", "mkfs.ext4"):
        if shutil.which(tool) is None:
            skip(f"{tool} not found")
    if not os.path.exists("/dev/loop-control"):
        skip("no /dev/loop-control (loop driver missing)")
    if not os.path.exists(THROTTLE_FILE):
        skip(f"{THROTTLE_FILE} missing (no cgroup-v1 blkio throttling)")
    try:
        ensure_debugfs()
    except (OSError, subprocess.SubprocessError) as e:
        skip(f"debugfs unavailable, so no per-device dirty counters: {e}")


def _read(path):
    with open(path) as f:
        return f.read()


def _run(cmd, timeout=120):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout).stdout


def _set_throttle(majmin, bps):
    # One write per line: the blkio parser takes exactly one rule per write().
    with open(THROTTLE_FILE, "w") as f:
        f.write(f"{majmin} {int(bps)}\n")


def throttle_lines():
    """Rules now in the root group's write_bps_device, as {majmin: bps}."""
    rules = {}
    for line in _read(THROTTLE_FILE).splitlines():
        parts = line.split()
        if len(parts) == 2:
            rules[parts[0]] = int(parts[1])
    return rules


def _mounted_at(path):
    path = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mnt = line.split()[4].encode().decode("unicode_escape")
            if mnt == path:
                return True
    return False


def loops_backed_by(img):
    """Loop devices whose backing file is img. The image path is unique to one
    Stick, so this finds its device even if setup was interrupted between
    `losetup` attaching and us reading its output."""
    img = os.path.realpath(img)
    found = []
    for name in os.listdir("/sys/block"):
        if not name.startswith("loop"):
            continue
        try:
            backing = _read(f"/sys/block/{name}/loop/backing_file").strip()
        except OSError:
            continue
        if backing in (img, img + " (deleted)"):
            found.append(name)
    return found


# --- Signals and exit --------------------------------------------------------
# A test killed by ctest's timeout (SIGTERM) or by ^C must not leave a throttled
# loop device behind: the next run would find a 40 MB/s disk it did not make.
# The handlers raise so that `with` blocks unwind; atexit catches Sticks used
# without `with`. Signals that arrive during a cleanup are held until it ends.
# SIGKILL can't be caught, and ctest before 3.27 kills timed-out tests with it,
# so each Stick also records its owner and the next Stick reaps orphans.

_live = []
_live_lock = threading.RLock()
_cleaning = 0
_held_signals = []
_hooks_installed = False


def _on_signal(signum, frame):
    if _cleaning:
        _held_signals.append(signum)
        return
    raise SystemExit(128 + signum)


def _raise_held_signal():
    if _held_signals and not _cleaning:
        signum = _held_signals.pop(0)
        _held_signals.clear()
        raise SystemExit(128 + signum)


def _cleanup_all():
    with _live_lock:
        sticks = list(_live)
    for s in reversed(sticks):
        s.close()


def install_signal_hooks():
    """Make SIGTERM/SIGINT raise SystemExit and close open Sticks at exit.
    Stick calls this itself; call it earlier to guard other temporary files."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_cleanup_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, default in ((signal.SIGTERM, signal.SIG_DFL),
                         (signal.SIGINT, signal.default_int_handler)):
        # A caller's own handler stays: it has its own plan for shutting down.
        if signal.getsignal(sig) in (default, signal.SIG_DFL):
            signal.signal(sig, _on_signal)


@contextlib.contextmanager
def _signals_held():
    global _cleaning
    _cleaning += 1
    try:
        yield
    finally:
        _cleaning -= 1
    _raise_held_signal()


class Stick:
    """A throttled loop-device filesystem: `with Stick(size_mib=512) as s: ...`.

    Attributes once entered: img, dev (/dev/loopN), name (loopN), majmin, mnt.
    """

    def __init__(self, size_mib=512, rate_bps=40_000_000, fs="ext4", workdir="/var/tmp", mnt=None, owner=None,
                 inodes=None):
        """|mnt|: where to mount it (made, and removed again, when missing), as a desktop's
        /run/media/USER/LABEL; a fresh folder in /tmp otherwise. |owner|: (uid, gid) given the filesystem's root
        folder, so an ordinary user can write to it (ext4 and xfs). |inodes|: at least this many (ext4), for a
        tree of more files than its size would give inodes for."""
        if fs == "ext4":
            self._mkfs = ["mkfs.ext4", "-q", "-F",
                          # No ext4lazyinit after mount: it would write inode tables
                          # through the throttle while a test measures something else.
                          "-E", "lazy_itable_init=0,lazy_journal_init=0"] + (["-N", str(inodes)] if inodes else [])
        elif fs == "xfs":
            if shutil.which("mkfs.xfs") is None:
                skip("mkfs.xfs not found (xfsprogs)")
            self._mkfs = ["mkfs.xfs", "-q", "-f"]
        elif fs == "exfat":
            # Through exfat-fuse (fuseblk): mountinfo shows the loop device's MAJ:MIN, as for a stick whose
            # exFAT a desktop mounted with FUSE, and the engine applies FAT's name rules.
            for tool in ("mkfs.exfat", "mount.exfat-fuse"):
                if shutil.which(tool) is None:
                    skip(f"{tool} not found (exfatprogs, exfat-fuse)")
            self._mkfs = ["mkfs.exfat"]
        else:
            raise ValueError(f"unsupported filesystem {fs!r}")
        self.size_mib = size_mib
        self.rate_bps = rate_bps
        self.fs = fs
        # The image lives on the system disk, not tmpfs: a RAM-backed image
        # would make the "device" as fast as memory once the throttle is lifted.
        self._workdir = workdir
        self._want_mnt = mnt
        self._made_mnt = False
        self._owner = owner
        self.img = self.dev = self.name = self.majmin = self.mnt = None
        self._imgdir = None
        self._throttled = False
        self._closed = False

    def __enter__(self):
        install_signal_hooks()
        reap_orphans(self._workdir)
        with _live_lock:
            _live.append(self)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _setup(self):
        self._imgdir = tempfile.mkdtemp(prefix=STICK_PREFIX, dir=self._workdir)
        self.img = os.path.join(self._imgdir, "stick.img")
        self._record_owner()
        with open(self.img, "wb") as f:
            f.truncate(self.size_mib * MiB)
        _run(self._mkfs + [self.img])
        # Direct I/O on the loop keeps the image file's own page cache out of
        # the picture: the only dirty pages are the ones the stick's users make.
        self.dev = _run(["losetup", "-f", "--show", "--direct-io=on", self.img]).strip()
        self.name = os.path.basename(self.dev)
        self.majmin = _read(f"/sys/block/{self.name}/dev").strip()
        if _read(f"/sys/block/{self.name}/loop/dio").strip() != "1":
            print(f"warning: {self.dev} runs without direct I/O", file=sys.stderr)
        if self._want_mnt:
            if _mounted_at(self._want_mnt):
                raise RuntimeError(f"{self._want_mnt} is a mount point already")
            self._made_mnt = not os.path.exists(self._want_mnt)
            os.makedirs(self._want_mnt, exist_ok=True)
            self.mnt = self._want_mnt
        else:
            self.mnt = tempfile.mkdtemp(prefix="sanecopy-mnt-")
            self._made_mnt = True
        self._record_owner()
        _run(["mount.exfat-fuse", self.dev, self.mnt] if self.fs == "exfat" else ["mount", self.dev, self.mnt])
        if self._owner:
            os.chown(self.mnt, *self._owner)
        self.set_rate(self.rate_bps)

    def _record_owner(self):
        path = os.path.join(self._imgdir, "owner.json")
        with open(path + ".new", "w") as f:
            json.dump({"pid": os.getpid(), "start": _start_time(os.getpid()), "mnt": self.mnt,
                       "made_mnt": self._made_mnt}, f)
        os.rename(path + ".new", path)

    def set_rate(self, bps):
        """Change the write limit; 0 lifts it."""
        _set_throttle(self.majmin, bps)
        self._throttled = bps > 0
        self.rate_bps = bps

    def close(self):
        if self._closed:
            return
        with _signals_held():
            self._teardown()
            self._closed = True
            with _live_lock:
                if self in _live:
                    _live.remove(self)

    def _teardown(self):
        errors = []
        owned = loops_backed_by(self.img) if self.img else []
        # Lift the throttle first: umount flushes what is still dirty, and at
        # the stick's rate that could take minutes.
        # Only while the loop device is still ours: once detached, another
        # Stick may own loopN and its throttle line.
        if self.majmin and self.name in owned and self.majmin in throttle_lines():
            try:
                _set_throttle(self.majmin, 0)
            except OSError as e:
                errors.append(f"lift throttle {self.majmin}: {e}")
        self._throttled = False
        if self.mnt and _mounted_at(self.mnt):
            for attempt in range(5):
                r = subprocess.run(["umount", self.mnt], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, timeout=120)
                if r.returncode == 0 or not _mounted_at(self.mnt):
                    break
                # EBUSY from a child that is still dying after a signal.
                time.sleep(0.2 * (attempt + 1))
            else:
                subprocess.run(["umount", "-l", self.mnt], timeout=60)
        for name in owned:
            # On a device that is still busy (lazy unmount), LOOP_CLR_FD sets
            # autoclear and the kernel detaches it when the last user goes.
            r = subprocess.run(["losetup", "-d", f"/dev/{name}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            if r.returncode != 0:
                errors.append(f"losetup -d /dev/{name}: {r.stderr.strip()}")
        if self.mnt and self._made_mnt and os.path.isdir(self.mnt) and not _mounted_at(self.mnt):
            try:
                os.rmdir(self.mnt)
            except OSError as e:
                errors.append(f"rmdir {self.mnt}: {e}")
        if self._imgdir:
            shutil.rmtree(self._imgdir, ignore_errors=True)
        if errors:
            print("stick cleanup: " + "; ".join(errors), file=sys.stderr)

    # Conveniences bound to this stick.
    def stats(self):
        return bdi_stats(self.majmin)

    def durable_now(self):
        return durable_now(self.majmin)

    def written_bytes(self):
        return device_written_bytes(self.majmin)


STICK_PREFIX = "sanecopy-stick-"


def _start_time(pid):
    # Field 22 of /proc/PID/stat; it tells a live owner from a reused pid.
    try:
        return int(_read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def reap_orphans(workdir="/var/tmp"):
    """Take down Sticks whose owning process died without cleaning up (SIGKILL).

    Only image directories that a Stick made (STICK_PREFIX, with owner.json)
    are considered, and only when their owner is gone."""
    fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        # Two new Sticks must not both tear down the same orphan.
        fcntl.flock(fd, fcntl.LOCK_EX)
        for name in sorted(os.listdir(workdir)):
            imgdir = os.path.join(workdir, name)
            if not name.startswith(STICK_PREFIX) or not os.path.isdir(imgdir):
                continue
            try:
                owner = json.loads(_read(os.path.join(imgdir, "owner.json")))
            except (OSError, ValueError):
                continue  # a Stick being set up right now, or not ours
            if owner.get("start") is not None and _start_time(owner["pid"]) == owner["start"]:
                continue
            orphan = Stick.__new__(Stick)
            orphan._imgdir = imgdir
            orphan.img = os.path.join(imgdir, "stick.img")
            orphan.mnt = owner.get("mnt")
            orphan._made_mnt = owner.get("made_mnt", True)
            loops = loops_backed_by(orphan.img)
            orphan.name = loops[0] if loops else None
            orphan.majmin = _read(f"/sys/block/{orphan.name}/dev").strip() if loops else None
            orphan._throttled = False
            orphan._closed = False
            print(f"reaping a stick left by dead process {owner['pid']}: {imgdir}", file=sys.stderr)
            orphan.close()
    finally:
        os.close(fd)


# --- Per-device writeback accounting ----------------------------------------

_debugfs_lock = threading.Lock()


def ensure_debugfs():
    """Mount debugfs if needed and leave it mounted: parallel tests share it."""
    if os.path.isdir(os.path.join(DEBUGFS, "bdi")):
        return
    # Two tests racing here would stack two debugfs mounts. The lock is on the
    # directory under the mount point, so it leaves no lock file behind.
    fd = os.open(DEBUGFS, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with _debugfs_lock:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not os.path.isdir(os.path.join(DEBUGFS, "bdi")):
                _run(["mount", "-t", "debugfs", "none", DEBUGFS])
    finally:
        os.close(fd)


def bdi_stats(majmin):
    """/sys/kernel/debug/bdi/MAJ:MIN/stats as a dict. Sizes ("kB") and rates
    ("kBps") come back in bytes and bytes/s; counts (b_dirty, state) as-is."""
    ensure_debugfs()
    stats = {}
    for line in _read(f"{DEBUGFS}/bdi/{majmin}/stats").splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        if len(parts) > 1 and parts[1] in ("kB", "kBps"):
            value *= 1024
        stats[key.strip()] = value
    return stats


def _wb_stat_slack():
    # The kB figures are percpu_counter_read_positive() sums: each CPU may hold
    # up to WB_STAT_BATCH = 8 * (1 + ilog2(nr_cpu_ids)) pages not yet folded in,
    # per counter, so "nothing left" can read as a few hundred kB. Two counters.
    ncpu = os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        ncpu = int(_read("/sys/devices/system/cpu/possible").strip().split("-")[-1]) + 1
    batch = 8 * (1 + int(math.log2(ncpu)))
    return 2 * ncpu * batch * PAGE_SIZE


STAT_SLACK = _wb_stat_slack()


def durable_now(majmin):
    """Bytes the device still has to take: dirty (BdiReclaimable) plus under
    writeback. Approximate by up to STAT_SLACK; see is_durable()."""
    s = bdi_stats(majmin)
    return s.get("BdiReclaimable", 0) + s.get("BdiWriteback", 0)


def is_durable(majmin):
    return durable_now(majmin) <= STAT_SLACK


def wait_durable(majmin, timeout=300.0, interval=0.05):
    """Poll until the device has nothing left to write. Returns the time
    (time.monotonic) it was first seen clean, or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        now = time.monotonic()
        if is_durable(majmin):
            return now
        if now >= deadline:
            return None
        time.sleep(interval)


def device_written_bytes(majmin):
    """Bytes the block device has completed writing (diskstats field 7).

    Unlike BdiWritten, this also counts O_DIRECT writes and filesystem
    metadata: BdiWritten only counts page-cache pages whose writeback ended."""
    fields = _read(f"/sys/dev/block/{majmin}/stat").split()
    return int(fields[6]) * 512


Sample = namedtuple("Sample", "t dirty written")


class DirtySampler:
    """Samples a device's dirty+writeback bytes every `interval` seconds.

    samples: list of Sample(t=time.monotonic(), dirty=bytes, written=bytes the
    device completed since start()). bdi_written: BdiWritten growth at the last
    sample. peak: the largest dirty seen."""

    def __init__(self, majmin, interval=0.05):
        self.majmin = majmin
        self.interval = interval
        self.samples = []
        self.peak = 0
        self.bdi_written = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = None

    def sample_now(self):
        """Take a sample at once (it counts towards peak); returns its dirty bytes."""
        s = bdi_stats(self.majmin)
        dirty = s.get("BdiReclaimable", 0) + s.get("BdiWriteback", 0)
        written = device_written_bytes(self.majmin) - self._written0
        with self._cond:
            self.samples.append(Sample(time.monotonic(), dirty, written))
            self.peak = max(self.peak, dirty)
            self.bdi_written = s.get("BdiWritten", 0) - self._bdi_written0
            self._cond.notify_all()
        return dirty

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.sample_now()

    def start(self):
        s = bdi_stats(self.majmin)
        self._bdi_written0 = s.get("BdiWritten", 0)
        self._written0 = device_written_bytes(self.majmin)
        self.sample_now()
        self._thread = threading.Thread(target=self._loop, name="dirty-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.sample_now()
        return self

    def wait_samples(self, n=2, timeout=10.0):
        """Block until n more samples exist, so a reader knows the sampler has
        looked at the device after some event."""
        with self._cond:
            target = len(self.samples) + n
            return self._cond.wait_for(lambda: len(self.samples) >= target, timeout)

    def written_since_start(self):
        return device_written_bytes(self.majmin) - self._written0

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


# --- Page cache ---------------------------------------------------------------

def _fraction(res_bytes, size):
    if size <= 0:
        return 0.0
    pages = (size + PAGE_SIZE - 1) // PAGE_SIZE
    return min(1.0, res_bytes / (pages * PAGE_SIZE))


_libc = None


def _load_libc():
    global _libc
    _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                           ctypes.c_int, ctypes.c_int, ctypes.c_long]
    _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    _libc.syncfs.argtypes = [ctypes.c_int]


def _mincore_fraction(path):
    if _libc is None:
        _load_libc()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0.0
        addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            pages = (size + PAGE_SIZE - 1) // PAGE_SIZE
            vec = ctypes.create_string_buffer(pages)
            if _libc.mincore(addr, size, vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore {path}")
            resident = sum(b & 1 for b in vec.raw)
            return resident / pages
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def residency_many(paths):
    """Fraction of each file's pages in the page cache, in the order given."""
    paths = list(paths)
    out = {}
    if shutil.which("fincore"):
        for i in range(0, len(paths), 500):
            batch = paths[i:i + 500]
            r = subprocess.run(["fincore", "-b", "-J", "-o", "RES,SIZE,FILE", "--"] + batch,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            with contextlib.suppress(ValueError, KeyError):
                for row in json.loads(r.stdout)["fincore"]:
                    out[row["file"]] = _fraction(int(row["res"]), int(row["size"]))
    # Whatever fincore did not report (not installed, or it failed on a file).
    return [out[p] if p in out else _mincore_fraction(p) for p in paths]


def residency(path):
    """Fraction (0..1) of a file's pages that sit in the page cache."""
    if shutil.which("fincore"):
        r = subprocess.run(["fincore", "-b", "--raw", "--noheadings", "-o", "RES,SIZE", "--", path],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        parts = r.stdout.split()
        if r.returncode == 0 and len(parts) == 2:
            return _fraction(int(parts[0]), int(parts[1]))
    return _mincore_fraction(path)


def tree_files(root):
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def tree_residency(root):
    """Average residency over the regular files under root."""
    fr = residency_many(tree_files(root))
    return sum(fr) / len(fr) if fr else 0.0


def syncfs(path):
    """sync(2) for just the filesystem holding path."""
    if _libc is None:
        _load_libc()
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), f"syncfs {path}")
    finally:
        os.close(fd)


def drop_caches(paths=None):
    """Sync, then drop clean page cache, dentries and inodes system-wide.

    With paths, only their filesystems are synced: a global sync(2) would also
    wait for, and flush early, other tests' throttled sticks."""
    if paths is None:
        os.sync()
    else:
        for p in paths:
            syncfs(p)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def german_session(workdir):
    """The environment of a German user's session: LANG and LC_ALL de_DE.UTF-8, LANGUAGE=de. gettext reads
    LANGUAGE only in a locale other than C (and glibc 2.41 counts C.UTF-8 as C), so the locale must exist: the
    system's, or one made now by localedef, from the sources of Debian's `locales` package, into a folder of the
    caller's (LOCPATH). None when neither can be had."""
    env = {"LANG": "de_DE.UTF-8", "LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de"}
    have = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    if any(name.lower().replace("-", "") == "de_de.utf8" for name in have):
        return env
    if not os.path.exists("/usr/share/i18n/locales/de_DE"):
        return None
    folder = tempfile.mkdtemp(prefix="locale-", dir=workdir)
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", os.path.join(folder, "de_DE.UTF-8")],
                          capture_output=True, text=True)
    # localedef warns (exit 1) about things a test does not care for; the compiled locale is what counts.
    if not os.path.isfile(os.path.join(folder, "de_DE.UTF-8", "LC_MESSAGES", "SYS_LC_MESSAGES")):
        print(f"localedef failed: {made.stderr.strip()}")
        return None
    return dict(env, LOCPATH=folder)


def uncache(path):
    """Makes |path| cold in the page cache without touching anyone else's pages (no global drop_caches:
    other tests run in parallel)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def drop_cache_count():
    """How often anyone has dropped the page cache since boot (None if the
    kernel does not say). A change means a residency reading is not ours."""
    with open("/proc/vmstat") as f:
        for line in f:
            key, _, value = line.partition(" ")
            if key == "drop_pagecache":
                return int(value)
    return None


# --- Test data ----------------------------------------------------------------

def make_file(path, size):
    """Incompressible data. One random 4 MiB block, with each block's index
    written into its head so no two blocks are equal."""
    block = bytearray(os.urandom(4 * MiB))
    with open(path, "wb", buffering=0) as f:
        left, index = size, 0
        while left > 0:
            block[:8] = index.to_bytes(8, "little")
            n = min(left, len(block))
            f.write(memoryview(block)[:n])
            left -= n
            index += 1
    return path


def make_small_tree(root, n=2000, lo=4096, hi=65536, seed=1, per_folder=100):
    """n files of lo..hi bytes in folders of per_folder. Returns (n, total bytes)."""
    rng = random.Random(seed)
    pool = os.urandom(hi + MiB)
    total = 0
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        folder = os.path.join(root, f"folder-{i // per_folder:03d}")
        if i % per_folder == 0:
            os.makedirs(folder, exist_ok=True)
        size = rng.randint(lo, hi)
        off = rng.randrange(0, len(pool) - size)
        with open(os.path.join(folder, f"file-{i:05d}.bin"), "wb") as f:
            f.write(pool[off:off + size])
        total += size
    return n, total
