#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Set-up for a fresh Debian 12: installs the Debian packages that are missing, builds, then
#   dev.sh run [FILE...]          starts the SaneCopy window (without a display: sanecp, on a demo file
#                                 when no SOURCE... DEST is given)
#   dev.sh test                   runs every test (ctest)
#   dev.sh test-debian13          the same suite on Debian 13 (KF6, Qt 6.8) in a cached debootstrap root, then
#                                 the .deb in a clean Debian 13 root (packaging/debian13.sh; root only)
#   dev.sh test-usb [NAME,...]    the USB stick scenarios (tests/vm/) in a qemu guest running Debian 13's kernel
#                                 ("compare" among the names: dd and cp timed beside sanecp)
#   dev.sh test-flatpak           the flatpak built from the manifest against a stand-in KDE runtime made from
#                                 Debian 13, and tests/flatpak/ run inside its sandbox (root only)
# Safe to run again: apt is only called for packages that are not installed yet. As non-root it prints the
# apt command to run instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${SANECOPY_BUILD_DIR:-$here/build}
mode=${1:-run}
[ $# -gt 0 ] && shift
if [ "$mode" = test-debian13 ] || [ "$mode" = test-usb ] || [ "$mode" = test-flatpak ]; then
    # Nothing of the host's build is needed: the Debian 13 root builds the checkout itself.
    [ "$mode" = test-usb ] && exec "$here/packaging/debian13.sh" usb "$@"
    [ "$mode" = test-flatpak ] && exec "$here/packaging/debian13.sh" flatpak "$@"
    exec "$here/packaging/debian13.sh" test "$@"
fi

# What the build, the tests and the benchmark need, with --no-install-recommends. libqt6opengl6-dev is only
# recommended by qt6-base-dev, yet Qt6's CMake configs fail without it.
packages=(
    g++ cmake ninja-build pkg-config ccache
    catch2 libcli11-dev libxxhash-dev libblkid-dev nettle-dev
    qt6-base-dev libqt6opengl6-dev fonts-dejavu-core
    # Qt's lupdate and lconvert: the window's translations (ui/po/); gettext's msgfmt checks the catalogues;
    # the German locale's sources, for the tests that run as a German user.
    qt6-l10n-tools gettext locales
    extra-cmake-modules libkf5kio-dev libkf5i18n-dev libkf5dbusaddons-dev kio kde-cli-tools
    # kded5 loads the module that keeps sanecopy://devices/ current; the test runs the real one.
    kded5
    # The icon's SVG engine (a Qt plugin); the packaging tests' validators, dpkg-shlibdeps (and the file(1) that
    # CPack's DEB generator needs for it), flatpak-builder.
    libqt6svg6 desktop-file-utils appstream dpkg-dev file flatpak-builder
    # Debian's own checks of the .deb that CPack makes (packaging/deb_lintian).
    lintian
    python3 util-linux mount e2fsprogs rsync
    # GNU time: the bench's peak RSS of each tool.
    time
    # The man pages are made from each program's --help; man renders them in their test.
    help2man man-db
    # A private session bus for the single-instance test; a stand-in for Plasma's job view server on one
    # (tests/kio-worker/job_view_standin.py).
    dbus python3-dbus python3-gi
    # Dolphin 22.12 under Xvfb for the "Safe Copy" place's test, and what drives and photographs it; an X tray
    # for the background state's.
    dolphin xvfb xauth x11-utils xdotool imagemagick trayer
    dosfstools fusefat exfatprogs exfat-fuse
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    cmd="apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "SaneCopy needs these Debian packages: ${missing[*]}" >&2
        echo "Run as root:  apt-get update && $cmd" >&2
        exit 1
    fi
    echo "== installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=300 update -qq
    # shellcheck disable=SC2086
    $cmd
fi

echo "== building in $build"
# ccache (its cache in the user's home, outside the checkout): a fresh clone has new mtimes, so without it every
# clone rebuilds everything.
# Paths relative to the checkout, so a clone in another folder (CI's) hits what this one cached.
export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=true
# rcc writes each resource's time into the code it makes: a clone's files are all new, so the commit's time stands
# in for theirs (the reproducible-builds variable rcc reads), and those files too come from ccache.
if epoch=$(git -C "$here" log -1 --format=%ct 2>/dev/null) && [ -n "$epoch" ]; then
    export SOURCE_DATE_EPOCH="$epoch"
fi
# The prefix of a Debian package: nothing is installed from here, but `cpack -G DEB` packs this build, and the
# .deb goes through lintian (packaging/deb_lintian). Install a build by hand with the .deb, or configure another
# folder with the default /usr/local for `cmake --install`. Qt's own plugin folder for the KIO worker, where KIO
# looks: ECM picks it for a /usr prefix only on a folder's first configure, and this one may have had another.
# Line tables only (-g1): backtraces still name files and lines, the compiler takes a fifth less time (full -g made
# a Qt file 35 % slower to compile), and the .deb is stripped anyway. A build of your own keeps CMake's -g.
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DKDE_INSTALL_USE_QT_SYS_PATHS=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
cmake --build "$build"

case "$mode" in
run)
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x "$build/app/sanecopy" ]; then
        # The GUI; with FILEs it opens with them queued and asks where to copy them.
        exec "$build/app/sanecopy" "$@"
    fi
    echo "== no display: running the command-line sanecp instead of the window"
    if [ $# -ge 2 ]; then
        exec "$build/app/sanecp" "$@"
    fi
    demo=$(mktemp -d /var/tmp/sanecopy-demo.XXXXXX)
    trap 'rm -rf "$demo"' EXIT
    echo "== demo: copying 512 MiB with sanecp (pass SOURCE... DEST to copy your own files)"
    head -c 512M /dev/urandom >"$demo/demo.bin"
    mkdir "$demo/copy"
    "$build/app/sanecp" "$demo/demo.bin" "$demo/copy/"
    cmp "$demo/demo.bin" "$demo/copy/demo.bin" && echo "== the copy is byte-identical"
    ;;
test)
    cd "$build"
    # Tests that need root (loop-device sticks, small mounts) say SKIP with the reason when they can't run.
    # Two per core: most of them wait (slowed seams, throttled sticks, timers). On 2 cores the suite used 92 s of
    # CPU in 135 s at one per core, and took 84-87 s at two (76 s at three).
    # ctest starts the longest tests first when it knows their times (Testing/Temporary/CTestCostData.txt); a
    # fresh clone doesn't, and its last test to start took 29 s alone at the end. So the times are kept outside the
    # checkout, like ccache.
    costs=${XDG_CACHE_HOME:-$HOME/.cache}/sanecopy/CTestCostData.txt
    mkdir -p Testing/Temporary "$(dirname "$costs")"
    [ -f Testing/Temporary/CTestCostData.txt ] || cp "$costs" Testing/Temporary/ 2>/dev/null || true
    rc=0
    ctest --output-on-failure -j"$(($(nproc) * 2))" "$@" || rc=$?
    cp Testing/Temporary/CTestCostData.txt "$costs" 2>/dev/null || true
    exit "$rc"
    ;;
*)
    echo "usage: $0 run [SOURCE... DEST] | test [ctest options] | test-debian13 [ctest options] | test-usb [NAME,...] | test-flatpak" >&2
    exit 2
    ;;
esac
