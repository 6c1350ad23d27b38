#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sanecp onto a throttled loop-device stick (a faithful slow USB stick), one case per run:

    test_sanecp_stick.py --sanecp PATH [--lanes-driver PATH] CASE

What is asserted is what users are promised, never a timing: dirty pages on the device stay bounded, progress
never claims bytes the device hasn't taken, and when sanecp exits the device has nothing left to write.
Exit 0 pass, 1 fail, 77 skip (not root, no loop devices or blkio throttle), with the reason printed.
"""
import argparse
import contextlib
import filecmp
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stick  # noqa: E402

MiB = 1 << 20
DIRTY_BOUND = 32 * MiB
RATE = 40_000_000
SANECP = None
LANES_DRIVER = None


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run_sanecp(args, sampler, on_progress=None):
    """Runs sanecp --json, reading its records live. Each progress record is checked against the device's
    own counter read right after it: durable_bytes may never be ahead of what the device took by more than
    the dirty bound."""
    proc = subprocess.Popen([SANECP, "--json", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records, worst_excess = [], 0
    for line in proc.stdout:
        rec = json.loads(line)
        records.append(rec)
        if rec["type"] == "progress":
            device = sampler.written_since_start()
            worst_excess = max(worst_excess, rec["durable_bytes"] - device)
            if on_progress:
                on_progress(rec, proc)
    err = proc.stderr.read()
    rc = proc.wait()
    # Read before anything else can write: what the device still had to do when sanecp said it was done.
    left = stick.durable_now(sampler.majmin)
    return rc, records, err, worst_excess, left


def signal_when_durable(sig, after):
    """A run_sanecp progress callback that sends SIG once more than AFTER bytes are durable, and the list where
    it notes the durable bytes it saw then."""
    sent = []

    def send(rec, proc):
        if not sent and rec["durable_bytes"] > after:
            proc.send_signal(sig)
            sent.append(rec["durable_bytes"])

    return send, sent


def assert_nothing_left(s, left, sampler):
    check(left <= stick.STAT_SLACK, f"{left} bytes still dirty on the device when sanecp exited")
    # The counters are approximate; the device's own write counter is not: a sync afterwards writes ~nothing.
    before = sampler.written_since_start()
    stick.syncfs(s.mnt)
    after = sampler.written_since_start()
    check(after - before <= 1 * MiB, f"a sync after sanecp exited still wrote {after - before} bytes")


def case_big_file(work):
    with stick.Stick(size_mib=512, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "big.bin"), 200 * MiB)
        stick.uncache(src)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, records, err, excess, left = run_sanecp([src, s.mnt + "/"], sampler)
            check(rc == 0, f"exit {rc}: {err}")
            assert_nothing_left(s, left, sampler)
        print(f"peak dirty {sampler.peak / MiB:.1f} MiB, durable ahead of device by at most {excess / MiB:.1f} MiB")
        check(sampler.peak <= DIRTY_BOUND, f"peak dirty {sampler.peak / MiB:.1f} MiB > 32 MiB")
        check(excess <= DIRTY_BOUND, f"progress claimed {excess / MiB:.1f} MiB more than the device had taken")
        check(records[-1]["type"] == "done" and records[-1]["ok"], f"last record {records[-1]}")
        progress = [r for r in records if r["type"] == "progress"]
        check(len(progress) >= 4, f"only {len(progress)} progress records for a copy of seconds")
        check(all(a["durable_bytes"] <= b["durable_bytes"] for a, b in zip(progress, progress[1:])),
              "durable bytes went backwards")
        check(any(0 < p["device_bytes_per_sec"] < 4 * RATE for p in progress),
              "no progress record shows the device's own rate")
        dst = os.path.join(s.mnt, "big.bin")
        # Residency first: comparing the bytes reads both files back into the cache.
        src_res, dst_res = stick.residency(src), stick.residency(dst)
        print(f"residency after: source {src_res:.1%}, destination {dst_res:.1%}")
        check(src_res <= 0.01, f"source still {src_res:.1%} in the page cache")
        check(dst_res <= 0.01, f"destination still {dst_res:.1%} in the page cache")
        check(filecmp.cmp(src, dst, shallow=False), "copy differs")


def case_small_files(work):
    with stick.Stick(size_mib=512, rate_bps=RATE) as s:
        tree = os.path.join(work, "tree")
        n, total = stick.make_small_tree(tree, n=400)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, records, err, excess, left = run_sanecp([tree, s.mnt], sampler)
            check(rc == 0, f"exit {rc}: {err}")
            assert_nothing_left(s, left, sampler)
        check(sampler.peak <= DIRTY_BOUND, f"peak dirty {sampler.peak / MiB:.1f} MiB > 32 MiB")
        check(excess <= DIRTY_BOUND, f"progress claimed {excess / MiB:.1f} MiB ahead of the device")
        done = records[-1]
        check(done["files_copied"] == n and done["bytes"] == total, f"done record {done}")
        cmp = filecmp.dircmp(tree, os.path.join(s.mnt, "tree"))
        check(not cmp.left_only and not cmp.right_only, "trees differ")
        for sub in cmp.subdirs.values():
            check(not sub.diff_files and not sub.left_only, f"differs in {sub.left}")
            _, mismatch, errors = filecmp.cmpfiles(sub.left, sub.right, sub.common_files, shallow=False)
            check(not mismatch and not errors, f"contents differ: {mismatch[:3]}")
        check(not any(name.endswith(".part") for _, _, files in os.walk(s.mnt) for name in files),
              "a part file was left behind")


def case_cancel(work):
    with stick.Stick(size_mib=512, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "big.bin"), 200 * MiB)
        stick.uncache(src)
        interrupt, sent = signal_when_durable(signal.SIGINT, 20 * MiB)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, records, err, _, left = run_sanecp([src, s.mnt + "/"], sampler, interrupt)
            check(sent, "the copy ended before it could be interrupted")
            check(rc == 130, f"exit {rc} after SIGINT, want 130 (cancelled by the user)")
            check(records[-1]["type"] == "done" and records[-1]["cancelled"], f"last record {records[-1]}")
            assert_nothing_left(s, left, sampler)
        check(sorted(os.listdir(s.mnt)) == ["lost+found"], f"left on the stick: {os.listdir(s.mnt)}")


def case_cached_source_left_alone(work):
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "hot.bin"), 64 * MiB)
        with open(src, "rb") as f:  # someone is using this file: it is in the cache and must stay there
            while f.read(4 * MiB):
                pass
        before = stick.residency(src)
        check(before >= 0.95, f"could not warm the source ({before:.1%})")
        with stick.DirtySampler(s.majmin) as sampler:
            rc, _, err, _, _ = run_sanecp([src, s.mnt + "/"], sampler)
        check(rc == 0, f"exit {rc}: {err}")
        after = stick.residency(src)
        print(f"source residency before {before:.1%}, after {after:.1%}")
        check(after >= 0.95, f"the copy evicted pages it did not bring in ({before:.1%} -> {after:.1%})")


def case_resume_after_kill(work):
    """SIGKILL mid-copy: nothing under the real name; the rerun continues from the part file and the device writes
    clearly less than the whole file again."""
    with stick.Stick(size_mib=512, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "big.bin"), 160 * MiB)
        stick.uncache(src)
        dst = os.path.join(s.mnt, "big.bin")
        killed = []

        def kill(rec, proc):
            if not killed and rec["durable_bytes"] > 80 * MiB:
                proc.kill()  # no clean-up runs: what a crash or power cut leaves
                killed.append(rec["durable_bytes"])

        with stick.DirtySampler(s.majmin) as sampler:
            rc, _, _, _, _ = run_sanecp([src, s.mnt + "/"], sampler, kill)
        check(killed, "the copy ended before it could be killed")
        check(rc != 0, "a killed sanecp exited 0")
        check(not os.path.exists(dst), "a half file stands under the real name")
        part = os.path.join(s.mnt, ".big.bin.part")
        check(os.path.exists(part), "no part file to resume from")
        stick.syncfs(s.mnt)
        started = time.monotonic()
        with stick.DirtySampler(s.majmin) as sampler:
            rc, records, err, _, left = run_sanecp([src, s.mnt + "/"], sampler)
            check(rc == 0, f"rerun exit {rc}: {err}")
            assert_nothing_left(s, left, sampler)
            rerun_written = sampler.written_since_start()
        rerun_seconds = time.monotonic() - started
        print(f"killed at {killed[0] / MiB:.0f} MiB durable; rerun wrote {rerun_written / MiB:.0f} MiB "
              f"in {rerun_seconds:.1f} s (a full copy is 160 MiB, about {160 * MiB / RATE:.1f} s)")
        check(rerun_written < 0.7 * 160 * MiB, f"the rerun wrote {rerun_written / MiB:.0f} MiB: it did not resume")
        notes = [r.get("note", "") for r in records if r["type"] == "file_done"]
        check(any("resumed" in n for n in notes), f"no resume note in {notes}")
        check(not os.path.exists(part), "the part file is still there")
        check(filecmp.cmp(src, dst, shallow=False), "resumed copy differs")


def case_verify_reads_from_device(work):
    """--verify reads the copy back from the stick itself: its read counter grows by at least the file's size."""
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        src = stick.make_file(os.path.join(work, "f.bin"), 48 * MiB)
        stick.uncache(src)

        def sectors_read():
            return int(open(f"/sys/block/{s.name}/stat").read().split()[2]) * 512

        before = sectors_read()
        with stick.DirtySampler(s.majmin) as sampler:
            rc, _, err, _, _ = run_sanecp(["--verify", src, s.mnt + "/"], sampler)
        read = sectors_read() - before
        print(f"the stick delivered {read / MiB:.1f} MiB for a verify of 48 MiB")
        check(rc == 0, f"exit {rc}: {err}")
        check(read >= 48 * MiB, f"only {read / MiB:.1f} MiB were read from the device: verify read from memory")
        check(stick.residency(os.path.join(s.mnt, "f.bin")) <= 0.01, "verify left the copy in the page cache")


def _tree_state(root, master):
    """For each file of master (relative path -> bytes, or a link's target): complete at root or not."""
    state = {}
    for rel, want in master.items():
        path = os.path.join(root, rel)
        if isinstance(want, str):
            state[rel] = os.path.islink(path) and os.readlink(path) == want
        else:
            state[rel] = os.path.isfile(path) and not os.path.islink(path) and open(path, "rb").read() == want
    return state


def case_move_killed(work):
    """sanecp --move SIGKILLed at 20 seeded random points onto a throttled stick: after each kill every source
    file is complete in the source or on the stick, nothing half-written stands under a real name, and running
    the move again finishes it: all on the stick, nothing left at the source."""
    rng = random.Random(20261123)
    master_dir = os.path.join(work, "master")
    master = {}
    for i in range(2):
        data = os.urandom(12 * MiB)
        master[f"big{i}.bin"] = data
    for i in range(160):
        master[f"d{i % 4}/sub{i % 3}/f{i:03d}"] = os.urandom(rng.randint(1, 64) * 1024)
    for rel, data in master.items():
        os.makedirs(os.path.dirname(os.path.join(master_dir, rel)), exist_ok=True)
        with open(os.path.join(master_dir, rel), "wb") as f:
            f.write(data)
    os.symlink("big0.bin", os.path.join(master_dir, "link"))
    master["link"] = "big0.bin"
    total = sum(len(v) for v in master.values() if isinstance(v, bytes))
    src = os.path.join(work, "tree")
    with stick.Stick(size_mib=256, rate_bps=RATE) as s:
        dst = os.path.join(s.mnt, "tree")
        finished_early = 0
        for attempt in range(20):
            shutil.rmtree(src, ignore_errors=True)
            shutil.rmtree(dst, ignore_errors=True)
            subprocess.run(["cp", "-a", master_dir, src], check=True)
            stick.syncfs(s.mnt)
            stick.uncache(src)
            delay = rng.uniform(0.02, 1.1 * total / RATE)
            proc = subprocess.Popen([SANECP, "--move", src, s.mnt + "/"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                proc.wait(timeout=delay)
                finished_early += 1
            except subprocess.TimeoutExpired:
                proc.kill()  # no clean-up runs: what a crash or a power cut leaves
                proc.wait()
            at_src, at_dst = _tree_state(src, master), _tree_state(dst, master)
            lost = [rel for rel in master if not (at_src[rel] or at_dst[rel])]
            check(not lost, f"attempt {attempt} (killed at {delay:.2f} s): no complete copy of {lost[:5]}")
            for root, _, files in os.walk(dst):
                for name in files:
                    path = os.path.join(root, name)
                    rel = os.path.relpath(path, dst)
                    if name.endswith(".part") or os.path.islink(path):
                        continue
                    check(open(path, "rb").read() == master[rel], f"attempt {attempt}: a half file under {rel}")
            if os.path.lexists(src):  # else the move had finished: there is nothing to run again
                r = subprocess.run([SANECP, "--move", src, s.mnt + "/"], capture_output=True, text=True, timeout=120)
                check(r.returncode == 0, f"attempt {attempt}: the move again: exit {r.returncode}: {r.stderr}")
            check(all(_tree_state(dst, master).values()), f"attempt {attempt}: not everything on the stick")
            check(not os.path.lexists(src), f"attempt {attempt}: the source is still there")
            parts = [n for _, _, fs in os.walk(dst) for n in fs if n.endswith(".part")]
            check(not parts, f"attempt {attempt}: part files left: {parts[:3]}")
        print(f"20 kills, {finished_early} of them after the move had finished")
        check(finished_early < 10, "most moves finished before the kill: the kill points tested nothing")


def case_term_resume(work):
    """SIGTERM (a logout) mid-copy of a mixed tree: sanecp exits 143 with the big file's part file kept and
    nothing half-written under a real name; `--resume` then finishes without a conflict, writes clearly less than
    the whole tree again, and leaves the tree a single run makes: the same bytes, links, modes and times."""
    rng = random.Random(20261124)
    src = os.path.join(work, "tree")
    os.makedirs(src)
    stick.make_file(os.path.join(src, "a-big.bin"), 24 * MiB)
    for i in range(60):
        path = os.path.join(src, f"mid{i % 3}", f"f{i:02d}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(os.urandom(rng.randint(1, 48) * 1024))
    os.chmod(os.path.join(src, "mid1"), 0o750)
    stick.make_file(os.path.join(src, "z-big.bin"), 48 * MiB)
    os.symlink("a-big.bin", os.path.join(src, "link"))
    for root, _, files in os.walk(src):
        for name in files:
            stick.uncache(os.path.join(root, name))
    # At half the usual rate, and signalled 5 MiB into z-big.bin: 43 MiB (2 s of device time) are left when the
    # signal goes, so a machine busy with other tests can't let the copy finish before it arrives.
    with stick.Stick(size_mib=256, rate_bps=RATE // 2) as s:
        dst = os.path.join(s.mnt, "tree")
        term, stopped = signal_when_durable(signal.SIGTERM, 30 * MiB)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, _, err, _, _ = run_sanecp([src, s.mnt + "/"], sampler, term)
        check(stopped, "the copy ended before it could be stopped")
        check(rc == 143, f"exit {rc} after SIGTERM, want 143: {err}")
        check("--resume" in err, f"stderr does not say how to finish: {err!r}")
        check(not os.path.exists(os.path.join(dst, "z-big.bin")), "a half file stands under the real name")
        check(os.path.exists(os.path.join(dst, ".z-big.bin.part")), "SIGTERM took the part file away")
        stick.syncfs(s.mnt)
        with stick.DirtySampler(s.majmin) as sampler:
            rc, records, err, _, left = run_sanecp(["--resume", src, s.mnt + "/"], sampler)
            check(rc == 0, f"--resume exit {rc}: {err}")
            assert_nothing_left(s, left, sampler)
            rerun_written = sampler.written_since_start()
        total = sum(os.path.getsize(os.path.join(r, n)) for r, _, fs in os.walk(src) for n in fs
                    if not os.path.islink(os.path.join(r, n)))
        notes = [r.get("note", "") for r in records if r["type"] == "file_done"]
        already = sum("already on the device" in n for n in notes)
        print(f"stopped at {stopped[0] / MiB:.0f} MiB durable; --resume took {already} files as done, resumed "
              f"{sum('resumed' in n for n in notes)}, and wrote {rerun_written / MiB:.0f} of {total / MiB:.0f} MiB")
        check(already >= 2, f"only {already} files were taken as done: {notes[:5]}")
        check(any("resumed" in n for n in notes), "the big file was not resumed from its part file")
        check(rerun_written < 0.7 * total, f"--resume wrote {rerun_written / MiB:.0f} MiB: it copied again")
        cmp = filecmp.dircmp(src, dst)
        pending = [cmp]
        while pending:
            c = pending.pop()
            check(not (c.left_only or c.right_only or c.diff_files or c.funny_files),
                  f"{c.left}: differs: {c.left_only + c.right_only + c.diff_files + c.funny_files}")
            for f in c.common_files:
                check(filecmp.cmp(os.path.join(c.left, f), os.path.join(c.right, f), shallow=False),
                      f"{c.left}/{f}: other bytes")
            pending.extend(c.subdirs.values())
        for rel in ("", "mid0", "mid1", "a-big.bin", "mid2/f02"):
            a, b = os.lstat(os.path.join(src, rel)), os.lstat(os.path.join(dst, rel))
            check(stat.S_IMODE(a.st_mode) == stat.S_IMODE(b.st_mode), f"{rel or '.'}: mode {b.st_mode:o}")
            check(int(a.st_mtime) == int(b.st_mtime), f"{rel or '.'}: time {b.st_mtime} against {a.st_mtime}")
        check(os.readlink(os.path.join(dst, "link")) == "a-big.bin", "the link")
        parts = [n for _, _, fs in os.walk(dst) for n in fs if n.endswith(".part")]
        check(not parts, f"part files left: {parts[:3]}")


def _fat_tree(work):
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    for name, data in (("normal.txt", b"n"), ("a:b.txt", b"colon"), ("ends in dot.", b"dot")):
        with open(os.path.join(tree, name), "wb") as f:
            f.write(data)
    with open(os.path.join(tree, "huge.bin"), "wb") as f:
        f.truncate(5 << 30)  # sparse: 5 GiB that cost nothing to make
    return tree


def _image(work, name, size, mkfs, tools, packages):
    """An image file of size bytes in work, formatted by the command mkfs (the image's path added last); skips the
    case when one of tools is missing (packages says where they come from)."""
    for tool in tools:
        if shutil.which(tool) is None:
            stick.skip(f"{tool} not found ({packages})")
    img = os.path.join(work, name)
    with open(img, "wb") as f:
        f.truncate(size)
    subprocess.run([*mkfs, img], check=True, capture_output=True)
    return img


@contextlib.contextmanager
def _fat_stick(work, size):
    """A FAT32 image of size bytes in work, mounted through fusefat on a folder of its own while the block runs."""
    img = _image(work, "fat.img", size, ["mkfs.vfat", "-F", "32"], ("mkfs.vfat", "fusefat", "fusermount"),
                 "dosfstools, fusefat")
    mnt = tempfile.mkdtemp(prefix="sanecopy-fat-")
    subprocess.run(["fusefat", "-o", "rw+", img, mnt], check=True, capture_output=True)
    try:
        yield mnt
    finally:
        subprocess.run(["fusermount", "-u", mnt])
        os.rmdir(mnt)


def case_fat32_rules(work):
    """On a FAT32 stick (fusefat): a file over 4 GiB - 1 and names FAT refuses are reported before copying, the
    rest still copies; --rename-invalid stores those names safely. fusefat reports no size: free space unknown."""
    with _fat_stick(work, 256 * MiB) as mnt:
        tree = _fat_tree(work)
        r = subprocess.run([SANECP, tree, mnt + "/"], capture_output=True, text=True, timeout=120)
        print(r.stderr)
        check(r.returncode == 1, f"exit {r.returncode}: refused files are files not copied")
        check("huge.bin" in r.stderr and "larger than" in r.stderr, "the 5 GiB file was not refused up front")
        check("a:b.txt" in r.stderr and "':'" in r.stderr, "the colon was not reported")
        check("ends in dot." in r.stderr, "the trailing dot was not reported")
        got = sorted(os.listdir(os.path.join(mnt, "tree")))
        check(got == ["normal.txt"], f"on the stick: {got}")
        r = subprocess.run([SANECP, "--rename-invalid", tree, os.path.join(mnt, "again")], capture_output=True,
                           text=True, timeout=120)
        # huge.bin is still refused: too big for FAT32 under any name.
        check(r.returncode == 1, f"--rename-invalid exit {r.returncode}: {r.stderr}")
        got = sorted(os.listdir(os.path.join(mnt, "again")))
        check(got == ["a_b.txt", "ends in dot_", "normal.txt"], f"renamed: {got}")
        check("renamed" in r.stderr, f"no rename reported: {r.stderr!r}")
        with open(os.path.join(mnt, "again", "a_b.txt"), "rb") as f:
            check(f.read() == b"colon", "renamed file has the wrong content")


def case_fat32_case_collision(work):
    """FAT ignores case: Makefile and makefile are one name there. The second must meet the first as an existing
    target (refused by default, and said to be the same name there), never share its part file and swap contents."""
    with _fat_stick(work, 64 * MiB) as mnt:
        tree = os.path.join(work, "src")
        os.makedirs(tree)
        for name in ("Makefile", "makefile"):
            with open(os.path.join(tree, name), "w") as f:
                f.write(name + " contents")
        r = subprocess.run([SANECP, tree, mnt + "/"], capture_output=True, text=True, timeout=60)
        print(r.stderr)
        check(r.returncode == 1, f"exit {r.returncode}: the second name should be refused")
        # Said as what it is: the stick can't hold both names, not "someone else's file is there".
        check("makefile and Makefile would be the same file" in r.stderr, f"stderr: {r.stderr!r}")
        got = os.listdir(os.path.join(mnt, "src"))
        check(len(got) == 1, f"on the stick: {got}")
        with open(os.path.join(mnt, "src", got[0])) as f:
            content = f.read()
        # Names are walked in byte order, so "Makefile" went first and is the one that must be there, intact.
        check(content == "Makefile contents", f"content {content!r}")
        check(not any(n.endswith(".part") for n in got), "a part file was left")


def case_exfat_fuseblk_detected(work):
    """exfat-fuse mounts show only "fuseblk" in mountinfo: the filesystem is told from the device, so exFAT's
    name rules apply."""
    img = _image(work, "exfat.img", 128 * MiB, ["mkfs.exfat"], ("mkfs.exfat", "mount.exfat-fuse", "losetup"),
                 "exfatprogs, exfat-fuse")
    dev = subprocess.run(["losetup", "-f", "--show", img], check=True, capture_output=True, text=True).stdout.strip()
    mnt = tempfile.mkdtemp(prefix="sanecopy-exfat-")
    try:
        subprocess.run(["mount.exfat-fuse", dev, mnt], check=True, capture_output=True)
        try:
            odd, plain = os.path.join(work, "what?.txt"), os.path.join(work, "plain.txt")
            for path in (odd, plain):
                with open(path, "w") as f:
                    f.write("q")
            r = subprocess.run([SANECP, odd, plain, mnt + "/"], capture_output=True, text=True, timeout=60)
            print(r.stderr)
            check(r.returncode == 1, f"exit {r.returncode}: a refused name is a file not copied")
            check("'?'" in r.stderr, f"the '?' was not reported: {r.stderr!r}")
            check(os.listdir(mnt) == ["plain.txt"], f"on the stick: {os.listdir(mnt)}")
        finally:
            subprocess.run(["umount", mnt])
    finally:
        subprocess.run(["losetup", "-d", dev])
        os.rmdir(mnt)


def case_lanes_two_sticks(work):
    """One JobQueue, three jobs: two to stick A, one to stick B. The two on A run one after the other (one writer
    per device); the one on B runs alongside one of them (devices in parallel)."""
    slack = 0.005  # s; the driver's timestamps come from two threads
    with stick.Stick(size_mib=256, rate_bps=RATE) as a, stick.Stick(size_mib=256, rate_bps=RATE) as b:
        names = ("a1.bin", "a2.bin", "b1.bin")
        srcs = [stick.make_file(os.path.join(work, n), 48 * MiB) for n in names]
        for src in srcs:
            stick.uncache(src)
        dests = [os.path.join(a.mnt, names[0]), os.path.join(a.mnt, names[1]), os.path.join(b.mnt, names[2])]
        args = [p for pair in zip(srcs, dests) for p in pair]
        r = subprocess.run([LANES_DRIVER, *args], capture_output=True, text=True, timeout=240)
        print(r.stdout, end="")
        print(r.stderr, end="", file=sys.stderr)
        check(r.returncode == 0, f"lanes_driver exit {r.returncode}")
        jobs = [json.loads(line) for line in r.stdout.splitlines()]
        check([j["dest"] for j in jobs] == dests, f"one line per job in order expected, got {jobs}")
        check(all(j["ok"] for j in jobs), "a job failed")
        check(all(j["running_from"] is not None for j in jobs), "a job was never seen running")
        a1, a2, b1 = jobs
        check(a1["lane"] == a2["lane"] != b1["lane"], f"lanes: A {a1['lane']}, {a2['lane']}; B {b1['lane']}")
        first, second = sorted((a1, a2), key=lambda j: j["running_from"])
        print(f"stick A: {os.path.basename(first['dest'])} "
              f"ran {first['running_from']:.3f}..{first['finished_at']:.3f}, "
              f"{os.path.basename(second['dest'])} {second['running_from']:.3f}..{second['finished_at']:.3f}; "
              f"stick B: {b1['running_from']:.3f}..{b1['finished_at']:.3f}")
        check(second["running_from"] >= first["finished_at"] - slack,
              f"the two jobs on stick A overlapped by {first['finished_at'] - second['running_from']:.3f} s")

        def overlap(x, y):
            return min(x["finished_at"], y["finished_at"]) - max(x["running_from"], y["running_from"])

        # Ticks are 50 ms apart: an overlap of 0.1 s or more is two jobs running at once, not timestamp jitter.
        best = max(overlap(b1, a1), overlap(b1, a2))
        check(best >= 0.1, f"the job on stick B overlapped the jobs on stick A by only {best:.3f} s")
        for src, dst in zip(srcs, dests):
            check(filecmp.cmp(src, dst, shallow=False), f"{dst} differs from {src}")


def device_read_bytes(majmin):
    """Bytes the block device has completed reading (diskstats field 3)."""
    return int(open(f"/sys/dev/block/{majmin}/stat").read().split()[2]) * 512


def case_one_source_three_sticks(work):
    """sanecp --to A --to B --to C: the same tree (a big file and small ones) onto three sticks of different speeds
    at once. Each is complete and identical, durable when sanecp returns, the source's disk is read once (not
    three times), and neither the source nor the copies stay in the page cache."""
    with stick.Stick(size_mib=256, rate_bps=0) as src_disk, \
            stick.Stick(size_mib=192, rate_bps=10_000_000) as a, \
            stick.Stick(size_mib=192, rate_bps=20_000_000) as b, \
            stick.Stick(size_mib=192, rate_bps=40_000_000) as c:
        tree = os.path.join(src_disk.mnt, "tree")
        os.makedirs(tree)
        stick.make_file(os.path.join(tree, "big.bin"), 48 * MiB)
        n, small = stick.make_small_tree(os.path.join(tree, "small"), n=300, lo=4096, hi=32768)
        total = 48 * MiB + small
        stick.syncfs(src_disk.mnt)
        for f in stick.tree_files(tree):
            stick.uncache(f)
        before = device_read_bytes(src_disk.majmin)
        sticks = (a, b, c)
        args = [SANECP, "--json"] + [x for s in sticks for x in ("--to", s.mnt)] + [tree]
        start = time.monotonic()
        r = subprocess.run(args, capture_output=True, text=True, timeout=300)
        secs = time.monotonic() - start
        read = device_read_bytes(src_disk.majmin) - before
        cached = stick.tree_residency(tree)  # before anything here reads the source
        print(f"three sticks at 10, 20, 40 MB/s: {secs:.2f} s; source disk read {read / MiB:.1f} MiB for "
              f"{total / MiB:.1f} MiB of files ({read / total:.2f}x)")
        check(r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}")
        done = [json.loads(line) for line in r.stdout.splitlines() if '"type":"done"' in line]
        check(sorted(d["destination"] for d in done) == sorted(s.mnt for s in sticks),
              f"one done record a stick, each naming it: {done}")
        check(all(d["ok"] and d["files_copied"] == n + 1 for d in done), f"done records {done}")
        for s in sticks:
            check(stick.durable_now(s.majmin) <= stick.STAT_SLACK, f"{s.mnt}: bytes still to write after exit")
            for f in stick.tree_files(tree):
                copy = os.path.join(s.mnt, "tree", os.path.relpath(f, tree))
                check(filecmp.cmp(f, copy, shallow=False), f"{copy} differs from {f}")
        # Read once: what three separate copies would read three times. Metadata and readahead past a small
        # file's end are allowed for.
        check(read <= 1.25 * total, f"the source disk was read {read / total:.2f} times over")
        check(cached <= 0.02, f"{cached:.1%} of the source is left in the page cache")


def case_one_source_one_stick_full(work):
    """sanecp --to A --to B where B has no room for the tree: B's copy is refused (before its first byte) and says
    so, A's is complete and identical, and nothing of the source stays cached for the job that ended."""
    with stick.Stick(size_mib=192, rate_bps=20_000_000) as a, stick.Stick(size_mib=40, rate_bps=20_000_000) as b:
        tree = os.path.join(work, "tree")
        os.makedirs(tree)
        stick.make_file(os.path.join(tree, "big.bin"), 24 * MiB)
        stick.make_file(os.path.join(tree, "bigger.bin"), 24 * MiB)
        for f in stick.tree_files(tree):
            stick.uncache(f)
        r = subprocess.run([SANECP, "--to", a.mnt, "--to", b.mnt, tree], capture_output=True, text=True, timeout=300)
        print(r.stderr[-1500:])
        cached = stick.tree_residency(tree)
        check(r.returncode == 1, f"exit {r.returncode}, want 1: one destination failed")
        check(f"{b.mnt}: " in r.stderr, f"the failure names its stick: {r.stderr!r}")
        for f in stick.tree_files(tree):
            copy = os.path.join(a.mnt, "tree", os.path.relpath(f, tree))
            check(filecmp.cmp(f, copy, shallow=False), f"{copy} differs from {f}")
        check(os.listdir(b.mnt) in ([], ["lost+found"]), f"{b.mnt} holds {os.listdir(b.mnt)}")
        check(cached <= 0.02, f"{cached:.1%} of the source is left in the page cache")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global SANECP, LANES_DRIVER
    ap = argparse.ArgumentParser()
    ap.add_argument("--sanecp", required=True)
    ap.add_argument("--lanes-driver", help="tests/stick/lanes_driver, for the lanes_two_sticks case")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    if a.case == "lanes_two_sticks" and not a.lanes_driver:
        ap.error("lanes_two_sticks needs --lanes-driver PATH")
    SANECP = os.path.abspath(a.sanecp)
    LANES_DRIVER = a.lanes_driver and os.path.abspath(a.lanes_driver)
    stick.require_root_or_skip()
    with stick.workdir("sanecopy-stick-test-") as work:
        return stick.run_case(CASES, a.case, work, Failure)


if __name__ == "__main__":
    sys.exit(main())
