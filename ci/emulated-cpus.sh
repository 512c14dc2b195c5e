#!/usr/bin/env bash
# emulated-cpus.sh: the agent's unit tests on CPUs this machine is not, under
# qemu-user with the CPU model named: the i586 build on a Pentium (P54C: no
# CMOV, no MMX, no SSE), the armv7 build on a Cortex-A7 (a Raspberry Pi 2);
# and the i686 build natively (this kernel runs 32-bit programs), the build
# the i586 one stands in for. A test passes only if every instruction it
# runs exists on that CPU, and only if the agent's arithmetic (rates,
# monitors, statistics it computes on the host) gives there, in x87 or VFP
# floats, what the same tests want from the i686 and x86_64 builds.
#
# Debian's kernel needs CMOV, so no real P5 boots it and the lab has no
# Pentium guest: this is where the i586 build meets a P5. Release builds:
# the debug ones take ten times as long under emulation. Their own target
# dir, so that it can run beside another cargo (ci/test.sh starts it in the
# background). Needs qemu-user (ci/arm.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=build-agents.sh
source ci/build-agents.sh --env
export CARGO_TARGET_DIR=${EMULATED_TARGET_DIR:-target/emulated}
runs=(
    "i686-unknown-linux-musl native"
    "i586-unknown-linux-musl qemu-i386 -cpu pentium"
    "armv7-unknown-linux-musleabihf qemu-arm -cpu cortex-a7"
)
for r in "${runs[@]}"; do
    read -r t qemu cpu <<<"$r"
    std=()
    if [[ $qemu != native ]]; then
        command -v "$qemu" >/dev/null || { echo "emulated-cpus: $qemu is missing (qemu-user)" >&2; exit 1; }
        agent_env "$t"
        std=("-Zbuild-std=std,panic_unwind,test")
        export "$(cargo_target_var "$t" RUNNER)=$qemu $cpu"
    fi
    echo "== the agent's unit tests, $t ${cpu:+under $qemu }${cpu:-natively}"
    start=$SECONDS
    cargo test --locked --release -p benchrig-agent --target "$t" "${std[@]}" --lib
    echo "   ($((SECONDS - start)) s)"
done
