#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sanecp from the outside: bad input gets a clear message and loses nothing.

Run one case: test_sanecp.py --sanecp PATH CASE. Exit 0 pass, 1 fail, 77 skip (with a SKIP: line saying why).
Cases that need a small or read-only filesystem mount a tmpfs inside a private mount namespace (unshare -m):
the mount vanishes with the process, so nothing is left behind even when a case fails.
"""
import argparse
import json
import os
import pty
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stick"))
import stick  # noqa: E402

SANECP = None
TIMEOUT = 60


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def check_refused(r, *words):
    """sanecp exited 1 and its stderr names each of words."""
    check(r.returncode == 1, f"exit {r.returncode}, want 1")
    check(all(w in r.stderr for w in words), f"stderr: {r.stderr!r}")


def write(path, text):
    """Writes text to the file path; returns path."""
    with open(path, "w") as f:
        f.write(text)
    return path


def run(args, timeout=TIMEOUT, **kw):
    return subprocess.run([SANECP, *args], capture_output=True, text=True, errors="replace", timeout=timeout, **kw)


def in_small_fs(size, setup, args, ro=False):
    """Mounts a tmpfs of SIZE on a fresh folder in a private mount namespace, runs the shell snippet SETUP in it
    ($FS is the folder), then sanecp ARGS with FS_DIR standing for the folder, then lists what is left there."""
    if os.geteuid() != 0:
        raise Skip("needs root to mount a small tmpfs in a private mount namespace")
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is missing")
    fs = tempfile.mkdtemp(prefix="sanecp-fs-", dir="/var/tmp")
    try:
        opts = f"size={size}"
        remount = 'mount -o remount,ro "$FS"; ' if ro else ""
        script = (f'set -e; mount --make-rprivate /; mount -t tmpfs -o {opts} sanecp-test "$FS"; {setup}; '
                  f'{remount}set +e; "$SANECP" "$@"; rc=$?; echo "--- listing"; ls -A "$FS"; '
                  f'for f in "$FS"/*; do [ -f "$f" ] && echo "--- $(basename "$f"): $(head -c 64 "$f")"; done; '
                  f'exit $rc')
        env = dict(os.environ, FS=fs, SANECP=SANECP)
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *[a.replace("FS_DIR", fs) for a in args]],
                              capture_output=True, text=True, errors="replace", timeout=TIMEOUT, env=env)
    finally:
        os.rmdir(fs)  # empty again: the tmpfs lived only in the namespace


def listing(out):
    """The names `ls -A` printed after the run, without the content lines that follow them."""
    after = out.split("--- listing\n", 1)[1] if "--- listing\n" in out else ""
    return "".join(line + "\n" for line in after.splitlines() if not line.startswith("--- "))


# --- the cases ---------------------------------------------------------------------------------------------

def case_missing_source(t):
    os.mkdir(f"{t}/out")
    with open(f"{t}/real", "w") as f:
        f.write("x")
    r = run([f"{t}/nope", f"{t}/real", f"{t}/out"])
    check_refused(r, "nope", "No such file")
    check(open(f"{t}/out/real").read() == "x", "the other source was not copied")


def case_fifo_source(t):
    os.mkfifo(f"{t}/pipe")
    os.mkdir(f"{t}/out")
    started = time.monotonic()
    r = run([f"{t}/pipe", f"{t}/out"], timeout=20)  # a hang fails through the timeout
    check_refused(r, "FIFO")
    check(os.listdir(f"{t}/out") == [], "something was written")
    check(time.monotonic() - started < 20, "took too long")


def case_fifo_in_tree(t):
    os.makedirs(f"{t}/tree")
    os.mkfifo(f"{t}/tree/pipe")
    with open(f"{t}/tree/file", "w") as f:
        f.write("data")
    os.mkdir(f"{t}/out")
    r = run([f"{t}/tree", f"{t}/out"], timeout=20)
    # The rest is copied, but not everything requested is on the device: a script must see that.
    check(r.returncode == 1, f"exit {r.returncode}: {r.stderr!r}")
    check("skipped" in r.stderr and "FIFO" in r.stderr, f"stderr: {r.stderr!r}")
    check(open(f"{t}/out/tree/file").read() == "data", "file missing")
    check(not os.path.lexists(f"{t}/out/tree/pipe"), "the FIFO was recreated")
    # Scripts get the reason as a word, not only a sentence.
    os.mkdir(f"{t}/out2")
    r = run(["--json", f"{t}/tree", f"{t}/out2"], timeout=20)
    skips = [rec for rec in map(json.loads, r.stdout.splitlines()) if rec["type"] == "skipped"]
    check(len(skips) == 1 and skips[0]["reason"] == "special-file", f"skipped records {skips}")


def case_existing_target_refused(t):
    r = run([write(f"{t}/src", "new"), write(f"{t}/dst", "precious")])
    check_refused(r, "already exists")
    check(open(f"{t}/dst").read() == "precious", "the existing file was touched")
    check(sorted(os.listdir(t)) == ["dst", "src"], f"left behind: {os.listdir(t)}")


def case_existing_target_overwrite(t):
    r = run(["--overwrite", write(f"{t}/src", "new"), write(f"{t}/dst", "old")])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    check(open(f"{t}/dst").read() == "new", "not overwritten")


def case_existing_target_skip(t):
    r = run(["--skip-existing", write(f"{t}/src", "new"), write(f"{t}/dst", "old")])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    check("skipped" in r.stderr, f"stderr: {r.stderr!r}")
    check(open(f"{t}/dst").read() == "old", "overwritten")


def case_into_own_subfolder(t):
    os.makedirs(f"{t}/tree/sub")
    r = run([f"{t}/tree", f"{t}/tree/sub"])
    check_refused(r, "into itself")
    check(os.listdir(f"{t}/tree/sub") == [], "something was created")


def case_into_itself_through_bind_mount(t):
    """The destination is the source's own subfolder under another path (a bind mount, in a private mount
    namespace that vanishes with the process): that folder is left out, not copied into itself over and over.
    Both as the folder that receives the copy and as the existing folder the copy merges into."""
    if os.geteuid() != 0:
        raise Skip("needs root to bind-mount a folder in a private mount namespace")
    if not shutil.which("unshare"):
        raise Skip("unshare (util-linux) is missing")
    for case, mount_on, dest in (("into", "dst", "dst/"), ("merge", "dst/src", "dst/")):
        os.makedirs(f"{t}/{case}/src/sub")
        os.makedirs(f"{t}/{case}/{mount_on}")
        write(f"{t}/{case}/src/f", "file")
        write(f"{t}/{case}/src/sub/g", "in sub")
        script = ('set -e; mount --make-rprivate /; mount --bind "$T/src/sub" "$T/$ON"; set +e; '
                  '"$SANECP" "$T/src" "$T/$DEST"')
        r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, errors="replace",
                           timeout=TIMEOUT, env=dict(os.environ, T=f"{t}/{case}", ON=mount_on, DEST=dest,
                                                     SANECP=SANECP))
        check(r.returncode == 1, f"{case}: exit {r.returncode}, want 1; stderr {r.stderr!r}")
        check("copied into itself" in r.stderr, f"{case}: stderr: {r.stderr!r}")
        # What went through the mount is in the subfolder itself.
        inside = f"{t}/{case}/src/sub" + ("/src" if case == "into" else "")
        check(open(f"{inside}/f").read() == "file", f"{case}: the rest was not copied")
        check(not os.path.lexists(f"{inside}/sub"), f"{case}: the destination was copied into itself")


def case_resume_in_its_own_space(t):
    """The same command again after an interrupted copy, on a stick the part file fills: its blocks are the
    file's own, so the plan does not say "not enough space", and the copy goes on from the part file."""
    stick.require_root_or_skip()
    with stick.Stick(size_mib=64, rate_bps=400_000_000, workdir=t) as s:
        vfs = os.statvfs(s.mnt)
        free = vfs.f_bavail * vfs.f_frsize
        size = int(free * 0.7) // 4096 * 4096  # fits alone; not beside the part file
        with open(f"{t}/big", "wb") as f:
            f.write(os.urandom(size))
        # What an interrupted run leaves: the first part of the file under its part file's name.
        with open(f"{t}/big", "rb") as src, open(f"{s.mnt}/.big.part", "wb") as part:
            part.write(src.read(int(free * 0.5) // 4096 * 4096))
        # Written after the source last changed, and before this run began, as an interrupted run's.
        after_source = os.stat(f"{t}/big").st_ctime_ns + 1000
        os.utime(f"{s.mnt}/.big.part", ns=(after_source, after_source))
        os.sync()
        r = run(["--json", f"{t}/big", f"{s.mnt}/"])
        check(r.returncode == 0, f"exit {r.returncode}; stderr {r.stderr!r}")
        check("resumed after" in r.stdout, f"not resumed: {r.stdout[-400:]!r}")
        check(os.listdir(s.mnt) == ["big"] or sorted(os.listdir(s.mnt)) == ["big", "lost+found"],
              f"left on the stick: {os.listdir(s.mnt)}")
        with open(f"{t}/big", "rb") as a, open(f"{s.mnt}/big", "rb") as b:
            check(a.read() == b.read(), "the copy differs from the source")


def case_out_of_space(t):
    with open(f"{t}/big", "wb") as f:
        f.write(os.urandom(4 << 20))
    r = in_small_fs("1m", "true", [f"{t}/big", "FS_DIR/"])
    check(r.returncode == 1, f"exit {r.returncode}, want 1; stderr {r.stderr!r}")
    check("space" in r.stderr, f"stderr: {r.stderr!r}")
    check(listing(r.stdout).strip() == "", f"left behind: {listing(r.stdout)!r}")


def case_fit(t):
    """--fit onto a device without room for everything: the files that fit go, in order, a smaller one after a
    file that did not fit too; the one left out is named, and the exit code says something was not copied."""
    os.makedirs(f"{t}/src/c")
    for name, size in (("a.bin", 5 << 20), ("b.bin", 5 << 20), ("c/f0", 100 << 10), ("c/f1", 100 << 10)):
        with open(f"{t}/src/{name}", "wb") as f:
            f.write(b"x" * size)  # one line, for the listing
    r = in_small_fs("8m", "true", ["--fit", f"{t}/src/a.bin", f"{t}/src/b.bin", f"{t}/src/c", "FS_DIR/"])
    check(r.returncode == 1, f"exit {r.returncode}, want 1: {r.stderr!r}")
    check("b.bin" in r.stderr and "no room" in r.stderr, f"stderr: {r.stderr!r}")
    check(listing(r.stdout) == "a.bin\nc\n", f"on the device: {listing(r.stdout)!r}")


def case_resume_fit(t):
    """--resume --fit: what the interrupted run left on the device needs no room again. a.bin was published
    (same size and time), d.bin has a 4 MiB part file; of 7 MiB free, the rest of d.bin (2 MiB) and c fit and
    b.bin (8 MiB) does not. Counting a.bin and all of d.bin again left d.bin out and its part file behind. (tmpfs
    has no writeback to resume with, so d.bin's part file is replaced, which frees its room first; the stick
    suite resumes part files.)"""
    os.makedirs(f"{t}/src/c")
    for name, size in (("a.bin", 5 << 20), ("b.bin", 8 << 20), ("c/f0", 100 << 10), ("d.bin", 6 << 20)):
        with open(f"{t}/src/{name}", "wb") as f:
            f.write(name[0].encode() * size)
    setup = f'cp -p "{t}/src/a.bin" "$FS/"; head -c 4194304 "{t}/src/d.bin" > "$FS/.d.bin.part"'
    r = in_small_fs("16m", setup, ["--json", "--resume", "--fit", f"{t}/src/a.bin", f"{t}/src/b.bin",
                                   f"{t}/src/c", f"{t}/src/d.bin", "FS_DIR/"])
    check(r.returncode == 1, f"exit {r.returncode}, want 1 (b.bin left out): {r.stderr!r}")
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    no_room = [e["source"] for e in events if e["type"] == "skipped" and e["reason"] == "no-room"]
    check(no_room == [f"{t}/src/b.bin"], f"left out for room: {no_room!r}")
    notes = {os.path.basename(e["source"]): e.get("note", "") for e in events if e["type"] == "file_done"}
    check("already on the device" in notes.get("a.bin", ""), f"a.bin: {notes.get('a.bin')!r}")
    check("d.bin" in notes, f"d.bin was not copied: {events!r}")
    check(listing(r.stdout) == "a.bin\nc\nd.bin\n", f"on the device: {listing(r.stdout)!r}")
    check("--- d.bin: dddd" in r.stdout, "d.bin is not d.bin")


def case_out_of_space_overwrite(t):
    with open(f"{t}/big", "wb") as f:
        f.write(os.urandom(4 << 20))
    r = in_small_fs("1m", 'printf old > "$FS/big"', ["--overwrite", f"{t}/big", "FS_DIR"])
    check(r.returncode == 1, f"exit {r.returncode}, want 1; stderr {r.stderr!r}")
    check("space" in r.stderr, f"stderr: {r.stderr!r}")
    check(listing(r.stdout).split() == ["big"], f"left: {listing(r.stdout)!r}")
    check("--- big: old" in r.stdout, "the old file changed")


def case_skip_existing_full(t):
    """--skip-existing onto a device with room only for what is new: what is skipped needs no room, so the copy
    goes ahead (it was refused as "not enough space" when every file was counted); --overwrite of the same is
    still refused, as the old and the new file both stand until the new one takes the name."""
    for name, size in (("a.bin", 5 << 20), ("c.bin", 1 << 20)):
        with open(f"{t}/{name}", "wb") as f:
            f.write(b"n" * size)
    setup = 'head -c 5242880 /dev/zero | tr "\\0" o > "$FS/a.bin"'
    r = in_small_fs("8m", setup, ["--skip-existing", f"{t}/a.bin", f"{t}/c.bin", "FS_DIR/"])
    check(r.returncode == 0, f"--skip-existing exit {r.returncode}, want 0: {r.stderr!r}")
    check(listing(r.stdout) == "a.bin\nc.bin\n", f"on the device: {listing(r.stdout)!r}")
    check("--- a.bin: oooo" in r.stdout and "--- c.bin: nnnn" in r.stdout,
          "a.bin was touched, or c.bin is not the new one")
    r = in_small_fs("8m", setup, ["--overwrite", f"{t}/a.bin", f"{t}/c.bin", "FS_DIR/"])
    check(r.returncode == 1 and "space" in r.stderr, f"--overwrite exit {r.returncode}, want 1 for space: {r.stderr!r}")
    check("--- a.bin: oooo" in r.stdout, "the old a.bin changed")


def case_folder_out_of_space(t):
    """A folder onto a device too small for it: sanecp says so and leaves the device as it was. The folder is
    counted beside the copy; a tree this small is counted before the copy has written much, so taking back what
    it wrote is tested in the engine (tests/engine/test_plan_beside.cpp), where the count is held back."""
    os.mkdir(f"{t}/tree")
    os.mkdir(f"{t}/tree/sub")
    for i in range(20):
        with open(f"{t}/tree/sub/f{i:02}", "wb") as f:
            f.write(os.urandom(100 << 10))
    r = in_small_fs("1m", "true", [f"{t}/tree", "FS_DIR"])
    check(r.returncode == 1, f"exit {r.returncode}, want 1; stderr {r.stderr!r}")
    check("not enough space" in r.stderr, f"stderr: {r.stderr!r}")
    check(listing(r.stdout) == "", f"left on the device: {listing(r.stdout)!r}")


def case_read_only_destination(t):
    r = in_small_fs("1m", "true", [write(f"{t}/src", "x"), "FS_DIR"], ro=True)
    check_refused(r, "Read-only file system")


def case_parent_missing(t):
    r = run([write(f"{t}/src", "x"), f"{t}/no/such/dir/file"])
    check_refused(r, "does not exist")
    check(not os.path.exists(f"{t}/no"), "folders were created")


def case_trailing_slash_must_exist(t):
    r = run([write(f"{t}/src", "x"), f"{t}/new/"])
    check_refused(r, "must exist")
    check(not os.path.exists(f"{t}/new"), "created")


def case_dest_rules(t):
    os.makedirs(f"{t}/tree/inner")
    with open(f"{t}/tree/inner/f", "w") as f:
        f.write("f")
    with open(f"{t}/a", "w") as f:
        f.write("a")
    os.mkdir(f"{t}/out")
    check(run([f"{t}/a", f"{t}/out"]).returncode == 0, "into folder")
    check(open(f"{t}/out/a").read() == "a", "into folder: wrong place")
    check(run([f"{t}/a", f"{t}/out/renamed"]).returncode == 0, "as new name")
    check(open(f"{t}/out/renamed").read() == "a", "as new name: wrong place")
    check(run([f"{t}/tree", f"{t}/out"]).returncode == 0, "folder without -r")
    check(open(f"{t}/out/tree/inner/f").read() == "f", "folder copied recursively")
    r = run([f"{t}/a", f"{t}/tree", f"{t}/out/a"])
    check(r.returncode == 1 and "several sources" in r.stderr, f"several sources into a file: {r.stderr!r}")


def case_usage_errors(t):
    check(run([]).returncode == 2, "no arguments")
    check(run([f"{t}/only-one"]).returncode == 2, "one argument")
    r = run(["--no-such-option", "a", "b"])
    check(r.returncode == 2, f"unknown option: exit {r.returncode}")
    r = run(["--overwrite", "--skip-existing", "a", "b"])
    check(r.returncode == 2, "exclusive options together")


def case_network_urls(t):
    """A network URL (what Dolphin shows for a share) is refused in one line that says how to copy there safely;
    nothing is made of it: no folder called "smb:", no destination. A local folder of that spelling is a path."""
    with open(f"{t}/a.txt", "w") as f:
        f.write("a")
    for args in (["smb://nas/photos", f"{t}/dest"], [f"{t}/a.txt", "sftp://me@box/home/me/"]):
        r = run(args, cwd=t)
        check(r.returncode == 2, f"{args}: exit {r.returncode}: {r.stderr!r}")
        url = next(a for a in args if "://" in a)
        check(f"{url} is a network address" in r.stderr and "mount" in r.stderr and "kio-fuse" in r.stderr,
              f"{args}: {r.stderr!r}")
        check(len(r.stderr.strip().splitlines()) == 1, f"{args}: one line: {r.stderr!r}")
        check(sorted(os.listdir(t)) == ["a.txt"], f"{args}: left {sorted(os.listdir(t))}")
    os.makedirs(f"{t}/smb:/nas")
    with open(f"{t}/smb:/nas/b.txt", "w") as f:
        f.write("b")
    r = run(["smb://nas", f"{t}/dest"], cwd=t)
    check(r.returncode == 0 and os.path.exists(f"{t}/dest/b.txt"),
          f"a local smb: folder: exit {r.returncode}: {r.stderr!r}")


def case_help(t):
    """--help reads the same with every CLI11 from Debian 12's 2.1 to 2.4 and later: the real usage line, the
    exit codes, and none of the parser's annotations."""
    r = run(["--help"])
    check(r.returncode == 0, f"--help exit {r.returncode}: {r.stderr!r}")
    check("Usage: sanecp [OPTIONS] SOURCE... DEST" in r.stdout, f"usage line: {r.stdout!r}")
    check("Exit codes:" in r.stdout, "no exit codes in --help")
    check("--manifest[=FILE]" in r.stdout and "--check MANIFEST" in r.stdout, f"manifest options: {r.stdout!r}")
    for noise in ("TEXT", "REQUIRED", "Excludes", "{}"):
        check(noise not in r.stdout, f"--help shows parser noise {noise!r}: {r.stdout!r}")
    r = run(["--probe", "/"])
    check(r.returncode == 0, f"--probe exit {r.returncode}: {r.stderr!r}")
    dev = json.loads(r.stdout)
    check(dev["type"] == "device" and dev["mount_point"] == "/" and dev["fs_type"], f"--probe /: {dev}")
    check(run(["--probe", "/", "extra"]).returncode == 2, "--probe with paths is a usage error")
    r = run(["--version"])
    check(r.returncode == 0 and r.stdout.startswith("sanecp "), f"--version: {r.returncode} {r.stdout!r}")


def case_quiet_without_tty(t):
    with open(f"{t}/src", "wb") as f:
        f.write(os.urandom(1 << 20))
    r = run([f"{t}/src", f"{t}/dst"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    check(r.stdout == "" and r.stderr == "", f"printed: {r.stdout!r} {r.stderr!r}")


def case_json(t):
    with open(f"{t}/src", "wb") as f:
        f.write(os.urandom(3 << 20))
    os.mkdir(f"{t}/out")
    r = run(["--json", f"{t}/src", f"{t}/missing", f"{t}/out"])
    check(r.returncode == 1, f"exit {r.returncode}")
    records = [json.loads(line) for line in r.stdout.splitlines()]
    types = [rec["type"] for rec in records]
    check(types[-1] == "done", f"last record {types[-1]}")
    check("file_done" in types and "error" in types and "progress" in types, f"types {types}")
    progress = [rec for rec in records if rec["type"] == "progress"][-1]
    for key in ("total_bytes", "durable_bytes", "written_bytes", "files_done", "files_total",
                "device_bytes_per_sec", "eta_seconds"):
        check(key in progress, f"progress lacks {key}")
    check(progress["durable_bytes"] == 3 << 20 == progress["total_bytes"], f"final progress {progress}")
    check(progress["counting"] is False, f"final progress {progress}")
    err = next(rec for rec in records if rec["type"] == "error")
    check(err["source"].endswith("missing") and err["errno"] == 2, f"error record {err}")
    check(err["side"] == "source" and err["device_removed"] is False, f"error record {err}")
    check(records[-1]["ok"] is False and records[-1]["files_copied"] == 1, f"done record {records[-1]}")


def case_terminal_progress(t):
    """On a terminal: a progress bar while copying, and a closing line that says it is on the device."""
    with open(f"{t}/src", "wb") as f:
        f.write(os.urandom(8 << 20))
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(SANECP, [SANECP, f"{t}/src", f"{t}/dst"])
    out = b""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    check(os.waitstatus_to_exitcode(status) == 0, f"exit status {status}: {text!r}")
    check("safe to unplug" in text, f"output: {text!r}")


def case_odd_names(t):
    names = ["with space", "quote'\"s", "new\nline", b"latin1-\xe9".decode("utf-8", "surrogateescape"), "-dash"]
    os.mkdir(f"{t}/tree")
    for i, n in enumerate(names):
        with open(os.path.join(f"{t}/tree", n), "w") as f:
            f.write(str(i))
    os.mkdir(f"{t}/out")
    r = run([f"{t}/tree", f"{t}/out"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    for i, n in enumerate(names):
        check(open(os.path.join(f"{t}/out/tree", n)).read() == str(i), f"name {n!r}")


def case_manifest(t):
    """--manifest writes a SHA256SUMS that sha256sum -c accepts, awkward names included; --check finds a flipped
    byte and a missing file and exits 1; --manifest=FILE puts it where asked."""
    names = ["with space", "new\nline", "back\\slash", b"latin1-\xe9".decode("utf-8", "surrogateescape"), "plain"]
    os.makedirs(f"{t}/tree/sub")
    for i, n in enumerate(names):
        with open(os.path.join(f"{t}/tree/sub", n), "w") as f:
            f.write(f"file {i}\n")
    with open(f"{t}/tree/big", "wb") as f:
        f.write(os.urandom(3 << 20))
    os.mkdir(f"{t}/out")
    r = run(["--manifest", f"{t}/tree", f"{t}/out"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    manifest = f"{t}/out/SHA256SUMS"
    check(os.path.isfile(manifest), f"no manifest; stderr {r.stderr!r}")
    ok = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=f"{t}/out", capture_output=True)
    check(ok.returncode == 0, f"sha256sum -c: {ok.stdout!r} {ok.stderr!r}")
    lines = open(manifest, "rb").read().count(b"\n")
    check(lines == len(names) + 1, f"{lines} lines for {len(names) + 1} files")
    r = run(["--check", manifest])
    check(r.returncode == 0 and r.stdout.count(": OK") == len(names) + 1, f"--check: {r.returncode} {r.stdout!r}")
    # One flipped byte, one file gone.
    with open(f"{t}/out/tree/big", "r+b") as f:
        f.seek(1 << 20)
        b = f.read(1)
        f.seek(1 << 20)
        f.write(bytes([b[0] ^ 1]))
    os.unlink(os.path.join(f"{t}/out/tree/sub", "plain"))
    r = run(["--check", manifest])
    check(r.returncode == 1, f"--check after damage: exit {r.returncode}")
    check("tree/big: FAILED" in r.stdout and "tree/sub/plain: FAILED" in r.stdout, f"--check said {r.stdout!r}")
    check("2 of" in r.stderr, f"stderr {r.stderr!r}")
    check(run(["--check", manifest, f"{t}/out"]).returncode == 2, "--check with paths is a usage error")
    # A file given: the names are relative to its folder.
    os.mkdir(f"{t}/out2")
    r = run([f"--manifest={t}/out2/sums.txt", f"{t}/tree/big", f"{t}/out2"])
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr!r}")
    check(open(f"{t}/out2/sums.txt").read().endswith("  big\n"), open(f"{t}/out2/sums.txt").read())


def case_german(t):
    """LANGUAGE=de gives German in --help, in an error message from the engine and in sanecp's own lines, with the
    right plural forms ("1 Prüfsumme", "2 Prüfsummen"); without it, English ("1 checksum", "2 checksums")."""
    if not os.path.isfile(os.path.join(os.environ.get("SANECOPY_LOCALE_DIR", ""), "de/LC_MESSAGES/sanecopy.mo")):
        raise Failure(f"no German catalogue under SANECOPY_LOCALE_DIR={os.environ.get('SANECOPY_LOCALE_DIR')!r}")
    session = stick.german_session(t)
    if session is None:
        raise Skip("no German locale: none installed and no sources to make one (Debian: apt install locales; "
                   "packaging/dev.sh installs it)")
    german = dict(os.environ, **session)
    r = run(["--help"], env=german)
    check(r.returncode == 0 and "Optionen:" in r.stdout and "Diese Hilfe anzeigen und beenden" in r.stdout
          and "Aufruf: sanecp" in r.stdout, f"German --help: {r.stdout!r}")
    r = run([write(f"{t}/a", "a\n"), f"{t}/missing/b"], env=german)
    check(r.returncode == 1 and "der Zielordner existiert nicht" in r.stderr, f"German error: {r.stderr!r}")
    write(f"{t}/b", "b\n")
    for lang, env, one, two in (("de", german, "1 Prüfsumme in", "2 Prüfsummen in"),
                                ("en", dict(os.environ, LANGUAGE="", LC_ALL="C.UTF-8"), "1 checksum in",
                                 "2 checksums in")):
        for files, want in ((["a"], one), (["a", "b"], two)):
            out = f"{t}/out-{lang}-{len(files)}"
            os.mkdir(out)
            r = run(["--manifest", *[f"{t}/{f}" for f in files], out], env=env)
            check(r.returncode == 0 and want in r.stderr,
                  f"{lang}, {len(files)} file(s): want {want!r} in {r.stderr!r}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global SANECP
    ap = argparse.ArgumentParser()
    ap.add_argument("--sanecp", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    SANECP = os.path.abspath(a.sanecp)
    t = tempfile.mkdtemp(prefix="sanecp-cli-", dir="/var/tmp")
    try:
        status = stick.run_case(CASES, a.case, t, Failure, Skip)
        if status == 1:
            print("0 passed, 1 failed")
        return status
    finally:
        for root, dirs, _ in os.walk(t):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
