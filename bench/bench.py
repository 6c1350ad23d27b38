#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Side-by-side copy benchmark on a simulated slow USB stick. See bench/README.md.

Usage: bench/bench.py --sanecp PATH [--size-mib 1500] [--rate 40000000]
                      [--small 2000] [--tiny 50000] [--many 0] [--out FILE.md] [--quick] [--tools LIST]
                      [--latency | --no-latency]
"""

import argparse
import contextlib
import datetime
import glob
import json
import math
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "stick"))
import stick  # noqa: E402

MiB = stick.MiB
ALL_TOOLS = ("sanecp", "dd", "cp", "rsync")
HONESTY_SLACK = 32 * MiB
TARGETS = {
    "big_ratio": 1.02,
    "tree_ratio": 1.15,
    "tiny_ratio": 1.0,
    "peak_dirty": 32 * MiB,
    "dest_cached": 0.01,
    "cpu": 0.05,
    "many_rss": 64 * MiB,
}

# The latency pass: the system's dirty limits are lowered so that the big file is larger than them, which is
# what a copy of many GiB meets with the default limits (a share of RAM, several GiB on a desktop).
LATENCY_DIRTY = 256 * MiB
LATENCY_BACKGROUND = 64 * MiB
PROBE_INTERVAL = 0.1     # s between the small writer's writes
PROBE_BLOCK = 4096       # bytes per write
IDLE_SECONDS = 20        # the writer alone, for the baseline row
STALL = 0.1              # a write + fsync slower than this is counted as a stall
VM = "/proc/sys/vm"
# What a latency pass found in vm.dirty_*, while it runs: a run killed with SIGKILL can't put the values back,
# so the next run does. /run is emptied at boot, when the kernel's defaults come back anyway.
VM_STATE = "/run/sanecopy-bench-vm-dirty.json"


@dataclass
class Result:
    tool: str
    label: str
    ok: bool = False
    error: str = ""
    returned: float = 0.0       # s from start until the command exits
    durable: float = 0.0        # s from start until the device has nothing left to write
    peak_dirty: int = 0
    dirty_at_exit: int = 0
    src_cached: float = 0.0
    dest_cached: float = 0.0
    cpu: float = 0.0            # user+sys seconds of the tool and the children it waited for
    # busy seconds of every CPU from the start until durable, the bench's own left out
    machine_cpu: Optional[float] = None
    peak_rss: int = 0           # bytes: the largest resident set of the tool or a child it waited for
    first_durable: float = 0.0  # s from start until sanecp first said a byte was durable
    cache_disturbed: bool = False  # someone else dropped the page cache during the run
    progress: list = field(default_factory=list)  # (durable_bytes, device_written) per line
    last_progress: dict = field(default_factory=dict)
    fsync: list = field(default_factory=list)     # latency pass: s per write + fsync of the small writer

    @property
    def cpu_share(self):
        return self.cpu / self.returned if self.returned > 0 else 0.0

    @property
    def max_excess(self):
        return max((d - w for d, w in self.progress), default=None)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def machine_busy():
    """Seconds every CPU of the machine has spent busy since boot (user, nice, system, irq, softirq; guest time is
    in user already), or None without /proc/stat. What a tool's own time leaves out shows here: the kernel's
    flusher threads writing back what cp and rsync left dirty, the loop device's workers, interrupts."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:8]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = fields
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def own_cpu():
    """This process's CPU seconds, all its threads (the dirty sampler, the progress reader)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def command(tool, kind, src, dest, sanecp):
    kind = "tree" if kind == "many" else kind
    if tool == "sanecp":
        return [sanecp, "--json", src, dest]
    if tool == "dd":
        # O_DIRECT has no meaning for a tree; its row there reads n/a.
        return None if kind == "tree" else ["dd", f"if={src}", f"of={dest}", "oflag=direct",
                                            "bs=4M", "status=none"]
    if tool == "cp":
        return ["cp", "-r", src, dest] if kind == "tree" else ["cp", src, dest]
    if tool == "rsync":
        return ["rsync", "-a", src + "/", dest] if kind == "tree" else ["rsync", "-a", src, dest]
    raise ValueError(tool)


def label(tool, kind):
    kind = "tree" if kind == "many" else kind
    return {
        "sanecp": "`sanecp`",
        "dd": "`dd oflag=direct bs=4M` + sync",
        "cp": "`cp -r` + sync" if kind == "tree" else "`cp` + sync",
        "rsync": "`rsync -a` + sync",
    }[tool]


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(4 * MiB), fb.read(4 * MiB)
            if x != y:
                return False
            if not x:
                return True


def verify(kind, src, dest):
    if kind == "many":
        return verify_many(src, dest)
    if kind == "big":
        return "" if os.path.isfile(dest) and same_file(src, dest) else "destination differs from source"
    rel_src = [os.path.relpath(p, src) for p in stick.tree_files(src)]
    rel_dest = [os.path.relpath(p, dest) for p in stick.tree_files(dest)] if os.path.isdir(dest) else []
    if rel_src != rel_dest:
        return f"destination has {len(rel_dest)} files, source {len(rel_src)}"
    for r in rel_src:
        if not same_file(os.path.join(src, r), os.path.join(dest, r)):
            return f"{r} differs"
    return ""


def verify_many(src, dest, every=1000):
    """A tree too big to compare byte for byte in a bench run: every name and size, and the bytes of one file
    in |every| (the tests compare whole trees)."""
    rel_src = [os.path.relpath(p, src) for p in stick.tree_files(src)]
    rel_dest = [os.path.relpath(p, dest) for p in stick.tree_files(dest)] if os.path.isdir(dest) else []
    if rel_src != rel_dest:
        return f"destination has {len(rel_dest)} files, source {len(rel_src)}"
    for i, r in enumerate(rel_src):
        a, b = os.path.join(src, r), os.path.join(dest, r)
        if os.path.getsize(a) != os.path.getsize(b) or (i % every == 0 and not same_file(a, b)):
            return f"{r} differs"
    return ""


def read_progress(pipe, sampler, res, t0):
    # The device's completed-write counter is read when each line arrives, so
    # a claim is checked against what the device had taken by then at the latest.
    for line in pipe:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("type") == "progress" and "durable_bytes" in msg:
            res.progress.append((int(msg["durable_bytes"]), sampler.written_since_start()))
            res.last_progress = msg
            if not res.first_durable and int(msg["durable_bytes"]) > 0:
                res.first_durable = time.monotonic() - t0


def run_tool(s, tool, kind, src, dest, sanecp, timeout, probe_path=None):
    """One tool copying src to dest (which must not exist) on stick s. With probe_path,
    a small writer appends and fsyncs there from the tool's start until the stick is
    clean (the latency pass)."""
    res = Result(tool, label(tool, kind))
    cmd = command(tool, kind, src, dest, sanecp)
    # Every tool starts alike: nothing of the last run on the stick, nothing
    # dirty anywhere, and the source cold, as after plugging the stick in.
    remove(dest)
    stick.drop_caches([src, s.mnt])
    drops = stick.drop_cache_count()
    if stick.wait_durable(s.majmin, timeout=timeout) is None:
        res.error = "stick did not settle before the run"
        return res
    log(f"  {tool}: {' '.join(cmd)}")
    with tempfile.TemporaryFile() as errfile:
        return measure_run(s, res, cmd, kind, src, dest, errfile, drops, timeout, probe_path)


def measure_run(s, res, cmd, kind, src, dest, errfile, drops, timeout, probe_path=None):
    """Runs cmd on a settled stick and fills res. drops: the page-cache drop count
    after our own drop, to notice another process dropping it during the run."""
    tool = res.tool
    sampler = stick.DirtySampler(s.majmin).start()
    proc = reader = probe = None
    try:
        if probe_path:
            probe = FsyncProbe(probe_path).start()
        # The peak RSS wait4 reports for a child counts what it had before its exec too, a copy of this Python;
        # GNU time, a small program, runs the tool and reports the tool's own (and its children's).
        rss_file = tempfile.NamedTemporaryFile(suffix=".rss")
        timed = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss_file.name, *cmd] if os.access("/usr/bin/time",
                                                                                           os.X_OK) else cmd
        busy0, own0 = machine_busy(), own_cpu()
        t0 = time.monotonic()
        proc = subprocess.Popen(timed, stdin=subprocess.DEVNULL, stderr=errfile,
                                stdout=subprocess.PIPE if tool == "sanecp" else subprocess.DEVNULL,
                                text=True, start_new_session=True)
        if tool == "sanecp":
            reader = threading.Thread(target=read_progress, args=(proc.stdout, sampler, res, t0), daemon=True)
            reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        t_ret = time.monotonic()
        res.dirty_at_exit = sampler.sample_now()
        proc.returncode = os.waitstatus_to_exitcode(status)
        res.returned = t_ret - t0
        res.cpu = usage.ru_utime + usage.ru_stime
        with rss_file:
            text = rss_file.read().decode().strip()
            res.peak_rss = int(text.splitlines()[-1]) * 1024 if text[-1:].isdigit() else 0
        if reader:
            reader.join(timeout=10)
            proc.stdout.close()
        # Also after the tools that claim to be done: if they are, this is instant.
        subprocess.run(["sync", "-f", dest if os.path.exists(dest) else s.mnt], check=True)
        t_clean = stick.wait_durable(s.majmin, timeout=timeout)
        if t_clean is None:
            res.error = "device still dirty after sync"
            return res
        res.durable = t_clean - t0
        busy1 = machine_busy()
        if busy0 is not None and busy1 is not None:
            res.machine_cpu = max(0.0, (busy1 - busy0) - (own_cpu() - own0))
        if probe:
            res.fsync = probe.stop()
    finally:
        if proc is not None and proc.returncode is None:
            # rsync runs as three processes; end the whole group so the unmount
            # does not find the stick busy.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if probe:
            probe.stop()
        sampler.stop()
    res.peak_dirty = sampler.peak
    if proc.returncode != 0:
        errfile.seek(0)
        tail = errfile.read().decode(errors="replace").strip().splitlines()[-2:]
        res.error = f"exit {proc.returncode}: {' / '.join(tail)}"
        return res
    if probe:
        # The main pass already measured this tool's cache use and compared its copy.
        res.error = probe.error
        res.ok = not res.error
        return res
    # Residency first: verifying reads both sides back into the cache.
    if kind == "big":
        res.src_cached, res.dest_cached = stick.residency_many([src, dest])
    else:
        res.src_cached = stick.tree_residency(src)
        res.dest_cached = stick.tree_residency(dest)
    res.cache_disturbed = stick.drop_cache_count() != drops
    res.error = verify(kind, src, dest)
    res.ok = not res.error
    return res


# Reads every file under argv[1] with open + read + close, nothing else, and prints the system CPU seconds of the
# loop (the interpreter's own start left out).
READ_ALONE = r"""
import os, resource, sys
buf = bytearray(1 << 20)
t0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW)
        while os.readv(fd, [buf]):
            pass
        os.close(fd)
print(resource.getrusage(resource.RUSAGE_SELF).ru_stime - t0)
"""


# Writes files of the sizes listed on stdin ("relative-path size" lines) under argv[1] from memory, with open +
# write + close and the folders they need, nothing read, nothing synced, and prints the system CPU seconds of the
# loop (the listing and the interpreter's start left out).
WRITE_ALONE = r"""
import os, resource, sys
buf = bytes(1 << 20)
files = [line.rsplit(" ", 1) for line in sys.stdin.read().splitlines()]
t0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
for rel, size in files:
    path = os.path.join(sys.argv[1], rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    left = int(size)
    while left > 0:
        left -= os.write(fd, buf[:min(left, len(buf))])
    os.close(fd)
print(resource.getrusage(resource.RUSAGE_SELF).ru_stime - t0)
"""


def write_alone_cpu(src, dest):
    """System CPU seconds that creating the files of the tree src under dest (on the stick) and writing their bytes
    from memory costs by itself, nothing read and nothing synced, or None when it could not be measured: the
    other half of what any copier pays the kernel (folders and files made, bytes into the page cache). dest is
    removed again."""
    listing = []
    for folder, _, names in os.walk(src):
        for name in names:
            path = os.path.join(folder, name)
            listing.append(f"{os.path.relpath(path, src)} {os.path.getsize(path)}")
    out = subprocess.run([sys.executable, "-c", WRITE_ALONE, dest], input="\n".join(listing), capture_output=True,
                         text=True)
    remove(dest)
    try:
        return float(out.stdout.strip())
    except ValueError:
        log(f"writing the tree alone failed: {out.stderr.strip()[-200:]}")
        return None


def read_alone_cpu(src):
    """System CPU seconds that reading the tree src from a cold cache costs by itself, or None when it could not
    be measured: page allocation, the source's filesystem and sending its reads to the disk, which any copier
    pays whatever it does with the bytes. The small files' CPU target is read beside it: on a machine where this
    alone is above the target, no copy can meet it."""
    stick.drop_caches([src])
    out = subprocess.run([sys.executable, "-c", READ_ALONE, src], capture_output=True, text=True)
    try:
        return float(out.stdout.strip())
    except ValueError:
        log(f"reading the tree alone failed: {out.stderr.strip()[-200:]}")
        return None


def count_syscalls(s, tool, src, dest, sanecp, timeout, workdir):
    """System calls per run of tool copying the tree src, counted by strace -f -c in a run of its own (strace
    slows every call down, so the timed runs are never traced). None without strace."""
    cmd = command(tool, "tree", src, dest, sanecp)
    if cmd is None or shutil.which("strace") is None:
        return None
    remove(dest)
    stick.drop_caches([src, s.mnt])
    with tempfile.NamedTemporaryFile(dir=workdir, suffix=".strace") as out:
        subprocess.run(["strace", "-f", "-c", "-o", out.name, *cmd], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, check=False)
        total = None
        for line in open(out.name):
            parts = line.split()
            # "100.00  1.234567  10  123456  50005 total": the calls are the fourth column.
            if parts and parts[-1] == "total" and len(parts) >= 5:
                total = int(parts[3])
    remove(dest)
    subprocess.run(["sync", "-f", s.mnt], check=True)
    return total


def in_turn(tools, case, run):
    """run(tool) for each tool, in the given order for an even |case| and reversed for an odd one, so no tool is
    always the first onto a fresh stick or the last after the others warmed the machine. The results keep the
    given order, as the table does."""
    results = dict.fromkeys(tools)
    for t in (tools if case % 2 == 0 else list(reversed(tools))):
        results[t] = run(t)
    return results


def tiny_passes(s, tools, src, dest, sanecp, timeout, rate, workdir):
    """The tiny-file tree, unthrottled and at rate, then its system calls. Leaves the stick at rate."""
    results = {}
    for case, (name, r) in enumerate((("unthrottled", 0), (f"{rate / 1e6:.0f} MB/s", rate))):
        s.set_rate(r)
        log(f"tiny files, stick {name}")
        results[name] = in_turn(tools, case, lambda t: run_tool(s, t, "tree", src, dest, sanecp, timeout)
                                if command(t, "tree", src, dest, sanecp) else None)
    s.set_rate(0)
    log("tiny files: system calls per tool (strace -f -c, unthrottled, untimed)")
    calls = {t: count_syscalls(s, t, src, dest, sanecp, timeout, workdir) for t in tools}
    s.set_rate(rate)
    return results, calls


# --- Other writers: fsync latency on the system disk ---------------------------

class FsyncProbe:
    """Another program writing to the system disk: every PROBE_INTERVAL it appends
    PROBE_BLOCK bytes to its own file and fsyncs it, as an editor saving or a
    database committing does. stop() returns the seconds each write + fsync took."""

    def __init__(self, path):
        self.path = path
        self.latencies = []
        self.error = ""
        self._block = os.urandom(PROBE_BLOCK)
        self._stop = threading.Event()
        self._thread = None
        self._fd = None

    def start(self):
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._thread = threading.Thread(target=self._loop, name="fsync-probe", daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        due = time.monotonic()
        try:
            while not self._stop.is_set():
                t = time.monotonic()
                os.write(self._fd, self._block)
                os.fsync(self._fd)
                done = time.monotonic()
                self.latencies.append(done - t)
                # A stalled write counts once, as one long sample; no burst of catch-up writes follows it.
                due = max(due + PROBE_INTERVAL, done)
                self._stop.wait(due - done)
        except OSError as e:
            self.error = f"the small writer failed: {e}"

    def stop(self):
        self._stop.set()
        if self._thread:
            # A write stuck in fsync is waited for: how long it took is the measurement.
            self._thread.join()
            self._thread = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        return self.latencies


def percentile(values, q):
    """Nearest rank: the smallest sample that at least q of all samples are at or below."""
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def _read_vm(name):
    with open(f"{VM}/{name}") as f:
        return int(f.read())


def _write_vm(name, value):
    with open(f"{VM}/{name}", "w") as f:
        f.write(f"{value}\n")


def _read_vmstat(key):
    with open("/proc/vmstat") as f:
        for line in f:
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    return None


def _process_alive(pid, start):
    # Field 22 of /proc/PID/stat tells the owner from a process that got its pid later.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19]) == start
    except (OSError, IndexError, ValueError):
        return False


def _own_start():
    with open(f"/proc/{os.getpid()}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class DirtyLimits:
    """Sets vm.dirty_bytes and vm.dirty_background_bytes while in the `with` block,
    then puts back what was there, also on an error, ^C or SIGTERM; after a SIGKILL,
    the next run puts it back. saved: the four knobs as found. thresholds: the
    kernel's own limits in bytes as found (nr_dirty_threshold, nr_dirty_background_threshold)."""

    KNOBS = ("dirty_ratio", "dirty_bytes", "dirty_background_ratio", "dirty_background_bytes")

    def __init__(self, dirty, background):
        self.dirty = dirty
        self.background = background
        self.saved = None
        self.thresholds = None

    @staticmethod
    def restore(saved):
        # Writing a *_bytes knob zeroes its *_ratio twin and the other way round: whichever of each pair was
        # set is written back, and that puts its twin back to 0 as well.
        for ratio, nbytes in (("dirty_ratio", "dirty_bytes"), ("dirty_background_ratio", "dirty_background_bytes")):
            name = nbytes if saved[nbytes] else ratio
            _write_vm(name, saved[name])

    @classmethod
    def recover(cls):
        """Puts back what a killed run left changed. Raises RuntimeError while another
        run is using the knobs: what we would read as "before" is its setting."""
        try:
            with open(VM_STATE) as f:
                state = json.load(f)
        except FileNotFoundError:
            return
        except ValueError:
            os.unlink(VM_STATE)  # cut short while being written: the knobs were not changed yet
            return
        if _process_alive(state["pid"], state["start"]):
            raise RuntimeError(f"another benchmark (pid {state['pid']}) has changed vm.dirty_* right now")
        log(f"putting back vm.dirty_* that a killed benchmark (pid {state['pid']}) left changed: {state['saved']}")
        cls.restore(state["saved"])
        os.unlink(VM_STATE)

    def __enter__(self):
        self.recover()
        self.saved = {k: _read_vm(k) for k in self.KNOBS}
        page = os.sysconf("SC_PAGE_SIZE")
        self.thresholds = tuple(page * (_read_vmstat(k) or 0)
                                for k in ("nr_dirty_threshold", "nr_dirty_background_threshold"))
        with open(VM_STATE + ".new", "w") as f:
            json.dump({"pid": os.getpid(), "start": _own_start(), "saved": self.saved}, f)
        os.rename(VM_STATE + ".new", VM_STATE)
        try:
            _write_vm("dirty_bytes", self.dirty)
            _write_vm("dirty_background_bytes", self.background)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        # A ^C or SIGTERM in the middle must not leave one knob of the two put back.
        with stick._signals_held():
            self.restore(self.saved)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(VM_STATE)
        return False


def latency_pass(s, tools, src, dest, probe_path, sanecp, timeout):
    """The small writer alone, then during each tool's big-file copy, with the
    system's dirty limits lowered. Returns (limits, {row: Result})."""
    rows = {}
    with DirtyLimits(LATENCY_DIRTY, LATENCY_BACKGROUND) as limits:
        log(f"latency pass: vm.dirty_bytes {mib(LATENCY_DIRTY)}, vm.dirty_background_bytes "
            f"{mib(LATENCY_BACKGROUND)} (was {limits.saved})")
        remove(dest)
        stick.drop_caches([src, s.mnt])
        idle = Result("idle", "idle: the small writer alone, no copy")
        if stick.wait_durable(s.majmin, timeout=timeout) is None:
            idle.error = "stick did not settle before the run"
        else:
            log(f"  idle: the small writer alone for {IDLE_SECONDS} s")
            probe = FsyncProbe(probe_path).start()
            try:
                time.sleep(IDLE_SECONDS)
            finally:
                idle.fsync = probe.stop()
            idle.error = probe.error
            idle.ok = not idle.error
        rows["idle"] = idle
        for t in tools:
            rows[t] = run_tool(s, t, "big", src, dest, sanecp, timeout, probe_path=probe_path)
        remove(dest)
    log(f"latency pass done, vm.dirty_* put back: {dict((k, _read_vm(k)) for k in DirtyLimits.KNOBS)}")
    return limits, rows


# --- Report -------------------------------------------------------------------

def mib(n):
    return f"{n / MiB:.1f} MiB"


def pct(x):
    return f"{x * 100:.1f} %"


def cached(r, x):
    return "?" if r.cache_disturbed else pct(x)


def honesty(r):
    if r.tool != "sanecp":
        return "n/a"
    if not r.progress:
        return "no progress lines"
    ex = r.max_excess
    verdict = "ok" if ex <= HONESTY_SLACK else "**AHEAD**"
    return f"{verdict}, max {ex / MiB:+.1f} MiB ({len(r.progress)} lines)"


def machine(r):
    return "?" if r.machine_cpu is None else f"{r.machine_cpu:.2f} s"


def table(kind, results, baseline, payload, rate, extra=None):
    """extra: (column title, {tool: text}), a last column."""
    head = ("| tool | returns after | durable after | vs baseline | of device rate | peak dirty "
            "| dirty at return | source cached | dest cached | CPU: of a core, seconds | machine CPU until durable "
            "| peak RSS | progress vs device |")
    if extra:
        head += f" {extra[0]} |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    base = results.get(baseline)
    for tool, r in results.items():
        if r is None:
            lines.append(f"| {label(tool, kind)} | n/a |" + " |" * 11)
            continue
        if not r.ok:
            lines.append(f"| {r.label} | failed: {r.error} |" + " |" * 11)
            continue
        ratio = f"{r.durable / base.durable:.3f}×" if base and base.ok and base.durable > 0 else "n/a"
        share = pct(payload / r.durable / rate) if r.durable > 0 and rate > 0 else "n/a"
        lines.append(
            f"| {r.label} | {r.returned:.2f} s | {r.durable:.2f} s | {ratio} | {share} "
            f"| {mib(r.peak_dirty)} | {mib(r.dirty_at_exit)} | {cached(r, r.src_cached)} | {cached(r, r.dest_cached)} "
            f"| {pct(r.cpu_share)}, {r.cpu:.2f} s | {machine(r)} | {mib(r.peak_rss) if r.peak_rss else '?'} "
            f"| {honesty(r)} |" + (f" {extra[1].get(tool, '–')} |" if extra else ""))
    if any(r is not None and r.cache_disturbed for r in results.values()):
        lines += ["", "?: another process dropped the page cache during that run, so its residency is unknown."]
    return lines


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


def latency_table(rows):
    head = ("| run | returns after | durable after | peak dirty | writes | fsync p50 | fsync p99 | fsync max "
            f"| over {STALL * 1000:.0f} ms |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows.values():
        if not r.ok or not r.fsync:
            lines.append(f"| {r.label} | failed: {r.error or 'no writes'} |" + " |" * 7)
            continue
        times = ("–", "–") if r.tool == "idle" else (f"{r.returned:.2f} s", f"{r.durable:.2f} s")
        peak = "–" if r.tool == "idle" else mib(r.peak_dirty)
        stalls = sum(1 for x in r.fsync if x > STALL)
        lines.append(f"| {r.label} | {times[0]} | {times[1]} | {peak} | {len(r.fsync)} "
                     f"| {ms(percentile(r.fsync, 0.5))} | {ms(percentile(r.fsync, 0.99))} | {ms(max(r.fsync))} "
                     f"| {stalls} |")
    return lines


def latency_section(args, meta):
    lat = meta.get("latency")
    head = ["", "### Other writers during the big-file copy: fsync latency on the system disk", ""]
    if lat is None:
        return []
    if "skipped" in lat:
        return head + [f"Not measured: {lat['skipped']}."]
    saved, (dirty_t, bg_t) = lat["saved"], lat["thresholds"]

    def knob(ratio, nbytes):
        return f"vm.{nbytes} {mib(saved[nbytes])}" if saved[nbytes] else f"vm.{ratio} {saved[ratio]} %"

    return head + [
        f"A small writer in {args.workdir} (the system disk, not the stick) appends {PROBE_BLOCK // 1024} KiB to its "
        f"own file and fsyncs it every {PROBE_INTERVAL * 1000:.0f} ms; shown is the time each write + fsync took, "
        f"first with no copy running ({IDLE_SECONDS} s), then from each tool's start until the stick is clean.",
        "",
        f"For this pass only, vm.dirty_bytes was set to {mib(LATENCY_DIRTY)} and vm.dirty_background_bytes to "
        f"{mib(LATENCY_BACKGROUND)}, so that the {args.size_mib} MiB copy is bigger than the system's dirty limit. "
        f"With this machine's own settings ({knob('dirty_ratio', 'dirty_bytes')}, "
        f"{knob('dirty_background_ratio', 'dirty_background_bytes')}) the kernel's limit was "
        f"{dirty_t / (1 << 30):.1f} GiB (background {bg_t / (1 << 30):.1f} GiB), which only a copy of several GiB "
        "reaches; that is where other writers stall. The settings were put back afterwards. The tools' times and "
        "peak dirty here are under the lowered limit; the copies of this pass are not compared again (the pass "
        "above did that).",
        "",
        *latency_table(lat["rows"]),
    ]


def verdicts(kind, results, baseline, payload, limit=None, read_alone=None, write_alone=None):
    r, base = results.get("sanecp"), results.get(baseline)
    if r is None or not r.ok:
        return []
    limit = limit or TARGETS["big_ratio" if kind == "big" else "tree_ratio"]
    checks = []
    if base is not None and base.ok:
        ratio = r.durable / base.durable
        checks.append((ratio <= limit, f"durable after ≤ {limit}× {base.label}: {ratio:.3f}×"))
    checks.append((r.peak_dirty <= TARGETS["peak_dirty"], f"peak dirty ≤ 32 MiB: {mib(r.peak_dirty)}"))
    if kind == "big" and r.cache_disturbed:
        checks.append((None, "destination cached ≤ 1 %: not measured, another process dropped the page cache"))
    elif kind == "big":
        checks.append((r.dest_cached <= TARGETS["dest_cached"], f"destination cached ≤ 1 %: {pct(r.dest_cached)}"))
    if kind != "tiny":
        # Tiny files cost CPU per file whatever the tool; there the time is the measure.
        floor = "" if read_alone is None else (
            f" (reading the same files alone from a cold cache, nothing written: "
            f"{pct(read_alone / r.returned)} of a core over the same time, {read_alone:.2f} s against {r.cpu:.2f} s")
        if floor and write_alone is not None:
            # The kernel's part of any copy, read and written, nothing synced, evicted or renamed: where it alone is
            # above the target on this machine, no copier meets it.
            both = read_alone + write_alone
            floor += (f"; writing them alone onto the stick from memory, nothing read or synced: {write_alone:.2f} s; "
                      f"the two together {pct(both / r.returned)} of a core")
        floor += ")" if floor else ""
        checks.append((r.cpu_share < TARGETS["cpu"], f"CPU < 5 % of a core: {pct(r.cpu_share)}{floor}"))
    checks.append((r.dirty_at_exit <= stick.STAT_SLACK,
                   f"nothing dirty on the device when it exits: {mib(r.dirty_at_exit)}"))
    checks.append((bool(r.progress) and r.max_excess <= HONESTY_SLACK,
                   f"progress never ahead of the device by > 32 MiB: {honesty(r)}"))
    final = int(r.last_progress.get("durable_bytes", 0))
    checks.append((final == payload, f"last progress line says all of it is durable: {final} of {payload} bytes"))
    lines = [f"- {'?' if ok is None else '✓' if ok else '✗'} {text}" for ok, text in checks]
    whole = [f"{o.label} {o.machine_cpu:.2f} s" for o in results.values()
             if o is not None and o.ok and o.machine_cpu is not None]
    if kind != "tiny" and r.machine_cpu is not None:
        # Not a target: what each tool cost the machine, for comparing them.
        lines.append("- the whole machine's CPU from the start until durable, the kernel's writeback of what a tool "
                     "left dirty included: " + ", ".join(whole))
    return lines


def damon_pageout_age():
    """Seconds of idleness after which a running DAMON scheme pages memory out
    (page cache included), or None. Reads sysfs only."""
    def read(path):
        with open(path) as f:
            return f.read().strip()

    ages = []
    for k in glob.glob("/sys/kernel/mm/damon/admin/kdamonds/[0-9]*"):
        try:
            if read(f"{k}/state") != "on":
                continue
            for c in glob.glob(f"{k}/contexts/[0-9]*"):
                aggr = int(read(f"{c}/monitoring_attrs/intervals/aggr_us")) / 1e6
                for sch in glob.glob(f"{c}/schemes/[0-9]*"):
                    if read(f"{sch}/action") == "pageout":
                        ages.append(int(read(f"{sch}/access_pattern/age/min")) * aggr)
        except (OSError, ValueError):
            continue
    return min(ages) if ages else None


def fs_type(path):
    return subprocess.run(["stat", "-f", "-c", "%T", path], stdout=subprocess.PIPE,
                          text=True, check=True).stdout.strip()


def tiny_section(args, meta, tiny):
    if not tiny:
        return []
    results, calls = tiny
    n = meta["tiny_n"]
    per_file = ("syscalls per file", {t: f"{c / n:.1f}" for t, c in calls.items() if c})
    out = ["", f"### {n} tiny files of {meta['tiny_lo']}–{meta['tiny_hi']} bytes, {mib(meta['tiny_bytes'])} "
               "(a source tree; baseline: cp -r + sync)", ""]
    for name, res in results.items():
        rate = 0 if name == "unthrottled" else args.rate
        out += [f"Stick {name}:", "", *table("tiny", res, "cp", meta["tiny_bytes"], rate, per_file), ""]
        v = verdicts("tiny", res, "cp", meta["tiny_bytes"], TARGETS["tiny_ratio"])
        if v:
            out += [f"sanecp against its targets, stick {name}:", *v, ""]
    out += ["Syscalls per file: every system call of the tool's process tree during a run of its own under "
            "`strace -f -c`, divided by the number of files (the trailing `sync` not included)."]
    return out


def many_pass(args, tools, workdir, timeout):
    """args.many tiny files onto a stick of their own (enough inodes), unthrottled: what a tree of that many files
    costs in memory and time, and how soon sanecp's first byte is durable. The sources are made and removed here."""
    srcdir = tempfile.mkdtemp(prefix="sanecopy-bench-many-", dir=workdir)
    try:
        src = os.path.join(srcdir, "many")
        log(f"making {args.many} tiny files in {src}")
        n, nbytes = stick.make_small_tree(src, n=args.many, lo=512, hi=8192, per_folder=1000)
        size = nbytes // MiB + args.many * 12 * 1024 // MiB + 1024
        with stick.Stick(size_mib=size, rate_bps=0, workdir=workdir, inodes=args.many + 100_000) as s:
            log(f"{n} tiny files, {nbytes / MiB:.0f} MiB, stick unthrottled")
            results = {t: run_tool(s, t, "many", src, os.path.join(s.mnt, "many"), args.sanecp, timeout)
                       if command(t, "many", src, "", args.sanecp) else None for t in tools}
            remove(os.path.join(s.mnt, "many"))
        return {"n": n, "bytes": nbytes, "results": results}
    finally:
        shutil.rmtree(srcdir, ignore_errors=True)


def many_section(many):
    if not many:
        return []
    n, results = many["n"], many["results"]
    first = ("first byte durable", {t: f"{r.first_durable:.1f} s" for t, r in results.items()
                                    if r is not None and r.ok and r.first_durable})
    out = ["", f"### {n} tiny files of 512–8192 bytes, {mib(many['bytes'])}, in folders of 1000 "
               "(stick unthrottled; baseline: cp -r + sync)", "",
           *table("many", results, "cp", many["bytes"], 0, first), ""]
    r = results.get("sanecp")
    if r is not None and r.ok:
        ok = r.peak_rss <= TARGETS["many_rss"]
        out += [f"- {'✓' if ok else '✗'} sanecp's peak RSS ≤ 64 MiB: {mib(r.peak_rss)}",
                f"- {'✓' if r.first_durable < 5 else '✗'} first byte durable in < 5 s: {r.first_durable:.1f} s", ""]
    out += ["Checked: every name and size, and the bytes of one file in 1000."]
    return out


def report(args, meta, big, tree, tiny=None, many=None):
    out = [
        f"## SaneCopy benchmark, {meta['date']}",
        "",
        f"- kernel {platform.release()}, {os.cpu_count()} CPUs, {meta['ram_gib']:.0f} GiB RAM",
        f"- stick: {meta['stick']}, writes throttled to {args.rate / 1e6:.1f} MB/s (blkio)",
        f"- sources on {meta['src_fs']} ({args.workdir}); page cache dropped and stick idle before each tool",
        "- durable after = the tool, then `sync -f DEST`, until the stick's dirty + writeback reads 0",
        "- the tools run in the table's order for the big file and the unthrottled tiny files, in reverse for the "
        "small files and the throttled tiny files",
        "",
        f"### One big file: {args.size_mib} MiB (baseline: dd oflag=direct)",
        "",
        *table("big", big, "dd", args.size_mib * MiB, args.rate),
        *latency_section(args, meta),
        "",
        f"### {meta['tree_n']} small files of {meta['tree_lo'] // 1024}–{meta['tree_hi'] // 1024} KiB, "
        f"{mib(meta['tree_bytes'])} (baseline: cp -r + sync)",
        "",
        *table("tree", tree, "cp", meta["tree_bytes"], args.rate),
    ]
    if meta["tree_bytes"] / args.rate < 1.0:
        # blk-throttle lets a burst of a few MB through after an idle spell, so
        # a tree that the stick takes in well under a second shows rates above
        # the limit and ratios that are mostly noise.
        out += ["", f"Note: the tree is only {meta['tree_bytes'] / args.rate:.1f} s of stick time; "
                    "the throttle's initial burst of a few MB dominates it, so its ratios are not meaningful."]
    out += tiny_section(args, meta, tiny)
    out += many_section(many)
    big_v = verdicts("big", big, "dd", args.size_mib * MiB)
    tree_v = verdicts("tree", tree, "cp", meta["tree_bytes"], read_alone=meta.get("tree_read_alone"),
                      write_alone=meta.get("tree_write_alone"))
    if big_v or tree_v:
        out += ["", "### sanecp against its targets", "", "Big file:", *big_v, "", "Small files:", *tree_v]
    if meta.get("damon_age") is not None:
        out += ["", f"Note: DAMON pages out memory left idle for {meta['damon_age']:.0f} s on this machine, "
                    "page cache included. In runs longer than that, the cached columns read low."]
    out += ["", f"Kernel's own estimate of the stick's write rate at the end (BdiWriteBandwidth): "
                f"{meta['bdi_bw'] / 1e6:.1f} MB/s", ""]
    return "\n".join(out)


# The rows bench --vm asks the VM for (tests/vm/guest.py, bench_row): each filesystem with the kernel's default
# options and as UDisks2 mounts it for a desktop's user (vfat: "flush"); ext4 once, made for that user (UDisks2
# mounts it with the options it had).
VM_ROWS = [f"bench-{kind}-{fs}{suffix}" for kind in ("big", "small") for fs in ("vfat", "exfat", "ntfs3", "ext4")
           for suffix in ("", "-desktop") if not (fs == "ext4" and suffix)]
# And the network shares of the same guest (tests/vm/shares.py): kernel SMB, NFS 4 and sshfs over a shaped link.
VM_ROWS += [f"bench-{kind}-{share}" for kind in ("big", "small") for share in ("cifs", "nfs4", "sshfs")]


def vm_bench(args):
    """Runs the VM's bench rows and prints their table. The VM builds the checkout itself, in the Debian 13 root."""
    stick.require_root_or_skip()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log("the VM's bench rows: " + ",".join(VM_ROWS))
    p = subprocess.run([os.path.join(here, "packaging", "dev.sh"), "test-usb", ",".join(VM_ROWS)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = p.stdout.splitlines()
    table = [l[2:] for l in lines if l.startswith("# |") or l.startswith("# The stick:")]
    failed = [l for l in lines if l.startswith("not ok")]
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    text = "\n".join([f"# SaneCopy on an emulated USB stick in the VM, {date}", "",
                      "Each filesystem as the kernel mounts it by default and as UDisks2 mounts it for a desktop's "
                      "user (\"desktop\"), and the network shares (cifs, nfs4, sshfs) over a 100 Mbit/s link with "
                      "10 ms each way; one run, so compare within it.", ""] + table + [""] +
                     ([f"Failed: {l}" for l in failed] or []))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if p.returncode != 0 or failed or not table:
        print("\n".join(lines[-40:]), file=sys.stderr)
        return 1
    return 0


def sticks_bench(args):
    import sticks  # noqa: E402 (bench/sticks.py, beside this file)
    if not args.sanecp:
        sys.exit("--sticks needs --sanecp PATH")
    stick.require_root_or_skip()
    stick.install_signal_hooks()
    text = sticks.run(os.path.abspath(args.sanecp), args.workdir, args.size_mib or 256, args.small or 300)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0 if "✗" not in text else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sanecp", help="path to the sanecp binary")
    ap.add_argument("--size-mib", type=int, default=None, help="big file size (default 1500)")
    ap.add_argument("--rate", type=int, default=40_000_000, help="stick write rate in bytes/s")
    ap.add_argument("--small", type=int, default=None, help="number of small files (default 2000)")
    ap.add_argument("--tiny", type=int, default=None,
                    help="number of tiny files (0.5-8 KiB, a source tree), copied unthrottled and at --rate; "
                         "0 leaves the pass out (default 50000, 5000 with --quick)")
    ap.add_argument("--many", type=int, default=0,
                    help="also copy this many tiny files (say 1000000) onto an unthrottled stick of their own, for "
                         "peak RSS and the time to the first durable byte (default 0: left out; 1000000 takes about "
                         "15 minutes and 12 GiB in --workdir)")
    ap.add_argument("--out", help="also write the Markdown report here")
    ap.add_argument("--quick", action="store_true", help="256 MiB and 300 files, for a smoke run")
    ap.add_argument("--tools", default=",".join(ALL_TOOLS),
                    help=f"comma-separated subset of {','.join(ALL_TOOLS)} (default: all)")
    ap.add_argument("--workdir", default="/var/tmp", help="where the sources and the stick image go")
    ap.add_argument("--latency", action=argparse.BooleanOptionalAction, default=None,
                    help="copy the big file once more per tool, with vm.dirty_bytes lowered, and measure the fsync "
                         "latency of a small writer on the system disk meanwhile (default: on, off with --quick)")
    ap.add_argument("--sticks", action="store_true",
                    help="instead of the passes above: one source onto three loop sticks at 10, 20 and 40 MB/s at "
                         "once (sanecp --to), against each alone and three separate sanecp (bench/sticks.py); "
                         "--size-mib (default 256) and --small (default 300) size the source")
    ap.add_argument("--vm", action="store_true",
                    help="instead of the loop-device stick: the kernel's vfat, exFAT and NTFS on an emulated USB stick "
                         "in the VM of packaging/dev.sh test-usb, each as the kernel mounts it by default and as "
                         "UDisks2 mounts it for a desktop's user, and ext4 made for that user (about 25 minutes; the "
                         "other options do not apply)")
    args = ap.parse_args()
    if args.vm:
        return vm_bench(args)
    if args.sticks:
        return sticks_bench(args)
    if args.latency is None:
        args.latency = not args.quick
    args.size_mib = args.size_mib or (256 if args.quick else 1500)
    args.small = args.small or (300 if args.quick else 2000)
    if args.tiny is None:
        args.tiny = 5000 if args.quick else 50000
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(tools) - set(ALL_TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    if "sanecp" in tools and not args.sanecp:
        ap.error("--sanecp PATH is needed, or leave sanecp out of --tools")
    if args.sanecp:
        args.sanecp = os.path.abspath(args.sanecp)
    for t in tools:
        exe = args.sanecp if t == "sanecp" else t
        if shutil.which(exe) is None:
            ap.error(f"{exe} not found")

    stick.require_root_or_skip()
    src_fs = fs_type(args.workdir)
    if src_fs in ("tmpfs", "ramfs"):
        # A RAM source is never "cold", which hides the read side of every tool.
        ap.error(f"{args.workdir} is {src_fs}; pick a directory on a disk with --workdir")
    stick.install_signal_hooks()

    srcdir = tempfile.mkdtemp(prefix="sanecopy-bench-", dir=args.workdir)
    try:
        log(f"making sources in {srcdir}")
        big_src = stick.make_file(os.path.join(srcdir, "big.bin"), args.size_mib * MiB)
        lo, hi = 4096, 65536
        tree_src = os.path.join(srcdir, "tree")
        n, tree_bytes = stick.make_small_tree(tree_src, n=args.small, lo=lo, hi=hi)
        tiny_src = os.path.join(srcdir, "tiny")
        tiny_n, tiny_bytes = stick.make_small_tree(tiny_src, n=args.tiny, lo=512, hi=8192) if args.tiny else (0, 0)
        # Every tiny file takes a 4 KiB block or two on the stick, and one is copied at a time.
        size = args.size_mib + 2 * tree_bytes // MiB + 512 + args.tiny * 12 * 1024 // MiB
        timeout = 3 * max(args.size_mib * MiB, tree_bytes) / args.rate + 300
        meta = {
            "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "ram_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30),
            "src_fs": src_fs, "damon_age": damon_pageout_age(),
            "tree_n": n, "tree_bytes": tree_bytes, "tree_lo": lo, "tree_hi": hi,
            "tiny_n": tiny_n, "tiny_bytes": tiny_bytes, "tiny_lo": 512, "tiny_hi": 8192,
        }
        with stick.Stick(size_mib=size, rate_bps=args.rate, workdir=args.workdir) as s:
            meta["stick"] = f"{s.fs} on {s.name} (loop, direct I/O), {size} MiB"
            tiny = None
            log(f"big file, {args.size_mib} MiB, on {s.dev} at {args.rate / 1e6:.1f} MB/s")
            big = in_turn(tools, 0, lambda t: run_tool(s, t, "big", big_src, os.path.join(s.mnt, "big.bin"),
                                                       args.sanecp, timeout))
            log(f"{n} small files, {tree_bytes / MiB:.1f} MiB")
            tree = in_turn(tools, 1, lambda t: run_tool(s, t, "tree", tree_src, os.path.join(s.mnt, "tree"),
                                                        args.sanecp, timeout)
                           if command(t, "tree", tree_src, "", args.sanecp) is not None else None)
            meta["tree_read_alone"] = read_alone_cpu(tree_src)
            meta["tree_write_alone"] = write_alone_cpu(tree_src, os.path.join(s.mnt, "write-alone"))
            stick.drop_caches([s.mnt])
            if args.tiny:
                tiny = tiny_passes(s, tools, tiny_src, os.path.join(s.mnt, "tiny"), args.sanecp, timeout, args.rate,
                                   args.workdir)
                remove(os.path.join(s.mnt, "tiny"))
            if args.latency:
                # Last, so the passes above ran exactly as without it.
                try:
                    limits, rows = latency_pass(s, tools, big_src, os.path.join(s.mnt, "big.bin"),
                                                os.path.join(srcdir, "fsync-probe.bin"), args.sanecp, timeout)
                    meta["latency"] = {"saved": limits.saved, "thresholds": limits.thresholds, "rows": rows}
                except RuntimeError as e:
                    log(f"latency pass skipped: {e}")
                    meta["latency"] = {"skipped": str(e)}
            meta["bdi_bw"] = stick.bdi_stats(s.majmin).get("BdiWriteBandwidth", 0)
    finally:
        shutil.rmtree(srcdir, ignore_errors=True)
    many = many_pass(args, tools, args.workdir, 3600) if args.many else None

    text = report(args, meta, big, tree, tiny, many)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    lat_rows = list(meta.get("latency", {}).get("rows", {}).values())
    tiny_rows = [r for res in (tiny[0].values() if tiny else []) for r in res.values()]
    many_rows = list(many["results"].values()) if many else []
    failed = [r for r in list(big.values()) + list(tree.values()) + tiny_rows + lat_rows + many_rows
              if r is not None and not r.ok]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
