# SPDX-License-Identifier: GPL-2.0-or-later
"""One source onto several sticks at once (bench.py --sticks): what classrooms and events do.

Three loop-device sticks at 10, 20 and 40 MB/s and a source on a stick of its own (unthrottled, so its own read
counter says how often the source was read). Each stick is timed alone with sanecp, then all three together with
`sanecp --to A --to B --to C`, then as three sanecp processes started at once (no shared source: what the group
saves). Each time is until the command (or, together, that stick's "done" record) said the bytes were durable."""
import json
import os
import subprocess
import threading
import time

import stick

MiB = stick.MiB
RATES = (10_000_000, 20_000_000, 40_000_000)


def read_bytes(majmin):
    return int(open(f"/sys/dev/block/{majmin}/stat").read().split()[2]) * 512


def cold(tree):
    for f in stick.tree_files(tree):
        stick.uncache(f)


def clear(sticks):
    for s in sticks:
        for name in os.listdir(s.mnt):
            if name != "lost+found":
                subprocess.run(["rm", "-rf", os.path.join(s.mnt, name)], check=True)
        stick.syncfs(s.mnt)


def timed(cmd, timeout):
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - start


def together(sanecp, sticks, tree, timeout):
    """sanecp --to each stick: the time each stick's "done" record came, by mount point."""
    cmd = [sanecp, "--json"] + [x for s in sticks for x in ("--to", s.mnt)] + [tree]
    start = time.monotonic()
    done, ok = {}, True
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            if '"type":"done"' in line:
                rec = json.loads(line)
                done[rec["destination"]] = time.monotonic() - start
                ok = ok and rec["ok"]
        ok = p.wait(timeout=timeout) == 0 and ok
    return done, ok


def separate(sanecp, sticks, tree, timeout):
    """Three sanecp processes at once, one a stick: each one's time."""
    times, threads, oks = {}, [], []

    def one(s):
        r, secs = timed([sanecp, tree, s.mnt], timeout)
        times[s.mnt] = secs
        oks.append(r.returncode == 0)

    for s in sticks:
        threads.append(threading.Thread(target=one, args=(s,)))
        threads[-1].start()
    for t in threads:
        t.join()
    return times, all(oks)


def run(sanecp, workdir, size_mib, small):
    """Returns the Markdown section."""
    timeout = 3600
    total_mib = size_mib + small * 20 // 1024 + 64
    with stick.Stick(size_mib=total_mib * 2, rate_bps=0, workdir=workdir) as src, \
            stick.Stick(size_mib=total_mib + 64, rate_bps=RATES[0], workdir=workdir) as a, \
            stick.Stick(size_mib=total_mib + 64, rate_bps=RATES[1], workdir=workdir) as b, \
            stick.Stick(size_mib=total_mib + 64, rate_bps=RATES[2], workdir=workdir) as c:
        sticks = (a, b, c)
        tree = os.path.join(src.mnt, "tree")
        os.makedirs(tree)
        stick.make_file(os.path.join(tree, "video.mkv"), size_mib * MiB)
        n, small_bytes = stick.make_small_tree(os.path.join(tree, "photos"), n=small, lo=8192, hi=32768)
        payload = size_mib * MiB + small_bytes
        stick.syncfs(src.mnt)
        alone, reads_alone = {}, 0
        for s in sticks:
            cold(tree)
            before = read_bytes(src.majmin)
            r, secs = timed([sanecp, tree, s.mnt], timeout)
            reads_alone += read_bytes(src.majmin) - before
            alone[s.mnt] = secs if r.returncode == 0 else None
            clear(sticks)
        cold(tree)
        before = read_bytes(src.majmin)
        group, group_ok = together(sanecp, sticks, tree, timeout)
        group_reads = read_bytes(src.majmin) - before
        group_cached = stick.tree_residency(tree)
        clear(sticks)
        cold(tree)
        before = read_bytes(src.majmin)
        apart, apart_ok = separate(sanecp, sticks, tree, timeout)
        apart_reads = read_bytes(src.majmin) - before
        clear(sticks)
    out = [f"### One source onto three sticks at once: {size_mib} MiB file and {n} photos "
           f"({payload / MiB:.0f} MiB in all)", "",
           "| stick | alone | `sanecp --to` ×3 | ratio | three `sanecp` at once |",
           "|---|---|---|---|---|"]
    worst = 0.0
    for s, rate in zip(sticks, RATES):
        one, tog, sep = alone.get(s.mnt), group.get(s.mnt), apart.get(s.mnt)
        ratio = tog / one if one and tog else None
        worst = max(worst, ratio or 99)
        out.append(f"| {rate / 1e6:.0f} MB/s | {one:.2f} s | {tog:.2f} s | {ratio:.3f}× | {sep:.2f} s |"
                   if one and tog and sep else f"| {rate / 1e6:.0f} MB/s | failed | | | |")
    out += ["",
            f"Source disk read: together {group_reads / payload:.2f}× the files' size, three separate processes "
            f"{apart_reads / payload:.2f}×, each stick alone {reads_alone / payload / 3:.2f}× a run. "
            f"Source left in the page cache after `--to` ×3: {group_cached:.1%}. "
            f"All copies {'succeeded' if group_ok and apart_ok else 'did NOT all succeed'}.",
            "",
            f"- {'✓' if worst <= 1.05 else '✗'} each stick within 5 % of its own time alone: worst {worst:.3f}×",
            f"- {'✓' if group_reads <= 1.1 * payload else '✗'} the source read once: {group_reads / payload:.2f}×",
            ""]
    return "\n".join(out)
