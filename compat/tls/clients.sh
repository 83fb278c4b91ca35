#!/usr/bin/env bash
# Real clients over TLS against a Weir broker with an SSL listener and an mTLS one
# (ssl.client.auth=required): kcat (Debian's librdkafka), confluent-kafka (its wheel's
# librdkafka), kafka-python, kafkajs and franz-go (mTLS) and Kafka's Java console producer and
# consumer (PEM truststore), each writing records and reading back exactly those; without a
# client certificate the mTLS listener admits nothing. Certificates are made here with openssl.
# Usage: compat/tls/clients.sh PATH/TO/weir        Prints "tls clients: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
cache=${WEIR_CACHE:-$HOME/.cache/weir}
python=$cache/venv/bin/python
version=$(grep -o '<kafka.version>[^<]*' "$here/../kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
work=$(mktemp -d)
weir_pid=
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null
  [ -n "${KEEP_TLS_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED $1: $2" | head -20; }
# Same lines in the same order. Usage: same description expected-file actual-file
same() { if cmp -s "$2" "$3"; then pass; else fail "$1" "$(diff "$2" "$3" | head -5)"; fi; }

# A CA, the broker's certificate (localhost, 127.0.0.1) and a client's.
openssl_quiet() { openssl "$@" 2>/dev/null; }
cd "$work" || exit 1
openssl_quiet req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Weir test CA"
issue() { # name, subject, extension file
  openssl_quiet req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
  openssl_quiet x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$1.crt" -days 2 -extfile "$3"
}
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
printf 'extendedKeyUsage=clientAuth\n' > client.ext
issue broker "/CN=weir-broker" server.ext
issue client "/CN=tls-client" client.ext
cat broker.crt broker.key > broker.pem

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
plain=$(free_port); ssl=$(free_port); mtls=$(free_port)
"$weir" broker --metrics-listen off --data-dir "$work/data" \
  --set "listeners=PLAINTEXT://127.0.0.1:$plain,SSL://127.0.0.1:$ssl,MTLS://127.0.0.1:$mtls" \
  --set "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL" \
  --set "advertised.listeners=SSL://localhost:$ssl,MTLS://localhost:$mtls" \
  --set "ssl.keystore.location=$work/broker.pem" \
  --set "listener.name.mtls.ssl.truststore.location=$work/ca.pem" \
  --set "listener.name.mtls.ssl.client.auth=required" \
  --set group.initial.rebalance.delay.ms=0 > "$work/weir.log" 2>&1 &
weir_pid=$!
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/weir.log" && break; sleep 0.1; done
if ! grep -q "weir broker ready" "$work/weir.log"; then
  tail -20 "$work/weir.log"
  echo "tls clients: 0 passed, 1 failed"
  exit 1
fi

seq 1 200 | sed 's/^/record-/' > expected.txt
ssl_args=(-X security.protocol=ssl -X ssl.ca.location="$work/ca.pem")
# kcat over SSL: produce, then read back from the beginning to the end.
kcat -b "localhost:$ssl" "${ssl_args[@]}" -P -t tls-kcat -p 0 < expected.txt
kcat -b "localhost:$ssl" "${ssl_args[@]}" -C -t tls-kcat -p 0 -o beginning -e -q > kcat.txt 2> kcat.err
same "kcat over SSL" expected.txt kcat.txt
# kcat over mTLS, with the client certificate; and without it, nothing.
mtls_args=("${ssl_args[@]}" -X ssl.certificate.location="$work/client.crt" -X ssl.key.location="$work/client.key")
kcat -b "localhost:$mtls" "${mtls_args[@]}" -P -t tls-mtls -p 0 < expected.txt
kcat -b "localhost:$mtls" "${mtls_args[@]}" -C -t tls-mtls -p 0 -o beginning -e -q > mtls.txt 2> mtls.err
same "kcat over mTLS" expected.txt mtls.txt
if timeout 20 kcat -b "localhost:$mtls" "${ssl_args[@]}" -L -m 5 > anonymous.txt 2>&1; then
  fail "mTLS without a client certificate is refused" "$(head -5 anonymous.txt)"
else
  pass
fi

# kafka-python, kafkajs and franz-go over mTLS (compat/clients).
. "$here/../clients/roundtrip.sh"
for client in kafka-python kafkajs franz-go; do
  SECURITY_PROTOCOL=SSL CA="$work/ca.pem" CERT="$work/client.crt" KEY="$work/client.key" \
    roundtrip "$client" "localhost:$mtls" "tls-$client" expected.txt > "$client.txt" 2> "$client.err"
  same "$client over mTLS" expected.txt "$client.txt"
done

# confluent-kafka over SSL.
"$python" - "localhost:$ssl" "$work/ca.pem" expected.txt > confluent.txt <<'PY'
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, ca, expected = sys.argv[1:4]
common = {"bootstrap.servers": bootstrap, "security.protocol": "ssl", "ssl.ca.location": ca}
values = [line.rstrip("\n") for line in open(expected)]
producer = Producer(common)
for value in values:
    producer.produce("tls-confluent", value=value.encode(), partition=0)
assert producer.flush(30) == 0, "undelivered records"
consumer = Consumer({**common, "group.id": "tls-confluent", "enable.auto.commit": False})
consumer.assign([TopicPartition("tls-confluent", 0, 0)])
read = []
while len(read) < len(values):
    message = consumer.poll(10)
    assert message is not None, f"only {len(read)} records read"
    assert message.error() is None, message.error()
    read.append(message.value().decode())
consumer.close()
print("\n".join(read))
PY
same "confluent-kafka over SSL" expected.txt confluent.txt

# Kafka's Java console producer and consumer, trusting the CA as a PEM truststore.
printf 'security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=%s\n' "$work/ca.pem" > java.properties
java_tool() { java -Xmx256m -Dlog4j2.level=WARN -cp "$libs/*" "$@"; }
java_tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "localhost:$ssl" --topic tls-java \
  --command-config java.properties < expected.txt > java-producer.log 2>&1
# Only the records: the tool also prints notices on stdout.
java_tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "localhost:$ssl" --topic tls-java \
  --command-config java.properties --from-beginning --max-messages 200 --timeout-ms 30000 \
  2> java-consumer.log | grep '^record-' > java.txt
same "Java console producer and consumer over SSL" expected.txt java.txt

if [ "$failed" -ne 0 ]; then
  grep -E " (WARN|ERROR|INFO) .*(TLS|tls)" "$work/weir.log" | tail -10
fi
echo "tls clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
