#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rooms' rule (engine/README.md, ui/README.md): a file includes headers of its own room and of the rooms
before it, never of one after it; a room's private header is included only inside its room."""
import pathlib
import re
import sys

ORDERS = {
    "engine": ["base", "device", "file", "job"],
    "ui": ["jobs", "desktop", "window"],
}
# Headers for one room's own files.
PRIVATE = {
    "job_runner.h": "engine/job",
    "probe_detail.h": "engine/device",
    "WorkerSupport.h": "kio-worker",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def main(src: pathlib.Path) -> int:
    where = {}  # header name -> (part, room)
    for part, rooms in ORDERS.items():
        for room in rooms:
            for h in (src / part / room).glob("*.h"):
                where[h.name] = (part, room)
    problems = []
    for path in sorted(p for d in ("engine", "ui", "app", "kio-worker") for p in (src / d).rglob("*")
                       if p.suffix in (".h", ".cpp")):
        rel = path.relative_to(src)
        part = rel.parts[0]
        room = rel.parts[1] if part in ORDERS and len(rel.parts) > 2 else None
        for name in INCLUDE.findall(path.read_text(encoding="utf-8")):
            name = pathlib.PurePosixPath(name).name
            if name in PRIVATE and not str(rel.parent).startswith(PRIVATE[name]):
                problems.append(f"{rel}: includes {name}, which is private to {PRIVATE[name]}/")
            if part == "engine" and name in where and where[name][0] == "ui":
                problems.append(f"{rel}: the engine includes the window's {name}")
            if room is None or name not in where or where[name][0] != part:
                continue
            order = ORDERS[part]
            if order.index(where[name][1]) > order.index(room):
                problems.append(f"{rel}: {part}/{room} includes {name} of {part}/{where[name][1]}, a room after it")
    for p in problems:
        print(f"lint: {p}")
    print(f"lint: rooms: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
