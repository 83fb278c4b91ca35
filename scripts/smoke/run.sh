#!/usr/bin/env bash
# Starts the weir binary as users do, runs the client smoke sessions against it, checks a clean
# SIGTERM shutdown and that data survives a restart. Prints "N passed, N failed".
# Usage: run.sh PATH/TO/weir PATH/TO/python NODE_MODULES_DIR
set -uo pipefail
weir=$1
python=$2
node_modules=$3
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

metrics_served() {
  local out
  out=$(curl -sf "http://$metrics/metrics") || return 1
  grep -q '^weir_requests_total{api="Produce"}' <<< "$out" || return 1
  # Consumer lag per group and partition, from the broker itself.
  "$weir" topic create -b "$bootstrap" lag-check -p 1 > /dev/null || return 1
  seq 1 5 | "$weir" produce -b "$bootstrap" lag-check 2> /dev/null || return 1
  "$weir" consume -b "$bootstrap" lag-check --group lag-group --count 2 > /dev/null || return 1
  out=$(curl -sf "http://$metrics/metrics") || return 1
  grep -q '^weir_group_lag{group="lag-group",partition="0",topic="lag-check"} 3$' <<< "$out" || { grep weir_group <<< "$out"; "$weir" group describe -b "$bootstrap" lag-group; return 1; }
}
survives_restart() {
  local count
  count=$(kcat -b "$bootstrap" -C -t restart-check -o beginning -e -q -f '%s\n' | wc -l)
  [ "$count" -eq 100 ]
}
cli_round_trip() {
  local out
  "$weir" topic create -b "$bootstrap" cli-check -p 2 -c retention.ms=3600000 > /dev/null || return 1
  out=$("$weir" topic describe -b "$bootstrap" cli-check) || return 1
  grep -q 'retention.ms=3600000  (set)' <<< "$out" || return 1
  "$weir" topic alter-config -b "$bootstrap" cli-check -c segment.bytes=1048576 > /dev/null || return 1
  out=$("$weir" topic describe -b "$bootstrap" cli-check) || return 1
  grep -q 'segment.bytes=1048576  (set)' <<< "$out" || return 1
  if "$weir" topic alter-config -b "$bootstrap" cli-check -c retention.ms=soon 2> /dev/null; then return 1; fi
  printf 'k1:hello\nk2:world\n' | "$weir" produce -b "$bootstrap" cli-check -K : -z zstd -p 1 -H src=smoke 2> /dev/null || return 1
  out=$("$weir" consume -b "$bootstrap" cli-check -p 1 --json) || return 1
  grep -q '"key":"k1"' <<< "$out" && grep -q '"value":"world"' <<< "$out" \
    && grep -q '"key":"src","value":"smoke"' <<< "$out" || return 1
  [ "$("$weir" consume -b "$bootstrap" cli-check -p 1 -o 1 --print-key)" = "$(printf 'k2\tworld')" ] || return 1
  out=$("$weir" topic list -b "$bootstrap") || return 1
  grep -q '^cli-check' <<< "$out" || return 1
  out=$("$weir" cluster info -b "$bootstrap") || return 1
  grep -q 'topics:' <<< "$out" || return 1
  # Group consumption resumes from committed offsets; describe shows the lag.
  out=$("$weir" consume -b "$bootstrap" cli-check --group cli-group --idle-ms 2000) || return 1
  [ "$(wc -l <<< "$out")" -eq 2 ] || return 1
  printf 'k3:again\n' | "$weir" produce -b "$bootstrap" cli-check -K : -p 0 2> /dev/null || return 1
  out=$("$weir" group describe -b "$bootstrap" cli-group) || return 1
  grep -qE '^cli-check\s+1\s+2\s+2\s+0$' <<< "$out" || return 1
  [ "$("$weir" consume -b "$bootstrap" cli-check --group cli-group --idle-ms 2000)" = "again" ] || return 1
  out=$("$weir" group list -b "$bootstrap") || return 1
  grep -q '^cli-group' <<< "$out" || return 1
  "$weir" group delete -b "$bootstrap" cli-group > /dev/null || return 1
  "$weir" topic delete -b "$bootstrap" cli-check > /dev/null || return 1
  out=$("$weir" topic list -b "$bootstrap") || return 1
  ! grep -q '^cli-check' <<< "$out"
}
group_seek_round_trip() {
  seq 1 10 | "$weir" produce -b "$bootstrap" seek-check -p 0 2> /dev/null || return 1
  [ "$("$weir" consume -b "$bootstrap" seek-check --group seek-group --idle-ms 2000 | wc -l)" -eq 10 ] || return 1
  "$weir" group seek -b "$bootstrap" seek-group --topic seek-check --to 7 > /dev/null || return 1
  [ "$("$weir" consume -b "$bootstrap" seek-check --group seek-group --idle-ms 2000 | tr '\n' ' ')" = "8 9 10 " ] || return 1
  "$weir" group seek -b "$bootstrap" seek-group --topic seek-check --to earliest > /dev/null || return 1
  [ "$("$weir" consume -b "$bootstrap" seek-check --group seek-group --idle-ms 2000 | wc -l)" -eq 10 ] || return 1
  # A group with a live member is refused.
  "$weir" consume -b "$bootstrap" seek-check --group seek-group --idle-ms 15000 > /dev/null &
  local member=$!
  for _ in $(seq 1 100); do
    "$weir" group describe -b "$bootstrap" seek-group | grep -q '^state: Stable' && break
    sleep 0.1
  done
  local refused=0
  "$weir" group seek -b "$bootstrap" seek-group --topic seek-check --to earliest 2> "$work/seek.err" > /dev/null || refused=1
  kill "$member" 2> /dev/null; wait "$member" 2> /dev/null
  [ "$refused" -eq 1 ] && grep -q 'seek-group is Stable with 1 member' "$work/seek.err"
}
txn_cli() {
  # A producer that dies inside a transaction leaves it hanging; the CLI finds and aborts it.
  "$python" - "$bootstrap" <<'PY' || return 1
import os, sys
from kafka import KafkaProducer
producer = KafkaProducer(bootstrap_servers=sys.argv[1], transactional_id="smoke-hanging")
producer.init_transactions()
producer.begin_transaction()
producer.send("txn-check", b"never committed", partition=0)
producer.flush()
os._exit(0)
PY
  # Each step says what it saw when it fails.
  expect() { local pattern=$1; shift; local out; out=$("$@" 2>&1); grep -qE "$pattern" <<< "$out" && return 0; echo "txn_cli: '$*' printed:" >&2; echo "$out" >&2; return 1; }
  expect '^smoke-hanging\s+[0-9]+\s+Ongoing$' "$weir" txn list -b "$bootstrap" || return 1
  expect '^state: Ongoing' "$weir" txn describe -b "$bootstrap" smoke-hanging || return 1
  expect '\s0$' "$weir" txn producers -b "$bootstrap" --topic txn-check -p 0 || return 1
  "$weir" txn abort -b "$bootstrap" --topic txn-check -p 0 --start-offset 0 > /dev/null || return 1
  # The partition's producer has no open transaction any more.
  expect '\s-1$' "$weir" txn producers -b "$bootstrap" --topic txn-check -p 0
}
unknown_property_is_refused() {
  ! "$weir" broker --listen 127.0.0.1:0 --metrics-listen off --data-dir "$work/other" --set no.such.property=1 2> "$work/refused.log" \
    && grep -q "unknown configuration property 'no.such.property'" "$work/refused.log"
}

record start_broker
record "$here/kcat_smoke.sh" "$bootstrap"
record "$python" "$here/kafka_python_smoke.py" "$bootstrap"
record /usr/bin/python3 -s "$here/debian_kafka_python_smoke.py" "$bootstrap"
record "$python" "$here/confluent_kafka_smoke.py" "$bootstrap"
record env NODE_PATH="$node_modules" node "$here/kafkajs_smoke.js" "$bootstrap"
record cli_round_trip
record group_seek_round_trip
record txn_cli
seq 1 100 | kcat -b "$bootstrap" -P -t restart-check
record metrics_served
record stop_broker
record start_broker
record survives_restart
record stop_broker
record unknown_property_is_refused
record "$here/cluster_failover.sh" "$weir" "$python"
echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
