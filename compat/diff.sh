#!/usr/bin/env bash
# The differential test: one scripted client session (compat/scenario) against Weir and against
# a real Apache Kafka 4.x broker; the observable results must match except for the documented
# differences in compat/known-differences.json (see COMPATIBILITY.md).
# Usage: compat/diff.sh PATH/TO/weir PATH/TO/weir-compat-scenario
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
scenario=$2
work=$(mktemp -d)
weir_pid=
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null
  KAFKA_PORT=29192 "$here/kafka/stop.sh"
  rm -rf "$work"
}
trap cleanup EXIT

kafka=$(KAFKA_PORT=29192 "$here/kafka/start.sh") || { echo "compat: reference Kafka did not start"; exit 1; }
"$weir" broker --listen 127.0.0.1:0 --metrics-listen off --data-dir "$work/weir-data" > "$work/weir.log" 2>&1 &
weir_pid=$!
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/weir.log" && break; sleep 0.1; done
weir_bootstrap=$(grep -o 'listen=[0-9.:]*' "$work/weir.log" | head -1 | cut -d= -f2)

run=run$$
"$scenario" "$weir_bootstrap" "$run" > "$work/weir.json" || { echo "compat: scenario failed against Weir"; exit 1; }
"$scenario" "$kafka" "$run" > "$work/kafka.json" || { echo "compat: scenario failed against Kafka"; exit 1; }
python3 "$here/compare.py" "$work/weir.json" "$work/kafka.json" "$here/known-differences.json"
