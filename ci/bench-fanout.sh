#!/usr/bin/env bash
# Benchmark (prints figures; not a pass/fail test): fan-out to N hosts.
#
#   ci/bench-fanout.sh [N ...]        default: 3 16 64 128
#
# Builds max(N) light lab hosts with the lab's own code (ci/lab.sh with a
# host table of its own: network namespaces with sshd, no disks; the first
# host is an "old" i686 box at 12% of a core, like the lab's), then times,
# alternated round by round and reported as medians:
#   facts  deploy + facts: `benchrig facts`, `ansible -m setup`,
#          `pyinfra fact` (arch, kernel, os), `ssh host uname -a`
#   steps  10 trivial steps: a benchrig play of 10 `exec: "true"`, an Ansible
#          playbook of 10 `command: /bin/true` (pipelining, ControlPersist),
#          a pyinfra deploy of 10 `server.shell("true")`, and one bare
#          `ssh host true` to every host at once
# each with OpenSSH's default key exchange and with curve25519-sha256
# (paramiko, under pyinfra, has no post-quantum kex: its rows are the same
# run under both). Also benchrig's peak RSS and CPU seconds per host (its
# own and its ssh processes'). Hosts see both ends of every connection
# share this machine's cores, so handshakes cost double what a real lab pays.
#
# Env: ROUNDS (3), TOOLS ("benchrig ansible pyinfra ssh"), KEX ("default
# curve25519"), ANSIBLE_MAX_N (64: ansible-core takes minutes beyond),
# BENCHRIG (a benchrig binary; default: build target/release/benchrig),
# VENV (/var/tmp/benchrig-venv, where .ci/run installs ansible-core and
# pyinfra). Needs root, the agents built (ci/build-agents.sh) and the main
# lab down (the hosts use its bridge and names); tears its hosts down on
# every exit.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib.sh
source ci/lib.sh
log() { printf '%s\n' "$*" >&2; }

SIZES=("$@")
((${#SIZES[@]})) || SIZES=(3 16 64 128)
ROUNDS=${ROUNDS:-3}
read -r -a TOOLS <<<"${TOOLS:-benchrig ansible pyinfra ssh}"
read -r -a KEXES <<<"${KEX:-default curve25519}"
ANSIBLE_MAX_N=${ANSIBLE_MAX_N:-64}
VENV=${VENV:-/var/tmp/benchrig-venv}
MAX=$(printf '%s\n' "${SIZES[@]}" | sort -n | tail -n1)
((MAX <= 500)) || { log "bench-fanout: at most 500 hosts"; exit 2; }

export BENCHRIG_LAB_DIR=/var/tmp/benchrig-fanout
LAB=$BENCHRIG_LAB_DIR
if ip link show brlab0 >/dev/null 2>&1 && [[ ! -e $LAB ]]; then
    log "bench-fanout: the lab (brlab0) is up; its hosts share the bridge and names: run ci/lab.sh down first"
    exit 1
fi

if [[ -z ${BENCHRIG:-} ]]; then
    cargo build --release --locked -q -p benchrig
    BENCHRIG=$PWD/target/release/benchrig
fi
work=$(mktemp -d /var/tmp/benchrig-fanout-work.XXXXXX)
export BENCHRIG_LAB_HOSTS=$work/hosts.table
# Past 240 hosts the addresses leave 10.77.0.0/24: the bench's bridge is a /16.
export BENCHRIG_LAB_NET_PREFIX=16
cleanup() {
    ci/lab.sh down >/dev/null || log "bench-fanout: ci/lab.sh down failed"
    rm -rf "$work"
}
trap cleanup EXIT

# ------------------------------------------------------------------ hosts
host() { printf 'f%03d' "$1"; }
ip_of() { echo "10.77.$(($1 / 200)).$((10 + $1 % 200))"; }
{
    echo "# name ip arch cpu_quota mem size disks rot rbps wbps riops wiops"
    echo "$(host 1) $(ip_of 1) i686 12000 512M - - 0 0 0 0 0"
    for ((i = 2; i <= MAX; i++)); do echo "$(host "$i") $(ip_of "$i") native - - - - 0 0 0 0 0"; done
} >"$BENCHRIG_LAB_HOSTS"
log "bench-fanout: $MAX hosts up"
ci/lab.sh up >/dev/null 2>"$work/lab-up.log" || { tail -n 20 "$work/lab-up.log" >&2; exit 1; }

# inventory N KEX: an Ansible-style YAML inventory of the first N hosts, read
# by benchrig and ansible-core alike.
inventory() {
    local n=$1 kex=$2 f=$work/inv-$1-$2.yml args="-o UserKnownHostsFile=$LAB/known_hosts" i
    [[ $kex == curve25519 ]] && args+=" -o KexAlgorithms=curve25519-sha256"
    {
        echo "all:"
        echo "  vars:"
        echo "    ansible_user: root"
        echo "    ansible_ssh_private_key_file: $LAB/id_ed25519"
        echo "    ansible_ssh_common_args: \"$args\""
        echo "    ansible_python_interpreter: /usr/bin/python3"
        echo "  hosts:"
        for ((i = 1; i <= n; i++)); do printf '    %s: {ansible_host: %s}\n' "$(host "$i")" "$(ip_of "$i")"; done
    } >"$f"
    echo "$f"
}

# pyinfra's inventory of the first N hosts (paramiko: curve25519 whatever KEX).
pyinfra_inventory() {
    local n=$1 f=$work/pyinv-$1.py i
    {
        echo "hosts = ["
        for ((i = 1; i <= n; i++)); do
            printf '    ("%s", {"ssh_hostname": "%s", "ssh_user": "root", "ssh_key": "%s", "ssh_known_hosts_file": "%s", "ssh_strict_host_key_checking": "yes"}),\n' \
                "$(host "$i")" "$(ip_of "$i")" "$LAB/id_ed25519" "$LAB/known_hosts"
        done
        echo "]"
    } >"$f"
    echo "$f"
}

cat >"$work/steps.yml" <<'EOF'
- name: ten trivial steps
  hosts: all
  benchmark:
EOF
# A plain string, as a user writes it: it runs without a shell (nothing in it needs one).
for i in $(seq 10); do printf '    - name: "true %s"\n      exec: {command: "true"}\n' "$i" >>"$work/steps.yml"; done
{
    echo "- hosts: all"
    echo "  gather_facts: false"
    echo "  tasks:"
    for i in $(seq 10); do printf '    - command: /bin/true\n'; done
} >"$work/ansible-steps.yml"
{
    echo "from pyinfra.operations import server"
    echo "for i in range(10):"
    echo "    server.shell(name=f\"true {i}\", commands=[\"true\"])"
} >"$work/pyinfra-steps.py"

# ------------------------------------------------------------------ runners
# Each prints "WALL_S RSS_KB CPU_S" (GNU time over the tool and its children)
# and fails when the tool did.
timed() {
    local out=$work/time.out
    if ! /usr/bin/time -o "$out" -f '%e %M %U %S' "$@" >"$work/last.log" 2>&1; then
        log "bench-fanout: failed: $*"
        tail -n 20 "$work/last.log" >&2
        return 1
    fi
    awk '{printf "%s %s %.2f\n", $1, $2, $3 + $4}' "$out"
}

export ANSIBLE_CONFIG=$work/ansible.cfg
ansible_cfg() {   # ansible_cfg N CTL: forks N, a fresh ControlPath dir: no master outlives its run
    local n=$1 ctl=$2
    cat >"$ANSIBLE_CONFIG" <<EOF
[defaults]
forks = $n
host_key_checking = True
gathering = explicit
stdout_callback = default
[ssh_connection]
pipelining = True
control_path_dir = $ctl
ssh_args = -o ControlMaster=auto -o ControlPersist=60s
EOF
}

# run TOOL WORK N KEX: one timed run.
run() {
    local tool=$1 what=$2 n=$3 kex=$4 inv ctl rc=0 r
    inv=$(inventory "$n" "$kex")
    case $tool in
        benchrig)
            export BENCHRIG_DB=$work/bench.db
            if [[ $what == facts ]]; then
                timed "$BENCHRIG" -q facts -i "$inv"
            else
                timed "$BENCHRIG" -q run "$work/steps.yml" -i "$inv"
            fi ;;
        ansible)
            ctl=$(mktemp -d "$work/ctl.XXXXXX")
            ansible_cfg "$n" "$ctl"
            if [[ $what == facts ]]; then
                r=$(timed "$VENV/bin/ansible" all -i "$inv" -m setup) || rc=1
            else
                r=$(timed "$VENV/bin/ansible-playbook" -i "$inv" "$work/ansible-steps.yml") || rc=1
            fi
            pkill -f "$ctl" 2>/dev/null || true
            rm -rf "$ctl"
            echo "$r"
            return "$rc" ;;
        pyinfra)
            inv=$(pyinfra_inventory "$n")
            if [[ $what == facts ]]; then
                timed "$VENV/bin/pyinfra" -y --parallel "$n" "$inv" fact server.Arch server.KernelVersion server.LinuxDistribution
            else
                timed "$VENV/bin/pyinfra" -y --parallel "$n" "$inv" "$work/pyinfra-steps.py"
            fi ;;
        ssh)
            local cmd=true
            [[ $what == facts ]] && cmd="uname -a"
            local opts=(-n -F /dev/null -i "$LAB/id_ed25519" -o "UserKnownHostsFile=$LAB/known_hosts" -o BatchMode=yes -l root)
            [[ $kex == curve25519 ]] && opts+=(-o KexAlgorithms=curve25519-sha256)
            printf '%s\n' "${opts[@]}" >"$work/ssh.opts"
            for ((i = 1; i <= n; i++)); do ip_of "$i"; done >"$work/ips-$n"
            cat >"$work/fanout.sh" <<EOF
#!/bin/bash
mapfile -t o <"$work/ssh.opts"
while read -r ip; do ssh "\${o[@]}" "\$ip" $cmd >/dev/null & done <"$work/ips-$n"
rc=0; for j in \$(jobs -p); do wait "\$j" || rc=1; done; exit \$rc
EOF
            timed bash "$work/fanout.sh" ;;
    esac
}

applies() {   # applies TOOL N KEX: is this combination run?
    local tool=$1 n=$2 kex=$3
    [[ $tool == ansible ]] && ((n > ANSIBLE_MAX_N)) && return 1
    # ansible-core takes minutes at 64 hosts: OpenSSH's default kex only.
    [[ $tool == ansible && $kex != "${KEXES[0]}" ]] && return 1
    # paramiko has no sntrup761: pyinfra runs once, filed under curve25519.
    [[ $tool == pyinfra && $kex != curve25519 ]] && return 1
    return 0
}

# ------------------------------------------------------------------ rounds
# Cold deploy once per size: the agents removed from every host first.
results=$work/results   # lines: WORK N TOOL KEX WALL RSS CPU
: >"$results"
for n in "${SIZES[@]}"; do
    for ((i = 1; i <= n; i++)); do rm -rf "$LAB/hosts/$(host "$i")/home/.cache/benchrig"; done
    r=$(run benchrig facts "$n" "${KEXES[0]}") && echo "cold $n benchrig ${KEXES[0]} $r" >>"$results"
done
for ((round = 1; round <= ROUNDS; round++)); do
    log "bench-fanout: round $round/$ROUNDS"
    for n in "${SIZES[@]}"; do
        for what in facts steps; do
            for kex in "${KEXES[@]}"; do
                for tool in "${TOOLS[@]}"; do
                    applies "$tool" "$n" "$kex" || continue
                    r=$(run "$tool" "$what" "$n" "$kex") || { echo "$what $n $tool $kex fail - -" >>"$results"; continue; }
                    echo "$what $n $tool $kex $r" >>"$results"
                done
            done
        done
    done
done

# ------------------------------------------------------------------ table
echo
echo "fan-out: median wall seconds of $ROUNDS alternated rounds (min–max); $(nproc) cores, $(uname -r)"
echo "f001 is i686 at 12% of a core; the others unlimited; every sshd on this machine"
echo "benchrig: $BENCHRIG ($("$BENCHRIG" --version)); $(ssh -V 2>&1); $("$VENV/bin/ansible" --version | head -n1); pyinfra $("$VENV/bin/pyinfra" --version 2>&1 | sed 's/^pyinfra: //')"
python3 - "$results" "${SIZES[*]}" "${KEXES[*]}" <<'EOF'
import statistics, sys
from collections import defaultdict
path, sizes, kexes = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3].split()
runs = defaultdict(list)
for line in open(path):
    what, n, tool, kex, wall, rss, cpu = line.split()
    runs[(what, int(n), tool, kex)].append(None if wall == "fail" else (float(wall), int(rss), float(cpu)))

def cell(what, n, tool, kex):
    got = runs.get((what, n, tool, kex))
    if not got:
        return "—"
    ok = [g[0] for g in got if g]
    if not ok:
        return "failed"
    med = statistics.median(ok)
    text = f"{med:.2f}" if len(ok) == 1 else f"{med:.2f} ({min(ok):.2f}–{max(ok):.2f})"
    return text + ("" if len(ok) == len(got) else f", {len(got) - len(ok)} failed")

def med(what, n, tool, kex):
    ok = [g[0] for g in runs.get((what, n, tool, kex), []) if g]
    return statistics.median(ok) if ok else None

def times(x):
    return f"{x:.1f}×" if x else "—"

tools = [("benchrig", "benchrig"), ("ansible", "ansible-core"), ("pyinfra", "pyinfra"), ("ssh", "bare ssh")]
for what, title in [("facts", "deploy + facts"), ("steps", "10 trivial steps")]:
    print(f"\n{title}")
    print("| hosts | kex | " + " | ".join(t[1] for t in tools) + " | pyinfra ÷ benchrig | ansible ÷ benchrig | benchrig ÷ bare ssh |")
    print("|---|---|" + "---|" * (len(tools) + 3))
    for n in sizes:
        for kex in kexes:
            k = lambda t: "curve25519" if t == "pyinfra" else kex
            row = [cell(what, n, t, k(t)) for t, _ in tools]
            b, p, a, s = (med(what, n, t, k(t)) for t in ("benchrig", "pyinfra", "ansible", "ssh"))
            ratios = [times(p / b) if b and p else "—", times(a / b) if b and a else "—", times(b / s) if b and s else "—"]
            print(f"| {n} | {kex} | " + " | ".join(row + ratios) + " |")

print("\nbenchrig's cost (median over its runs; CPU of benchrig and its ssh processes)")
print("| hosts | work | peak RSS | CPU s per host |")
print("|---|---|---|---|")
for n in sizes:
    for what in ["cold", "facts", "steps"]:
        got = [g for k, v in runs.items() if k[0] == what and k[1] == n and k[2] == "benchrig" for g in v if g]
        if got:
            rss = statistics.median(g[1] for g in got) / 1024
            cpu = statistics.median(g[2] for g in got) / n
            label = "deploy (agents absent) + facts" if what == "cold" else ("facts" if what == "facts" else "10 steps")
            print(f"| {n} | {label} | {rss:.0f} MB | {cpu:.3f} |")
EOF
