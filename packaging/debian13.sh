#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# SaneCopy on Debian 13 (Plasma 6: KF6 6.13, Qt 6.8, CLI11 2.4, Catch2 v3, GCC 14), from a Debian 12 host:
#   debian13.sh test [ctest options]   builds this checkout in a Debian 13 root and runs the whole ctest suite
#                                      there (stick and kioclient tests included, none may be skipped), then
#                                      installs the .deb that CPack made into a clean Debian 13 root and copies
#                                      through the installed worker.
#   debian13.sh usb [NAME,NAME]        builds, then boots Debian 13's kernel under qemu with an emulated, throttled
#                                      USB stick and runs tests/vm/'s scenarios there (all, or the named ones);
#                                      `packaging/dev.sh test-usb`.
#   debian13.sh flatpak                builds the flatpak from the repository's manifest against stand-ins for
#                                      KDE's runtime made from Debian 13, installs it as a user flatpak and runs
#                                      tests/flatpak/ inside the sandbox (packaging/flatpak/standin.sh);
#                                      `packaging/dev.sh test-flatpak`.
#   debian13.sh root                   only makes (or refreshes) the cached roots: the build root, the guest's and
#                                      the flatpak's stand-in runtimes; prints the build root's path. CI starts it
#                                      beside the host's suite (.ci/run).
#   debian13.sh shell                  a shell in the build root, with the checkout at /src.
#   debian13.sh dolphin-screenshot PNG Dolphin 25.04 under Xvfb in the build root, with the context menu of a
#                                      folder open, the build's service menus installed for the user (after `test`).
# Called as `packaging/dev.sh test-debian13`. Root only: debootstrap, chroot, loop devices and blkio throttles.
#
# The roots are cached outside the checkout, in $SANECOPY_CACHE (default /var/cache/sanecopy) /debian13:
#   base/      a `debootstrap --variant=minbase trixie` root, never changed after: the "clean Debian 13"
#   root/      base plus the build and test packages below; refreshed when that list changes
#   archives/  apt's downloaded .debs, shared by both roots, so a warm run downloads nothing
#   ccache/    the compiler cache of builds in root/ (a fresh clone has new mtimes; ccache looks at content)
#   vmroot/    base plus a kernel, the filesystem tools and the .deb built here: the USB test guest's root
#   vm/        the guest's packed root image, its stick image and the last run's console log
# The mirror is the host's own Debian mirror, read from its apt sources at run time. The host's apt
# configuration is never written: each root has its own sources.list.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SANECOPY_CACHE:-/var/cache/sanecopy}/debian13
mode=${1:-test}
[ $# -gt 0 ] && shift

# Build and test dependencies on Debian 13, with --no-install-recommends. The first line builds; the rest are
# what the tests drive: the KF6 worker through kioclient and Dolphin's menu code, the loop-device sticks, the
# FUSE FAT/exFAT sticks, the packaging validators, and Dolphin itself under Xvfb for the screenshot.
packages=(
    g++ cmake ninja-build pkg-config ccache catch2 libcli11-dev libxxhash-dev libblkid-dev nettle-dev
    qt6-base-dev qt6-svg-plugins qt6-l10n-tools gettext fonts-dejavu-core extra-cmake-modules libkf6kio-dev libkf6i18n-dev libkf6dbusaddons-dev kio6 kded6 kde-cli-tools
    python3 util-linux mount e2fsprogs rsync procps dosfstools fusefat exfatprogs exfat-fuse fuse3
    desktop-file-utils appstream dpkg-dev file flatpak-builder
    dolphin xvfb xauth x11-utils xdotool imagemagick dbus breeze-icon-theme stalonetray
    # The flatpak suite (packaging/flatpak/standin.sh): flatpak itself; what flatpak-builder runs outside the
    # sandbox (eu-strip, and AppStream's compose, which reads the SVG icon through librsvg's gdk-pixbuf loader);
    # the stand-ins for Plasma's job view server and the notification server that the sandboxed app talks to.
    flatpak elfutils librsvg2-common python3-dbus python3-gi
    # The house's checks (packaging/lint.py): clang-tidy, clazy and clang-format, and a venv for lizard, which
    # Debian lacks.
    clang-tidy clazy clang-format python3-venv
    # The man pages, made from each program's --help, and man to render them in their test.
    help2man man-db
    # The German locale's sources, for the tests that run as a German user (stick.german_session); lintian for
    # packaging/deb_lintian, as on Debian 12.
    locales lintian
    # Dolphin's network folders for real (tests/ui/test_kio_fuse.py): kio-fuse, KIO's sftp worker and an sshd.
    # Here only: on a developer's Debian 12 the package would start an ssh server (the test skips there).
    kio-fuse kio-extras openssh-server openssh-client
)
# What the clean root gets beside the .deb: the client that drives the installed worker, man for its pages, and
# lintian, the distribution's own checks of a package.
deb_test_packages=(kde-cli-tools man-db lintian locales)
# A real Plasma 6 session for tests/plasma/plasma_check.py: plasmashell (the desktop shell is plasma-desktop's),
# Xvfb with Mesa's software OpenGL, and what photographs the screen.
plasma_packages=(plasma-workspace plasma-desktop kded6 xvfb xauth dbus-x11 libgl1-mesa-dri imagemagick x11-utils
    fonts-noto-core kde-cli-tools)
# The USB test guest, beside the .deb: Debian 13's kernel (its initramfs mounts the virtio root), the stick's
# filesystems' tools, what the scenarios run, and the servers and clients of the network shares (tests/vm/shares.py).
vm_packages=(linux-image-amd64 initramfs-tools kmod procps util-linux mount e2fsprogs dosfstools exfatprogs ntfs-3g
             python3 diffutils kde-cli-tools udisks2 xvfb polkitd strace rsync util-linux-extra
             samba cifs-utils nfs-kernel-server rpcbind iproute2 openssh-server openssh-client sshfs)

die() { echo "debian13: $*" >&2; exit 1; }
log() { echo "== debian13: $*"; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, loop devices). Run it as root."

# The host's Debian mirror: the first URI of its apt sources (deb822 or one-line style).
host_mirror() {
    local uri=""
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
        uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
    fi
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
        uri=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' \
              /etc/apt/sources.list)
    fi
    [ -n "$uri" ] || die "found no Debian mirror in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
    echo "${uri%/}"
}

check_mirror() {
    python3 - "$1" <<'PY' || die "can't reach the Debian mirror $1 (its dists/trixie/Release): Debian 13 needs it"
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/dists/trixie/Release", timeout=30).read(1)
PY
}

# Mounts for a chroot, undone on every exit path. The rbinds bring /sys's cgroup (blkio throttles) and debugfs
# (per-device dirty counters) and /dev's loop devices and FUSE along; rslave keeps the chroot's unmounts from
# reaching the host.
mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -R "${mounted[i]}" 2>/dev/null || umount -R -l "${mounted[i]}" 2>/dev/null || true
    done
    mounted=()
}
trap unmount_all EXIT
trap 'exit 130' INT TERM

bind() { # bind SRC DST [ro]
    mkdir -p "$2"
    mount --rbind "$1" "$2"
    mount --make-rslave "$2"
    mounted+=("$2")
    if [ "${3:-}" = ro ]; then
        mount -o remount,bind,ro "$2"
    fi
}

enter() { # enter ROOT: mounts what a test in ROOT needs
    local r=$1
    # The root a mount point of its own, as in a container: without it the chroot's mountinfo has no "/", so
    # the device probe finds no filesystem for a path, and `unshare --mount` can't make "/" private.
    mount --bind "$r" "$r"
    mount --make-private "$r"
    mounted+=("$r")
    bind /proc "$r/proc"
    bind /sys "$r/sys"
    bind /dev "$r/dev"
    bind "$cache/archives" "$r/var/cache/apt/archives"
    cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
}

leave() { unmount_all; }

# A path under the cache is removed only with nothing mounted below it: an rm -rf through a live bind of /dev
# or /sys would wipe the host's.
remove_root() {
    local r=$1
    [ -e "$r" ] || return 0
    if findmnt -rn -o TARGET | grep -q "^$(realpath "$r")\(/\|$\)"; then
        die "$r still has mounts below it; not removing it"
    fi
    rm -rf --one-file-system "$r"
}

# Throwaway roots need no fsync after each file dpkg unpacks (Debian's own container images are set up so): the
# clean root's install of the .deb and its 430 dependencies took 61 s with them and 39 s without.
unsafe_io() { echo force-unsafe-io >"$1/etc/dpkg/dpkg.cfg.d/sanecopy-unsafe-io"; }

in_root() { # in_root ROOT CMD...: runs CMD in ROOT with a clean environment
    local r=$1
    shift
    chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
        LANG=C.UTF-8 LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive TERM=dumb "$@"
}

make_base() {
    [ -f "$cache/base/.sanecopy-base" ] && return 0
    command -v debootstrap >/dev/null || {
        log "installing debootstrap on the host"
        apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends debootstrap >/dev/null
    }
    local mirror
    mirror=$(host_mirror)
    check_mirror "$mirror"
    log "debootstrap --variant=minbase trixie from $mirror"
    remove_root "$cache/base.new"
    debootstrap --variant=minbase --cache-dir="$cache/archives" trixie "$cache/base.new" "$mirror" \
        >"$cache/debootstrap.log" 2>&1 || { tail -n 20 "$cache/debootstrap.log" >&2; die "debootstrap failed (log: $cache/debootstrap.log)"; }
    echo "deb $mirror trixie main" >"$cache/base.new/etc/apt/sources.list"
    # Keep downloaded packages: archives/ is shared and is what makes a warm run need no network.
    echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$cache/base.new/etc/apt/apt.conf.d/10keep"
    in_root "$cache/base.new" apt-get clean
    touch "$cache/base.new/.sanecopy-base"
    mv "$cache/base.new" "$cache/base"
}

# root_with ROOT LOG WHAT PACKAGE...: ROOT is base plus the PACKAGEs. Its stamp is their list: a changed list
# installs what is new (apt is additive), a missing root is copied from base.
root_with() {
    local r=$1 logfile=$2 what=$3 want have=""
    shift 3
    want=$(printf '%s\n' "$@" | sort | sha256sum | cut -c1-16)
    [ -f "$r/.sanecopy-packages" ] && have=$(cat "$r/.sanecopy-packages")
    [ "$want" = "$have" ] && return 0
    if [ ! -d "$r" ]; then
        log "copying base to $r"
        remove_root "$r.new"
        cp -a "$cache/base" "$r.new"
        mv "$r.new" "$r"
    fi
    check_mirror "$(host_mirror)"
    log "installing $what ($# packages)"
    enter "$r"
    # Daemons the packages bring (the guest's Samba, NFS and ssh servers) must not start here, on the host's
    # network: the guest starts its own.
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
    chmod 755 "$r/usr/sbin/policy-rc.d"
    unsafe_io "$r"
    in_root "$r" apt-get -q update >/dev/null
    in_root "$r" apt-get -q install -y --no-install-recommends "$@" >"$logfile" 2>&1 ||
        { tail -n 30 "$logfile" >&2; leave; die "apt-get install in $r failed (log: $logfile)"; }
    leave
    echo "$want" >"$r/.sanecopy-packages"
}

prepare() {
    mkdir -p "$cache/archives/partial"
    # One run at a time per cache: two would share the roots' mounts and build folder.
    exec 9>"$cache/.lock"
    flock -w 3600 9 || die "another run holds $cache/.lock"
    make_base
    root_with "$cache/root" "$cache/apt.log" "the build and test packages in the build root" "${packages[@]}"
}

# Builds the checkout in the build root against KF6 (only TARGETs, when given). Leaves the root entered.
build_checkout() {
    local r=$cache/root
    enter "$r"
    bind "$here" "$r/src" ro
    mkdir -p "$cache/ccache"
    bind "$cache/ccache" "$r/var/cache/ccache"
    log "building the checkout against KF6 in the Debian 13 root"
    # One build folder in the root serves whichever checkout is bound at /src, and ninja judges by timestamps: a
    # checkout whose files are older than the last build's objects (another clone) would link stale objects.
    # A different checkout starts the folder afresh; ccache keeps that cheap.
    if [ "$(cat "$r/build/.sanecopy-checkout" 2>/dev/null)" != "$here" ]; then
        rm -rf "$r/build"
        mkdir -p "$r/build"
        echo "$here" >"$r/build/.sanecopy-checkout"
    fi
    # Line tables only, as in dev.sh: a fifth less compiler time, and the .deb is stripped.
    in_root "$r" env CCACHE_DIR=/var/cache/ccache cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_INSTALL_PREFIX=/usr \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
    local targets=()
    [ $# -eq 0 ] || targets=(--target "$@")
    in_root "$r" env CCACHE_DIR=/var/cache/ccache cmake --build /build "${targets[@]}"
}

# Builds the checkout in the build root and packs the .deb into $cache/deb. Leaves the root entered.
build_and_pack() {
    local r=$cache/root
    build_checkout
    log "packing the .deb"
    rm -rf "$cache/deb"
    mkdir -p "$cache/deb"
    in_root "$r" bash -c 'cd /build && cpack -G DEB >/dev/null && cp sanecopy_*.deb /tmp/' || die "cpack -G DEB failed"
    mv "$r"/tmp/sanecopy_*.deb "$cache/deb/"
}

# Every test of the build (ctest options as given); a skipped test fails the run here.
ctest_summary=""
run_ctest() {
    local out=$cache/ctest.log rc=0
    log "running every test (ctest) in the Debian 13 root"
    # The tests' times from the last run, so the longest start first (see dev.sh's test).
    local costs=$cache/root/build/Testing/Temporary/CTestCostData.txt
    mkdir -p "$(dirname "$costs")"
    [ -f "$costs" ] || cp "$cache/ctest-costs.txt" "$costs" 2>/dev/null || true
    # XDG_RUNTIME_DIR: Qt and KIO want one; each kioclient test makes its own below /var/tmp anyway. Two tests per
    # core, as dev.sh runs them: most of them wait.
    in_root "$cache/root" bash -c 'mkdir -p -m 700 /run/user/0 && cd /build && XDG_RUNTIME_DIR=/run/user/0 \
        ctest --output-on-failure -j"$(($(nproc) * 2))" "$@"' ctest "$@" 2>&1 | tee "$out" || rc=$?
    cp "$costs" "$cache/ctest-costs.txt" 2>/dev/null || true
    ctest_summary=$(grep -E '^[0-9]+% tests passed' "$out" || true)
    if grep -q '^The following tests did not run:' "$out"; then
        echo "debian13: tests were skipped; on Debian 13 every test must run:" >&2
        sed -n '/^The following tests did not run:/,/^$/p' "$out" >&2
        rc=1
    fi
    return "$rc"
}

# The house's checks on the build in the root (packaging/lint.py): rooms, format, lizard, clang-tidy, clazy. What came out
# clean is remembered in $cache/lint, outside the checkout.
# lint_mount mounts the cache; lint_checks [NICE] runs the checks (at niceness NICE).
lint_mount() {
    mkdir -p "$cache/lint"
    bind "$cache/lint" "$cache/root/var/cache/sanecopy-lint"
}
lint_checks() {
    # lizard comes from PyPI through pip, which trusts what the host trusts (a proxy's CA too).
    local ca=()
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$cache/lint/host-ca.crt"
        ca=(PIP_CERT=/var/cache/sanecopy-lint/host-ca.crt)
    fi
    log "the house's checks: rooms, format, lizard, clang-tidy, clazy"
    in_root "$cache/root" nice -n "${1:-0}" env "${ca[@]}" python3 /src/packaging/lint.py /src /build /var/cache/sanecopy-lint
}

# The .deb in a clean Debian 13 root: apt resolves its dependencies from the mirror, and kioclient copies through
# the worker from where the package put it, with no QT_PLUGIN_PATH.
deb_test() {
    local clean=$cache/clean
    remove_root "$clean"
    cp -a "$cache/base" "$clean"
    unsafe_io "$clean"
    enter "$clean"
    cp "$cache"/deb/sanecopy_*.deb "$clean/tmp/"
    local rc=0
    in_root "$clean" apt-get -q update >/dev/null
    in_root "$clean" bash -c 'apt-get -q install -y --no-install-recommends /tmp/sanecopy_*.deb "$@"' apt \
        "${deb_test_packages[@]}" >"$cache/deb-install.log" 2>&1 ||
        { tail -n 30 "$cache/deb-install.log" >&2; echo "FAIL: apt install ./sanecopy_*.deb in a clean Debian 13 root"; rc=1; }
    if [ "$rc" -eq 0 ]; then
        in_root "$clean" bash -s <<'SH' || rc=1
set -eu
fail() { echo "FAIL: $*"; exit 1; }
find /usr -path '*/kf6/kio/kio_sanecopy.so' | grep -q . || fail "no kf6/kio/kio_sanecopy.so installed"
ls /usr/share/kio/servicemenus/sanecopy-*.desktop >/dev/null || fail "no service menus installed"
sanecp --version >/dev/null || fail "sanecp does not run"
test -f /usr/share/locale/de/LC_MESSAGES/sanecopy_qt.qm || fail "the window's German catalogue is not installed"
test -f /usr/share/locale/de/LC_MESSAGES/kio_sanecopy.mo || fail "the KIO worker's German catalogue is not installed"
localedef -i de_DE -f UTF-8 de_DE.UTF-8 2>/dev/null || true # as a German user's system has it
LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 LANGUAGE=de sanecp --help | grep -q "Diese Hilfe anzeigen" ||
    fail "sanecp --help is not German for a German user (LANG=de_DE.UTF-8)"
for page in sanecp sanecopy; do
    LC_ALL=C man -P cat "$page" 2>/dev/null | grep -q -- "--version" || fail "man $page does not show the installed page"
done
mkdir -p /tmp/src "/tmp/dest dir"
head -c 3M /dev/urandom >"/tmp/src/file one.bin"
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp/runtime
mkdir -p -m 700 /tmp/runtime
[ -z "${QT_PLUGIN_PATH:-}" ] || fail "QT_PLUGIN_PATH is set"
kioclient --noninteractive copy "file:///tmp/src/file%20one.bin" "sanecopy:///tmp/dest%20dir/file%20one.bin" ||
    fail "kioclient copy through sanecopy:/ exited $?"
cmp "/tmp/src/file one.bin" "/tmp/dest dir/file one.bin" || fail "the copy differs"
echo "PASS: the .deb installs with apt in a clean Debian 13 root; man shows its pages; kioclient copies through the installed worker"
SH
        # Debian's checks: any error or warning fails (overrides, each with its reason, are in the package).
        in_root "$clean" bash -c 'lintian --fail-on error,warning --tag-display-limit 0 /tmp/sanecopy_*.deb 2>&1 |
            grep -v "running with root privileges"; exit "${PIPESTATUS[0]}"' ||
            { echo "FAIL: lintian found errors or warnings in the .deb"; rc=1; }
        [ "$rc" -ne 0 ] || echo "PASS: lintian finds no error or warning in the .deb"
    fi
    leave
    remove_root "$clean"
    return "$rc"
}

# Real Dolphin with a folder's context menu open. No window manager: xdotool focuses the window itself, and the
# Menu key opens the context menu of the selected item where Dolphin draws it.
dolphin_screenshot() {
    local out=$1 r=$cache/root
    [ -f "$r/build/kio-worker/servicemenus/sanecopy-open-target.desktop" ] || die "build first: $0 test"
    enter "$r"
    bind "$here" "$r/src" ro
    in_root "$r" bash -s <<'SH'
set -eu
home=$(mktemp -d /tmp/dolphin-shot.XXXXXX)
mkdir -p "$home/.local/share/kio/servicemenus" "$home/.config" "$home/.runtime" "$home/Photos from the trip"
chmod 700 "$home/.runtime"
cp /src/kio-worker/servicemenus/sanecopy-safe-copy-to.desktop /src/kio-worker/servicemenus/sanecopy-safe-move-to.desktop \
   /build/kio-worker/servicemenus/sanecopy-open-target.desktop "$home/.local/share/kio/servicemenus/"
chmod 755 "$home/.local/share/kio/servicemenus/"*.desktop
touch "$home/Photos from the trip/IMG_0001.jpg" "$home/notes.txt"
export HOME=$home XDG_RUNTIME_DIR=$home/.runtime
export DISPLAY=:77 QT_QPA_PLATFORM=xcb
Xvfb :77 -screen 0 1024x640x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null; rm -rf "$home"' EXIT
for _ in $(seq 50); do xdpyinfo -display :77 >/dev/null 2>&1 && break; sleep 0.1; done
dbus-run-session -- dolphin --new-window --select "$home/Photos from the trip" >/dev/null 2>&1 &
win=$(xdotool search --sync --onlyvisible --class dolphin | head -n 1)
xdotool windowsize "$win" 1024 640 windowmove "$win" 0 0 windowfocus --sync "$win"
sleep 3
xdotool key --window "$win" Menu
sleep 2
import -window root /tmp/dolphin-menu.png
SH
    cp "$r/tmp/dolphin-menu.png" "$out"
    leave
    echo "$out"
}

# SaneCopy's window in a real Plasma 6 session (tests/plasma/plasma_check.py), from this build's .deb (made by
# `test`): what Plasma's job view was told, and screenshots of its popup in OUTDIR; with --kio-stall, a copy
# through the KIO worker onto a stick that stalls, and the worker's notification of it. Not in CI: the root is about a
# gigabyte, and the stand-ins on a private bus check the same calls there.
plasma_check() {
    local out=$1 r=$cache/plasma
    shift
    ls "$cache"/deb/sanecopy_*.deb >/dev/null 2>&1 || die "no .deb yet: $0 test makes it"
    root_with "$r" "$cache/plasma-apt.log" "Plasma 6 for the session check" "${plasma_packages[@]}"
    enter "$r"
    cp "$cache"/deb/sanecopy_*.deb "$r/tmp/"
    unsafe_io "$r"
    in_root "$r" bash -c 'apt-get -q install -y --no-install-recommends --reinstall /tmp/sanecopy_*.deb' \
        >"$cache/plasma-deb.log" 2>&1 || { tail -n 20 "$cache/plasma-deb.log" >&2; leave; die "the .deb did not install"; }
    leave
    python3 "$here/tests/plasma/plasma_check.py" "$r" "$out" "$@"
}

# The guest's root: base, the packages above, and this build's .deb (reinstalled every run), packed into an
# ext4 image with room for the scenarios' sources.
vm_root() {
    root_with "$cache/vmroot" "$cache/vm-apt.log" "the guest's kernel and tools in the VM root" "${vm_packages[@]}"
}

make_vm_image() {
    local v=$cache/vmroot
    vm_root
    log "installing this build's .deb in the VM root"
    enter "$v"
    cp "$cache"/deb/sanecopy_*.deb "$v/tmp/"
    unsafe_io "$v"
    in_root "$v" bash -c 'apt-get -q install -y --no-install-recommends --reinstall /tmp/sanecopy_*.deb' \
        >"$cache/vm-deb.log" 2>&1 || { tail -n 30 "$cache/vm-deb.log" >&2; leave; die "the .deb does not install in the VM root"; }
    rm -f "$v"/tmp/sanecopy_*.deb
    leave
    rm -rf "$v/sanecopy-vm"
    mkdir -p "$v/sanecopy-vm" "$cache/vm"
    cp "$here/tests/vm/init.sh" "$here/tests/vm/guest.py" "$here/tests/vm/shares.py" \
        "$here/tests/vm/commit_probe.py" "$v/sanecopy-vm/"
    # The program the guest drives SaneCopy's window through (tests/vm/gui_driver.cpp), from this build.
    cp "$cache/root/build/tests/vm/sanecopy-vm-gui" "$v/sanecopy-vm/"
    chmod 755 "$v/sanecopy-vm/init.sh"
    local size
    size=$(du -sm --one-file-system "$v" | cut -f1)
    rm -f "$cache/vm/rootfs.img"
    truncate -s "$((size + 1536))M" "$cache/vm/rootfs.img"
    mkfs.ext4 -q -F -d "$v" -L sanecopy-vm "$cache/vm/rootfs.img"
}

usb_test() {
    command -v qemu-system-x86_64 >/dev/null || {
        log "installing qemu on the host"
        apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends qemu-system-x86 >/dev/null
    }
    make_vm_image
    local kernel initrd
    kernel=$(ls "$cache"/vmroot/boot/vmlinuz-* | sort -V | tail -n 1)
    initrd=$(ls "$cache"/vmroot/boot/initrd.img-* | sort -V | tail -n 1)
    python3 "$here/tests/vm/run.py" --kernel "$kernel" --initrd "$initrd" --rootfs "$cache/vm/rootfs.img" \
        --work "$cache/vm" --only "${1:-}"
}

case "$mode" in
flatpak)
    # shellcheck source=packaging/flatpak/standin.sh
    . "$here/packaging/flatpak/standin.sh"
    flatpak_suite
    ;;
usb)
    start=$SECONDS
    prepare
    build_and_pack
    leave
    rc=0
    usb_test "$@" || rc=$?
    echo "== debian13: USB VM suite: $((SECONDS - start)) s"
    exit "$rc"
    ;;
plasma)
    [ $# -eq 1 ] || { [ $# -eq 2 ] && [ "$2" = --kio-stall ]; } || die "usage: $0 plasma OUTDIR [--kio-stall]"
    prepare
    plasma_check "$@"
    ;;
dolphin-screenshot)
    [ $# -eq 1 ] || die "usage: $0 dolphin-screenshot OUT.png"
    prepare
    dolphin_screenshot "$(realpath -m "$1")"
    ;;
root)
    prepare
    vm_root
    # shellcheck source=packaging/flatpak/standin.sh
    . "$here/packaging/flatpak/standin.sh"
    flatpak_runtimes
    echo "$cache/root"
    ;;
shell)
    prepare
    enter "$cache/root"
    bind "$here" "$cache/root/src" ro
    in_root "$cache/root" bash -i || true
    ;;
lint)
    prepare
    build_checkout
    lint_mount
    lint_checks
    ;;
test)
    start=$SECONDS
    prepare
    build_and_pack
    rc=0
    # The .deb in its clean root (a minute: apt unpacking 430 packages, then lintian) goes on beside the tests,
    # most of which wait, in a root of its own. Its mounts are its own (mounted=() in the subshell, which would
    # otherwise unmount the build root's too) and its output comes after the tests' and the house's checks'.
    deb_log=$cache/deb-test.log
    (
        mounted=()
        trap unmount_all EXIT
        trap 'exit 130' INT TERM
        deb_test
    ) >"$deb_log" 2>&1 &
    deb_pid=$!
    # The house's checks beside the tests too, at the lowest priority: the tests mostly wait, and clang-tidy and
    # clazy (3 minutes of both cores on a cold cache, in batches) take only what the tests leave. Their cache is
    # mounted before the tests start, and stays so until they end; their output comes after the tests'.
    lint_mount
    lint_log=$cache/lint.log
    lint_checks 19 >"$lint_log" 2>&1 &
    lint_pid=$!
    run_ctest "$@" || rc=$?
    lint_rc=0
    wait "$lint_pid" || lint_rc=$?
    cat "$lint_log"
    leave
    deb_rc=0
    wait "$deb_pid" || deb_rc=$?
    cat "$deb_log"
    echo
    echo "== debian13: ctest: ${ctest_summary:-no summary}"
    echo "== debian13: .deb in a clean root: $([ "$deb_rc" -eq 0 ] && echo passed || echo FAILED)"
    echo "== debian13: the house's checks (packaging/lint.py): $([ "$lint_rc" -eq 0 ] && echo passed || echo FAILED)"
    echo "== debian13: $((SECONDS - start)) s"
    [ "$rc" -eq 0 ] && [ "$deb_rc" -eq 0 ] && [ "$lint_rc" -eq 0 ]
    ;;
*)
    echo "usage: $0 test [ctest options] | lint | usb [NAME,...] | flatpak | root | shell | dolphin-screenshot OUT.png | plasma OUTDIR [--kio-stall]" >&2
    exit 2
    ;;
esac
