#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Dolphin's network folders through the real kio-fuse: an sftp:// folder served by an sshd of the test's own on
127.0.0.1, reached through KIO's own sftp worker, on a private session bus with a home of the test's own.

    test_kio_fuse.py SANECOPY SANECP

- `sanecp` into the folder kio-fuse mounts for the URL: exit 0, the file identical on the server, no part file;
- the window, as "Safe Copy To…" starts it (`sanecopy --to sftp://…`): the file lands identical on the server under
  its name, with no part file;
- the window with an sftp:// file as the source: identical in the local folder.

Root only (the sshd); skips (77) without sshd, kio-fuse, KIO's sftp worker, dbus-run-session or /dev/fuse.
Everything it starts is stopped and everything it makes is removed, kio-fuse's mount included, whatever fails.
"""
import glob
import hashlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77


def first_existing(patterns):
    for p in patterns:
        found = sorted(glob.glob(p))
        if found:
            return found[0]
    return None


def missing_requirements():
    if os.geteuid() != 0:
        return "not root: the test's sshd needs it"
    needs = {
        "sshd": first_existing(["/usr/sbin/sshd"]),
        "ssh-keygen": shutil.which("ssh-keygen"),
        "dbus-run-session": shutil.which("dbus-run-session"),
        "gdbus": shutil.which("gdbus"),
        "kio-fuse": first_existing(["/usr/lib/*/libexec/kio-fuse", "/usr/libexec/kio-fuse", "/usr/lib/kio-fuse"]),
        "KIO's sftp worker (kio-extras)": first_existing(
            ["/usr/lib/*/qt*/plugins/kf*/kio/*sftp.so", "/usr/lib/qt*/plugins/kf*/kio/*sftp.so"]),
        "/dev/fuse": "/dev/fuse" if os.path.exists("/dev/fuse") else None,
        "unshare": shutil.which("unshare"),
    }
    gone = [name for name, path in needs.items() if not path]
    return ", ".join(gone) + " missing" if gone else None


def passwd_ssh():
    return os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".ssh")


def end(proc, grace):
    """SIGTERM, then SIGKILL after |grace| seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def appears(path, window, seconds=60):
    """Whether |path| appears within |seconds|, while the window still runs."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not os.path.exists(path) and window.poll() is None:
        time.sleep(0.2)
    return os.path.exists(path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def part_files(folder):
    return [n for n in os.listdir(folder) if n.endswith(".part")] if os.path.isdir(folder) else []


class Server:
    """An sshd of the test's own: its host key, its authorized key, 127.0.0.1 only, in the foreground."""

    def __init__(self, tmp, home):
        self.port = free_port()
        keys = os.path.join(tmp, "keys")
        os.makedirs(keys)
        ssh = os.path.join(home, ".ssh")
        os.makedirs(ssh, mode=0o700)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{keys}/host"], check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{ssh}/id_ed25519"], check=True)
        shutil.copy(f"{ssh}/id_ed25519.pub", f"{keys}/authorized_keys")
        with open(f"{keys}/host.pub") as f:
            host_key = " ".join(f.read().split()[:2])
        with open(f"{ssh}/known_hosts", "w") as f:
            f.write(f"[127.0.0.1]:{self.port} {host_key}\n")
        # sshd wants its privilege separation folder; made here only if missing, and then removed again.
        self.made_privsep = not os.path.isdir("/run/sshd")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen(
            ["/usr/sbin/sshd", "-D", "-e", "-f", "/dev/null", "-h", f"{keys}/host", "-p", str(self.port),
             "-o", "ListenAddress=127.0.0.1", "-o", f"AuthorizedKeysFile={keys}/authorized_keys",
             "-o", "StrictModes=no", "-o", "PermitRootLogin=prohibit-password", "-o", "UsePAM=no",
             "-o", "PidFile=none", "-o", "Subsystem=sftp internal-sftp"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "sshd.log"), "w"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("the test's sshd did not start listening")

    def stop(self):
        end(self.proc, 10)
        if self.made_privsep:
            shutil.rmtree("/run/sshd", ignore_errors=True)


def inner(sanecopy, sanecp, port, served, local):
    """Runs on the private bus; prints ok/not ok lines and returns the number of failures."""
    failures = []

    def check(cond, what):
        print(f"{'ok' if cond else 'not ok'}: {what}", flush=True)
        if not cond:
            failures.append(what)

    # KIO's sftp worker (libssh) finds keys and known hosts in the passwd entry's home, not $HOME: in this mount
    # namespace of the test's own, that folder's .ssh is the test's.
    subprocess.run(["mount", "--bind", os.path.join(os.environ["HOME"], ".ssh"), passwd_ssh()], check=True)
    url = f"sftp://root@127.0.0.1:{port}{served}"
    src = os.path.join(local, "photo.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(6 * 1024 * 1024 + 123))
    # And a folder of small files, which go through the batch (settled side by side where the folder is a share).
    album = os.path.join(local, "album")
    os.makedirs(album)
    for i in range(12):
        with open(os.path.join(album, f"p{i:02d}.jpg"), "wb") as f:
            f.write(os.urandom(3000 + 1000 * i))

    # sanecp into kio-fuse's own mount of the folder, as a user who opened it in Dolphin would.
    os.makedirs(f"{served}/cli")
    r = subprocess.run(["gdbus", "call", "--session", "-d", "org.kde.KIOFuse", "-o", "/org/kde/KIOFuse",
                        "-m", "org.kde.KIOFuse.VFS.mountUrl", f"{url}/cli"],
                       capture_output=True, text=True, timeout=60)
    mounted = r.stdout.strip().removeprefix("('").removesuffix("',)")
    check(r.returncode == 0 and mounted.startswith("/"), f"kio-fuse mounts {url}/cli: {r.stdout!r} {r.stderr[-300:]!r}")
    if mounted.startswith("/"):
        r = subprocess.run([sanecp, "--probe", mounted], capture_output=True, text=True, timeout=60)
        check('"fs_subtype":"kio-fuse"' in r.stdout, f"sanecp --probe sees kio-fuse's mount: {r.stdout[-300:]!r}")
        r = subprocess.run([sanecp, "--json", src, album, mounted + "/"], capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, f"sanecp into kio-fuse's folder exits 0: {r.stderr.strip()[-300:]!r}")
        there = f"{served}/cli/photo.bin"
        check(os.path.exists(there) and digest(there) == digest(src), "the big file is identical on the server")
        same = subprocess.run(["diff", "-r", album, f"{served}/cli/album"], capture_output=True).returncode == 0
        check(same, "every small file is identical on the server")
        check(not part_files(f"{served}/cli") and not part_files(f"{served}/cli/album"),
              f"no part file on the server: {part_files(served + '/cli')} {part_files(served + '/cli/album')}")

    # The window, as the "Safe Copy To…" menu starts it on a network folder.
    os.makedirs(f"{served}/window")
    there = f"{served}/window/photo.bin"
    window = subprocess.Popen([sanecopy, "--to", f"{url}/window", src], stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(local, "window.log"), "w"))
    try:
        check(appears(there, window), f"the window copies into {url}/window (exit {window.poll()})")
        check(os.path.exists(there) and digest(there) == digest(src), "the window's file is identical on the server")
        check(not part_files(f"{served}/window"), f"no part file: {part_files(served + '/window')}")

        # And from the network folder into a local one, in the same window (it takes the second command's files).
        into = os.path.join(local, "from-server")
        os.makedirs(into)
        shutil.copy(src, f"{served}/remote.bin")
        try:
            r = subprocess.run([sanecopy, "--to", into, f"{url}/remote.bin"], capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, f"a second sanecopy hands its sftp:// file to the window: {r.stderr[-300:]!r}")
        except subprocess.TimeoutExpired:
            check(False, "a second sanecopy hands its sftp:// file to the window within 60 s")
        copied = os.path.join(into, "remote.bin")
        check(appears(copied, window) and digest(copied) == digest(src), "the sftp:// file lands identical locally")
    finally:
        end(window, 20)
        if failures:
            with open(os.path.join(local, "window.log")) as f:
                print("window's stderr:\n" + f.read()[-2000:])
    return len(failures)


def leftovers(runtime):
    """The processes whose runtime folder is the test's own: what the private bus started and outlives it (kiod,
    kio-fuse, KIO's workers), and nothing else."""
    mark = f"XDG_RUNTIME_DIR={runtime}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def stop_leftovers(runtime):
    """Stops them, SIGKILL for any still there after 5 s. kio-fuse's mount lives in the test's own mount namespace,
    and goes with its last process."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 2)):
        for pid in leftovers(runtime):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while leftovers(runtime) and time.monotonic() < deadline:
            time.sleep(0.1)


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "--inner":
        return 1 if inner(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]) else 0
    sanecopy, sanecp = sys.argv[1], sys.argv[2]
    why = missing_requirements()
    if why:
        print(f"SKIP: {why}")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="sanecopy-kio-fuse-")
    server = None
    made_ssh = False
    runtime = os.path.join(tmp, "runtime")
    try:
        home = os.path.join(tmp, "home")
        served, local = os.path.join(tmp, "served"), os.path.join(tmp, "local")
        for d in (home, served, local):
            os.makedirs(d)
        os.makedirs(runtime, mode=0o700)
        server = Server(tmp, home)
        # The bus's environment is what kio-fuse and KIO's workers start with: a home, runtime folder and state
        # of the test's own, offscreen.
        env = dict(os.environ, HOME=home, XDG_RUNTIME_DIR=runtime, XDG_CONFIG_HOME=f"{home}/.config",
                   XDG_DATA_HOME=f"{home}/.local/share", XDG_CACHE_HOME=f"{home}/.cache",
                   XDG_STATE_HOME=f"{home}/.local/state", QT_QPA_PLATFORM="offscreen", LANG="C.UTF-8")
        for name in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK"):
            env.pop(name, None)
        # The passwd home's .ssh must exist for the bind: made here only if missing, and removed again.
        made_ssh = not os.path.isdir(passwd_ssh())
        if made_ssh:
            os.makedirs(passwd_ssh(), mode=0o700)
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "dbus-run-session", "--", sys.executable,
                            os.path.abspath(__file__), "--inner", sanecopy, sanecp, str(server.port), served, local],
                           env=env, timeout=400)
        print("all ok" if r.returncode == 0 else "FAILED")
        return r.returncode
    finally:
        stop_leftovers(runtime)
        if server:
            server.stop()
        if made_ssh:
            os.rmdir(passwd_ssh())
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
