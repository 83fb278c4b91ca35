#!/usr/bin/env bash
# Nexmark queries as Weir jobs: EVENTS events (1,000,000 by default; 1 in 50 a person, 3 in 50
# auctions, the rest bids) are generated into three 3-partition topics of a local Weir broker
# first, then each query runs on its own, exactly once, from the start of its input: the time is
# from the job's start until its committed offsets cover its whole input (and, for the windowed
# q12, its repartition topic has stopped moving), so it includes start-up and the group join.
# Prints each query's input records per second. The queries are cli/tests/nexmark.rs's (checked
# there against an oracle). Usage: [EVENTS=n] [QUERIES="q0 q1"] scripts/bench/nexmark.sh [weir]
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
events=${EVENTS:-1000000}
queries=${QUERIES:-q0 q1 q2 q3 q12}
work=$(mktemp -d)
trap 'pkill -f "weir broker --listen 127.0.0.1:39094" || true; rm -rf "$work"' EXIT
export WEIR_BOOTSTRAP=127.0.0.1:39094
"$weir" broker --listen 127.0.0.1:39094 --metrics-listen off --data-dir "$work/data" \
  --set group.initial.rebalance.delay.ms=0 > "$work/broker.log" 2>&1 &
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/broker.log" && break; sleep 0.1; done
"$weir" nexmark generate --events "$events" --partitions 3 --event-interval-us 1000 2> /dev/null

query_of() {
  case $1 in
    q0) echo 'SELECT auction, bidder, price, "dateTime", extra FROM "nexmark-bid"' ;;
    q1) echo 'SELECT auction, bidder, 0.908 * price AS price, "dateTime", extra FROM "nexmark-bid"' ;;
    q2) echo 'SELECT auction, price FROM "nexmark-bid" WHERE auction % 123 = 0' ;;
    q3) echo "SELECT p.name, p.city, p.state, a.id FROM \"nexmark-auction\" a JOIN person p
              ON a.seller = p._key
              WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA')" ;;
    q12) echo 'SELECT bidder, count(*) AS bid_count,
                 CAST(tumble("dateTime", INTERVAL '"'"'10'"'"' SECOND) AS BIGINT) AS starttime
               FROM "nexmark-bid" GROUP BY bidder, tumble("dateTime", INTERVAL '"'"'10'"'"' SECOND)' ;;
  esac
}

for q in $queries; do
  case $q in
    q3) input=nexmark-auction; extra=(--table person=nexmark-person) ;;
    *) input=nexmark-bid; extra=() ;;
  esac
  "$weir" topic create "$q-out" -p 3 > /dev/null 2>&1 || true
  start=$(date +%s.%N)
  "$weir" job run --name "bench-$q" --input "$input" --output "$q-out" "${extra[@]}" \
    --query "$(query_of "$q")" --checkpoint-interval-ms 1000 --checkpoint-max-records 50000 \
    > "$work/$q.log" 2>&1 &
  job=$!
  end=
  last_internal=
  while :; do
    # Columns of `weir group describe`: topic partition committed end lag.
    progress=$("$weir" group describe "bench-$q" 2>/dev/null \
      | awk -v input="$input" '$1==input{c+=$3; e+=$4} $1 ~ /repartition$/{r+=$3} END{print c+0, e+0, r+0}' || true)
    read -r committed input_end internal <<< "${progress:-0 0 0}"
    now=$(date +%s.%N)
    if [ "${input_end:-0}" -gt 0 ] && [ "$committed" -ge "$input_end" ]; then
      if [ "$q" != q12 ]; then end=$now; break; fi
      if [ "$internal" != "$last_internal" ]; then
        last_internal=$internal; end=$now
      elif python3 -c "import sys; sys.exit(0 if $now - $end > 3 else 1)"; then
        break
      fi
    fi
    sleep 0.2
  done
  kill -TERM "$job"; wait "$job" || true
  python3 -c "print('$q: %d input records in %.2f s = %.0f records/s' % ($input_end, $end - $start, $input_end / ($end - $start)))"
done
