# The one broker a benchmark measures, Weir or the reference Apache Kafka, each time on a fresh
# data directory (sourced). Needs $root (the clone), $weir (the binary), $data (scratch),
# $bootstrap and $port (its listener) and $target (weir, kafka, or memory: broker/examples/memory_kafka,
# a server keeping batches in memory, at $bench_memory with one topic $bench_memory_topic of
# $bench_memory_partitions partitions; it picks its own port and sets $bootstrap). Other
# listeners beside it:
# $bench_extra_listeners ("SSL://127.0.0.1:PORT,…", both brokers) with $bench_kafka_properties
# (a file of Kafka properties for them; Weir takes its own as WEIR ARGs).
#   bench_broker_start [WEIR ARG…]   start it (extra arguments go to `weir broker`); sets $broker,
#                                    and $bench_broker_started_ns when the start began (after
#                                    the data directory was cleared)
#   bench_broker_stop                stop it
#   bench_machine                    one report line: date, cores, RAM, kernel, the data's disk
#   bench_kafka_version              the reference Kafka's version (compat/kafka/pom.xml)
#   ratio A B                        A / B to two decimals, "-" when B is not positive
# Kafka leaves flushing to the OS; its JVM settings are compat/kafka/start.sh's.

broker=
bench_broker_started_ns=
bench_broker_start() {
  rm -rf "$data/broker"; mkdir -p "$data"; sync; sleep 1
  bench_broker_started_ns=$(date +%s%N)
  if [ "$target" = kafka ]; then
    KAFKA_PORT=$port KAFKA_RUN_DIR="$data/broker" KAFKA_EXTRA_LISTENERS=${bench_extra_listeners:-} \
      KAFKA_EXTRA_PROPERTIES=${bench_kafka_properties:-} "$root/compat/kafka/start.sh" > /dev/null
    broker=$(cat "$data/broker/kafka.pid")
  elif [ "$target" = memory ]; then
    "$bench_memory" "$bench_memory_topic" "$bench_memory_partitions" > "$data/memory.out" 2>&1 &
    broker=$!
    for _ in $(seq 1 1000); do grep -q "^bootstrap=" "$data/memory.out" && break; sleep 0.01; done
    bootstrap=$(sed -n 's/^bootstrap=//p' "$data/memory.out")
  else
    local listen=(--listen "$bootstrap")
    if [ -n "${bench_extra_listeners:-}" ]; then
      listen=(--set "listeners=PLAINTEXT://$bootstrap,$bench_extra_listeners")
    fi
    "$weir" broker "${listen[@]}" --metrics-listen off --data-dir "$data/broker" "$@" \
      > "$data/broker.log" 2>&1 &
    broker=$!
    for _ in $(seq 1 1000); do grep -q "weir broker ready" "$data/broker.log" && break; sleep 0.01; done
  fi
}
bench_broker_stop() {
  if [ "$target" = kafka ]; then
    KAFKA_PORT=$port KAFKA_RUN_DIR="$data/broker" "$root/compat/kafka/stop.sh"
  elif [ "$target" = memory ]; then
    kill -TERM "$broker"; wait "$broker" || true
  else
    kill -TERM "$broker"; wait "$broker" || true
  fi
}

bench_machine() {
  echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); data on $(df -h "$data" | awk 'NR==2 {print $1}')"
}
bench_kafka_version() { grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
