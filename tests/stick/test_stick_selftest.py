#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Proves the simulated stick behaves like a slow stick and leaves nothing behind.

Exit status: 0 all passed, 1 a check failed, 77 skipped (not root, no blkio).
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stick  # noqa: E402

MiB = stick.MiB
RATE = 20_000_000
SIZE = 64 * MiB


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def check_gone(info):
    """Everything a closed Stick made is gone. info: dict with img, name, majmin, mnt."""
    # A parallel test may already have reattached the same loopN to its own
    # image, with its own throttle line; only ours must be gone.
    check(stick.loops_backed_by(info["img"]) == [], f"{info['name']} still backed by {info['img']}")
    try:
        with open(f"/sys/block/{info['name']}/loop/backing_file") as f:
            reused = f.read().strip() != ""
    except OSError:
        reused = False
    check(reused or info["majmin"] not in stick.throttle_lines(),
          f"throttle line for {info['majmin']} left behind")
    check(not os.path.exists(info["mnt"]), f"mount point {info['mnt']} left behind")
    check(not os.path.exists(os.path.dirname(info["img"])), f"image dir of {info['img']} left behind")


def info_of(s):
    return {"img": s.img, "name": s.name, "majmin": s.majmin, "mnt": s.mnt}


def test_direct_writes_are_throttled(scratch):
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        check(s.dev.startswith("/dev/loop") and os.path.ismount(s.mnt), "stick not mounted")
        check(stick.throttle_lines().get(s.majmin) == RATE, "throttle line not set")
        t0 = time.monotonic()
        subprocess.run(["dd", "if=/dev/zero", f"of={s.mnt}/direct.bin", "bs=4M",
                        f"count={SIZE // (4 * MiB)}", "oflag=direct", "status=none"], check=True)
        took = time.monotonic() - t0
        print(f"  dd oflag=direct 64 MiB at {RATE / 1e6:.0f} MB/s took {took:.2f} s")
        # 3.4 s expected; half that is a loose floor that a busy machine cannot break.
        check(took >= 1.5, f"64 MiB at 20 MB/s took only {took:.2f} s: not throttled")


def test_cp_leaves_dirty_pages_until_sync(scratch):
    src = stick.make_file(os.path.join(scratch, "src.bin"), SIZE)
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        dest = os.path.join(s.mnt, "dest.bin")
        with stick.DirtySampler(s.majmin) as sampler:
            subprocess.run(["cp", src, dest], check=True)
            sampler.wait_samples(2)
            peak_before_sync = sampler.peak
            t0 = time.monotonic()
            subprocess.run(["sync", "-f", dest], check=True)
            took = time.monotonic() - t0
            left = stick.durable_now(s.majmin)
        print(f"  cp: {peak_before_sync / MiB:.1f} MiB dirty before sync; sync took {took:.2f} s;"
              f" {left} bytes dirty after; device took {sampler.samples[-1].written / MiB:.1f} MiB")
        check(peak_before_sync > 32 * MiB, f"only {peak_before_sync / MiB:.1f} MiB dirty after cp")
        # "0" within the per-CPU counter drift of the kernel's kB figures.
        check(left <= stick.STAT_SLACK, f"{left} bytes still dirty after sync")
        check(sampler.samples[-1].written >= SIZE, "device took less than the file after sync")


def test_cleanup_after_body_raises(scratch):
    try:
        with stick.Stick(size_mib=128, rate_bps=RATE) as s:
            info = info_of(s)
            # Dirty data still queued at the throttle when the body fails: the
            # teardown must lift the throttle before its unmount flushes this.
            stick.make_file(os.path.join(s.mnt, "pending.bin"), 32 * MiB)
            raise RuntimeError("body failed")
    except RuntimeError:
        pass
    check_gone(info)


CHILD = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    import stick
    with stick.Stick(size_mib=128, rate_bps=20_000_000) as s:
        stick.make_file(os.path.join(s.mnt, "pending.bin"), 32 * stick.MiB)
        print(json.dumps({"img": s.img, "name": s.name, "majmin": s.majmin, "mnt": s.mnt}), flush=True)
        sys.stdin.read()
""")


@contextlib.contextmanager
def child_stick():
    """Runs CHILD, which holds a Stick with data pending on it; yields the child and its Stick's info. The child is
    killed if it still runs at the end."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, os.path.dirname(os.path.abspath(__file__))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        check(line, "child stick did not come up")
        yield child, json.loads(line)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_cleanup_after_sigterm(scratch):
    with child_stick() as (child, info):
        child.send_signal(signal.SIGTERM)
        rc = child.wait(timeout=120)
    print(f"  child exited {rc} after SIGTERM")
    check(rc == 128 + signal.SIGTERM, f"child exit status {rc}")
    check_gone(info)


def test_orphan_of_sigkill_is_reaped(scratch):
    # regression guard for ctest < 3.27, which SIGKILLs a test that times out
    with child_stick() as (child, info):
        child.kill()
        child.wait(timeout=60)
        left = stick.loops_backed_by(info["img"])
        print(f"  SIGKILL left {', '.join(left) or 'nothing'} attached")
    # A parallel test may have reaped it already; otherwise the next Stick must.
    with stick.Stick(size_mib=64, rate_bps=RATE):
        pass
    check_gone(info)


TESTS = [test_direct_writes_are_throttled, test_cp_leaves_dirty_pages_until_sync,
         test_cleanup_after_body_raises, test_cleanup_after_sigterm, test_orphan_of_sigkill_is_reaped]


def main():
    stick.require_root_or_skip()
    passed = failed = 0
    for test in TESTS:
        scratch = tempfile.mkdtemp(prefix="sanecopy-selftest-", dir="/var/tmp")
        try:
            print(f"{test.__name__}:", flush=True)
            test(scratch)
            passed += 1
            print(f"PASS {test.__name__}", flush=True)
        except (CheckFailed, subprocess.SubprocessError, OSError) as e:
            failed += 1
            print(f"FAIL {test.__name__}: {e}", flush=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
