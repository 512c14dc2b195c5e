#!/usr/bin/env bash
# One night of a lab, as a scheduler calls it (cron, a systemd timer, a CI
# job on the lab's controller; examples beside this file):
#
#   ci/nightly/nightly.sh -i lab.yml --db postgres://bench@dbhost/lab -o out/ \
#       -p playbooks/quickstart.yml -p playbooks/compressed-read.yml
#
# For each playbook: run it as "<prefix>-<playbook>-<date>" (a run of that
# name already there is resumed, or left alone when it is complete); resume
# it once more if the night was cut off (a host lost, an interrupt, a
# kill); compare it with its automatic baseline (the newest earlier ok run
# of the playbook on the same hosts); gate on the playbook's history (a
# regression that arrived tonight); and write into the output directory,
# per run, <name>.junit.xml (against the baseline: a regressed cell fails),
# <name>.html, <name>.md, the comparison and the history in markdown (and
# the history in JSON and HTML), and summary.md of them all (for a CI job
# summary). With --alert (or a --webhook), each regression is reported
# once: `history --alert` posts the new ones and stamps them, so a later
# night does not report them again; `benchrig history ack ID` takes one
# out of the gate. With --site DIR, the site of every stored run is
# written (incrementally) into DIR. Then old nights are pruned: their
# samples, monitor series and artifacts deleted, their summaries kept for
# history (`benchrig prune --older-than 90d --keep-last 30` by default;
# runs marked with `benchrig mark RUN --baseline` are kept whole). Last,
# with --github-check or --gitlab-status, the night's outcome and
# summary.md go to the forge as a check run or a commit status (curl, and
# jq for GitHub; the tokens and ids the CI job has, see the usage).
#
# Exit code: the most serious of every step's, in benchrig's order (README,
# "Exit codes"): 0 ok, 3 a regression, 2 a failed cell, 4 a host
# unreachable, 5 hosts held by another run, 1 a usage or configuration
# error, 130 interrupted.
set -uo pipefail

usage() {
    cat <<USAGE
usage: ${0##*/} -i INVENTORY --db DB -p PLAYBOOK [-p PLAYBOOK]... [options]

  -i, --inventory INV     the lab's inventory (repeatable)
      --db DB             the results database (a SQLite file or postgres:// URL)
  -p, --playbook PB       a playbook to run tonight (repeatable)
  -l, --limit PATTERN     only these hosts (as ansible's --limit)
  -o, --out DIR           where the reports go (default: nightly-out)
  -e, --extra-vars VARS   passed to every run (repeatable)
      --prefix P          run names are P-<playbook>-<date> (default: nightly)
      --date DATE         the night's date in run names (default: today, UTC)
      --wait-for-hosts D  how long to wait for hosts another run holds (default: 3h)
      --threshold PCT     changes under PCT percent are no regression (default: 5)
      --alpha A           significance level against the baseline (default: 0.01: a
                          night compares many metrics, and each test may err)
      --history ARGS      more arguments for 'benchrig history' (e.g. "--max-pvalue 0.01";
                          --window, --max-pvalue, --min-points, --max-cv go to the site too)
      --prune-older-than D  prune runs older than D (default: 90d; "never": no prune)
      --keep-last N       prune none of a playbook's newest N runs (default: 30)
      --alert             report each new regression once (benchrig history --alert)
      --webhook URL       post new regressions here as JSON (repeatable; implies --alert)
      --site DIR          write the results' static site into DIR (benchrig site)
      --site-url URL      where DIR is served: the check's and the status's link
      --site-keep N       the site keeps the pages of each playbook's newest N runs (default: 30)
      --github-check      post a check run on \$GITHUB_SHA of \$GITHUB_REPOSITORY with
                          \$GITHUB_TOKEN (checks: write) at \$GITHUB_API_URL
                          (default https://api.github.com)
      --gitlab-status     post a commit status on \$CI_COMMIT_SHA of \$CI_PROJECT_ID
                          with \$GITLAB_TOKEN (api scope) at \$CI_API_V4_URL
      --benchrig PATH     the benchrig to use (default: \$BENCHRIG, else benchrig on PATH)
      --build             build benchrig and its agents from this checkout first
USAGE
}

# Least to most serious (README, "Exit codes").
SEVERITY=(0 3 2 4 5 1 130 141)
rank() {
    local i
    for i in "${!SEVERITY[@]}"; do
        [[ ${SEVERITY[$i]} == "$1" ]] && { echo "$i"; return; }
    done
    echo 99
}
worst=0
note() { if (( $(rank "$1") > $(rank "$worst") )); then worst=$1; fi; }
say() { echo "nightly: $*" >&2; }

inventories=() playbooks=() extra=() limit=()
db="" out=nightly-out prefix=nightly date=$(date -u +%F) wait=3h threshold=5 alpha=0.01 history_args="" build=false
prune_older=90d keep_last=30
alert=() site="" site_url="" site_keep=30 github_check=false gitlab_status=false
benchrig=${BENCHRIG:-benchrig}
while [[ $# -gt 0 ]]; do
    case $1 in
        -i|--inventory) inventories+=(-i "$2"); shift 2 ;;
        --db) db=$2; shift 2 ;;
        -p|--playbook) playbooks+=("$2"); shift 2 ;;
        -l|--limit) limit=(-l "$2"); shift 2 ;;
        -o|--out) out=$2; shift 2 ;;
        -e|--extra-vars) extra+=(-e "$2"); shift 2 ;;
        --prefix) prefix=$2; shift 2 ;;
        --date) date=$2; shift 2 ;;
        --wait-for-hosts) wait=$2; shift 2 ;;
        --threshold) threshold=$2; shift 2 ;;
        --alpha) alpha=$2; shift 2 ;;
        --history) history_args=$2; shift 2 ;;
        --prune-older-than) prune_older=$2; shift 2 ;;
        --keep-last) keep_last=$2; shift 2 ;;
        --alert) alert=(--alert "${alert[@]:1}"); shift ;;
        --webhook) alert=(--alert "${alert[@]:1}" --webhook "$2"); shift 2 ;;
        --site) site=$2; shift 2 ;;
        --site-url) site_url=$2; shift 2 ;;
        --site-keep) site_keep=$2; shift 2 ;;
        --github-check) github_check=true; shift ;;
        --gitlab-status) gitlab_status=true; shift ;;
        --benchrig) benchrig=$2; shift 2 ;;
        --build) build=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 1 ;;
    esac
done
[[ -n $db && ${#playbooks[@]} -gt 0 && ${#inventories[@]} -gt 0 ]] || { usage >&2; exit 1; }

if $build; then
    repo=$(cd "$(dirname "$0")/../.." && pwd)
    (cd "$repo" && cargo build --locked --release -p benchrig && ci/build-agents.sh) >&2 || exit 1
    benchrig=$repo/target/release/benchrig
fi
command -v "$benchrig" >/dev/null || { say "no benchrig at '$benchrig' (--benchrig PATH, \$BENCHRIG or --build)"; exit 1; }
mkdir -p "$out" || exit 1
br() { "$benchrig" "$@" --db "$db"; }

# The stored status of the run named $1 ("" when there is none).
status_of() { br runs 2>/dev/null | awk -v n="$1" '$2 == n { s = $NF } END { print s }'; }

read -r -a more_history <<<"$history_args"
# Of those, what `benchrig site` takes too (how changes are found; not
# which runs or metrics): the rest is history's alone.
site_history=()
for ((i = 0; i < ${#more_history[@]}; i++)); do
    case ${more_history[$i]} in
        --window=* | --max-pvalue=* | --min-change=* | --min-points=* | --max-cv=*)
            site_history+=("${more_history[$i]}") ;;
        --window | --max-pvalue | --min-change | --min-points | --max-cv)
            site_history+=("${more_history[$i]}" "${more_history[$((i + 1))]:-}"); i=$((i + 1)) ;;
    esac
done
summary=$out/summary.md
echo "# benchrig nightly $date" >"$summary"
for pb in "${playbooks[@]}"; do
    name=$prefix-$(basename "$pb" .yml)-$date
    case $(status_of "$name") in
        "") say "$name: running $pb"
            br run "$pb" "${inventories[@]}" "${limit[@]}" "${extra[@]}" --name "$name" --wait-for-hosts "$wait"; rc=$? ;;
        ok) say "$name: already complete"; rc=0 ;;
        *) say "$name: resuming what an earlier call left"
            br run --resume "$name" "${inventories[@]}" --wait-for-hosts "$wait"; rc=$? ;;
    esac
    # A night cut off (a host lost, an interrupt, a kill) gets one more try.
    if [[ $rc -eq 4 || $rc -eq 130 || $(status_of "$name") == running ]]; then
        say "$name: cut off (exit $rc); resuming once"
        br run --resume "$name" "${inventories[@]}" --wait-for-hosts "$wait"; rc=$?
    fi
    note "$rc"
    run_rc=$rc
    if [[ -z $(status_of "$name") ]]; then
        say "$name: no run was stored (exit $rc)"
        continue
    fi
    br compare "$name" --threshold "$threshold" --alpha "$alpha" --fail-on-regression --format md >"$out/$name.compare.md" 2>"$out/$name.compare.err"
    rc=$?
    # A first night has nothing to be compared with: that is no error.
    if [[ $rc -eq 1 ]] && grep -q "no automatic baseline" "$out/$name.compare.err"; then
        echo "_No baseline yet: no earlier run of $pb on the same hosts ended ok._" >"$out/$name.compare.md"
        rc=0
    fi
    cat "$out/$name.compare.err" >&2
    note "$rc"
    br history --playbook "$pb" --fail-on-regression --min-change "$threshold" "${more_history[@]}" "${alert[@]}" \
        --format md >"$out/$name.history.md"
    note $?
    br history --playbook "$pb" --min-change "$threshold" "${more_history[@]}" --format json >"$out/$name.history.json"
    br history --playbook "$pb" --min-change "$threshold" "${more_history[@]}" --format html >"$out/$name.history.html"
    br report "$name" --format junit --baseline auto --threshold "$threshold" --alpha "$alpha" -o "$out/$name.junit.xml"
    br report "$name" --format html -o "$out/$name.html"
    br report "$name" --format md -o "$out/$name.md"
    {
        echo
        echo "## $name (run: exit $run_rc)"
        echo
        echo "### Against the baseline"
        echo
        cat "$out/$name.compare.md"
        echo
        echo "### History"
        echo
        cat "$out/$name.history.md"
    } >>"$summary"
done
if [[ -n $site ]]; then
    # Before the prune: every run gets its report while it has its samples.
    br site -o "$site" --keep-last "$site_keep" --threshold "$threshold" --alpha "$alpha" --min-change "$threshold" \
        "${site_history[@]}"
    note $?
fi
if [[ $prune_older != never ]]; then
    # Last, when tonight's reports are written: tonight is never pruned.
    br prune --older-than "$prune_older" --keep-last "$keep_last" >"$out/prune.txt" || say "prune failed (exit $?): see $out/prune.txt"
    cat "$out/prune.txt" >&2
fi

# The night in a few words, by its exit code (README, "Exit codes").
outcome() {
    case $1 in
        0) echo "no regression" ;; 3) echo "a regression" ;; 2) echo "a cell failed" ;;
        4) echo "a host was unreachable" ;; 5) echo "hosts were held by another run" ;;
        1) echo "a usage or configuration error" ;; 130) echo "interrupted" ;; *) echo "exit $1" ;;
    esac
}
title="benchrig nightly $date: $(outcome "$worst")"
if $github_check; then
    api=${GITHUB_API_URL:-https://api.github.com}
    conclusion=success
    [[ $worst == 0 ]] || conclusion=failure
    # The check's summary is markdown, at most 65535 characters.
    jq -n --arg sha "${GITHUB_SHA:-}" --arg conclusion "$conclusion" --arg title "$title" --arg url "$site_url" \
        --rawfile summary "$summary" \
        '{name: "benchrig nightly", head_sha: $sha, status: "completed", conclusion: $conclusion,
          output: {title: $title, summary: ($summary | .[0:65000])}}
         + (if $url == "" then {} else {details_url: $url} end)' |
        curl -fsS -o /dev/null -X POST -H "Authorization: Bearer ${GITHUB_TOKEN:-}" \
            -H "Accept: application/vnd.github+json" --data-binary @- \
            "$api/repos/${GITHUB_REPOSITORY:-}/check-runs" ||
        { say "the GitHub check run was not posted (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_SHA?)"; note 1; }
fi
if $gitlab_status; then
    state=success
    [[ $worst == 0 ]] || state=failed
    link=()
    [[ -z $site_url ]] || link=(--data-urlencode "target_url=$site_url")
    curl -fsS -o /dev/null -X POST -H "PRIVATE-TOKEN: ${GITLAB_TOKEN:-}" \
        --data-urlencode "state=$state" --data-urlencode "name=benchrig nightly" \
        --data-urlencode "description=${title:0:255}" "${link[@]}" \
        "${CI_API_V4_URL:-}/projects/${CI_PROJECT_ID:-}/statuses/${CI_COMMIT_SHA:-}" ||
        { say "the GitLab commit status was not posted (GITLAB_TOKEN, CI_API_V4_URL, CI_PROJECT_ID, CI_COMMIT_SHA?)"; note 1; }
fi
say "reports in $out; exit $worst"
exit "$worst"
