#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The README's promise, checked where the host can't: on a fresh Debian 12, as root, from a clone of this
# repository, `packaging/dev.sh test` installs what is missing, builds and runs every test. The host has every
# package installed already, so a package missing from dev.sh's list would only show on a machine without it.
#
#   fresh-debian12.sh [COMMAND]   a `debootstrap --variant=minbase bookworm` root (with git), a clone of this
#                                 checkout's HEAD in /root/sanecopy (where an admin may well put it: /root is
#                                 mode 700), then COMMAND there (default: apt-get update, packaging/dev.sh test)
#
# Not part of CI: a cold run downloads and installs the whole build and test set (about 15 minutes here, the
# build itself 10 of them on two cores). Root only. The root and apt's downloads are cached in
# $SANECOPY_CACHE (default /var/cache/sanecopy) /fresh-debian12; `rm -rf` that folder for a fresh root again.
# The root's / is a bind mount of itself, as a machine's / is a mount point: the tests' private mount namespaces
# change its propagation, and the device probe finds its folders' mounts in mountinfo.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${SANECOPY_CACHE:-/var/cache/sanecopy}/fresh-debian12
root=$cache/root
mirror=http://deb.debian.org/debian
[ "$(id -u)" -eq 0 ] || { echo "fresh-debian12.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }

mkdir -p "$cache/archives/partial"
exec 9>"$cache/.lock"
flock -w 3600 9 || { echo "fresh-debian12.sh: another run holds $cache/.lock" >&2; exit 1; }
if [ ! -f "$root/.sanecopy-base" ]; then
    command -v debootstrap >/dev/null || apt-get install -y --no-install-recommends debootstrap >/dev/null
    rm -rf "$root"
    echo "== fresh-debian12: debootstrap bookworm into $root"
    debootstrap --variant=minbase --include=git,ca-certificates --cache-dir="$cache/archives" bookworm "$root" \
        "$mirror" >"$cache/debootstrap.log" 2>&1 || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
        "$mirror" "$mirror" "$mirror" >"$root/etc/apt/sources.list"
    echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/10keep"
    touch "$root/.sanecopy-base"
fi

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mount --bind "$root" "$root" && mounted+=("$root")
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --rbind /sys "$root/sys" && mounted+=("$root/sys")
mount --rbind /dev "$root/dev" && mounted+=("$root/dev")
mount --bind "$cache/archives" "$root/var/cache/apt/archives" && mounted+=("$root/var/cache/apt/archives")

# A clone, as a user would have, of what is committed here (its build folder kept between runs).
if [ -d "$root/root/sanecopy/.git" ]; then
    git -C "$root/root/sanecopy" fetch -q "$here" HEAD
    git -C "$root/root/sanecopy" reset -q --hard FETCH_HEAD
else
    git clone -q "$here" "$root/root/sanecopy"
fi
echo "== fresh-debian12: $(git -C "$root/root/sanecopy" log --oneline -1)"
command=${1:-"apt-get -q update >/dev/null && packaging/dev.sh test"}
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb bash -c "cd /root/sanecopy && $command"
