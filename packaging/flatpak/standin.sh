# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# The flatpak, built and run for real without downloading anything: sourced by packaging/debian13.sh for
# `debian13.sh flatpak` (`packaging/dev.sh test-flatpak`), and uses its roots and helpers.
#
# 1. Stand-ins for the KDE 6 runtime, made from Debian 13: org.kde.Platform (base plus the Qt 6 libraries,
#    plugins, fonts and icons a KDE app needs) and org.kde.Sdk (the Platform plus compilers, CMake, headers,
#    pkg-config and the AppStream tools flatpak-builder calls), each a cached root under $cache, committed with
#    ostree into a local repository under the name and branch the manifest asks for. Remade only when their
#    package lists below change. They are not KDE's runtime (Qt 6.8 and KF6 6.13 where 6.11 has newer ones), but
#    they have its layout, its names and flatpak's sandbox, which is what this tests.
# 2. The manifest in the repository, as `flatpak-builder --show-manifest` reads it, with its two git sources
#    pointed at the same upstream releases from Debian's source packages (offline-manifest.py, which stops when
#    the versions differ): nothing else of it changes.
# 3. flatpak-builder as an ordinary user, installing a user flatpak; then tests/flatpak/test_flatpak.py runs the
#    app inside the sandbox as that user.
# Everything that needs unprivileged user namespaces (bwrap) runs pivot_root'ed into the build root, not
# chrooted: the kernel refuses a user namespace to a process whose root is not its mount namespace's root.

fp_branch=6.11  # the manifest's runtime-version; checked against it below
# The runtime: what the app links and loads, the X11 and Wayland platform plugins, the SVG icon engine, the
# desktop's fonts and icon theme, and ldconfig (flatpak builds the sandbox's linker cache with it).
fp_platform_packages=(
    libc-bin libqt6core6t64 libqt6gui6 libqt6widgets6 libqt6dbus6 libqt6svg6 qt6-svg-plugins qt6-qpa-plugins
    qt6-wayland libxcb-cursor0 libblkid1 libnettle8t64 fontconfig fonts-dejavu-core breeze-icon-theme
    hicolor-icon-theme shared-mime-info
)
# The Sdk: the Platform plus what the manifest's modules run (make, cmake + ninja, g++, pkg-config, the headers,
# Qt's and gettext's translation tools, as KDE's Sdk has them) and what flatpak-builder runs inside it
# (appstreamcli compose, which reads the SVG icon through librsvg's gdk-pixbuf loader; eu-strip; ccache).
fp_sdk_packages=(
    "${fp_platform_packages[@]}"
    g++ make cmake ninja-build pkg-config qt6-base-dev qt6-l10n-tools gettext libblkid-dev nettle-dev
    appstream appstream-compose librsvg2-common elfutils binutils ccache desktop-file-utils
)
fp_user=sanecopy-tester
fp_uid=1000
fp_home=/home/$fp_user
# Inside the build root: the ostree repository, Debian's sources, flatpak-builder's build and state folders.
fp_dir=/var/cache/sanecopy-flatpak

# commit_runtime NAME ROOT: ROOT's /usr (with its /etc as files/etc, where flatpak mounts a runtime's /etc) as
# runtime/NAME/x86_64/$fp_branch in the repository, unless ROOT's package list is what was committed last.
commit_runtime() {
    local name=$1 root=$2 repo=$cache/root$fp_dir/repo stage
    local stamp=$cache/root$fp_dir/$name.stamp
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(cat "$root/.sanecopy-packages")" ]; then
        return 0
    fi
    log "committing the stand-in $name//$fp_branch from $root"
    [ -d "$repo/objects" ] || ostree init --mode=archive-z2 --repo="$repo"
    # zlib's fastest level: the Sdk's commit took 90 s at ostree's default (6) and 35 s at 1, for a repository 7 %
    # larger. It is read only here, by the local installs.
    ostree config --repo="$repo" set archive.zlib-level 1
    stage=$cache/stage-$name
    rm -rf "$stage"
    mkdir -p "$stage"
    # Hard links: nothing is copied but /etc, and nothing in the root changes.
    cp -al "$root/usr" "$stage/files"
    cp -a "$root/etc" "$stage/files/etc"
    # flatpak's own ld.so.conf lists /app/lib; a Debian /etc's does not, and the app's libraries live there.
    echo /app/lib >"$stage/files/etc/ld.so.conf.d/app.conf"
    printf '[Runtime]\nname=%s\nruntime=%s/x86_64/%s\nsdk=org.kde.Sdk/x86_64/%s\n' \
        "$name" "$name" "$fp_branch" "$fp_branch" >"$stage/metadata"
    # The commit's xa.metadata must be the metadata file's exact bytes, final newline included.
    ostree commit --repo="$repo" --branch="runtime/$name/x86_64/$fp_branch" --tree=dir="$stage" \
        --owner-uid=0 --owner-gid=0 --canonical-permissions --no-xattrs \
        --add-metadata-string=xa.metadata="$(cat "$stage/metadata")"$'\n' -s "stand-in $name from Debian 13" >/dev/null
    flatpak build-update-repo "$repo" >/dev/null
    rm -rf "$stage"
    cat "$root/.sanecopy-packages" >"$stamp"
}

# in_ns ROOT CMD...: CMD as root in ROOT (entered), pivot_root'ed there in a mount namespace of its own, with a
# clean environment.
in_ns() {
    local r=$1
    shift
    unshare --mount --propagation private -- /bin/sh -c '
        set -e
        r=$1; shift
        mkdir -p "$r/.oldroot"
        cd "$r"
        pivot_root . .oldroot
        cd /
        umount -l /.oldroot
        exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=dumb "$@"' sh "$r" "$@"
}

# The test user in the build root (its /etc only), owning the flatpak folders.
fp_user_setup() {
    local r=$cache/root
    if ! grep -q "^$fp_user:" "$r/etc/passwd"; then
        in_root "$r" useradd --create-home --uid "$fp_uid" --user-group --shell /bin/bash "$fp_user"
    fi
    mkdir -p "$r$fp_dir/sources" "$r$fp_dir/build" "$r/run/user/$fp_uid"
    chown "$fp_uid:$fp_uid" "$r$fp_dir/build" "$r/run/user/$fp_uid"
    chmod 700 "$r/run/user/$fp_uid"
}

# The upstream tarballs of Debian's source packages of the manifest's git modules (debian-orig.py), found through a
# private apt configuration (deb-src for the root's own mirror), kept in $fp_dir/sources.
fp_debian_sources() {
    local r=$cache/root mirror apt=$fp_dir/apt pkg
    mirror=$(awk '$1 == "deb" { print $2; exit }' "$r/etc/apt/sources.list")
    mkdir -p "$r$apt/lists/partial" "$r$apt/parts"
    echo "deb-src $mirror trixie main" >"$r$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/parts"
                -o "Dir::State::Lists=$apt/lists")
    for pkg in xxhash cli11; do
        [ -f "$r$fp_dir/sources/$pkg.source" ] && continue
        [ -f "$r$apt/lists/.updated" ] || { in_root "$r" apt-get -q "${opts[@]}" update >/dev/null && touch "$r$apt/lists/.updated"; }
        in_root "$r" apt-cache "${opts[@]}" showsrc "$pkg" |
            in_root "$r" python3 /src/packaging/flatpak/debian-orig.py "$pkg" "$mirror" "$fp_dir/sources" ||
            die "could not fetch Debian's $pkg source"
    done
}

# As the test user: the runtimes from the local repository, then flatpak-builder on the offline manifest.
fp_build_app() {
    local r=$cache/root shown=$fp_dir/build/shown.json manifest=$fp_dir/build/io.github.sanecopy.SaneCopy.json
    in_root "$r" bash -c "cd $fp_dir/build && flatpak-builder --show-manifest /src/packaging/flatpak/io.github.sanecopy.SaneCopy.yml >$shown"
    grep -q "\"runtime-version\" *: *\"$fp_branch\"" "$r$shown" || die "the manifest's runtime-version is not $fp_branch"
    in_root "$r" python3 /src/packaging/flatpak/offline-manifest.py "$shown" "$fp_dir/sources" /src "$manifest"
    chown "$fp_uid:$fp_uid" "$r$manifest"
    log "flatpak-builder as $fp_user on the offline manifest"
    local start=$SECONDS
    in_ns "$r" setpriv --reuid="$fp_uid" --regid="$fp_uid" --init-groups \
        env HOME="$fp_home" USER="$fp_user" XDG_RUNTIME_DIR="/run/user/$fp_uid" \
        bash -s "$fp_dir" "$manifest" >"$cache/flatpak-build.log" 2>&1 <<'SH' ||
set -eu
dir=$1 manifest=$2
# flatpak's install asks for parental controls on the system bus: a private one is enough.
dbus-daemon --session --address="unix:path=$XDG_RUNTIME_DIR/system_bus" --fork --print-pid >"$XDG_RUNTIME_DIR/system_bus.pid"
trap 'kill "$(cat "$XDG_RUNTIME_DIR/system_bus.pid")" 2>/dev/null || true' EXIT
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$XDG_RUNTIME_DIR/system_bus"
flatpak --user remote-add --if-not-exists --no-gpg-verify sanecopy-standin "file://$dir/repo"
flatpak --user install --noninteractive --or-update sanecopy-standin org.kde.Platform//6.11 org.kde.Sdk//6.11
cd "$dir/build"
flatpak-builder --user --install --force-clean --disable-rofiles-fuse --ccache --state-dir="$dir/build/state" \
    "$dir/build/app" "$manifest"
flatpak --user info io.github.sanecopy.SaneCopy
SH
        { tail -n 40 "$cache/flatpak-build.log" >&2; die "flatpak-builder failed (log: $cache/flatpak-build.log)"; }
    tail -n 12 "$cache/flatpak-build.log"
    log "flatpak-builder: $((SECONDS - start)) s"
}

# The stand-in runtimes, committed into the local repository (after prepare, which makes the build root that holds
# it). Also made ahead by `debian13.sh root`, which CI starts beside the host's suite.
flatpak_runtimes() {
    command -v ostree >/dev/null && command -v flatpak >/dev/null || {
        log "installing ostree and flatpak on the host"
        apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends ostree flatpak >/dev/null
    }
    root_with "$cache/fp-platform" "$cache/fp-platform-apt.log" "the stand-in org.kde.Platform" "${fp_platform_packages[@]}"
    fp_user_setup
    # The Platform's commit (zlib over every file: 30 s when it is new) beside the Sdk's apt, which mostly waits
    # for dpkg's unpacking (the build root's install left the .debs in the shared archive). The commit mounts
    # nothing; its output follows once both are done.
    commit_runtime org.kde.Platform "$cache/fp-platform" >"$cache/fp-commit.log" 2>&1 &
    local platform_commit=$!
    root_with "$cache/fp-sdk" "$cache/fp-sdk-apt.log" "the stand-in org.kde.Sdk" "${fp_sdk_packages[@]}"
    wait "$platform_commit" || { cat "$cache/fp-commit.log" >&2; die "committing the stand-in org.kde.Platform failed"; }
    cat "$cache/fp-commit.log"
    commit_runtime org.kde.Sdk "$cache/fp-sdk"
}

flatpak_suite() {
    local start=$SECONDS rc=0
    prepare
    flatpak_runtimes
    # From the build root's own build of the checkout: sanecp outside the sandbox, for comparison, and Dolphin's
    # menu code (tests/kio-worker).
    build_checkout sanecp sanecopy-menu-trigger
    fp_debian_sources
    fp_build_app
    log "running the tests inside the sandbox (tests/flatpak)"
    in_ns "$cache/root" python3 /src/tests/flatpak/test_flatpak.py --user "$fp_user" --build /build \
        --shots "$cache/flatpak-shots" || rc=$?
    leave
    echo "== debian13: flatpak suite: $((SECONDS - start)) s"
    return "$rc"
}
