#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sanecopy-places against KDE's own KFilePlacesModel, in a home of its own: the "Safe Copy" place is added once,
removed again, and every place the user had stays as it was.

    test_places.py HELPER
"""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

PLACE = "sanecopy://devices/"


def run(helper, home, verb):
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(home, "data"), XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_RUNTIME_DIR=os.path.join(home, "runtime"), QT_QPA_PLATFORM="offscreen")
    env.pop("DISPLAY", None)
    p = subprocess.run([helper, verb], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout.strip(), p.stderr


def hrefs(home):
    tree = ET.parse(os.path.join(home, "data", "user-places.xbel"))
    return [b.get("href") for b in tree.getroot().iter("bookmark")]


def title_of(home, href):
    tree = ET.parse(os.path.join(home, "data", "user-places.xbel"))
    for b in tree.getroot().iter("bookmark"):
        if b.get("href") == href:
            return b.findtext("title")
    return None


def main():
    helper = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print(f"not ok: {what}")
        else:
            print(f"ok: {what}")

    with tempfile.TemporaryDirectory() as home:
        os.makedirs(os.path.join(home, "runtime"), mode=0o700)
        # A first run: no places file yet. KDE's defaults come with ours, so Home does not vanish from Dolphin.
        check(run(helper, home, "status")[:2] == (0, "absent"), "status on a new home: absent")
        rc, _, err = run(helper, home, "add")
        check(rc == 0, f"add exits 0 ({err.strip()[-200:]})")
        first = hrefs(home)
        print(f"places after add: {first}")
        check(first.count(PLACE) == 1, "the place is there once")
        check(any(h.startswith("file://") for h in first), "KDE's own Home place is there too")
        check(title_of(home, PLACE) == "Safe Copy", f"titled Safe Copy: {title_of(home, PLACE)!r}")
        check(run(helper, home, "status")[:2] == (0, "present"), "status: present")
        check(run(helper, home, "add")[0] == 0 and hrefs(home).count(PLACE) == 1, "a second add adds nothing")

        # The user's own places, added by Dolphin, survive an add and a remove in their order.
        rc, _, _ = run(helper, home, "remove")
        check(rc == 0 and PLACE not in hrefs(home), "remove takes it away")
        check(hrefs(home) == [h for h in first if h != PLACE], "remove leaves every other place as it was")
        check(run(helper, home, "status")[:2] == (0, "absent"), "status: absent again")
        check(run(helper, home, "remove")[0] == 0, "removing what is not there is fine")
        check(run(helper, home, "frobnicate")[0] == 2, "a wrong verb is a usage error")
    print("PASS" if not failures else f"FAIL: {len(failures)} checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
