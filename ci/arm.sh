#!/usr/bin/env bash
# ci/arm.sh — an aarch64 host for the benchrig lab (issue 11).
#
# arm1 is a Debian bookworm arm64 userland (debootstrap --arch=arm64) whose
# own arm64 sshd runs under qemu-user: the kernel hands every aarch64 ELF to
# qemu-aarch64-static through binfmt_misc (registered with the F flag, so the
# interpreter is opened once at registration and works inside the chroot).
# Everything on the host is arm64 code under emulation — sshd, the shell,
# mkfs, mount and the pushed agent — so `uname -m` says aarch64 and deploy
# pushes the aarch64 agent. The kernel is this machine's.
#
# Like a ci/lab.sh host, arm1 is a network namespace (brlab-arm1) on the lab's
# bridge (brlab0, so `ci/lab.sh up` first) with a private mount namespace; in
# it the rootfs gets /proc, /sys, a small /dev of its own (null, zero, random,
# a devpts instance, the scratch disk's node) and sshd is started chrooted
# into it. The scratch disk is a loop device over a sparse 1 GiB image.
#
# Run as root. Host packages this script installs itself when missing:
#   qemu-user (>= 9.1, from bookworm-backports), debootstrap, zstd
# bookworm's own qemu-user-static 7.2 does not translate the block-device
# ioctls mkfs needs (BLKBSZSET for mkfs.xfs, BLKGETZONESZ for mkfs.btrfs:
# "Function not implemented"); backports' 10.0 does, its qemu-user ships
# static binaries, and it matches the backports qemu-utils / qemu-system-x86
# of this CI image (ci/vm.sh). Installed without its Recommends
# (qemu-user-binfmt), so the only binfmt entry is the one made here.
set -euo pipefail

HOST_PACKAGES=(debootstrap zstd)
QEMU_PACKAGE=qemu-user
QEMU_MIN_VERSION=1:9.1   # static binaries; block ioctls translated

usage() {
    cat <<EOF
usage: ${0##*/} COMMAND [ARGS]

  image            build the arm64 rootfs tarball unless the cache has one for
                   the current package versions; print its directory
  up               binfmt, rootfs, disk, netns, sshd: create what is missing,
                   leave a running host alone; print a table
  down             stop everything of the host, unmount, detach its loop
                   device, delete its netns, unregister binfmt if we
                   registered it (the rootfs cache is kept)
  status           netns, sshd, ssh, uname -m, disk; exit 1 if anything is missing
  ssh HOST [CMD]   ssh into the host with the lab key

Host: $HOST ($IP)   Run dir: $ARMROOT   Rootfs cache: $CACHE
EOF
}

HOST=arm1
IP=10.77.0.16
NET_PREFIX=24
BRIDGE=brlab0
BRIDGE_IP=10.77.0.1
NS=brlab-$HOST                  # the lab's naming: ci/lab.sh down also removes a leftover
VETH=vbr-$HOST
VETH_PEER=vbp-$HOST
# A fixed MAC for its eth0 (locally administered; 0x10 = .16): with a random
# one per `up`, neighbours that still have the last one's in their ARP cache
# send it nothing until the entry times out — each ssh attempt hung for its
# 5 s ConnectTimeout, 34 s in all, after a down/up.
MAC=52:54:00:77:01:10
DISKS=(d0)
DISK_SIZE=1G

LAB=${BENCHRIG_LAB_DIR:-/var/tmp/benchrig-lab}
ARMROOT=/var/tmp/benchrig-arm
CACHE=/var/tmp/benchrig-arm-cache
ROOTFS=$ARMROOT/rootfs
MIRROR=${BENCHRIG_ARM_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
ARCH=arm64
# What the quickstart and the agent's facts need; the rest of minbase is there.
ROOTFS_PACKAGES=(openssh-server e2fsprogs xfsprogs btrfs-progs procps)
SSH_WAIT_SECONDS=${BENCHRIG_ARM_SSH_WAIT:-60}

QEMU=/usr/bin/qemu-aarch64
BINFMT=/proc/sys/fs/binfmt_misc
# The ELF header of an aarch64 executable (as Debian's qemu-user-static has it).
BINFMT_MAGIC='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
BINFMT_MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
BINFMT_HEX=7f454c460201010000000000000000000200b700
# What we registered or mounted ourselves lives here (outside the run dir so
# that `image` alone can record it too); `down` undoes exactly that.
STATE=/run/benchrig-arm

log() { printf '%s\n' "arm: $*" >&2; }
die() { printf '%s\n' "arm: error: $*" >&2; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ------------------------------------------------------------------ host tools

BPO_DIR=$CACHE/apt-bpo
apt_bpo() {   # apt-get with a private sources list that adds bookworm-backports
    mkdir -p "$BPO_DIR/lists/partial" "$BPO_DIR/archives/partial"
    printf 'deb %s %s main\n' "$MIRROR" "$SUITE-backports" "$MIRROR" "$SUITE" >"$BPO_DIR/sources.list"
    DEBIAN_FRONTEND=noninteractive apt-get -o Dir::Etc::sourcelist="$BPO_DIR/sources.list" \
        -o Dir::Etc::sourceparts=- -o Dir::State::lists="$BPO_DIR/lists" \
        -o Dir::Cache::archives="$BPO_DIR/archives" "$@"
}

ensure_tools() {
    local pkgs=() p v
    for p in "${HOST_PACKAGES[@]}"; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || pkgs+=("$p")
    done
    v=$(dpkg-query -W -f '${Version}' "$QEMU_PACKAGE" 2>/dev/null || true)
    if [[ -z $v ]] || ! dpkg --compare-versions "$v" ge "$QEMU_MIN_VERSION" || [[ ! -x $QEMU ]]; then
        log "installing $QEMU_PACKAGE from $SUITE-backports${v:+ (have $v)}"
        apt_bpo update -qq >&2
        apt_bpo install -y -qq --no-install-recommends -t "$SUITE-backports" "$QEMU_PACKAGE" >&2
    fi
    ((${#pkgs[@]})) || return 0
    log "installing missing packages: ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
}

# ------------------------------------------------------------------ binfmt

# An enabled entry for aarch64 ELF with the F flag whose interpreter is our
# qemu: print its name. (Another one, such as a system's, will do as well as
# ours; one with an older qemu will not.)
binfmt_usable() {
    local e want
    want=$(readlink -f "$QEMU")
    for e in "$BINFMT"/*; do
        [[ -f $e && ${e##*/} != register && ${e##*/} != status ]] || continue
        grep -qx enabled "$e" 2>/dev/null || continue
        grep -qx "magic $BINFMT_HEX" "$e" 2>/dev/null || continue
        grep -q '^flags: .*F' "$e" 2>/dev/null || continue
        [[ $(readlink -f "$(awk '$1 == "interpreter" { print $2 }' "$e")") == "$want" ]] || continue
        echo "${e##*/}"; return 0
    done
    return 1
}

binfmt_up() {
    local name
    mkdir -p "$STATE"
    if ! findmnt -n "$BINFMT" >/dev/null 2>&1; then
        mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc on $BINFMT"
        touch "$STATE/binfmt-mounted"
        log "mounted binfmt_misc on $BINFMT"
    fi
    [[ $(cat "$BINFMT/status") == enabled ]] || die "binfmt_misc is disabled ($BINFMT/status)"
    if name=$(binfmt_usable); then
        [[ -e $STATE/binfmt-registered ]] || log "using the existing binfmt entry $name"
        return 0
    fi
    [[ -x $QEMU ]] || die "$QEMU is missing ($QEMU_PACKAGE)"
    # qemu-aarch64 unless someone else has that name (without the F flag, or
    # with another qemu); the newest registration wins, so ours takes
    # precedence then.
    name=qemu-aarch64
    [[ -e $BINFMT/$name ]] && name=benchrig-aarch64
    printf ':%s:M::%s:%s:%s:F' "$name" "$BINFMT_MAGIC" "$BINFMT_MASK" "$QEMU" >"$BINFMT/register" \
        || die "registering $name with binfmt_misc failed"
    echo "$name" >"$STATE/binfmt-registered"
    binfmt_usable >/dev/null || die "registered $name but it is not usable: $(cat "$BINFMT/$name")"
    log "registered $name ($QEMU, flags F) with binfmt_misc"
}

binfmt_down() {
    local rc=0 name e others=()
    if [[ -f $STATE/binfmt-registered ]]; then
        name=$(cat "$STATE/binfmt-registered")
        if [[ -e $BINFMT/$name ]]; then echo -1 >"$BINFMT/$name" || rc=1; fi
        if [[ -e $BINFMT/$name ]]; then rc=1; else rm -f "$STATE/binfmt-registered"; log "unregistered binfmt $name"; fi
    fi
    if [[ -f $STATE/binfmt-mounted ]]; then
        if findmnt -n "$BINFMT" >/dev/null 2>&1; then
            for e in "$BINFMT"/*; do
                [[ ${e##*/} == register || ${e##*/} == status ]] || others+=("${e##*/}")
            done
            if ((${#others[@]})); then
                # Someone registered entries since we mounted it: theirs now.
                log "leaving binfmt_misc mounted: it holds entries of others (${others[*]})"
            elif umount "$BINFMT"; then
                log "unmounted binfmt_misc"
            else
                rc=1
            fi
        fi
        ((rc)) || rm -f "$STATE/binfmt-mounted"
    fi
    rmdir "$STATE" 2>/dev/null || true
    return "$rc"
}

# ------------------------------------------------------------------ rootfs image

# Package versions the rootfs would get today, from a private apt state that
# sees only $MIRROR $SUITE main for arm64 (what debootstrap installs from).
APT_DIR=$CACHE/apt
apt_arm() {
    mkdir -p "$APT_DIR/lists/partial"
    printf 'deb [arch=%s] %s %s main\n' "$ARCH" "$MIRROR" "$SUITE" >"$APT_DIR/sources.list"
    "$@" -o Dir::Etc::sourcelist="$APT_DIR/sources.list" -o Dir::Etc::sourceparts=- \
         -o Dir::State::lists="$APT_DIR/lists" -o Dir::State::status=/dev/null \
         -o APT::Architecture="$ARCH" -o APT::Architectures="$ARCH"
}

rootfs_versions() {   # "pkg version" lines: the included packages and the C library
    local out
    out=$(apt_arm apt-cache show --no-all-versions "${ROOTFS_PACKAGES[@]}" libc6 2>/dev/null \
          | awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }') || return 1
    (($(wc -l <<<"$out") == ${#ROOTFS_PACKAGES[@]} + 1)) || return 1
    echo "$out"
}

# The cache key: package versions + this recipe (the functions that build the
# rootfs), so editing the recipe also invalidates the cache.
image_key() {
    { echo "$SUITE $ARCH $MIRROR"; rootfs_versions; declare -f build_rootfs rootfs_files; } \
        | sha256sum | cut -c1-16
}

# Files of the image; per-up things (keys, the disk's node) are added at `up`.
rootfs_files() {
    local r=$1
    echo "$HOST" >"$r/etc/hostname"
    printf '127.0.0.1 localhost\n%s %s\n' "$IP" "$HOST" >"$r/etc/hosts"
    # No DNS in the lab: empty, so glibc asks 127.0.0.1 and is refused at once.
    printf '# no DNS in the benchrig lab\n' >"$r/etc/resolv.conf"
    : >"$r/etc/fstab"
    # The lab's sshd settings (ci/lab.sh), paths inside the rootfs.
    cat >"$r/etc/ssh/benchrig_sshd_config" <<EOF
# ci/arm.sh: the aarch64 lab host $HOST.
ListenAddress $IP
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PidFile /run/sshd.pid
AuthorizedKeysFile /root/.ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxSessions 32
MaxStartups 64:30:128
PrintMotd no
Subsystem sftp internal-sftp
ClientAliveInterval 0
EOF
    # Host keys are written at `up` (known_hosts is known ahead).
    rm -f "$r"/etc/ssh/ssh_host_*
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/* "$r"/var/log/*.log
}

BUILD_MOUNTS_UNDER=
build_cleanup() {   # debootstrap mounts /proc and /sys in the target while it runs
    local m
    [[ -n $BUILD_MOUNTS_UNDER ]] || return 0
    while read -r m; do
        [[ -n $m ]] && { umount "$m" 2>/dev/null || umount -l "$m" || true; }
    done < <(findmnt -rn -o TARGET | awk -v p="$BUILD_MOUNTS_UNDER/" 'index($0 "/", p) == 1' | sort -r)
}

build_rootfs() {   # build_rootfs ROOTFS OUTDIR
    local r=$1 out=$2 inc
    inc=$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")
    log "debootstrap --arch=$ARCH $SUITE (minbase + $inc) from $MIRROR; its second stage runs under qemu-user"
    debootstrap --arch="$ARCH" --variant=minbase --include="$inc" "$SUITE" "$r" "$MIRROR" \
        >"$out/debootstrap.log" 2>&1 \
        || { tail -n 30 "$out/debootstrap.log" >&2; die "debootstrap failed (log: $out/debootstrap.log)"; }
    rootfs_files "$r"
    # The host's dpkg reads the rootfs's database: no emulation needed.
    dpkg-query --admindir="$r/var/lib/dpkg" -W -f '${Package} ${Version}\n' >"$out/packages.txt"
    log "packing the rootfs"
    tar -C "$r" --numeric-owner --xattrs --xattrs-include='*' -cf - . \
        | zstd -q -T0 -3 -o "$out/rootfs.tar.zst"
}

# The image dir (ci/lib.sh's cached_image: this recipe's, built if missing).
image_update() { apt_arm apt-get update -qq; }
image_prepare() { ensure_tools; binfmt_up; BUILD_MOUNTS_UNDER=$1; }
cmd_image() { cached_image rootfs; }

# ------------------------------------------------------------------ host

client_key() { echo "$LAB/id_ed25519"; }

ssh_opts() {
    SSH_OPTS=(-F /dev/null -i "$(client_key)" -o "UserKnownHostsFile=$ARMROOT/known_hosts"
              -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes
              -o ConnectTimeout=5 -o LogLevel=ERROR)
}

ssh_ok() { ssh_opts; timeout 15 ssh "${SSH_OPTS[@]}" "root@$IP" true </dev/null >/dev/null 2>&1; }

ns_exists() { [[ -e /run/netns/$NS ]]; }

pid_in_ns() {   # a live process in our netns (a zombie has no namespaces)
    local want have
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    want=$(stat -L -c %i "/run/netns/$NS" 2>/dev/null) || return 1
    have=$(stat -L -c %i "/proc/$1/ns/net" 2>/dev/null) || return 1
    [[ $want == "$have" ]]
}

sshd_pid() {   # the pid of the host's running sshd, or fail
    local pid
    pid=$(cat "$ROOTFS/run/sshd.pid" 2>/dev/null) || return 1
    pid_in_ns "$pid" || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sshd ]] || return 1
    echo "$pid"
}

# Loop devices backed by our disk images: lines "/dev/loopN <image>".
arm_loops() {
    losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v p="$ARMROOT/disks/" 'index($2, p) == 1 { print $1, $2 }'
}

keys_up() {
    local key
    key=$(client_key)
    [[ -s $key && -s $key.pub ]] || die "no lab key $key (run ci/lab.sh up first)"
    mkdir -p "$ARMROOT"; chmod 700 "$ARMROOT"
    [[ -s $ARMROOT/ssh_host_ed25519_key ]] \
        || ssh-keygen -q -t ed25519 -N '' -C "benchrig-arm-$HOST" -f "$ARMROOT/ssh_host_ed25519_key"
    printf '%s %s\n' "$IP" "$(cut -d' ' -f1,2 "$ARMROOT/ssh_host_ed25519_key.pub")" >"$ARMROOT/known_hosts"
}

# A fresh rootfs from the image, with the keys; kept while the host runs.
rootfs_up() {   # rootfs_up IMAGEDIR
    local img=$1
    if [[ ! -f $ROOTFS/.benchrig-image || $(cat "$ROOTFS/.benchrig-image") != "$img" ]]; then
        log "unpacking the rootfs from $img"
        rm -rf --one-file-system "$ROOTFS" "$ROOTFS.tmp"
        mkdir -p "$ROOTFS.tmp"
        zstd -q -d -c "$img/rootfs.tar.zst" | tar -C "$ROOTFS.tmp" --numeric-owner --xattrs --xattrs-include='*' -xf -
        echo "$img" >"$ROOTFS.tmp/.benchrig-image"
        mv "$ROOTFS.tmp" "$ROOTFS"
    fi
    install -d -m 700 "$ROOTFS/root/.ssh"
    install -m 600 "$(client_key).pub" "$ROOTFS/root/.ssh/authorized_keys"
    install -m 600 "$ARMROOT/ssh_host_ed25519_key" "$ROOTFS/etc/ssh/ssh_host_ed25519_key"
    install -m 644 "$ARMROOT/ssh_host_ed25519_key.pub" "$ROOTFS/etc/ssh/ssh_host_ed25519_key.pub"
}

declare -A DISK_LOOP
disks_up() {
    local d img loop
    mkdir -p "$ARMROOT/disks"
    for d in "${DISKS[@]}"; do
        img=$ARMROOT/disks/$d.img
        [[ -e $img ]] || truncate -s "$DISK_SIZE" "$img"   # sparse
        loop=$(losetup -n -O NAME -j "$img" 2>/dev/null | head -n1)
        if [[ -z $loop ]]; then
            loop=$(losetup --find --show --direct-io=on "$img" 2>/dev/null) || loop=$(losetup --find --show "$img")
        fi
        DISK_LOOP[$d]=$loop
        # Real-disk request sizes, as on the netns hosts (ci/lab.sh).
        echo 128 >"/sys/block/${loop#/dev/}/queue/max_sectors_kb" 2>/dev/null || true
        echo 128 >"/sys/block/${loop#/dev/}/queue/read_ahead_kb" 2>/dev/null || true
        echo 0 >"/sys/block/${loop#/dev/}/queue/rotational" 2>/dev/null || true
    done
}

net_up() {
    ip link show "$BRIDGE" >/dev/null 2>&1 || die "bridge $BRIDGE does not exist (run ci/lab.sh up first)"
    ns_exists || ip netns add "$NS"
    ip -n "$NS" link set lo up
    if ! ip -n "$NS" link show eth0 >/dev/null 2>&1; then
        ip link del "$VETH" >/dev/null 2>&1 || true
        ip link add "$VETH" type veth peer name "$VETH_PEER" address "$MAC"
        ip link set "$VETH_PEER" netns "$NS"
        ip -n "$NS" link set "$VETH_PEER" name eth0
    fi
    ip link set "$VETH" master "$BRIDGE" up
    ip -n "$NS" addr replace "$IP/$NET_PREFIX" dev eth0
    ip -n "$NS" link set eth0 up
    ip -n "$NS" route replace default via "$BRIDGE_IP"
}

# The host's entry point: runs under `ip netns exec $NS unshare --uts`, so in
# its netns, a fresh mount namespace (its mounts vanish with its last
# process) and a UTS namespace of its own.
write_start() {
    local d majmin
    {
        cat <<EOF
#!/bin/bash
# Generated by ci/arm.sh: entry point of the aarch64 lab host $HOST.
set -eu
R=$ROOTFS
hostname $HOST
mount -t proc proc \$R/proc
mount -t sysfs sysfs \$R/sys
# A /dev of its own: the basic nodes, a devpts instance and the scratch disk.
mount -t tmpfs -o mode=755,size=1M,nosuid,noexec dev \$R/dev
mknod -m 666 \$R/dev/null c 1 3
mknod -m 666 \$R/dev/zero c 1 5
mknod -m 666 \$R/dev/full c 1 7
mknod -m 666 \$R/dev/random c 1 8
mknod -m 666 \$R/dev/urandom c 1 9
mknod -m 666 \$R/dev/tty c 5 0
ln -s /proc/self/fd \$R/dev/fd
ln -s /proc/self/fd/0 \$R/dev/stdin
ln -s /proc/self/fd/1 \$R/dev/stdout
ln -s /proc/self/fd/2 \$R/dev/stderr
mkdir \$R/dev/pts \$R/dev/shm \$R/dev/lab
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts \$R/dev/pts
ln -s pts/ptmx \$R/dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev shm \$R/dev/shm
EOF
        for d in "${DISKS[@]}"; do
            majmin=$(cat "/sys/block/${DISK_LOOP[$d]#/dev/}/dev")
            echo "mknod -m 660 \$R${DISK_LOOP[$d]} b ${majmin%:*} ${majmin#*:}"
            echo "ln -s ../${DISK_LOOP[$d]#/dev/} \$R/dev/lab/$d"
        done
        cat <<EOF
mount -t tmpfs -o mode=1777 tmpfs \$R/tmp
mkdir -p \$R/run/sshd
# chroot is this machine's; /usr/sbin/sshd in the rootfs is arm64 and runs
# under qemu-aarch64 through binfmt_misc.
exec chroot \$R /usr/sbin/sshd -D -e -f /etc/ssh/benchrig_sshd_config
EOF
    } >"$ARMROOT/start.sh"
    chmod 755 "$ARMROOT/start.sh"
}

start_sshd() {
    local pid deadline t0=$SECONDS
    rm -f "$ROOTFS/run/sshd.pid"
    ip netns exec "$NS" unshare --uts setsid "$ARMROOT/start.sh" >>"$ARMROOT/sshd.log" 2>&1 </dev/null &
    pid=$!
    deadline=$((SECONDS + SSH_WAIT_SECONDS))
    until ssh_ok; do
        if ((SECONDS >= deadline)); then
            tail -n 20 "$ARMROOT/sshd.log" >&2 || true
            die "sshd of $HOST not reachable after ${SSH_WAIT_SECONDS}s (log: $ARMROOT/sshd.log)"
        fi
        if [[ ! -e /proc/$pid ]] || [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]]; then
            tail -n 20 "$ARMROOT/sshd.log" >&2 || true
            die "sshd of $HOST exited during start (log: $ARMROOT/sshd.log)"
        fi
        sleep 0.3
    done
    log "started sshd for $HOST (pid $(sshd_pid || echo "$pid"), ssh after $((SECONDS - t0))s)"
}

# Every process of the host: in its netns, or rooted in its rootfs.
host_pids() {
    local p
    if ns_exists; then ip netns pids "$NS" 2>/dev/null || true; fi
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/root" 2>/dev/null) == "$ROOTFS" ]] && echo "${p#/proc/}"
    done
    true
}

kill_host() { kill_all "$HOST" host_pids; }

# ------------------------------------------------------------------ commands

cmd_up() {
    local img t0=$SECONDS
    ensure_tools
    binfmt_up
    img=$(cmd_image)
    keys_up
    if sshd_pid >/dev/null && ssh_ok; then
        log "$HOST is running"
    else
        # Whatever is left of an earlier start goes first (its mount namespace with it).
        kill_host || die "could not stop what is left of $HOST"
        wait_reaped
        rootfs_up "$img"
        disks_up
        net_up
        write_start
        start_sshd
    fi
    log "up in $((SECONDS - t0))s"
    cmd_status
}

cmd_status() {
    local rc=0 nsok=no pid sshok=no arch=- loop disks="" d img
    ns_exists && nsok=yes
    pid=$(sshd_pid 2>/dev/null) || pid=-
    if [[ $pid != - ]] && ssh_ok; then
        sshok=ok
        arch=$(timeout 15 ssh "${SSH_OPTS[@]}" "root@$IP" uname -m </dev/null 2>/dev/null) || arch='?'
    fi
    for d in "${DISKS[@]}"; do
        img=$ARMROOT/disks/$d.img
        loop=""
        [[ -e $img ]] && loop=$(losetup -n -O NAME -j "$img" 2>/dev/null | head -n1)
        if [[ -n $loop ]]; then disks+="$d=$loop "; else disks+="$d=MISSING "; rc=1; fi
    done
    [[ $nsok == yes && $pid != - && $sshok == ok && $arch == aarch64 ]] || rc=1
    printf '%-6s %-11s %-8s %-6s %-8s %-4s %s\n' HOST IP UNAME NETNS SSHD SSH DISKS
    printf '%-6s %-11s %-8s %-6s %-8s %-4s %s\n' "$HOST" "$IP" "$arch" "$nsok" "$pid" "$sshok" "${disks% }"
    return "$rc"
}

cmd_ssh() {
    [[ ${1:-} == "$HOST" ]] || die "unknown host '${1:-}' (one of: $HOST)"
    shift
    ssh_opts
    exec ssh "${SSH_OPTS[@]}" "root@$IP" "$@"
}

cmd_down() {
    local rc=0 m dev img c

    # 1. Processes: sshd, sessions, agents. The host's mount namespace (and
    #    with it /proc, /sys, /dev, /tmp of the rootfs) goes with the last one.
    kill_host || rc=1
    wait_reaped

    # 2. Mounts under the run dir or the cache visible here (an interrupted
    #    build's /proc, or anything that leaked), deepest first.
    while read -r m; do
        [[ -n $m ]] && { umount "$m" 2>/dev/null || umount -l "$m" || rc=1; }
    done < <(findmnt -rn -o TARGET | awk -v a="$ARMROOT/" -v b="$CACHE/" 'index($0 "/", a) == 1 || index($0 "/", b) == 1' | sort -r)

    # 3. The loop device (waiting: losetup -d only marks a busy one autoclear).
    while read -r dev img; do
        [[ -n $dev ]] || continue
        findmnt -n -S "$dev" >/dev/null 2>&1 && { umount -A "$dev" 2>/dev/null || umount -A -l "$dev" || rc=1; }
        losetup -d "$dev" 2>/dev/null || true
    done < <(arm_loops)
    for ((c = 0; c < 50; c++)); do
        [[ -z $(arm_loops) ]] && break
        sleep 0.1
    done

    # 4. Network: deleting the netns destroys its veth end and thereby the pair.
    if ns_exists; then ip netns del "$NS" || rc=1; fi
    if ip link show "$VETH" >/dev/null 2>&1; then ip link del "$VETH" || rc=1; fi

    # 5. binfmt: only what we registered or mounted.
    binfmt_down || rc=1

    # 6. The run dir (rootfs, disk, keys, logs); the rootfs cache stays.
    rm -rf --one-file-system -- "$ARMROOT" "$CACHE"/build.* || rc=1

    # Report anything that survived (ci/lib.sh).
    left_behind "$HOST" arm_leftovers || rc=1
    ((rc == 0)) && log "$HOST is down (rootfs cache kept in $CACHE)"
    return "$rc"
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        image|up|down|status) [[ $# -eq 0 ]] || { usage >&2; exit 2; } ;;&
        image|up|down|status|ssh) [[ $(id -u) -eq 0 ]] || die "must run as root" ;;&
        image) ensure_tools; cmd_image ;;
        up) cmd_up ;;
        down) cmd_down ;;
        status) cmd_status ;;
        ssh) cmd_ssh "$@" ;;
        -h|--help|help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
