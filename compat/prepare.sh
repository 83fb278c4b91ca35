#!/usr/bin/env bash
# Fetches and compiles what the compatibility yardsticks need before they run, so that the test
# command can do it while the Rust build runs (mostly downloads; compiles at the lowest
# priority): Kafka Streams' jars from Maven Central and the word count and Java client session
# classes, franz-go's module and its pkg/kgo test packages, the franz-go round-trip client's
# packages. Each yardstick still does for itself whatever is missing, so a failure here only
# moves the work (and its error) to the yardstick.
# Usage: compat/prepare.sh          (needs compat/kafka/start.sh to have fetched Kafka's jars)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
status=0

streams_version=$(grep -o '<kafka.version>[^<]*' "$here/streams/pom.xml" | cut -d'>' -f2)
streams_libs=$cache/kafka-streams-$streams_version/libs
if [ ! -f "$streams_libs/.complete" ]; then
  mkdir -p "$streams_libs"
  if mvn -q -B -f "$here/streams/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$streams_libs"; then
    touch "$streams_libs/.complete"
  else
    status=1
  fi
fi
if [ -f "$streams_libs/.complete" ]; then
  mkdir -p "$cache/streams-classes"
  nice -n 19 javac -d "$cache/streams-classes" -cp "$streams_libs/*" "$here/streams/WordCount.java" ||
    status=1
fi
kafka_version=$(grep -o '<kafka.version>[^<]*' "$here/kafka/pom.xml" | cut -d'>' -f2)
kafka_libs=$cache/kafka-$kafka_version/libs
if [ -f "$kafka_libs/.complete" ]; then
  mkdir -p "$cache/java-session-classes"
  nice -n 19 javac -d "$cache/java-session-classes" -cp "$kafka_libs/*" \
    "$here/java/ClientSession.java" || status=1
fi

# franz-go: the module the yardstick runs the tests of (compat/franz-go/run.sh pins the version),
# its test packages compiled into Go's build cache, and the round-trip client's packages.
franz_version=$(grep -o '^version=.*' "$here/franz-go/run.sh" | cut -d= -f2)
module=github.com/twmb/franz-go
if dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$module@$franz_version" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'); then
  binary=$(mktemp -u)
  (cd "$dir" && GOFLAGS=-mod=mod nice -n 19 go test -c -o "$binary" ./pkg/kgo) || status=1
  rm -f "$binary"
else
  status=1
fi
binary=$(mktemp -u)
(cd "$here/clients/franz-go" && GOFLAGS=-mod=mod nice -n 19 go build -o "$binary" .) || status=1
rm -f "$binary"
exit $status
