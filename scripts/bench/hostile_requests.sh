#!/usr/bin/env bash
# Two requests that cost a broker more than they cost the sender, on Weir and on the reference
# Apache Kafka (compat/kafka/start.sh, heap KAFKA_HEAP, default 512m), each on a fresh broker:
#   1. one OffsetFetch v8 of 10 million empty groups (30 MB; 3 bytes a group on the wire),
#      before any other request: the broker's RSS before and its peak (VmHWM) after, what it did
#      with the request, and whether it serves a client afterwards;
#   2. four connections that each declare a 90 MiB request and send one byte a second, while a
#      normal client (kafka-python) produces 100 records and reads them back: how long the
#      normal client took, and the broker's peak RSS.
# Prints a Markdown table on stdout. Usage:
#   scripts/bench/hostile_requests.sh [path/to/weir ...]   (default: the release build in the cache)
# Several binaries (e.g. before and after a change) are each measured in the same run.
# Environment: BENCH_GROUPS (10000000), BENCH_SLOW_SENDERS (4), BENCH_SLOW_MIB (90),
# BENCH_CLIENT_SECONDS (60).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
[ $# -gt 0 ] || set -- "${CARGO_TARGET_DIR:-$cache/target}/release/weir"
python=${WEIR_PYTHON:-$cache/venv/bin/python}
client="$root/scripts/bench/hostile_requests.py"
groups=${BENCH_GROUPS:-10000000}
senders=${BENCH_SLOW_SENDERS:-4}
slow_mib=${BENCH_SLOW_MIB:-90}
client_seconds=${BENCH_CLIENT_SECONDS:-60}
data=$(mktemp -d)
port=29292
kafka_port=29293
broker=
trap '[ -n "$broker" ] && kill "$broker" 2>/dev/null; KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/stop.sh" >/dev/null 2>&1; rm -rf "$data"' EXIT

rss_mib() { awk -v field="$1:" '$1 == field {printf "%.0f", $2 / 1024}' "/proc/$broker/status"; }
serves() {
  "$python" - "$1" <<'PY' 2>/dev/null && echo "serves a client after" || echo "does NOT serve a client after"
import sys
from kafka import KafkaAdminClient
KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=10000).list_topics()
PY
}
start_weir() {
  rm -rf "$data/broker"
  "$1" broker --listen "127.0.0.1:$port" --metrics-listen off --data-dir "$data/broker" \
    > "$data/broker.log" 2>&1 &
  broker=$!
  for _ in $(seq 1 1000); do grep -q "weir broker ready" "$data/broker.log" && break; sleep 0.01; done
  grep -q "weir broker ready" "$data/broker.log" || { cat "$data/broker.log" >&2; exit 1; }
  sleep 1
}
start_kafka() {
  KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/start.sh" > /dev/null
  broker=$(cat "$data/kafka/kafka.pid")
  sleep 3
}
stop() {
  if [ "$1" = kafka ]; then
    KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/stop.sh" > /dev/null 2>&1 || true
  else
    kill "$broker"; wait "$broker" 2>/dev/null || true
  fi
  broker=
}
# One broker's row: label, how to start it, its address.
row() {
  local label=$1 kind=$2 address=$3 binary=${4:-}
  if [ "$kind" = kafka ]; then start_kafka; else start_weir "$binary"; fi
  local before fetched peak after
  before=$(rss_mib VmRSS)
  fetched=$("$python" "$client" offset-fetch "$address" "$groups" 2>&1 | tail -1)
  sleep 2
  peak=$(rss_mib VmHWM)
  after=$(serves "$address")
  stop "$kind"
  if [ "$kind" = kafka ]; then start_kafka; else start_weir "$binary"; fi
  local slow_before slow slow_peak
  slow_before=$(rss_mib VmRSS)
  slow=$("$python" "$client" slow-senders "$address" "$senders" "$slow_mib" "$client_seconds" 2>&1 | tail -1)
  slow_peak=$(rss_mib VmHWM)
  stop "$kind"
  echo "| $label | $before → $peak MiB: $fetched; $after | $slow_before → $slow_peak MiB: $slow |"
}

echo "- $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); loopback; $(date -u +%F)"
echo
echo "| broker | one OffsetFetch v8 of $groups empty groups: RSS before → peak | $senders × ${slow_mib} MiB requests sent a byte a second, beside a normal client: RSS before → peak |"
echo "|---|---|---|"
for binary in "$@"; do
  row "Weir \`$(basename "$binary")\`" weir "127.0.0.1:$port" "$binary"
done
version=$(grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2)
row "Apache Kafka $version (heap ${KAFKA_HEAP:-512m}, defaults)" kafka "127.0.0.1:$kafka_port"
