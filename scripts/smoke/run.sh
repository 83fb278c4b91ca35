#!/usr/bin/env bash
# Starts the weir binary as users do, runs the client smoke sessions against it, checks a clean
# SIGTERM shutdown and that data survives a restart. Prints "N passed, N failed".
# Usage: run.sh PATH/TO/weir PATH/TO/python
set -uo pipefail
weir=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'kill "$broker_pid" 2>/dev/null; rm -rf "$work"' EXIT
passed=0
failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*" >&2; fi; }

start_broker() {
  "$weir" broker --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data-dir "$work/data" \
    --set log.retention.check.interval.ms=1000 > "$work/broker.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 1 100); do
    if grep -q "weir broker ready" "$work/broker.log"; then break; fi
    sleep 0.1
  done
  bootstrap=$(grep -o 'listen=[0-9.:]*' "$work/broker.log" | head -1 | cut -d= -f2)
  metrics=$(grep -o 'metrics=Some([0-9.:]*)' "$work/broker.log" | head -1 | sed 's/metrics=Some(\(.*\))/\1/')
  [ -n "$bootstrap" ] || { cat "$work/broker.log"; return 1; }
}

stop_broker() {
  kill -TERM "$broker_pid"
  wait "$broker_pid"
  local code=$?
  grep -q "shutdown complete" "$work/broker.log" && [ "$code" -eq 0 ] && [ -f "$work/data/.clean-shutdown" ]
}

metrics_served() { curl -sf "http://$metrics/metrics" | grep -q '^weir_requests_total{api="Produce"}'; }
survives_restart() {
  local count
  count=$(kcat -b "$bootstrap" -C -t restart-check -o beginning -e -q -f '%s\n' | wc -l)
  [ "$count" -eq 100 ]
}
unknown_property_is_refused() {
  ! "$weir" broker --listen 127.0.0.1:0 --metrics-listen off --data-dir "$work/other" --set no.such.property=1 2> "$work/refused.log" \
    && grep -q "unknown configuration property 'no.such.property'" "$work/refused.log"
}

record start_broker
record "$here/kcat_smoke.sh" "$bootstrap"
record "$python" "$here/kafka_python_smoke.py" "$bootstrap"
seq 1 100 | kcat -b "$bootstrap" -P -t restart-check
record metrics_served
record stop_broker
record start_broker
record survives_restart
record stop_broker
record unknown_property_is_refused
echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
