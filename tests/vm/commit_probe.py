# SPDX-License-Identifier: GPL-2.0-or-later
"""How an NFS client's commits can be waited for: a diagnostic writer for tests/vm/shares.py (share-commit-FS).

    commit_probe.py MODE SRC DEST

Copies SRC to DEST as sanecp copies onto a share: 1 MiB pieces by sendfile, each piece's writeback started as it
is written (sync_file_range), windows of 4 MiB, at most 24 MiB written and not yet known durable. MODE says how a
window is known durable:
- msync: a helper thread syncs the windows in order, each by msync(MS_SYNC) of its range (what sanecp does);
- evict: when the budget is spent, the oldest windows' pages are dropped (POSIX_FADV_DONTNEED) and counted with
  cachestat: Linux's NFS client keeps a page it has written until a COMMIT covering it has come back, so a window
  none of whose pages is left is on the server's disk. One fdatasync at the end.
Prints one line: seconds, the writer's waits, the durable frontier's steps.
"""
import collections
import ctypes
import os
import sys
import threading
import time

MiB = 1 << 20
PIECE, WINDOW, BUDGET = MiB, 4 * MiB, 24 * MiB
libc = ctypes.CDLL(None, use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
SYNC_FILE_RANGE_WRITE, MS_SYNC, NR_CACHESTAT = 2, 4, 451


class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "writeback", "evicted", "recently_evicted")]


def cached_pages(fd, off, length):
    r, s = Range(off, length), Stat()
    if libc.syscall(NR_CACHESTAT, fd, ctypes.byref(r), ctypes.byref(s), 0) != 0:
        raise OSError(ctypes.get_errno(), "cachestat")
    return s.cache


def main():
    mode, src, dest = sys.argv[1:4]
    size = os.path.getsize(src)
    fin = os.open(src, os.O_RDONLY)
    out = os.open(dest, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    lock = threading.Condition()
    windows = collections.deque()  # (offset, length) handed over, not yet known durable
    state = {"durable": 0, "steps": [], "done": False}
    t0 = time.monotonic()

    def durable(length):
        state["durable"] += length
        state["steps"].append((round(time.monotonic() - t0, 2), state["durable"] // MiB))

    def helper(addr):
        synced = 0
        while True:
            with lock:
                while synced >= len(queue) and not state["done"]:
                    lock.wait()
                if synced >= len(queue):
                    return
                off, length = queue[synced]
            if libc.msync(addr + off, length, MS_SYNC) != 0:
                raise OSError(ctypes.get_errno(), "msync")
            synced += 1
            with lock:
                windows.popleft()
                durable(length)
                lock.notify_all()

    queue = []
    thread = None
    if mode == "msync":
        addr = libc.mmap(None, size, 1, 1, out, 0)  # PROT_READ, MAP_SHARED
        thread = threading.Thread(target=helper, args=(addr,))
        thread.start()

    def evict_oldest():
        while windows:
            off, length = windows[0]
            os.posix_fadvise(out, off, length, os.POSIX_FADV_DONTNEED)
            if cached_pages(out, off, length):
                return
            windows.popleft()
            durable(length)

    waits, waited = 0, 0.0
    off = 0
    while off < size:
        length = min(WINDOW, size - off)
        for p in range(off, off + length, PIECE):
            n = min(PIECE, off + length - p)
            while n:
                sent = os.sendfile(out, fin, p, n)
                p, n = p + sent, n - sent
        for p in range(off, off + length, PIECE):
            libc.sync_file_range(out, p, min(PIECE, off + length - p), SYNC_FILE_RANGE_WRITE)
        with lock:
            windows.append((off, length))
            queue.append((off, length))
            lock.notify_all()
        off += length
        w0 = time.monotonic()
        waited_now = False
        while True:
            with lock:
                if off - state["durable"] <= BUDGET:
                    break
                waited_now = True
                if mode == "msync":
                    lock.wait()
                    continue
            evict_oldest()
            with lock:
                if off - state["durable"] > BUDGET:
                    time.sleep(0.005)
        if waited_now:
            waits += 1
            waited += time.monotonic() - w0
    if mode == "msync":
        with lock:
            state["done"] = True
            lock.notify_all()
        thread.join()
    else:
        deadline = time.monotonic() + 30
        while windows and time.monotonic() < deadline:
            evict_oldest()
            time.sleep(0.005)
        os.fdatasync(out)
        with lock:
            while windows:
                durable(windows.popleft()[1])
    secs = time.monotonic() - t0
    steps = state["steps"]
    print(f"commit_probe {mode}: {secs:.2f} s, {waits} waits for {waited:.2f} s, "
          f"{len(steps)} durable steps: {steps[:40]}")


if __name__ == "__main__":
    main()
