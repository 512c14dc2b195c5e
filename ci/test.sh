#!/usr/bin/env bash
# The project's test command (README): unit tests, then the end-to-end tests
# on the simulated lab, which this script brings up and always tears down.
# Needs root (namespaces, loop devices, mounts, cgroups).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "ci/test.sh: run as root (the lab needs namespaces, loop devices and mounts)" >&2; exit 1; }

# Each stage's heading says when it started (bash's SECONDS: since this
# script began), so a run's log shows where its time went.
step() { printf '\n== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
log() { printf '%s\n' "$*" >&2; }
# The leftovers checks the lab's scripts run at the end of their `down`.
# shellcheck source=lib.sh
source ci/lib.sh

# nothing_left WHAT OK LIST [ARGS]: fail the run when the leftovers function
# LIST finds what WHAT's teardown left behind; print "ok: OK" otherwise.
nothing_left() {
    local what=$1 ok=$2
    shift 2
    left_behind "$what" "$@" || exit 1
    echo "ok: $ok"
}

# What binfmt_misc looked like before ci/arm.sh (its down must restore exactly
# that): read before the image build below, which registers qemu-aarch64.
arm_binfmt_before=$(arm_binfmt)

# The guests' image, arm1's rootfs and the install test's minimal root are
# built (or taken from their caches) in the background from the start,
# niced: debootstrap mostly waits on the mirror and the disk, and soaks up
# what the CPU-bound stages leave idle.
# Their stages wait for it (images_ready); every exit path waits for it too,
# so no build is cut off with its mounts left, before the lab goes down.
images_log=$(mktemp /tmp/benchrig-images.XXXXXX)
nice -n 19 ionice -c 2 -n 7 bash -c 'ci/vm.sh image && ci/arm.sh image && ci/install-test.sh image' >"$images_log" 2>&1 &
images_pid=$!
images_rc=
# images_ready: wait for the build (once), show its log, fail if it failed.
images_ready() {
    if [[ -z $images_rc ]]; then
        images_rc=0
        wait "$images_pid" || images_rc=$?
        sed 's/^/  (image build) /' "$images_log"
        rm -f "$images_log"
    fi
    return "$images_rc"
}
# teardown: every exit path. lab.sh down takes the guests and arm1 (and the
# binfmt entry the rootfs build registered) down first; idempotent.
teardown() {
    images_ready >/dev/null 2>&1 || true
    [[ -z ${emulated_pid:-} ]] || wait "$emulated_pid" 2>/dev/null || true
    ci/lab.sh down || true
    ci/postgres.sh down || true
}
trap teardown EXIT

step "lint: rustfmt, clippy (warnings are errors), shellcheck, actionlint, no module cycles"
cargo fmt --all --check
cargo clippy --locked --workspace --all-targets -- -D warnings
shellcheck ci/*.sh ci/nightly/*.sh .ci/run
node ci/actionlint.cjs ci/nightly/examples/github-actions.yml
ci/module-cycles.py --self-test
ci/module-cycles.py wire/src node-agent/src orchestrator/src ci/diskmodel/src

step "agents for every architecture"
ci/build-agents.sh

step "a PostgreSQL server for the store's tests"
BENCHRIG_TEST_POSTGRES=$(ci/postgres.sh up)
export BENCHRIG_TEST_POSTGRES

step "unit tests (the store's on SQLite and on PostgreSQL)"
cargo test --locked --workspace

step "the agent's tests that need root (loop devices, mounts, dropped caches, a user switch; ignored without --ignored)"
cargo test --locked --workspace "${ROOT_TESTS[@]}" -- --ignored
cargo test --locked --workspace --lib -- --ignored the_switch_stays_on_its_thread

# Every later stage names --workspace, as the unit tests do: `-p benchrig`
# alone resolves other features (the agent's rustix ones drop out), so cargo
# rebuilt tokio, rustix and all of benchrig once more (55 s here).
step "the HTML reports in headless Chromium (runs on this machine; .ci/run installs chromium)"
cargo test --locked --workspace --test html_in_browser -- --ignored

step "the nightly script on this machine: webhook, GitHub check run and GitLab status (a local receiver), the site"
cargo test --locked --workspace --test nightly_script -- --ignored

step "bisect on this machine: a git repository's 40 commits, the slow one found and confirmed, killed and resumed"
cargo test --locked --workspace --test bisect_local -- --ignored

step "inventory parity with ansible-inventory (the oracle .ci/run installs)"
BENCHRIG_ANSIBLE_INVENTORY=${BENCHRIG_ANSIBLE_INVENTORY:-/var/tmp/benchrig-venv/bin/ansible-inventory} \
    cargo test --locked --workspace --test ansible_parity -- --ignored

step "change-point parity with Apache Otava (the oracle .ci/run installs)"
BENCHRIG_OTAVA_PYTHON=${BENCHRIG_OTAVA_PYTHON:-/var/tmp/benchrig-venv/bin/python} \
    cargo test --locked --workspace --test changepoint_parity -- --ignored

step "the playbook schema against check-jsonschema (the validator .ci/run installs)"
BENCHRIG_CHECK_JSONSCHEMA=${BENCHRIG_CHECK_JSONSCHEMA:-/var/tmp/benchrig-venv/bin/check-jsonschema} \
    cargo test --locked --workspace --test playbook_schema -- --ignored

step "the store at a month's size: 30 nights of 30 hosts, SQLite and PostgreSQL (figures, not a pass/fail test; docs/perf.md has the year)"
PROFILE=debug NIGHTS=30 HOSTS=30 ci/bench-store.sh

step "simulated lab up (twice: up is idempotent)"
ci/lab.sh up
ci/lab.sh up >/dev/null
ci/lab.sh status >/dev/null

step "end-to-end tests on the lab"
# More threads than tests: libtest starts them all, and each waits for the
# hosts it names (tests/common/hosts.rs), so tests on disjoint hosts run at
# once, three at most, and those that must run alone run last.
cargo test --locked --workspace --test lab -- --ignored --test-threads=64

step "round-trip benchmark (figures, not a pass/fail test)"
ci/bench-roundtrip.sh

step "the guests' image, arm1's rootfs and the install test's root, built in the background since the start"
images_ready

# The agent's unit tests on a Pentium and on a Cortex-A7, under qemu-user
# (ci/emulated-cpus.sh; the image build above installed qemu-user): in the
# background, niced, beside the aarch64 host's and the guests' stages, in a
# target dir of their own. Waited for before the lab goes down.
emulated_log=$(mktemp /tmp/benchrig-emulated.XXXXXX)
nice -n 19 ci/emulated-cpus.sh >"$emulated_log" 2>&1 &
emulated_pid=$!

step "the lab's aarch64 host: arm64 rootfs (cached), sshd under qemu-user (up twice: idempotent)"
# ci/arm.sh installs qemu-user and debootstrap itself, registers
# qemu-aarch64 with binfmt_misc (F flag) if nothing usable is registered, and
# starts arm1 in a netns on brlab0.
ci/arm.sh up
ci/arm.sh up >/dev/null

step "end-to-end tests on the aarch64 host"
cargo test --locked --workspace --test arm -- --ignored --test-threads=1

step "aarch64 host down, and nothing left behind"
ci/arm.sh down
ci/arm.sh down >/dev/null   # idempotent
nothing_left "the aarch64 host" "no process, netns, loop device, mount or binfmt entry left" \
    arm_leftovers "$arm_binfmt_before"

step "the lab's emulated old machines: images, two kernel-6.1 guests, a 5.10, a 32-bit one and a GRUB-booted kernel lab machine (up twice: idempotent)"
# ci/vm.sh installs qemu and debootstrap itself (see its header), builds the
# guest image or takes it from its cache, and boots the guests on brlab0.
ci/vm.sh up
ci/vm.sh up >/dev/null

step "end-to-end tests on the guests"
cargo test --locked --workspace --test vm -- --ignored --test-threads=1

step "the kernel under test on kboot: a kernel package installed and removed, kexec and one-shot GRUB boots, and faults (a one-shot ignored, a root that never comes, a panic with a failing power command, a full /boot, a killed controller; real boots under TCG)"
cargo test --locked --workspace --test kernels -- --ignored --test-threads=1

step "guests down, and nothing left behind"
ci/vm.sh down
ci/vm.sh down >/dev/null   # idempotent
nothing_left "the guests" "no qemu, tap or mount left" vm_leftovers

step "the agent's unit tests on a Pentium and a Cortex-A7 (qemu-user), run in the background since the images were ready"
emulated_rc=0
wait "$emulated_pid" || emulated_rc=$?
emulated_pid=
grep -E '^(==|   \(|test result|failures:|    [a-z_:]+$)|panicked|error' "$emulated_log" || true
if ((emulated_rc)); then
    tail -60 "$emulated_log"
    exit "$emulated_rc"
fi
rm -f "$emulated_log"

step "lab down, and nothing left behind"
trap - EXIT
ci/postgres.sh down
ci/lab.sh down
ci/lab.sh down >/dev/null   # idempotent
nothing_left "the lab" "nothing left behind" lab_leftovers

step "release artifacts (static tarball, .deb), installed on a minimal Debian 12 without build tools, quickstart, purge"
# ci/release.sh builds the static musl benchrig (the agents are built above)
# into dist/; ci/install-test.sh installs each in a fresh copy of the cached
# minbase root (built in the background since the start), without network.
ci/release.sh --out dist
ci/install-test.sh run dist

step "fan-out benchmark, small: 3 and 16 hosts, one round (figures, not a pass/fail test; docs/perf.md has the full run)"
# The debug build the tests used (a release build would cost minutes here):
# its figures are a debug build's.
BENCHRIG=$PWD/target/debug/benchrig ROUNDS=1 ci/bench-fanout.sh 3 16
fanout_leftovers() { BENCHRIG_LAB_DIR=/var/tmp/benchrig-fanout lab_leftovers; }
nothing_left "the fan-out hosts" "nothing left behind" fanout_leftovers
step "done"
