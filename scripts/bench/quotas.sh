#!/usr/bin/env bash
# Client quotas, Weir against Apache Kafka 4.4 in the same run: a producer throttled to
# QUOTA bytes/s (client id `throttled`) beside an unthrottled one (scripts/bench/quotas.py,
# kafka-python), each broker fresh with its defaults. Prints a Markdown table.
# Usage: scripts/bench/quotas.sh [path/to/weir]   Environment: BENCH_QUOTA (1048576),
# BENCH_SECONDS (20).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
python=${WEIR_PYTHON:-$cache/venv/bin/python}
quota=${BENCH_QUOTA:-1048576}
seconds=${BENCH_SECONDS:-20}
data=$(mktemp -d)
port=29392
kafka_port=29393
broker=
trap '[ -n "$broker" ] && kill "$broker" 2>/dev/null; KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/stop.sh" >/dev/null 2>&1; rm -rf "$data"' EXIT
"$weir" broker --listen "127.0.0.1:$port" --metrics-listen off --data-dir "$data/broker" > "$data/broker.log" 2>&1 &
broker=$!
for _ in $(seq 1 1000); do grep -q "weir broker ready" "$data/broker.log" && break; sleep 0.01; done
weir_rows=$("$python" "$root/scripts/bench/quotas.py" "127.0.0.1:$port" "$quota" "$seconds")
kill "$broker"; wait "$broker" 2>/dev/null || true; broker=
KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/start.sh" > /dev/null
kafka_rows=$("$python" "$root/scripts/bench/quotas.py" "127.0.0.1:$kafka_port" "$quota" "$seconds")
echo "- $(nproc) cores, loopback, $(date -u +%F); quota $quota bytes/s for client id throttled; $seconds s per phase"
echo
echo "| broker | free alone | throttled beside free | free beside throttled |"
echo "|---|---|---|---|"
for pair in "Weir:$weir_rows" "Apache Kafka 4.4:$kafka_rows"; do
  name=${pair%%:*}; rows=${pair#*:}
  alone=$(grep "^free alone" <<< "$rows" | awk '{print $3, $4}')
  throttled=$(grep "^throttled beside" <<< "$rows" | awk '{print $5, $6}')
  free=$(grep "^free beside" <<< "$rows" | awk '{print $5, $6}')
  echo "| $name | $alone | $throttled | $free |"
done
