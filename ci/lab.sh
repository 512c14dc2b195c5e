#!/usr/bin/env bash
# ci/lab.sh — turn this one machine into a simulated benchrig lab.
#
# Each lab host is a network namespace (brlab-<host>) with its own sshd, its
# own mount namespace (private /tmp and /root), loop-device "disks" and
# cgroup v1 throttles (cpu, memory, blkio). inventories/simlab.yml points at
# the paths created here, so the layout below is fixed.
#
# Run as root. Expects cgroup v1 hierarchies at /sys/fs/cgroup/{cpu,blkio,memory}.
set -euo pipefail

usage() {
    cat <<EOF
usage: ${0##*/} COMMAND [ARGS]

  up               create whatever is missing, (re)start sshds that are not
                   running, leave running things alone; print a table
  down             remove everything the lab created (processes, mounts of lab
                   disks, loop devices, cgroups, netns, bridge, lab dir)
  status           per host: netns, sshd, ssh, disks; exit 1 if anything is missing
  crash HOST       kill -9 every process in HOST's namespace ('up' or 'boot'
                   revives it), and let go of a filesystem its agent left
                   frozen, as a reboot would
  boot HOST        start a crashed HOST's sshd again, touching nothing else
                   (unlike 'up', which sets every host's disks and cgroups
                   again: a test on one host can run beside the others)
  ssh HOST [CMD]   ssh into a lab host with the lab key and known_hosts
  throttle HOST RBPS WBPS
                   set the read/write bytes/s limit of each of HOST's disks
                   (a slower disk for a night; 'up' puts the table's back;
                   not on a host with model disks)

Hosts: ${HOSTS[*]}
Lab dir: $LAB (override with BENCHRIG_LAB_DIR, for experiments only)
EOF
}

# --------------------------------------------------------------------------
# Host table — edit here to add hosts.
#   name      netns is brlab-<name>, root-side veth vbr-<name> (<= 11 chars)
#   ip        address on the lab bridge (10.77.0.0/24)
#   arch      native | i686 (i686: sshd runs under `setarch i686`)
#   cpu_quota cgroup v1 cpu.cfs_quota_us per 100000 us period, or - for none
#   mem       cgroup v1 memory.limit_in_bytes (e.g. 512M), or - for none
#   size      size of each disk image (truncate -s syntax)
#   disks     comma-separated disk names; image $LAB/disks/<name>-<disk>.img
#   rot       /sys/block/loopN/queue/rotational for its disks (1 = HDD-like)
#   rbps wbps riops wiops   blkio.throttle.* limits applied to EACH disk
#   lacks     comma-separated tools this host does not have, or - (optional
#             column). The hosts share this machine's /usr, so a tool is taken
#             away inside the host's own mount namespace: an empty,
#             non-executable file is bound over each place it is installed
#             (/usr/bin/fio), so the agent, as a root shell would, finds none.
#             `ip netns exec` makes that namespace a slave of this machine's,
#             so the bind never propagates here, and it goes when the host's
#             last process does (`down`); lab_leftovers in ci/lib.sh looks
#             for one anyway. old lacks fio: a run there has its fio cells
#             unsupported (tests/lab/main.rs), and no other test runs fio on old.
#   shape     how the host differs from a root/bash/bridge host (optional
#             column), comma-separated, or - for none:
#               sudo     its inventory logs in as the lab users brlab-nopw
#                        (sudo NOPASSWD) and brlab-pw (sudo with the password in
#                        $LAB/become-password); users_up makes them
#               via=H    not on the bridge: reachable only from host H's netns
#                        (a veth between the two; H is its bastion)
#               noexec   its /root (the login's $HOME) is mounted noexec
#               busybox  sshd and the session run chrooted in a rootfs of
#                        busybox (/bin/sh), sshd and mkfs.ext4 with their
#                        libraries only: no bash, no coreutils, no python
#   model     the disks' timing model (optional column), or - for none. -: the
#             loop device sits on the image and the blkio throttles above
#             shape it (fast, fine for sequential transfers, but a small read
#             costs no seek). hdd:KEY=VALUE,... or ssd:KEY=VALUE,...: the image
#             is served by ci/diskmodel (benchrig-diskmodel --profile hdd
#             --KEY VALUE ...; its --help lists the keys: seek, t2t, rpm, outer,
#             inner, cache, bus, overhead; latency, rate, channels) as
#             <image>.model/disk, the loop device sits on that file, and the
#             disk's timing is the model's: no blkio throttle on it (rbps ..
#             wiops are ignored), cpu and memory limits as for any host. The
#             daemon runs outside the hosts' cgroups, as a disk's firmware
#             would, and logs to <image>.model.log.
# --------------------------------------------------------------------------
HOST_TABLE=$(cat <<'EOF'
# name  ip          arch    cpu_quota mem   size disks               rot rbps       wbps       riops wiops lacks model
old     10.77.0.11  i686    12000     512M  1G   hdd0,hdd1           1   31457280   26214400   150   150   fio   hdd:seek=9.8,t2t=1.2,rpm=7200,outer=40,inner=24,cache=2048
fast1   10.77.0.12  native  -         -     2G   ssd0,ssd1,ssd2,ssd3 0   524288000  419430400  40000 40000 -     -
fast2   10.77.0.13  native  -         -     2G   ssd0,ssd1           0   524288000  419430400  40000 40000 -     -
hdd     10.77.0.14  native  -         -     1G   hdd0,hdd1           1   31457280   26214400   150   150   -     hdd:seek=8.5,t2t=1.0,rpm=7200,outer=60,inner=35,cache=8192
soc     10.77.0.15  native  15000     1G    2G   ssd0,ssd1           0   524288000  419430400  40000 40000 -     -
users   10.77.0.31  native  -         -     1G   ssd0,ssd1           0   524288000  419430400  40000 40000 -     -     sudo
jump    10.77.0.32  native  -         -     1G   -                   0   0          0          0     0     -     -     -
behind  10.77.1.2   native  -         -     1G   ssd0,ssd1           0   524288000  419430400  40000 40000 -     -     via=jump,noexec
tiny    10.77.0.33  native  30000     512M  1G   ssd0,ssd1           0   524288000  419430400  40000 40000 -     -     busybox
EOF
)
# Another table, for experiments (ci/bench-fanout.sh builds N disk-less hosts
# this way): a file in the format above; disks '-' means none.
if [[ -n ${BENCHRIG_LAB_HOSTS:-} ]]; then
    HOST_TABLE=$(cat "$BENCHRIG_LAB_HOSTS") || { echo "lab: error: cannot read BENCHRIG_LAB_HOSTS=$BENCHRIG_LAB_HOSTS" >&2; exit 1; }
fi

LAB=${BENCHRIG_LAB_DIR:-/var/tmp/benchrig-lab}
BRIDGE=brlab0
BRIDGE_IP=10.77.0.1
# The bench's 250 hosts need more than a /24 (ci/bench-fanout.sh sets 16).
NET_PREFIX=${BENCHRIG_LAB_NET_PREFIX:-24}
NS_PREFIX=brlab-
VETH_PREFIX=vbr-
CG_ROOT=/sys/fs/cgroup
CG_NAME=benchrig-lab
CG_CONTROLLERS=(cpu blkio memory)
CPU_PERIOD=100000
SSHD=/usr/sbin/sshd
SSH_WAIT_SECONDS=20
# Tags the iptables rule we may add so that `down` removes exactly that rule.
IPT_RULE=(FORWARD -i "$BRIDGE" -o "$BRIDGE" -m comment --comment "$CG_NAME" -j ACCEPT)

HOSTS=()
declare -A H_IP H_ARCH H_CPU H_MEM H_SIZE H_DISKS H_ROT H_RBPS H_WBPS H_RIOPS H_WIOPS H_LACKS H_MODEL H_SHAPE
# The local users a `sudo` host's inventory logs in as, and the operator
# (brlab-op) the bastion tests run benchrig as: its ~/.ssh is what ssh's
# ProxyJump and a Host alias read. Their homes are under /home, as a
# login's is, and go with `down`.
LAB_USERS=(brlab-nopw brlab-pw brlab-op)
SUDOERS=/etc/sudoers.d/benchrig-lab

log() { printf '%s\n' "lab: $*" >&2; }
die() { printf '%s\n' "lab: error: $*" >&2; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

load_hosts() {
    local name ip arch cpu mem size disks rot rbps wbps riops wiops lacks model shape
    while read -r name ip arch cpu mem size disks rot rbps wbps riops wiops lacks model shape; do
        [[ -z $name || $name == \#* ]] && continue
        # Interface names are limited to 15 chars: "vbr-" + 11.
        [[ $name =~ ^[a-z0-9]{1,11}$ ]] || die "bad host name '$name' in HOST_TABLE"
        [[ -n $wiops ]] || die "incomplete HOST_TABLE line for '$name'"
        HOSTS+=("$name")
        H_IP[$name]=$ip H_ARCH[$name]=$arch H_CPU[$name]=$cpu H_MEM[$name]=$mem
        [[ $disks == - ]] && disks=""
        H_SIZE[$name]=$size H_DISKS[$name]=${disks//,/ } H_ROT[$name]=$rot
        H_RBPS[$name]=$rbps H_WBPS[$name]=$wbps H_RIOPS[$name]=$riops H_WIOPS[$name]=$wiops
        [[ -z $lacks || $lacks == - ]] && lacks=""
        [[ $lacks =~ ^[a-z0-9._,+-]*$ ]] || die "bad tool list '$lacks' for '$name' in HOST_TABLE"
        H_LACKS[$name]=${lacks//,/ }
        [[ -z $model ]] && model=-
        [[ $model == - || $model =~ ^(hdd|ssd)(:[a-z0-9]+=[0-9.]+(,[a-z0-9]+=[0-9.]+)*)?$ ]] \
            || die "bad disk model '$model' for '$name' in HOST_TABLE (- or hdd:KEY=VALUE,... or ssd:...)"
        H_MODEL[$name]=$model
        [[ -z $shape || $shape == - ]] && shape=""
        [[ $shape =~ ^((sudo|noexec|busybox|via=[a-z0-9]+)(,|$))*$ ]] \
            || die "bad shape '$shape' for '$name' in HOST_TABLE (sudo, noexec, busybox, via=HOST)"
        H_SHAPE[$name]=${shape//,/ }
    done <<<"$HOST_TABLE"
}

has_shape() { [[ " ${H_SHAPE[$1]} " == *" $2 "* ]]; }   # has_shape HOST WORD
# The host whose netns alone reaches HOST (via=), or nothing.
via_of() { local w; for w in ${H_SHAPE[$1]}; do [[ $w == via=* ]] && echo "${w#via=}"; done; return 0; }
# Run a command where HOST can be reached: its bastion's netns, or here.
reach() {   # reach HOST CMD...
    local h=$1 v
    shift
    v=$(via_of "$h")
    if [[ -n $v ]]; then ip netns exec "$(ns "$v")" "$@"; else "$@"; fi
}

check_lab_dir() {
    # `down` does rm -rf on it: refuse anything that is not an absolute path
    # at least two levels deep.
    [[ $LAB == /* && $LAB =~ ^/[^/]+/[^/]+ && $LAB != *..* ]] \
        || die "refusing lab dir '$LAB' (must be an absolute path, at least /a/b)"
    LAB=${LAB%/}
}

need_host() {
    [[ -n ${1:-} ]] || die "missing HOST (one of: ${HOSTS[*]})"
    [[ -n ${H_IP[$1]+x} ]] || die "unknown host '$1' (one of: ${HOSTS[*]})"
}

ensure_tools() {
    # Install only what is really missing (normally nothing on the CI image).
    local pkgs=() cmd pkg
    for cmd in sshd:openssh-server ssh:openssh-client ssh-keygen:openssh-client \
               ip:iproute2 losetup:mount setarch:util-linux findmnt:util-linux \
               fsfreeze:util-linux blkid:util-linux python3:python3 sudo:sudo \
               busybox:busybox-static; do
        pkg=${cmd#*:}; cmd=${cmd%%:*}
        command -v "$cmd" >/dev/null 2>&1 || [[ -x /usr/sbin/$cmd ]] || pkgs+=("$pkg")
    done
    if ((${#pkgs[@]})); then
        log "installing missing packages: ${pkgs[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >&2
    fi
}

ns() { echo "$NS_PREFIX$1"; }
hdir() { echo "$LAB/hosts/$1"; }
ns_exists() { [[ -e /run/netns/$(ns "$1") ]]; }

ssh_opts() {
    # -F /dev/null: ignore any user/system ssh_config and never create /root/.ssh.
    SSH_OPTS=(-F /dev/null -i "$LAB/id_ed25519" -o "UserKnownHostsFile=$LAB/known_hosts"
              -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes
              -o ConnectTimeout=5 -o LogLevel=ERROR)
}

ssh_ok() {   # ssh_ok HOST — does `ssh ... true` work within 5 s?
    ssh_opts
    reach "$1" timeout 5 ssh "${SSH_OPTS[@]}" "root@${H_IP[$1]}" true </dev/null >/dev/null 2>&1
}

# Write a file only when its content changes, so that `up` leaves things alone.
write_if_changed() {   # write_if_changed FILE MODE  (content on stdin)
    local tmp
    tmp=$(mktemp "$1.XXXXXX")
    cat >"$tmp"
    chmod "$2" "$tmp"
    if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv -f "$tmp" "$1"; fi
}

# Is PID a live (non-zombie) process inside HOST's netns? A killed sshd may
# linger as a zombie if nobody reaps it, so `kill -0` is not enough; a zombie
# has no namespaces any more, so comparing the netns also rules out pid reuse.
pid_in_host() {   # pid_in_host PID HOST
    local pid=$1 want have
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    want=$(stat -L -c %i "/run/netns/$(ns "$2")" 2>/dev/null) || return 1
    have=$(stat -L -c %i "/proc/$pid/ns/net" 2>/dev/null) || return 1
    [[ $want == "$have" ]]
}

sshd_pid() {   # print the pid of HOST's running sshd, or fail
    local pid
    pid=$(cat "$(hdir "$1")/sshd.pid" 2>/dev/null) || return 1
    pid_in_host "$pid" "$1" || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == sshd ]] || return 1
    echo "$pid"
}

# Loop devices currently backed by lab images: lines "/dev/loopN <image>".
# Matching on the backing-file prefix also catches images deleted while attached.
lab_loops() {
    losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v p="$LAB/disks/" 'index($2, p) == 1 { print $1, $2 }'
}

image_loop() {   # the /dev/loopN an image is attached to (empty if none)
    losetup -n -O NAME -j "$1" 2>/dev/null | head -n1
}

# ------------------------------------------------------------------ model disks
# A model disk (the table's model column): benchrig-diskmodel serves
# $LAB/disks/<host>-<disk>.img as <image>.model/disk, and the loop device sits
# on that file. Everything lives under $LAB/disks/, so lab_loops, the mounts
# below the lab dir and rm -rf find it as they find a plain disk's.

has_model() { [[ ${H_MODEL[$1]} != - ]]; }
model_dir() { echo "$1.model"; }   # model_dir IMAGE: the FUSE mount point
# The file the loop device goes on: the image, or the model's file for it.
disk_file() {   # disk_file HOST IMAGE
    if has_model "$1"; then echo "$(model_dir "$2")/disk"; else echo "$2"; fi
}

# The daemon's binary: BENCHRIG_DISKMODEL, or built here (release, cargo's
# no-op when it is up to date).
diskmodel_bin() {
    if [[ -n ${BENCHRIG_DISKMODEL:-} ]]; then echo "$BENCHRIG_DISKMODEL"; return; fi
    local root
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    (cd "$root" && cargo build --locked --release -q -p benchrig-diskmodel >&2) \
        || die "cannot build ci/diskmodel (cargo build -p benchrig-diskmodel)"
    echo "$root/target/release/benchrig-diskmodel"
}

# Whether process PID runs: not gone, and not a zombie its parent has yet to reap.
running() { [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) =~ ^[^Z]$ ]]; }

# The pid of the daemon serving IMAGE, if it is running.
model_pid() {   # model_pid IMAGE
    local pid
    pid=$(cat "$1.model.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ && $(cat "/proc/$pid/comm" 2>/dev/null) == benchrig-diskmo* ]] || return 1
    running "$pid" || return 1
    echo "$pid"
}

# Start the daemon for IMAGE unless it runs and serves; a dead one's stale
# mount (ENOTCONN) and the loop device on it go first.
model_up() {   # model_up HOST IMAGE
    local h=$1 img=$2 dir spec args=() kv loop i
    dir=$(model_dir "$img")
    if model_pid "$img" >/dev/null && [[ -e $dir/disk ]]; then return 0; fi
    loop=$(image_loop "$dir/disk")
    [[ -n $loop ]] && losetup -d "$loop" 2>/dev/null
    mountpoint -q "$dir" 2>/dev/null && { umount "$dir" 2>/dev/null || umount -l "$dir"; }
    # A stale FUSE mount answers ENOTCONN even to mountpoint(1).
    findmnt -rn -o TARGET | grep -qxF "$dir" && umount -l "$dir"
    mkdir -p "$dir"
    spec=${H_MODEL[$h]}
    args=(--profile "${spec%%:*}")
    if [[ $spec == *:* ]]; then
        IFS=, read -r -a kv <<<"${spec#*:}"
        for i in "${kv[@]}"; do args+=("--${i%%=*}" "${i#*=}"); done
    fi
    # No setsid(1) here: it forks when it is a group leader, and until the
    # exec chain is done $! is named bash or setsid, not the daemon. The
    # daemon leaves the caller's session itself; $! is its pid from the fork.
    "$DISKMODEL" --image "$img" "${args[@]}" "$dir" >>"$img.model.log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$img.model.pid"
    for ((i = 0; i < 100; i++)); do
        [[ -e $dir/disk ]] && return 0
        running "$pid" || break
        sleep 0.1
    done
    tail -n 5 "$img.model.log" >&2 || true
    die "the model disk for $img did not come up (log: $img.model.log)"
}

# Stop every model daemon under the lab dir: its loop device is detached
# already (down's step 3), so SIGTERM unmounts and the daemon exits (in 5 s at
# most, see its --help); one still there after 10 s is killed.
models_down() {
    local f pid dir i pids=() rc=0
    for f in "$LAB"/disks/*.img.model.pid; do
        [[ -e $f ]] || continue
        pid=$(model_pid "${f%.model.pid}") && { kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); }
        rm -f "$f"
    done
    for pid in "${pids[@]}"; do
        for ((i = 0; i < 100; i++)); do
            [[ -e /proc/$pid ]] || break
            sleep 0.1
        done
        if [[ -e /proc/$pid ]]; then
            log "model daemon $pid did not exit on SIGTERM: killing it"
            kill -KILL "$pid" 2>/dev/null || true
            rc=1
        fi
    done
    for dir in "$LAB"/disks/*.img.model; do
        [[ -d $dir ]] || continue
        if findmnt -rn -o TARGET | grep -qxF "$dir"; then umount "$dir" 2>/dev/null || umount -l "$dir" || rc=1; fi
    done
    return "$rc"
}

# ------------------------------------------------------------------ network

net_up() {
    local h n
    ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
    ip addr replace "$BRIDGE_IP/$NET_PREFIX" dev "$BRIDGE"
    ip link set "$BRIDGE" up

    for h in "${HOSTS[@]}"; do
        n=$(ns "$h")
        ns_exists "$h" || ip netns add "$n"
        ip -n "$n" link set lo up
        [[ -n $(via_of "$h") ]] && continue
        if ! ip -n "$n" link show eth0 >/dev/null 2>&1; then
            # A veth pair lives and dies as a pair; a root half without the ns half
            # cannot normally exist, but clear it anyway before re-creating.
            ip link del "$VETH_PREFIX$h" >/dev/null 2>&1 || true
            ip link add "$VETH_PREFIX$h" type veth peer name "vbp-$h"
            ip link set "vbp-$h" netns "$n"
            ip -n "$n" link set "vbp-$h" name eth0
        fi
        ip link set "$VETH_PREFIX$h" master "$BRIDGE" up
        ip -n "$n" addr replace "${H_IP[$h]}/$NET_PREFIX" dev eth0
        ip -n "$n" link set eth0 up
        ip -n "$n" route replace default via "$BRIDGE_IP"
    done
    for h in "${HOSTS[@]}"; do
        if [[ -n $(via_of "$h") ]]; then private_link_up "$h" "$(via_of "$h")"; fi
    done
    bridge_filter_up
}

# HOST's only link: a veth to its bastion VIA's netns, HOST at its table
# address (a.b.c.d/24), VIA at a.b.c.1. Deleting either netns removes it.
private_link_up() {   # private_link_up HOST VIA
    local h=$1 v=$2 n m gw
    n=$(ns "$h") m=$(ns "$v") gw=${H_IP[$1]%.*}.1
    ns_exists "$v" || die "host $h is reached via $v, which is not in HOST_TABLE before it"
    if ! ip -n "$n" link show eth0 >/dev/null 2>&1; then
        ip -n "$m" link del "$VETH_PREFIX$h" >/dev/null 2>&1 || true
        ip -n "$m" link add "$VETH_PREFIX$h" type veth peer name eth0 netns "$n"
    fi
    ip -n "$m" addr replace "$gw/$NET_PREFIX" dev "$VETH_PREFIX$h"
    ip -n "$m" link set "$VETH_PREFIX$h" up
    ip -n "$n" addr replace "${H_IP[$h]}/$NET_PREFIX" dev eth0
    ip -n "$n" link set eth0 up
    ip -n "$n" route replace default via "$gw"
}

# With br_netfilter active (bridge-nf-call-iptables=1), frames bridged between
# two lab hosts traverse the iptables FORWARD chain; a DROP policy there (as
# Docker sets) would cut host-to-host traffic. Root<->host traffic is not
# forwarded and is unaffected. If iptables is present, allow brlab0->brlab0
# explicitly; without iptables there is nothing that can drop it (checked by
# check_mesh after the sshds are up, which catches nftables-only setups too).
bridge_filter_up() {
    [[ $(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null) == 1 ]] || return 0
    command -v iptables >/dev/null 2>&1 || return 0
    iptables -C "${IPT_RULE[@]}" 2>/dev/null || iptables -I "${IPT_RULE[@]}" \
        || log "warning: could not add iptables rule (${IPT_RULE[*]}); relying on check_mesh"
}

bridge_filter_down() {
    command -v iptables >/dev/null 2>&1 || return 0
    while iptables -D "${IPT_RULE[@]}" 2>/dev/null; do :; done
}

# Every host must reach every other host's sshd (bridged traffic). Past a
# few hosts, a ring (each reaches the next) shows the same filtering without
# n² probes.
check_mesh() {
    local a b i j n=${#HOSTS[@]} bad=0
    for ((i = 0; i < n; i++)); do
        for ((j = 0; j < n; j++)); do
            ((i == j)) && continue
            ((n > 8 && j != (i + 1) % n)) && continue
            a=${HOSTS[i]} b=${HOSTS[j]}
            # A host behind a bastion is reached from it alone, and reaches
            # no one: ssh_ok in cmd_status checks it through its bastion.
            [[ -n $(via_of "$a") || -n $(via_of "$b") ]] && continue
            if ! ip netns exec "$(ns "$a")" timeout 5 bash -c "exec 3<>/dev/tcp/${H_IP[$b]}/22" 2>/dev/null; then
                log "host $a cannot reach $b (${H_IP[$b]}:22) over $BRIDGE — check bridge netfilter / FORWARD policy"
                bad=1
            fi
        done
    done
    return "$bad"
}

# ------------------------------------------------------------------ keys

keys_up() {
    local h d
    mkdir -p "$LAB"/{hosts,disks,dev}
    chmod 700 "$LAB"
    if [[ ! -s $LAB/id_ed25519 ]]; then
        rm -f "$LAB/id_ed25519.pub"
        ssh-keygen -q -t ed25519 -N '' -C "$CG_NAME-client" -f "$LAB/id_ed25519"
    fi
    [[ -s $LAB/id_ed25519.pub ]] || ssh-keygen -y -f "$LAB/id_ed25519" >"$LAB/id_ed25519.pub"
    write_if_changed "$LAB/authorized_keys" 644 <"$LAB/id_ed25519.pub"

    for h in "${HOSTS[@]}"; do
        d=$(hdir "$h")
        mkdir -p "$d/home"
        chmod 700 "$d/home"
        if [[ ! -s $d/ssh_host_ed25519_key ]]; then
            rm -f "$d/ssh_host_ed25519_key.pub"
            ssh-keygen -q -t ed25519 -N '' -C "$CG_NAME-$h" -f "$d/ssh_host_ed25519_key"
        fi
        [[ -s $d/ssh_host_ed25519_key.pub ]] \
            || ssh-keygen -y -f "$d/ssh_host_ed25519_key" >"$d/ssh_host_ed25519_key.pub"
    done

    for h in "${HOSTS[@]}"; do
        printf '%s %s\n' "${H_IP[$h]}" "$(cut -d' ' -f1,2 "$(hdir "$h")/ssh_host_ed25519_key.pub")"
    done | write_if_changed "$LAB/known_hosts" 644
}

# ------------------------------------------------------------------ users

# The lab users (LAB_USERS), when a host has the `sudo` shape or one is
# behind a bastion: brlab-nopw may sudo without a password, brlab-pw with
# the one in $LAB/become-password (made here, 0600), brlab-op has no sudo and
# an ~/.ssh of its own (the lab key, known_hosts, and a config with a Host
# alias for each host behind a bastion, ProxyJump through it).
users_up() {
    local u h v want=0 home
    for h in "${HOSTS[@]}"; do
        if has_shape "$h" sudo || [[ -n $(via_of "$h") ]]; then want=1; fi
    done
    ((want)) || return 0
    command -v sudo >/dev/null 2>&1 || die "sudo is not installed (a sudo host needs it; .ci/run installs it)"
    for u in "${LAB_USERS[@]}"; do
        # Password `*`: none to log in with, yet not locked (`!`), which
        # sshd refuses even with a key.
        id "$u" >/dev/null 2>&1 || useradd -m -s /bin/sh -p '*' -c "benchrig lab user" "$u"
    done
    [[ -s $LAB/become-password ]] || (umask 077; head -c 18 /dev/urandom | base64 >"$LAB/become-password")
    printf 'brlab-pw:%s\n' "$(cat "$LAB/become-password")" | chpasswd
    write_if_changed "$SUDOERS" 440 <<EOF
# Generated by ci/lab.sh for the benchrig lab's sudo hosts; removed by down.
brlab-nopw ALL=(ALL:ALL) NOPASSWD: ALL
brlab-pw ALL=(ALL:ALL) ALL
EOF
    visudo -cq -f "$SUDOERS" || die "$SUDOERS does not parse"
    # sshd reads a user's keys as that user: $LAB (0700) is not theirs to read.
    for u in "${LAB_USERS[@]}"; do
        home=$(getent passwd "$u" | cut -d: -f6)
        install -d -m 700 -o "$u" -g "$u" "$home/.ssh"
        install -m 600 -o "$u" -g "$u" "$LAB/id_ed25519.pub" "$home/.ssh/authorized_keys"
    done
    home=$(getent passwd brlab-op | cut -d: -f6)
    install -m 600 -o brlab-op -g brlab-op "$LAB/id_ed25519" "$home/.ssh/id_ed25519"
    install -m 644 -o brlab-op -g brlab-op "$LAB/known_hosts" "$home/.ssh/known_hosts"
    for h in "${HOSTS[@]}"; do
        v=$(via_of "$h")
        if [[ -n $v ]]; then
            printf 'Host brlab-%s\n    HostName %s\n    User root\n    ProxyJump root@%s\n' "$h" "${H_IP[$h]}" "${H_IP[$v]}"
        fi
    done | install -m 600 -o brlab-op -g brlab-op /dev/stdin "$home/.ssh/config"
}

users_down() {
    local u rc=0
    for u in "${LAB_USERS[@]}"; do
        id "$u" >/dev/null 2>&1 || continue
        pkill -KILL -u "$u" 2>/dev/null || true
        userdel -r "$u" 2>/dev/null || userdel -f -r "$u" 2>/dev/null || ! id "$u" >/dev/null 2>&1 || rc=1
    done
    rm -f "$SUDOERS"
    # Where the agent went on a host whose home is noexec (deploy's
    # fallback, /var/tmp/benchrig-<uid>): /var/tmp is this machine's.
    for h in "${HOSTS[@]}"; do
        if has_shape "$h" noexec; then rm -rf --one-file-system /var/tmp/benchrig-0; fi
    done
    return "$rc"
}

# ------------------------------------------------------------------ busybox rootfs

# A busybox host's whole userland, made once per up at hosts/<h>/rootfs:
# busybox's applets, sshd and mke2fs (as mkfs.ext4) with the libraries ldd
# names, passwd and group files with root's shell /bin/sh. Nothing else of
# this machine's /usr is there: no bash, coreutils, python, xfs or btrfs tools.
rootfs_up() {   # rootfs_up HOST
    local h=$1 r a lib
    r=$(hdir "$h")/rootfs
    # The last file written says it is whole: a build cut short is redone.
    [[ -e $r/etc/group ]] && return 0
    if ! busybox --list-full >/dev/null 2>&1; then
        die "busybox is not installed (host $h needs busybox-static; .ci/run installs it)"
    fi
    rm -rf --one-file-system "$r"
    mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc/ssh,proc,sys,dev,tmp,root,run/sshd,var/tmp,var/lib}
    chmod 1777 "$r/tmp" "$r/var/tmp"
    chmod 700 "$r/root"
    cp "$(command -v busybox)" "$r/bin/busybox"
    for a in $(busybox --list-full); do
        [[ -e $r/$a || -L $r/$a ]] || ln -s /bin/busybox "$r/$a"
    done
    cp /sbin/mke2fs "$r/sbin/mkfs.ext4"
    cp /etc/mke2fs.conf "$r/etc/"
    cp "$SSHD" "$r$SSHD"
    for lib in $(ldd "$SSHD" /sbin/mke2fs | awk '$2 == "=>" { print $3 } $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u); do
        mkdir -p "$r$(dirname "$lib")"
        cp -L "$lib" "$r$lib"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nsshd:x:100:65534::/run/sshd:/bin/false\n' >"$r/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
}

# ------------------------------------------------------------------ disks

declare -A DISK_LOOP   # "<host>-<disk>" -> /dev/loopN (filled by disks_up)

disks_up() {
    local h d img loop file
    DISKMODEL=""
    for h in "${HOSTS[@]}"; do
        has_model "$h" && [[ -n ${H_DISKS[$h]} && -z $DISKMODEL ]] && DISKMODEL=$(diskmodel_bin)
        for d in ${H_DISKS[$h]}; do
            img=$LAB/disks/$h-$d.img
            [[ -e $img ]] || truncate -s "${H_SIZE[$h]}" "$img"   # sparse
            has_model "$h" && model_up "$h" "$img"
            file=$(disk_file "$h" "$img")
            loop=$(image_loop "$file")
            if [[ -z $loop ]]; then
                # Direct I/O keeps the host page cache out of the numbers; not
                # every backing filesystem supports it, so fall back.
                loop=$(losetup --find --show --direct-io=on "$file" 2>/dev/null) \
                    || loop=$(losetup --find --show "$file")
            fi
            DISK_LOOP[$h-$d]=$loop
            # Re-point on every up: the loop number may differ after down/up.
            ln -sfn "$loop" "$LAB/dev/$h-$d"
            # Best effort: lets tools see HDD-like vs SSD-like disks.
            echo "${H_ROT[$h]}" >"/sys/block/${loop#/dev/}/queue/rotational" 2>/dev/null || true
            # Requests the size a real disk gets (loop devices default to
            # 2.5 MB readahead and 1.25 MB requests): with 128 KB, a file
            # costs one request per 128 KB and the IOPS limit acts like seeks;
            # otherwise a few MB pass in one request, inside blk-throttle's
            # first-slice allowance, at memory speed.
            # (max_sectors_kb first: setting it resets read_ahead_kb.)
            echo 128 >"/sys/block/${loop#/dev/}/queue/max_sectors_kb" 2>/dev/null || true
            echo 128 >"/sys/block/${loop#/dev/}/queue/read_ahead_kb" 2>/dev/null || true
        done
    done
}

# ------------------------------------------------------------------ cgroups

cg_dir() { echo "$CG_ROOT/$1/$CG_NAME/$2"; }   # cg_dir CONTROLLER HOST

cgroups_up() {
    local h c d dev disk file limit want line
    for c in "${CG_CONTROLLERS[@]}"; do
        [[ -d $CG_ROOT/$c ]] || die "cgroup v1 controller not mounted at $CG_ROOT/$c"
    done
    for h in "${HOSTS[@]}"; do
        for c in "${CG_CONTROLLERS[@]}"; do mkdir -p "$(cg_dir "$c" "$h")"; done

        # CPU / memory: only where the table asks; '-' resets to unlimited in
        # case the table was edited while the lab was up.
        d=$(cg_dir cpu "$h")
        if [[ ${H_CPU[$h]} != - ]]; then
            echo "$CPU_PERIOD" >"$d/cpu.cfs_period_us"
            echo "${H_CPU[$h]}" >"$d/cpu.cfs_quota_us"
        else
            echo -1 >"$d/cpu.cfs_quota_us"
        fi
        d=$(cg_dir memory "$h")
        if [[ ${H_MEM[$h]} != - ]]; then
            echo "${H_MEM[$h]}" >"$d/memory.limit_in_bytes"
        else
            echo -1 >"$d/memory.limit_in_bytes"
        fi

        # blkio throttles per disk, keyed by the loop device's MAJ:MIN; none
        # on a model disk (the model times it; a rule left from a table
        # without the model is dropped below).
        d=$(cg_dir blkio "$h")
        want=()
        has_model "$h" || for disk in ${H_DISKS[$h]}; do
            want+=("$(cat "/sys/block/${DISK_LOOP[$h-$disk]#/dev/}/dev")")
        done
        for file in read_bps_device:${H_RBPS[$h]} write_bps_device:${H_WBPS[$h]} \
                    read_iops_device:${H_RIOPS[$h]} write_iops_device:${H_WIOPS[$h]}; do
            limit=${file#*:}; file=$d/blkio.throttle.${file%%:*}
            # Drop rules for devices that are no longer ours (loop renumbered).
            while read -r dev _; do
                [[ -z $dev ]] && continue
                [[ " ${want[*]} " == *" $dev "* ]] || echo "$dev 0" >"$file"
            done <"$file"
            for dev in "${want[@]}"; do
                line="$dev $limit"
                grep -qx "$line" "$file" || echo "$line" >"$file"
            done
        done
    done
}

# ------------------------------------------------------------------ sshd

# The lab's own sshd limits, roomier than OpenSSH's; a host with a shape
# keeps OpenSSH's defaults (MaxSessions 10, MaxStartups 10:30:100), as a
# host whose admin never touched sshd_config does.
session_limits() {   # session_limits HOST
    [[ -n ${H_SHAPE[$1]} ]] && return 0
    printf 'MaxSessions 32\nMaxStartups 64:30:128\n'
}

write_host_files() {   # sshd_config and start.sh for HOST
    local h=$1 d c arch_cmd=""
    d=$(hdir "$h")
    [[ ${H_ARCH[$h]} == native ]] || arch_cmd="setarch ${H_ARCH[$h]} "

    write_if_changed "$d/sshd_config" 644 <<EOF
# Generated by ci/lab.sh for lab host $h.
ListenAddress ${H_IP[$h]}
Port 22
HostKey $d/ssh_host_ed25519_key
PidFile $d/sshd.pid
AuthorizedKeysFile $LAB/authorized_keys .ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
$(session_limits "$h")
PrintMotd no
Subsystem sftp internal-sftp
ClientAliveInterval 0
EOF

    {
        cat <<EOF
#!/bin/bash
# Generated by ci/lab.sh: entry point of lab host $h. Runs under
# \`ip netns exec $(ns "$h")\`, i.e. already in the host's netns and in a
# fresh mount namespace of its own, so the mounts below stay inside the host.
set -eu

# ip netns exec remounted /sys for the netns, which hides the cgroup
# hierarchies. Mount the v1 controllers again (same options => the same
# hierarchies as in the root namespace), join this host's cgroups, and keep
# them visible so sessions can read their own limits.
mount -t tmpfs -o mode=755 cgroup $CG_ROOT
EOF
        for c in "${CG_CONTROLLERS[@]}"; do
            echo "mkdir -p $CG_ROOT/$c && mount -t cgroup -o $(cg_mount_opts "$c") cgroup $CG_ROOT/$c"
            echo "echo \$\$ >$(cg_dir "$c" "$h")/cgroup.procs"
        done
        cat <<EOF

# The host's own /tmp and /root.
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount --bind $d/home /root
EOF
        if has_shape "$h" noexec; then
            cat <<EOF

# A home that cannot run programs, as where /home is mounted noexec.
mount -o remount,bind,noexec /root
EOF
        fi
        lacks_lines "$h"
        if has_shape "$h" busybox; then
            chroot_lines "$h"
        else
            cat <<EOF

exec ${arch_cmd}$SSHD -D -e -f $d/sshd_config
EOF
        fi
    } | write_if_changed "$d/start.sh" 755
}

# start.sh's lines for a busybox host: its rootfs (rootfs_up) gets this
# host's /proc, /sys (with the cgroups mounted above), /dev, /tmp and /root,
# and the lab dir at its own path (sshd_config, host key and the disks'
# symlinks are there, so the inventory's paths hold inside too); sshd runs
# chrooted, so a session sees only the rootfs.
chroot_lines() {   # chroot_lines HOST
    local h=$1 d r
    d=$(hdir "$h") r=$(hdir "$h")/rootfs
    cat <<EOF

# The host's whole userland: busybox, sshd and mkfs.ext4 (ci/lab.sh rootfs_up).
mount -t proc proc $r/proc
mount --rbind /sys $r/sys
mount --rbind /dev $r/dev
mount -t tmpfs -o mode=1777 tmpfs $r/tmp
mount --bind $d/home $r/root
mkdir -p $r$LAB && mount --bind $LAB $r$LAB
exec chroot $r $SSHD -D -e -f $d/sshd_config
EOF
}

# start.sh's lines that take away the tools HOST lacks (the table's last
# column): where each is installed (every sbin and bin directory a root
# shell searches, each real file once), an empty non-executable file over
# it, bound in the host's mount namespace only.
lacks_lines() {   # lacks_lines HOST
    local h=$1 d tool dir real seen=" "
    [[ -n ${H_LACKS[$h]} ]] || return 0
    d=$(hdir "$h")
    echo ""
    echo "# Tools this host lacks: ${H_LACKS[$h]}."
    echo ": >$d/not-installed && chmod 644 $d/not-installed"
    for tool in ${H_LACKS[$h]}; do
        for dir in /usr/local/sbin /usr/sbin /sbin /usr/local/bin /usr/bin /bin; do
            [[ -e $dir/$tool ]] || continue
            real=$(readlink -f "$dir/$tool")
            [[ $seen == *" $real "* ]] && continue
            seen+="$real "
            echo "mount --bind $d/not-installed $real"
        done
    done
}

# Mount options selecting the same v1 hierarchy as $CG_ROOT/<controller>
# (e.g. "cpu" here, "cpu,cpuacct" where they are co-mounted).
cg_mount_opts() {
    findmnt -n -o FS-OPTIONS -T "$(readlink -f "$CG_ROOT/$1")" \
        | tr ',' '\n' | grep -vxE 'rw|ro' | paste -sd,
}

declare -A SSHD_LAUNCHED   # host -> pid of the sshd launch_sshd started

launch_sshd() {
    local h=$1 d
    d=$(hdir "$h")
    mkdir -p /run/sshd   # privsep dir; /run is shared with the hosts
    rm -f "$d/sshd.pid"
    # setsid: own session, so nothing of the caller's terminal reaches it.
    # All output goes to the log so the caller's stdout is not held open.
    ip netns exec "$(ns "$h")" setsid "$d/start.sh" >>"$d/sshd.log" 2>&1 </dev/null &
    SSHD_LAUNCHED[$h]=$!   # ip -> setsid -> start.sh -> sshd all exec, so this is sshd's pid
}

await_sshd() {
    local h=$1 d pid=${SSHD_LAUNCHED[$1]} deadline
    d=$(hdir "$h")
    deadline=$((SECONDS + SSH_WAIT_SECONDS))
    until ssh_ok "$h"; do
        if ((SECONDS >= deadline)); then
            tail -n 20 "$d/sshd.log" >&2 || true
            die "sshd of $h not reachable after ${SSH_WAIT_SECONDS}s (log: $d/sshd.log)"
        fi
        if [[ ! -e /proc/$pid ]] || [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]]; then
            tail -n 20 "$d/sshd.log" >&2 || true
            die "sshd of $h exited during start (log: $d/sshd.log)"
        fi
        sleep 0.2
    done
    # sshd writes its PidFile itself; trust it over $! in case setsid forked.
    sshd_pid "$h" >/dev/null || echo "$pid" >"$d/sshd.pid"
    log "started sshd for $h (pid $(cat "$d/sshd.pid"))"
}

# Start every sshd that is not running, then wait for them all (a hundred
# hosts start in seconds, not one after another).
sshd_up() {
    local h started=()
    for h in "${HOSTS[@]}"; do
        write_host_files "$h"
        sshd_pid "$h" >/dev/null || { launch_sshd "$h"; started+=("$h"); }
    done
    for h in "${started[@]}"; do
        await_sshd "$h"
    done
}

# ------------------------------------------------------------------ processes

# Every process belonging to HOST: in its netns, or in any of its cgroups
# (including sub-cgroups someone may have created).
host_pids() {
    local h=$1 c
    if [[ -e /run/netns/$(ns "$h") ]]; then
        ip netns pids "$(ns "$h")" 2>/dev/null || true
    fi
    for c in "${CG_CONTROLLERS[@]}"; do
        [[ -d $(cg_dir "$c" "$h") ]] || continue
        find "$(cg_dir "$c" "$h")" -name cgroup.procs -exec cat {} + 2>/dev/null || true
    done
}

# kill -9 until nothing is left: sshd may fork new sessions while we kill.
# When the last process is gone the host's mount namespace goes with it.
# Appends the pids it killed to KILLED.
kill_host() { kill_all "$1" host_pids "$1"; }

# Hosts known from the table plus any brlab-* netns or cgroup left over
# (e.g. after a host was removed from the table), so `down` gets them all.
all_known_hosts() {
    {
        printf '%s\n' "${HOSTS[@]}"
        ip netns list 2>/dev/null | awk -v p="$NS_PREFIX" 'index($1, p) == 1 { print substr($1, length(p) + 1) }'
        for c in "${CG_CONTROLLERS[@]}"; do
            [[ -d $CG_ROOT/$c/$CG_NAME ]] || continue
            find "$CG_ROOT/$c/$CG_NAME" -mindepth 1 -maxdepth 1 -type d -printf '%f\n'
        done
    } | sort -u
}

# ------------------------------------------------------------------ commands

cmd_up() {
    local h
    ensure_tools
    net_up
    keys_up
    disks_up
    cgroups_up
    for h in "${HOSTS[@]}"; do
        if has_shape "$h" busybox; then rootfs_up "$h"; fi
    done
    sshd_up
    users_up
    check_mesh || die "lab hosts cannot reach each other"
    cmd_status
}

cmd_status() {
    local h rc=0 pid nsok sshok d loop img disks
    printf '%-7s %-11s %-6s %-6s %-8s %-4s %s\n' HOST IP ARCH NETNS SSHD SSH DISKS
    for h in "${HOSTS[@]}"; do
        nsok=no; ns_exists "$h" && nsok=yes
        pid=$(sshd_pid "$h" 2>/dev/null) || pid=-
        sshok=no; [[ $pid != - ]] && ssh_ok "$h" && sshok=ok
        [[ $nsok == yes && $pid != - && $sshok == ok ]] || rc=1
        disks=""
        for d in ${H_DISKS[$h]}; do
            img=$LAB/disks/$h-$d.img
            loop=""
            [[ -e $img ]] && loop=$(image_loop "$(disk_file "$h" "$img")")
            # The symlink must point at the loop the image is really attached to.
            if has_model "$h" && ! model_pid "$img" >/dev/null; then
                disks+="$d=NO-MODEL "; rc=1
            elif [[ -n $loop && $(readlink "$LAB/dev/$h-$d" 2>/dev/null) == "$loop" ]]; then
                disks+="$d=$loop "
            else
                disks+="$d=MISSING "; rc=1
            fi
        done
        printf '%-7s %-11s %-6s %-6s %-8s %-4s %s\n' "$h" "${H_IP[$h]}" "${H_ARCH[$h]}" \
            "$nsok" "$pid" "$sshok" "${disks% }"
    done
    return "$rc"
}

cmd_throttle() {
    local h=$1 rbps=$2 wbps=$3 d disk dev
    [[ $rbps =~ ^[0-9]+$ && $wbps =~ ^[0-9]+$ ]] || die "throttle: RBPS and WBPS are bytes per second"
    d=$(cg_dir blkio "$h")
    [[ -d $d ]] || die "host $h has no blkio cgroup: is the lab up?"
    has_model "$h" && die "throttle: $h's disks are model disks (${H_MODEL[$h]}): their timing is the model's, not a throttle's"
    for disk in ${H_DISKS[$h]}; do
        dev=$(cat "/sys/block/$(readlink "$LAB/dev/$h-$disk" | sed 's|^/dev/||')/dev")
        echo "$dev $rbps" >"$d/blkio.throttle.read_bps_device"
        echo "$dev $wbps" >"$d/blkio.throttle.write_bps_device"
    done
    echo "lab: $h's disks throttled to $rbps B/s read, $wbps B/s write until the next 'up'"
}

# An agent's cold step freezes and thaws the filesystems it mounted
# (node-agent/src/cache.rs); one killed in between leaves its filesystem
# frozen, and once the host's mount namespace is gone with its processes
# that filesystem is mounted nowhere yet alive in the kernel (a freeze
# holds it), keeping its loop device busy: every later mkfs on it fails
# with EBUSY (refused by rule in_use). A real host's crash is a reboot,
# which frees it. So after killing a host, each lab disk (of HOSTS, or all)
# that is busy while mounted nowhere is mounted again, which finds the
# kernel's filesystem, thawed, and unmounted, which lets it go.
release_orphans() {
    local dev img type dir h keep
    while read -r dev img; do
        [[ -n $dev ]] || continue
        if (($#)); then
            keep=0
            for h in "$@"; do [[ $img == "$LAB/disks/$h-"* ]] && keep=1; done
            ((keep)) || continue
        fi
        if mounted_anywhere "$dev" || ! busy "$dev"; then continue; fi
        type=$(blkid -p -o value -s TYPE "$dev" 2>/dev/null) || continue
        [[ -n $type && $type != swap ]] || continue
        dir=$(mktemp -d /run/benchrig-lab-thaw.XXXXXX)
        if mount -t "$type" "$dev" "$dir" 2>/dev/null || mount -t "$type" -o ro "$dev" "$dir" 2>/dev/null; then
            fsfreeze -u "$dir" 2>/dev/null && log "thawed the $type a killed agent left frozen on $dev (${img##*/})"
            umount "$dir" 2>/dev/null || umount -l "$dir"
        fi
        rmdir "$dir"
    done < <(lab_loops)
}

# mounted_anywhere DEV: DEV is mounted in some live mount namespace (by
# its device number, or as the source: btrfs shows an anonymous one).
mounted_anywhere() {
    local mm
    mm=$(cat "/sys/class/block/${1#/dev/}/dev") || return 1
    cat /proc/[0-9]*/mountinfo 2>/dev/null | awk -v mm="$mm" -v dev="$1" '
        $3 == mm { f = 1 }
        { for (i = 7; i < NF - 1; i++) if ($i == "-" && $(i + 2) == dev) f = 1 }
        END { exit !f }'
}

# busy DEV: an exclusive open of DEV fails with EBUSY (a filesystem, swap
# or another holder has it).
busy() {
    python3 - "$1" <<'PY'
import errno, os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))
except OSError as e:
    sys.exit(0 if e.errno == errno.EBUSY else 1)
sys.exit(1)
PY
}

cmd_crash() {
    local h=$1
    ns_exists "$h" || die "host $h is not up (no netns $(ns "$h"))"
    kill_host "$h" || die "could not kill everything in $h"
    wait_reaped
    log "crashed $h: killed ${#KILLED[@]} process(es)"
    release_orphans "$h"
}

cmd_boot() {
    local h=$1
    ns_exists "$h" || die "host $h is not up (no netns $(ns "$h")): run up"
    write_host_files "$h"
    if ! sshd_pid "$h" >/dev/null; then
        launch_sshd "$h"
        await_sshd "$h"
    fi
}

cmd_ssh() {
    local h=$1
    shift
    ssh_opts
    reach "$h" ssh "${SSH_OPTS[@]}" "root@${H_IP[$h]}" "$@"
}

cmd_down() {
    local h c dev img rc=0

    # 0. The emulated guests (ci/vm.sh) and the aarch64 host (ci/arm.sh) sit
    #    on the lab's bridge and use its key: they go first, so no tap or veth
    #    is left on a bridge about to vanish.
    "$(dirname "${BASH_SOURCE[0]}")/arm.sh" down || rc=1
    "$(dirname "${BASH_SOURCE[0]}")/vm.sh" down || rc=1

    # 1. Processes first: this also drops the hosts' mount namespaces and
    #    with them every mount made inside a host.
    for h in $(all_known_hosts); do
        kill_host "$h" || rc=1
    done
    wait_reaped

    # 2. Lab loop devices used as swap or mounted in this namespace.
    while read -r dev img; do
        [[ -n $dev ]] || continue
        if awk -v d="$dev" '$1 == d { f = 1 } END { exit !f }' /proc/swaps; then
            swapoff "$dev" || rc=1
        fi
        if findmnt -n -S "$dev" >/dev/null 2>&1; then
            umount -A "$dev" 2>/dev/null || umount -A -l "$dev" || rc=1
        fi
    done < <(lab_loops)

    # 2b. Filesystems the hosts' agents left frozen, mounted nowhere now.
    release_orphans

    # 3. Detach loops. If something still holds one, losetup -d only marks it
    #    autoclear, so wait for it to really go away.
    while read -r dev img; do
        [[ -n $dev ]] && { losetup -d "$dev" 2>/dev/null || true; }
    done < <(lab_loops)
    for ((c = 0; c < 50; c++)); do
        [[ -z $(lab_loops) ]] && break
        sleep 0.1
    done
    # 3b. The model disks' daemons, now that no loop device holds their file.
    models_down || rc=1
    # Anything else mounted below the lab dir (deepest first), so rm -rf is
    # safe. After the loops: a model disk's FUSE mount unmounted lazily
    # first would hide its loop device from lab_loops (its backing file
    # then reads "/disk").
    while read -r c; do
        [[ -n $c ]] && { umount "$c" 2>/dev/null || umount -l "$c" || rc=1; }
    done < <(findmnt -rn -o TARGET | awk -v p="$LAB/" 'index($0 "/", p) == 1' | sort -r)

    # 4. cgroups (children before parents).
    for c in "${CG_CONTROLLERS[@]}"; do
        [[ -d $CG_ROOT/$c/$CG_NAME ]] || continue
        find "$CG_ROOT/$c/$CG_NAME" -depth -type d -exec rmdir {} + 2>/dev/null \
            || { sleep 0.5; find "$CG_ROOT/$c/$CG_NAME" -depth -type d -exec rmdir {} + || rc=1; }
    done

    # 5. Network: deleting a netns destroys its veth end and thereby the pair.
    for h in $(all_known_hosts); do
        [[ -e /run/netns/$(ns "$h") ]] && { ip netns del "$(ns "$h")" || rc=1; }
        # The pair may still be going away after the netns went: gone counts.
        if ip link show "$VETH_PREFIX$h" >/dev/null 2>&1; then
            ip link del "$VETH_PREFIX$h" 2>/dev/null || ! ip link show "$VETH_PREFIX$h" >/dev/null 2>&1 || rc=1
        fi
    done
    if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link del "$BRIDGE" || rc=1; fi
    bridge_filter_down

    # 5b. The lab users and their sudoers file.
    users_down || rc=1

    # 6. The lab dir (keys, images, logs). --one-file-system: never follow a
    #    mount we failed to remove.
    rm -rf --one-file-system -- "$LAB" || rc=1

    # Report anything that survived (ci/lib.sh).
    left_behind "the lab" lab_leftovers || rc=1
    ((rc == 0)) && log "lab is down"
    return "$rc"
}

main() {
    load_hosts
    check_lab_dir
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    case $cmd in
        up|down|status) [[ $# -eq 0 ]] || { usage >&2; exit 2; } ;;&
        up|down|status|crash|boot|ssh) [[ $(id -u) -eq 0 ]] || die "must run as root" ;;&
        up) cmd_up ;;
        down) cmd_down ;;
        status) cmd_status ;;
        crash) need_host "${1:-}"; [[ $# -eq 1 ]] || { usage >&2; exit 2; }; cmd_crash "$1" ;;
        boot) need_host "${1:-}"; [[ $# -eq 1 ]] || { usage >&2; exit 2; }; cmd_boot "$1" ;;
        ssh) need_host "${1:-}"; cmd_ssh "$@" ;;
        throttle) need_host "${1:-}"; [[ $# -eq 3 ]] || { usage >&2; exit 2; }; cmd_throttle "$@" ;;
        -h|--help|help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
