#!/usr/bin/env bash
# A real PostgreSQL server for the store's tests (Debian's packaged cluster).
#   ci/postgres.sh up    start it if it is not running, make the role and
#                        database the tests use, print their URL; serve TLS
#                        on localhost too (below)
#   ci/postgres.sh down  stop it again if `up` started it
# Idempotent; needs root, the postgresql package (.ci/run installs it) and
# openssl.
#
# The printed URL is the Unix socket, as root with peer authentication, no
# TLS (libpq never does TLS on a socket). For the TLS tests (store::postgres)
# the cluster also serves TLS over TCP on localhost, with throwaway
# certificates made here, in $tls (root's, kept between runs):
#   ca.crt        the CA that signed server.crt and client.crt
#   wrong-ca.crt  a CA that signed nothing the server shows
#   server.crt    CN and SANs localhost, 127.0.0.1, ::1 (key: postgres's, 0600)
#   client.crt/.key  CN benchrig_cert, for certificate authentication
#   tcp.url       postgresql://benchrig_tls:<password>@localhost:<port>/<db>
#                 (0600): a role that may connect with TLS or without;
#                 role benchrig_tls_only (same password) only with TLS
#                 (pg_hba `hostnossl … reject`), role benchrig_cert only with
#                 TLS and a client certificate signed by ca.crt.
set -euo pipefail
marker=/var/tmp/benchrig-postgres.started
tls=/var/tmp/benchrig-pg
db=benchrig_test

cluster() { pg_lsclusters -h | awk 'NR == 1 { print $1, $2, $3, $4 }'; }

# One self-signed CA (name $1) in $tls/$1.crt and .key.
make_ca() {
    openssl req -x509 -new -newkey rsa:2048 -nodes -days 3650 -subj "/CN=benchrig test $1" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$tls/$1.key" -out "$tls/$1.crt" 2>/dev/null
}

# A certificate (file $1, subject CN $2, extensions $3) signed by ca.crt.
make_cert() {
    openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$tls/$1.key" -out "$tls/$1.csr" 2>/dev/null
    printf '%s\n' "$3" >"$tls/$1.ext"
    openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
        -days 3650 -extfile "$tls/$1.ext" -out "$tls/$1.crt" 2>/dev/null
    rm -f "$tls/$1.csr" "$tls/$1.ext"
}

# The certificates, made once; all of them again if one is missing.
certificates() {
    if [[ -L $tls || (-e $tls && $(stat -c %u "$tls") != 0) ]]; then
        echo "$tls is not root's own directory: refusing to put keys there" >&2
        exit 1
    fi
    mkdir -p "$tls"
    chmod 0755 "$tls"
    local f missing=
    for f in ca.crt wrong-ca.crt server.crt server.key client.crt client.key; do
        [[ -s $tls/$f ]] || missing=$f
    done
    [[ -n $missing ]] || return 0
    (
        umask 077
        make_ca ca
        make_ca wrong-ca
        make_cert server localhost "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
        make_cert client benchrig_cert "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
        # Nothing is signed again: the CAs' keys go.
        rm -f "$tls/ca.key" "$tls/wrong-ca.key" "$tls/ca.srl"
    )
    chmod 0644 "$tls/ca.crt" "$tls/wrong-ca.crt" "$tls/server.crt" "$tls/client.crt"
    chown postgres: "$tls/server.key"
}

# The server's TLS files, and pg_hba rules for the TLS-only roles ahead of
# the others (the first line that matches decides).
configure() {
    local ver=$1 name=$2 conf=/etc/postgresql/$1/$2
    cat >"$conf/conf.d/benchrig-tls.conf" <<EOF
# ci/postgres.sh: TLS with its throwaway certificates
ssl = on
ssl_cert_file = '$tls/server.crt'
ssl_key_file = '$tls/server.key'
ssl_ca_file = '$tls/ca.crt'
EOF
    local hba=$conf/pg_hba.conf rules
    rules=$(
        cat <<EOF
# benchrig-tls begin (ci/postgres.sh)
hostnossl all benchrig_tls_only 127.0.0.1/32 reject
hostnossl all benchrig_tls_only ::1/128      reject
hostnossl all benchrig_cert     127.0.0.1/32 reject
hostnossl all benchrig_cert     ::1/128      reject
hostssl   all benchrig_cert     127.0.0.1/32 cert
hostssl   all benchrig_cert     ::1/128      cert
# benchrig-tls end
EOF
    )
    { printf '%s\n' "$rules"; sed '/^# benchrig-tls begin/,/^# benchrig-tls end/d' "$hba"; } >"$hba.new"
    chown --reference="$hba" "$hba.new"
    chmod --reference="$hba" "$hba.new"
    mv "$hba.new" "$hba"
}

sql() { su postgres -c "psql -qtA -v ON_ERROR_STOP=1" >/dev/null; }

case ${1:-} in
up)
    read -r ver name port status < <(cluster) || true
    if [[ -z ${ver:-} ]]; then
        ver=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
        name=main
        pg_createcluster "$ver" "$name" >/dev/null
        read -r ver name port status < <(cluster)
    fi
    certificates
    configure "$ver" "$name"
    if [[ $status != online ]]; then
        pg_ctlcluster "$ver" "$name" start
        touch "$marker"
    else
        # TLS files and pg_hba.conf are read again on a reload.
        pg_ctlcluster "$ver" "$name" reload
    fi
    # Peer authentication over the socket: root connects as role root.
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname = 'root'\"" | grep -q 1 ||
        su postgres -c "psql -qc 'CREATE ROLE root SUPERUSER LOGIN'"
    su postgres -c "psql -qtAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\"" | grep -q 1 ||
        su postgres -c "createdb -O root $db"
    # The TLS tests' roles; the password on stdin, never in a command line.
    url=$tls/tcp.url
    if [[ -s $url ]]; then
        password=$(sed -E 's|^postgresql://[^:]*:([^@]*)@.*|\1|' "$url")
    else
        password=$(openssl rand -hex 16)
    fi
    for role in benchrig_tls benchrig_tls_only benchrig_cert; do
        sql <<EOF
DO \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$role') THEN
        CREATE ROLE $role LOGIN;
    END IF;
END \$\$;
ALTER ROLE $role PASSWORD '$password';
EOF
    done
    (
        umask 077
        echo "postgresql://benchrig_tls:$password@localhost:$port/$db" >"$url.new"
    )
    mv "$url.new" "$url"
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
