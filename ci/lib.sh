# shellcheck shell=bash
# ci/lib.sh — what the lab's scripts (lab.sh, arm.sh, vm.sh) and test.sh
# share; sourced, not run. The sourcing script defines log() and die().

# The agent's tests that need root (loop devices, mounts, dropped caches, a
# user switch), as cargo test arguments: test.sh's stage and stress.sh's.
# shellcheck disable=SC2034 # used by the scripts that source this
ROOT_TESTS=(--test codec_exec --test fio_workload --test monitor_oracle --test monitors --test tree_workloads
            --test tune_kmsg --test calibration --test cpu_floor)

# Every agent build benchrig ships (ci/build-agents.sh builds them; the
# tarball and the .deb carry them; ci/install-check.sh checks them). The
# first three have rustup's std; the others have std built by cargo.
# shellcheck disable=SC2034 # used by the scripts that source this
AGENTS_SHIPPED_STD=(x86_64-unknown-linux-musl i686-unknown-linux-musl aarch64-unknown-linux-musl)
# shellcheck disable=SC2034
AGENTS_BUILT_STD=(i586-unknown-linux-musl armv7-unknown-linux-musleabihf)
# shellcheck disable=SC2034
AGENT_TRIPLES=("${AGENTS_SHIPPED_STD[@]}" "${AGENTS_BUILT_STD[@]}")

# kill_all WHAT CMD [ARGS]: kill -9 every pid CMD prints (never this shell)
# until it prints none, appending them to KILLED; 1 if some survive 10 s.
# When the last process of a lab host is gone, its mount namespace goes too.
KILLED=()
kill_all() {
    local what=$1 pids try
    shift
    for ((try = 0; try < 100; try++)); do
        mapfile -t pids < <("$@" | sort -un | grep -vx "$$")
        ((${#pids[@]})) || return 0
        KILLED+=("${pids[@]}")
        kill -9 "${pids[@]}" 2>/dev/null || true
        sleep 0.1
    done
    log "processes of $what survived kill -9: ${pids[*]}"
    return 1
}

# The killed are zombies until their parent (init here, which reaps lazily,
# ~1 s) collects them. They hold no namespace, mount or loop device any more,
# but wait up to 5 s so that `pgrep sshd` right after us is clean.
wait_reaped() {
    local try pid alive
    for ((try = 0; try < 50; try++)); do
        alive=0
        for pid in "${KILLED[@]}"; do [[ -e /proc/$pid ]] && { alive=1; break; }; done
        ((alive)) || return 0
        sleep 0.1
    done
}

# cached_image NOUN: print the directory of the image this recipe makes,
# under $CACHE/images/<key>, building it first if it is not complete there.
# When the mirror cannot be asked, the newest complete image, with a
# warning. Only the current image is kept: old ones are hundreds of MB.
# The sourcing script defines: image_update (refresh the mirror's package
# lists; fails when unreachable), image_key (a key of package versions and
# the recipe), image_prepare TMP (tools; what build_cleanup needs to know),
# build_rootfs ROOTFS OUTDIR (or the function BUILD_ROOTFS names), and
# build_cleanup (undo the build's mounts).
cached_image() {
    local noun=$1 key dir tmp t0
    mkdir -p "$CACHE/images"
    if image_update >/dev/null 2>&1 && key=$(image_key) && [[ -n $key ]]; then
        dir=$CACHE/images/$key
    else
        # shellcheck disable=SC2012 # newest by mtime (ls -t); the names are our hex keys
        dir=$(ls -td "$CACHE"/images/*/ 2>/dev/null | head -n1)
        [[ -n $dir && -f $dir/complete ]] || die "cannot reach $MIRROR and no cached $noun in $CACHE/images"
        log "warning: cannot reach $MIRROR; using cached $noun $dir"
        echo "${dir%/}"; return 0
    fi
    if [[ -f $dir/complete ]]; then
        log "$noun $key is cached ($dir)"
        echo "$dir"; return 0
    fi
    tmp=$CACHE/build.$$
    image_prepare "$tmp"
    t0=$SECONDS
    rm -rf "$dir" "$tmp"
    mkdir -p "$tmp/rootfs" "$tmp/out"
    # shellcheck disable=SC2064 # $tmp now: it is this function's local, gone when the trap runs at exit
    trap "build_cleanup; rm -rf --one-file-system '$tmp'" EXIT
    "${BUILD_ROOTFS:-build_rootfs}" "$tmp/rootfs" "$tmp/out"
    build_cleanup
    rm -rf --one-file-system "$tmp/rootfs"
    echo "$((SECONDS - t0))" >"$tmp/out/build-seconds"
    mv "$tmp/out" "$dir"
    date -u +%FT%TZ >"$dir/complete"
    rm -rf "$tmp"; trap - EXIT
    find "$CACHE/images" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
    log "built $noun $key in $((SECONDS - t0))s ($dir, $(du -sh "$dir" | cut -f1))"
    echo "$dir"
}

# ------------------------------------------------------------------ leftovers
# What a teardown left behind. lab_leftovers, arm_leftovers and vm_leftovers
# print one line per thing of that part still on this machine ("netns
# brlab-old", "loop /dev/loop3 /var/tmp/benchrig-lab/disks/old-hdd0.img"),
# nothing when all is gone, and always succeed. Each script's `down` fails
# when its part's list is not empty (left_behind), and ci/test.sh runs them
# again after each `down`. The names are spelled out here as the scripts make
# them (the lab dir honours BENCHRIG_LAB_DIR, as the scripts do) and matched
# broadly, so that a slip in a script's own bookkeeping cannot hide what it
# left.

# left_behind WHAT LIST [ARGS]: run the leftovers function LIST; if it prints
# anything, log that as what WHAT left behind and return 1.
left_behind() {
    local what=$1 left
    shift
    left=$("$@")
    [[ -z $left ]] && return 0
    log "$what left behind:"
    printf '%s\n' "$left" >&2
    return 1
}

# netns_leftovers PREFIX: every netns whose name starts with PREFIX, and what
# still runs in it.
netns_leftovers() {
    local ns
    for ns in $(ip netns list 2>/dev/null | awk -v p="$1" 'index($1, p) == 1 { print $1 }'); do
        echo "netns $ns"
        { ip netns pids "$ns" 2>/dev/null || true; } | sed "s/^/process in netns $ns: /"
    done
}

# link_leftovers TEXT: network interfaces whose name holds TEXT.
link_leftovers() {
    { ip -o link show 2>/dev/null || true; } | awk -F': ' -v t="$1" 'index($2, t) { sub(/@.*/, "", $2); print "link " $2 }'
}

# loop_leftovers TEXT: loop devices whose backing file's name holds TEXT.
loop_leftovers() {
    { losetup -l -n -O NAME,BACK-FILE 2>/dev/null || true; } | awk -v t="$1" 'index($0, t) { print "loop " $0 }'
}

# bind_leftovers TEXT: mounts whose source inside its filesystem holds TEXT
# (mountinfo's 4th field): a lab file bound over a tool (ci/lab.sh's `lacks`)
# shows its mount point as /usr/bin/fio, so /proc/mounts alone would miss it.
bind_leftovers() {
    awk -v t="$1" 'index($4, t) { print "bind " $4 " on " $5 }' /proc/self/mountinfo
}

# mount_leftovers TEXT: the lines of /proc/mounts that hold TEXT.
mount_leftovers() {
    awk -v t="$1" 'index($0, t) { print "mount " $0 }' /proc/mounts
}

# process_leftovers PATTERN: processes whose command line matches PATTERN
# (pgrep -f; never this shell, whose command line is its script's).
process_leftovers() {
    { pgrep -af "$1" || true; } | sed 's/^/process /'
}

# path_leftovers PATH...: those of PATH that exist.
path_leftovers() {
    local p
    for p in "$@"; do
        if [[ -e $p ]]; then echo "path $p"; fi
    done
}

# ci/lab.sh: the hosts' netns (arm1's brlab-arm1 too) and what runs in them,
# the bridge, the disks' loop devices, mounts (binds of lab files over the
# tools a host lacks too, the model disks' FUSE mounts), sshds, the model
# disks' daemons, cgroups, the lab dir.
lab_leftovers() {
    local lab=${BENCHRIG_LAB_DIR:-/var/tmp/benchrig-lab}
    lab=${lab%/}
    netns_leftovers brlab-
    if ip link show brlab0 >/dev/null 2>&1; then echo "link brlab0"; fi
    loop_leftovers benchrig-lab
    # A loop device on a model disk's file whose FUSE mount went first: the
    # kernel names its backing file from the detached mount's root.
    { losetup -l -n -O NAME,BACK-FILE 2>/dev/null || true; } | awk '$2 == "/disk" { print "loop " $0 " (on a detached model disk)" }'
    mount_leftovers benchrig-lab
    bind_leftovers benchrig-lab
    if [[ $lab != /var/tmp/benchrig-lab ]]; then
        loop_leftovers "$lab/"
        mount_leftovers "$lab/"
    fi
    process_leftovers 'sshd.*benchrig-lab'
    # The lab's users (ci/lab.sh LAB_USERS) and their sudo rules.
    getent passwd | awk -F: '$1 ~ /^brlab-/ { print "user " $1 }'
    path_leftovers /etc/sudoers.d/benchrig-lab
    process_leftovers 'benchrig-diskmodel.*benchrig-lab'
    path_leftovers /sys/fs/cgroup/*/benchrig-lab "$lab"
}

# The binfmt_misc entries ci/arm.sh may register, then the binfmt_misc mount
# it may make (entries exist only while it is mounted), one a line: give
# arm_leftovers what this printed before `ci/arm.sh up`.
ARM_BINFMT_ENTRIES=(/proc/sys/fs/binfmt_misc/qemu-aarch64 /proc/sys/fs/binfmt_misc/benchrig-aarch64)
arm_binfmt() {
    local e
    for e in "${ARM_BINFMT_ENTRIES[@]}"; do
        if [[ -e $e ]]; then echo "$e"; fi
    done
    grep -w binfmt_misc /proc/mounts || true
}

# ci/arm.sh: arm1's netns and veth, every process under qemu-aarch64 or
# rooted in its rootfs, its disk's loop device, mounts under its run dir or
# rootfs cache, the run dir, and the state dir (which holds what arm.sh
# registered or mounted in binfmt_misc and has not undone). Given
# BINFMT_BEFORE, what arm_binfmt printed before `up`: also a binfmt entry
# that was not there then, and the binfmt_misc mount if none was.
arm_leftovers() {   # arm_leftovers [BINFMT_BEFORE]
    local p e
    netns_leftovers brlab-arm1
    link_leftovers vbr-arm1
    loop_leftovers benchrig-arm
    mount_leftovers benchrig-arm
    process_leftovers qemu-aarch64
    for p in /proc/[0-9]*; do
        if [[ $(readlink "$p/root" 2>/dev/null) == /var/tmp/benchrig-arm/* ]]; then
            echo "process ${p#/proc/} rooted in the rootfs"
        fi
    done
    path_leftovers /var/tmp/benchrig-arm
    if [[ -e /run/benchrig-arm ]]; then
        echo "path /run/benchrig-arm ($(find /run/benchrig-arm -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | paste -sd' '))"
    fi
    (($#)) || return 0
    for e in "${ARM_BINFMT_ENTRIES[@]}"; do
        if [[ -e $e ]] && ! grep -qxF -- "$e" <<<"$1"; then echo "binfmt $e"; fi
    done
    if ! grep -qw binfmt_misc <<<"$1"; then
        { grep -w binfmt_misc /proc/mounts || true; } | sed 's/^/mount /'
    fi
}

# ci/vm.sh: the guests' qemus (named bvm-*, and any qemu-system at all), their
# taps, mounts under the run dir or image cache, the run dir, the cpu cgroup.
vm_leftovers() {
    local p comm
    for p in /proc/[0-9]*; do
        comm=$(cat "$p/comm" 2>/dev/null) || continue
        if [[ $comm == bvm-* ]]; then echo "process ${p#/proc/} $comm"; fi
    done
    process_leftovers qemu-system
    link_leftovers vmt-
    mount_leftovers benchrig-vm
    path_leftovers /var/tmp/benchrig-vm /sys/fs/cgroup/cpu/benchrig-vm
}
