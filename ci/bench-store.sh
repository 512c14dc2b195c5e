#!/usr/bin/env bash
# Benchmark (prints figures; not a pass/fail test): the store, history and
# reports at a lab's size. `examples/nights.rs` writes NIGHTS nights of
# HOSTS hosts through the real store API (planted: −3% on hosts 1–7 from
# night 200 of 365, −10% on host 0 from night 300, scaled to NIGHTS), on
# SQLite and, when BENCHRIG_TEST_POSTGRES names a server, on PostgreSQL;
# then times `history`, `report`, `compare`, `show` and `runs` against the
# result (wall time and peak RSS, from /usr/bin/time), checks that history
# finds the planted changes on exactly the planted hosts, and states the
# database's size per night.
#
#   ci/bench-store.sh                     # a year: 365 nights × 100 hosts (docs/perf.md)
#   NIGHTS=30 HOSTS=30 ci/bench-store.sh  # a month, as ci/test.sh runs it
#
# PROFILE=debug uses the debug build the tests made (its figures are a
# debug build's); the default builds release. PLAYBOOKS: the playbooks a
# night runs (default quickstart.yml; every shipped one is `all`).
set -euo pipefail
cd "$(dirname "$0")/.."
NIGHTS=${NIGHTS:-365}
HOSTS=${HOSTS:-100}
PROFILE=${PROFILE:-release}
PLAYBOOKS=${PLAYBOOKS:-playbooks/quickstart.yml}
[[ $PLAYBOOKS == all ]] && PLAYBOOKS=""
# --workspace, as ci/test.sh builds: `-p benchrig` alone resolves other
# features and would build much of it again.
if [[ $PROFILE == release ]]; then
    cargo build --locked -q --release --workspace --bin benchrig --example nights
else
    cargo build --locked -q --workspace --bin benchrig --example nights
fi
BENCHRIG=$PWD/target/$PROFILE/benchrig
NIGHTS_BIN=$PWD/target/$PROFILE/examples/nights
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $NIGHTS nights × $HOSTS hosts, $PROFILE build"

# timed LABEL CMD…: wall seconds and peak RSS of one command (its output kept in $work/out).
timed() {
    local label=$1; shift
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || {
        echo "$label failed:"; cat "$work/err"; return 1
    }
    read -r secs kb <"$work/time"
    printf '  %-44s %7.2f s  %6d MB\n' "$label" "$secs" $((kb / 1024))
}

bench() {   # bench NAME DB
    local name=$1 db=$2
    echo "$name:"
    # shellcheck disable=SC2086 # PLAYBOOKS is a list
    "$NIGHTS_BIN" --db "$db" --nights "$NIGHTS" --hosts "$HOSTS" --scale-nights $PLAYBOOKS 2>/dev/null | sed 's/^/  /'
    local last runs
    runs=$("$BENCHRIG" runs --json --db "$db" | grep -c '"id"')
    last=$("$BENCHRIG" runs --json --db "$db" | grep '"id"' | tail -1 | tr -dc 0-9)
    timed "runs ($runs runs)" "$BENCHRIG" runs --db "$db"
    timed "history (table, the newest run's playbook)" "$BENCHRIG" history --last "$NIGHTS" --db "$db"
    local summary; summary=$(tail -1 "$work/out")
    timed "history --min-change 2" "$BENCHRIG" history --last "$NIGHTS" --min-change 2 --db "$db"
    # The planted hosts are h000 (−10%) and h001–h007 (−3%): no other.
    local changed
    changed=$(grep -E '^h[0-9]{3} .*(regression|improvement)' "$work/out" | grep -v 'differs:' | cut -d' ' -f1 | sort -u | tr '\n' ' ')
    echo "  history: $summary"
    echo "  hosts with a change beyond 2%: ${changed:-none} (planted: h000–h007)"
    timed "report (one night, html)" "$BENCHRIG" report "$last" --format html --db "$db"
    timed "report (one night, json)" "$BENCHRIG" report "$last" --format json --db "$db"
    timed "compare (one night with the one before)" "$BENCHRIG" compare "$last" --db "$db"
    timed "show (one night)" "$BENCHRIG" show "$last" --db "$db"
}

bench "SQLite" "$work/nights.db"
size=$(stat -c %s "$work/nights.db")
echo "  database: $((size / 1000000)) MB, $((size / NIGHTS / 1000)) kB a night"
rm -f "$work"/nights.db*
if [[ -n ${BENCHRIG_TEST_POSTGRES:-} ]]; then
    db="bench_store_$$"
    psql "$BENCHRIG_TEST_POSTGRES" -qc "CREATE DATABASE $db"
    url="${BENCHRIG_TEST_POSTGRES%/*}/$db"
    bench "PostgreSQL" "$url"
    size=$(psql "$url" -Atc "SELECT pg_database_size(current_database())")
    echo "  database: $((size / 1000000)) MB, $((size / NIGHTS / 1000)) kB a night"
    psql "$BENCHRIG_TEST_POSTGRES" -qc "DROP DATABASE $db WITH (FORCE)"
fi
