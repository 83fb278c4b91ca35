#!/usr/bin/env bash
# A kcat (Debian's, librdkafka 2.0.2) session against a running broker: metadata, produce with
# every codec, keys and headers, consume from several offsets, offsets by timestamp.
# Usage: kcat_smoke.sh HOST:PORT
set -euo pipefail
bootstrap=$1
fail() { echo "kcat smoke: FAIL: $*" >&2; exit 1; }
kc() { kcat -b "$bootstrap" -X broker.address.family=v4 "$@"; }

kc -L -J > /tmp/weir-kcat-meta.json || fail "metadata"
grep -q '"brokers"' /tmp/weir-kcat-meta.json || fail "metadata has no brokers"

topic=kcat-smoke-$$
for codec in none gzip snappy lz4 zstd; do
  seq 1 500 | sed "s/^/$codec-/" | kc -P -t "$topic" -p 0 -z "$codec" || fail "produce $codec"
done
out=/tmp/weir-kcat-$$.txt
kc -C -t "$topic" -p 0 -o beginning -e -q -f '%s\n' > "$out" || fail "consume"
count=$(wc -l < "$out")
[ "$count" -eq 2500 ] || fail "expected 2500 records, got $count"
[ "$(head -1 "$out")" = "none-1" ] || fail "first record: $(head -1 "$out")"
[ "$(tail -1 "$out")" = "zstd-500" ] || fail "last record: $(tail -1 "$out")"
# Mid-batch start: offset 1234 is inside a compressed batch; the first record must be 1234's.
kc -C -t "$topic" -p 0 -o 1234 -e -q -f '%o %s\n' > "$out" || fail "consume from 1234"
first=$(head -1 "$out")
rm -f "$out"
[ "$first" = "1234 snappy-235" ] || fail "mid-batch fetch returned '$first'"

# Keys and headers.
printf 'k1:v1\nk2:v2\n' | kc -P -t "$topic-keyed" -K: -H trace=abc -H empty= || fail "keyed produce"
out=$(kc -C -t "$topic-keyed" -o beginning -e -q -f '%k=%s;%h\n' | sort)
grep -q '^k1=v1;trace=abc,empty=$' <<< "$out" || fail "key/headers round trip: $out"

# Offsets for a timestamp far in the future: end of log (-1), and the beginning for 0.
q=$(kc -Q -t "$topic:0:0") || fail "query offsets"
grep -q 'offset 0' <<< "$q" || fail "offset for timestamp 0: $q"
# Balanced consumer group (-G): reads everything once, commits, and a second run finds nothing new.
group=kcat-group-$$
kc -G "$group" -X auto.offset.reset=earliest -e -q -f '%s\n' "$topic" > "$out" 2>/dev/null || fail "group consume"
[ "$(wc -l < "$out")" -eq 2500 ] || fail "group consumed $(wc -l < "$out") of 2500"
kc -G "$group" -X auto.offset.reset=earliest -e -q -f '%s\n' "$topic" > "$out" 2>/dev/null || fail "group consume again"
[ "$(wc -l < "$out")" -eq 0 ] || fail "group re-read $(wc -l < "$out") records after committing"
rm -f "$out"
echo "kcat smoke: ok"
