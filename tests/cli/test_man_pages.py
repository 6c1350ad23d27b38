#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A man page against its program: every option --help lists is in the page, the page has the sections a reader
looks for, and man renders it without a warning.

    test_man_pages.py --program PATH --page PATH.1.gz

Exit 0 when all holds, 1 with the failures listed; a missing page is a failure (the build makes it whenever
SANECOPY_MAN_PAGES is on, which is what registers this test).
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--program", required=True)
    p.add_argument("--page", required=True)
    a = p.parse_args()
    failures = []
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LC_ALL="C.UTF-8")
    help_text = subprocess.run([a.program, "--help"], env=env, capture_output=True, text=True, timeout=30).stdout
    options = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", help_text)))
    if not options:
        failures.append(f"no option found in {a.program} --help")
    if not os.path.isfile(a.page):
        print(f"FAIL: no man page at {a.page}")
        return 1
    with gzip.open(a.page, "rt", encoding="utf-8") as f:
        roff = f.read()
    text = roff.replace("\\-", "-")
    for option in options:
        if option not in text:
            failures.append(f"{option} is in --help but not in the man page")
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SEE ALSO"):
        if not re.search(rf"^\.SH \"?{section}\"?\s*$", roff, re.M):
            failures.append(f"no {section} section")
    name_line = re.search(r"^\.SH \"?NAME\"?\s*\n(.*)$", roff, re.M)
    program = os.path.basename(a.program)
    if not name_line or not name_line.group(1).startswith(program + " \\- "):
        found = name_line.group(1) if name_line else None
        failures.append(f"the NAME line is not \"{program} \\- what it does\": {found!r}")
    man = shutil.which("man")
    if man:
        r = subprocess.run([man, "--warnings", "-l", a.page], env=dict(env, MANWIDTH="80", LC_ALL="C"),
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or r.stderr.strip():
            failures.append(f"man --warnings -l: exit {r.returncode}: {r.stderr.strip()[:2000]}")
        elif "--version" not in r.stdout:
            failures.append("the rendered page does not show --version")
    else:
        print("note: man is not installed here; the page was checked as roff only")
    print(f"{program}: {len(options)} options in --help: {' '.join(options)}")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
