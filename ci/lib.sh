# ci/lib.sh — what the lab's scripts (lab.sh, arm.sh, vm.sh) share; sourced,
# not run. The sourcing script defines log() and die().

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

# cached_image NOUN: print the directory of the image this recipe makes,
# under $CACHE/images/<key>, building it first if it is not complete there.
# When the mirror cannot be asked, the newest complete image, with a
# warning. Only the current image is kept: old ones are hundreds of MB.
# The sourcing script defines: image_update (refresh the mirror's package
# lists; fails when unreachable), image_key (a key of package versions and
# the recipe), image_prepare TMP (tools; what build_cleanup needs to know),
# build_rootfs ROOTFS OUTDIR, and build_cleanup (undo the build's mounts).
cached_image() {
    local noun=$1 key dir tmp t0
    mkdir -p "$CACHE/images"
    if image_update >/dev/null 2>&1 && key=$(image_key) && [[ -n $key ]]; then
        dir=$CACHE/images/$key
    else
        dir=$(ls -td "$CACHE"/images/*/ 2>/dev/null | head -n1)
        [[ -n $dir && -f $dir/complete ]] || die "cannot reach $MIRROR and no cached $noun in $CACHE/images"
        log "warning: cannot reach $MIRROR; using cached $noun $dir"
        echo "${dir%/}"; return 0
    fi
    if [[ -f $dir/complete ]]; then
        log "$noun $key is cached ($dir)"
        echo "$dir"; return 0
    fi
    tmp=$CACHE/build.$$
    image_prepare "$tmp"
    t0=$SECONDS
    rm -rf "$dir" "$tmp"
    mkdir -p "$tmp/rootfs" "$tmp/out"
    trap 'build_cleanup; rm -rf --one-file-system "$tmp"' EXIT
    build_rootfs "$tmp/rootfs" "$tmp/out"
    build_cleanup
    rm -rf --one-file-system "$tmp/rootfs"
    echo "$((SECONDS - t0))" >"$tmp/out/build-seconds"
    mv "$tmp/out" "$dir"
    date -u +%FT%TZ >"$dir/complete"
    rm -rf "$tmp"; trap - EXIT
    find "$CACHE/images" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
    log "built $noun $key in $((SECONDS - t0))s ($dir, $(du -sh "$dir" | cut -f1))"
    echo "$dir"
}
