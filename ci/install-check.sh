#!/usr/bin/env bash
# The inside of ci/install-test.sh: run in a fresh minimal Debian 12 root
# (chrooted, no network), as root, with the artifact in /tmp.
#   install-check.sh tarball FILE   unpack into /opt, run the quickstart
#   install-check.sh deb FILE       apt-get install, run the quickstart, purge
# Prints the seconds from "install" to the quickstart's table.
set -euo pipefail
die() { echo "install-check: $*" >&2; exit 1; }

# A machine without build tools: the artifact must be the whole install.
for t in cc gcc clang ld make cargo rustc; do
    ! command -v "$t" >/dev/null || die "the root has $t: not a machine without build tools"
done

# AGENT_TRIPLES: every agent the artifact must carry (install-test.sh
# copies lib.sh beside this script).
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# agents_run DIR: every agent build is in DIR/<triple>/, and those this
# x86_64 machine runs natively start (`--version`); the ARM ones are
# checked to be ARM executables (byte 18 of an ELF header: its machine).
agents_run() {
    local dir=$1 t f machine
    for t in "${AGENT_TRIPLES[@]}"; do
        f=$dir/$t/benchrig-agent
        [[ -x $f ]] || die "no agent for $t in $dir"
        case $t in
            x86_64-* | i?86-*) "$f" --version >/dev/null || die "the $t agent does not run" ;;
            aarch64-*) machine=b7 ;;&
            arm*) machine=28 ;;&
            a*)
                [[ $(od -An -tx1 -j18 -N1 "$f" | tr -d ' ') == "$machine" ]] || die "the $t agent is not an ARM executable"
                ;;
        esac
    done
    echo "agents: ${AGENT_TRIPLES[*]}"
}

start=$(date +%s.%N)
# since_start WHAT: the seconds since "install" began.
since_start() { awk -v s="$start" -v e="$(date +%s.%N)" -v w="$1" 'BEGIN { printf "%s: install to first table: %.1f s\n", w, e - s }'; }

# quickstart BENCHRIG PLAYBOOK OK_FS...: run it in /root; check its table has
# a throughput over 3 repetitions for both steps at both block sizes on each
# of OK_FS, and that every other filesystem of the embedded localhost is
# "unsupported" for its missing mkfs (not a failure).
quickstart() {
    local bin=$1 playbook=$2 fs bs step
    shift 2
    cd /root
    "$bin" run "$playbook" | tee /tmp/quickstart.out
    for fs in ext4 xfs btrfs; do
        if [[ " $* " == *" $fs "* ]]; then
            for bs in 4k 1M; do
                for step in write "cold read"; do
                    grep -Eq "^localhost +fs=$fs bs=$bs +$step +throughput +3 +[0-9.]+ +[0-9.]+ +MB/s +ok" /tmp/quickstart.out ||
                        die "the quickstart's table has no throughput of $step for fs=$fs bs=$bs"
                done
            done
        else
            grep -q "fs=$fs .*unsupported: mkfs.$fs is not installed on localhost" /tmp/quickstart.out ||
                die "the quickstart's table does not say mkfs.$fs is missing"
        fi
    done
}

kind=$1 file=$2
case $kind in
    tarball)
        tar -C /opt -xzf "$file"
        bin=$(echo /opt/benchrig-*/benchrig)
        "$bin" --version
        agents_run "$(dirname "$bin")/agents"
        # No ssh here: the quickstart on this machine needs none.
        ! command -v ssh >/dev/null || die "the root has ssh; the tarball test wants a root without it"
        # Without the .deb's Recommends, only ext4 (e2fsprogs is in every Debian).
        quickstart "$bin" "$(dirname "$bin")/playbooks/quickstart.yml" ext4
        since_start tarball
        ;;
    deb)
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq "$file" >/tmp/apt.log 2>&1 || {
            cat /tmp/apt.log >&2
            die "apt-get could not install the .deb offline: a dependency missing from ci/install-test.sh's DEB_DEPENDS?"
        }
        benchrig --version
        agents_run /usr/lib/benchrig/agents
        for f in /usr/share/man/man1/benchrig-run.1.gz /usr/share/bash-completion/completions/benchrig \
                 /usr/share/zsh/vendor-completions/_benchrig /usr/share/fish/vendor_completions.d/benchrig.fish \
                 /usr/share/benchrig/playbook.schema.json; do
            [[ -s $f ]] || die "$f is missing or empty"
        done
        quickstart benchrig /usr/share/benchrig/playbooks/quickstart.yml ext4 xfs btrfs
        since_start deb
        # A user without root: scratch is a directory in the working
        # directory (profile `existing`, no mkfs), the agent in their cache.
        useradd -m tester
        runuser -u tester -- sh -c 'cd && benchrig run /usr/share/benchrig/playbooks/quickstart.yml' | tee /tmp/user.out
        for bs in 4k 1M; do
            grep -Eq "^localhost +fs=existing bs=$bs +write +throughput +3 +[0-9.]+ +[0-9.]+ +MB/s +ok" /tmp/user.out ||
                die "not as root, the quickstart's table has no write throughput for bs=$bs"
        done

        # Purge: nothing the package installed may be left, nor anything named
        # benchrig but the users' own: the results (~/benchrig.db), the
        # agent's cache with root's scratch image (~/.cache/benchrig, XDG's
        # cache) and the other user's scratch directory.
        dpkg-query -L benchrig >/tmp/files
        apt-get purge -y -qq benchrig >/tmp/apt.log 2>&1 || { cat /tmp/apt.log >&2; die "apt-get purge failed"; }
        ! dpkg-query -W -f='${Status}\n' benchrig 2>/dev/null | grep -q installed || die "benchrig is still installed"
        while read -r f; do
            [[ ! -f $f && ! -L $f ]] || die "left after purge: $f"
        done </tmp/files
        left=$(find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /tmp \) -prune -o -name '*benchrig*' -print |
            grep -v -x -E -e '/(root|home/tester)/benchrig\.db' -e '/(root|home/tester)/\.cache/benchrig(/.*)?' \
                -e '/home/tester/benchrig-scratch(/.*)?' || true)
        [[ -z $left ]] || die "left after purge: $left"
        echo "deb: purged, nothing left"
        ;;
    *) die "usage: install-check.sh tarball|deb FILE" ;;
esac
