#!/usr/bin/env bash
# Stops the reference Kafka broker started by compat/kafka/start.sh and removes its data.
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
port=${KAFKA_PORT:-19092}
run=${KAFKA_RUN_DIR:-$cache/kafka-run-$port}
if [ -f "$run/kafka.pid" ]; then
  pid=$(cat "$run/kafka.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -rf "$run"
