#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Packaging checks, one ctest per case. Exit 0 pass, 1 fail, 77 skipped (with "SKIP: <reason>" printed).

  installed_files   `cmake --install` into a private DESTDIR, then desktop-file-validate and appstreamcli validate
                    on what was installed, and the cross-references between the desktop file, metainfo and icons
  flatpak_manifest  `flatpak-builder --show-manifest`: fails on a parse error or on any stderr output (unknown keys
                    and an unquoted runtime-version only warn), then checks what the manifest must say
  deb_package       `cpack -G DEB` into a private folder, then the package's fields and `dpkg -c` file list
  deb_lintian       the same .deb through this distribution's lintian (Debian 12's here, Debian 13's in its clean
                    root): no error and no warning; skipped when the build installs elsewhere than /usr, where no
                    Debian package goes

Each case works in its own temporary folder, so ctest may run them in parallel with everything else.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

APP_ID = "io.github.sanecopy.SaneCopy"
SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def need(tool, package):
    path = shutil.which(tool)
    if not path:
        skip(f"{tool} not found (Debian: {package}; packaging/dev.sh installs it)")
    return path


class Checks:
    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            self.failures.append(what)

    def exit(self):
        if self.failures:
            print(f"{len(self.failures)} check(s) failed")
            sys.exit(1)
        sys.exit(0)


def run(cmd, **kw):
    print("$ " + " ".join(cmd))
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def show(proc):
    for stream in (proc.stdout, proc.stderr):
        if stream.strip():
            print(stream.rstrip())


def desktop_keys(path):
    """The [Desktop Entry] group of a desktop file as a dict."""
    keys, group = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("["):
                group = line.strip("[]")
                continue
            if group == "Desktop Entry" and "=" in line:
                k, v = line.split("=", 1)
                keys[k] = v
    return keys


def case_installed_files(args):
    validate_desktop = need("desktop-file-validate", "desktop-file-utils")
    appstreamcli = need("appstreamcli", "appstream")
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="sanecopy-install-") as destdir:
        # DESTDIR rather than --prefix: it also catches any absolute install path, which would otherwise land in
        # the real system.
        proc = run([args.cmake, "--install", args.build], env=dict(os.environ, DESTDIR=destdir))
        if proc.returncode != 0:
            show(proc)
        c.check(proc.returncode == 0, "cmake --install into a temporary DESTDIR")

        def staged(path):
            return destdir + path

        desktop = staged(f"{args.datadir}/applications/{APP_ID}.desktop")
        metainfo = staged(f"{args.datadir}/metainfo/{APP_ID}.metainfo.xml")
        icon = staged(f"{args.datadir}/icons/hicolor/scalable/apps/{APP_ID}.svg")
        symbolic = staged(f"{args.datadir}/icons/hicolor/symbolic/apps/{APP_ID}-symbolic.svg")
        for path in (desktop, metainfo, icon, symbolic, staged(f"{args.bindir}/sanecp")):
            c.check(os.path.isfile(path), "installed " + os.path.relpath(path, destdir))
        if args.gui:
            sanecopy = staged(f"{args.bindir}/sanecopy")
            c.check(os.path.isfile(sanecopy), "installed " + os.path.relpath(sanecopy, destdir))
        if args.man:
            for program in ("sanecp", "sanecopy") if args.gui else ("sanecp",):
                page = staged(f"{args.mandir}/man1/{program}.1.gz")
                c.check(os.path.isfile(page), "installed " + os.path.relpath(page, destdir))
        if c.failures:
            c.exit()
        # gdk-pixbuf (GTK, AppStream's compose in flatpak-builder, software centres) knows an SVG by "<svg" in the
        # file's first bytes; a comment before the root element hid the icon from it.
        for path in (icon, symbolic):
            with open(path, "rb") as f:
                c.check(b"<svg" in f.read(128), os.path.basename(path) + ": the root element is in the first 128 bytes")

        proc = run([validate_desktop, desktop])
        show(proc)
        # Hints are printed too; the file is small enough to have none.
        c.check(proc.returncode == 0 and not (proc.stdout + proc.stderr).strip(),
                "desktop-file-validate: no errors, warnings or hints")

        # --pedantic: every finding down to the pedantic ones, each of which fails the check except these, kept
        # with their reasons. cid-contains-uppercase-letter: the id is the flatpak's id and the D-Bus name, which
        # installed copies' settings, service menus and places are keyed by; the AppStream spec allows it.
        # developer-name-tag-deprecated, developer-info-missing (AppStream 1.0, Debian 13): the file names its
        # developer with <developer_name>, because AppStream 0.16 (Debian 12) does not know <developer>; one file
        # serves both. --no-net: the machine has no network.
        accepted = {"cid-contains-uppercase-letter", "developer-name-tag-deprecated", "developer-info-missing"}
        proc = run([appstreamcli, "validate", "--no-net", "--pedantic", metainfo])
        show(proc)
        found = re.findall(r"^[EWIP]: \S+:(?:\d+:)? (\S+)", proc.stdout, re.M)
        c.check(proc.returncode == 0 and not set(found) - accepted,
                "appstreamcli validate --pedantic: no findings but the id's capitals (" + ", ".join(found) + ")")

        keys = desktop_keys(desktop)
        c.check(keys.get("Icon") == APP_ID, f"desktop Icon is the app id, installed as {os.path.basename(icon)}")
        c.check(keys.get("Exec", "").split()[:1] == ["sanecopy"] and "%F" in keys.get("Exec", "").split(),
                "desktop Exec runs sanecopy with %F")
        with open(metainfo, encoding="utf-8") as f:
            meta = f.read()
        c.check(f"<id>{APP_ID}</id>" in meta, "metainfo id is the app id")
        # German beside the English, as KDE keeps translations in these files.
        c.check(keys.get("GenericName[de]") == "Dateikopierer" and "Comment[de]" in keys,
                "desktop file has its German name and comment")
        c.check('<summary xml:lang="de">' in meta and '<li xml:lang="de">' in meta, "metainfo has its German text")
        if args.gui:
            for lang in ("de", "en"):
                qm = staged(f"{args.datadir}/locale/{lang}/LC_MESSAGES/sanecopy_qt.qm")
                c.check(os.path.isfile(qm), "installed " + os.path.relpath(qm, destdir))
        mo = staged(f"{args.datadir}/locale/de/LC_MESSAGES/sanecopy.mo")
        c.check(os.path.isfile(mo), "installed " + os.path.relpath(mo, destdir))
        c.check(f'<launchable type="desktop-id">{APP_ID}.desktop</launchable>' in meta,
                "metainfo launchable names the installed desktop file")
    c.exit()


def case_flatpak_manifest(args):
    flatpak_builder = need("flatpak-builder", "flatpak-builder")
    c = Checks()
    # flatpak-builder makes its state folder (.flatpak-builder) in the working directory, even for
    # --show-manifest: give it a private one.
    with tempfile.TemporaryDirectory(prefix="sanecopy-flatpak-") as work:
        proc = run([flatpak_builder, "--show-manifest", os.path.abspath(args.manifest)], cwd=work)
    show(proc)
    c.check(proc.returncode == 0, "flatpak-builder --show-manifest parses the manifest")
    c.check(not proc.stderr.strip(), "flatpak-builder --show-manifest prints nothing on stderr (no warnings)")
    if c.failures:
        c.exit()
    m = json.loads(proc.stdout)
    c.check(m.get("id", m.get("app-id")) == APP_ID, "app id")
    c.check(m.get("runtime") == "org.kde.Platform" and m.get("sdk") == "org.kde.Sdk", "KDE runtime and SDK")
    c.check(re.fullmatch(r"6\.\d+", str(m.get("runtime-version", ""))) is not None, "runtime-version 6.x")
    c.check(m.get("command") == "sanecopy", "command is sanecopy")

    finish = m.get("finish-args", [])
    for arg in ("--share=ipc", "--socket=wayland", "--socket=fallback-x11", "--filesystem=/media",
                "--filesystem=/run/media", "--filesystem=/mnt", "--filesystem=home",
                "--system-talk-name=org.freedesktop.UDisks2", "--talk-name=org.freedesktop.Notifications",
                "--talk-name=org.kde.kuiserver", "--filesystem=xdg-data/kio/servicemenus:create"):
        c.check(arg in finish, "finish-args has " + arg)
    # Home read-write, for Safe Move's removal of its sources; nothing of the system beyond it.
    for arg in ("--filesystem=host", "--filesystem=host:rw", "--filesystem=host-os", "--filesystem=home:ro"):
        c.check(arg not in finish, "finish-args lacks " + arg)

    # Flathub builds only sources pinned by commit; flatpak-builder then stops if the tag beside it moved.
    def all_modules(mods):
        for mod in mods:
            if isinstance(mod, dict):
                yield mod
                yield from all_modules(mod.get("modules", []))

    modules = list(all_modules(m.get("modules", [])))
    for mod in modules:
        for src in mod.get("sources", []):
            if isinstance(src, dict) and src.get("type") == "git":
                c.check(re.fullmatch(r"[0-9a-f]{40}", str(src.get("commit", ""))) is not None,
                        f"{mod.get('name')}: git source {src.get('url')} pinned by a 40-hex commit")
    cli11 = [s for mod in modules if str(mod.get("name", "")).lower() == "cli11"
             for s in mod.get("sources", []) if isinstance(s, dict) and s.get("type") == "git"]
    c.check(len(cli11) == 1 and re.fullmatch(r"v2\.\d+\.\d+", str(cli11[0].get("tag", ""))) is not None,
            "cli11 module builds a CLI11 v2.x tag")

    apps = [mod for mod in m.get("modules", []) if isinstance(mod, dict) and mod.get("name") == "sanecopy"]
    c.check(len(apps) == 1, "one sanecopy module")
    if apps:
        app = apps[0]
        c.check(app.get("buildsystem") == "cmake-ninja", "sanecopy module is cmake-ninja")
        opts = app.get("config-opts", [])
        c.check("-DBUILD_TESTING=OFF" in opts, "BUILD_TESTING off")
        c.check("-DSANECOPY_BUILD_KIO_WORKER=OFF" in opts, "KIO worker off")
        dirs = [s for s in app.get("sources", []) if s.get("type") == "dir"]
        c.check(len(dirs) == 1, "sanecopy module builds from a dir source")
        if dirs:
            root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(args.manifest)), dirs[0]["path"]))
            c.check(os.path.samefile(root, args.source), f"the dir source is the repository root ({root})")
    c.exit()


def case_deb_package(args):
    cpack = args.cpack
    dpkg_deb = need("dpkg-deb", "dpkg")
    # CPACK_DEBIAN_PACKAGE_SHLIBDEPS runs it; without it the Depends line would silently lack the libraries.
    need("dpkg-shlibdeps", "dpkg-dev")
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="sanecopy-deb-") as out:
        proc = run([cpack, "-G", "DEB", "-B", out, "--config", os.path.join(args.build, "CPackConfig.cmake")])
        show(proc)
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        c.check(proc.returncode == 0 and len(debs) == 1, "cpack -G DEB made one .deb")
        if c.failures:
            c.exit()
        deb = os.path.join(out, debs[0])
        c.check(re.fullmatch(r"sanecopy_[0-9][^_]*_[a-z0-9]+\.deb", debs[0]) is not None, f"file name {debs[0]}")

        fields = {}
        for name in ("Package", "Version", "Section", "Maintainer", "Depends", "Description"):
            fields[name] = run([dpkg_deb, "-f", deb, name]).stdout.strip()
            print(f"  {name}: {fields[name].splitlines()[0] if fields[name] else ''}")
        c.check(fields["Package"] == "sanecopy", "Package: sanecopy")
        c.check(fields["Section"] == "utils", "Section: utils")
        c.check(re.fullmatch(r".+ <[^@>]+@[^>]+>", fields["Maintainer"]) is not None, "Maintainer: Name <email>")
        depends = [d.strip().split()[0] for d in fields["Depends"].split(",") if d.strip()]
        c.check("libc6" in depends, "Depends has libc6 (dpkg-shlibdeps ran)")
        c.check("libqt6svg6" in depends, "Depends has libqt6svg6 (the icon engine plugin)")
        if args.gui:
            c.check("libqt6widgets6" in depends, "Depends has libqt6widgets6")
        c.check(len(fields["Description"].splitlines()) > 1, "Description has a long description")

        proc = run([dpkg_deb, "-c", deb])
        c.check(proc.returncode == 0, "dpkg -c lists the package")
        print(proc.stdout.rstrip())
        # "mode owner/group size date time ./path[ -> target]"; folders are not files.
        files = [re.sub(r" -> .*$", "", m.group(1)) for m in
                 (re.match(r"^[^d]\S*\s+\S+\s+\d+\s+\S+\s+\S+\s+(.*)$", line) for line in proc.stdout.splitlines())
                 if m]

        def has(pattern, what):
            c.check(any(re.search(pattern, f) for f in files), "package contains " + what)

        has(r"/bin/sanecp$", "bin/sanecp")
        if args.gui:
            has(r"/bin/sanecopy$", "bin/sanecopy")
        if args.man:
            has(r"/share/man/man1/sanecp\.1\.gz$", "sanecp's man page")
            if args.gui:
                has(r"/share/man/man1/sanecopy\.1\.gz$", "sanecopy's man page")
        has(rf"/share/applications/{re.escape(APP_ID)}\.desktop$", "the desktop file")
        if args.gui:
            has(r"/share/locale/de/LC_MESSAGES/sanecopy_qt\.qm$", "the window's German catalogue")
        has(r"/share/locale/de/LC_MESSAGES/sanecopy\.mo$", "the engine's and sanecp's German catalogue")
        has(rf"/share/metainfo/{re.escape(APP_ID)}\.metainfo\.xml$", "the metainfo")
        has(rf"/share/icons/hicolor/scalable/apps/{re.escape(APP_ID)}\.svg$", "the app icon")
        has(rf"/share/icons/hicolor/symbolic/apps/{re.escape(APP_ID)}-symbolic\.svg$", "the symbolic icon")
        if args.with_worker:
            has(r"/kf[56]/kio/[^/]+\.so$", "the KIO worker plugin (kf5/kio or kf6/kio)")
            if args.prefix == "/usr":
                # Where KIO looks without QT_PLUGIN_PATH: Qt's own plugin folder, as Debian's workers are.
                has(r"^\./usr/lib/[^/]+/qt[56]/plugins/kf[56]/kio/kio_sanecopy\.so$",
                    "the KIO worker in Qt's plugin folder (usr/lib/<triplet>/qt5|qt6/plugins)")
            has(r"/share/kio/servicemenus/[^/]+\.desktop$", "the Dolphin service menus")
            has(r"/share/locale/de/LC_MESSAGES/kio_sanecopy\.mo$", "the KIO worker's German catalogue")
        else:
            print("note  the KIO worker is not built in this tree: its plugin and service menus are not checked")
    c.exit()


def case_deb_lintian(args):
    lintian = need("lintian", "lintian")
    if args.prefix != "/usr":
        skip(f"the build installs into {args.prefix}; a Debian package is built with CMAKE_INSTALL_PREFIX=/usr "
             "(packaging/dev.sh and the Debian 13 root configure it so)")
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="sanecopy-lintian-") as out:
        proc = run([args.cpack, "-G", "DEB", "-B", out, "--config", os.path.join(args.build, "CPackConfig.cmake")])
        debs = [f for f in os.listdir(out) if f.endswith(".deb")]
        c.check(proc.returncode == 0 and len(debs) == 1, "cpack -G DEB made one .deb")
        if c.failures:
            show(proc)
            c.exit()
        proc = run([lintian, "--fail-on", "error,warning", "--tag-display-limit", "0", os.path.join(out, debs[0])])
        tags = [line for line in (proc.stdout + proc.stderr).splitlines() if "running with root privileges" not in line]
        for line in tags:
            print("  " + line)
        version = run([lintian, "--version"]).stdout.strip()
        c.check(proc.returncode == 0, f"{version}: no error and no warning")
    c.exit()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--cpack", default="cpack")
    p.add_argument("--build", help="the CMake build folder")
    p.add_argument("--source", help="the repository root")
    p.add_argument("--manifest", help="the flatpak manifest")
    p.add_argument("--datadir", help="CMAKE_INSTALL_FULL_DATADIR")
    p.add_argument("--bindir", help="CMAKE_INSTALL_FULL_BINDIR")
    p.add_argument("--gui", type=int, default=1, help="1 when the GUI is built")
    p.add_argument("--with-worker", type=int, default=0, help="1 when the KIO worker is built")
    p.add_argument("--mandir", help="CMAKE_INSTALL_FULL_MANDIR")
    p.add_argument("--man", type=int, default=0, help="1 when the man pages are built")
    p.add_argument("--prefix", help="CMAKE_INSTALL_PREFIX")
    p.add_argument("case", choices=["installed_files", "flatpak_manifest", "deb_package", "deb_lintian"])
    args = p.parse_args()
    {"installed_files": case_installed_files, "flatpak_manifest": case_flatpak_manifest,
     "deb_package": case_deb_package, "deb_lintian": case_deb_lintian}[args.case](args)


if __name__ == "__main__":
    main()
