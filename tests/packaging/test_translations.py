#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A domain's catalogues against the template the build extracted: the window's (ui/po/), the engine's and
sanecp's (engine/po/), the KIO worker's (kio-worker/po/):

  de.po  every string translated (each plural form), none fuzzy, none left over from strings that are gone; the
         same placeholders (%1..%9, %n) as the English, and an accelerator (&) where the English has one;
  en.po  where the domain has one (the window's: Qt needs it, gettext does not): every counted string (%n) with
         its two English forms;
  each   accepted by msgfmt --check (when gettext is installed).

  test_translations.py TEMPLATE.pot PODIR"""
import os
import re
import shutil
import subprocess
import sys


def parse(path):
    """[(context, msgid, plural or None, [msgstr...], fuzzy)] of a .po/.pot, the header left out."""
    entries = []
    for block in open(path, encoding="utf-8").read().split("\n\n"):
        fields, fuzzy, current = {}, False, None
        for line in block.strip().splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            if line.startswith("#"):
                continue
            m = re.match(r'(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) "(.*)"$', line)
            if m:
                current = m.group(1)
                fields[current] = m.group(2)
            elif current and re.match(r'"(.*)"$', line):
                fields[current] += line[1:-1]
        if fields.get("msgid"):
            strs = [v for k, v in sorted(fields.items()) if k.startswith("msgstr")]
            entries.append((fields.get("msgctxt", ""), fields["msgid"], fields.get("msgid_plural"), strs, fuzzy))
    return entries


def placeholders(text):
    return sorted(set(re.findall(r"%(?:\d|n)", text)))


def german_problems(wanted, de):
    """What de.po lacks or gets wrong against the template's strings |wanted| ({(context, msgid): plural})."""
    problems = []
    for key, plural in wanted.items():
        ctx, msgid = key
        if key not in de:
            problems.append(f"de.po: no translation of {ctx}{msgid!r}")
            continue
        _, strs, fuzzy = de[key]
        if fuzzy or len(strs) != (2 if plural is not None else 1) or not all(strs):
            problems.append(f"de.po: {ctx}{msgid!r} is {'fuzzy' if fuzzy else 'not translated in every form'}")
            continue
        problems += form_problems(ctx, msgid, plural, strs)
    problems += [f"de.po: {c}{i!r} is no longer in the sources (msgmerge removes it)"
                 for c, i in de if (c, i) not in wanted]
    return problems


def form_problems(ctx, msgid, plural, strs):
    """Placeholders and accelerator of each translated form of |msgid|."""
    problems = []
    want = placeholders(msgid)
    for s in strs:
        got = placeholders(s)
        # A singular form may say "one" instead of %n ("Eine Datei ..."), as in English.
        singular_without_n = plural is not None and s is strs[0] and set(got) == set(want) - {"%n"}
        if got != want and not singular_without_n:
            problems.append(f"de.po: {ctx}{msgid!r}: placeholders {got} in {s!r}, the English has {want}")
        if ("&" in msgid.replace("&&", "")) != ("&" in s.replace("&&", "")) and "<" not in msgid:
            problems.append(f"de.po: {ctx}{msgid!r}: accelerator in one but not the other: {s!r}")
    return problems


def msgfmt_problems(podir):
    if not shutil.which("msgfmt"):
        print("msgfmt (gettext) is not installed: the .po files' syntax was checked by the parse above only")
        return []
    problems = []
    for lang in [lang for lang in ("de", "en") if os.path.exists(f"{podir}/{lang}.po")]:
        r = subprocess.run(["msgfmt", "--check", "-o", "/dev/null", f"{podir}/{lang}.po"], capture_output=True,
                           text=True)
        errors = [l for l in r.stderr.splitlines() if "warning: header field" not in l]
        if r.returncode != 0 or errors:
            problems.append(f"msgfmt --check {lang}.po: {' '.join(errors)}")
    return problems


def main():
    template, podir = sys.argv[1], sys.argv[2]
    wanted = {(c, i): p for c, i, p, _, _ in parse(template)}
    problems = german_problems(wanted, {(c, i): (p, s, f) for c, i, p, s, f in parse(f"{podir}/de.po")})
    if os.path.exists(f"{podir}/en.po"):
        en = {(c, i): s for c, i, p, s, f in parse(f"{podir}/en.po")}
        problems += [f"en.po: no English plural forms for {k[0]}{k[1]!r}" for k, plural in wanted.items()
                     if plural is not None and (k not in en or len(en[k]) != 2 or not all(en[k]))]
    problems += msgfmt_problems(podir)
    for p in problems:
        print(p)
    print(f"{len(wanted)} strings in the template; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
