#!/usr/bin/env bash
# ci/vm.sh — emulated "old machines" for the benchrig lab (issue 6).
#
# A guest is a Debian bookworm (kernel 6.1, which still has ReiserFS, JFS and
# the kernel NFS server), bullseye (kernel 5.10), or bookworm i386 (a real
# 32-bit kernel, under qemu-system-i386) booted under qemu with software
# emulation (TCG; KVM does not work nested here). It gets its own root disk (a copy of a cached
# image), 1-2 extra raw virtio disks throttled by qemu, the lab's ssh key, and
# either a tap on the lab bridge (brlab0, when `ci/lab.sh up` has made it) with
# a static 10.77.0.x address, or user-mode networking with a forwarded port.
#
# Run as root. Host packages this script needs (for .ci/run to preinstall):
#   qemu-system-x86 debootstrap e2fsprogs iproute2 openssh-client socat fdisk
# On bookworm with qemu-utils from bookworm-backports already installed (as on
# this CI image), qemu-system-x86 must come from bookworm-backports too
# (qemu-utils 10.x Breaks qemu-system-common < 8.0); `ensure_tools` does that
# with a private apt sources list, leaving /etc/apt untouched.
set -euo pipefail

# shellcheck disable=SC2034 # documentation for .ci/run (docs/vm.md); ensure_tools maps commands to packages
HOST_PACKAGES=(qemu-system-x86 debootstrap e2fsprogs iproute2 openssh-client socat fdisk)

usage() {
    cat <<EOF
usage: ${0##*/} COMMAND [ARGS]

  image            build the guest image unless the cache already has one for
                   the current package versions; print its directory
  up               build/reuse the image, boot every guest that is not running
                   (leave running ones alone), wait for sshd; print a table
  down             stop the guests, remove their taps and run dirs
                   (the image cache is kept)
  status           per guest: qemu, network, ssh, kernel; exit 1 if anything is missing
  ssh GUEST [CMD]  ssh into a guest with the lab key
  power GUEST      power-cycle a running guest (the monitor's system_reset;
                   $VMROOT/power GUEST, the kernel lab's benchrig_power_cycle)
  kernel-deb       download (once, into the cache) a kernel package the grub
                   guest does not have: Debian's backports cloud-amd64 kernel,
                   for the kernel.package test; print its path

Guests: ${GUESTS[*]}
Run dir: $VMROOT   Image cache: $CACHE
Network: tap on $BRIDGE if it exists, else user-mode (ssh on 127.0.0.1:PORT);
         force with BENCHRIG_VM_NET=tap|user
EOF
}

# --------------------------------------------------------------------------
# Guest table — edit here to add guests.
#   name   <= 10 chars (tap is vmt-<name>)
#   ip     static address on the lab bridge (10.77.0.0/24) in tap mode
#   port   127.0.0.1 port forwarded to the guest's sshd in user mode
#   mem    guest RAM in MiB
#   disks  number of extra disks (vdb, vdc, ...), 1 or 2
#   size   size of each extra disk (truncate -s syntax)
#   bps    qemu throttling.bps-total of each extra disk (bytes/s)
#   cpu    cgroup v1 cpu.cfs_quota_us of its qemu per 100000 us, or - for a whole core
#   suite  its Debian release: bookworm (kernel 6.1) or bullseye (5.10)
#   arch   amd64, or i386 (a 32-bit kernel, linux-image-686, under qemu-system-i386)
#   model  qemu's -cpu
#   boot   direct (qemu -kernel: the image's kernel, the lab's command line), or
#          grub: a kernel lab's machine, booted by GRUB from its own
#          partitioned disk, with bookworm's 6.1 (the default entry) and
#          bookworm-backports' kernel installed, and kexec-tools
# Each suite, arch and boot is an image of its own, cached apart (flavour below).
# --------------------------------------------------------------------------
GUEST_TABLE=$(cat <<'EOF'
# name  ip          port  mem   disks size bps       cpu    suite    arch  model    boot
old61   10.77.0.21  2221  1024  2     1G   20971520  -      bookworm amd64 max      direct
old61b  10.77.0.22  2222  1024  2     1G   20971520  40000  bookworm amd64 max      direct
old510  10.77.0.23  2223  768   1     1G   20971520  -      bullseye amd64 max      direct
old32   10.77.0.24  2224  768   1     1G   20971520  -      bookworm i386  pentium3 direct
kboot   10.77.0.25  2225  1024  1     1G   20971520  -      bookworm amd64 max      grub
EOF
)
# old61b is the slower machine of the pair (40% of a core for its emulated
# CPU), as seed 001 had a Pentium and a 486 serving each other. `model` is
# qemu's -cpu: old32 is a Pentium III (CMOV and SSE, no SSE2), the oldest
# CPU Debian 12's 686 kernel boots on, so it gets the i586 agent. kboot is
# the kernel lab's machine: the kernel tests boot it into its other kernel
# and back (`power GUEST` is its power cycle, its console.log its console).

LAB=${BENCHRIG_LAB_DIR:-/var/tmp/benchrig-lab}
VMROOT=/var/tmp/benchrig-vm
CACHE_ROOT=/var/tmp/benchrig-vm-cache
CACHE=$CACHE_ROOT
BRIDGE=${BENCHRIG_VM_BRIDGE:-brlab0}
BRIDGE_IP=${BENCHRIG_VM_BRIDGE_IP:-10.77.0.1}
NET_PREFIX=24
TAP_PREFIX=vmt-
NAME_PREFIX=benchrig-vm-        # qemu -name (shows in the monitor and window title)
PROC_PREFIX=bvm-                # qemu process name (comm, max 15 chars), to recognise our qemus
MIRROR=${BENCHRIG_VM_MIRROR:-http://deb.debian.org/debian}
HOST_SUITE=bookworm   # this machine's, for qemu from its backports
SUITE=bookworm ARCH=amd64 KERNEL_PKG=linux-image-amd64 QEMU=qemu-system-x86_64
ROOT_SIZE=3G
SSH_WAIT_SECONDS=${BENCHRIG_VM_SSH_WAIT:-400}   # TCG boot is slow
GUEST_PACKAGES_BUT_KERNEL=(openssh-server jfsutils reiserfsprogs nfs-kernel-server xfsprogs
                btrfs-progs acl lzop kmod udev systemd-sysv initramfs-tools zstd iproute2)
GUEST_PACKAGES=("${GUEST_PACKAGES_BUT_KERNEL[@]}" "$KERNEL_PKG")

GUESTS=()
declare -A G_IP G_PORT G_MEM G_DISKS G_SIZE G_BPS G_CPU G_SUITE G_ARCH G_MODEL G_BOOT

log() { printf '%s\n' "vm: $*" >&2; }
die() { printf '%s\n' "vm: error: $*" >&2; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

load_guests() {
    local name ip port mem disks size bps cpu suite arch model boot
    while read -r name ip port mem disks size bps cpu suite arch model boot; do
        [[ -z $name || $name == \#* ]] && continue
        [[ $name =~ ^[a-z0-9]{1,10}$ ]] || die "bad guest name '$name' in GUEST_TABLE"
        [[ -n $boot ]] || die "incomplete GUEST_TABLE line for '$name'"
        [[ $suite =~ ^(bookworm|bullseye)$ && $arch =~ ^(amd64|i386)$ ]] \
            || die "guest '$name': suite bookworm or bullseye, arch amd64 or i386"
        [[ $boot == direct || $boot/$suite/$arch == grub/bookworm/amd64 ]] \
            || die "guest '$name': boot direct, or grub (bookworm amd64 only)"
        [[ $disks =~ ^[12]$ ]] || die "guest '$name': disks must be 1 or 2"
        GUESTS+=("$name")
        G_IP[$name]=$ip G_PORT[$name]=$port G_MEM[$name]=$mem
        G_DISKS[$name]=$disks G_SIZE[$name]=$size G_BPS[$name]=$bps G_CPU[$name]=$cpu
        G_SUITE[$name]=$suite G_ARCH[$name]=$arch G_MODEL[$name]=$model G_BOOT[$name]=$boot
    done <<<"$GUEST_TABLE"
}

# Set the image globals for one Debian suite, architecture and boot: what
# the image recipe below builds and caches. bookworm/amd64/direct keeps the
# cache's top (the image the guests have always had); the others are beside
# it, so that cached_image, which keeps one image per cache, keeps one of each.
flavour() {   # flavour SUITE ARCH BOOT
    SUITE=$1 ARCH=$2 BOOT=$3
    case $ARCH in
        amd64) KERNEL_PKG=linux-image-amd64 QEMU=qemu-system-x86_64 ;;
        i386) KERNEL_PKG=linux-image-686 QEMU=qemu-system-i386 ;;
    esac
    GUEST_PACKAGES=("${GUEST_PACKAGES_BUT_KERNEL[@]}" "$KERNEL_PKG")
    BUILD_ROOTFS=build_rootfs
    if [[ $BOOT == grub ]]; then
        GUEST_PACKAGES+=(grub-pc kexec-tools)
        BUILD_ROOTFS=build_grub_disk
    fi
    if [[ $SUITE/$ARCH/$BOOT == bookworm/amd64/direct ]]; then CACHE=$CACHE_ROOT
    elif [[ $BOOT == direct ]]; then CACHE=$CACHE_ROOT/flavours/$SUITE-$ARCH
    else CACHE=$CACHE_ROOT/flavours/$SUITE-$ARCH-$BOOT; fi
    APT_DIR=$CACHE/apt
}

# The suite/arch/boot triples the table's guests use, one per line.
flavours() {
    local g
    for g in "${GUESTS[@]}"; do echo "${G_SUITE[$g]} ${G_ARCH[$g]} ${G_BOOT[$g]}"; done | sort -u
}

need_guest() {
    [[ -n ${1:-} ]] || die "missing GUEST (one of: ${GUESTS[*]})"
    [[ -n ${G_IP[$1]+x} ]] || die "unknown guest '$1' (one of: ${GUESTS[*]})"
}

# ------------------------------------------------------------------ host tools

BPO_DIR=$CACHE/apt-bpo
apt_bpo() {   # apt-get with a private sources list that adds bookworm-backports
    apt_bpo_with apt-get "$@"
}
apt_bpo_with() {   # apt_bpo_with TOOL ARGS: apt-get or apt-cache on that list
    local tool=$1
    shift
    mkdir -p "$BPO_DIR/lists/partial" "$BPO_DIR/archives/partial"
    printf 'deb %s %s main\n' "$MIRROR" "$HOST_SUITE-backports" "$MIRROR" "$HOST_SUITE" \
        >"$BPO_DIR/sources.list"
    DEBIAN_FRONTEND=noninteractive "$tool" -o Dir::Etc::sourcelist="$BPO_DIR/sources.list" \
        -o Dir::Etc::sourceparts=- -o Dir::State::lists="$BPO_DIR/lists" \
        -o Dir::Cache::archives="$BPO_DIR/archives" "$@"
}

ensure_tools() {
    local pkgs=() cmd pkg qutils
    for cmd in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap \
               mkfs.ext4:e2fsprogs debugfs:e2fsprogs ip:iproute2 ssh:openssh-client \
               ssh-keygen:openssh-client socat:socat sfdisk:fdisk; do
        pkg=${cmd#*:}; cmd=${cmd%%:*}
        command -v "$cmd" >/dev/null 2>&1 || [[ -x /usr/sbin/$cmd ]] || pkgs+=("$pkg")
    done
    mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u | grep .) || true
    ((${#pkgs[@]})) || return 0
    log "installing missing packages: ${pkgs[*]}"
    qutils=$(dpkg-query -W -f '${Version}' qemu-utils 2>/dev/null || true)
    if [[ $qutils == *bpo* ]]; then
        # Stay on the same qemu version as the installed qemu-utils.
        apt_bpo update -qq >&2
        apt_bpo install -y -qq --no-install-recommends -t "$HOST_SUITE-backports" "${pkgs[@]}" >&2
    else
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >&2
    fi
}

# ------------------------------------------------------------------ image

# Package versions the guest would get today, from a private apt state that
# sees only $MIRROR $SUITE main (what debootstrap installs from).
APT_DIR=$CACHE/apt
apt_guest() {
    mkdir -p "$APT_DIR/lists/partial"
    printf 'deb %s %s main\n' "$MIRROR" "$SUITE" >"$APT_DIR/sources.list"
    # The grub flavour's second kernel comes from backports (priority 100:
    # every other package's candidate stays the suite's).
    [[ $BOOT != grub ]] || printf 'deb %s %s-backports main\n' "$MIRROR" "$SUITE" >>"$APT_DIR/sources.list"
    "$@" -o Dir::Etc::sourcelist="$APT_DIR/sources.list" -o Dir::Etc::sourceparts=- \
         -o Dir::State::lists="$APT_DIR/lists" -o Dir::State::status=/dev/null \
         -o APT::Architecture="$ARCH"
}

guest_versions() {   # "pkg version" lines for the guest packages and the real kernel
    local out dep
    # One apt-cache call (each call re-reads the lists: ~0.5 s).
    out=$(apt_guest apt-cache show --no-all-versions "${GUEST_PACKAGES[@]}" 2>/dev/null \
          | awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }') || return 1
    (($(wc -l <<<"$out") == ${#GUEST_PACKAGES[@]})) || return 1
    echo "$out"
    # linux-image-amd64 (-686) is a metapackage: the kernel ABI is in its dependency.
    dep=$(apt_guest apt-cache show --no-all-versions "$KERNEL_PKG" 2>/dev/null \
          | awk -F': ' '/^Depends:/ { print $2; exit }' | grep -o 'linux-image-[0-9][^ ,]*' | head -n1)
    [[ -n $dep ]] || return 1
    apt_guest apt-cache show --no-all-versions "$dep" | awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }'
}

# The cache key: package versions + this recipe (the functions that build the
# image), so editing the recipe also invalidates the cache.
image_key() {
    {
        echo "$SUITE $ARCH $MIRROR $ROOT_SIZE"; guest_versions; declare -f build_rootfs guest_files
        # The grub flavour: its recipe and the backports kernel it installs.
        if [[ $BOOT == grub ]]; then declare -f build_grub_disk grub_files; bpo_kernel_version; fi
    } | sha256sum | cut -c1-16
}

# Files put into every guest image (network from the kernel command line,
# sshd settings). Per-guest things (keys, address) are added at `up`.
guest_files() {
    local r=$1
    echo benchrig-guest >"$r/etc/hostname"
    printf '127.0.0.1 localhost\n' >"$r/etc/hosts"   # the guests' names are added at `up`
    # No DNS in the lab: debootstrap copied the build host's resolver, which
    # the guest cannot reach, and every lookup (rpc.idmapd's at each NFS
    # server start) waited 10 s for it. Empty: glibc asks 127.0.0.1, refused at once.
    printf '# no DNS in the benchrig lab\n' >"$r/etc/resolv.conf"
    printf '[General]\nDomain = benchrig.lab\n[Mapping]\nNobody-User = nobody\nNobody-Group = nogroup\n' \
        >"$r/etc/idmapd.conf"
    printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$r/etc/fstab"
    cat >"$r/usr/local/sbin/benchrig-net" <<'EOF'
#!/bin/sh
# Static network from the kernel command line: benchrig.ip=ADDR/PFX benchrig.gw=GW
set -e
ip= gw=
for a in $(cat /proc/cmdline); do
    case $a in benchrig.ip=*) ip=${a#*=} ;; benchrig.gw=*) gw=${a#*=} ;; esac
done
ip link set lo up
ip link set eth0 up
[ -z "$ip" ] || ip addr replace "$ip" dev eth0
[ -z "$gw" ] || ip route replace default via "$gw"
EOF
    chmod 755 "$r/usr/local/sbin/benchrig-net"
    cat >"$r/etc/systemd/system/benchrig-net.service" <<'EOF'
[Unit]
Description=benchrig static network from the kernel command line
DefaultDependencies=no
After=systemd-udevd.service sys-subsystem-net-devices-eth0.device
Wants=sys-subsystem-net-devices-eth0.device
Before=network.target ssh.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/benchrig-net

[Install]
WantedBy=multi-user.target
EOF
    mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
    ln -sfn /etc/systemd/system/benchrig-net.service \
        "$r/etc/systemd/system/multi-user.target.wants/benchrig-net.service"
    cat >"$r/etc/ssh/sshd_config.d/benchrig.conf" <<'EOF'
# ci/vm.sh: key-only root login, as on the netns lab hosts.
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
MaxSessions 32
MaxStartups 64:30:128
EOF
    # Host keys are per guest (written at `up`, so known_hosts is known ahead).
    rm -f "$r"/etc/ssh/ssh_host_*
    # Not started at boot (benchrig starts/restarts it; `systemctl start
    # nfs-server` works), so boot does not wait for it. Disabled, not masked.
    rm -f "$r/etc/systemd/system/multi-user.target.wants/nfs-server.service"
    # Small initramfs: only what a virtio root needs (faster to unpack under TCG).
    cat >"$r/etc/initramfs-tools/conf.d/benchrig" <<'EOF'
MODULES=list
COMPRESS=zstd
EOF
    printf '%s\n' virtio_pci virtio_blk virtio_net ext4 >"$r/etc/initramfs-tools/modules"
}

BUILD_MOUNTS=() BUILD_LOOPS=()
build_cleanup() {
    local i
    # Newest first: a bind mount inside the root before the root.
    for ((i = ${#BUILD_MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${BUILD_MOUNTS[i]}" 2>/dev/null || true; done
    for i in "${BUILD_LOOPS[@]}"; do losetup -d "$i" 2>/dev/null || true; done
    BUILD_MOUNTS=() BUILD_LOOPS=()
}

build_rootfs() {   # build_rootfs ROOTFS OUTDIR
    local r=$1 out=$2 inc kver
    inc=$(IFS=,; echo "${GUEST_PACKAGES[*]}")
    log "debootstrap $SUITE $ARCH (minbase + $inc) from $MIRROR"
    debootstrap --arch="$ARCH" --variant=minbase --include="$inc" "$SUITE" "$r" "$MIRROR" >"$out/debootstrap.log" 2>&1 \
        || { tail -n 30 "$out/debootstrap.log" >&2; die "debootstrap failed (log: $out/debootstrap.log)"; }
    guest_files "$r"
    # shellcheck disable=SC2012 # kernel release names; (as a line of build_rootfs, this is in the image's cache key)
    kver=$(basename "$(ls -d "$r"/lib/modules/*/ | sort -V | tail -n1)")
    [[ -f $r/boot/vmlinuz-$kver ]] || die "no kernel in the guest rootfs ($kver)"
    log "regenerating the initramfs for $kver"
    mount -t proc proc "$r/proc"; BUILD_MOUNTS+=("$r/proc")
    chroot "$r" update-initramfs -u -k "$kver" >>"$out/debootstrap.log" 2>&1
    build_cleanup
    # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
    chroot "$r" dpkg-query -W -f '${Package} ${Version}\n' >"$out/packages.txt"
    cp "$r/boot/vmlinuz-$kver" "$out/vmlinuz"
    cp "$r/boot/initrd.img-$kver" "$out/initrd.img"
    echo "$kver" >"$out/kernel-release"
    rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
    log "making the root disk ($ROOT_SIZE, mkfs.ext4 -d)"
    # Its "Creating regular file" goes to the log: stdout is the image dir.
    mkfs.ext4 -q -F -L benchrig-root -d "$r" "$out/root.img" "$ROOT_SIZE" >>"$out/debootstrap.log" 2>&1 \
        || { tail -n 5 "$out/debootstrap.log" >&2; die "mkfs.ext4 -d failed"; }
}

# The backports kernel the grub flavour installs: "package version".
bpo_kernel_version() {
    apt_guest apt-cache policy "$KERNEL_PKG" 2>/dev/null \
        | awk -v p="$KERNEL_PKG" '$1 ~ /bpo/ { print p, $1; exit } $2 ~ /bpo/ { print p, $2; exit }' | grep .
}

# The grub flavour's root: a lab machine's boot setup. GRUB's default entry
# is the suite's kernel; the backports one is installed beside it; the
# network comes from /etc/benchrig-net.conf (written per guest at `up`),
# since the command line is GRUB's, the same for every guest.
grub_files() {
    local m=$1 uuid=$2 k61=$3
    cat >>"$m/etc/default/grub" <<EOF
# ci/vm.sh: the suite's kernel is the default; no menu delay; the console on the serial port.
GRUB_DEFAULT="gnulinux-advanced-$uuid>gnulinux-$k61-advanced-$uuid"
GRUB_TIMEOUT=0
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="console=ttyS0 net.ifnames=0 no_timer_check"
GRUB_DISABLE_OS_PROBER=true
GRUB_TERMINAL=serial
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
EOF
    # kexec-tools' own reboot hook would kexec /vmlinuz (the newest kernel)
    # on every reboot: a lab machine reboots through its firmware.
    if [[ -f $m/etc/default/kexec ]]; then sed -i 's/^LOAD_KEXEC=.*/LOAD_KEXEC=false/' "$m/etc/default/kexec"; fi
    cat >"$m/usr/local/sbin/benchrig-net" <<'EOF'
#!/bin/sh
# Static network from /etc/benchrig-net.conf (ip=ADDR/PFX gw=GW), written per guest.
set -e
ip= gw=
. /etc/benchrig-net.conf
ip link set lo up
ip link set eth0 up
[ -z "$ip" ] || ip addr replace "$ip" dev eth0
[ -z "$gw" ] || ip route replace default via "$gw"
EOF
}

# build_grub_disk ROOTFS OUTDIR: build_rootfs's root on a disk GRUB boots
# (disk.img: an MBR, GRUB in the gap, the root at 1 MiB), with the
# backports kernel installed inside it and GRUB's own tools run in it.
build_grub_disk() {
    local r=$1 out=$2 disk=$2/disk.img lo m=$2/../mnt d uuid k61 kbpo
    build_rootfs "$r" "$out"
    rm -f "$out/vmlinuz" "$out/initrd.img"   # GRUB boots it, not qemu -kernel
    k61=$(cat "$out/kernel-release")
    truncate -s "$(($(stat -c %s "$out/root.img") + 1048576))" "$disk"
    printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$disk"
    dd if="$out/root.img" of="$disk" bs=1M seek=1 conv=sparse,notrunc status=none
    rm -f "$out/root.img"
    lo=$(losetup -f --show -P "$disk"); BUILD_LOOPS+=("$lo")
    # This kernel's own scan may not read an MBR: partx adds the partition.
    [[ -b ${lo}p1 ]] || partx -a "$lo"
    [[ -b ${lo}p1 ]] || die "no partition device ${lo}p1 for the grub disk"
    mkdir -p "$m"; mount "${lo}p1" "$m"; BUILD_MOUNTS+=("$m")
    for d in dev proc sys; do mount --bind "/$d" "$m/$d"; BUILD_MOUNTS+=("$m/$d"); done
    uuid=$(blkid -s UUID -o value "${lo}p1")
    log "installing the backports kernel and GRUB"
    cp /etc/resolv.conf "$m/etc/resolv.conf"
    printf 'deb %s %s-backports main\n' "$MIRROR" "$SUITE" >"$m/etc/apt/sources.list.d/backports.list"
    {
        chroot "$m" apt-get update -qq
        chroot "$m" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            -t "$SUITE-backports" "$KERNEL_PKG"
    } >>"$out/debootstrap.log" 2>&1 || { tail -n 20 "$out/debootstrap.log" >&2; die "installing the backports kernel failed"; }
    printf '# no DNS in the benchrig lab\n' >"$m/etc/resolv.conf"
    rm -rf "$m/etc/apt/sources.list.d/backports.list" "$m"/var/cache/apt/archives/*.deb "$m"/var/lib/apt/lists/*
    printf 'UUID=%s / ext4 rw,errors=remount-ro 0 1\n' "$uuid" >"$m/etc/fstab"
    grub_files "$m" "$uuid" "$k61"
    # grub-mkconfig writes root=UUID= only when udev's by-uuid link exists
    # (else the build's /dev/loopNp1): made by hand here, where no udev runs.
    mkdir -p /dev/disk/by-uuid
    ln -sfn "${lo}p1" "/dev/disk/by-uuid/$uuid"
    { chroot "$m" update-grub && chroot "$m" grub-install --target=i386-pc "$lo"; } >>"$out/debootstrap.log" 2>&1 \
        || { rm -f "/dev/disk/by-uuid/$uuid"; tail -n 20 "$out/debootstrap.log" >&2; die "installing GRUB failed"; }
    rm -f "/dev/disk/by-uuid/$uuid"
    grep -q "root=UUID=$uuid" "$m/boot/grub/grub.cfg" || die "GRUB's entries do not boot root=UUID=$uuid"
    # shellcheck disable=SC2012 # kernel release names
    kbpo=$(ls "$m/lib/modules" | sort -V | tail -n1)
    [[ $kbpo != "$k61" ]] || die "no backports kernel in the grub image"
    grep -q "gnulinux-$k61-advanced-$uuid" "$m/boot/grub/grub.cfg" || die "GRUB has no entry for $k61"
    printf '%s\n%s\n' "$k61" "$kbpo" >"$out/kernels"
    # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
    chroot "$m" dpkg-query -W -f '${Package} ${Version}\n' >"$out/packages.txt"
    build_cleanup
}

# The image dir (ci/lib.sh's cached_image: this recipe's, built if missing).
image_update() { apt_guest apt-get update -qq; }
image_prepare() { ensure_tools; }
# One image per flavour the guests use (each built unless cached); their dirs.
cmd_image() {
    local suite arch boot
    while read -r suite arch boot; do
        flavour "$suite" "$arch" "$boot"
        cached_image "$suite/$arch/$boot image"
    done < <(flavours)
}

# The image dir GUEST boots from (built if need be), with the flavour set.
image_for() {   # image_for GUEST
    flavour "${G_SUITE[$1]}" "${G_ARCH[$1]}" "${G_BOOT[$1]}"
    cached_image "${G_SUITE[$1]}/${G_ARCH[$1]}/${G_BOOT[$1]} image"
}

# ------------------------------------------------------------------ guests

gdir() { echo "$VMROOT/$1"; }
tap() { echo "$TAP_PREFIX$1"; }

net_mode() {
    case ${BENCHRIG_VM_NET:-} in
        tap|user) echo "$BENCHRIG_VM_NET" ;;
        "") if ip link show "$BRIDGE" >/dev/null 2>&1; then echo tap; else echo user; fi ;;
        *) die "BENCHRIG_VM_NET must be tap or user" ;;
    esac
}

# Where ssh reaches GUEST: "HOST PORT" (from the mode the guest was started in).
ssh_target() {
    local m
    m=$(cat "$(gdir "$1")/net" 2>/dev/null) || m=$(net_mode)
    if [[ $m == tap ]]; then echo "${G_IP[$1]} 22"; else echo "127.0.0.1 ${G_PORT[$1]}"; fi
}

client_key() {   # the lab's key if the lab has one, else our own
    if [[ -s $LAB/id_ed25519 ]]; then echo "$LAB/id_ed25519"; else echo "$VMROOT/id_ed25519"; fi
}

ssh_opts() {   # ssh_opts GUEST
    local host port
    read -r host port < <(ssh_target "$1")
    SSH_OPTS=(-F /dev/null -i "$(client_key)" -o "UserKnownHostsFile=$VMROOT/known_hosts"
              -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes
              -o ConnectTimeout=5 -o LogLevel=ERROR -p "$port")
    SSH_HOST=root@$host
}

ssh_ok() { ssh_opts "$1"; timeout 10 ssh "${SSH_OPTS[@]}" "$SSH_HOST" true </dev/null >/dev/null 2>&1; }

qemu_pid() {   # pid of GUEST's running qemu, or fail
    local pid
    pid=$(cat "$(gdir "$1")/qemu.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    # -name ...,process= sets comm; it also guards against pid reuse.
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$PROC_PREFIX$1" ]] || return 1
    echo "$pid"
}

keys_up() {
    local g d key
    mkdir -p "$VMROOT"; chmod 700 "$VMROOT"
    key=$(client_key)
    if [[ ! -s $key ]]; then
        ssh-keygen -q -t ed25519 -N '' -C benchrig-vm-client -f "$key"
    fi
    [[ -s $key.pub ]] || ssh-keygen -y -f "$key" >"$key.pub"
    for g in "${GUESTS[@]}"; do
        d=$(gdir "$g"); mkdir -p "$d"
        [[ -s $d/ssh_host_ed25519_key ]] \
            || ssh-keygen -q -t ed25519 -N '' -C "benchrig-vm-$g" -f "$d/ssh_host_ed25519_key"
    done
    for g in "${GUESTS[@]}"; do
        local k; k=$(cut -d' ' -f1,2 "$(gdir "$g")/ssh_host_ed25519_key.pub")
        printf '%s %s\n[127.0.0.1]:%s %s\n' "${G_IP[$g]}" "$k" "${G_PORT[$g]}" "$k"
    done >"$VMROOT/known_hosts"
}

# Fresh root disk from the image, with the client key and the guest's host key.
root_disk() {   # root_disk GUEST IMAGEDIR
    local g=$1 img=$2 d fs extra=
    d=$(gdir "$g")
    install -m 600 "$(client_key).pub" "$d/authorized_keys"
    { echo "127.0.0.1 localhost"; for h in "${GUESTS[@]}"; do echo "${G_IP[$h]} $h"; done; } >"$d/hosts"
    if [[ ${G_BOOT[$g]} == grub ]]; then
        # The root is the disk's first partition (at 1 MiB); GRUB's command
        # line is the image's, so the guest's name and address go in files.
        cp --sparse=always "$img/disk.img" "$d/root.img.tmp"
        fs=$(losetup -f --show -o 1048576 "$d/root.img.tmp")
        echo "$g" >"$d/hostname"
        net_conf "$g" >"$d/benchrig-net.conf"
        extra="rm /etc/hostname
write $d/hostname /etc/hostname
sif /etc/hostname mode 0100644
write $d/benchrig-net.conf /etc/benchrig-net.conf
sif /etc/benchrig-net.conf mode 0100644"
    else
        cp --sparse=always "$img/root.img" "$d/root.img.tmp"
        fs=$d/root.img.tmp
    fi
    debugfs -w "$fs" -f - >"$d/debugfs.log" 2>&1 <<EOF
mkdir /root/.ssh
sif /root/.ssh mode 040700
write $d/authorized_keys /root/.ssh/authorized_keys
sif /root/.ssh/authorized_keys mode 0100600
write $d/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key
sif /etc/ssh/ssh_host_ed25519_key mode 0100600
write $d/ssh_host_ed25519_key.pub /etc/ssh/ssh_host_ed25519_key.pub
sif /etc/ssh/ssh_host_ed25519_key.pub mode 0100644
rm /etc/hosts
write $d/hosts /etc/hosts
sif /etc/hosts mode 0100644
$extra
EOF
    # debugfs exits 0 even when a request fails: check the result.
    local ok=0
    debugfs -R 'stat /root/.ssh/authorized_keys' "$fs" 2>/dev/null | grep -q 'Mode:  *0600' \
        && debugfs -R 'stat /etc/ssh/ssh_host_ed25519_key' "$fs" 2>/dev/null | grep -q 'Mode:  *0600' && ok=1
    [[ $fs == /dev/* ]] && losetup -d "$fs"
    ((ok)) || { cat "$d/debugfs.log" >&2; die "could not write keys into $g's root disk"; }
    mv -f "$d/root.img.tmp" "$d/root.img"
}

# The guest's address and gateway for its mode of network, as benchrig-net
# reads them (from the kernel command line, or /etc/benchrig-net.conf).
net_conf() {   # net_conf GUEST
    if [[ $(net_mode) == tap ]]; then
        printf 'ip=%s/%s\ngw=%s\n' "${G_IP[$1]}" "$NET_PREFIX" "$BRIDGE_IP"
    else
        printf 'ip=10.0.2.15/24\ngw=10.0.2.2\n'
    fi
}

start_guest() {   # start_guest GUEST IMAGEDIR
    local g=$1 img=$2 d mode i netdev append pid
    d=$(gdir "$g")
    mode=$(net_mode)
    rm -f "$d/qemu.pid" "$d/monitor.sock"
    root_disk "$g" "$img"
    for ((i = 0; i < G_DISKS[$g]; i++)); do
        [[ -e $d/disk$i.img ]] || truncate -s "${G_SIZE[$g]}" "$d/disk$i.img"   # sparse
    done
    # no_timer_check: under TCG on a loaded machine the IO-APIC timer check
    # can miss its ticks and a 5.10 kernel panics ("IO-APIC + timer doesn't
    # work"), as a CI run saw; cloud images boot with it for that reason.
    append="root=/dev/vda rw console=ttyS0 net.ifnames=0 systemd.hostname=$g quiet no_timer_check"
    if [[ $mode == tap ]]; then
        ip link show "$BRIDGE" >/dev/null 2>&1 || die "bridge $BRIDGE does not exist (run ci/lab.sh up, or BENCHRIG_VM_NET=user)"
        ip link del "$(tap "$g")" >/dev/null 2>&1 || true
        ip tuntap add dev "$(tap "$g")" mode tap
        ip link set "$(tap "$g")" master "$BRIDGE" up
        netdev="tap,id=n0,ifname=$(tap "$g"),script=no,downscript=no"
        append+=" benchrig.ip=${G_IP[$g]}/$NET_PREFIX benchrig.gw=$BRIDGE_IP"
    else
        netdev="user,id=n0,hostfwd=tcp:127.0.0.1:${G_PORT[$g]}-:22"
        append+=" benchrig.ip=10.0.2.15/24 benchrig.gw=10.0.2.2"
    fi
    echo "$mode" >"$d/net"
    local args=(
        -name "$NAME_PREFIX$g,process=$PROC_PREFIX$g"
        -accel tcg -cpu "${G_MODEL[$g]}" -smp 1 -m "${G_MEM[$g]}"
        -drive "file=$d/root.img,if=virtio,format=raw,cache=unsafe"
        -netdev "$netdev"
        -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:$(printf %02x "${G_IP[$g]##*.}")"
        -nodefaults -display none -serial "file:$d/console.log" -monitor "unix:$d/monitor.sock,server,nowait"
        -pidfile "$d/qemu.pid" -daemonize
    )
    # A grub guest boots from its disk (SeaBIOS, then GRUB); the others
    # boot the image's kernel with the lab's command line.
    [[ ${G_BOOT[$g]} == grub ]] || args+=(-kernel "$img/vmlinuz" -initrd "$img/initrd.img" -append "$append")
    for ((i = 0; i < G_DISKS[$g]; i++)); do
        # cache=none (O_DIRECT): the host page cache must not hide the throttle.
        args+=(-drive "file=$d/disk$i.img,if=virtio,format=raw,cache=none,aio=threads,throttling.bps-total=${G_BPS[$g]}")
    done
    flavour "${G_SUITE[$g]}" "${G_ARCH[$g]}" "${G_BOOT[$g]}"
    "$QEMU" "${args[@]}" 2>"$d/qemu.log" \
        || { cat "$d/qemu.log" >&2; die "qemu for $g did not start (log: $d/qemu.log)"; }
    echo "$SECONDS" >"$d/started-at"
    pid=$(qemu_pid "$g") || die "qemu for $g started but is not running (log: $d/qemu.log)"
    cpu_limit "$g" "$pid"
    log "started $g (qemu pid $pid, $mode network)"
}

CG_CPU=/sys/fs/cgroup/cpu/benchrig-vm
cpu_limit() {   # cpu_limit GUEST PID — every qemu thread (the vCPU's too) under the quota
    [[ ${G_CPU[$1]} == - ]] && return 0
    [[ -d ${CG_CPU%/*} ]] || die "no cgroup v1 cpu controller at ${CG_CPU%/*} (needed for $1's cpu limit)"
    mkdir -p "$CG_CPU/$1"
    echo 100000 >"$CG_CPU/$1/cpu.cfs_period_us"
    echo "${G_CPU[$1]}" >"$CG_CPU/$1/cpu.cfs_quota_us"
    echo "$2" >"$CG_CPU/$1/cgroup.procs"
}

# Wait for the sshds of the guests just started (they boot in parallel).
wait_guests() {   # wait_guests GUEST...
    local g d deadline waiting=("$@") still
    ((${#waiting[@]})) || return 0
    log "waiting for sshd of ${waiting[*]} (up to ${SSH_WAIT_SECONDS}s)"
    deadline=$((SECONDS + SSH_WAIT_SECONDS))
    while ((${#waiting[@]})); do
        still=()
        for g in "${waiting[@]}"; do
            d=$(gdir "$g")
            if ssh_ok "$g"; then
                echo "$((SECONDS - $(cat "$d/started-at")))" >"$d/boot-seconds"
                log "$g: sshd reachable $(cat "$d/boot-seconds")s after qemu start"
                continue
            fi
            qemu_pid "$g" >/dev/null || { tail -n 30 "$d/console.log" >&2; die "qemu of $g exited during boot (console: $d/console.log)"; }
            if ((SECONDS >= deadline)); then
                tail -n 30 "$d/console.log" >&2 || true
                die "sshd of $g not reachable after ${SSH_WAIT_SECONDS}s (console: $d/console.log)"
            fi
            still+=("$g")
        done
        waiting=("${still[@]}")
        if ((${#waiting[@]})); then sleep 2; fi
    done
    return 0
}

cmd_up() {
    local img g
    ensure_tools
    keys_up
    power_switch
    local started=()
    for g in "${GUESTS[@]}"; do
        if qemu_pid "$g" >/dev/null; then
            ssh_ok "$g" || log "warning: $g is running but ssh does not answer (yet)"
        else
            img=$(image_for "$g")
            start_guest "$g" "$img"
            started+=("$g")
        fi
    done
    wait_guests "${started[@]}"
    cmd_status
}

cmd_status() {
    local g rc=0 pid net sshok kern tgt
    printf '%-8s %-8s %-5s %-18s %-4s %s\n' GUEST QEMU NET SSH-AT SSH KERNEL
    for g in "${GUESTS[@]}"; do
        pid=$(qemu_pid "$g" 2>/dev/null) || pid=-
        net=$(cat "$(gdir "$g")/net" 2>/dev/null) || net=-
        tgt=$(ssh_target "$g" | tr ' ' :)
        sshok=no kern=-
        if [[ $pid != - ]] && ssh_ok "$g"; then
            sshok=ok
            kern=$(timeout 10 ssh "${SSH_OPTS[@]}" "$SSH_HOST" uname -r </dev/null 2>/dev/null) || kern='?'
        fi
        [[ $pid != - && $sshok == ok ]] || rc=1
        printf '%-8s %-8s %-5s %-18s %-4s %s\n' "$g" "$pid" "$net" "$tgt" "$sshok" "$kern"
    done
    return "$rc"
}

cmd_power() {
    [[ -x $VMROOT/power ]] || die "the guests are not up (no $VMROOT/power)"
    "$VMROOT/power" "$1"
}

# $VMROOT/power GUEST: the guests' power switch (the monitor's system_reset),
# a script of its own so that an inventory's benchrig_power_cycle can name
# it by a fixed path while the guests are up.
power_switch() {
    cat >"$VMROOT/power" <<EOF
#!/bin/sh
# ci/vm.sh: power-cycle a guest of the benchrig lab (qemu's system_reset).
set -e
case \$1 in ''|*[!a-z0-9]*) echo "usage: \$0 GUEST" >&2; exit 2 ;; esac
sock=$VMROOT/\$1/monitor.sock
[ -S "\$sock" ] || { echo "\$1 is not running (no \$sock)" >&2; exit 1; }
echo system_reset | timeout 10 socat - "UNIX-CONNECT:\$sock" >/dev/null
echo "\$1: power cycled (system_reset)" >&2
EOF
    chmod 755 "$VMROOT/power"
}

# A kernel package the grub guest lacks (it has the suite's generic kernel
# and the backports one): the backports cloud flavour, a real Debian kernel
# .deb whose hooks build an initramfs and update GRUB, as a lab's would.
cmd_kernel_deb() {
    local d=$CACHE/packages f meta ver pkg
    mkdir -p "$d"
    f=$(find "$d" -maxdepth 1 -name 'linux-image-*-cloud-amd64_*_amd64.deb' | sort | tail -n1)
    if [[ -z $f ]]; then
        apt_bpo update -qq >&2
        meta=linux-image-cloud-amd64
        ver=$(apt_bpo_with apt-cache madison "$meta" | awk -F'|' '$3 ~ /backports/ { gsub(/ /, "", $2); print $2; exit }')
        [[ -n $ver ]] || die "no $meta in $HOST_SUITE-backports"
        pkg=$(apt_bpo_with apt-cache show "$meta=$ver" | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | head -n1)
        [[ -n $pkg ]] || die "$meta $ver names no kernel package"
        (cd "$d" && apt_bpo download "$pkg" >&2) || die "downloading $pkg failed"
        f=$(find "$d" -maxdepth 1 -name "${pkg}_*.deb" | head -n1)
        [[ -n $f ]] || die "apt-get download left no ${pkg}_*.deb in $d"
    fi
    echo "$f"
}

cmd_ssh() {
    local g=$1; shift
    ssh_opts "$g"
    exec ssh "${SSH_OPTS[@]}" "$SSH_HOST" "$@"
}

# Guests from the table plus any run dir or tap left over (e.g. a guest removed
# from the table while running), so `down` gets them all.
all_known_guests() {
    {
        printf '%s\n' "${GUESTS[@]}"
        [[ -d $VMROOT ]] && find "$VMROOT" -mindepth 1 -maxdepth 1 -type d -printf '%f\n'
        ip -o link show 2>/dev/null | awk -F': ' -v p="$TAP_PREFIX" 'index($2, p) == 1 { sub(/@.*/, "", $2); print substr($2, length(p) + 1) }'
    } | sort -u
}

stop_guest() {   # stop_guest GUEST — quit via the monitor, then TERM, then KILL
    local g=$1 pid try d
    d=$(gdir "$g")
    pid=$(qemu_pid "$g") || return 0
    if [[ -S $d/monitor.sock ]] && command -v socat >/dev/null 2>&1; then
        echo quit | timeout 5 socat - "UNIX-CONNECT:$d/monitor.sock" >/dev/null 2>&1 || true
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((try = 0; try < 100; try++)); do
        [[ -e /proc/$pid ]] || { log "stopped $g (pid $pid)"; return 0; }
        ((try == 50)) && kill -KILL "$pid" 2>/dev/null
        sleep 0.1
    done
    log "qemu of $g (pid $pid) survived kill -9"
    return 1
}

cmd_down() {
    local g rc=0
    for g in $(all_known_guests); do
        stop_guest "$g" || rc=1
        if ip link show "$(tap "$g")" >/dev/null 2>&1; then ip link del "$(tap "$g")" || rc=1; fi
    done
    # Build mounts of an interrupted `image` (proc in a rootfs under the cache).
    while read -r g; do
        [[ -n $g ]] && { umount "$g" 2>/dev/null || umount -l "$g" || rc=1; }
    done < <(findmnt -rn -o TARGET | awk -v a="$VMROOT/" -v b="$CACHE/" 'index($0 "/", a) == 1 || index($0 "/", b) == 1' | sort -r)
    rm -rf --one-file-system -- "$VMROOT" "$CACHE"/build.* || rc=1
    if [[ -d $CG_CPU ]]; then
        find "$CG_CPU" -depth -type d -exec rmdir {} + 2>/dev/null \
            || { sleep 0.5; find "$CG_CPU" -depth -type d -exec rmdir {} + || rc=1; }
    fi

    # Report anything that survived (ci/lib.sh).
    left_behind "the guests" vm_leftovers || rc=1
    ((rc == 0)) && log "guests are down (image cache kept in $CACHE)"
    return "$rc"
}

main() {
    load_guests
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        image|up|down|status) [[ $# -eq 0 ]] || { usage >&2; exit 2; } ;;&
        image|up|down|status|ssh|power) [[ $(id -u) -eq 0 ]] || die "must run as root" ;;&
        image) ensure_tools; cmd_image ;;
        up) cmd_up ;;
        down) cmd_down ;;
        status) cmd_status ;;
        ssh) need_guest "${1:-}"; cmd_ssh "$@" ;;
        power) need_guest "${1:-}"; [[ $# -eq 1 ]] || { usage >&2; exit 2; }; cmd_power "$1" ;;
        kernel-deb) cmd_kernel_deb ;;
        -h|--help|help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
