#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with libFuzzer's coverage instrumentation — the flags
# `cargo fuzz` uses, so cargo-fuzz itself is not needed — replays the committed corpus and
# regression inputs, then fuzzes each target for FUZZ_SECONDS (default 30) seconds, FUZZ_JOBS
# (default: the number of cores) targets at a time.
# Any crash, panic, timeout (10 s per input) or RSS over 2 GiB fails the run and leaves the
# input in fuzz/artifacts/<target>/; keep it under fuzz/regressions/<target>/ once fixed.
# Usage: scripts/fuzz.sh [--build-only | --no-build] [target…]     (default: every target)
#   --build-only builds the targets and runs nothing; --no-build runs what was built (the test
#   command builds them while the tests run, and fuzzes in a stage of its own).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
seconds=${FUZZ_SECONDS:-30}
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$cache/fuzz-target}
cd "$root/fuzz"
build=1
run=1
case ${1:-} in
  --build-only) run=0; shift ;;
  --no-build) build=0; shift ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request_frame request_amplification record_batch segment_recovery log_line http_body pipeline_yaml)

export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# With an explicit --target the flags reach only the target's code, not build scripts and
# proc-macros (which are not linked with libFuzzer), as `cargo fuzz` does.
host=$(rustc -vV | sed -n 's/^host: //p')
[ "$build" -eq 0 ] || cargo build --release --locked --bins --target "$host"
[ "$run" -eq 1 ] || exit 0

# One target's run: its regressions replayed, then FUZZ_SECONDS of fuzzing; prints its summary.
fuzz_one() {
  local target=$1
  local binary=$CARGO_TARGET_DIR/$host/release/$target
  local corpus=corpus/$target
  mkdir -p "$corpus" "artifacts/$target" "regressions/$target"
  # Every kept input first: the regressions must pass before new ground is searched.
  local kept=(regressions/"$target"/*)
  if [ -e "${kept[0]}" ]; then
    local replay
    if ! replay=$("$binary" -runs=1 "${kept[@]}" 2>&1); then
      echo "$replay" | tail -40 >&2
      echo "fuzz target $target: a regression input fails again" >&2
      return 1
    fi
    echo "fuzz target $target: ${#kept[@]} regression inputs pass"
  fi
  # New inputs go to a scratch corpus, so the committed one changes only by hand.
  local scratch log status=0
  scratch=$(mktemp -d)
  log=$scratch.log
  # A target whose input has a grammar (YAML) gets its tokens from a dictionary.
  local dictionary=()
  [ ! -f "dictionaries/$target.dict" ] || dictionary=(-dict="dictionaries/$target.dict")
  "$binary" "$scratch" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -artifact_prefix="artifacts/$target/" -print_final_stats=1 \
    "${dictionary[@]}" > "$log" 2>&1 || status=$?
  rm -rf "$scratch"
  grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz target $target failed (exit $status); the input is in fuzz/artifacts/$target/" >&2
    return 1
  fi
  rm -f "$log"
  echo "fuzz target $target: no crash in ${seconds} s"
}

# FUZZ_JOBS targets at a time (default: one per core), each for its full FUZZ_SECONDS on a
# core of its own; each target's lines are printed together once it ends.
jobs=${FUZZ_JOBS:-$(nproc)}
outputs=$(mktemp -d)
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  # Each target's status goes to a file: a job's status could be gone once `wait -n` took it.
  (
    status=0
    fuzz_one "$target" > "$outputs/$target" 2>&1 || status=$?
    echo "$status" > "$outputs/$target.status"
  ) &
done
wait
failed=0
for target in "${targets[@]}"; do
  cat "$outputs/$target"
  [ "$(cat "$outputs/$target.status" 2>/dev/null)" = 0 ] || failed=1
done
rm -rf "$outputs"
exit $failed
