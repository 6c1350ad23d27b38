#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The house's checks on engine/, app/, kio-worker/ and ui/, run by `dev.sh test-debian13` in the Debian 13 root
after the build (packaging/debian13.sh), and by `packaging/debian13.sh lint` alone:

  rooms       no file includes a header of a room after its own (lint_rooms.py)
  format      every C++ file of the project and its tests as .clang-format lays it out
  width       no line of them, nor of the project's Python, over 120 characters (clang-format leaves comments as
              they were written)
  lizard      no function over 60 lines or over cyclomatic complexity 15
  clang-tidy  the checks in .clang-tidy, every finding an error
  clazy       Qt's own pitfalls (level 1 and the manual checks named below) in the Qt code

Any finding fails. clang-tidy and clazy take minutes over the whole tree, so a translation unit that came out
clean is remembered (CACHE/clean/) under a key of everything that could change the verdict: the tool's version,
its checks, the file's compile command, the file itself and every header of the project or the build that it
includes, as ninja's dependency log lists them after the build (a header's change re-checks the files that include
it; a system header's change comes with a new tool or package version, which is in the key). A file that ninja
has no list for is keyed on every header of the project instead.

Both tools spend most of their time on the system's headers (Qt's and the standard library's declarations are
walked in every translation unit; clang-tidy 19 can't skip them), not on ours. So the files still to check are
checked in batches of files compiled alike (one target's command): one translation unit that includes up to
BATCH of them, the system's headers walked once for all. A batch that comes out clean makes each of its files
clean; after any finding in it, or when it does not compile as one unit (two files' helpers of one name), each
half is checked the same way, down to single files, and only a single file's own verdict is a finding. What a
batch can't see as a single file's check would: the files after the first are not the unit's main file (so
.clang-tidy asks modernize-deprecated-headers to look beyond it), and they share the unit's anonymous namespace
and file-scope using-directives, where a clash fails to compile and halves the batch, but a whole-unit check
such as bugprone-forward-declaration-namespace may see a declaration in another file of the batch. A cold run of
both tools: 9-10 minutes of both cores one file at a time, about 3 in batches (docs/development.md)."""
import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

PARTS = ("engine", "app", "kio-worker", "ui")
# The Qt code: the window, the KIO worker, the window's main().
QT_PARTS = ("ui/", "kio-worker/", "app/sanecopy_main.cpp")
# Level 1 but for non-pod-global-static: the file-scope QStringLiteral constants (D-Bus names, suffixes) cost a
# pointer at start-up and no static uses another's value, which are the two things that check is about.
CLAZY_CHECKS = "level1,no-non-pod-global-static,container-inside-loop,qstring-varargs,unneeded-cast,isempty-vs-count"
LIZARD_VERSION = "1.24.3"
WIDTH = 120  # .clang-format's ColumnLimit, for the comments it does not reflow
BATCH = 8  # files per translation unit in a batch: 4-5 times faster than one by one, and enough batches for -j
# A diagnostic as clang-tidy and clazy print it: "FILE:LINE:COL: warning: TEXT [CHECK,...]" (or error, fatal error).
DIAGNOSTIC = re.compile(r"^.+?:\d+:\d+: (?:warning|error|fatal error): ")


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


def compile_args(e):
    """The compile command of a compile_commands.json entry without the compiler, its output (-o FILE), -c and its
    source (named as the entry names it, or relative to its directory)."""
    args = (shlex.split(e["command"]) if "command" in e else list(e["arguments"]))[1:]
    source = os.path.normpath(os.path.join(e["directory"], e["file"]))
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and os.path.normpath(os.path.join(e["directory"], a)) != source:
            out.append(a)
    return out


def batches(pending):
    """|pending| in lists of at most BATCH entries that share one compile command; the biggest first."""
    alike = {}
    for u in pending:
        alike.setdefault((u[1]["directory"], shlex.join(compile_args(u[1]))), []).append(u)
    out = [same[i:i + BATCH] for same in alike.values() for i in range(0, len(same), BATCH)]
    return sorted(out, key=len, reverse=True)


def batch_clean(tool_cmd, batch, src):
    """Whether |tool_cmd| finds nothing in one translation unit that includes every file of |batch|: it exits 0
    and prints no diagnostic (clazy exits 0 after its warnings). The unit's own #include of a .cpp is what
    bugprone-suspicious-include is about, so its lines say NOLINT to that check alone."""
    with tempfile.TemporaryDirectory(prefix="sanecopy-lint-") as tmp:
        unit = pathlib.Path(tmp) / "batch.cpp"
        unit.write_text("".join(f'#include "{src / rel}" // NOLINT(bugprone-suspicious-include)\n'
                                for rel, _, _ in batch))
        e = batch[0][1]
        r = run([*tool_cmd, str(unit), "--", *compile_args(e)], cwd=e["directory"])
    return r.returncode == 0 and not any(DIAGNOSTIC.match(line) for line in r.stdout.splitlines())


def check_all(name, todo, checker, batch_cmd, src, cache, key_of, jobs):
    """Checks each unit of |todo| not known clean, in batches run by |batch_cmd| (see check), single files with
    |checker|; returns the number of files with findings."""
    clean_dir = cache / "clean"
    clean_dir.mkdir(parents=True, exist_ok=True)
    pending = [(rel, e, key_of(rel, e)) for rel, e in todo]
    pending = [(rel, e, k) for rel, e, k in pending if not (clean_dir / k).exists()]
    runs = batches(pending)
    print(f"lint: {name}: {len(todo)} files, {len(todo) - len(pending)} known clean, checking {len(pending)} "
          f"in {len(runs)} batch(es)", flush=True)

    def check(batch):
        """[(unit, ok, text)] for |batch|: clean as one unit, or else each half checked the same way, down to one
        file, whose own verdict counts."""
        if len(batch) == 1:
            (rel, e, _), = batch
            return [(batch[0], *checker(rel, e))]
        if batch_clean(batch_cmd, batch, src):
            return [(u, True, "") for u in batch]
        print(f"lint: {name}: {', '.join(rel for rel, _, _ in batch)}: not clean as one unit; checking each half",
              flush=True)
        return check(batch[:len(batch) // 2]) + check(batch[len(batch) // 2:])

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for verdicts in pool.map(check, runs):
            for (rel, e, k), ok, text in verdicts:
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

    # The project's Python (the tests' harnesses, the bench, these scripts) is held to the same width.
    scripts = sorted(p for d in (*PARTS, "tests", "bench", "packaging") for p in (src / d).rglob("*.py"))
    wide = [(p, n) for p in (*sources, *scripts) for n, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1)
            if len(line) > WIDTH]
    for p, n in wide:
        print(f"lint: width: {p.relative_to(src)}:{n} is over {WIDTH} characters")
    print(f"lint: width: {len(wide)} lines over {WIDTH} characters")
    failures += len(wide) > 0

    venv = cache / f"lizard-{LIZARD_VERSION}"
    if not (venv / "bin/lizard").exists():
        r = run([sys.executable, "-m", "venv", str(venv)])
        r = r if r.returncode else run([str(venv / "bin/pip"), "install", "-q", f"lizard=={LIZARD_VERSION}"])
        if r.returncode:
            print(f"lint: lizard: could not install lizard {LIZARD_VERSION} from PyPI:\n{r.stdout}")
            return 1
    r = run([str(venv / "bin/lizard"), "-C", "15", "-L", "60", "-w", *[str(src / p) for p in PARTS]])
    print(r.stdout, end="")
    verdict = "no function over 60 lines or CCN 15" if r.returncode == 0 else "functions too long or too complex"
    print(f"lint: lizard: {verdict}")
    failures += r.returncode != 0

    todo = units(src, build)
    if not todo:
        print(f"lint: no compile commands for the project in {build}/compile_commands.json")
        return 1
    every_header = project_headers_digest(src)
    deps = included_files(src, build)
    # Its comments can't change a verdict: only the settings are in the key.
    tidy_lines = (src / ".clang-tidy").read_bytes().splitlines()
    tidy_config = b"\n".join(l for l in tidy_lines if not l.lstrip().startswith(b"#"))
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

    tidy_cmd = ["clang-tidy", "--quiet", f"--header-filter=^{src}/({'|'.join(PARTS)})/",
                # ECM's GCC warning flags (-Wlogical-op and the like) mean nothing to clang.
                "--extra-arg=-Wno-unknown-warning-option"]

    def tidy(rel, e):
        r = run([*tidy_cmd, "-p", str(build), str(src / rel)])
        return r.returncode == 0, r.stdout

    # A batch's unit is outside the tree, where no .clang-tidy would be found.
    failures += check_all("clang-tidy", todo, tidy, [*tidy_cmd, f"--config-file={src}/.clang-tidy"], src, cache,
                          key("clang-tidy", tidy_version, tidy_config), args.j) > 0

    clazy_version = tool_version("clazy-standalone")

    clazy_cmd = ["clazy-standalone", f"-checks={CLAZY_CHECKS}", f"-header-filter=^{src}/({'|'.join(PARTS)})/",
                 "--extra-arg=-Wno-unknown-warning-option"]

    def clazy(rel, e):
        r = run([*clazy_cmd, "-p", str(build), str(src / rel)])
        findings = [l for l in r.stdout.splitlines() if ("warning:" in l or "error:" in l) and l.startswith(str(src))]
        return r.returncode == 0 and not findings, r.stdout

    qt = [(rel, e) for rel, e in todo if rel.startswith(QT_PARTS)]
    failures += check_all("clazy", qt, clazy, clazy_cmd, src, cache, key("clazy", clazy_version, CLAZY_CHECKS),
                          args.j) > 0
    print(f"lint: {'passed' if failures == 0 else 'FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
