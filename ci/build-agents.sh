#!/usr/bin/env bash
# Build the static benchrig-agent for every architecture benchrig deploys to.
# Output: target/<triple>/agent/benchrig-agent (where benchrig looks for them),
# built with Cargo.toml's `agent` profile (small; `release` is the
# orchestrator's, tuned for build time). Fails when an agent is over 3 MiB or
# not static. Honours CARGO_TARGET_DIR.
# Pure Rust + rust-lld (see .cargo/config.toml): no C cross compiler needed.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(x86_64-unknown-linux-musl i686-unknown-linux-musl aarch64-unknown-linux-musl)
installed=$(rustup target list --installed)
for t in "${targets[@]}"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
done
args=()
for t in "${targets[@]}"; do args+=(--target "$t"); done
cargo build --locked -p benchrig-agent --profile agent "${args[@]}"
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
