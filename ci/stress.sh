#!/usr/bin/env bash
# ci/stress.sh — ci/test.sh's end-to-end stages with a CPU hog beside them,
# to find the tests that hold only on an idle machine (a fresh CI machine is
# never idle: the images build beside the stages). Not part of .ci/run.
#
#   ci/stress.sh [ROUNDS]        every stage ROUNDS times (default 2)
#
#   HOG=N          hog processes (`yes`, nice 0), default one per core
#   STAGES="..."   which stages, of: root local lab guests arm (default
#                  "lab guests"; root: the agent's tests that need root, the
#                  disk model's calibration among them; local: the nightly
#                  script and bisect on this machine)
#
# Run as root on a machine .ci/run has set up (packages, rustup targets):
# it builds the agents and the test binaries before the hog starts, brings
# up PostgreSQL and the lab, and takes everything down on every exit path.
# Each stage's log goes to $OUT (default /var/tmp/benchrig-stress); the
# summary names each failed test with its round. Exit 1 when any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "ci/stress.sh: run as root (the lab needs namespaces, loop devices and mounts)" >&2; exit 1; }

rounds=${1:-2}
hog=${HOG:-$(nproc)}
stages=${STAGES:-lab guests}
out=${OUT:-/var/tmp/benchrig-stress}
log() { printf '%s\n' "stress: $*" >&2; }
# ROOT_TESTS, the root stage's list, as ci/test.sh runs it.
# shellcheck source=lib.sh
source ci/lib.sh
step() { printf '\n== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

for s in $stages; do
    case $s in root | local | lab | guests | arm) ;; *) log "unknown stage '$s' (root, local, lab, guests, arm)"; exit 2 ;; esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $hog =~ ^[0-9]+$ ]] || { log "usage: [HOG=N] [STAGES=...] ci/stress.sh [ROUNDS]"; exit 2; }
mkdir -p "$out"
rm -f "$out"/round*.log

hog_pids=()
hog_down() {
    ((${#hog_pids[@]})) && kill "${hog_pids[@]}" 2>/dev/null
    hog_pids=()
}
teardown() {
    hog_down
    ci/vm.sh down || true
    ci/arm.sh down || true
    ci/lab.sh down || true
    ci/postgres.sh down || true
}
trap teardown EXIT

step "agents and test binaries (before the hog)"
ci/build-agents.sh
local_tests=(--test nightly_script --test bisect_local)
cargo test --locked --workspace --no-run --test lab --test vm --test arm "${ROOT_TESTS[@]}" "${local_tests[@]}"
[[ " $stages " == *" guests "* ]] && ci/vm.sh image >/dev/null
[[ " $stages " == *" arm "* ]] && ci/arm.sh image >/dev/null

step "PostgreSQL and the lab"
BENCHRIG_TEST_POSTGRES=$(ci/postgres.sh up)
export BENCHRIG_TEST_POSTGRES
ci/lab.sh up >/dev/null

step "the hog: $hog × yes, nice 0"
for ((i = 0; i < hog; i++)); do
    nice -n 0 yes >/dev/null &
    hog_pids+=("$!")
done

failed=()
# stage ROUND NAME COMMAND...: run one stage, its output to its log; note
# each failed test (libtest's "test NAME ... FAILED"), or the stage itself.
stage() {
    local round=$1 name=$2 file rc=0 t0=$SECONDS tests
    shift 2
    file=$out/round$round-$name.log
    # A stage named twice in STAGES keeps both logs.
    [[ -e $file ]] && file=$out/round$round-$name-$SECONDS.log
    step "round $round: $name"
    "$@" >"$file" 2>&1 || rc=$?
    mapfile -t tests < <(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$file")
    if ((rc)); then
        ((${#tests[@]})) || tests=("(the stage itself, exit $rc: see $file)")
        for t in "${tests[@]}"; do failed+=("round $round $name: $t"); done
    fi
    printf '%s: exit %d in %d s, %s\n' "$name" "$rc" $((SECONDS - t0)) "$(grep '^test result' "$file" | tail -n1)"
}

for ((r = 1; r <= rounds; r++)); do
    for s in $stages; do
        case $s in
        root)
            stage "$r" root cargo test --locked --workspace "${ROOT_TESTS[@]}" -- --ignored
            ;;
        local)
            stage "$r" local cargo test --locked --workspace "${local_tests[@]}" -- --ignored
            ;;
        lab)
            ci/lab.sh up >/dev/null
            stage "$r" lab cargo test --locked --workspace --test lab -- --ignored --test-threads=64
            ;;
        guests)
            stage "$r" guests bash -c 'ci/vm.sh up && cargo test --locked --workspace --test vm -- --ignored --test-threads=1'
            ci/vm.sh down
            ;;
        arm)
            stage "$r" arm bash -c 'ci/arm.sh up && cargo test --locked --workspace --test arm -- --ignored --test-threads=1'
            ci/arm.sh down
            ;;
        esac
    done
done

step "summary: $rounds round(s) of: $stages, with $hog hog process(es)"
hog_down
if ((${#failed[@]})); then
    printf 'FAILED %s\n' "${failed[@]}"
    exit 1
fi
echo "all green"
