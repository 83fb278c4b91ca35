#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with libFuzzer's coverage instrumentation — the flags
# `cargo fuzz` uses, so cargo-fuzz itself is not needed — replays the committed corpus and
# regression inputs, then fuzzes each target for FUZZ_SECONDS (default 45) seconds.
# Any crash, panic, timeout (10 s per input) or RSS over 2 GiB fails the run and leaves the
# input in fuzz/artifacts/<target>/; keep it under fuzz/regressions/<target>/ once fixed.
# Usage: scripts/fuzz.sh [target…]     (default: every target)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
seconds=${FUZZ_SECONDS:-30}
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$cache/fuzz-target}
cd "$root/fuzz"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request_frame record_batch segment_recovery log_line http_body pipeline_yaml)

export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks"
# With an explicit --target the flags reach only the target's code, not build scripts and
# proc-macros (which are not linked with libFuzzer), as `cargo fuzz` does.
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release --locked --bins --target "$host"

for target in "${targets[@]}"; do
  binary=$CARGO_TARGET_DIR/$host/release/$target
  corpus=corpus/$target
  mkdir -p "$corpus" "artifacts/$target" "regressions/$target"
  # Every kept input first: the regressions must pass before new ground is searched.
  kept=(regressions/"$target"/*)
  if [ -e "${kept[0]}" ]; then
    if ! replay=$("$binary" -runs=1 "${kept[@]}" 2>&1); then
      echo "$replay" | tail -40 >&2
      echo "fuzz target $target: a regression input fails again" >&2
      exit 1
    fi
    echo "fuzz target $target: ${#kept[@]} regression inputs pass"
  fi
  # New inputs go to a scratch corpus, so the committed one changes only by hand.
  scratch=$(mktemp -d)
  log=$scratch.log
  status=0
  # A target whose input has a grammar (YAML) gets its tokens from a dictionary.
  dictionary=()
  [ ! -f "dictionaries/$target.dict" ] || dictionary=(-dict="dictionaries/$target.dict")
  "$binary" "$scratch" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -artifact_prefix="artifacts/$target/" -print_final_stats=1 \
    "${dictionary[@]}" > "$log" 2>&1 || status=$?
  rm -rf "$scratch"
  grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$log" >&2
    echo "fuzz target $target failed (exit $status); the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  rm -f "$log"
  echo "fuzz target $target: no crash in ${seconds} s"
done
