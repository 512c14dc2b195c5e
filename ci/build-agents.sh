#!/usr/bin/env bash
# Build the static benchrig-agent for every architecture benchrig deploys to.
# Output: target/<triple>/agent/benchrig-agent (where benchrig looks for them),
# built with Cargo.toml's `agent` profile (small; `release` is the
# orchestrator's, tuned for build time). Fails when an agent is over 3 MiB or
# not static. Honours CARGO_TARGET_DIR.
# The agent is pure Rust, linked by rust-lld (see .cargo/config.toml) against
# musl: no C cross toolchain, but clang for the C runtime of the targets below.
#
# rustup ships the standard library of the first three. For the others it
# does not (here), so cargo builds std itself (-Zbuild-std, with
# RUSTC_BOOTSTRAP: the toolchain's rust-src) over the C runtime
# ci/agent-libc.sh builds (musl and libunwind, with clang). `agent_env`
# sets that up; ci/emulated-cpus.sh uses it too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib.sh
source ci/lib.sh
shipped=("${AGENTS_SHIPPED_STD[@]}")
built=("${AGENTS_BUILT_STD[@]}")
targets=("${AGENT_TRIPLES[@]}")

# cargo_target_var TARGET KEY: cargo's environment variable for a target's
# setting (CARGO_TARGET_I586_UNKNOWN_LINUX_MUSL_RUSTFLAGS).
cargo_target_var() { echo "CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$1")_$2"; }

# agent_env TARGET: the environment cargo needs to build for a `built` target.
agent_env() {
    local t=$1 libc var flags
    libc=$(ci/agent-libc.sh "$t")
    var=$(cargo_target_var "$t" RUSTFLAGS)
    flags="-L native=$libc"
    # sha2 picks SHA-NI code at run time where the CPU has it: correct on
    # a Pentium too, but its SSE instructions would be in the binary, and
    # the check below proves the i586 agent has none.
    [[ $t == i586-* ]] && flags+=' --cfg sha2_backend="soft"'
    export "$var=$flags" RUSTC_BOOTSTRAP=1
}

# Sourced by ci/emulated-cpus.sh with --env: only the function.
[[ ${1:-} == --env ]] && return 0

installed=$(rustup target list --installed)
for t in "${shipped[@]}"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
rustup component list --installed | grep -q '^rust-src' || rustup component add rust-src
args=()
for t in "${shipped[@]}"; do args+=(--target "$t"); done
cargo build --locked -p benchrig-agent --profile agent "${args[@]}"
args=()
for t in "${built[@]}"; do
    agent_env "$t"
    args+=(--target "$t")
done
cargo build --locked -p benchrig-agent --profile agent -Zbuild-std=std,panic_unwind "${args[@]}"
# A Pentium (P5) has no CMOV, FCMOV or FCOMI (P6), no MMX, no SSE: none may
# be in the i586 agent, or it dies of SIGILL on the CPUs it is for.
f="${CARGO_TARGET_DIR:-target}/i586-unknown-linux-musl/agent/benchrig-agent"
p6=$(objdump -d --no-show-raw-insn "$f" | grep -E $'\t(cmov|fcmov|fcomi|fucomi|sysenter|rdpmc)|%x?mm[0-9]' || true)
if [[ -n $p6 ]]; then
    echo "error: $f has $(wc -l <<<"$p6") instructions a Pentium lacks (CMOV, FCMOV, FCOMI, MMX, SSE):" >&2
    head <<<"$p6" >&2
    exit 1
fi
for t in "${targets[@]}"; do
    f="${CARGO_TARGET_DIR:-target}/$t/agent/benchrig-agent"
    size=$(stat -c %s "$f")
    # The agent travels to every host, old ones on slow links included.
    if (( size > 3 * 1024 * 1024 )); then
        echo "error: $f is $size bytes, over the 3 MiB budget" >&2
        exit 1
    fi
    # A dynamic executable has a PT_INTERP header naming its loader. Read
    # first, so a readelf that fails fails the build rather than the check.
    headers=$(readelf -lW "$f")
    if grep -q INTERP <<<"$headers"; then
        echo "error: $f is dynamically linked" >&2
        exit 1
    fi
    printf '%-28s %8d bytes  static\n' "$t" "$size"
done
