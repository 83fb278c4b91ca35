#!/usr/bin/env bash
# What a topic's compression.type costs on the produce path (KIP-390 recompression), Weir against
# the reference Apache Kafka on the same machine with the same client: librdkafka's
# rdkafka_performance produces uncompressed 1 KiB messages (its payload is one repeated byte,
# so ratios of bytes on disk are best-case) to a one-partition topic per compression.type;
# each cell on a fresh broker, flushing left to the OS (Kafka's default). Prints a Markdown table:
# produce rate, broker CPU seconds and the partition's segment bytes.
# Usage: scripts/bench/topic_compression.sh [path/to/weir]
# Environment: BENCH_DIR (default ~/.cache/weir/bench-data), BENCH_COUNT (messages, default 300000).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
perf=$("$root/scripts/bench/build-rdkafka-performance.sh")
data=${BENCH_DIR:-$cache/bench-data}
count=${BENCH_COUNT:-300000}
port=29092
bootstrap=127.0.0.1:$port
target=
# shellcheck source=../lib/bench_broker.sh
source "$root/scripts/lib/bench_broker.sh"
trap 'kill $broker 2>/dev/null || true' EXIT
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$broker/stat"; }

echo "| broker | compression.type | produce (msgs/s, MB/s) | broker CPU (s) | segment bytes |"
echo "|---|---|---|---|---|"
for target in weir kafka; do
  for compression in producer zstd lz4 snappy gzip; do
    bench_broker_start
    topic="compression-$compression"
    "$weir" topic create -b "$bootstrap" "$topic" -p 1 -c compression.type="$compression" > /dev/null
    before=$(cpu_seconds)
    produced=$("$perf" -P -t "$topic" -p 0 -b "$bootstrap" -s 1024 -c "$count" -a 1 \
      -X linger.ms=5 -q 2>&1 | grep -o '[0-9]* msgs/s and [0-9.]* MB/s' | tail -1)
    after=$(cpu_seconds)
    sleep 1
    dir=$(find "$data/broker" -type d -name "$topic-0" | head -1)
    # The segments only (Kafka preallocates its index files).
    bytes=$(find "$dir" -name '*.log' -printf '%s\n' | awk '{s += $1} END {print s}')
    cpu=$(awk -v a="$after" -v b="$before" 'BEGIN {printf "%.1f", a - b}')
    echo "| $target | $compression | $produced | $cpu | $bytes |"
    bench_broker_stop
  done
done
rm -rf "$data"
