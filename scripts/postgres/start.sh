#!/usr/bin/env bash
# Starts a private PostgreSQL server for the tests (Debian's postgresql package; installed by
# scripts/test.sh): a fresh cluster with trust authentication on 127.0.0.1:$PG_PORT, data in
# /tmp, run as the `postgres` user (the server refuses root). Prints the connection URL.
# TLS is on (the sink's sslmode tests): the CA, the server's certificate (named `localhost` only,
# so verify-full to 127.0.0.1 fails while verify-ca passes), a client certificate for role
# weir_cert (which may log in only over TLS with it: `cert` authentication) and an unrelated CA
# are in /tmp/weir-postgres-$PG_PORT/tls; role weir_tls_only is refused without TLS.
# Idempotent: an already running server on that port is reused.
set -euo pipefail
port=${PG_PORT:-55432}
data=/tmp/weir-postgres-$port
tls=$data/tls
url="postgres://postgres@127.0.0.1:$port/postgres"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}
if as_postgres "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  if [ -f "$tls/ca.pem" ]; then
    echo "$url"
    exit 0
  fi
  as_postgres "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null # started before TLS was set up
fi
rm -rf "$data"
mkdir -p "$data"
chown postgres: "$data" 2>/dev/null || true
as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null

# Certificates: two CAs, the server's (DNS:localhost only) and weir_cert's client certificate.
mkdir -p "$tls"
issue() { # NAME SUBJECT EXTENSION: signed by ca
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/$1.key" \
    -subj "$2" -out "$tls/$1.csr" 2>/dev/null
  openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -days 3650 -extfile <(echo "$3") -out "$tls/$1.pem" 2>/dev/null
}
for ca in ca other-ca; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -keyout "$tls/$ca.key" -subj "/CN=weir test $ca" -out "$tls/$ca.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
done
issue server "/CN=localhost" "subjectAltName=DNS:localhost"
issue client "/CN=weir_cert" "extendedKeyUsage=clientAuth"
rm -f "$tls"/*.csr "$tls"/*.srl
chown -R postgres: "$tls" 2>/dev/null || true
chmod 600 "$tls"/*.key
cat >> "$data/postgresql.conf" <<EOF
ssl = on
ssl_cert_file = '$tls/server.pem'
ssl_key_file = '$tls/server.key'
ssl_ca_file = '$tls/ca.pem'
EOF
hba=$(cat "$data/pg_hba.conf")
printf '%s\n' "hostssl all weir_cert 127.0.0.1/32 cert" "host all weir_cert 127.0.0.1/32 reject" \
  "hostnossl all weir_tls_only 127.0.0.1/32 reject" "$hba" > "$data/pg_hba.conf"

as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -k /tmp -c fsync=on -c max_connections=200" start >/dev/null
as_postgres "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
  -c "CREATE ROLE weir_cert LOGIN SUPERUSER" -c "CREATE ROLE weir_tls_only LOGIN SUPERUSER" >/dev/null
echo "$url"
