#!/usr/bin/env bash
# Nexmark queries as Weir jobs, side by side with the same queries in Apache Flink SQL.
#
# EVENTS events (1,000,000 by default; 1 in 50 a person, 3 in 50 auctions, the rest bids) are
# generated into three 3-partition topics of a local Weir broker first; then, RUNS times, each
# query runs once on each engine (which goes first alternates run by run), exactly once, from
# the start of its input, reading the same topics of the same broker on the same cores:
# - Weir: `weir job run` (checkpoints every second, at 50,000 records, or once the input was quiet
#   for 100 ms; q4, q5, q7, q8: one job whose WITH runs as stages), timed from the start
#   until every job's (stage's) committed offsets cover its inputs and stopped moving
#   (repartition topics included), so it includes start-up and the group join;
# - Flink 2.x: scripts/bench/flink/NexmarkFlink.java on a local MiniCluster (parallelism 2, a
#   checkpoint every second to files, Kafka SQL connector, read_committed, exactly-once sink), its input
#   bounded at the latest offsets so the job ends when done; timed from the INSERT's submission
#   until the job finished (MiniCluster start, planning and the final checkpoint included; the
#   JVM's start, the DDL and the shutdown left out).
# Each run prints the input records per second (q8: persons and auctions; q4: auctions and
# bids; q3: auctions; the others: bids), the engine's peak RSS (several jobs: their sum) and its output record
# count (read back committed); the end prints each engine's mean rate per query and Weir/Flink.
# The queries are cli/tests/end_to_end/nexmark.rs's (checked there against an oracle).
# Usage: [EVENTS=n] [RUNS=n] [QUERIES="q0 q1"] [ENGINES="weir flink"] scripts/bench/nexmark.sh [weir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
events=${EVENTS:-1000000}
runs=${RUNS:-2}
queries=${QUERIES:-q0 q1 q2 q3 q4 q5 q7 q8 q12}
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
# A broker already on the port would be used instead of this one (with its own topics): fail.
grep -q "weir broker ready" "$work/broker.log" \
  || { echo "the bench's broker did not start:" >&2; tail -5 "$work/broker.log" >&2; exit 1; }
"$weir" nexmark generate --events "$events" --partitions 3 --event-interval-us 1000 2> /dev/null

# The number of committed records in a topic (kcat: faster than `weir sql` at millions).
count_of() {
  kcat -b "$WEIR_BOOTSTRAP" -C -t "$1" -o beginning -e -q -X isolation.level=read_committed \
    -f '\n' | wc -l
}
declare -A inputs
inputs[nexmark-bid]=$(count_of nexmark-bid)
inputs[nexmark-auction]=$(count_of nexmark-auction)
inputs[nexmark-person]=$(count_of nexmark-person)

# A query's Weir jobs, one per line: NAME|INPUTS|EXTRA ARGUMENTS|SQL. The last job (no name)
# writes the query's output topic; `@x` is the topic of the same run's job x (q4, q5, q7 and q8
# are one job of stages each, see README "Nexmark"); INPUTS `=t`: the job reads t as its declared table
# (no --input), its offsets are still what tells it caught up.
chain_of() {
  local ten="INTERVAL '10' SECOND"
  case $1 in
    q0) echo '||| SELECT auction, bidder, price, "dateTime", extra FROM "nexmark-bid"' ;;
    q1) echo '||| SELECT auction, bidder, 0.908 * price AS price, "dateTime", extra FROM "nexmark-bid"' ;;
    q2) echo '||| SELECT auction, price FROM "nexmark-bid" WHERE auction % 123 = 0' ;;
    q3) echo "|nexmark-auction|--table person=nexmark-person| SELECT p.name, p.city, p.state, a.id
          FROM \"nexmark-auction\" a JOIN person p ON a.seller = p._key
          WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA')" | tr '\n' ' '; echo ;;
    q4)
      echo "|nexmark-auction,nexmark-bid|| WITH joined AS (SELECT a.id, a.category, b.price FROM \"nexmark-auction\" a JOIN \"nexmark-bid\" b ON a.id = b.auction AND to_timestamp_millis(b.\"dateTime\") BETWEEN to_timestamp_millis(a.\"dateTime\") AND to_timestamp_millis(a.\"dateTime\") + $ten WHERE b.\"dateTime\" <= a.expires), maxes AS (SELECT id, category, max(price) AS final FROM joined GROUP BY id, category) SELECT category, avg(final) AS avg_final FROM maxes GROUP BY category" ;;
    q5)
      local hop="hop(\"dateTime\", INTERVAL '2' SECOND, $ten)"
      echo "|nexmark-bid|| WITH counts AS (SELECT auction, count(*) AS num, CAST($hop AS BIGINT) AS starttime FROM \"nexmark-bid\" GROUP BY auction, $hop), maxes AS (SELECT max(num) AS maxn, starttime FROM counts GROUP BY starttime, tumble(_timestamp, INTERVAL '2' SECOND)) SELECT c.auction, c.num FROM counts c JOIN maxes m ON c.starttime = m.starttime AND m._timestamp BETWEEN c._timestamp AND c._timestamp WHERE c.num >= m.maxn" ;;
    q7)
      local tumble="tumble(\"dateTime\", $ten)"
      echo "|nexmark-bid|| WITH highest AS (SELECT max(price) AS maxprice, CAST($tumble AS BIGINT) AS starttime FROM \"nexmark-bid\" GROUP BY $tumble) SELECT b.auction, b.price, b.bidder, b.\"dateTime\", b.extra FROM \"nexmark-bid\" b JOIN highest m ON b.price = m.maxprice AND to_timestamp_millis(b.\"dateTime\") BETWEEN m._timestamp - INTERVAL '9999' MILLISECOND AND m._timestamp + INTERVAL '1' MILLISECOND" ;;
    q8)
      local tumble="tumble(\"dateTime\", $ten)"
      echo "|nexmark-person,nexmark-auction|| WITH persons AS (SELECT id, name, CAST($tumble AS BIGINT) AS starttime FROM \"nexmark-person\" GROUP BY id, name, $tumble), sellers AS (SELECT seller, CAST($tumble AS BIGINT) AS starttime FROM \"nexmark-auction\" GROUP BY seller, $tumble) SELECT p.id, p.name, p.starttime FROM persons p JOIN sellers a ON p.id = a.seller AND p.starttime = a.starttime AND a._timestamp BETWEEN p._timestamp AND p._timestamp" ;;
    q12) echo "||| SELECT bidder, count(*) AS bid_count, CAST(tumble(\"dateTime\", $ten) AS BIGINT) AS starttime
          FROM \"nexmark-bid\" GROUP BY bidder, tumble(\"dateTime\", $ten)" | tr '\n' ' '; echo ;;
  esac
}
# The jobs whose committed offsets tell that a query run as stages (one job, a WITH) caught
# up: a line per stage, "NAME|INPUTS" ("" the job itself; @x the results of stage x).
stages_of() {
  case $1 in
    q4) printf '%s\n' "joined|nexmark-auction,nexmark-bid" "maxes|@joined" "|@maxes" ;;
    q5) printf '%s\n' "counts|nexmark-bid" "maxes|@counts" "|@counts,@maxes" ;;
    q7) printf '%s\n' "highest|nexmark-bid" "|nexmark-bid,@highest" ;;
    q8) printf '%s\n' "persons|nexmark-person" "sellers|nexmark-auction" "|@persons,@sellers" ;;
  esac
}
# The input records a query's rate is counted in.
records_of() {
  case $1 in
    q3) echo "${inputs[nexmark-auction]}" ;;
    q4) echo $((inputs[nexmark-bid] + inputs[nexmark-auction])) ;;
    q8) echo $((inputs[nexmark-person] + inputs[nexmark-auction])) ;;
    *) echo "${inputs[nexmark-bid]}" ;;
  esac
}

# Runs query $1 as Weir jobs writing to topic $2; prints "SECONDS PEAK_RSS_KB" (the jobs' sum).
# Timed from the start until every job's committed offsets cover its inputs, up to the last
# time any of them moved (repartition topics included; nothing moved for 3 s after).
run_weir() {
  local q=$1 out=$2 name inputs extra sql job_out start end= last= now caught signature
  local names=() job_inputs=() pids=() arguments input progress topics behind all rss=0
  start=$(date +%s.%N)
  while IFS='|' read -r name inputs extra sql; do
    job_out=$out
    if [ -n "$name" ]; then job_out=$out-$name; "$weir" topic create "$job_out" -p 3 > /dev/null; fi
    inputs=${inputs:-nexmark-bid}
    inputs=${inputs//@/$out-}
    arguments=()
    if [[ $inputs == =* ]]; then
      inputs=${inputs#=}
    else
      IFS=',' read -ra input <<< "$inputs"
      for i in "${input[@]}"; do arguments+=(--input "$i"); done
    fi
    extra=${extra//@/$out-}
    # shellcheck disable=SC2086 # the extra arguments are words
    "$weir" job run --name "$job_out" "${arguments[@]}" --output "$job_out" $extra \
      --query "${sql//@/$out-}" --checkpoint-interval-ms 1000 \
      --checkpoint-max-records "${CHECKPOINT_MAX_RECORDS:-50000}" > "$work/$job_out.log" 2>&1 &
    pids+=($!); names+=("$job_out"); job_inputs+=("$inputs")
  done < <(chain_of "$q")
  if [ -n "$(stages_of "$q")" ]; then
    names=() job_inputs=()
    while IFS='|' read -r name inputs; do
      names+=("$out${name:+-$name}")
      inputs=$(echo "$inputs" | sed -E "s/@([a-z]+)/weir-$out-\1-results/g")
      job_inputs+=("$inputs")
    done < <(stages_of "$q")
  fi
  while :; do
    caught=1 signature=
    for k in "${!names[@]}"; do
      # Columns of `weir group describe`: topic partition committed end lag. An input
      # partition is covered when at most its last offset is left: a transactional topic
      # ends with a commit marker the consumer never passes.
      progress=$("$weir" group describe "${names[$k]}" 2>/dev/null \
        | awk -v inputs=",${job_inputs[$k]}," 'index(inputs, "," $1 ",") {if (!($1 in seen)) topics++; seen[$1]=1; if ($4 - $3 > 1) behind++} {a+=$3} END{print topics+0, behind+0, a+0}' || true)
      read -r topics behind all <<< "${progress:-0 0 0}"
      IFS=',' read -ra input <<< "${job_inputs[$k]}"
      # (An empty partition has no committed offset: each input needs one, none behind.)
      if [ "$topics" -lt ${#input[@]} ] || [ "$behind" -gt 0 ]; then caught=0; fi
      signature+="$all "
    done
    now=$(date +%s.%N)
    if [ "$signature" != "$last" ]; then last=$signature; end=$now; fi
    if [ "$caught" = 1 ] && python3 -c "import sys; sys.exit(0 if $now - $end > 3 else 1)"; then
      break
    fi
    sleep 0.2
  done
  for pid in "${pids[@]}"; do
    rss=$((rss + $(awk '/VmHWM/{print $2}' "/proc/$pid/status")))
    kill -TERM "$pid"; wait "$pid" || true
  done
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
      records=$(records_of "$q")
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
