#!/usr/bin/env bash
# Broker benchmark with librdkafka's rdkafka_performance (built from the rdkafka-sys copy).
# Durable by default: the broker fsyncs before acknowledging (log.flush.on.ack=true).
# Prints a Markdown report on stdout. Usage:
#   scripts/bench/broker.sh [path/to/weir]        (default: the release build in the cache)
# Environment: BENCH_DIR (data directory, default ~/.cache/weir/bench-data), BENCH_DURABLE=false
# to leave flushing to the OS, BENCH_SMALL_COUNT / BENCH_LARGE_COUNT (messages per run),
# BENCH_TARGET=kafka to measure the reference Apache Kafka (compat/kafka/start.sh) instead, with
# the same client, settings and machine (Kafka leaves flushing to the OS, as Weir with
# BENCH_DURABLE=false).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
perf=$("$root/scripts/bench/build-rdkafka-performance.sh")
data=${BENCH_DIR:-$cache/bench-data}
durable=${BENCH_DURABLE:-true}
target=${BENCH_TARGET:-weir}
small_count=${BENCH_SMALL_COUNT:-5000000}
large_count=${BENCH_LARGE_COUNT:-1000000}
port=29092
bootstrap=127.0.0.1:$port

rm -rf "$data" && mkdir -p "$data"
echo "## Environment"
echo
echo "- $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); data on $(df -h "$data" | awk 'NR==2 {print $1}')"
if [ "$target" = kafka ]; then
  echo "- broker: Apache Kafka $(grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2) (JVM heap 512 MiB, OS flushing); librdkafka $("$perf" -h 2>&1 | grep -o 'librdkafka version [0-9.]*' | cut -d' ' -f3)"
else
  echo "- broker: Weir; librdkafka $("$perf" -h 2>&1 | grep -o 'librdkafka version [0-9.]*' | cut -d' ' -f3), durable (flush.on.ack): $durable"
fi
sync
dd_durable=$(dd if=/dev/zero of="$data/dd.tmp" bs=1M count=2048 conv=fdatasync 2>&1 | tail -1 | awk -F', ' '{print $NF}')
dd_buffered=$(dd if=/dev/zero of="$data/dd.tmp" bs=1M count=2048 2>&1 | tail -1 | awk -F', ' '{print $NF}')
rm -f "$data/dd.tmp"
echo "- disk sequential write, 2 GiB with dd: $dd_durable with fdatasync, $dd_buffered buffered"
echo

# Each measurement runs on a fresh broker and data directory: this machine's disk slows down
# after several GB of sustained writes, which would otherwise penalise later cells.
# shellcheck source=../lib/bench_broker.sh
source "$root/scripts/lib/bench_broker.sh"
startup_ms=()
start_broker() {
  bench_broker_start --set log.flush.on.ack="$durable"
  startup_ms+=($(( ($(date +%s%N) - bench_broker_started_ns) / 1000000 )))
}
peak_rss_kb=0
cpu_ticks=0
stop_broker() {
  local rss ticks
  rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
  ticks=$(awk '{print $14 + $15}' /proc/$broker/stat)
  [ "$rss" -gt "$peak_rss_kb" ] && peak_rss_kb=$rss
  cpu_ticks=$((cpu_ticks + ticks))
  bench_broker_stop
}
trap 'kill $broker 2>/dev/null || true' EXIT
produce_rate() { grep -o '[0-9]* msgs/s and [0-9.]* MB/s' | tail -1; }
consume_rate() { grep -o '[0-9]* msgs/s ([0-9.]* MB/s)' | tail -1; }

echo "## Throughput (linger.ms=5)"
echo
echo "| message | acks | partitions | messages | produce | consume |"
echo "|---|---|---|---|---|---|"
for size in 100 1024; do
  count=$small_count
  [ "$size" -eq 1024 ] && count=$large_count
  for acks in 1 -1; do
    for partitions in 1 8; do
      start_broker
      topic="bench-$size-$acks-$partitions"
      topic=${topic//-1-/-all-}
      "$weir" topic create -b "$bootstrap" "$topic" -p "$partitions" > /dev/null 2>&1
      partition_args=()
      [ "$partitions" -eq 1 ] && partition_args=(-p 0)
      produced=$("$perf" -P -t "$topic" "${partition_args[@]}" -b "$bootstrap" -s "$size" -c "$count" -a "$acks" \
        -X linger.ms=5 -q 2>&1 | produce_rate)
      consume_args=()
      for p in $(seq 0 $((partitions - 1))); do consume_args+=(-p "$p"); done
      consumed=$("$perf" -C -t "$topic" "${consume_args[@]}" -b "$bootstrap" -o beginning -c "$count" -q 2>&1 | consume_rate)
      echo "| ${size} B | $acks | $partitions | $count | $produced | $consumed |"
      stop_broker
    done
  done
done
echo

echo "## Produce latency (100 B, acks=all, 1 partition, 50,000 msgs/s offered, linger.ms=5)"
start_broker
"$weir" topic create -b "$bootstrap" bench-latency -p 1 > /dev/null 2>&1
"$perf" -P -t bench-latency -p 0 -b "$bootstrap" -s 100 -c 250000 -r 50000 -a -1 -l -A "$data/latency.txt" \
  -X linger.ms=5 -q > /dev/null 2>&1
sort -n "$data/latency.txt" | awk '{ v[NR] = $1 } END {
  printf "\n- p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d messages (includes linger.ms)\n",
    v[int(NR * 0.5)] / 1000, v[int(NR * 0.99)] / 1000, v[NR] / 1000, NR }'
echo

stop_broker
echo "## Broker resources"
echo
echo "- peak RSS of any one broker run: $((peak_rss_kb / 1024)) MiB; broker CPU summed over all runs: $((cpu_ticks / $(getconf CLK_TCK))) s"
echo "- start-up to serving (ms, each run; Kafka's includes formatting its log dir): ${startup_ms[*]}"
rm -rf "$data"
