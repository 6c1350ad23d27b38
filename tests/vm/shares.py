# SPDX-License-Identifier: GPL-2.0-or-later
"""Network shares in the test guest: a Samba server, an NFS 4 server and sshd in a network namespace of their own,
reached over a veth pair that netem shapes like a home NAS on a decent link (100 Mbit/s, 10 ms each way). The
exported folders are on tmpfs, so the server's writes are no dirty pages: /proc/meminfo's Dirty and Writeback are
the client's alone, and the server's copy of a file is read straight from that tmpfs ("what the server has").

tests/vm/guest.py runs these scenarios after the stick's (share-big-FS and share-small-FS with FS one of cifs,
nfs4, sshfs; share-stall-cifs, share-stall-nfs4, share-drop-nfs4, share-hard-nfs4), and share-trace-FS,
share-kio-FS, share-direct-FS, share-commit-FS, share-small-2000-FS and share-drop-plain-nfs4 only when named. The
servers start once, on the first scenario that needs them.
"""
import json
import os
import re
import subprocess
import threading
import time

import guest as g

MiB = g.MiB
NS = "srv"
CLIENT_IP, SERVER_IP = "10.77.0.1", "10.77.0.2"
EXPORTS = "/srv/shares"  # tmpfs, seen by the namespace's servers and read directly by the checks
LINK = "delay 10ms rate 100mbit limit 10000"
LINK_BYTES_PER_SEC = 100e6 / 8
# The goal for a big file: this share of the link's own rate (raw TCP over the same shaped link in this guest
# reaches 92-94 %).
LINK_SHARE = 0.90
SHARES = ("cifs", "nfs4", "sshfs")
# Small files cost a share round trips per file (create, write, close, sync): over this link cp -r takes 80 ms a
# file on cifs. The suite copies 100, enough to compare tools side by side within its time.
SMALL_FILES = 100
# How far durable_bytes may lead what the server has: by rights not at all (durable means the server answered a
# sync), plus what sampling the two at slightly different times can show; in practice it never led (+0.0 MiB).
AHEAD_SLACK = 4 * MiB
STALL_SECONDS = 20
STALL_NOTICE = 10  # the CLI says the share is not responding within this many seconds of the stall

_ready = {}  # share -> its mount point, once mounted


def sh(cmd, check=True, timeout=60):
    p = subprocess.run(["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd} exited {p.returncode}: {p.stdout.strip()[-400:]}")
    return p.stdout


def in_ns(cmd, **kw):
    return sh(f"ip netns exec {NS} sh -c '{cmd}'", **kw)


def link(spec):
    """Sets both ends of the link to netem |spec|."""
    sh(f"tc qdisc change dev veth-c root netem {spec}")
    in_ns(f"tc qdisc change dev veth-s root netem {spec}")


def network():
    if os.path.exists(f"/run/netns/{NS}"):
        return
    sh("modprobe -a veth sch_netem cifs nfs nfsv4 nfsd fuse")
    sh(f"ip netns add {NS}")
    sh(f"ip link add veth-c type veth peer name veth-s && ip link set veth-s netns {NS}")
    sh(f"ip addr add {CLIENT_IP}/24 dev veth-c && ip link set veth-c up && ip link set lo up")
    in_ns(f"ip addr add {SERVER_IP}/24 dev veth-s && ip link set veth-s up && ip link set lo up")
    sh(f"tc qdisc add dev veth-c root netem {LINK}")
    in_ns(f"tc qdisc add dev veth-s root netem {LINK}")
    os.makedirs(EXPORTS, exist_ok=True)
    sh(f"mountpoint -q {EXPORTS} || mount -t tmpfs -o size=1200m tmpfs {EXPORTS}")
    for name in ("smb", "nfs", "ssh"):
        os.makedirs(f"{EXPORTS}/{name}", exist_ok=True)
        os.chmod(f"{EXPORTS}/{name}", 0o777)


def start_samba():
    with open("/etc/samba/smb.conf", "w") as f:
        f.write("[global]\n  server role = standalone server\n  map to guest = Bad User\n  smb ports = 445\n"
                f"  interfaces = {SERVER_IP}/24\n  bind interfaces only = yes\n  disable netbios = yes\n"
                "  load printers = no\n  log level = 0\n"
                f"[share]\n  path = {EXPORTS}/smb\n  guest ok = yes\n  read only = no\n  force user = root\n")
    in_ns("smbd -D --no-process-group")
    return f"mount -t cifs //{SERVER_IP}/share {{mnt}} -o guest,vers=3.1.1"


def start_nfs():
    with open("/etc/exports", "w") as f:
        f.write(f"{EXPORTS}/nfs {CLIENT_IP}(rw,sync,no_subtree_check,no_root_squash,fsid=0)\n")
    # A fresh NFS 4 server refuses new opens through its grace period (90 s by default): the shortest is 10 s.
    in_ns("mount -t nfsd nfsd /proc/fs/nfsd && echo 10 >/proc/fs/nfsd/nfsv4gracetime && "
          "echo 10 >/proc/fs/nfsd/nfsv4leasetime && mkdir -p /run/rpcbind /var/lib/nfs/v4recovery && "
          "rpcbind -w && exportfs -ra && rpc.nfsd -N 3 8 && rpc.mountd -N 3")
    return f"mount -t nfs4 -o soft,timeo=100 {SERVER_IP}:/ {{mnt}}"


def start_sshd():
    sh("mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && ssh-keygen -A >/dev/null && "
       "{ [ -f /root/.ssh/id_ed25519 ] || ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519; } && "
       "cp /root/.ssh/id_ed25519.pub /root/.ssh/authorized_keys")
    in_ns(f"/usr/sbin/sshd -o ListenAddress={SERVER_IP} -o PermitRootLogin=prohibit-password -o UsePAM=no")
    return (f"sshfs root@{SERVER_IP}:{EXPORTS}/ssh {{mnt}} -o IdentityFile=/root/.ssh/id_ed25519,"
            "StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null")


def share(name):
    """The mount point of share |name|, its server started and mounted on first use. The client's mount waits
    until a file can be created there (NFS's grace period)."""
    if name in _ready:
        return _ready[name]
    network()
    mount = {"cifs": start_samba, "nfs4": start_nfs, "sshfs": start_sshd}[name]()
    mnt = f"/mnt/{name}"
    os.makedirs(mnt, exist_ok=True)
    deadline = time.monotonic() + 60
    while True:
        p = subprocess.run(["timeout", "30", "sh", "-c", mount.format(mnt=mnt)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(2)
    if p.returncode != 0:
        raise RuntimeError(f"mounting {name}: {p.stdout.strip()[-300:]}")
    probe = os.path.join(mnt, ".ready")
    while time.monotonic() < deadline:
        try:
            with open(probe, "w") as f:
                f.write("x")
            os.unlink(probe)
            break
        except OSError:
            time.sleep(1)
    _ready[name] = mnt
    return mnt


def server_folder(name):
    return f"{EXPORTS}/{ {'cifs': 'smb', 'nfs4': 'nfs', 'sshfs': 'ssh'}[name]}"


def server_bytes(name):
    total = 0
    for root, _, files in os.walk(server_folder(name)):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def client_dirty():
    fields = {}
    for line in open("/proc/meminfo"):
        key, _, rest = line.partition(":")
        fields[key] = int(rest.split()[0]) * 1024
    return fields.get("Dirty", 0) + fields.get("Writeback", 0) + fields.get("NFS_Unstable", 0)


class DirtySampler(g.Sampler):
    def sample(self):
        self.peak = max(self.peak, client_dirty())


class LinkTimeline(g.Polling):
    """What the client's end of the link sent while a tool ran, every 20 ms: where a big file's time went. Startup
    is the time to the first 64 KiB sent, the tail the time from the last bytes sent to the tool's exit, and idle
    the 20 ms slots in between that carried less than a fifth of the link's rate (a sync waiting out a round trip
    with nothing else in flight).

    Its start reads TCP's counters (below) in five processes, a tenth of a second or more on the guest's emulated
    CPU (printed with the counters): a tool's clock starts once the timeline runs, or the tool's start would hold
    the harness's as well."""

    SLOT = 0.02
    interval = SLOT
    # TCP's own account of the run, beside the timeline: the client's retransmissions and retransmission timeouts
    # (a stretch of idle slots after a loss), and the server's zero windows (its reader fell behind).
    CLIENT_TCP = ("TcpRetransSegs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes")
    SERVER_TCP = ("TcpExtTCPToZeroWindowAdv",)

    def __init__(self):
        super().__init__()
        self.samples = []
        self.tcp_before = {}
        self.counters_seconds = 0.0

    @staticmethod
    def tcp_counters():
        """The TCP counters named above, client's and server's, as nstat reads them (absolute, zeros too)."""
        counters = {}
        for where, names, read in (("client", LinkTimeline.CLIENT_TCP, sh), ("server", LinkTimeline.SERVER_TCP, in_ns)):
            try:
                out = read("nstat -asz", check=False)
            except (OSError, subprocess.SubprocessError):
                continue
            for line in out.splitlines():
                fields = line.split()
                if len(fields) >= 2 and fields[0] in names and fields[1].isdigit():
                    counters[f"{where} {fields[0]}"] = int(fields[1])
        return counters

    def __enter__(self):
        began = time.monotonic()
        self.tcp_before = self.tcp_counters()
        self.counters_seconds = time.monotonic() - began
        return super().__enter__()

    def tcp_summary(self):
        after = self.tcp_counters()
        moved = [f"{k} +{after[k] - v}" for k, v in self.tcp_before.items() if k in after and after[k] != v]
        return "TCP: " + (", ".join(moved) if moved else "no retransmissions, timeouts or zero windows")

    @staticmethod
    def sent():
        with open("/sys/class/net/veth-c/statistics/tx_bytes") as f:
            return int(f.read())

    def sample(self):
        self.samples.append((time.monotonic(), self.sent()))

    def summary(self, t0, t_end):
        if len(self.samples) < 2:
            return "no samples"
        base = self.samples[0][1]
        moving = [(t, b - base) for t, b in self.samples if b - base >= 64 * 1024]
        if not moving:
            return "nothing sent"
        total = self.samples[-1][1] - base
        last = next(t for t, b in self.samples if b - base >= total - 64 * 1024)
        first = moving[0][0]
        stretches = []  # [start, end] of idle slots next to each other
        for (ta, ba), (tb, bb) in zip(self.samples, self.samples[1:]):
            if first <= ta and tb <= last and (bb - ba) < 0.2 * LINK_BYTES_PER_SEC * (tb - ta):
                if stretches and stretches[-1][1] >= ta - 1e-6:
                    stretches[-1][1] = tb
                else:
                    stretches.append([ta, tb])
        idle = sum(b - a for a, b in stretches)
        longest = sorted(stretches, key=lambda s: s[0] - s[1])[:8]
        where = ", ".join(f"{a - t0:.1f}+{b - a:.2f}" for a, b in sorted(longest))
        return (f"startup {first - t0:.2f} s, sending {last - first:.2f} s ({idle:.2f} s of it idle in "
                f"{len(stretches)} stretches; the longest at {where}), tail {t_end - last:.2f} s, "
                f"{total / MiB:.1f} MiB on the wire; {self.tcp_summary()} (read in {self.counters_seconds:.2f} s "
                "before the clock started)")


def clear(name):
    """Empties the share on the server's side: through the client each removal is a round trip or more (2000 files
    took over a minute on cifs). The callers drop the client's caches next, so it looks again."""
    share(name)
    folder = server_folder(name)
    for entry in os.listdir(folder):
        sh(f"rm -rf '{folder}/{entry}'")


def timed(name, cmd):
    """A plain tool onto share |name|, then sync: (seconds, peak dirty)."""
    clear(name)
    g.drop_caches()
    with DirtySampler() as s, LinkTimeline() as line:
        t0 = time.monotonic()  # LinkTimeline's own start is not the tool's
        g.run(cmd)
        g.run(["sync", "-f", share(name)])
        secs = time.monotonic() - t0
    g.diag(f"{name}: {os.path.basename(cmd[0])}: {line.summary(t0, t0 + secs)}")
    return secs, s.peak


def sanecp(name, src, on_record=None, lead_check=True):
    """sanecp --json onto share |name|: (rc, seconds, peak dirty, worst lead over the server, records, stderr).
    |on_record|(record, time.monotonic() when it came) sees each record as it comes. The lead is measured at each
    progress record by walking the server's folder, on the guest's CPU beside sanecp (a lstat of every file, ten
    times a second): without |lead_check| it is not, and the lead returned is None."""
    clear(name)
    g.drop_caches()
    lead = {"worst": -1 << 62}

    def check(rec, at):
        if lead_check and rec.get("type") == "progress":
            lead["worst"] = max(lead["worst"], rec["durable_bytes"] - server_bytes(name))
        if on_record:
            on_record(rec, at)

    with DirtySampler() as s, LinkTimeline() as line:
        t0 = time.monotonic()  # LinkTimeline's own start is not the tool's
        rc, records, err = g.json_run(["sanecp", "--json", src, share(name) + "/"], check)
        seconds = time.monotonic() - t0
    g.diag(f"{name}: sanecp: {line.summary(t0, t0 + seconds)}")
    if not lead_check:
        lead["worst"] = None
    elif not any(r.get("type") == "progress" for r in records):
        lead["worst"] = 1 << 62  # no record: nothing was shown to be honest
    return rc, seconds, s.peak, lead["worst"], records, err


def scenario_big(name):
    """The big file onto the share: sanecp (against cp + sync and dd oflag=direct, side by side, with "compare")."""
    src = g.checked_source()
    mnt = share(name)
    cp = cp_peak = dd = best = None
    if g.COMPARE:
        cp, cp_peak = timed(name, ["cp", src, f"{mnt}/cp.bin"])
        try:
            dd, _ = timed(name, ["dd", f"if={src}", f"of={mnt}/dd.bin", "bs=4M", "oflag=direct", "status=none"])
        except RuntimeError as e:  # sshfs (FUSE without direct_io) refuses O_DIRECT
            g.diag(f"{name}: dd oflag=direct: {e}")
            dd = float("inf")
        best = min(cp, dd)
    rc, secs, peak, ahead, records, err = sanecp(name, src)
    link_secs = os.path.getsize(src) / LINK_BYTES_PER_SEC
    g.diag(f"{name}: {os.path.getsize(src) // MiB} MiB: "
           f"cp + sync {g.seconds_text(cp)} (peak {(cp_peak or 0) / MiB:.1f} MiB), "
           f"dd oflag=direct {g.seconds_text(dd)}, sanecp {secs:.2f} s = {link_secs / secs:.1%} of the link, "
           f"{g.ratio_text(secs, best)} the better, peak {peak / MiB:.1f} MiB, lead {ahead / MiB:+.1f} MiB")
    g.tap(rc == 0, f"{name}: big file: sanecp exits 0", err.strip()[:200])
    g.tap(g.identical(src, f"{server_folder(name)}/big.bin"),
          f"{name}: big file: byte-identical on the server")
    # A known gap (#24), run and printed as TODO: sshfs (chunks of up to 2 s by O_DIRECT, each synced by an fsync
    # that holds the file until every write before it is answered) came out at 0.998-1.109x dd since its windows
    # count as they are synced (1.16-1.24x before), dd's own time spreading by 20 % here, and moves a third of the
    # link whoever writes. cifs and NFS reach 91 % of the link (raw TCP 92-94 %), and that is checked.
    if g.COMPARE:
        g.tap(secs <= g.BIG_RATIO * (1 + g.NOISE) * best,
              f"{name}: big file: time to durable <= 1.0x the better of cp + sync and dd (+{g.NOISE:.0%} noise)",
              f"{secs:.2f} s against {best:.2f} s", todo="#24" if name == "sshfs" else "")
        g.tap(link_secs / secs >= LINK_SHARE, f"{name}: big file: >= {LINK_SHARE:.0%} of the link's rate",
              f"{link_secs / secs:.1%}", todo="#24" if name == "sshfs" else "")
    g.tap(peak <= g.DIRTY_BOUND, f"{name}: big file: peak dirty + writeback <= 32 MiB", f"{peak / MiB:.1f} MiB")
    g.tap(ahead <= AHEAD_SLACK, f"{name}: big file: durable_bytes never ahead of what the server has",
          f"worst {ahead / MiB:+.1f} MiB over {sum(r.get('type') == 'progress' for r in records)} records")
    return {"fs": name, "bytes": os.path.getsize(src), "dd": dd, "cp": cp, "sanecp": secs,
            "ratio": best and secs / best, "link": link_secs / secs,
            "peak": peak, "cp_peak": cp_peak}


def scenario_small(name, files=SMALL_FILES):
    """|files| small files onto the share: sanecp (against cp -r + sync, with "compare"). The suite copies
    SMALL_FILES; share-small-2000-FS, only when named, the 2000 files the sticks get (cp -r alone takes minutes)."""
    tree = g.small_tree(files)
    mnt = share(name)
    cp, cp_peak = timed(name, ["cp", "-r", tree, f"{mnt}/cp"]) if g.COMPARE else (None, None)
    rc, secs, peak, _, _, err = sanecp(name, tree, lead_check=False)
    g.diag(f"{name}: {files} small files: cp -r + sync {g.seconds_text(cp)} (peak {(cp_peak or 0) / MiB:.1f} "
           f"MiB), sanecp {secs:.2f} s = {g.ratio_text(secs, cp)}, peak {peak / MiB:.1f} MiB")
    what = f"{name}: small files" if files == SMALL_FILES else f"{name}: {files} small files"
    g.tap(rc == 0, f"{what}: sanecp exits 0", err.strip()[:200])
    same = g.run(["diff", "-r", tree, f"{server_folder(name)}/{os.path.basename(tree)}"],
                 check=False).returncode == 0
    g.tap(same, f"{what}: every file identical on the server")
    # Each file created, written and settled on the settle threads, two groups at a time: 100 files took 0.63x
    # cp -r + sync onto cifs, 0.41x onto nfs4, 0.61x onto sshfs (1.03x, 0.76x and 1.25x while the job's thread
    # created them one after another).
    if g.COMPARE:
        g.tap(secs <= (1 + g.NOISE) * cp, f"{what}: <= 1.0x cp -r + sync (+{g.NOISE:.0%} noise)",
              f"{secs / cp:.3f}x")
    return {"fs": name, "cp": cp, "sanecp": secs, "ratio": cp and secs / cp, "peak": peak}


def scenario_trace(name, files=SMALL_FILES):
    """Where sanecp's time goes copying the small files onto the share: strace's wall-clock summary per system
    call, all threads summed (threads that wait side by side count each). Only when named (share-trace-FS): it
    explains a slow share-small-FS and checks nothing. share-trace-2000-FS: the 2000 files of share-small-2000-FS
    (100 a folder, where the suite's tree has 5), and nothing of the big file."""
    tree = g.small_tree(files)
    clear(name)
    g.drop_caches()
    out = "/tmp/strace-small.txt"
    # Under a name not used before: sshfs's own cache would still know the one just cleared on the server.
    again = f"{share(name)}/strace-{int(time.monotonic())}"
    g.run(["strace", "-f", "-c", "-w", "-o", out, "sanecp", tree, again], check=False, timeout=600)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    g.diag(f"{name}: small files: strace -f -c -w of sanecp (seconds summed over threads):")
    for line in lines[:18]:
        g.diag("  " + line)
    if files != SMALL_FILES:
        return
    # And the big file's start: every call up to its first bytes, with its thread, time of day and duration.
    clear(name)
    g.drop_caches()
    g.run(["strace", "-f", "-tt", "-T", "-o", out, "sanecp", g.big_source(), f"{share(name)}/"], check=False,
          timeout=600)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    first = next((i for i, l in enumerate(lines) if "sendfile(" in l or "pwrite64(" in l), len(lines))
    g.diag(f"{name}: big file: the {first} calls before the first bytes (thread, time, call, result <seconds>):")
    for line in lines[:first + 1]:
        g.diag("  " + (line[:70] + " ... " + line[-40:] if len(line) > 120 else line))
    # And the big file's data: each read, write and sync with its time of day and how long it took, so the link's
    # idle stretches (LinkTimeline) can be laid beside what the copy was doing then.
    clear(name)
    g.drop_caches()
    calls = ("pread64,pwrite64,sendfile,copy_file_range,fdatasync,fsync,msync,syncfs,sync_file_range,fadvise64,"
             "renameat2,renameat,close").split(",")
    # Under a name not used before, as above.
    again = f"{share(name)}/trace-{int(time.monotonic())}"
    os.makedirs(again, exist_ok=True)
    g.run(["strace", "-f", "-tt", "-T", "-o", out, "sanecp", g.big_source(), f"{again}/"], check=False, timeout=600)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    # The data calls, and every call from the last one on (the file's end: attributes, syncs, rename).
    last = max((i for i, l in enumerate(lines) if "sendfile(" in l or "pwrite64(" in l), default=len(lines))
    g.diag(f"{name}: big file: the data calls, then every call from the last data on (thread, time, call, result "
           "<seconds>):")
    for i, line in enumerate(lines):
        if i >= last or "resumed>" in line or "unfinished" in line or any(f"{c}(" in line for c in calls):
            g.diag("  " + line[:40] + " ... " + line[-40:] if len(line) > 90 else "  " + line)


def scenario_direct(name):
    """How fast plain O_DIRECT writes reach the share, one stream against several side by side: dd oflag=direct in
    4 MiB writes (what "compare" runs), in 1 MiB writes (no larger than an NFS client's WRITE, so each can go as
    a stable write, committed by the server before it answers), and 2 and 4 dd each writing its own part of the
    file in 1 MiB writes. Only when named (share-direct-FS): it measures what a copier writing that way could
    reach, and checks nothing."""
    src = g.big_source()
    size = os.path.getsize(src)
    mnt = share(name)
    link_secs = size / LINK_BYTES_PER_SEC
    for label, cmd in (("dd bs=4M", ["dd", f"if={src}", f"of={mnt}/d.bin", "bs=4M", "oflag=direct", "status=none"]),
                       ("dd bs=1M", ["dd", f"if={src}", f"of={mnt}/d.bin", "bs=1M", "oflag=direct", "status=none"])):
        secs, _ = timed(name, cmd)
        g.diag(f"{name}: direct: {label}: {secs:.2f} s = {link_secs / secs:.1%} of the link, identical "
               f"{g.identical(src, f'{server_folder(name)}/d.bin')}")
    mib = size // MiB
    for ways in (2, 4):
        part = -(-mib // ways)
        script = " ".join(f"dd if={src} of={mnt}/d.bin bs=1M oflag=direct conv=notrunc status=none skip={i * part} "
                          f"seek={i * part} count={part} &" for i in range(ways)) + " wait"
        secs, _ = timed(name, ["sh", "-c", script])
        g.diag(f"{name}: direct: {ways} x dd bs=1M side by side: {secs:.2f} s = {link_secs / secs:.1%} of the link, "
               f"identical {g.identical(src, f'{server_folder(name)}/d.bin')}")


def scenario_commit(name):
    """Whether a window of a file written onto the share can be known durable sooner than a sync of its range says:
    tests/vm/commit_probe.py writes the big file as sanecp does, once waiting for each window's msync, once
    dropping the oldest windows' pages and counting what is left (the NFS client keeps a page until a COMMIT
    covering it has come back), and sanecp beside them. Only when named (share-commit-FS): it checks nothing."""
    src = g.big_source()
    size = os.path.getsize(src)
    mnt = share(name)
    link_secs = size / LINK_BYTES_PER_SEC
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "commit_probe.py")
    for mode in ("msync", "evict", "msync", "evict"):
        clear(name)
        g.drop_caches()
        with DirtySampler() as s, LinkTimeline() as line:
            t0 = time.monotonic()  # LinkTimeline's own start is not the tool's
            out = g.run(["python3", probe, mode, src, f"{mnt}/p.bin"]).stdout.strip()
            secs = time.monotonic() - t0
        g.diag(f"{name}: commit: {mode}: {line.summary(t0, t0 + secs)}")
        g.diag(f"{name}: commit: {mode}: {secs:.2f} s = {link_secs / secs:.1%} of the link, peak "
               f"{s.peak / MiB:.1f} MiB, identical {g.identical(src, f'{server_folder(name)}/p.bin')}; {out}")
    rc, secs, peak, ahead, _, _ = sanecp(name, src)
    g.diag(f"{name}: commit: sanecp: rc {rc}, {secs:.2f} s = {link_secs / secs:.1%} of the link, peak "
           f"{peak / MiB:.1f} MiB, lead {ahead / MiB:+.1f} MiB")


def scenario_kio(name):
    """The small-file tree dropped through the KIO worker (kioclient copy onto sanecopy://MOUNT/, as root, who may
    write the share), beside sanecp's time for the same tree. Only when named (share-kio-FS): it checks the copy
    and prints the times."""
    tree = g.small_tree(SMALL_FILES)
    rc, secs, _, _, _, _ = sanecp(name, tree, lead_check=False)
    clear(name)
    g.drop_caches()
    runtime = "/tmp/kio-root-runtime"
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    # Under a name not used before: sshfs's own cache would still know the one just cleared on the server.
    dest = f"kio-{int(time.monotonic())}"
    t0 = time.monotonic()
    p = g.run(["kioclient", "--noninteractive", "copy", f"file://{tree}", f"sanecopy://{share(name)}/{dest}"],
              check=False, env=dict(g.KIO_ENV, XDG_RUNTIME_DIR=runtime), timeout=900)
    kio = time.monotonic() - t0
    g.diag(f"{name}: {SMALL_FILES} small files: through kioclient and the worker {kio:.2f} s, sanecp {secs:.2f} s "
           f"(exit {rc})")
    g.tap(p.returncode == 0, f"{name}: small files through the KIO worker: kioclient exits 0", p.stderr.strip()[-300:])
    same = g.run(["diff", "-r", tree, f"{server_folder(name)}/{dest}"], check=False).returncode == 0
    g.tap(same, f"{name}: small files through the KIO worker: every file identical on the server")


def scenario_stall(name):
    """The link stops carrying anything for STALL_SECONDS (netem 100 % loss both ways) while sanecp copies the big
    file, then comes back: the copy says within STALL_NOTICE seconds that the share is not responding, says it no
    more once the link is back, and completes with the file identical."""
    src = g.checked_source()
    share(name)
    state = {"stalled_at": None, "restored_at": None, "noticed": None, "after": []}
    moving = threading.Event()
    # Cut once a quarter of the file is handed to the share: mid-copy, however late the server's first answers
    # come, with half of it or more left to show the copy moving again once the link is back. (Cut 2 s after the
    # first durable bytes, as before, an NFS copy whose commits came late had 0.8 s of sending left once TCP's
    # backed-off timer let it go on after the link returned: no record of the copy moving again before its end.)
    cut_at = os.path.getsize(src) // 4

    def stall():  # times on one clock: monotonic
        moving.wait(60)
        link(f"{LINK} loss 100%")
        state["stalled_at"] = time.monotonic()
        time.sleep(STALL_SECONDS)
        link(LINK)
        state["restored_at"] = time.monotonic()

    def watch(rec, at):
        if rec.get("type") == "progress" and rec.get("written_bytes", 0) >= cut_at:
            moving.set()
        if rec.get("type") == "progress":
            state.setdefault("seen", []).append((at, rec))
        if rec.get("type") != "progress" or state["stalled_at"] is None:
            return
        if rec.get("stalled_seconds", 0) > 0 and state["noticed"] is None and state["restored_at"] is None:
            state["noticed"] = at
        if state["restored_at"] is not None and rec.get("state") == "running":  # a finished job is never stalled
            state["after"].append(rec.get("stalled_seconds", 0))

    staller = threading.Thread(target=stall, daemon=True)
    staller.start()
    try:
        rc, secs, _, _, records, err = sanecp(name, src, watch)
    finally:
        staller.join()
        link(LINK)
    stalled_at = state["stalled_at"] or 0
    noticed = state["noticed"]
    g.diag(f"{name}: stall for {STALL_SECONDS} s; sanecp said so "
           f"{'never' if noticed is None else f'{noticed - stalled_at:.1f} s after it began'}; done after {secs:.1f} s")
    if rc != 0 or not os.path.exists(f"{server_folder(name)}/big.bin"):
        g.diag(f"{name}: stall: sanecp exited {rc}; its last records: "
               + "; ".join(json.dumps(r) for r in [r for r in records if r.get("type") != "progress"][-4:]))
    g.tap(rc == 0, f"{name}: stall: the copy completes once the link is back", err.strip()[:200])
    g.tap(g.identical(src, f"{server_folder(name)}/big.bin"),
          f"{name}: stall: byte-identical on the server")
    if noticed is None or noticed - stalled_at > STALL_NOTICE:
        # What moved after the cut, and when: a late notice means something still counted as motion. The records
        # carry the bytes and files; a beat (a file created, a group settled) shows only as their absence here.
        g.diag(f"{name}: stall: the records from 2 s before the cut (time since it, durable MiB, written MiB, "
               "stalled s, files done): " + "; ".join(
                   f"{at - stalled_at:+.1f} {r.get('durable_bytes', 0) / MiB:.1f} "
                   f"{r.get('written_bytes', 0) / MiB:.1f} {r.get('stalled_seconds', 0):.1f} {r.get('files_done', 0)}"
                   for at, r in state.get("seen", []) if -2 <= at - stalled_at <= STALL_SECONDS))
    g.tap(noticed is not None and noticed - stalled_at <= STALL_NOTICE,
          f"{name}: stall: sanecp says the share is not responding within {STALL_NOTICE} s",
          "never" if noticed is None else f"after {noticed - stalled_at:.1f} s")
    # TCP's retransmission timer has backed off to several seconds by then: the copy may take that long to move
    # again, so what counts is that the notice goes once it moves, before the copy ends.
    after = state["after"]
    g.tap(bool(after) and after[-1] == 0, f"{name}: stall: and no more once the copy moves again",
          f"{len(after)} records after the link came back, {sum(1 for s in after if s)} of them still stalled")


# The drop scenario's own mount of the NFS export: soft, giving up after 3 s and one retransmission (6 s more),
# so the scenario is short (a shorter timeo=10 made it longer, 83 s from the cut to the exit against 60 s: the
# client's reconnects to the gone server, not the RPC timeouts, take most of that time); the server's grace for
# the lost client is the lease time set in start_nfs.
DROP_MOUNT = "/mnt/nfs4-drop"
DROP_OPTIONS = "soft,timeo=30,retrans=1"
# Seconds from the cut to sanecp's exit: the mount's own give-up (the failed sync's EIO came 30-54 s after the cut)
# and the job's last syncfs, not the part file's close (60-87 s while sanecp waited for it).
DROP_LIMIT = 75


def scenario_drop(trace=False):
    """The link goes for good mid-copy on a soft NFS mount: sanecp ends with a message naming the share instead of
    hanging, the part file stays on the server; with the link back, the same command resumes and finishes. With
    |trace| (share-drop-trace-nfs4, only when named), sanecp runs under strace, and every call that took a second
    or more is printed: where the time from the cut to the exit goes."""
    src = g.big_source()
    out = "/tmp/strace-drop.txt"
    share("nfs4")
    os.makedirs(DROP_MOUNT, exist_ok=True)
    sh(f"timeout 30 mount -t nfs4 -o {DROP_OPTIONS} {SERVER_IP}:/ {DROP_MOUNT}")
    try:
        clear("nfs4")
        g.drop_caches()
        cmd = ["sanecp", "--json", src, DROP_MOUNT + "/"]
        if trace:
            cmd = ["strace", "-f", "-tt", "-T", "-o", out] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        err = []
        reader = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
        reader.start()
        killer = threading.Timer(DROP_LIMIT + 60, p.kill)  # a hang fails the checks below, not the whole suite
        killer.start()
        cut = said_at = None
        # Past the first resume point (5 s of copying): then the part file has a verified prefix to go on from.
        for line in p.stdout:
            rec = json.loads(line)
            if cut is None and rec.get("type") == "progress" and rec["durable_bytes"] >= 64 * MiB:
                link(f"{LINK} loss 100%")
                cut = time.monotonic()
            if said_at is None and rec.get("type") == "error":
                said_at = time.monotonic()
        rc = p.wait()
        gave_up = time.monotonic() - (cut or time.monotonic())
        killer.cancel()
        reader.join()
        link(LINK)
        said = "".join(err)
        g.diag(f"nfs4: drop: cut at 64 MiB; sanecp exited {rc} {gave_up:.1f} s later"
               + (f", its first error came after {said_at - cut:.1f} s" if said_at and cut else "")
               + f": {said.strip()[-300:]}")
        if trace:
            g.diag(f"nfs4: drop: the cut at {time.strftime('%H:%M:%S', time.localtime(time.time() - gave_up))}; "
                   "sanecp's calls of a second or more (thread, time, call, result <seconds>):")
            for line in open(out).read().splitlines() if os.path.exists(out) else []:
                took = re.search(r"<(\d+\.\d+)>$", line)
                if took and float(took.group(1)) >= 1.0:
                    g.diag("  " + (line[:70] + " ... " + line[-50:] if len(line) > 130 else line))
        g.tap(cut is not None and rc == 1, "nfs4: drop: sanecp stops with exit code 1", f"exit {rc}")
        g.tap(gave_up <= DROP_LIMIT, f"nfs4: drop: within {DROP_LIMIT} s of the cut, not a hang", f"{gave_up:.1f} s")
        g.tap(f"the share at {DROP_MOUNT} stopped answering" in said, "nfs4: drop: the message names the share")
        folder = server_folder("nfs4")
        part = os.path.join(folder, ".big.bin.part")
        kept = os.path.getsize(part) if os.path.exists(part) else 0
        g.tap(kept >= 16 * MiB, "nfs4: drop: the part file stays on the server", f"{kept / MiB:.1f} MiB")
        g.tap(not os.path.exists(f"{folder}/big.bin"), "nfs4: drop: no half file under the real name")
        again = g.run(["sanecp", src, DROP_MOUNT + "/"], check=False, timeout=300)
        said = again.stdout + again.stderr
        g.tap(again.returncode == 0, "nfs4: drop: the same command again exits 0", again.stderr.strip()[-200:])
        g.tap("resumed after" in said, "nfs4: drop: it resumed from the part file",
              next((l for l in said.splitlines() if "resumed" in l), "")[:200])
        g.tap(g.identical(src, f"{folder}/big.bin"), "nfs4: drop: byte-identical on the server")
        g.tap(not [n for n in os.listdir(folder) if n.endswith(".part")], "nfs4: drop: no part file left")
    finally:
        link(LINK)
        sh(f"umount -f {DROP_MOUNT} || umount -l {DROP_MOUNT}", check=False)


def scenario_drop_plain():
    """What the same cut costs the plain tools on the same soft mount: dd oflag=direct (each write waits for the
    server) and cp + sync, the link cut once the server holds 64 MiB of their file, timed to their exit. The kernel's
    own give-up time, beside sanecp's in share-drop-nfs4. Only when named (share-drop-plain-nfs4): it prints the
    times and checks only that each tool stopped, with an error, before DROP_LIMIT + 60 s."""
    src = g.big_source()
    share("nfs4")
    os.makedirs(DROP_MOUNT, exist_ok=True)
    sh(f"timeout 30 mount -t nfs4 -o {DROP_OPTIONS} {SERVER_IP}:/ {DROP_MOUNT}")
    tools = {"dd oflag=direct": ["dd", f"if={src}", f"of={DROP_MOUNT}/dd.bin", "bs=4M", "oflag=direct", "status=none"],
             "cp + sync": ["sh", "-c", f"cp {src} {DROP_MOUNT}/cp.bin && sync -f {DROP_MOUNT}/cp.bin"]}
    try:
        for tool, cmd in tools.items():
            clear("nfs4")
            g.drop_caches()
            target = f"{server_folder('nfs4')}/{'dd.bin' if tool.startswith('dd') else 'cp.bin'}"
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
            killer = threading.Timer(DROP_LIMIT + 60, p.kill)
            killer.start()
            cut = None
            while p.poll() is None:
                if cut is None and os.path.exists(target) and os.path.getsize(target) >= 64 * MiB:
                    link(f"{LINK} loss 100%")
                    cut = time.monotonic()
                time.sleep(0.05)
            gave_up = time.monotonic() - (cut or time.monotonic())
            killer.cancel()
            link(LINK)
            said = p.stderr.read().strip()
            g.diag(f"nfs4: drop: {tool}: cut at 64 MiB on the server; exited {p.returncode} {gave_up:.1f} s later: "
                   f"{said[-200:]}")
            g.tap(cut is not None and p.returncode != 0, f"nfs4: drop: {tool} stops with an error",
                  f"exit {p.returncode}, {gave_up:.1f} s after the cut")
    finally:
        link(LINK)
        sh(f"umount -f {DROP_MOUNT} || umount -l {DROP_MOUNT}", check=False)


# The window's copy onto a hard NFS mount (NFS's default: the kernel retries for ever), as the desktop's user.
HARD_MOUNT = "/mnt/nfs4-hard"
ANSWER_LIMIT = 1.0  # seconds the window may take to answer while the share does not: more is a frozen window


def scenario_hard():
    """The window copies onto a hard NFS mount and the link goes: the window keeps answering, and its row says
    the share is not responding; Cancel, pressed then, says why the copy can't stop yet (the kernel holds the
    write until the server answers); once the link is back, the copy ends cancelled with nothing half-written
    under the real name."""
    g.desktop()
    src = g.big_source()
    share("nfs4")
    os.makedirs(HARD_MOUNT, exist_ok=True)
    sh(f"timeout 30 mount -t nfs4 -o hard {SERVER_IP}:/ {HARD_MOUNT}")
    clear("nfs4")
    g.drop_caches()
    w = None
    slowest, n = 0.0, 0

    def watch(seconds, done=lambda: False):
        """Pings the window for |seconds| (or until |done|), keeping the slowest answer."""
        nonlocal slowest, n
        end = time.monotonic() + seconds
        while time.monotonic() < end and not done():
            n += 1
            slowest = max(slowest, w.answer_time(n, limit=10))
            time.sleep(0.25)

    try:
        w = g.Window()
        g.tap(g.wait_for(lambda: w.devices is not None, 60), "nfs4/hard: the window starts")
        w.send(f"copy {HARD_MOUNT}/ {src}")
        g.wait_for(lambda: w.job().get("durable", 0) >= 0.15 or w.job().get("finished"), 120)
        link(f"{LINK} loss 100%")
        cut = time.monotonic()
        watch(STALL_NOTICE, lambda: "not responding" in w.job().get("status", ""))
        said = time.monotonic() - cut
        status = w.job().get("status", "")
        g.diag(f"nfs4/hard: the row {said:.1f} s after the cut: {status}")
        g.tap("The share is not responding" in status and said <= STALL_NOTICE,
              f"nfs4/hard: the row says the share is not responding within {STALL_NOTICE} s", f"after {said:.1f} s")
        w.send("cancel")
        watch(8)
        status = w.job().get("status", "")
        g.diag(f"nfs4/hard: after Cancel, with the link still down: {status}")
        g.tap(status.startswith("Cancelling: the share has not answered"),
              "nfs4/hard: after Cancel the row says the copy stops once the share answers", status[:160])
        w.shot("share-hard-cancelling.png")
        g.tap(slowest <= ANSWER_LIMIT, f"nfs4/hard: the window answers within {ANSWER_LIMIT:.0f} s throughout",
              f"slowest {slowest:.2f} s over {n} pings; {' '.join(g.d_state())}")
        link(LINK)
        back = time.monotonic()
        ended = g.wait_for(lambda: w.job().get("finished"), 180)
        job = w.job()
        g.diag(f"nfs4/hard: the job ended {time.monotonic() - back:.1f} s after the link came back: "
               f"{job.get('state')}: {job.get('status')}")
        g.tap(ended and job.get("state") == "cancelled", "nfs4/hard: with the link back, the copy ends cancelled",
              f"{job.get('state')}")
        left = os.listdir(server_folder("nfs4"))
        g.tap(not left, "nfs4/hard: nothing half-written is left on the server", f"{left}")
    finally:
        # Each step on its own: a failing one must not leave the window or the hard mount behind.
        for step in (lambda: link(LINK), lambda: w and w.close(),
                     lambda: sh(f"umount {HARD_MOUNT} || umount -f -l {HARD_MOUNT}", check=False)):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - cleanup goes on, and says why a step failed
                g.diag(f"nfs4/hard: cleanup: {type(e).__name__}: {e}")


def bench_row(name, kind):
    """bench/bench.py --vm's row for share |name|: sanecp, dd oflag=direct (big file only), cp and rsync side by
    side, each from a cold cache and followed by a sync of the share: time to durable, the share of the link's
    rate, the client's peak dirty + writeback, and how much of the source and of the copy each left cached."""
    big = kind == "big"
    src = g.big_source() if big else g.small_tree(SMALL_FILES)
    files = [src] if big else [os.path.join(d, n) for d, _, ns in os.walk(src) for n in ns]
    size = sum(os.path.getsize(f) for f in files)
    mnt = share(name)
    base = os.path.basename(src)
    tools = {
        "sanecp": (["sanecp", src, mnt + "/"], base),
        "dd oflag=direct": (["dd", f"if={src}", f"of={mnt}/dd.bin", "bs=4M", "oflag=direct", "status=none"], "dd.bin")
        if big else None,
        "cp": (["cp", src, f"{mnt}/cp.bin"], "cp.bin") if big else (["cp", "-r", src, f"{mnt}/cp"], "cp"),
        # -rt, not -a: the shares map owners their own way, and a refused chown would make rsync exit 23.
        "rsync": (["rsync", "-rt", src, f"{mnt}/rsync.bin"], "rsync.bin") if big
        else (["rsync", "-rt", src + "/", f"{mnt}/rsync"], "rsync"),
    }
    rows = {}
    for tool, spec in tools.items():
        if spec is None:
            continue
        cmd, dest = spec
        try:
            secs, peak = timed(name, cmd)
            ok = True
        except RuntimeError as e:
            g.diag(f"bench {name} {kind}: {tool}: {e}")
            if tool == "dd oflag=direct":  # a FUSE share may refuse O_DIRECT: a row left out, not a failure
                continue
            ok, secs, peak = False, 0.0, 0
        # The cache first: comparing reads both sides into it.
        rows[tool] = {"secs": secs, "rate": size / secs if secs else 0.0, "peak": peak,
                      "src_res": g.resident([src]), "dst_res": g.resident([f"{mnt}/{dest}"])}
        on_server = f"{server_folder(name)}/{dest}"
        same = ok and g.run(["diff", "-r" if not big else "-q", src, on_server], check=False).returncode == 0
        g.tap(same, f"bench {name} {kind}: {tool} copied it")
        g.diag(f"bench {name} {kind}: {tool}: {rows[tool]}")
    return {"fs": f"{name} (share)", "kind": kind, "bytes": size, "files": len(files),
            "device_bps": LINK_BYTES_PER_SEC, "tools": rows}


def bench_steps(add):
    """bench/bench.py --vm's share rows (bench-big-cifs, bench-small-nfs4, ...), each result handed to |add|."""
    return [(f"bench-{kind}-{n}", lambda n=n, kind=kind: add(bench_row(n, kind))) for kind in ("big", "small")
            for n in SHARES]


def steps():
    """(name, step) for guest.py's list, and those run only when named."""
    out = [(f"share-big-{n}", lambda n=n: scenario_big(n)) for n in SHARES]
    out += [(f"share-small-{n}", lambda n=n: scenario_small(n)) for n in SHARES]
    out += [(f"share-stall-{n}", lambda n=n: scenario_stall(n)) for n in ("cifs", "nfs4")]
    out += [("share-drop-nfs4", scenario_drop), ("share-hard-nfs4", scenario_hard)]
    named = [(f"share-{what}-{n}", lambda n=n, f=f: f(n)) for what, f in (("trace", scenario_trace),
                                                                           ("kio", scenario_kio),
                                                                           ("direct", scenario_direct),
                                                                           ("commit", scenario_commit),
                                                                           ("small-2000", lambda n: scenario_small(
                                                                               n, g.SMALL_FILES)),
                                                                           ("trace-2000", lambda n: scenario_trace(
                                                                               n, g.SMALL_FILES))) for n in SHARES]
    return out, named + [("share-drop-plain-nfs4", scenario_drop_plain),
                         ("share-drop-trace-nfs4", lambda: scenario_drop(trace=True))]
