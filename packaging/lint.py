#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The house's checks on engine/, app/, kio-worker/ and ui/, run by `dev.sh test-debian13` in the Debian 13 root
after the build (packaging/debian13.sh), and by `packaging/debian13.sh lint` alone:

  rooms       no file includes a header of a room after its own (lint_rooms.py)
  format      every C++ file of the project and its tests as .clang-format lays it out
  lizard      no function over 60 lines or over cyclomatic complexity 15
  clang-tidy  the checks in .clang-tidy, every finding an error
  clazy       Qt's own pitfalls (level 1 and the manual checks named below) in the Qt code

Any finding fails. clang-tidy and clazy take minutes over the whole tree, so a translation unit that came out
clean is remembered (CACHE/clean/) under a key of everything that could change the verdict: the tool's version,
its checks, the file's compile command, the file itself and every header of the project or the build that it
includes, as ninja's dependency log lists them after the build (a header's change re-checks the files that include
it; a system header's change comes with a new tool or package version, which is in the key). A file that ninja
has no list for is keyed on every header of the project instead."""
import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import shlex
import subprocess
import sys

PARTS = ("engine", "app", "kio-worker", "ui")
# The Qt code: the window, the KIO worker, the window's main().
QT_PARTS = ("ui/", "kio-worker/", "app/sanecopy_main.cpp")
# Level 1 but for non-pod-global-static: the file-scope QStringLiteral constants (D-Bus names, suffixes) cost a
# pointer at start-up and no static uses another's value, which are the two things that check is about.
CLAZY_CHECKS = "level1,no-non-pod-global-static,container-inside-loop,qstring-varargs,unneeded-cast,isempty-vs-count"
LIZARD_VERSION = "1.24.3"


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def tool_version(cmd):
    return run([cmd, "--version"]).stdout


def project_headers_digest(src):
    h = hashlib.sha256()
    for part in PARTS:
        for p in sorted((src / part).rglob("*.h")):
            h.update(str(p.relative_to(src)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def included_files(src, build):
    """{object file: [the headers of the project and the build it includes]}, from ninja's dependency log. The
    system's headers are left out: their changes come with new package versions, in the tools' versions."""
    ours = (str(src) + "/", str(build) + "/")
    r = run(["ninja", "-C", str(build), "-t", "deps"])
    out, current = {}, None
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        if line and not line[0].isspace():
            current = out.setdefault(line.split(":", 1)[0], []) if "(VALID)" in line else None
        elif current is not None and line.strip():
            dep = line.strip()
            if not dep.startswith("/") or dep.startswith(ours):  # relative paths are the build folder's
                current.append(dep)
    return out


def includes_digest(build, deps, fallback):
    """A digest of the files in |deps| (paths as ninja gives them: absolute or relative to |build|), or |fallback|
    when ninja gave none."""
    if not deps:
        return fallback
    h = hashlib.sha256()
    for d in sorted(deps):
        path = pathlib.Path(d) if d.startswith("/") else build / d
        h.update(d.encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def units(src, build):
    """The project's translation units in compile_commands.json (not the tests', not the generated ones)."""
    out = []
    for e in json.load(open(build / "compile_commands.json")):
        f = pathlib.Path(e["file"])
        try:
            rel = f.resolve().relative_to(src)
        except ValueError:
            continue
        if rel.parts[0] in PARTS and f.suffix == ".cpp":
            out.append((str(rel), e))
    return sorted(out, key=lambda u: u[0])


def check_all(name, todo, checker, cache, key_of, jobs):
    """Runs |checker| on each unit not known clean; returns the number that failed."""
    clean_dir = cache / "clean"
    clean_dir.mkdir(parents=True, exist_ok=True)
    pending = [(rel, e, key_of(rel, e)) for rel, e in todo]
    pending = [(rel, e, k) for rel, e, k in pending if not (clean_dir / k).exists()]
    print(f"lint: {name}: {len(todo)} files, {len(todo) - len(pending)} known clean, checking {len(pending)}", flush=True)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for (rel, e, k), (ok, text) in zip(pending, pool.map(lambda u: checker(u[0], u[1]), pending)):
            if ok:
                (clean_dir / k).touch()
            else:
                failed += 1
                print(f"lint: {name}: {rel}:\n{text.rstrip()}", flush=True)
    print(f"lint: {name}: {failed} file(s) with findings", flush=True)
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=pathlib.Path)
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("cache", type=pathlib.Path)
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    src, build, cache = args.src.resolve(), args.build.resolve(), args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    failures = 0

    r = run([sys.executable, str(src / "packaging/lint_rooms.py"), str(src)])
    print(r.stdout, end="")
    failures += r.returncode != 0

    # tests/catch.h is Catch2's single header, not ours.
    sources = sorted(p for d in (*PARTS, "tests") for p in (src / d).rglob("*")
                     if p.suffix in (".h", ".cpp") and p.name != "catch.h")
    r = run(["clang-format", "--dry-run", "--Werror", *map(str, sources)], cwd=src)
    unformatted = sorted({l.split(":")[0] for l in r.stdout.splitlines() if ": error:" in l})
    for f in unformatted:
        print(f"lint: format: {pathlib.Path(f).relative_to(src)} is not laid out as .clang-format says "
              f"(clang-format -i fixes it)")
    print(f"lint: format: {len(sources)} files, {len(unformatted)} to reformat")
    failures += r.returncode != 0

    venv = cache / f"lizard-{LIZARD_VERSION}"
    if not (venv / "bin/lizard").exists():
        r = run([sys.executable, "-m", "venv", str(venv)])
        r = r if r.returncode else run([str(venv / "bin/pip"), "install", "-q", f"lizard=={LIZARD_VERSION}"])
        if r.returncode:
            print(f"lint: lizard: could not install lizard {LIZARD_VERSION} from PyPI:\n{r.stdout}")
            return 1
    r = run([str(venv / "bin/lizard"), "-C", "15", "-L", "60", "-w", *[str(src / p) for p in PARTS]])
    print(r.stdout, end="")
    print(f"lint: lizard: {'no function over 60 lines or CCN 15' if r.returncode == 0 else 'functions too long or too complex'}")
    failures += r.returncode != 0

    todo = units(src, build)
    if not todo:
        print(f"lint: no compile commands for the project in {build}/compile_commands.json")
        return 1
    every_header = project_headers_digest(src)
    deps = included_files(src, build)
    # Its comments can't change a verdict: only the settings are in the key.
    tidy_config = b"\n".join(l for l in (src / ".clang-tidy").read_bytes().splitlines() if not l.lstrip().startswith(b"#"))
    tidy_version = tool_version("clang-tidy")

    def key(tool, version, config):
        def of(rel, e):
            h = hashlib.sha256()
            headers = includes_digest(build, deps.get(e.get("output", "")), every_header)
            for part in (tool, version, config, e.get("command") or shlex.join(e.get("arguments", [])), headers):
                h.update(part.encode() if isinstance(part, str) else part)
            h.update((src / rel).read_bytes())
            return f"{tool}-{h.hexdigest()}"
        return of

    def tidy(rel, e):
        r = run(["clang-tidy", "-p", str(build), "--quiet",
                 f"--header-filter=^{src}/({'|'.join(PARTS)})/",
                 # ECM's GCC warning flags (-Wlogical-op and the like) mean nothing to clang.
                 "--extra-arg=-Wno-unknown-warning-option", str(src / rel)])
        return r.returncode == 0, r.stdout

    failures += check_all("clang-tidy", todo, tidy, cache, key("clang-tidy", tidy_version, tidy_config), args.j) > 0

    clazy_version = tool_version("clazy-standalone")

    def clazy(rel, e):
        r = run(["clazy-standalone", "-p", str(build), f"-checks={CLAZY_CHECKS}",
                 f"-header-filter=^{src}/({'|'.join(PARTS)})/", "--extra-arg=-Wno-unknown-warning-option",
                 str(src / rel)])
        findings = [l for l in r.stdout.splitlines() if ("warning:" in l or "error:" in l) and l.startswith(str(src))]
        return r.returncode == 0 and not findings, r.stdout

    qt = [(rel, e) for rel, e in todo if rel.startswith(QT_PARTS)]
    failures += check_all("clazy", qt, clazy, cache, key("clazy", clazy_version, CLAZY_CHECKS), args.j) > 0
    print(f"lint: {'passed' if failures == 0 else 'FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
