#!/usr/bin/env bash
# Build the release artifacts from this tree into dist/ (or --out DIR):
#   benchrig-<version>-x86_64-linux.tar.gz  a static benchrig, the agents,
#       playbooks, example inventories, man pages, completions, README, LICENSE
#   benchrig_<version>_amd64.deb            the same, in Debian's places
#   SHA256SUMS                              over both
# The orchestrator is built for x86_64-unknown-linux-musl (static: it runs on
# any x86_64 Linux; SQLite is bundled, TLS is rustls), so C code in it (SQLite,
# ring) needs musl-gcc (Debian's musl-tools; installed here when missing).
# The .deb is packed with dpkg-deb from a tree this script lays out: Debian's
# own tool, no cargo-deb to build first (ARCHITECTURE.md, "Choices worth knowing").
# Refuses a tree with uncommitted changes (the artifacts name the commit)
# unless --allow-dirty, which marks the commit "-dirty". Honours
# CARGO_TARGET_DIR. The same tree builds the same bytes (every timestamp is the
# commit's; checked: two builds, equal SHA256SUMS).
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "ci/release.sh: $*" >&2; exit 1; }

out=dist
allow_dirty=false
while (($#)); do
    case $1 in
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --allow-dirty) allow_dirty=true; shift ;;
        -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (usage: ci/release.sh [--out DIR] [--allow-dirty])" ;;
    esac
done

commit=$(git rev-parse --short=12 HEAD)
if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
    $allow_dirty || die "the tree has uncommitted changes; commit them, or pass --allow-dirty"
    commit+=-dirty
    # wire/build.rs takes it from here; otherwise from git, as for any build
    # (setting it always would rebuild every agent that was built without).
    export BENCHRIG_COMMIT=$commit
fi
# Every file in the artifacts gets the commit's time (tar, gzip, dpkg-deb read it).
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct HEAD)
export SOURCE_DATE_EPOCH
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ -n $version ]] || die "no version in Cargo.toml's [workspace.package]"
target=x86_64-unknown-linux-musl
# shellcheck source=lib.sh
source ci/lib.sh
triples=("${AGENT_TRIPLES[@]}")
build=${CARGO_TARGET_DIR:-target}

if ! command -v musl-gcc >/dev/null; then
    echo "installing musl-tools (musl-gcc builds the C parts of a static benchrig)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends musl-tools >/dev/null
fi
ci/build-agents.sh
CC_x86_64_unknown_linux_musl=musl-gcc cargo build --locked -p benchrig --profile dist --target "$target"
bin=$build/$target/dist/benchrig
if readelf -lW "$bin" | grep -q INTERP; then
    die "$bin is dynamically linked"
fi
"$bin" --version | grep -qF "(commit $commit)" || die "$bin --version does not name commit $commit"

work=$(mktemp -d /tmp/benchrig-release.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
out=$(realpath "$out")

# The pages and completions come from the binary being shipped.
"$bin" man --dir "$work/man1"
for shell in bash zsh fish; do "$bin" completions "$shell" >"$work/completion.$shell"; done
"$bin" schema playbook >"$work/playbook.schema.json"

# lay_out ROOT BIN AGENTS PLAYBOOKS EXAMPLES MAN DOC BASH ZSH FISH: copy the
# shipped files to where one layout wants them (paths under ROOT).
lay_out() {
    local root=$1
    install -D -m 0755 "$bin" "$root/$2"
    local t
    for t in "${triples[@]}"; do
        install -D -m 0755 "$build/$t/agent/benchrig-agent" "$root/$3/$t/benchrig-agent"
    done
    install -d "$root/$4" "$root/$5" "$root/$6" "$root/$7"
    install -m 0644 playbooks/*.yml "$root/$4/"
    install -m 0644 inventories/lab.example.yml inventories/lab.example.ini "$root/$5/"
    install -m 0644 "$work"/man1/*.1 "$root/$6/"
    # Beside the playbooks, for editors' `# yaml-language-server: $schema=…`.
    install -m 0644 "$work/playbook.schema.json" "$root/$4/../playbook.schema.json"
    install -D -m 0644 "$work/completion.bash" "$root/$8"
    install -D -m 0644 "$work/completion.zsh" "$root/$9"
    install -D -m 0644 "$work/completion.fish" "$root/${10}"
}

# The tarball: everything under one directory, agents beside the binary
# (where benchrig looks first).
name=benchrig-$version-x86_64-linux
tree=$work/$name
lay_out "$tree" benchrig agents playbooks inventories man/man1 . \
    completions/benchrig.bash completions/_benchrig completions/benchrig.fish
install -m 0644 README.md LICENSE CHANGELOG.md "$tree/"
tarball=$out/$name.tar.gz
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$work" -cf - "$name" | gzip -9n >"$tarball"

# The .deb: Debian's places (Debian policy 10.1, 12.1; bash-completion's,
# zsh's and fish's vendor directories).
deb_root=$work/deb
lay_out "$deb_root" usr/bin/benchrig usr/lib/benchrig/agents usr/share/benchrig/playbooks \
    usr/share/benchrig/inventories usr/share/man/man1 usr/share/doc/benchrig \
    usr/share/bash-completion/completions/benchrig usr/share/zsh/vendor-completions/_benchrig \
    usr/share/fish/vendor_completions.d/benchrig.fish
gzip -9n "$deb_root"/usr/share/man/man1/*.1
gzip -9nc README.md >"$deb_root/usr/share/doc/benchrig/README.md.gz"
cat >"$deb_root/usr/share/doc/benchrig/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: benchrig

Files: *
Copyright: $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y) The benchrig developers
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
EOF
# What lintian (ci/install-test.sh runs it) would flag but is meant.
install -D -m 0644 /dev/stdin "$deb_root/usr/share/lintian/overrides/benchrig" <<'EOF'
# The agents for other architectures are data benchrig copies to hosts of
# those architectures, not programs for this one.
benchrig: binary-from-other-architecture [usr/lib/benchrig/agents/*]
# Static on purpose: the agents run on any Linux host, benchrig on any x86_64 Linux.
benchrig: statically-linked-binary [usr/lib/benchrig/agents/*]
# Static-pie executables, which lintian takes for shared libraries.
benchrig: shared-library-lacks-prerequisites [usr/bin/benchrig]
benchrig: shared-library-lacks-prerequisites [usr/lib/benchrig/agents/*]
EOF
# The package's maintainer: the packager's, as dch takes it (DEBFULLNAME,
# DEBEMAIL), else the author of the commit it is built from.
maintainer="${DEBFULLNAME:-$(git log -1 --format=%an HEAD)} <${DEBEMAIL:-$(git log -1 --format=%ae HEAD)}>"
# Debian's changelog for this binary package: one entry, the commit's.
{
    printf 'benchrig (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n' "$version" "$commit"
    printf ' -- %s  %s\n' "$maintainer" "$(date -R -u -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$deb_root/usr/share/doc/benchrig/changelog.gz"
installed_kib=$(du -sk --apparent-size "$deb_root" | cut -f1)
install -d "$deb_root/DEBIAN"
# mkfs tools and fio: what the shipped playbooks use on this machine when it
# is its own host (no -i); openssh-client reaches every other host.
cat >"$deb_root/DEBIAN/control" <<EOF
Package: benchrig
Version: $version
Architecture: amd64
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: openssh-client
Recommends: e2fsprogs, xfsprogs, btrfs-progs
Suggests: fio, sysstat
Section: admin
Priority: optional
Description: storage and filesystem experiments across a lab of Linux hosts
 benchrig runs storage and filesystem benchmarks from Ansible-style playbooks
 and inventories on many Linux hosts at once (old 32-bit boxes included): it
 pushes a static agent over SSH, formats only the scratch devices the
 inventory allows, runs the experiment matrix and stores every sample with
 the configuration that produced it, in SQLite or PostgreSQL.
 .
 Built from commit $commit.
EOF
# Purging the package forgets the filesystems benchrig made on this machine
# (the agent's ledger, when this machine was its own host as root): without
# it a later format there asks for `wipe`, the safe direction.
cat >"$deb_root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
    rm -rf /var/lib/benchrig
fi
EOF
chmod 0755 "$deb_root/DEBIAN/postrm"
(cd "$deb_root" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
deb=$out/benchrig_${version}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$deb_root" "$deb" >/dev/null

(cd "$out" && sha256sum "$(basename "$tarball")" "$(basename "$deb")" >SHA256SUMS)
for f in "$tarball" "$deb"; do
    printf '%-48s %9d bytes\n' "$(basename "$f")" "$(stat -c %s "$f")"
done
echo "commit $commit; checksums in $out/SHA256SUMS"
