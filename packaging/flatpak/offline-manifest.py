#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The flatpak manifest with its downloads replaced by local files, for a machine that reaches Debian's mirror and
nothing else (packaging/flatpak/standin.sh).

Reads the manifest as `flatpak-builder --show-manifest` prints it (JSON), and writes it back with two changes only:
- each `git` source becomes an `archive` source: the upstream tarball of Debian's source package of the same
  release (`pkg_VERSION.orig.tar.*`, fetched into SOURCES by debian-orig.py). The tag the manifest pins (`vX.Y.Z`)
  must be exactly Debian's upstream version (a Debian repack, +ds or +dfsg, counts as the same release), or this
  stops: a different release is not the manifest's build;
- the `dir` source (the checkout, `../..` from the manifest) gets an absolute path, since the copy lives elsewhere.
Everything else (runtime, finish-args, build options, cleanup) is the manifest's own, byte for byte in meaning.

    offline-manifest.py SHOWN.json SOURCES CHECKOUT OUT.json
"""
import hashlib
import json
import os
import re
import sys

# The manifest's modules whose sources are git repositories, and the Debian source package of the same project.
DEBIAN_SOURCE = {"xxhash": "xxhash", "cli11": "cli11"}


def die(msg):
    sys.exit(f"offline-manifest: {msg}")


def read_source(sources, package):
    """(Debian's version, path of the upstream tarball) of |package|, as debian-orig.py left it in |sources|."""
    try:
        with open(os.path.join(sources, package + ".source"), encoding="utf-8") as f:
            fields = dict(line.split("=", 1) for line in f.read().split())
    except OSError as e:
        die(f"no {package}.source in {sources} (debian-orig.py fetches it): {e}")
    path = os.path.join(sources, fields["orig"])
    if not os.path.isfile(path) or sha256(path) != fields["sha256"]:
        die(f"{path} is missing or not what Debian's index lists")
    return fields["version"], path


def upstream_release(debian_version):
    """Debian's version without epoch, revision and repack suffix: "2.4.1+ds-2" is upstream's 2.4.1, repacked by
    Debian (+ds, +dfsg: files removed that Debian can't ship or doesn't need, here neither headers nor build)."""
    upstream = debian_version.split(":", 1)[-1].rsplit("-", 1)[0]
    return re.sub(r"\+(ds|dfsg)[0-9]*$", "", upstream)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def replace_git(module, source, sources):
    name = str(module.get("name", ""))
    package = DEBIAN_SOURCE.get(name.lower())
    if package is None:
        die(f"module {name}: a git source ({source.get('url')}) with no Debian source package named for it")
    tag = str(source.get("tag", ""))
    version, tarball = read_source(sources, package)
    if tag.lstrip("v") != upstream_release(version):
        die(f"module {name}: the manifest pins {tag}, Debian's {package} is {version}: not the same release")
    print(f"offline-manifest: {name} {tag} ({source.get('url')}) -> Debian's {os.path.basename(tarball)}")
    return {"type": "archive", "path": tarball, "sha256": sha256(tarball)}


def rewrite(modules, sources, checkout):
    for module in modules:
        if not isinstance(module, dict):
            continue
        new = []
        for source in module.get("sources", []):
            if isinstance(source, dict) and source.get("type") == "git":
                source = replace_git(module, source, sources)
            elif isinstance(source, dict) and source.get("type") == "dir":
                source = dict(source, path=checkout)
            new.append(source)
        module["sources"] = new
        rewrite(module.get("modules", []), sources, checkout)


def main():
    if len(sys.argv) != 5:
        die("usage: offline-manifest.py SHOWN.json SOURCES CHECKOUT OUT.json")
    shown, sources, checkout, out = sys.argv[1:]
    with open(shown, encoding="utf-8") as f:
        manifest = json.load(f)
    rewrite(manifest.get("modules", []), os.path.abspath(sources), os.path.abspath(checkout))
    with open(out, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
