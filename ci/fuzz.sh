#!/usr/bin/env bash
# Longer fuzzing runs, by hand (issue 26): every cargo-fuzz target in fuzz/
# (or those named as arguments) for FUZZ_SECONDS each, from its seeds. Not
# part of .ci/run or ci/test.sh (too long for them); the property tests in
# node-agent/tests/fuzz_host_parsers.rs and orchestrator/tests/fuzz_parsers.rs
# are the short runs `cargo test` makes. See
# orchestrator/tests/fuzz_corpus/README.md, "cargo-fuzz targets".
#
#   ci/fuzz.sh                      # every target, 60 s each
#   FUZZ_SECONDS=3600 ci/fuzz.sh import_export wire_frame
#   FUZZ_ARGS='-max_len=300000' ci/fuzz.sh signature_probe
#
# Needs a nightly toolchain (`rustup toolchain install nightly`): cargo-fuzz
# builds with -Zsanitizer=address. Installs cargo-fuzz when it is missing.
#
# Environment: FUZZ_SECONDS (60), FUZZ_RSS_MB (libFuzzer's memory limit, an
# input past it is an out-of-memory finding: 1024, but 2048 for playbook,
# where a matrix of up to matrix::MAX_POINTS cells is planned whole, as the
# property test's 2 GiB allows), FUZZ_TIMEOUT (30: s one input may take),
# FUZZ_TOOLCHAIN (nightly), FUZZ_ARGS (more libFuzzer flags, split on
# spaces: `-jobs=2 -workers=2`, `-max_len=N`, `-dict=FILE`).
#
# What each target finds new is kept in fuzz/corpus/TARGET (ignored by git,
# so later runs start from it); the checked-in fuzz/seeds/TARGET are only
# read. An input that crashes, leaks past the memory limit or hangs is saved
# in fuzz/artifacts/TARGET/; the script goes on with the next target, lists
# the findings at the end and exits 1 if there were any.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
timeout=${FUZZ_TIMEOUT:-30}
toolchain=${FUZZ_TOOLCHAIN:-nightly}
read -ra extra <<<"${FUZZ_ARGS:-}"

log() { printf '%s\n' "$*" >&2; }
die() {
    log "ci/fuzz.sh: $*"
    exit 2
}

cargo "+$toolchain" --version >/dev/null 2>&1 ||
    die "no $toolchain toolchain: rustup toolchain install $toolchain"
if ! cargo "+$toolchain" fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install cargo-fuzz --locked || cargo install cargo-fuzz
fi

mapfile -t known < <(cargo "+$toolchain" fuzz list)
((${#known[@]})) || die "cargo fuzz list found no targets in fuzz/"
if (($#)); then
    targets=("$@")
    for t in "${targets[@]}"; do
        printf '%s\n' "${known[@]}" | grep -qxF -- "$t" || die "no target $t (there are: ${known[*]})"
    done
else
    targets=("${known[@]}")
fi

# Every target built up front: the seconds below are all fuzzing.
for t in "${targets[@]}"; do
    cargo "+$toolchain" fuzz build "$t"
done

logs=$(mktemp -d /tmp/benchrig-fuzz.XXXXXX)
failed=()
summary=()
for t in "${targets[@]}"; do
    printf '\n== %s: %d s (log: %s/%s.log)\n' "$t" "$seconds" "$logs" "$t"
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    rss_mb=${FUZZ_RSS_MB:-1024}
    [[ $t == playbook ]] && rss_mb=${FUZZ_RSS_MB:-2048}
    args=(-max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout="$timeout" -print_final_stats=1)
    [[ -f fuzz/dicts/$t.dict ]] && args+=(-dict="fuzz/dicts/$t.dict")
    seeds=()
    [[ -d fuzz/seeds/$t ]] && seeds=("fuzz/seeds/$t")
    # The first directory receives what the run finds; the seeds are read.
    if cargo "+$toolchain" fuzz run "$t" "fuzz/corpus/$t" "${seeds[@]}" -- "${args[@]}" "${extra[@]}" \
        2>&1 | tee "$logs/$t.log"; then
        summary+=("$t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$logs/$t.log" | tail -1 || echo 'no DONE line')")
    else
        failed+=("$t")
        summary+=("$t: FAILED, $(grep -Eo 'artifact_prefix=[^;]*; Test unit written to [^ ]+' "$logs/$t.log" | tail -1 || echo "see $logs/$t.log")")
    fi
done

printf '\n== summary (logs in %s)\n' "$logs"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
    log ""
    log "findings in: ${failed[*]}. Reproduce one with"
    log "  cargo +$toolchain fuzz run TARGET fuzz/artifacts/TARGET/crash-..."
    log "shrink it with \`cargo +$toolchain fuzz tmin TARGET FILE\`, then make it a test (see the README)."
    exit 1
fi
