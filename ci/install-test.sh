#!/usr/bin/env bash
# Install the release artifacts (ci/release.sh) on a minimal Debian 12 with no
# Rust toolchain and no build tools, run the quickstart from the installed
# playbook there on a loop device, and check it prints a table; then purge the
# .deb and check nothing of it is left. Needs root.
#
#   ci/install-test.sh image       build the minimal root unless cached
#                                  (debootstrap minbase, in $CACHE_ROOT)
#   ci/install-test.sh run [DIST]  lintian the .deb; test dist/'s tarball and .deb, each in a
#                                  fresh copy of the root, entered with a
#                                  private mount, PID and network namespace
#                                  (no network: the .deb's dependencies come
#                                  from the root's apt cache, as a mirror
#                                  would give them)
#
# Prints, per artifact, the seconds from "install" to the quickstart's table.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "ci/install-test.sh: $*" >&2; exit 1; }
log() { echo "install-test: $*" >&2; }
[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap, chroot, namespaces, loop devices)"

SUITE=bookworm
MIRROR=${BENCHRIG_VM_MIRROR:-http://deb.debian.org/debian}
CACHE_ROOT=/var/tmp/benchrig-install-cache
# What a user's `apt install ./benchrig_*.deb` fetches: its Depends and
# Recommends with theirs. Downloaded into the root's apt cache (not
# installed) when the root is built; the test fails naming what apt could not
# find there if the .deb's control grows beyond this.
DEB_DEPENDS=(openssh-client e2fsprogs xfsprogs btrfs-progs)

# build_root DIR: the minimal root, its apt lists and DEB_DEPENDS' archives.
build_root() {
    local r=$1
    debootstrap --variant=minbase "$SUITE" "$r" "$MIRROR" >"$r.log" 2>&1 \
        || { tail -n 30 "$r.log" >&2; die "debootstrap failed (log: $r.log)"; }
    printf 'deb %s %s main\n' "$MIRROR" "$SUITE" >"$r/etc/apt/sources.list"
    chroot "$r" apt-get update -qq >>"$r.log" 2>&1
    chroot "$r" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --download-only "${DEB_DEPENDS[@]}" >>"$r.log" 2>&1 \
        || { tail -n 30 "$r.log" >&2; die "downloading ${DEB_DEPENDS[*]} into the root failed"; }
}

# The cache key: the suite, the mirror and this recipe.
cache_dir() {
    local key
    key=$({ echo "$SUITE $MIRROR ${DEB_DEPENDS[*]}"; declare -f build_root; } | sha256sum | cut -c1-16)
    echo "$CACHE_ROOT/$SUITE-minbase-$key"
}

image() {
    local dir
    dir=$(cache_dir)
    [[ -d $dir/root ]] && { log "minimal root cached: $dir"; return 0; }
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    rm -rf "$CACHE_ROOT"
    mkdir -p "$dir"
    log "debootstrap $SUITE minbase from $MIRROR"
    build_root "$dir/tmp-root"
    mv "$dir/tmp-root" "$dir/root"
    log "minimal root cached: $dir ($(du -sh "$dir/root" | cut -f1))"
}

# in_root ROOT ARGS...: run ci/install-check.sh ARGS in ROOT, in a private
# mount, PID and network namespace, with /proc, /sys and /dev (the loop
# devices).
in_root() {
    local r=$1
    shift
    cp ci/install-check.sh ci/lib.sh "$r/tmp/"
    # shellcheck disable=SC2016 # expanded by the inner bash
    timeout --kill-after=10 900 unshare --mount --pid --net --fork --propagation private bash -euo pipefail -c '
        r=$1
        shift
        mount -t proc proc "$r/proc"
        mount --rbind /sys "$r/sys"
        mount --rbind /dev "$r/dev"
        exec chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/root TERM=dumb LANG=C.UTF-8 /bin/bash /tmp/install-check.sh "$@"
    ' in-root "$r" "$@"
}

# fresh_root NAME: a copy of the cached root for one artifact.
fresh_root() {
    local dir r
    dir=$(cache_dir)
    [[ -d $dir/root ]] || die "no minimal root; run ci/install-test.sh image first"
    r=$(mktemp -d "/var/tmp/benchrig-install-$1.XXXXXX")
    cp -a "$dir/root/." "$r/"
    echo "$r"
}

# leftovers ROOT: false (saying what) if the run left a loop device on the
# root's scratch image (the quickstart's teardown detaches it), and detaches
# it. (Its mounts died with its private mount namespace.)
leftovers() {
    local r=$1 img loops
    img=$r/root/.cache/benchrig/scratch0.img
    loops=$(losetup -n -O NAME -j "$img" 2>/dev/null || true)
    if [[ -n $loops ]]; then
        xargs -r -n1 losetup -d <<<"$loops"
        log "left behind: $loops attached to $img"
        return 1
    fi
}

# test_artifact KIND FILE: install FILE in a fresh root (ci/install-check.sh).
test_artifact() {
    local kind=$1 file=$2 r rc=0
    r=$(fresh_root "$kind")
    log "$kind: $(basename "$file") into $r"
    cp "$file" "$r/tmp/"
    in_root "$r" "$kind" "/tmp/$(basename "$file")" || rc=$?
    leftovers "$r" || rc=1
    rm -rf "$r"
    ((rc == 0)) || die "$kind: failed"
}

case ${1:-} in
    image) image ;;
    run)
        dist=${2:-dist}
        tarballs=("$dist"/benchrig-*-x86_64-linux.tar.gz)
        debs=("$dist"/benchrig_*_amd64.deb)
        [[ -f ${tarballs[0]} && -f ${debs[0]} ]] || die "no tarball and .deb in $dist (ci/release.sh makes them)"
        (cd "$dist" && sha256sum --quiet -c SHA256SUMS) || die "$dist/SHA256SUMS does not match the artifacts"
        # Debian's own checker of a package, before it goes near a root: its
        # errors and warnings fail the test (the package's lintian overrides
        # say what is meant).
        command -v lintian >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lintian >/dev/null
        lintian --fail-on error,warning --tag-display-limit 0 "${debs[0]}" 2>&1 | grep -v '^running with root privileges' \
            || [[ ${PIPESTATUS[0]} -eq 0 ]] || die "lintian finds fault with ${debs[0]}"
        image
        test_artifact tarball "${tarballs[0]}"
        test_artifact deb "${debs[0]}"
        ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 1 ;;
esac
