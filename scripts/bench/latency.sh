#!/usr/bin/env bash
# Produce and end-to-end latency, Weir against the reference Apache Kafka in one run: each round
# runs Weir (flushing left to the OS, as Kafka), Kafka, and Weir fsyncing before it acknowledges
# (its default), each on a fresh broker, with broker/examples/latency (librdkafka: acks=all,
# linger.ms=BENCH_LINGER_MS, 100 B messages to one partition at BENCH_RATE msgs/s, a consumer in the same
# process with librdkafka's default fetch settings). Each broker first carries the same load on
# another topic, unmeasured, so Kafka's JVM is warm (its first seconds ran p99 at 30–80 ms).
# Prints a Markdown report.
# Usage: scripts/bench/latency.sh [path/to/weir]
# Environment: BENCH_ROUNDS (default 3), BENCH_RATE (default 50000), BENCH_COUNT (default 250000),
# BENCH_LINGER_MS (default 5), BENCH_DIR (scratch, default ~/.cache/weir/bench-data).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
target_dir=${CARGO_TARGET_DIR:-$cache/target}
weir=${1:-$target_dir/release/weir}
data=${BENCH_DIR:-$cache/bench-data}
rounds=${BENCH_ROUNDS:-3}
rate=${BENCH_RATE:-50000}
count=${BENCH_COUNT:-250000}
linger_ms=${BENCH_LINGER_MS:-5}
port=29092
bootstrap=127.0.0.1:$port
(cd "$root" && cargo build --release -q -p weir-broker --example latency)
latency=$target_dir/release/examples/latency
rm -rf "$data" && mkdir -p "$data"

# shellcheck source=../lib/bench_broker.sh
source "$root/scripts/lib/bench_broker.sh"
trap 'kill $broker 2>/dev/null || true' EXIT

echo "## Environment"
echo
echo "- $(bench_machine)"
echo "- broker/examples/latency (rdkafka $(grep -o 'rdkafka = { version = "[^"]*' "$root/Cargo.toml" | cut -d'"' -f2)): acks=all, linger.ms=$linger_ms, 100 B, one partition, $rate msgs/s offered, $count messages measured after as many unmeasured on another topic"
echo "- Kafka $(bench_kafka_version) (JVM heap 512 MiB) leaves flushing to the OS; Weir once likewise (log.flush.on.ack=false) and once fsyncing before each acknowledgement (its default)"
echo
echo "| round | broker | produce p50 ms | p99 | max | end-to-end p50 ms | p99 | max |"
echo "|---|---|---|---|---|---|---|---|"
declare -A produce_p99 e2e_p99
for round in $(seq 1 "$rounds"); do
  for run in weir kafka weir-fsync; do
    case "$run" in
      weir) target=weir; bench_broker_start --set log.flush.on.ack=false ;;
      kafka) target=kafka; bench_broker_start ;;
      weir-fsync) target=weir; bench_broker_start ;;
    esac
    "$weir" topic create -b "$bootstrap" bench-warm-up -p 1 > /dev/null 2>&1
    "$weir" topic create -b "$bootstrap" bench-latency -p 1 > /dev/null 2>&1
    "$latency" "$bootstrap" bench-warm-up "$rate" "$count" "$linger_ms" > /dev/null
    read -r _ p50 p99 max _ e50 e99 emax _ _ < <("$latency" "$bootstrap" bench-latency "$rate" "$count" "$linger_ms")
    bench_broker_stop
    echo "| $round | $run | $p50 | $p99 | $max | $e50 | $e99 | $emax |"
    produce_p99[$run]="${produce_p99[$run]:-} $p99"
    e2e_p99[$run]="${e2e_p99[$run]:-} $e99"
  done
done
echo
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
echo "| median over $rounds rounds | produce p99 ms | Weir / Kafka | end-to-end p99 ms | Weir / Kafka |"
echo "|---|---|---|---|---|"
kafka_produce=$(median <<< "${produce_p99[kafka]}")
kafka_e2e=$(median <<< "${e2e_p99[kafka]}")
for run in weir kafka weir-fsync; do
  p=$(median <<< "${produce_p99[$run]}")
  e=$(median <<< "${e2e_p99[$run]}")
  echo "| $run | $p | $(ratio "$p" "$kafka_produce") | $e | $(ratio "$e" "$kafka_e2e") |"
done
rm -rf "$data"
