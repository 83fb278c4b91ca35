#!/usr/bin/env bash
# End-to-end throughput of the weblogs pipeline, exactly once, on an embedded broker: LINES
# generated nginx access-log lines (1,000,000 by default, 1 in 1000 garbage) are written to a
# file first; then `weir pipeline run --until-caught-up` tails it (file source → parse →
# transactional produce with positions → read_committed → SQL → SINK) and ends once the sink has
# committed the last line. The time is the whole run, start-up included.
# SINK=parquet (default), SINK=postgres (needs WEIR_TEST_POSTGRES_URL, e.g. from
# scripts/postgres/start.sh) or SINK=s3 (Parquet on an S3-compatible server: needs
# WEIR_TEST_S3_ENDPOINT with the bucket weir-test, e.g. from scripts/s3/start.sh).
# CLIENT_PROPERTIES adds librdkafka properties to every client of the pipeline, as YAML flow
# mapping entries (e.g. CLIENT_PROPERTIES='compression.type: none').
# Usage: [LINES=n] [SINK=parquet|postgres|s3] [PARALLELISM=2] scripts/bench/pipeline.sh [path/to/weir]
set -euo pipefail
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
lines=${LINES:-1000000}
sink=${SINK:-parquet}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$weir" weblog generate --lines "$lines" --bad-line-every 1000 --line-interval-ms 5 > "$work/access.log"
case $sink in
  parquet) sink_yaml="  - { kind: parquet, path: $work/warehouse, partition_by: [\"date(timestamp)\", \"hour(timestamp)\"], max_file_age_ms: 10000 }" ;;
  postgres) sink_yaml="  - { kind: postgres, url: \"${WEIR_TEST_POSTGRES_URL:?set WEIR_TEST_POSTGRES_URL}\", table: bench_$$, batch_rows: 100000 }" ;;
  s3) sink_yaml="  - { kind: parquet, path: \"s3://weir-test/bench-$$/warehouse\", partition_by: [\"date(timestamp)\", \"hour(timestamp)\"], max_file_age_ms: 10000, storage_options: { aws_endpoint: \"${WEIR_TEST_S3_ENDPOINT:?set WEIR_TEST_S3_ENDPOINT}\", aws_allow_http: \"true\", aws_region: us-east-1, aws_access_key_id: weir, aws_secret_access_key: weir-secret } }" ;;
  *) echo "SINK is parquet, postgres or s3" >&2; exit 2 ;;
esac
cat > "$work/pipeline.yaml" <<YAML
name: bench
source: { kind: file, paths: ["$work/access.log"], format: nginx_combined }
topic: { name: bench-raw, partitions: 2 }
parallelism: ${PARALLELISM:-2}
client_properties: { ${CLIENT_PROPERTIES:-} }
transform:
  table: requests
  sql: |
    SELECT timestamp, date_trunc('minute', timestamp) AS minute, remote_addr, method, path,
           status, bytes, request_time, user_agent
    FROM requests
sinks:
$sink_yaml
YAML
start=$(date +%s.%N)
RUST_LOG=warn "$weir" pipeline run "$work/pipeline.yaml" --data-dir "$work/data" --until-caught-up \
  2> "$work/run.log" || { cat "$work/run.log"; exit 1; }
end=$(date +%s.%N)
grep "rows committed" "$work/run.log"
good=$((lines - lines / 1000))
python3 -c "
seconds = $end - $start
print(f'{$lines} lines ({$good} rows) in {seconds:.2f} s: {$lines / seconds:,.0f} lines/s end to end, exactly once, sink $sink')
"
du -sh "$work/access.log" | awk '{print "input file: " $1}'
