#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The pseudo-locale en_XA from the window's template: each string with its letters accented and made about 40 %
longer, its placeholders (%1, %n), markup, escapes and accelerator (&) kept, so a test can see which texts a
longer language would clip. Used only by the tests (tests/ui/TestPseudoLocale.cpp); never installed.

  pseudo_locale.py TEMPLATE.pot EN.po OUT.po   (EN.po: the English plural forms, which a count's forms are made from)"""
import re
import sys

ACCENTED = dict(zip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                    "áƀçđéƒĝĥíĵķĺɱñöþǫŕšŧüṽŵẋýžÅƁÇĐÉƑĜĤÍĴĶĹṀÑÖÞǪŔŠŦÜṼŴẊÝŽ"))
# What must stay as it is: placeholders, markup, escapes, and the entity-like parts of URLs in markup.
KEEP = re.compile(r'%(?:\d|n)|<[^>]*>|\\.|&&')


def pseudo(text):
    out, pos, letters = [], 0, 0
    for m in KEEP.finditer(text):
        out.append(accent(text[pos:m.start()]))
        letters += sum(c.isalpha() for c in text[pos:m.start()])
        out.append(m.group(0))
        pos = m.end()
    out.append(accent(text[pos:]))
    letters += sum(c.isalpha() for c in text[pos:])
    if not letters:
        return text
    pad = max(3, round(0.4 * len(text)))
    return "⟦" + "".join(out) + " " + "·" * (pad - 3) + "⟧"


def accent(part):
    return "".join(ACCENTED.get(c, c) for c in part)


def english_plurals(path):
    """{msgid: (singular, plural)} of en.po."""
    forms = {}
    for block in open(path, encoding="utf-8").read().split("\n\n"):
        msgid = re.search(r'^msgid "(.*)"$', block, re.M)
        strs = re.findall(r'^msgstr\[\d\] "(.*)"$', block, re.M)
        if msgid and len(strs) == 2:
            forms[msgid.group(1)] = tuple(strs)
    return forms


def main():
    template, english, out = sys.argv[1], sys.argv[2], sys.argv[3]
    plurals = english_plurals(english)
    lines = ['msgid ""', 'msgstr ""', '"Language: en_XA\\n"', '"MIME-Version: 1.0\\n"',
             '"Content-Type: text/plain; charset=UTF-8\\n"', '"Content-Transfer-Encoding: 8bit\\n"',
             '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"', '"X-Qt-Contexts: true\\n"']
    for block in open(template, encoding="utf-8").read().split("\n\n"):
        fields, current = {}, None
        for line in block.strip().splitlines():
            m = re.match(r'(msgctxt|msgid_plural|msgid) "(.*)"$', line)
            if m:
                current = m.group(1)
                fields[current] = m.group(2)
            elif line.startswith('"') and current:
                fields[current] += line[1:-1]
            elif line.startswith("msgstr"):
                current = None
        if not fields.get("msgid"):
            continue
        lines.append("")
        if "msgctxt" in fields:
            lines.append(f'msgctxt "{fields["msgctxt"]}"')
        lines.append(f'msgid "{fields["msgid"]}"')
        if "msgid_plural" in fields:
            lines.append(f'msgid_plural "{fields["msgid_plural"]}"')
            forms = plurals.get(fields["msgid"], (fields["msgid"], fields["msgid"]))
            lines += [f'msgstr[{i}] "{pseudo(form)}"' for i, form in enumerate(forms)]
        else:
            lines.append(f'msgstr "{pseudo(fields["msgid"])}"')
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
