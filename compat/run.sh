#!/usr/bin/env bash
# Compatibility yardsticks: starts a real Apache Kafka 4.x (compat/kafka/start.sh) beside a Weir
# broker, then
#   1. the differential test: compat/scenario against both, transcripts compared (compare.py),
#      allowed to differ only where compat/known-differences.json says why;
#   2. the Java client session (compat/java/ClientSession.java) against both, and the
#      confluent-kafka conformance checks (compat/confluent/conformance.py) against both;
#   3. Kafka's command-line tools (compat/java/tools.sh) against both;
#   4. franz-go's pkg/kgo integration tests on compat/franz-go/allow-list.txt against Weir;
#   5. a Kafka Streams exactly_once_v2 word count killed -9 mid-way (compat/streams/run.sh)
#      against both: its committed output must be exact;
#   6. Java clients against a three-node Weir cluster with brokers killed -9 (compat/cluster.sh):
#      Kafka's VerifiableProducer fails over losing nothing, the Streams word count stays exact;
#   7. kcat, confluent-kafka, kafka-python, kafkajs, franz-go and Kafka's Java console clients
#      over TLS and mTLS against Weir (compat/tls/clients.sh);
#   8. the security differential (compat/security/run.sh): both brokers with SASL_SSL and the
#      StandardAuthorizer, the scenario's security section, kafka-acls.sh and `weir acl`;
#   9. kcat, confluent-kafka, kafka-python, kafkajs, franz-go, Kafka's console clients and
#      kafka-configs over SASL (PLAIN, SCRAM) against Weir and a second reference Kafka
#      configured alike (compat/sasl/clients.sh);
#  10. the Streams word count as a SCRAM user over SASL_SSL holding only its ACLs, killed -9
#      mid-way, against Weir with the StandardAuthorizer (compat/streams/secured.sh);
# Usage: compat/run.sh PATH/TO/weir PATH/TO/weir-compat-scenario
# Prints "compat: N passed, N failed" last; exits non-zero on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
scenario=$2
python=${WEIR_CACHE:-$HOME/.cache/weir}/venv/bin/python
work=$(mktemp -d)
weir_pid=
export KAFKA_PORT=${KAFKA_PORT:-29192}
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null
  "$here/kafka/stop.sh"
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*" >&2; fi; }

kafka=$("$here/kafka/start.sh") || { echo "compat: reference Kafka did not start"; echo "compat: 0 passed, 1 failed"; exit 1; }
# The same group settings as the reference Kafka (compat/kafka/start.sh).
"$weir" broker --listen 127.0.0.1:0 --metrics-listen off --data-dir "$work/weir-data" \
  --set group.initial.rebalance.delay.ms=0 > "$work/weir.log" 2>&1 &
weir_pid=$!
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/weir.log" && break; sleep 0.1; done
weir_bootstrap=$(grep -o 'listen=[0-9.:]*' "$work/weir.log" | head -1 | cut -d= -f2)

differential() {
  local run=run$$
  "$scenario" "$weir_bootstrap" "$run" > "$work/weir.json" || return 1
  "$scenario" "$kafka" "$run" > "$work/kafka.json" || return 1
  python3 "$here/compare.py" "$work/weir.json" "$work/kafka.json" "$here/known-differences.json"
}
record differential
record "$here/java/run.sh" "$weir_bootstrap"
record "$here/java/run.sh" "$kafka"
record "$python" "$here/confluent/conformance.py" "$weir_bootstrap"
record "$python" "$here/confluent/conformance.py" "$kafka"
record "$here/java/tools.sh" "$weir_bootstrap"
record "$here/java/tools.sh" "$kafka"
record "$here/franz-go/run.sh" "$weir_bootstrap"
record "$here/streams/run.sh" "$weir_bootstrap"
record "$here/streams/run.sh" "$kafka"
record "$here/cluster.sh" "$weir"
record "$here/tls/clients.sh" "$weir"
record "$here/security/run.sh" "$weir" "$scenario"
record "$here/sasl/clients.sh" "$weir"
record "$here/streams/secured.sh" "$weir"
if [ "$failed" -ne 0 ]; then
  echo "compat: Weir's warnings and errors (last 40):"
  grep -E " (WARN|ERROR) " "$work/weir.log" | grep -v "Connection reset by peer" | tail -40
fi
echo "compat: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
