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
    # Every failure line of the test and its subtests, then how the run ended (a timeout panic
    # names the goroutines still blocked).
    grep -E "^ *--- (FAIL|SKIP): $test(/| )" -A8 "$log" | head -60
    grep -E "^ +([a-z_]+_test\.go:[0-9]+: |testConsumer sendErr)" "$log" | grep -vE "deleting (group|topic)|completed in" | head -40
  fi
done <<< "$tests"
if [ "$failed" -ne 0 ]; then
  echo "franz-go: end of the go test output:"
  grep -E "^(panic: |FAIL|ok )" -A20 "$log" | head -60
  tail -15 "$log"
fi
rm -f "$log"
echo "franz-go: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
