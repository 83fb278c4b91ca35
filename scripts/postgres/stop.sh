#!/usr/bin/env bash
# Stops the server scripts/postgres/start.sh started.
set -euo pipefail
port=${PG_PORT:-55432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ "$(id -un)" = postgres ]; then run=(); else run=(runuser -u postgres --); fi
"${run[@]}" "$bin/pg_ctl" -D "/tmp/weir-postgres-$port" -m fast stop >/dev/null 2>&1 || true
