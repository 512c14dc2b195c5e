#!/usr/bin/env bash
# Benchmark (prints figures; not a pass/fail test): on each lab host, the
# round trip of a no-op step over an established agent session next to
# `ssh host true` through a ControlMaster, and deploy + facts wall time for
# all hosts, cold (agent absent, uploaded) and warm.
# Needs the lab up (ci/lab.sh up) and the agents built (ci/build-agents.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
LAB=/var/tmp/benchrig-lab
INV=inventories/simlab.yml
N=${N:-200}         # agent round trips per host
SSH_N=${SSH_N:-20}  # ssh round trips per host (each costs a session + shell)
cargo build --locked -q -p benchrig
BENCHRIG=target/debug/benchrig
db=$(mktemp -d)/bench.db
trap 'rm -rf "$(dirname "$db")"' EXIT

declare -A ADDR=([old]=10.77.0.11 [fast1]=10.77.0.12 [fast2]=10.77.0.13 [hdd]=10.77.0.14 [soc]=10.77.0.15)
HOSTS=(old fast1 fast2 hdd soc)

# Median and p95 of a list of milliseconds on stdin.
stats() { sort -n | awk '{v[NR]=$1} END {m=v[int((NR+1)/2)]; p=v[int(NR*0.95+0.5)]; printf "%.2f %.2f", m, p}'; }

ssh_true() {   # ssh_true HOST → "median p95" of `ssh host true` over a ControlMaster, in ms
    local ctl; ctl=$(mktemp -u /tmp/brb.XXXXXX)
    local o=(-F /dev/null -i "$LAB/id_ed25519" -o "UserKnownHostsFile=$LAB/known_hosts" -o BatchMode=yes -S "$ctl" -l root)
    ssh "${o[@]}" -M -f -N -o ControlPersist=30 "${ADDR[$1]}"
    for ((i = 0; i < SSH_N; i++)); do
        local t0 t1; t0=$(date +%s%N); ssh "${o[@]}" "${ADDR[$1]}" true; t1=$(date +%s%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f\n", (b-a)/1e6}'
    done | stats
    ssh "${o[@]}" -O exit "${ADDR[$1]}" 2>/dev/null || true
}

echo "benchrig ping (agent round trips, $N each) vs ssh true through a ControlMaster ($SSH_N each)"
printf '%-6s %-7s %14s %14s %16s %16s %10s\n' HOST ARCH NOOP_P50_MS NOOP_P95_MS SSH_TRUE_P50_MS SSH_TRUE_P95_MS SPEEDUP
for h in "${HOSTS[@]}"; do
    line=$(BENCHRIG_DB=$db $BENCHRIG -q ping -i $INV -l "$h" -n "$N" | awk -v h="$h" '$1 == h')
    read -r _ arch _ _ _ noop50 noop95 <<<"$line"
    read -r ssh50 ssh95 <<<"$(ssh_true "$h")"
    printf '%-6s %-7s %14s %14s %16s %16s %9.0fx\n' "$h" "$arch" "$noop50" "$noop95" "$ssh50" "$ssh95" \
        "$(awk -v a="$ssh50" -v b="$noop50" 'BEGIN{print (b > 0 ? a / b : 0)}')"
done

echo
echo "deploy + facts, all hosts at once"
for h in "${HOSTS[@]}"; do rm -f "$LAB/hosts/$h/home/.cache/benchrig/"benchrig-agent-*; done
t0=$(date +%s%N); BENCHRIG_DB=$db $BENCHRIG -q facts -i $INV >/dev/null; t1=$(date +%s%N)
awk -v a="$t0" -v b="$t1" 'BEGIN{printf "cold (agents uploaded): %.2f s\n", (b-a)/1e9}'
t0=$(date +%s%N); BENCHRIG_DB=$db $BENCHRIG -q facts -i $INV >/dev/null; t1=$(date +%s%N)
awk -v a="$t0" -v b="$t1" 'BEGIN{printf "warm (agents cached):   %.2f s\n", (b-a)/1e9}'
