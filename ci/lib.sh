# ci/lib.sh — what the lab's scripts (lab.sh, arm.sh) share; sourced, not run.
# The sourcing script defines log().

# kill_all WHAT CMD [ARGS]: kill -9 every pid CMD prints (never this shell)
# until it prints none, appending them to KILLED; 1 if some survive 10 s.
# When the last process of a lab host is gone, its mount namespace goes too.
KILLED=()
kill_all() {
    local what=$1 pids try
    shift
    for ((try = 0; try < 100; try++)); do
        mapfile -t pids < <("$@" | sort -un | grep -vx "$$")
        ((${#pids[@]})) || return 0
        KILLED+=("${pids[@]}")
        kill -9 "${pids[@]}" 2>/dev/null || true
        sleep 0.1
    done
    log "processes of $what survived kill -9: ${pids[*]}"
    return 1
}

# The killed are zombies until their parent (init here, which reaps lazily,
# ~1 s) collects them. They hold no namespace, mount or loop device any more,
# but wait up to 5 s so that `pgrep sshd` right after us is clean.
wait_reaped() {
    local try pid alive
    for ((try = 0; try < 50; try++)); do
        alive=0
        for pid in "${KILLED[@]}"; do [[ -e /proc/$pid ]] && { alive=1; break; }; done
        ((alive)) || return 0
        sleep 0.1
    done
}
