#!/usr/bin/env bash
# The project's test command (README): unit tests, then the end-to-end tests
# on the simulated lab, which this script brings up and always tears down.
# Needs root (namespaces, loop devices, mounts, cgroups).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "ci/test.sh: run as root (the lab needs namespaces, loop devices and mounts)" >&2; exit 1; }

step() { printf '\n== %s\n' "$*"; }

# nothing_left WHAT LEFT OK: fail the run when a teardown left LEFT behind.
nothing_left() {
    if [[ -n $2 ]]; then
        echo "$1 left things behind:" >&2
        echo "$2" >&2
        exit 1
    fi
    echo "ok: $3"
}

step "agents for every architecture"
ci/build-agents.sh

step "a PostgreSQL server for the store's tests"
BENCHRIG_TEST_POSTGRES=$(ci/postgres.sh up)
export BENCHRIG_TEST_POSTGRES
trap 'ci/postgres.sh down || true' EXIT

step "unit tests (the store's on SQLite and on PostgreSQL)"
cargo test --locked --workspace

step "inventory parity with ansible-inventory (the oracle .ci/run installs)"
BENCHRIG_ANSIBLE_INVENTORY=${BENCHRIG_ANSIBLE_INVENTORY:-/var/tmp/benchrig-venv/bin/ansible-inventory} \
    cargo test --locked -p benchrig --test ansible_parity -- --ignored

step "simulated lab up (twice: up is idempotent)"
trap 'ci/lab.sh down || true; ci/postgres.sh down || true' EXIT
ci/lab.sh up
ci/lab.sh up >/dev/null
ci/lab.sh status >/dev/null

step "end-to-end tests on the lab"
cargo test --locked -p benchrig --test lab -- --ignored --test-threads=1

step "round-trip benchmark (figures, not a pass/fail test)"
ci/bench-roundtrip.sh

# What binfmt_misc looked like before ci/arm.sh (its down must restore exactly that).
arm_binfmt_mounted_before=$(grep -w binfmt_misc /proc/mounts || true)
arm_binfmt_before=$(ls /proc/sys/fs/binfmt_misc/qemu-aarch64 /proc/sys/fs/binfmt_misc/benchrig-aarch64 2>/dev/null || true)
step "the lab's aarch64 host: arm64 rootfs (cached), sshd under qemu-user (up twice: idempotent)"
# ci/arm.sh installs qemu-user and debootstrap itself, registers
# qemu-aarch64 with binfmt_misc (F flag) if nothing usable is registered, and
# starts arm1 in a netns on brlab0.
ci/arm.sh up
ci/arm.sh up >/dev/null

step "end-to-end tests on the aarch64 host"
cargo test --locked -p benchrig --test arm -- --ignored --test-threads=1

step "aarch64 host down, and nothing left behind"
ci/arm.sh down
ci/arm.sh down >/dev/null   # idempotent
left=$(
    ip netns list | grep '^brlab-arm1' || true
    ip -o link show | grep -o 'vbr-arm1' || true
    losetup -a | grep benchrig-arm || true
    grep benchrig-arm /proc/mounts || true
    pgrep -af qemu-aarch64 || true
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/root" 2>/dev/null) == /var/tmp/benchrig-arm/* ]] && echo "process ${p#/proc/} rooted in the rootfs"
    done
    ls -d /var/tmp/benchrig-arm /run/benchrig-arm 2>/dev/null || true
    # Ours: registered (or mounted) by ci/arm.sh, so gone again unless it was there before.
    if [[ -z $arm_binfmt_before ]]; then ls /proc/sys/fs/binfmt_misc/qemu-aarch64 /proc/sys/fs/binfmt_misc/benchrig-aarch64 2>/dev/null || true; fi
    if [[ -z $arm_binfmt_mounted_before ]]; then grep -w binfmt_misc /proc/mounts || true; fi
)
nothing_left "the aarch64 host" "$left" "no process, netns, loop device, mount or binfmt entry left"

step "the lab's emulated old machines: image, two kernel-6.1 guests (up twice: idempotent)"
# ci/vm.sh installs qemu and debootstrap itself (see its header), builds the
# guest image or takes it from its cache, and boots the guests on brlab0.
ci/vm.sh up
ci/vm.sh up >/dev/null

step "end-to-end tests on the guests"
cargo test --locked -p benchrig --test vm -- --ignored --test-threads=1

step "guests down, and nothing left behind"
ci/vm.sh down
ci/vm.sh down >/dev/null   # idempotent
left=$(
    for p in /proc/[0-9]*; do
        [[ $(cat "$p/comm" 2>/dev/null) == bvm-* ]] && echo "qemu ${p#/proc/}"
    done
    pgrep -af qemu-system || true
    ip -o link show | grep -o 'vmt-[^:@]*' || true
    grep benchrig-vm /proc/mounts || true
    ls -d /var/tmp/benchrig-vm /sys/fs/cgroup/cpu/benchrig-vm 2>/dev/null || true
)
nothing_left "the guests" "$left" "no qemu, tap or mount left"

step "lab down, and nothing left behind"
trap - EXIT
ci/postgres.sh down
ci/lab.sh down
ci/lab.sh down >/dev/null   # idempotent
left=$(
    ip netns list | grep '^brlab-' || true
    ip link show brlab0 2>/dev/null || true
    losetup -a | grep benchrig-lab || true
    grep benchrig-lab /proc/mounts || true
    pgrep -af 'sshd.*benchrig-lab' || true
    ls -d /sys/fs/cgroup/*/benchrig-lab 2>/dev/null || true
    ls -d /var/tmp/benchrig-lab 2>/dev/null || true
)
nothing_left "the lab" "$left" "nothing left behind"
