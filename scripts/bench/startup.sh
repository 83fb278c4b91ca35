#!/usr/bin/env bash
# Start-up time with many partitions: creates TOPICS x PARTITIONS partitions, writes a little,
# then restarts after a clean shutdown and after kill -9, printing the broker's "logs loaded" time.
# Usage: scripts/bench/startup.sh [path/to/weir]   (TOPICS=30 PARTITIONS=100 by default)
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
topics=${TOPICS:-30}
partitions=${PARTITIONS:-100}
work=$(mktemp -d)
trap 'pkill -f "weir broker --listen 127.0.0.1:39092" || true; rm -rf "$work"' EXIT
export WEIR_BOOTSTRAP=127.0.0.1:39092
start() {
  "$weir" broker --listen 127.0.0.1:39092 --metrics-listen off --data-dir "$work/data" > "$work/$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do grep -q "weir broker ready" "$work/$1.log" && return; sleep 0.1; done
  echo "broker did not start" >&2; exit 1
}
start create
for i in $(seq 1 "$topics"); do "$weir" topic create "t$i" -p "$partitions" > /dev/null; done
seq 1 100000 | "$weir" produce t1 2> /dev/null
kill -TERM "$pid"; wait "$pid" || true
start clean
echo "after clean shutdown: $(grep -o 'partitions=[0-9]* elapsed_ms=[0-9]*' "$work/clean.log")"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
start crash
echo "after kill -9:        $(grep -o 'partitions=[0-9]* elapsed_ms=[0-9]*' "$work/crash.log")"
kill -TERM "$pid"; wait "$pid" || true
