#!/usr/bin/env bash
# Kafka's own command-line tools (kafka-tools jar) against a broker: kafka-topics, kafka-configs,
# kafka-get-offsets, kafka-console-producer, kafka-console-consumer (in a group),
# kafka-producer-perf-test and kafka-consumer-perf-test.
# Usage: compat/java/tools.sh HOST:PORT      Prints "java tools: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
version=$(grep -o '<kafka.version>[^<]*' "$here/../kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
bootstrap=$1
topic=tools-$$
tool() { java -Xmx256m -Dlog4j2.level=WARN -cp "$libs/*" "$@" 2>&1; }
# Runs a tool: its output in $out, its exit status in $status (stdin passes through).
run() { out=$(tool "$@"); status=$?; }
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED $1 (exit status $status): $2" | head -20; }
# The last tool exited 0 and `text` matches `pattern`. Usage: expect description pattern text
expect() { if [ "$status" -eq 0 ] && grep -qE "$2" <<< "$3"; then pass; else fail "$1" "$3"; fi; }
# The last tool exited 0 (what it prints is checked by another tool).
expect_success() { if [ "$status" -eq 0 ]; then pass; else fail "$1" "$out"; fi; }
# The last tool exited 0 and printed nothing but warnings and empty lines.
expect_quiet() { if [ "$status" -eq 0 ] && ! grep -qvE '^(WARNING.*)?$' <<< "$out"; then pass; else fail "$1" "$out"; fi; }

run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create --topic "$topic" --partitions 3 --config retention.ms=3600000
expect "kafka-topics --create" "Created topic $topic" "$out"
run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic "$topic"
expect "kafka-topics --describe" "PartitionCount: 3" "$out"
run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --alter --topic "$topic" --partitions 4
expect_quiet "kafka-topics --alter --partitions"
run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --describe --topic "$topic"
expect "kafka-topics --describe after --alter" "PartitionCount: 4" "$out"
run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --list
expect "kafka-topics --list" "^$topic$" "$out"
run org.apache.kafka.tools.ConfigCommand --bootstrap-server "$bootstrap" --entity-type topics --entity-name "$topic" --alter --add-config retention.bytes=1048576
expect "kafka-configs --alter" "Completed updating config" "$out"
run org.apache.kafka.tools.ConfigCommand --bootstrap-server "$bootstrap" --entity-type topics --entity-name "$topic" --describe
expect "kafka-configs --describe" "retention.bytes=1048576" "$out"
# Dynamic broker configs: the cluster-wide default and broker 1's own (both brokers under test
# are node 1), seen in the brokers' describe with their synonyms and in the topic's, which
# does not override them; a static property refused; then removed again.
configs() { run org.apache.kafka.tools.ConfigCommand --bootstrap-server "$bootstrap" "$@"; }
configs --entity-type brokers --entity-default --alter --add-config log.segment.bytes=536870912
expect "kafka-configs --entity-default --alter" "Completed updating default config for brokers" "$out"
configs --entity-type brokers --entity-name 1 --alter --add-config message.max.bytes=2000000
expect "kafka-configs --entity-name 1 --alter" "Completed updating config for broker 1" "$out"
configs --entity-type brokers --entity-default --describe
expect "kafka-configs --entity-default --describe" \
  "log.segment.bytes=536870912 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=536870912\}" "$out"
configs --entity-type brokers --entity-name 1 --describe
expect "kafka-configs --entity-name 1 --describe" \
  "message.max.bytes=2000000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588\}" "$out"
configs --entity-type topics --entity-name "$topic" --describe --all
expect "kafka-configs --describe --all (a topic takes the broker's dynamic configs)" \
  "max.message.bytes=2000000 .*DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000" "$out"
expect "kafka-configs --describe --all (and the cluster default)" \
  "segment.bytes=536870912 sensitive=false synonyms=\{DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=536870912, DEFAULT_CONFIG:log.segment.bytes=1073741824\}" "$out"
configs --entity-type brokers --entity-name 1 --alter --add-config socket.request.max.bytes=1048576
if [ "$status" -ne 0 ] && grep -q "Cannot update these configs dynamically: \[socket.request.max.bytes\]" <<< "$out"; then
  pass
else
  fail "kafka-configs --alter of a static broker config is refused" "$out"
fi
configs --entity-type brokers --entity-name 1 --alter --delete-config message.max.bytes
expect "kafka-configs --entity-name 1 --delete-config" "Completed updating config for broker 1" "$out"
configs --entity-type brokers --entity-default --alter --delete-config log.segment.bytes
expect "kafka-configs --entity-default --delete-config" "Completed updating default config for brokers" "$out"
# The change reaches the broker's own view a moment after it is answered (Kafka replays it).
for _ in $(seq 1 20); do
  configs --entity-type brokers --entity-default --describe
  [ "$status" -eq 0 ] && ! grep -q "log.segment.bytes" <<< "$out" && break
  sleep 0.3
done
if [ "$status" -eq 0 ] && ! grep -q "log.segment.bytes" <<< "$out"; then pass; else fail "kafka-configs --entity-default --describe after --delete-config" "$out"; fi
# Client quotas (a client id of this run's own, removed again: the reference Kafka is shared).
configs --entity-type clients --entity-name "quota-$topic" --alter \
  --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
expect "kafka-configs --alter client quotas" "Completed updating config for client quota-$topic" "$out"
configs --entity-type clients --entity-name "quota-$topic" --describe
expect "kafka-configs --describe client quotas" \
  "Quota configs for client-id 'quota-$topic' are .*producer_byte_rate=1048576.0" "$out"
expect "kafka-configs --describe client quotas (consumer)" "consumer_byte_rate=2097152.0" "$out"
configs --entity-type clients --entity-name "quota-$topic" --alter \
  --delete-config producer_byte_rate,consumer_byte_rate
expect "kafka-configs --delete-config client quotas" "Completed updating config for client quota-$topic" "$out"
configs --entity-type clients --entity-name "quota-$topic" --describe
if [ "$status" -eq 0 ] && ! grep -q "byte_rate" <<< "$out"; then pass; else fail "kafka-configs --describe after removing client quotas" "$out"; fi
run org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" --topic "$topic" < <(seq 1 100)
expect_success "kafka-console-producer"
run org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$bootstrap" --topic "$topic"
total=$(awk -F: '{s += $3} END {print s}' <<< "$out")
expect "kafka-console-producer + kafka-get-offsets" "^100$" "$total"
run org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic "$topic" \
  --from-beginning --max-messages 100 --group "console-$topic" --timeout-ms 30000
expect "kafka-console-consumer (group)" "^100$" "$(grep -cE '^[0-9]+$' <<< "$out")"
run org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records 200000 --record-size 100 --throughput -1 \
  --producer-props bootstrap.servers="$bootstrap" acks=all linger.ms=5
expect "kafka-producer-perf-test" "^200000 records sent" "$out"
grep -E "^200000 records sent" <<< "$out"
run org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bootstrap" --topic "$topic" --messages 200000 \
  --group "perf-$topic" --timeout 30000
# The data line: start, end, MB, MB/s, records (nMsg), records/s, …
consumed=$(tail -1 <<< "$out" | awk -F', *' '{print $5}')
# It stops at the first poll that reaches the target, so slightly more than asked is normal.
expect "kafka-consumer-perf-test" "^ok$" "$(awk -v n="$consumed" 'BEGIN { print (n >= 200000 && n < 210000) ? "ok" : n }')"
tail -1 <<< "$out"
run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --delete --topic "$topic"
expect_quiet "kafka-topics --delete"
# Deleting is asynchronous: the topic leaves the list within seconds.
for _ in $(seq 1 20); do
  run org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --list
  [ "$status" -eq 0 ] && ! grep -qx "$topic" <<< "$out" && break
  sleep 0.5
done
if [ "$status" -eq 0 ] && ! grep -qx "$topic" <<< "$out"; then pass; else fail "kafka-topics --list after --delete" "$out"; fi
echo "java tools: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
