#!/usr/bin/env bash
# Java clients against a three-node Weir cluster while brokers are killed -9 and restarted:
#   1. Kafka's VerifiableProducer (idempotent, acks=all; the tool Kafka's own system tests use)
#      writes while the leader of partition 0 is killed; a console consumer must then read every
#      acknowledged value exactly once;
#   2. the Kafka Streams exactly_once_v2 word count (compat/streams/run.sh, itself killed -9
#      mid-way) runs while each broker in turn is killed and restarted — so its transaction
#      coordinator dies with transactions open — and its read_committed output must be exact;
#   3. Kafka's kafka-metadata-quorum tool (DescribeQuorum) describes the quorum: a leader among
#      the three voters, each voter's log end.
# Usage: compat/cluster.sh PATH/TO/weir      Prints "java cluster: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
cache=${WEIR_CACHE:-$HOME/.cache/weir}
version=$(grep -o '<kafka.version>[^<]*' "$here/kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
work=$(mktemp -d)
cluster_properties=(default.replication.factor=3 min.insync.replicas=2
  group.initial.rebalance.delay.ms=0 offsets.topic.num.partitions=6
  transaction.state.log.num.partitions=6)
# shellcheck source=../scripts/lib/cluster.sh
source "$here/../scripts/lib/cluster.sh"
chaos_pid=
cleanup() {
  [ -n "$chaos_pid" ] && { kill "$chaos_pid"; wait "$chaos_pid"; } 2> /dev/null
  cluster_stop
  rm -rf "$work"
}
trap cleanup EXIT
tool() { java -Xmx256m -Dlog4j2.level=WARN -cp "$libs/*" "$@"; }
passed=0
failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*" >&2; fi; }

verifiable_producer_fails_over() {
  local topic=java-failover messages=30000
  "$weir" topic create -b "$bootstrap" "$topic" --partitions 3 --replicas 3 > /dev/null || return 1
  printf 'enable.idempotence=true\nacks=all\nretries=2147483647\ndelivery.timeout.ms=120000\n' \
    > "$work/producer.properties"
  tool org.apache.kafka.tools.VerifiableProducer --bootstrap-server "$bootstrap" --topic "$topic" \
    --max-messages "$messages" --throughput 10000 --producer.config "$work/producer.properties" \
    > "$work/produced.json" 2> "$work/producer.log" &
  local producer=$!
  sleep 1.5
  local leader
  leader=$(cluster_leader "$topic" 0)
  [ -n "$leader" ] || { echo "no leader of $topic-0" >&2; return 1; }
  echo "java cluster: killing broker $leader (leader of $topic-0) under VerifiableProducer" >&2
  cluster_kill "$leader"
  sleep 5
  cluster_restart "$leader"
  wait "$producer" || { echo "VerifiableProducer failed:" >&2; tail -5 "$work/producer.log" >&2; return 1; }
  cluster_wait_in_sync || return 1
  tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" --topic "$topic" \
    --from-beginning --timeout-ms 20000 > "$work/consumed.txt" 2> /dev/null
  python3 - "$work/produced.json" "$work/consumed.txt" "$messages" <<'PY'
import collections, json, sys
acked = set()
for line in open(sys.argv[1]):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("name") == "producer_send_success":
        acked.add(event["value"])
read = collections.Counter(line.strip() for line in open(sys.argv[2]) if line.strip())
lost = sorted(acked - set(read), key=int)
duplicated = sorted((v for v, n in read.items() if n > 1), key=int)
print(f"java cluster: {len(acked)} acknowledged, {sum(read.values())} read, "
      f"{len(lost)} lost, {len(duplicated)} duplicated", file=sys.stderr)
# Unbounded retries and a 120 s delivery timeout outlast the 5 s outage: a healthy run has every
# message acknowledged (measured: 30000 of 30000).
expected = int(sys.argv[3])
if len(acked) != expected or lost or duplicated:
    print(f"{len(acked)} of {expected} acknowledged; lost e.g. {lost[:5]}, "
          f"duplicated e.g. {duplicated[:5]}", file=sys.stderr)
    sys.exit(1)
PY
}

# Kills each broker in turn (waiting for every replica to be back in sync in between).
chaos() {
  sleep 8
  for id in 1 2 3; do
    echo "java cluster: killing broker $id under Kafka Streams" >&2
    cluster_kill "$id"
    sleep 4
    cluster_restart "$id"
    cluster_wait_in_sync || return 1
    sleep 4
  done
}

streams_exact_through_broker_kills() {
  chaos &
  chaos_pid=$!
  WORDCOUNT_REPLICATION_FACTOR=3 "$here/streams/run.sh" "$bootstrap" 20000 2
  local status=$?
  wait "$chaos_pid"
  local chaos_status=$?
  chaos_pid=
  [ "$status" -eq 0 ] && [ "$chaos_status" -eq 0 ]
}

metadata_quorum_described() {
  local status replication
  status=$(tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$bootstrap" \
    describe --status 2>&1) || { echo "$status" >&2; return 1; }
  replication=$(tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$bootstrap" \
    describe --replication 2>&1) || { echo "$replication" >&2; return 1; }
  echo "$status" | grep -Eq '^LeaderId: +[123]$' \
    && echo "$status" | grep -q '"id": 1,.*"id": 2,.*"id": 3,' \
    && [ "$(echo "$replication" | grep -cE '^[123] .*(Leader|Follower)')" -eq 3 ] \
    || { printf 'unexpected quorum description:\n%s\n%s\n' "$status" "$replication" >&2; return 1; }
}

if cluster_start; then
  record metadata_quorum_described
  record verifiable_producer_fails_over
  record streams_exact_through_broker_kills
else
  failed=$((failed + 1))
fi
if [ "$failed" -ne 0 ]; then
  echo "java cluster: node warnings and errors (last 10 each):"
  for id in 1 2 3; do grep -E " (WARN|ERROR) " "$work/node-$id.log" | grep -v openraft | tail -10; done
fi
echo "java cluster: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
