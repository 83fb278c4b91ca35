#!/usr/bin/env bash
# Compiles and runs the Java client session (compat/java/ClientSession.java) against a broker,
# with kafka-clients from the reference Kafka's Maven jars (compat/kafka/start.sh fetches them).
# Usage: compat/java/run.sh HOST:PORT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
version=$(grep -o '<kafka.version>[^<]*' "$here/../kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
[ -f "$libs/.complete" ] || { echo "Kafka jars missing: run compat/kafka/start.sh once" >&2; exit 1; }
classes=$cache/java-session-classes
if [ ! -f "$classes/ClientSession.class" ] || [ "$here/ClientSession.java" -nt "$classes/ClientSession.class" ]; then
  mkdir -p "$classes"
  javac -d "$classes" -cp "$libs/*" "$here/ClientSession.java"
fi
java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dlog4j2.level=WARN -cp "$libs/*:$classes" ClientSession "$1"
