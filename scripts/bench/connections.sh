#!/usr/bin/env bash
# What connections make the broker hold: its RSS idle, with 2,000 idle connections, and its peak
# RSS while 48 connections each send a whole 96 MiB request at once — with the default
# queued.max.request.bytes pool (256 MiB) and with Kafka's default of no bound (-1).
# The same measurements are then taken of the reference Apache Kafka (compat/kafka/start.sh,
# JVM heap KAFKA_HEAP, default 512m; its default queued.max.request.bytes is -1).
# Prints a Markdown report on stdout. Usage:
#   scripts/bench/connections.sh [path/to/weir]   (default: the release build in the cache)
# Environment: BENCH_IDLE_CONNECTIONS (2000), BENCH_FLOOD_CONNECTIONS (48),
# BENCH_FLOOD_MIB (96).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
data=$(mktemp -d)
idle_connections=${BENCH_IDLE_CONNECTIONS:-2000}
flood_connections=${BENCH_FLOOD_CONNECTIONS:-48}
flood_mib=${BENCH_FLOOD_MIB:-96}
port=29192
bootstrap=127.0.0.1:$port
client="$root/scripts/bench/connection_flood.py"
broker=
kafka_port=29193
trap '[ -n "$broker" ] && kill "$broker" 2>/dev/null; KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/stop.sh" >/dev/null 2>&1; rm -rf "$data"' EXIT
ulimit -n $(( idle_connections + 1024 )) 2>/dev/null || ulimit -n "$(ulimit -Hn)"

start_broker() {
  rm -rf "$data/broker"
  "$weir" broker --listen "$bootstrap" --metrics-listen off --data-dir "$data/broker" "$@" \
    > "$data/broker.log" 2>&1 &
  broker=$!
  for _ in $(seq 1 1000); do grep -q "weir broker ready" "$data/broker.log" && break; sleep 0.01; done
  grep -q "weir broker ready" "$data/broker.log" || { cat "$data/broker.log" >&2; exit 1; }
}
stop_broker() { kill "$broker"; wait "$broker" 2>/dev/null || true; broker=; }
rss_mib() { awk -v field="$1:" '$1 == field {printf "%.0f", $2 / 1024}' "/proc/$broker/status"; }

echo "## Environment"
echo
echo "- $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); loopback; client: $client (Python $(python3 -c 'import platform; print(platform.python_version())'))"
echo

echo "## RSS by what connections hold"
echo
echo "| broker | idle | $idle_connections idle connections | peak, $flood_connections × $flood_mib MiB requests at once | flood result |"
echo "|---|---|---|---|---|"
measure() {
  local label=$1 address=$2
  sleep 1
  idle_rss=$(rss_mib VmRSS)
  python3 "$client" idle "$address" "$idle_connections" 3 > "$data/idle.out" &
  idle_client=$!
  for _ in $(seq 1 600); do [ -s "$data/idle.out" ] && break; sleep 0.1; done
  sleep 1
  connections_rss=$(rss_mib VmRSS)
  wait "$idle_client"
  flood=$(python3 "$client" flood "$address" "$flood_connections" $(( flood_mib << 20 )) 2>&1 | head -2 | tr '\n' ' ' || true)
  peak_rss=$(rss_mib VmHWM)
  alive=$(kill -0 "$broker" 2>/dev/null && echo "still serving" || echo "process gone")
  echo "| $label | $idle_rss MiB | $connections_rss MiB | $peak_rss MiB | $flood ($alive) |"
}
for pool in default -1; do
  if [ "$pool" = default ]; then start_broker; label="Weir, queued.max.request.bytes default (256 MiB)"
  else start_broker --set queued.max.request.bytes="$pool"; label="Weir, queued.max.request.bytes=-1 (Kafka's default: no bound)"; fi
  measure "$label" "$bootstrap"
  stop_broker
done
KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/start.sh" > /dev/null
broker=$(cat "$data/kafka/kafka.pid")
measure "Apache Kafka $(grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2), heap ${KAFKA_HEAP:-512m}, defaults" "127.0.0.1:$kafka_port"
KAFKA_PORT=$kafka_port KAFKA_RUN_DIR="$data/kafka" "$root/compat/kafka/stop.sh" > /dev/null 2>&1 || true
broker=
