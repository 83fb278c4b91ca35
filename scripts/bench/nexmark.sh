#!/usr/bin/env bash
# Nexmark queries as Weir jobs, side by side with the same queries in Apache Flink SQL.
#
# EVENTS events (1,000,000 by default; 1 in 50 a person, 3 in 50 auctions, the rest bids) are
# generated into three 3-partition topics of a local Weir broker first; then, RUNS times, each
# query runs once on each engine (which goes first alternates run by run), exactly once, from
# the start of its input, reading the same topics of the same broker on the same cores:
# - Weir: `weir job run` (checkpoints every second or 50,000 records), timed from its start until
#   its committed offsets cover its input (q12: and its repartition topic stopped moving), so it
#   includes start-up and the group join;
# - Flink 2.x: scripts/bench/flink/NexmarkFlink.java on a local MiniCluster (parallelism 2, a
#   checkpoint every second to files, Kafka SQL connector, read_committed, exactly-once sink), its input
#   bounded at the latest offsets so the job ends when done; timed from the INSERT's submission
#   until the job finished (MiniCluster start, planning and the final checkpoint included; the
#   JVM's start, the DDL and the shutdown left out).
# Each run prints the input records per second, the engine's peak RSS and its output record
# count (read back committed); the end prints each engine's mean rate per query and Weir/Flink.
# The queries are cli/tests/nexmark.rs's (checked there against an oracle).
# Usage: [EVENTS=n] [RUNS=n] [QUERIES="q0 q1"] [ENGINES="weir flink"] scripts/bench/nexmark.sh [weir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
events=${EVENTS:-1000000}
runs=${RUNS:-2}
queries=${QUERIES:-q0 q1 q2 q3 q12}
engines=${ENGINES:-weir flink}
work=$(mktemp -d)
trap 'pkill -f "weir broker --listen 127.0.0.1:39094" || true; rm -rf "$work"' EXIT
export WEIR_BOOTSTRAP=127.0.0.1:39094

if [[ " $engines " == *" flink "* ]]; then
  version=$(grep -o '<flink.version>[^<]*' "$here/flink/pom.xml" | cut -d'>' -f2)
  libs=$cache/flink-$version/libs
  if [ ! -f "$libs/.complete" ]; then
    mkdir -p "$libs"
    mvn -q -B -f "$here/flink/pom.xml" dependency:copy-dependencies -DoutputDirectory="$libs" >&2
    touch "$libs/.complete"
  fi
  classes=$cache/flink-nexmark-classes
  if [ ! -f "$classes/NexmarkFlink.class" ] || [ "$here/flink/NexmarkFlink.java" -nt "$classes/NexmarkFlink.class" ]; then
    mkdir -p "$classes"
    javac -d "$classes" -cp "$libs/*" "$here/flink/NexmarkFlink.java"
  fi
fi

"$weir" broker --listen 127.0.0.1:39094 --metrics-listen off --data-dir "$work/data" \
  --set group.initial.rebalance.delay.ms=0 > "$work/broker.log" 2>&1 &
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/broker.log" && break; sleep 0.1; done
"$weir" nexmark generate --events "$events" --partitions 3 --event-interval-us 1000 2> /dev/null

# The number of committed records in a topic (kcat: faster than `weir sql` at millions).
count_of() {
  kcat -b "$WEIR_BOOTSTRAP" -C -t "$1" -o beginning -e -q -X isolation.level=read_committed \
    -f '\n' | wc -l
}
declare -A inputs
inputs[nexmark-bid]=$(count_of nexmark-bid)
inputs[nexmark-auction]=$(count_of nexmark-auction)

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
input_of() { if [ "$1" = q3 ]; then echo nexmark-auction; else echo nexmark-bid; fi; }

# Runs query $1 as a Weir job writing to topic $2; prints "SECONDS PEAK_RSS_KB".
run_weir() {
  local q=$1 out=$2 input extra=()
  input=$(input_of "$q")
  [ "$q" = q3 ] && extra=(--table person=nexmark-person)
  local start end= last_internal= job progress committed input_end internal now rss
  start=$(date +%s.%N)
  "$weir" job run --name "$out" --input "$input" --output "$out" "${extra[@]}" \
    --query "$(query_of "$q")" --checkpoint-interval-ms 1000 --checkpoint-max-records "${CHECKPOINT_MAX_RECORDS:-50000}" \
    > "$work/$out.log" 2>&1 &
  job=$!
  while :; do
    # Columns of `weir group describe`: topic partition committed end lag.
    progress=$("$weir" group describe "$out" 2>/dev/null \
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
  rss=$(awk '/VmHWM/{print $2}' "/proc/$job/status")
  kill -TERM "$job"; wait "$job" || true
  python3 -c "print('%.3f' % ($end - $start))" | tr '\n' ' '
  echo "$rss"
}

# Runs query $1 in Flink writing to topic $2; prints "SECONDS PEAK_RSS_KB".
run_flink() {
  local q=$1 out=$2 ms
  /usr/bin/time -f "%M" -o "$work/$out.rss" java -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
    -cp "$libs/*:$classes" NexmarkFlink "$WEIR_BOOTSTRAP" "$q" "$out" 2 1000 "$work/$out-checkpoints" > "$work/$out.log" 2>&1 \
    || { echo "flink $q failed:" >&2; tail -20 "$work/$out.log" >&2; return 1; }
  ms=$(grep -o 'job ran [0-9]*' "$work/$out.log" | cut -d' ' -f3)
  python3 -c "print('%.3f' % ($ms / 1000))" | tr '\n' ' '
  cat "$work/$out.rss"
}

for run in $(seq 1 "$runs"); do
  order=$engines
  [ $((run % 2)) -eq 0 ] && order=$(echo "$engines" | tr ' ' '\n' | tac | tr '\n' ' ')
  for q in $queries; do
    for engine in $order; do
      out=$q-$engine-$run
      "$weir" topic create "$out" -p 3 > /dev/null
      read -r seconds rss <<< "$("run_$engine" "$q" "$out")"
      records=${inputs[$(input_of "$q")]}
      python3 -c "print('%s %s run %d: %d input records in %.2f s = %.0f records/s, peak RSS %d MB, %s output records' % ('$q', '$engine', $run, $records, $seconds, $records / $seconds, $rss / 1024, '$(count_of "$out")'))" \
        | tee -a "$work/results"
    done
  done
done
python3 - "$work/results" <<'EOF'
import re, sys, collections
rates = collections.defaultdict(list)
for line in open(sys.argv[1]):
    q, engine = line.split()[:2]
    rates[(q, engine)].append(float(re.search(r"= (\d+) records/s", line).group(1)))
queries = list(dict.fromkeys(q for q, _ in rates))
for q in queries:
    means = {e: sum(r) / len(r) for (qq, e), r in rates.items() if qq == q}
    text = ", ".join("%s %.0f records/s" % (e, m) for e, m in means.items())
    if "weir" in means and "flink" in means:
        text += ", Weir/Flink %.2f" % (means["weir"] / means["flink"])
    print("%s mean: %s" % (q, text))
EOF
