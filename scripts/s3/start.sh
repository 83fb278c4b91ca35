#!/usr/bin/env bash
# Starts a private S3-compatible server for the Parquet sink's object-store tests: gofakes3
# (github.com/johannesboyne/gofakes3, a Go implementation of the S3 REST API, also what
# `rclone serve s3` is built on), built from the Go module proxy into the cache, serving a
# directory in /tmp (its `fs` backend) on 127.0.0.1:$S3_PORT with the bucket `weir-test`.
# Prints the endpoint URL. Idempotent: a server already answering on that port is reused.
set -euo pipefail
port=${S3_PORT:-59000}
version=v1.2.0
cache=${WEIR_CACHE:-$HOME/.cache/weir}
bin=$cache/bin/gofakes3-$version
data=/tmp/weir-s3-$port
endpoint="http://127.0.0.1:$port"
if curl -s -o /dev/null "$endpoint/"; then
  echo "$endpoint"
  exit 0
fi
if [ ! -x "$bin" ]; then
  mkdir -p "$cache/bin/build"
  (cd /tmp && GOBIN=$cache/bin/build go install "github.com/johannesboyne/gofakes3/cmd/gofakes3@$version") >&2
  mv "$cache/bin/build/gofakes3" "$bin"
fi
rm -rf "$data"
mkdir -p "$data"
nohup "$bin" -host "127.0.0.1:$port" -backend fs -fs.path "$data" -fs.create \
  -initialbucket weir-test -quiet >"$data.log" 2>&1 &
echo $! >"$data.pid"
for _ in $(seq 1 100); do
  if curl -s -o /dev/null "$endpoint/"; then
    echo "$endpoint"
    exit 0
  fi
  sleep 0.1
done
echo "gofakes3 did not start on $endpoint; its log:" >&2
cat "$data.log" >&2
exit 1
