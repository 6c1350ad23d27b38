#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boots the USB test guest and runs tests/vm/guest.py's scenarios in it (packaging/dev.sh test-usb calls this
after it made the guest's root image).

    run.py --kernel VMLINUZ --initrd INITRD --rootfs ROOTFS.img --work DIR [--only NAME,NAME]

The guest is Debian 13's kernel under qemu's software emulation (KVM does not work here), with a usb-storage stick
on an xHCI controller, throttled to 10 MB/s and 300 write IOPS after the guest's scheduler merged its requests,
as a cheap stick counts them. The guest asks over the serial console for the stick to be pulled out or plugged
back in; this runner does it through QMP. Files it hands over (the window's screenshots) land in DIR. Prints the
guest's TAP and a closing "N passed, N failed" line; on a failure it keeps the whole console log in DIR and says where.
"""
import argparse
import base64
import json
import os
import re
import socket
import subprocess
import sys
import time

STICK_MIB = 1024
WRITE_BPS = 10_000_000
WRITE_IOPS = 300
SILENCE_LIMIT = 420   # seconds without a console line: the guest hangs
TOTAL_LIMIT = 2400


class Qmp:
    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.file = self.sock.makefile("rw")
        json.loads(self.file.readline())  # the greeting
        self.execute("qmp_capabilities")

    def execute(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.file.write(json.dumps(msg) + "\n")
        self.file.flush()
        while True:
            reply = json.loads(self.file.readline())
            if "event" in reply:
                continue
            if "error" in reply:
                raise RuntimeError(f"QMP {command}: {reply['error']}")
            return reply.get("return")


def print_table(header, rows):
    """One Markdown table as TAP comments."""
    print("# | " + " | ".join(header) + " |")
    print("# |" + "---|" * len(header))
    for row in rows:
        print("# | " + " | ".join(row) + " |")


def print_tables(table):
    """The run's figures as the Markdown tables docs/usb-vm.md keeps. The other tools' columns hold a dash when they
    did not run (no "compare" among the scenario names)."""
    mib = 1 << 20

    def secs(x):
        return "-" if x is None else f"{x:.2f} s"

    def ratio(x):
        return "-" if x is None else f"{x:.3f}x"

    def size(x):
        return "-" if x is None else f"{x / mib:.1f} MiB"

    if table.get("big"):
        print_table(["fs", "file", "dd oflag=direct", "cp + sync", "sanecp", "sanecp / better", "sanecp peak dirty",
                     "cp peak dirty"],
                    [[r["fs"], f"{r['bytes'] // mib} MiB", secs(r["dd"]), secs(r["cp"]), secs(r["sanecp"]),
                      ratio(r["ratio"]), size(r["peak"]), size(r["cp_peak"])] for r in table["big"]])
    if table.get("small"):
        print_table(["fs", "cp -r + sync", "sanecp", "sanecp / cp", "sanecp peak dirty"],
                    [[r["fs"], secs(r["cp"]), secs(r["sanecp"]), ratio(r["ratio"]), size(r["peak"])]
                     for r in table["small"]])
    if table.get("shares"):
        print("# Shares: servers in a network namespace behind netem, 100 Mbit/s and 10 ms each way (120 MiB take "
              "the link 10.07 s, 64 MiB 5.37 s), 100 small files.")
        big = [r for r in table["shares"] if "link" in r]
        print_table(["share", "file", "dd oflag=direct", "cp + sync", "sanecp", "of the link", "sanecp / better",
                     "sanecp peak dirty", "cp peak dirty"],
                    [[r["fs"], f"{r['bytes'] // mib} MiB", secs(r["dd"]), secs(r["cp"]), secs(r["sanecp"]),
                      f"{r['link']:.1%}", ratio(r["ratio"]), size(r["peak"]), size(r["cp_peak"])] for r in big])
        small = [r for r in table["shares"] if "link" not in r]
        print_table(["share", "cp -r + sync", "sanecp", "sanecp / cp", "sanecp peak dirty"],
                    [[r["fs"], secs(r["cp"]), secs(r["sanecp"]), ratio(r["ratio"]), size(r["peak"])] for r in small])
    if table.get("bench"):
        rows = []
        for r in table["bench"]:
            what = f"{r['bytes'] / mib:.0f} MiB" + (" in 1 file" if r["kind"] == "big"
                                                     else f" in {r.get('files', 2000)} files")
            rate = r.get("device_bps", WRITE_BPS)  # a share's row: the link's rate
            for tool, t in r["tools"].items():
                rows.append([r["fs"], what, tool, f"{t['secs']:.2f} s", f"{100 * t['rate'] / rate:.1f} %",
                             f"{t['peak'] / mib:.1f} MiB", f"{t['src_res'] / mib:.1f} MiB",
                             f"{t['dst_res'] / mib:.1f} MiB", t.get("requests") or "–"])
        print("# The stick: 10 MB/s, 300 write IOPS (qemu's usb-storage); each tool from a cold cache, as the "
              "desktop's user. A share: 100 Mbit/s and 10 ms each way (netem), servers on tmpfs; each tool as root, "
              "then sync.")
        # A stick takes one command at a time, so its write requests (after the scheduler merged them) are where
        # time goes beside the bytes; a share has none.
        print_table(["stick or share", "copied", "tool", "time to durable", "of the device's or link's rate",
                     "peak dirty + writeback", "source cached after", "copy cached after", "write requests"], rows)
    sys.stdout.flush()


def boot(cmd, console_path, qmp_path, stick, work):
    """Runs the guest once: its TAP lines printed as they come, what the host is asked for done. Returns the run's
    counts, its known gaps, its table, whether it reached its end, and whether any scenario began."""
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    print(f"# booting the guest: kernel {os.path.basename(kernel_of(cmd))}, stick {WRITE_BPS / 1e6:.0f} MB/s, "
          f"{WRITE_IOPS} write IOPS", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    qmp = None
    plugs = 0
    passed = failed = 0
    todo = []
    table = None
    end_seen = False
    began = False  # a scenario's first line came
    os.set_blocking(proc.stdout.fileno(), False)
    buf = b""
    last_line = time.monotonic()
    with open(console_path, "w", errors="replace") as console:
        try:
            while True:
                chunk = proc.stdout.read()
                if chunk:
                    buf += chunk
                    last_line = time.monotonic()
                elif proc.poll() is not None:
                    break
                else:
                    if time.monotonic() - last_line > SILENCE_LIMIT:
                        print(f"not ok - the guest said nothing for {SILENCE_LIMIT} s", flush=True)
                        failed += 1
                        break
                    if time.monotonic() - start > TOTAL_LIMIT:
                        print(f"not ok - the guest ran over {TOTAL_LIMIT} s", flush=True)
                        failed += 1
                        break
                    time.sleep(0.05)
                    continue
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode("utf-8", "replace").rstrip("\r")
                    console.write(line + "\n")
                    console.flush()
                    if line.startswith("@@SANECOPY PULL@@"):
                        qmp = qmp or Qmp(qmp_path)
                        qmp.execute("device_del", id="stickdev" if plugs == 0 else f"stickdev{plugs}")
                        print("# host: stick pulled out (QMP device_del)", flush=True)
                    elif line.startswith("@@SANECOPY PLUG@@"):
                        qmp = qmp or Qmp(qmp_path)
                        plugs += 1
                        # The -drive backend went with the device: new nodes for the same image, throttled as the
                        # first one was (a throttle filter in its own group), so a replugged stick is as slow.
                        qmp.execute("object-add", **{"qom-type": "throttle-group", "id": f"tg{plugs}",
                                                     "limits": {"bps-write": WRITE_BPS, "iops-write": WRITE_IOPS}})
                        qmp.execute("blockdev-add", **{"driver": "raw", "node-name": f"stick{plugs}-raw",
                                                       "file": {"driver": "file", "filename": stick, "aio": "native",
                                                                "cache": {"direct": True}}})
                        qmp.execute("blockdev-add", **{"driver": "throttle", "node-name": f"stick{plugs}",
                                                       "throttle-group": f"tg{plugs}", "file": f"stick{plugs}-raw"})
                        qmp.execute("device_add", driver="usb-storage", bus="xhci.0", drive=f"stick{plugs}",
                                    id=f"stickdev{plugs}", removable=True)
                        print("# host: stick plugged back in (QMP blockdev-add, device_add)", flush=True)
                    elif line.startswith("@@SANECOPY TABLE "):
                        table = json.loads(line[len("@@SANECOPY TABLE "):-2])
                    elif line.startswith("@@SANECOPY FILE "):
                        # A file the guest hands over (a screenshot): "@@SANECOPY FILE NAME BASE64@@".
                        name, _, data = line[len("@@SANECOPY FILE "):].rstrip("@").partition(" ")
                        path = os.path.join(work, os.path.basename(name))
                        with open(path, "wb") as f:
                            f.write(base64.b64decode(data))
                        print(f"# host: saved {path}", flush=True)
                    elif line.startswith("@@SANECOPY END"):
                        end_seen = True
                    elif re.match(r"^(not )?ok \d+", line) or line.startswith("#") or line.startswith("1.."):
                        print(line, flush=True)
                        began = began or line.startswith("# --- ") or re.match(r"^(not )?ok \d+", line) is not None
                        if " # TODO " in line:
                            todo.append(line)  # a known gap: shown, not counted either way
                        elif line.startswith("ok "):
                            passed += 1
                        elif line.startswith("not ok "):
                            failed += 1
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return {"passed": passed, "failed": failed, "todo": todo, "table": table, "end_seen": end_seen, "began": began,
            "start": start}


def kernel_of(cmd):
    return cmd[cmd.index("-kernel") + 1]


def died_booting(console_path):
    """The first line of the guest kernel's own death (an Oops, a panic) in its console log, or None."""
    with open(console_path, errors="replace") as f:
        for line in f:
            if "Oops:" in line or "Kernel panic" in line or "BUG:" in line:
                return line.strip()
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--only", default="")
    a = ap.parse_args()

    os.makedirs(a.work, exist_ok=True)
    stick = os.path.join(a.work, "stick.img")
    # A new stick every run; the guest formats it per scenario. Allocated up front: qemu's aio=native turns a
    # write into a not yet allocated part of a sparse image into a slow synchronous one on the host, which made
    # whichever tool first wrote a region look ten times slower than the stick.
    with open(stick, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, STICK_MIB << 20)
    qmp_path = os.path.join(a.work, "qmp.sock")
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    console_path = os.path.join(a.work, "console.log")

    # oops=panic: a kernel Oops ends the guest at once (panic=-1, -no-reboot) and fails the run, where a guest
    # left running after one printed RCU stalls for the rest of TOTAL_LIMIT (2026-11-28, slab corruption in a close).
    append = "root=/dev/vda rw console=ttyS0 init=/sanecopy-vm/init.sh panic=-1 oops=panic quiet loglevel=3"
    if a.only:
        append += f" sanecopy.only={a.only}"
    cmd = [
        "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-smp", "2", "-m", "2048",
        "-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
        "-kernel", a.kernel, "-initrd", a.initrd, "-append", append,
        "-drive", f"file={a.rootfs},if=virtio,format=raw,cache=unsafe",
        "-device", "qemu-xhci,id=xhci",
        "-drive", f"file={stick},if=none,id=stick,format=raw,cache=none,aio=native,"
                  f"throttling.bps-write={WRITE_BPS},throttling.iops-write={WRITE_IOPS}",
        "-device", "usb-storage,bus=xhci.0,drive=stick,id=stickdev,removable=on",
        "-qmp", f"unix:{qmp_path},server=on,wait=off",
    ]
    run = boot(cmd, console_path, qmp_path, stick, a.work)
    if not run["end_seen"] and not run["began"] and run["failed"] == 0:
        # The guest's kernel died before any scenario began. Under software emulation a boot now and then does
        # (2026-11-29: an int3 Oops at sched_clock_cpu+0x9 4.4 s in, where the code dump already showed the patched
        # bytes: the other vCPU still ran the breakpoint of the kernel's patching of its own code). Nothing of
        # SaneCopy ran yet, so boot once more; the first console log stays beside the second.
        death = died_booting(console_path)
        if death:
            os.replace(console_path, console_path + ".first")
            print(f"# the guest's kernel died while booting, before any scenario ({death}); booting it again, "
                  f"once (its console log: {console_path}.first)", flush=True)
            run = boot(cmd, console_path, qmp_path, stick, a.work)
    passed, failed, todo, table, end_seen, start = (run[k] for k in ("passed", "failed", "todo", "table", "end_seen",
                                                                    "start"))
    if not end_seen:
        print("not ok - the guest ended before its scenarios did", flush=True)
        failed += 1
    if table is not None:
        with open(os.path.join(a.work, "table.json"), "w") as f:
            json.dump(table, f, indent=1)
        print_tables(table)
    print(f"# guest run: {time.monotonic() - start:.0f} s", flush=True)
    for line in todo:
        print(f"# known gap, not counted: {line}", flush=True)
    if failed:
        print(f"# the guest's console log: {console_path}", flush=True)
    print(f"usb-vm: {passed} passed, {failed} failed", flush=True)
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
