#!/usr/bin/env bash
# Runs franz-go's own pkg/kgo integration tests against a broker, limited to allow-list.txt.
# The module comes from the Go module proxy (pinned version); tests read the broker address from
# KGO_SEEDS. Every allow-listed test must pass (a skip counts as a failure).
# Usage: compat/franz-go/run.sh HOST:PORT          Prints "franz-go: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.22.3
module=github.com/twmb/franz-go
dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$module@$version" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') || {
  echo "franz-go: cannot download $module@$version"; echo "franz-go: 0 passed, 1 failed"; exit 1; }
tests=$(grep -vE '^(#|$)' "$here/allow-list.txt")
pattern="^($(paste -sd'|' <<< "$tests"))\$"
log=$(mktemp)
(cd "$dir" && KGO_SEEDS=$1 KGO_TEST_RF=1 KGO_LOG_LEVEL=none KGO_TEST_RECORDS=50000 GOFLAGS=-mod=mod \
  go test ./pkg/kgo -run "$pattern" -count=1 -v -timeout 600s > "$log" 2>&1)
passed=0
failed=0
while read -r test; do
  if grep -qE "^--- PASS: $test \(" "$log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED franz-go $test:"
    grep -A15 -E "^(=== (RUN|CONT|NAME) +$test$|--- (FAIL|SKIP): $test )" "$log" | head -30
  fi
done <<< "$tests"
rm -f "$log"
echo "franz-go: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
