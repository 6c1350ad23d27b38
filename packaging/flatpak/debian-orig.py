#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Fetches the upstream tarball of a Debian source package, for offline-manifest.py.

    apt-cache showsrc PKG | debian-orig.py PKG MIRROR OUTDIR

Reads the package's newest stanza from the Sources index (apt checked its signature), downloads
MIRROR/Directory/PKG_VERSION.orig.tar.* into OUTDIR, checks it against the index's SHA-256, and writes
OUTDIR/PKG.source: `version=`, `orig=` and `sha256=` lines. The .dsc is not needed (and a package proxy may
not serve it).
"""
import hashlib
import os
import re
import sys
import urllib.request


def stanzas(text):
    for block in text.strip().split("\n\n"):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        yield fields


def main():
    pkg, mirror, outdir = sys.argv[1:4]
    found = [s for s in stanzas(sys.stdin.read()) if s.get("Package") == pkg]
    if not found:
        sys.exit(f"debian-orig: no source package {pkg} in the index")
    src = found[0]
    orig = [line.split() for line in src.get("Checksums-Sha256", "").splitlines()
            if re.search(r"\.orig\.tar\.[a-z0-9]+$", line)]
    if len(orig) != 1:
        sys.exit(f"debian-orig: {pkg} {src.get('Version')} lists no single .orig tarball")
    digest, _, name = orig[0]
    path = os.path.join(outdir, name)
    url = f"{mirror.rstrip('/')}/{src['Directory']}/{name}"
    with urllib.request.urlopen(url, timeout=120) as r, open(path + ".new", "wb") as f:
        f.write(r.read())
    with open(path + ".new", "rb") as f:
        if hashlib.sha256(f.read()).hexdigest() != digest:
            os.unlink(path + ".new")
            sys.exit(f"debian-orig: {url} does not match the index's SHA-256")
    os.rename(path + ".new", path)
    with open(os.path.join(outdir, pkg + ".source"), "w", encoding="utf-8") as f:
        f.write(f"version={src['Version']}\norig={name}\nsha256={digest}\n")
    print(f"debian-orig: {pkg} {src['Version']}: {name}")


if __name__ == "__main__":
    main()
