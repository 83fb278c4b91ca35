#!/usr/bin/env bash
# What TLS costs: produce and consume over PLAINTEXT and over SSL to the same broker, for Weir and
# for the reference Apache Kafka (compat/kafka/start.sh), on this machine, one partition, acks=1,
# linger.ms=5, flushing left to the OS on both. The client is librdkafka's rdkafka_performance
# (built with OpenSSL) or, with BENCH_CLIENT=franz-go, scripts/bench/franz-go (Go's crypto/tls,
# which writes a request in full-size TLS records where librdkafka hands OpenSSL small writes).
# Each cell runs on a fresh broker and data directory, RUNS times. Prints a Markdown report:
# rates per cell (the median of the runs), broker and client CPU, each broker's SSL/PLAINTEXT ratio.
# Usage: scripts/bench/tls.sh [path/to/weir]
# Environment: BENCH_CLIENT (rdkafka or franz-go), BENCH_DIR (scratch, default
# ~/.cache/weir/bench-data), BENCH_RUNS (default 3), BENCH_SMALL_COUNT / BENCH_LARGE_COUNT
# (messages of 100 B / 1 KiB, default 3M / 1M).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
weir=${1:-${CARGO_TARGET_DIR:-$cache/target}/release/weir}
client=${BENCH_CLIENT:-rdkafka}
case $client in
  rdkafka) perf=$("$root/scripts/bench/build-rdkafka-performance.sh") ;;
  franz-go)
    perf=$cache/franz-go-bench
    (cd "$root/scripts/bench/franz-go" && go build -o "$perf" .) ;;
  *) echo "BENCH_CLIENT is rdkafka or franz-go, not $client" >&2; exit 2 ;;
esac
data=${BENCH_DIR:-$cache/bench-data}
runs=${BENCH_RUNS:-3}
small_count=${BENCH_SMALL_COUNT:-3000000}
large_count=${BENCH_LARGE_COUNT:-1000000}
port=29092
ssl_port=29095
bootstrap=127.0.0.1:$port
rm -rf "$data" && mkdir -p "$data/tls"

# A CA and the broker's certificate (localhost, 127.0.0.1), PEM, for both brokers.
tls=$data/tls
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 2 -subj "/CN=Weir bench CA"
openssl_quiet req -newkey rsa:2048 -nodes -keyout "$tls/broker.key" -out "$tls/broker.csr" -subj "/CN=weir-bench"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$tls/server.ext"
openssl_quiet x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
  -out "$tls/broker.crt" -days 2 -extfile "$tls/server.ext"
cat "$tls/broker.crt" "$tls/broker.key" > "$tls/broker.pem"
{
  echo "ssl.keystore.type=PEM"
  echo "ssl.keystore.location=$tls/broker.pem"
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL"
} > "$tls/kafka.properties"

echo "## Environment"
echo
if [ "$client" = rdkafka ]; then
  client_name="librdkafka $("$perf" -h 2>&1 | grep -o 'librdkafka version [0-9.]*' | cut -d' ' -f3)'s rdkafka_performance with $(openssl version | cut -d' ' -f1-2)"
else
  client_name="franz-go $(grep -o 'franz-go v[0-9.]*' "$root/scripts/bench/franz-go/go.mod" | cut -d' ' -f2) ($(go version | cut -d' ' -f3), crypto/tls)"
fi
echo "- $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -r); client: $client_name; TLS 1.3 (both brokers' default), RSA 2048 certificate"
echo "- Kafka $(grep -o '<kafka.version>[^<]*' "$root/compat/kafka/pom.xml" | cut -d'>' -f2): JVM heap 512 MiB; Weir: log.flush.on.ack=false (OS flushing, as Kafka)"
echo

# shellcheck source=../lib/bench_broker.sh
source "$root/scripts/lib/bench_broker.sh"
bench_extra_listeners=SSL://127.0.0.1:$ssl_port
bench_kafka_properties=$tls/kafka.properties
trap 'kill $broker 2>/dev/null || true' EXIT
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$broker/stat"; }
if [ "$client" = rdkafka ]; then
  produce_rate() { grep -o '[0-9]* msgs/s and [0-9.]* MB/s' | tail -1 | cut -d' ' -f1; }
  consume_rate() { grep -o '[0-9]* msgs/s ([0-9.]* MB/s)' | tail -1 | cut -d' ' -f1; }
else
  produce_rate() { grep -o '[0-9]* msgs/s' | tail -1 | cut -d' ' -f1; }
  consume_rate() { produce_rate; }
fi
# run_client produce|consume ADDRESS SIZE COUNT SSL(0|1) OUT: the client's output in OUT, and
# its user+system CPU seconds as the last line ("client_cpu N").
run_client() {
  local mode=$1 address=$2 size=$3 count=$4 ssl=$5 out=$6 command
  if [ "$client" = rdkafka ]; then
    local security=()
    [ "$ssl" = 1 ] && security=(-X security.protocol=ssl -X "ssl.ca.location=$tls/ca.pem")
    if [ "$mode" = produce ]; then
      command=("$perf" -P -t "$topic" -p 0 -b "$address" "${security[@]}" -s "$size" -c "$count" -a 1 -X linger.ms=5 -q)
    else
      command=("$perf" -C -t "$topic" -p 0 -b "$address" "${security[@]}" -o beginning -c "$count" -q)
    fi
  else
    local security=()
    [ "$ssl" = 1 ] && security=(-ca "$tls/ca.pem")
    command=("$perf" -mode "$mode" -brokers "$address" -topic "$topic" -size "$size" -count "$count" "${security[@]}")
  fi
  /usr/bin/time -f 'client_cpu %U %S' "${command[@]}" > "$out" 2>&1
}
client_cpu() { awk '/^client_cpu/ { printf "%.1f", $2 + $3 }' "$1"; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A produce consume cpu client_cpu_s
for target in weir kafka; do
  # (bench_broker_start reads $target)
  for size in 100 1024; do
    count=$small_count
    [ "$size" -eq 1024 ] && count=$large_count
    for protocol in plaintext ssl; do
      address=$bootstrap
      ssl=0
      if [ "$protocol" = ssl ]; then
        address=localhost:$ssl_port
        ssl=1
      fi
      key=$target/$size/$protocol
      for run in $(seq 1 "$runs"); do
        bench_broker_start --set "ssl.keystore.location=$tls/broker.pem" --set log.flush.on.ack=false
        topic=bench-tls-$run
        run_client produce "$address" "$size" "$count" "$ssl" "$data/produce.txt"
        run_client consume "$address" "$size" "$count" "$ssl" "$data/consume.txt"
        produce[$key]="${produce[$key]:-} $(produce_rate < "$data/produce.txt")"
        consume[$key]="${consume[$key]:-} $(consume_rate < "$data/consume.txt")"
        cpu[$key]="${cpu[$key]:-} $(cpu_seconds)"
        client_cpu_s[$key]="${client_cpu_s[$key]:-} $(client_cpu "$data/produce.txt")+$(client_cpu "$data/consume.txt")"
        bench_broker_stop
      done
    done
  done
done

echo "## Rates (msgs/s, median of $runs runs; each run's figures in brackets) and broker CPU"
echo
echo "| broker | message | protocol | produce | consume | broker CPU s (produce + consume) | client CPU s (produce+consume, each run) |"
echo "|---|---|---|---|---|---|---|"
for key in weir/100/plaintext weir/100/ssl weir/1024/plaintext weir/1024/ssl \
  kafka/100/plaintext kafka/100/ssl kafka/1024/plaintext kafka/1024/ssl; do
  IFS=/ read -r target size protocol <<< "$key"
  echo "| $target | $size B | $protocol | $(median <<< "${produce[$key]}") [${produce[$key]# }] | $(median <<< "${consume[$key]}") [${consume[$key]# }] | $(median <<< "${cpu[$key]}") | ${client_cpu_s[$key]# } |"
done
echo
echo "## SSL / PLAINTEXT (medians), and Weir / Kafka over SSL"
echo
echo "| message | Weir produce | Weir consume | Kafka produce | Kafka consume | Weir/Kafka produce over SSL | Weir/Kafka consume over SSL |"
echo "|---|---|---|---|---|---|---|"
for size in 100 1024; do
  m() { median <<< "$1"; }
  wp=$(ratio "$(m "${produce[weir/$size/ssl]}")" "$(m "${produce[weir/$size/plaintext]}")")
  wc=$(ratio "$(m "${consume[weir/$size/ssl]}")" "$(m "${consume[weir/$size/plaintext]}")")
  kp=$(ratio "$(m "${produce[kafka/$size/ssl]}")" "$(m "${produce[kafka/$size/plaintext]}")")
  kc=$(ratio "$(m "${consume[kafka/$size/ssl]}")" "$(m "${consume[kafka/$size/plaintext]}")")
  xp=$(ratio "$(m "${produce[weir/$size/ssl]}")" "$(m "${produce[kafka/$size/ssl]}")")
  xc=$(ratio "$(m "${consume[weir/$size/ssl]}")" "$(m "${consume[kafka/$size/ssl]}")")
  echo "| $size B | $wp | $wc | $kp | $kc | $xp | $xc |"
done
rm -rf "$data"
