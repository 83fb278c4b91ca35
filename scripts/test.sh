#!/usr/bin/env bash
# The test command: installs what the tests need, builds once (release profile), runs the Rust
# unit, integration and property tests, then real-client smoke sessions (kcat, kafka-python 3 and
# Debian's 2.0.2, confluent-kafka, kafkajs) against the weir binary from the same build, then the compatibility
# yardsticks against a real Apache Kafka 4.x (differential test, Java client session, Kafka's
# tools, franz-go's kgo tests). A private PostgreSQL server runs for the postgres sink's tests and
# the pipeline crash test, and a private S3-compatible server (gofakes3, built from the Go module
# proxy) for the Parquet sink's object-store tests. Last, the Helm chart's checks (helm/check.sh:
# the real helm binary, Kubernetes' schemas, and the rendered broker pods run as processes).
# Formatting (cargo fmt --check), clippy with -D warnings and the fuzz targets' bounded run
# (scripts/fuzz.sh) fail the run too.
#
# Caches live outside the clone so repeated runs are fast: CARGO_TARGET_DIR (default
# ~/.cache/weir/target), the Python venv, node modules and Kafka's jars in ~/.cache/weir,
# Maven's ~/.m2, Go's module and build caches.
set -euo pipefail
# Stage times, printed when the command ends (also when a stage fails).
stage_names=()
stage_seconds=()
stage_started=$SECONDS
stage_name=setup
stage() {
  stage_names+=("$stage_name")
  stage_seconds+=($((SECONDS - stage_started)))
  stage_name=$1
  stage_started=$SECONDS
}
print_stages() {
  stage done
  echo "test command stage times:"
  for i in "${!stage_names[@]}"; do printf '  %-14s %5d s\n' "${stage_names[$i]}" "${stage_seconds[$i]}"; done
  printf '  %-14s %5d s\n' total "$SECONDS"
}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache=${WEIR_CACHE:-$HOME/.cache/weir}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$cache/target}
mkdir -p "$cache"

missing=()
command -v kcat >/dev/null || missing+=(kcat)
command -v curl >/dev/null || missing+=(curl)
command -v cc >/dev/null || missing+=(build-essential)
# librdkafka is built with the system's OpenSSL (TLS listeners' tests, secured clusters).
dpkg -s libssl-dev >/dev/null 2>&1 || missing+=(libssl-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=(python3-venv)
command -v javac >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v go >/dev/null || missing+=(golang-go)
command -v npm >/dev/null || missing+=(nodejs npm)
# Debian's kafka-python 2.0.2: an older client (JoinGroup v2) run with the system python.
dpkg -s python3-kafka >/dev/null 2>&1 || missing+=(python3-kafka)
# A real PostgreSQL for the postgres sink's tests (a private server, started below).
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

venv=$cache/venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r scripts/smoke/requirements.txt \
  -r helm/requirements.txt
node_dir=$cache/node
mkdir -p "$node_dir"
if ! cmp -s scripts/smoke/package.json "$node_dir/package.json" || [ ! -d "$node_dir/node_modules" ]; then
  cp scripts/smoke/package.json "$node_dir/package.json"
  (cd "$node_dir" && npm install --silent --no-audit --no-fund)
fi

# Sets VAR to what `command…` prints unless VAR is set already, and exports it. A start that
# fails stops the run with its reason: `export VAR=${VAR:-$(command)}` would hide the status.
start_service() {
  local var=$1 name=$2 value
  shift 2
  if [ -z "${!var:-}" ]; then
    if ! value=$("$@"); then
      echo "test command: $name did not start (its reason is above); stopping" >&2
      exit 1
    fi
    printf -v "$var" '%s' "$value"
  fi
  export "${var?}"
}
# What runs in the background (below) keeps its output and status here.
background=$(mktemp -d)
# Background jobs still running when the command ends early are stopped with it.
stop_background() {
  local pid_file
  for pid_file in "$background"/*.pid; do
    [ -e "$pid_file" ] || continue
    pkill -TERM -P "$(cat "$pid_file")" 2>/dev/null || true
  done
  rm -rf "$background"
}
# The stop scripts are idempotent, so the trap is set before anything starts.
trap 'stop_background; scripts/postgres/stop.sh; scripts/s3/stop.sh; KAFKA_PORT=29192 compat/kafka/stop.sh; print_stages' EXIT
start_service WEIR_TEST_POSTGRES_URL PostgreSQL scripts/postgres/start.sh
start_service WEIR_TEST_S3_ENDPOINT "the S3 server" scripts/s3/start.sh
# The reference Kafka (jars from Maven) for the pipeline bridge test, with a SASL_SSL listener the
# bridge's pipeline uses (compat/kafka/start-test.sh); compat/run.sh reuses it over PLAINTEXT.
start_service WEIR_TEST_KAFKA_BOOTSTRAP "the reference Kafka" env KAFKA_PORT=29192 compat/kafka/start-test.sh
export WEIR_TEST_KAFKA_SASL_SSL=${WEIR_TEST_KAFKA_SASL_SSL:-localhost:29195}
export WEIR_TEST_KAFKA_CA=${WEIR_TEST_KAFKA_CA:-${WEIR_CACHE:-$HOME/.cache/weir}/kafka-test-tls-29192/ca.pem}

# Work that overlaps a stage runs in the background at the lowest priority, on the cores the
# stage leaves idle; what it printed is shown, and its status counted, in the stage it serves.
in_background() {
  beside_with_niceness 19 "$@"
}
# The same at normal priority, for work as important as the stage's own.
beside() {
  beside_with_niceness 0 "$@"
}
beside_with_niceness() {
  local niceness=$1 name=$2
  shift 2
  (
    renice -n "$niceness" -p "$BASHPID" > /dev/null
    status=0
    "$@" > "$background/$name.log" 2>&1 || status=$?
    echo "$status" > "$background/$name.status"
  ) &
  echo $! > "$background/$name.pid"
}
# Waits for a background job, prints its output, and answers its status.
joined() {
  local name=$1
  wait "$(cat "$background/$name.pid")" || true
  cat "$background/$name.log"
  [ "$(cat "$background/$name.status" 2>/dev/null)" = 0 ]
}
lints() {
  cargo clippy --release --workspace --all-targets -- -D warnings || return 1
  # The settings-only build the pipeline fuzz target uses (no `runtime` feature).
  cargo clippy --release -p weir-pipelines -p weir-connectors --no-default-features --lib \
    -- -D warnings
}

# One build for binaries and tests: building them together unifies the dev-dependencies'
# features, so `cargo test` reuses every artifact (DataFusion is compiled once, not twice).
# --timings leaves the build's per-crate report in $CARGO_TARGET_DIR/cargo-timings/.
# Meanwhile the compatibility yardsticks' jars, classes and Go packages are fetched and built.
stage build
in_background compat-prepare compat/prepare.sh
cargo build --release --workspace --all-targets --timings
# While the tests run: clippy's check build (it waits for `cargo test` to finish building,
# which is nothing after the build stage) and the fuzz targets' instrumented build.
in_background clippy lints
in_background fuzz-build scripts/fuzz.sh --build-only
stage cargo-test
# The weir process tests (cli/tests: end_to_end, two at a time, and interval_crash) mostly wait
# for the processes they start, kill and restart (a third of a core on average), so they run
# beside the other crates' tests rather than after them. Measured warm on one build, with clippy
# and the fuzz build beside as here: 5 min 15 s for the stage (end_to_end alone, one test at a
# time: 8 min 20 s; the stage in the last cold run: 14 min 22 s). Both print when both have
# ended; either failing ends the command there.
beside cli-tests cargo test --release -p weir-cli
tests_status=0
cargo test --release --workspace --exclude weir-cli || tests_status=$?
joined cli-tests || tests_status=1
[ "$tests_status" = 0 ] || exit "$tests_status"
# The yardsticks compare against a fresh Kafka (no topics left by the bridge test).
KAFKA_PORT=29192 compat/kafka/stop.sh
status=0
# Formatting and lints: a failure fails the run, after the remaining stages have run.
stage lint
cargo fmt --all --check || status=1
joined clippy || status=1
# Coverage-guided fuzzing (libFuzzer) of request frames, record batches, segment recovery, log
# lines, HTTP bodies and pipeline files: the committed corpus and regressions replayed, then a
# bounded run per target.
stage fuzz
if joined fuzz-build; then
  scripts/fuzz.sh --no-build || status=1
else
  status=1
fi
# Every crate's layers: no module imports one above it, no import cycle over two files (the
# layers are in the script). And the cold build's budget: crates compiled, crates in two
# versions, linked executables (scripts/build_budget.py says why each counts).
stage layers
scripts/layers/check.py --self-test && scripts/layers/check.py || status=1
scripts/build_budget.py || status=1
stage smoke
scripts/smoke/run.sh "$CARGO_TARGET_DIR/release/weir" "$venv/bin/python" "$node_dir/node_modules" || status=1
stage compat
joined compat-prepare || echo "compat/prepare.sh failed: the yardsticks fetch what they miss themselves"
compat/run.sh "$CARGO_TARGET_DIR/release/weir" "$CARGO_TARGET_DIR/release/weir-compat-scenario" || status=1
stage helm
helm/check.sh "$venv/bin" "$CARGO_TARGET_DIR/release/weir" || status=1
exit $status
