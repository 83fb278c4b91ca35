#!/usr/bin/env bash
# Stops the server scripts/s3/start.sh started.
set -euo pipefail
port=${S3_PORT:-59000}
pid_file=/tmp/weir-s3-$port.pid
if [ -f "$pid_file" ]; then
  kill "$(cat "$pid_file")" 2>/dev/null || true
  rm -f "$pid_file"
fi
