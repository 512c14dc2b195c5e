#!/usr/bin/env bash
# A real PostgreSQL server for the store's tests (Debian's packaged cluster).
#   ci/postgres.sh up    start it if it is not running, make the role and
#                        database the tests use, print their URL
#   ci/postgres.sh down  stop it again if `up` started it
# Idempotent; needs root and the postgresql package (.ci/run installs it).
set -euo pipefail
marker=/var/tmp/benchrig-postgres.started
db=benchrig_test

cluster() { pg_lsclusters -h | awk 'NR == 1 { print $1, $2, $4 }'; }

case ${1:-} in
up)
    read -r ver name status < <(cluster) || true
    if [[ -z ${ver:-} ]]; then
        ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
        name=main
        pg_createcluster "$ver" "$name" >/dev/null
        status=down
    fi
    if [[ $status != online ]]; then
        pg_ctlcluster "$ver" "$name" start
        touch "$marker"
    fi
    # Peer authentication over the socket: root connects as role root.
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname = 'root'\"" | grep -q 1 ||
        su postgres -c "psql -qc 'CREATE ROLE root SUPERUSER LOGIN'"
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\"" | grep -q 1 ||
        su postgres -c "createdb -O root $db"
    echo "postgresql://root@%2Fvar%2Frun%2Fpostgresql/$db"
    ;;
down)
    if [[ -e $marker ]]; then
        read -r ver name _ < <(cluster)
        pg_ctlcluster "$ver" "$name" stop
        rm -f "$marker"
    fi
    ;;
*)
    echo "usage: ci/postgres.sh up|down" >&2
    exit 2
    ;;
esac
