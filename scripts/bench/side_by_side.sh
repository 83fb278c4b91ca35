#!/usr/bin/env bash
# Weir against the reference Apache Kafka (compat/kafka/start.sh), side by side in one run:
# for each round, each cell runs on a fresh Weir and then on a fresh Kafka (alternating, so the
# machine's drift hits both alike), with librdkafka's rdkafka_performance (linger.ms=5, acks=1),
# both brokers leaving flushing to the OS. Prints a Markdown report: each round's rates, then
# per cell the ratio Weir/Kafka of the rates summed over the rounds, broker CPU and peak RSS.
# Usage: scripts/bench/side_by_side.sh [path/to/weir]
# Environment: BENCH_ROUNDS (default 2), BENCH_DIR (scratch, default ~/.cache/weir/bench-data),
# BENCH_CELLS (space-separated SIZE:PARTITIONS:COUNT, default the four cells below),
# BENCH_CONSUMER_ARGS (extra rdkafka_performance arguments for the consumers, e.g. -X k=v),
# BENCH_VS (kafka, the default, or memory: broker/examples/memory_kafka in place of Kafka, a server
# that keeps batches in memory — no log, no disk — so the ratio says how near Weir comes to what
# the client itself can do on this machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
perf=$("$root/scripts/bench/build-rdkafka-performance.sh")
data=${BENCH_DIR:-$cache/bench-data}
rounds=${BENCH_ROUNDS:-2}
cells=${BENCH_CELLS:-"100:1:3000000 100:8:3000000 1000:1:600000 1000:8:600000"}
read -r -a consumer_extra <<< "${BENCH_CONSUMER_ARGS:-}"
port=29092
bootstrap=127.0.0.1:$port
vs=${BENCH_VS:-kafka}
case "$vs" in
  kafka) vs_name=Kafka ;;
  memory)
    vs_name=memory
    (cd "$root" && cargo build --release -q -p weir-broker --example memory_kafka)
    bench_memory=${CARGO_TARGET_DIR:-$cache/target}/release/examples/memory_kafka ;;
  *) echo "BENCH_VS must be kafka or memory, not $vs" >&2; exit 2 ;;
esac
rm -rf "$data" && mkdir -p "$data"

# shellcheck source=../lib/bench_broker.sh
source "$root/scripts/lib/bench_broker.sh"
trap 'kill $broker 2>/dev/null || true' EXIT

echo "## Environment"
echo
echo "- $(bench_machine)"
echo "- librdkafka $("$perf" -h 2>&1 | grep -o 'librdkafka version [0-9.]*' | cut -d' ' -f3)'s rdkafka_performance, linger.ms=5, acks=1${BENCH_CONSUMER_ARGS:+; consumers with ${BENCH_CONSUMER_ARGS}}"
if [ "$vs" = kafka ]; then
  echo "- Kafka $(bench_kafka_version) (JVM heap 512 MiB) and Weir (log.flush.on.ack=false): both leave flushing to the OS"
else
  echo "- memory is broker/examples/memory_kafka (batches kept in memory, no log, no disk: the client's ceiling); Weir with log.flush.on.ack=false"
fi
echo

produce_rate() { grep -o '[0-9]* msgs/s and [0-9.]* MB/s' | tail -1 | cut -d' ' -f1; }
consume_rate() { grep -o '[0-9]* msgs/s ([0-9.]* MB/s)' | tail -1 | cut -d' ' -f1; }

# One cell on one fresh broker: prints "PRODUCE CONSUME CPU_TICKS PEAK_RSS_KB".
run_cell() {
  local size=$1 partitions=$2 count=$3 topic produced consumed
  topic="bench-$size-$partitions"
  bench_memory_topic=$topic bench_memory_partitions=$partitions
  if [ "$target" = weir ]; then bench_broker_start --set log.flush.on.ack=false; else bench_broker_start; fi
  [ "$target" = memory ] || "$weir" topic create -b "$bootstrap" "$topic" -p "$partitions" > /dev/null 2>&1
  local partition_args=()
  [ "$partitions" -eq 1 ] && partition_args=(-p 0)
  produced=$("$perf" -P -t "$topic" "${partition_args[@]}" -b "$bootstrap" -s "$size" -c "$count" -a 1 \
    -X linger.ms=5 -q 2>&1 | produce_rate)
  local consume_args=()
  for p in $(seq 0 $((partitions - 1))); do consume_args+=(-p "$p"); done
  consumed=$("$perf" -C -t "$topic" "${consume_args[@]}" -b "$bootstrap" -o beginning -c "$count" \
    "${consumer_extra[@]}" -q 2>&1 | consume_rate)
  local ticks rss
  ticks=$(awk '{print $14 + $15}' "/proc/$broker/stat")
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$broker/status")
  bench_broker_stop
  echo "${produced:-0} ${consumed:-0} $ticks $rss"
}

declare -A produce_sum consume_sum cpu_sum rss_peak
echo "## Each round (msgs/s)"
echo
echo "| round | cell | Weir produce | $vs_name produce | Weir consume | $vs_name consume |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for cell in $cells; do
    IFS=: read -r size partitions count <<< "$cell"
    declare -A result=()
    for target in weir "$vs"; do
      read -r produced consumed ticks rss < <(run_cell "$size" "$partitions" "$count")
      result[$target]="$produced $consumed"
      key="$cell:$target"
      produce_sum[$key]=$(( ${produce_sum[$key]:-0} + produced ))
      consume_sum[$key]=$(( ${consume_sum[$key]:-0} + consumed ))
      cpu_sum[$key]=$(( ${cpu_sum[$key]:-0} + ticks ))
      [ "$rss" -gt "${rss_peak[$key]:-0}" ] && rss_peak[$key]=$rss
    done
    read -r weir_produced weir_consumed <<< "${result[weir]}"
    read -r other_produced other_consumed <<< "${result[$vs]}"
    echo "| $round | $size B × $count, $partitions partition(s) | $weir_produced | $other_produced | $weir_consumed | $other_consumed |"
  done
done
echo

hz=$(getconf CLK_TCK)
echo "## Weir / $vs_name (rates summed over $rounds rounds)"
echo
echo "| cell | produce Weir/$vs_name | consume Weir/$vs_name | broker CPU s per round, Weir / $vs_name | peak RSS MiB, Weir / $vs_name |"
echo "|---|---|---|---|---|"
for cell in $cells; do
  IFS=: read -r size partitions count <<< "$cell"
  weir_cpu=$(awk -v t="${cpu_sum[$cell:weir]}" -v r="$rounds" -v hz="$hz" 'BEGIN { printf "%.1f", t / r / hz }')
  other_cpu=$(awk -v t="${cpu_sum[$cell:$vs]}" -v r="$rounds" -v hz="$hz" 'BEGIN { printf "%.1f", t / r / hz }')
  echo "| $size B, $partitions partition(s), $count msgs | $(ratio "${produce_sum[$cell:weir]}" "${produce_sum[$cell:$vs]}") | $(ratio "${consume_sum[$cell:weir]}" "${consume_sum[$cell:$vs]}") | $weir_cpu / $other_cpu | $(( ${rss_peak[$cell:weir]} / 1024 )) / $(( ${rss_peak[$cell:$vs]} / 1024 )) |"
done
rm -rf "$data"
