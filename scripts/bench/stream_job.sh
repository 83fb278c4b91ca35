#!/usr/bin/env bash
# Throughput of an exactly-once stateless SQL job (filter + projection) through a local Weir
# broker: RECORDS JSON records (1,000,000 by default) are written to a 3-partition topic first,
# then `weir job run` processes them; the time is from the job's start until its committed
# offsets cover the whole input (so it includes start-up and the group join).
# Usage: scripts/bench/stream_job.sh [path/to/weir]
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
records=${RECORDS:-1000000}
work=$(mktemp -d)
trap 'pkill -f "weir broker --listen 127.0.0.1:39093" || true; rm -rf "$work"' EXIT
export WEIR_BOOTSTRAP=127.0.0.1:39093
"$weir" broker --listen 127.0.0.1:39093 --metrics-listen off --data-dir "$work/data" > "$work/broker.log" 2>&1 &
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/broker.log" && break; sleep 0.1; done
"$weir" topic create bench-in -p 3 > /dev/null
"$weir" topic create bench-out -p 3 > /dev/null
python3 -c "
import sys
for i in range($records):
    sys.stdout.write('{\"id\": %d, \"path\": \"/p%d\", \"status\": %d, \"bytes\": %d}\n' % (i, i % 100, (200, 404, 500)[i % 3], i % 5000))
" > "$work/input.jsonl"
"$weir" produce bench-in -z lz4 < "$work/input.jsonl" 2> /dev/null
start=$(date +%s.%N)
"$weir" job run --name bench --input bench-in --output bench-out \
  --query 'SELECT _key, id, path, status FROM "bench-in" WHERE status >= 400' \
  --checkpoint-interval-ms 1000 --checkpoint-max-records 50000 > "$work/job.log" 2>&1 &
job=$!
while :; do
  # (the group does not exist until the job joins it)
  done_records=$("$weir" group describe bench 2>/dev/null | awk '$1=="bench-in"{s+=$3} END{print s+0}' || true)
  [ "${done_records:-0}" -ge "$records" ] && break
  sleep 0.2
done
end=$(date +%s.%N)
kill -TERM "$job"; wait "$job" || true
python3 -c "print('stateless job: $records records in %.2f s = %.0f records/s' % ($end - $start, $records / ($end - $start)))"
tail -1 "$work/job.log"
