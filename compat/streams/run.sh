#!/usr/bin/env bash
# Kafka Streams exactly_once_v2 word count (compat/streams/WordCount.java, Kafka Streams from Maven
# Central) against a broker: generated input, the application killed with -9 KILLS times at
# random points and restarted, then the read_committed output must be exact (every word's
# counts 1, 2, ... n — no lost and no duplicated update).
# Usage: compat/streams/run.sh HOST:PORT [LINES] [KILLS]     Prints "kafka streams: exact" on success.
# The application alone can connect elsewhere: APP_BOOTSTRAP (default HOST:PORT) with the client
# properties of the file APP_PROPERTIES (security); WORDCOUNT_RUN names the run (the prefix of
# its topics, application id, group and transactional ids).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
bootstrap=$1
lines=${2:-40000}
kills=${3:-4}
version=$(grep -o '<kafka.version>[^<]*' "$here/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-streams-$version/libs
if [ ! -f "$libs/.complete" ]; then
  mkdir -p "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$libs" >&2
  touch "$libs/.complete"
fi
classes=$cache/streams-classes
if [ ! -f "$classes/WordCount.class" ] || [ "$here/WordCount.java" -nt "$classes/WordCount.class" ]; then
  mkdir -p "$classes"
  javac -d "$classes" -cp "$libs/*" "$here/WordCount.java"
fi
work=$(mktemp -d)
app_pid=
cleanup() {
  # (the killed application's exit status must not become this script's)
  if [ -n "$app_pid" ]; then { kill -9 "$app_pid"; wait "$app_pid"; } 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
run=${WORDCOUNT_RUN:-wc$$-$RANDOM}
app_bootstrap=${APP_BOOTSTRAP:-$bootstrap}
java_opts=(-Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=error -cp "$libs/*:$classes")
java_run() { java "${java_opts[@]}" WordCount "$@"; }

java_run produce "$bootstrap" "$run-input" "$run-output" "$lines"
start_app() {
  # java itself in the background (not a subshell), so that kill -9 hits the application.
  WORDCOUNT_APP_PROPERTIES=${APP_PROPERTIES:-} java "${java_opts[@]}" WordCount app \
    "$app_bootstrap" "$run-app" "$work/state" "$run-input" "$run-output" >> "$work/app.log" 2>&1 &
  app_pid=$!
}
words=$((lines * 5))
# Each run is killed once it has processed a random 5-20% of the input words (the application
# prints "processed N"), so every kill lands mid-way and the last run still has work to do.
for kill in $(seq 1 "$kills"); do
  : > "$work/app.log"
  start_app
  target=$(( (words / 20 + RANDOM * (words / 20 * 3) / 32768) / 5000 * 5000 + 5000 ))
  for _ in $(seq 1 1200); do
    done_words=$(grep -o '^processed [0-9]*' "$work/app.log" | tail -1 | cut -d' ' -f2 || true)
    [ "${done_words:-0}" -ge "$target" ] && break
    if ! kill -0 "$app_pid" 2>/dev/null; then
      echo "kafka streams: the application stopped by itself; its log:"; tail -40 "$work/app.log"; exit 1
    fi
    sleep 0.1
  done
  kill -9 "$app_pid"
  wait "$app_pid" 2>/dev/null || true
  app_pid=
  echo "kafka streams: killed -9 after ${done_words:-0} words (kill $kill of $kills)"
  cat "$work/app.log" >> "$work/all-runs.log"
done
: > "$work/app.log"
start_app
if java_run verify "$bootstrap" "$run-output" "$lines" 240; then
  echo "kafka streams: exact"
else
  echo "kafka streams: application log (last 30 lines):"
  tail -30 "$work/app.log"
  exit 1
fi
