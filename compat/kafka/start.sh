#!/usr/bin/env bash
# Starts a single-node Apache Kafka 4.x broker (KRaft, combined broker+controller, no Docker) on
# 127.0.0.1 as Weir's reference. Jars come from Maven Central (compat/kafka/pom.xml) and are
# cached outside the clone. Prints the bootstrap address; stop with compat/kafka/stop.sh.
# Environment: KAFKA_PORT (default 19092), KAFKA_HEAP (default 512m), WEIR_CACHE;
# KAFKA_EXTRA_LISTENERS ("SASL_SSL://127.0.0.1:PORT,…": listened on and advertised beside
# PLAINTEXT; KAFKA_EXTRA_ADVERTISED if they are advertised otherwise) and KAFKA_EXTRA_PROPERTIES (a file appended to server.properties) for secured runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
version=$(grep -o '<kafka.version>[^<]*' "$here/pom.xml" | cut -d'>' -f2)
home=$cache/kafka-$version
port=${KAFKA_PORT:-19092}
controller_port=$((port + 1))
run=${KAFKA_RUN_DIR:-$cache/kafka-run-$port}

if [ ! -f "$home/libs/.complete" ]; then
  mkdir -p "$home/libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$home/libs" >&2
  touch "$home/libs/.complete"
fi

if [ -f "$run/kafka.pid" ] && kill -0 "$(cat "$run/kafka.pid")" 2>/dev/null; then
  echo "127.0.0.1:$port"
  exit 0
fi
rm -rf "$run" && mkdir -p "$run/data"
extra_advertised=${KAFKA_EXTRA_ADVERTISED:-${KAFKA_EXTRA_LISTENERS:-}}
cat > "$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port${KAFKA_EXTRA_LISTENERS:+,$KAFKA_EXTRA_LISTENERS}
advertised.listeners=PLAINTEXT://127.0.0.1:$port${extra_advertised:+,$extra_advertised}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$run/data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
PROPS
[ -n "${KAFKA_EXTRA_PROPERTIES:-}" ] && cat "$KAFKA_EXTRA_PROPERTIES" >> "$run/server.properties"
cat > "$run/log4j2.yaml" <<LOG
Configuration:
  Appenders:
    File:
      name: file
      fileName: $run/kafka.log
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: file
LOG
# KAFKA_JAVA_OPTS: more JVM options, split at spaces (e.g. a -D system property).
# shellcheck disable=SC2206
java_opts=(-Xmx"${KAFKA_HEAP:-512m}" -Xms"${KAFKA_HEAP:-512m}" -XX:+UseG1GC
  -Dlog4j2.configurationFile="$run/log4j2.yaml" ${KAFKA_JAVA_OPTS:-} -cp "$home/libs/*")
cluster_id=$(java "${java_opts[@]}" kafka.tools.StorageTool random-uuid)
java "${java_opts[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$run/server.properties" > "$run/format.log" 2>&1
nohup java "${java_opts[@]}" kafka.Kafka "$run/server.properties" > "$run/stdout.log" 2>&1 &
echo $! > "$run/kafka.pid"
for _ in $(seq 1 600); do
  if grep -q "Kafka Server started" "$run/kafka.log" 2>/dev/null || grep -q "KafkaRaftServer.*started" "$run/kafka.log" 2>/dev/null; then
    echo "127.0.0.1:$port"
    exit 0
  fi
  if ! kill -0 "$(cat "$run/kafka.pid")" 2>/dev/null; then
    echo "Kafka exited during start-up; see $run" >&2
    tail -20 "$run/stdout.log" "$run/kafka.log" >&2 || true
    exit 1
  fi
  sleep 0.2
done
echo "Kafka did not start within 120 s; see $run" >&2
exit 1
