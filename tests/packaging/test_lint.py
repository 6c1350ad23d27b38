#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The house's checks in batches (packaging/lint.py): a finding in one file of a batch is that file's, and only
that file's; files that can't share a translation unit are still checked; a batch's verdict is read from what
the tool printed. The tools themselves are stood in for: these tests are about the batching, which the real
checks in the Debian 13 root rely on to say "clean"."""
import contextlib
import io
import pathlib
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "packaging"))
import lint  # noqa: E402


def entry(rel, flags="-O2"):
    return {"directory": "/build", "file": f"/src/{rel}", "output": f"{rel}.o",
            "command": f"/usr/bin/c++ {flags} -o {rel}.o -c /src/{rel}"}


class Batches(unittest.TestCase):
    def test_alike_commands_share_batches_of_at_most_batch(self):
        units = [(f"engine/f{i}.cpp", entry(f"engine/f{i}.cpp"), f"k{i}") for i in range(lint.BATCH + 3)]
        units += [("ui/w.cpp", entry("ui/w.cpp", "-DQT_CORE_LIB"), "kw")]
        runs = lint.batches(units)
        self.assertEqual([len(b) for b in runs], [lint.BATCH, 3, 1])
        self.assertEqual(runs[2][0][0], "ui/w.cpp")
        self.assertEqual(sorted(u[0] for b in runs for u in b), sorted(u[0] for u in units))

    def test_compile_args_drop_compiler_output_and_source(self):
        self.assertEqual(lint.compile_args(entry("engine/a.cpp", "-DX=\"1 2\" -Iinc")), ["-DX=1 2", "-Iinc"])
        # -c takes no operand: what follows it stays; the source is dropped wherever it stands, named relative to
        # the entry's folder too; "arguments" as well as "command".
        e = {"directory": "/src/engine", "file": "a.cpp", "output": "a.o",
             "arguments": ["c++", "-c", "-include", "pre.h", "a.cpp", "-o", "a.o", "-DY"]}
        self.assertEqual(lint.compile_args(e), ["-include", "pre.h", "-DY"])
        e = {"directory": "/build", "file": "/src/engine/a.cpp", "command": "c++ -c ../src/engine/a.cpp -O2"}
        self.assertEqual(lint.compile_args(e), ["-O2"])


class CheckAll(unittest.TestCase):
    """check_all with stand-ins: |bad| files have findings; |apart| files can't be in one unit together."""

    def run_checks(self, n, bad=(), apart=()):
        todo = [(f"engine/f{i}.cpp", entry(f"engine/f{i}.cpp")) for i in range(n)]
        ran = {"batches": [], "single": []}

        def batch_clean(cmd, batch, src):
            names = {rel for rel, _, _ in batch}
            ran["batches"].append(len(batch))
            return not names & set(bad) and not (apart and set(apart) <= names)

        def checker(rel, e):
            ran["single"].append(rel)
            return rel not in bad, f"/src/{rel}:1:1: error: a finding [bugprone-x]"

        saved = lint.batch_clean
        lint.batch_clean = batch_clean
        try:
            with tempfile.TemporaryDirectory() as cache, contextlib.redirect_stdout(io.StringIO()) as out:
                failed = lint.check_all("t", todo, checker, ["tool"], pathlib.Path("/src"), pathlib.Path(cache),
                                        lambda rel, e: rel.replace("/", "_"), 2)
                clean = sorted(p.name for p in (pathlib.Path(cache) / "clean").iterdir())
        finally:
            lint.batch_clean = saved
        return failed, clean, ran, out.getvalue()

    def test_clean_batches_need_no_single_runs(self):
        failed, clean, ran, _ = self.run_checks(2 * lint.BATCH)
        self.assertEqual(failed, 0)
        self.assertEqual(len(clean), 2 * lint.BATCH)
        self.assertEqual(ran["batches"], [lint.BATCH, lint.BATCH])
        self.assertEqual(ran["single"], [])

    def test_a_finding_is_its_files_alone(self):
        failed, clean, ran, out = self.run_checks(lint.BATCH, bad=["engine/f5.cpp"])
        self.assertEqual(failed, 1)
        self.assertNotIn("engine_f5.cpp", clean)
        self.assertEqual(len(clean), lint.BATCH - 1)
        self.assertIn("lint: t: engine/f5.cpp:\n/src/engine/f5.cpp:1:1: error: a finding", out)
        self.assertLess(len(ran["single"]), lint.BATCH, "halving, not one by one")

    def test_files_that_cant_share_a_unit_are_still_checked(self):
        failed, clean, ran, _ = self.run_checks(lint.BATCH, apart=["engine/f1.cpp", "engine/f2.cpp"])
        self.assertEqual(failed, 0)
        self.assertEqual(len(clean), lint.BATCH)

    def test_known_clean_files_are_not_checked_again(self):
        with tempfile.TemporaryDirectory() as cache:
            (pathlib.Path(cache) / "clean").mkdir()
            (pathlib.Path(cache) / "clean" / "k").touch()
            todo = [("engine/a.cpp", entry("engine/a.cpp"))]
            with contextlib.redirect_stdout(io.StringIO()) as out:
                failed = lint.check_all("t", todo, lambda rel, e: self.fail("checked again"), ["tool"],
                                        pathlib.Path("/src"), pathlib.Path(cache), lambda rel, e: "k", 2)
        self.assertEqual(failed, 0)
        self.assertIn("1 known clean, checking 0", out.getvalue())


class BatchVerdict(unittest.TestCase):
    """batch_clean: the unit includes each file with a NOLINT for the include itself, and is clean only when the
    tool exits 0 and prints no diagnostic."""

    def verdict(self, returncode, lines):
        seen = {}

        def run(cmd, **kw):
            seen["unit"] = pathlib.Path(cmd[cmd.index("--") - 1]).read_text()
            return subprocess.CompletedProcess(cmd, returncode, "".join(line + "\n" for line in lines))

        saved = lint.run
        lint.run = run
        try:
            batch = [(rel, entry(rel), "k") for rel in ("engine/a.cpp", "engine/b.cpp")]
            ok = lint.batch_clean(["tool"], batch, pathlib.Path("/src"))
        finally:
            lint.run = saved
        self.assertEqual(seen["unit"], '#include "/src/engine/a.cpp" // NOLINT(bugprone-suspicious-include)\n'
                                       '#include "/src/engine/b.cpp" // NOLINT(bugprone-suspicious-include)\n')
        return ok

    def test_nothing_said_is_clean(self):
        self.assertTrue(self.verdict(0, []))
        self.assertTrue(self.verdict(0, ["46351 warnings generated."]))

    def test_a_finding_in_a_file_is_not_clean(self):
        self.assertFalse(self.verdict(1, [
            "/src/engine/b.cpp:7:3: error: use nullptr [modernize-use-nullptr,-warnings-as-errors]"]))
        # clazy exits 0 after its warnings
        self.assertFalse(self.verdict(0, ["/src/ui/w.cpp:3:1: warning: a clazy finding [-Wclazy-qstring-arg]"]))
        self.assertFalse(self.verdict(0, ["/src/my folder/w.cpp:3:1: warning: in a path with a space [x]"]))

    def test_two_files_that_collide_are_not_clean(self):
        self.assertFalse(self.verdict(1, [
            "/src/engine/b.cpp:72:30: error: reference to 'kKiB' is ambiguous [clang-diagnostic-error]"]))
        self.assertFalse(self.verdict(1, ["/src/engine/b.cpp:1:10: fatal error: 'x.h' file not found"]))

    def test_a_failure_or_crash_is_not_clean(self):
        self.assertFalse(self.verdict(1, ["Error while processing /tmp/x/batch.cpp."]))
        self.assertFalse(self.verdict(-11, []))


if __name__ == "__main__":
    unittest.main(verbosity=2)
