#!/usr/bin/env bash
# Replication on one machine: a three-node cluster (every node a broker and a controller voter),
# topics with replication factor 3 and min.insync.replicas=2, acks=all; produce and consume
# throughput, produce latency, and produce while a follower catches up (one follower stopped
# while COUNT messages are written, then started again while COUNT more are: the rate during
# its catch-up and the time until it is back in the ISR), with librdkafka's rdkafka_performance. BENCH_TARGET=kafka runs the same against
# Apache Kafka 4.x as a three-node KRaft cluster (jars of compat/kafka, heap 512 MiB per node).
# Both leave flushing to the OS (Kafka's default; durability comes from the replicas).
# Prints a Markdown report on stdout. Usage: scripts/bench/cluster.sh [path/to/weir]
# Environment: BENCH_TARGET (weir|kafka), BENCH_COUNT (messages per throughput run, 2000000),
# BENCH_DIR (data, default ~/.cache/weir/bench-cluster).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
perf=$("$root/scripts/bench/build-rdkafka-performance.sh")
data=${BENCH_DIR:-$cache/bench-cluster}
target=${BENCH_TARGET:-weir}
count=${BENCH_COUNT:-2000000}
ports=(29301 29302 29303)
controller_ports=(29311 29312 29313)
bootstrap=127.0.0.1:29301,127.0.0.1:29302,127.0.0.1:29303
voters="1@127.0.0.1:29311,2@127.0.0.1:29312,3@127.0.0.1:29313"
declare -A pids=()

# Stops node $1 cleanly (SIGTERM, then -9 after 10 s).
stop_node() {
  local pid=${pids[$1]:-}
  [ -n "$pid" ] || return 0
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
  unset "pids[$1]"
}

stop_all() {
  for id in "${!pids[@]}"; do stop_node "$id"; done
}
trap stop_all EXIT

start_weir_node() {
  local id=$1
  "$weir" broker --listen "127.0.0.1:${ports[$((id - 1))]}" \
    --controller-listen "127.0.0.1:${controller_ports[$((id - 1))]}" \
    --data-dir "$data/node-$id" --metrics-listen off \
    --set node.id="$id" --set controller.quorum.voters="$voters" \
    --set min.insync.replicas=2 >> "$data/node-$id.log" 2>&1 &
  pids[$id]=$!
}

start_weir() {
  for id in 1 2 3; do start_weir_node "$id"; done
  for _ in $(seq 1 300); do
    brokers=$("$weir" cluster info -b "${bootstrap%%,*}" 2> /dev/null | sed -n '/^brokers:/,/^[a-z]/p' | grep -c '^  ' || true)
    [ "$brokers" -ge 3 ] && return 0
    sleep 0.1
  done
  echo "the Weir cluster did not form" >&2
  exit 1
}

kafka_home=$cache/kafka-$(grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2)
java_opts=(-Xmx512m -Xms512m -XX:+UseG1GC -cp "$kafka_home/libs/*")

start_kafka_node() {
  local id=$1 dir=$data/node-$1
  java "${java_opts[@]}" -Dlog4j2.configurationFile="$dir/log4j2.yaml" kafka.Kafka \
    "$dir/server.properties" >> "$dir/stdout.log" 2>&1 &
  pids[$id]=$!
}

start_kafka() {
  local cluster_id
  [ -f "$kafka_home/libs/.complete" ] || KAFKA_PORT=29399 "$root/compat/kafka/start.sh" > /dev/null
  KAFKA_PORT=29399 "$root/compat/kafka/stop.sh" > /dev/null 2>&1 || true
  cluster_id=$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid)
  for id in 1 2 3; do
    local dir=$data/node-$id
    mkdir -p "$dir/data"
    cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:${ports[$((id - 1))]},CONTROLLER://127.0.0.1:${controller_ports[$((id - 1))]}
advertised.listeners=PLAINTEXT://127.0.0.1:${ports[$((id - 1))]}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
min.insync.replicas=2
group.initial.rebalance.delay.ms=0
PROPS
    cat > "$dir/log4j2.yaml" <<LOG
Configuration:
  Appenders:
    File:
      name: file
      fileName: $dir/kafka.log
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: file
LOG
    java "${java_opts[@]}" kafka.tools.StorageTool format -t "$cluster_id" \
      -c "$dir/server.properties" > "$dir/format.log" 2>&1
    start_kafka_node "$id"
  done
  for _ in $(seq 1 600); do
    started=$( (grep -l "Kafka Server started\|KafkaRaftServer.*started" "$data"/node-*/kafka.log 2> /dev/null || true) | wc -l)
    [ "$started" -ge 3 ] && return 0
    sleep 0.2
  done
  echo "the Kafka cluster did not start" >&2
  exit 1
}

start_cluster() {
  stop_all
  rm -rf "$data" && mkdir -p "$data"
  sync
  if [ "$target" = kafka ]; then start_kafka; else start_weir; fi
}

create_topic() {
  local name=$1 partitions=$2
  for _ in $(seq 1 50); do
    "$weir" topic create -b "$bootstrap" "$name" -p "$partitions" --replicas 3 \
      -c min.insync.replicas=2 > /dev/null 2>&1 && break
    sleep 0.2
  done
  # Leaders and followers in place before measuring.
  sleep 2
}

produce_rate() { grep -o '[0-9]* msgs/s and [0-9.]* MB/s' | tail -1 | cut -d' ' -f1; }
consume_rate() { grep -o '[0-9]* msgs/s ([0-9.]* MB/s)' | tail -1 | cut -d' ' -f1; }

# "LEADER ISR_SIZE" of partition 0 of topic $1.
partition_state() {
  "$weir" topic describe -b "$bootstrap" "$1" 2> /dev/null | awk '/partition 0\t/ {
    for (i = 1; i <= NF; i++) if ($i == "leader") leader = $(i + 1)
    isr = $0; sub(/.*isr \[/, "", isr); sub(/\].*/, "", isr); print leader, split(isr, ids, ",") }'
}

echo "## Environment"
echo
echo "- $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); target: $target (three nodes, RF=3, min.insync.replicas=2, acks=all)"
echo "- client: librdkafka $("$perf" -h 2>&1 | grep -o 'librdkafka version [0-9.]*' | cut -d' ' -f3) rdkafka_performance, linger.ms=5"
echo
echo "| message | partitions | messages | produce (acks=all), msgs/s | consume from the leaders, msgs/s |"
echo "|---|---|---|---|---|"
for partitions in 1 3; do
  start_cluster
  create_topic "bench-rf3-$partitions" "$partitions"
  partition_args=()
  [ "$partitions" -eq 1 ] && partition_args=(-p 0)
  produced=$("$perf" -P -t "bench-rf3-$partitions" "${partition_args[@]}" -b "$bootstrap" -s 100 \
    -c "$count" -a -1 -X linger.ms=5 -q 2>&1 | produce_rate)
  consume_args=()
  for p in $(seq 0 $((partitions - 1))); do consume_args+=(-p "$p"); done
  consumed=$("$perf" -C -t "bench-rf3-$partitions" "${consume_args[@]}" -b "$bootstrap" \
    -o beginning -c "$count" -q 2>&1 | consume_rate)
  echo "| 100 B | $partitions | $count | ${produced:-0} | ${consumed:-0} |"
done
echo
echo "## Produce while a follower catches up (100 B, acks=all, 1 partition, $count msgs each phase)"
echo
start_cluster
create_topic bench-rf3-catch-up 1
read -r leader _ <<< "$(partition_state bench-rf3-catch-up)"
follower=$(( leader % 3 + 1 ))
stop_node "$follower"
behind=$("$perf" -P -t bench-rf3-catch-up -p 0 -b "$bootstrap" -s 100 -c "$count" -a -1 \
  -X linger.ms=5 -q 2>&1 | produce_rate)
restarted=$(date +%s%N)
if [ "$target" = kafka ]; then start_kafka_node "$follower"; else start_weir_node "$follower"; fi
# Polls the ISR while the second phase runs, and after it until the follower is back (60 s).
(
  for _ in $(seq 1 600); do
    read -r _ isr <<< "$(partition_state bench-rf3-catch-up)"
    [ "${isr:-0}" -ge 3 ] && { echo $(( ($(date +%s%N) - restarted) / 1000000 )); exit 0; }
    sleep 0.1
  done
  echo never
) > "$data/in-sync-after-ms" &
watcher=$!
catching_up=$("$perf" -P -t bench-rf3-catch-up -p 0 -b "$bootstrap" -s 100 -c "$count" -a -1 \
  -X linger.ms=5 -q 2>&1 | produce_rate)
wait "$watcher" || true
echo "- produce with the follower (node $follower) stopped: ${behind:-0} msgs/s"
echo "- produce while it restarts and catches up on the $count messages it missed: ${catching_up:-0} msgs/s"
echo "- back in the ISR $(cat "$data/in-sync-after-ms") ms after its restart began"
echo
echo "## Produce latency (100 B, acks=all, 1 partition, 20,000 msgs/s offered, linger.ms=5)"
start_cluster
create_topic bench-rf3-latency 1
"$perf" -P -t bench-rf3-latency -p 0 -b "$bootstrap" -s 100 -c 200000 -r 20000 -a -1 -l \
  -A "$data/latency.txt" -X linger.ms=5 -q > /dev/null 2>&1
sort -n "$data/latency.txt" | awk '{ v[NR] = $1 } END {
  printf "\n- p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d messages (includes linger.ms)\n",
    v[int(NR * 0.5)] / 1000, v[int(NR * 0.99)] / 1000, v[NR] / 1000, NR }'
stop_all
rm -rf "$data"
