#!/usr/bin/env bash
# Starts a private PostgreSQL server for the tests (Debian's postgresql package; installed by
# scripts/test.sh): a fresh cluster with trust authentication on 127.0.0.1:$PG_PORT, data in
# /tmp, run as the `postgres` user (the server refuses root). Prints the connection URL.
# Idempotent: an already running server on that port is reused.
set -euo pipefail
port=${PG_PORT:-55432}
data=/tmp/weir-postgres-$port
url="postgres://postgres@127.0.0.1:$port/postgres"
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}
if as_postgres "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  echo "$url"
  exit 0
fi
rm -rf "$data"
mkdir -p "$data"
chown postgres: "$data" 2>/dev/null || true
as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
  -o "-p $port -c listen_addresses=127.0.0.1 -k /tmp -c fsync=on -c max_connections=200" start >/dev/null
echo "$url"
