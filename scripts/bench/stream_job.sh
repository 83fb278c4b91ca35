#!/usr/bin/env bash
# Throughput of an exactly-once SQL job through a local Weir broker: RECORDS JSON records
# (1,000,000 by default) are written to a 3-partition topic first, then `weir job run` processes
# them; the time is from the job's start until its committed offsets cover the whole input and,
# for the windowed job, its repartition topic too (so it includes start-up and the group join).
# JOB=stateless (default): a filter + projection. JOB=windowed: a 1-minute tumbling count per
# status (over the
# records' `time` field: ~17 minutes of event time at 1000 records a second).
# Usage: [JOB=windowed] scripts/bench/stream_job.sh [path/to/weir]
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
records=${RECORDS:-1000000}
kind=${JOB:-stateless}
work=$(mktemp -d)
trap 'pkill -f "weir broker --listen 127.0.0.1:39093" || true; rm -rf "$work"' EXIT
export WEIR_BOOTSTRAP=127.0.0.1:39093
# No initial rebalance delay (Kafka's default 3 s would be part of every run's time).
"$weir" broker --listen 127.0.0.1:39093 --metrics-listen off --data-dir "$work/data" \
  --set group.initial.rebalance.delay.ms=0 > "$work/broker.log" 2>&1 &
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/broker.log" && break; sleep 0.1; done
# A broker already on the port would be used instead of this one (with its own topics): fail.
grep -q "weir broker ready" "$work/broker.log" \
  || { echo "the bench's broker did not start:" >&2; tail -5 "$work/broker.log" >&2; exit 1; }
"$weir" topic create bench-in -p 3 > /dev/null
"$weir" topic create bench-out -p 3 > /dev/null
python3 -c "
import sys
for i in range($records):
    sys.stdout.write('{\"id\": %d, \"time\": %d, \"path\": \"/p%d\", \"status\": %d, \"bytes\": %d}\n' % (i, 1700000000000 + i, i % 100, (200, 404, 500)[i % 3], i % 5000))
" > "$work/input.jsonl"
"$weir" produce bench-in -z lz4 < "$work/input.jsonl" 2> /dev/null
case $kind in
  stateless) query='SELECT _key, id, path, status FROM "bench-in" WHERE status >= 400' ;;
  windowed) query="SELECT tumble(time, INTERVAL '1 minute') AS minute, status, count(*) AS n
                   FROM \"bench-in\" GROUP BY tumble(time, INTERVAL '1 minute'), status" ;;
  *) echo "JOB is stateless or windowed" >&2; exit 2 ;;
esac
start=$(date +%s.%N)
RUST_LOG=${RUST_LOG:-info} "$weir" job run --name bench --input bench-in --output bench-out --query "$query" \
  --checkpoint-interval-ms 1000 --checkpoint-max-records 50000 > "$work/job.log" 2>&1 &
job=$!
end=
last_internal=
while :; do
  # (the group does not exist until the job joins it) Columns: topic partition committed end lag.
  # A repartition partition's committed offset stops one short of its end: the last transaction's
  # commit marker. So the windowed job is done when the input is covered and the repartition
  # offsets have stopped moving (the end is the moment they last moved).
  progress=$("$weir" group describe bench 2>/dev/null | awk '$1=="bench-in"{s+=$3} $1 ~ /repartition$/{r+=$3} END{print s+0, r+0}' || true)
  read -r done_records internal <<< "${progress:-0 0}"
  now=$(date +%s.%N)
  if [ "$kind" = stateless ]; then
    [ "${done_records:-0}" -ge "$records" ] && { end=$now; break; }
  elif [ "${done_records:-0}" -ge "$records" ]; then
    if [ "$internal" != "$last_internal" ]; then
      last_internal=$internal; end=$now
    elif python3 -c "import sys; sys.exit(0 if $now - $end > 3 else 1)"; then
      break
    fi
  fi
  sleep 0.2
done
kill -TERM "$job"; wait "$job" || true
python3 -c "print('$kind job: $records records in %.2f s = %.0f records/s' % ($end - $start, $records / ($end - $start)))"
tail -1 "$work/job.log"
[ -z "${BENCH_KEEP_LOG:-}" ] || cp "$work/job.log" "$BENCH_KEEP_LOG"
