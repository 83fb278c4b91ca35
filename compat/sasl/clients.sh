#!/usr/bin/env bash
# Real clients over SASL against a Weir broker and the reference Apache Kafka configured alike:
# a PLAINTEXT listener (the admin path), SASL_PLAINTEXT and SASL_SSL listeners serving PLAIN
# (users from the JAAS config) and SCRAM-SHA-256/512 (users made with Kafka's kafka-configs.sh,
# `--entity-type users`). On each broker: kafka-configs creates, describes and deletes SCRAM
# credentials (its output must be the same on both); kcat (Debian's librdkafka) over SASL_SSL
# with PLAIN, confluent-kafka over SASL_PLAINTEXT with SCRAM-SHA-512, kafka-python, kafkajs and
# franz-go over SASL_SSL with SCRAM (compat/clients) and Kafka's Java console clients over
# SASL_SSL with PLAIN each write records and read back exactly those; a
# wrong password, an unknown user and a deleted credential are refused, and so is librdkafka
# 2.0.2's SCRAM (its nonce bug: Kafka 4.x refuses it too). Certificates are made
# here with openssl. The same server.properties lines configure both brokers.
# Usage: compat/sasl/clients.sh PATH/TO/weir        Prints "sasl clients: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
cache=${WEIR_CACHE:-$HOME/.cache/weir}
python=$cache/venv/bin/python
version=$(grep -o '<kafka.version>[^<]*' "$here/../kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
work=$(mktemp -d)
weir_pid=
export KAFKA_PORT=${SASL_KAFKA_PORT:-29292}
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null
  "$here/../kafka/stop.sh"
  [ -n "${KEEP_SASL_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED $1: $2" | head -20; }
# Same lines in the same order. Usage: same description expected-file actual-file
same() { if cmp -s "$2" "$3"; then pass; else fail "$1" "$(diff "$2" "$3" | head -5)"; fi; }

openssl_quiet() { openssl "$@" 2>/dev/null; }
cd "$work" || exit 1
openssl_quiet req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Weir test CA"
openssl_quiet req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=weir-broker"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl_quiet x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.crt -days 2 -extfile server.ext
cat broker.crt broker.key > broker.pem

# The security lines both brokers take.
scram_module='org.apache.kafka.common.security.scram.ScramLoginModule required;'
plain_module='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
{
  echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
  for listener in sasl_plaintext sasl_ssl; do
    echo "listener.name.$listener.plain.sasl.jaas.config=$plain_module"
    echo "listener.name.$listener.scram-sha-256.sasl.jaas.config=$scram_module"
    echo "listener.name.$listener.scram-sha-512.sasl.jaas.config=$scram_module"
  done
  echo "ssl.keystore.type=PEM"
  echo "ssl.keystore.location=$work/broker.pem"
} > security.properties
# Kafka's own controller listener is named in its map (the default map has only the protocols).
{
  cat security.properties
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
} > kafka-security.properties

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
w_plain=$(free_port); w_sasl=$(free_port); w_ssl=$(free_port)
{
  cat security.properties
  echo "listeners=PLAINTEXT://127.0.0.1:$w_plain,SASL_PLAINTEXT://127.0.0.1:$w_sasl,SASL_SSL://127.0.0.1:$w_ssl"
  echo "advertised.listeners=PLAINTEXT://127.0.0.1:$w_plain,SASL_PLAINTEXT://127.0.0.1:$w_sasl,SASL_SSL://localhost:$w_ssl"
  echo "group.initial.rebalance.delay.ms=0"
} > weir.properties
"$weir" broker --metrics-listen off --data-dir "$work/data" --config weir.properties > "$work/weir.log" 2>&1 &
weir_pid=$!
k_sasl=$(free_port); k_ssl=$(free_port)
KAFKA_EXTRA_LISTENERS="SASL_PLAINTEXT://127.0.0.1:$k_sasl,SASL_SSL://127.0.0.1:$k_ssl" \
  KAFKA_EXTRA_ADVERTISED="SASL_PLAINTEXT://127.0.0.1:$k_sasl,SASL_SSL://localhost:$k_ssl" \
  KAFKA_EXTRA_PROPERTIES="$work/kafka-security.properties" "$here/../kafka/start.sh" > kafka.address \
  || { echo "sasl clients: the reference Kafka did not start"; echo "sasl clients: 0 passed, 1 failed"; exit 1; }
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/weir.log" && break; sleep 0.1; done
if ! grep -q "weir broker ready" "$work/weir.log"; then
  tail -20 "$work/weir.log"
  echo "sasl clients: 0 passed, 1 failed"
  exit 1
fi

seq 1 200 | sed 's/^/record-/' > expected.txt
. "$here/../clients/roundtrip.sh"
java_tool() { java -Xmx256m -Dlog4j2.level=WARN -cp "$libs/*" "$@"; }
configs() { java_tool org.apache.kafka.tools.ConfigCommand --bootstrap-server "$@" 2>&1 | grep -v "^SLF4J"; }

# "… are SCRAM-SHA-512=iterations=4096, SCRAM-SHA-256=iterations=8192" with the list sorted.
sorted_mechanisms() {
  python3 -c '
import sys
for line in sys.stdin:
    head, sep, tail = line.rstrip("\n").partition(" are ")
    if sep and "SCRAM-SHA" in tail:
        line = head + sep + ", ".join(sorted(tail.split(", "))) + "\n"
    sys.stdout.write(line)'
}

# The round trip of compat/clients (write the expected records, read exactly those back) with
# one client as bob over SASL_SSL. Usage: secured_roundtrip DESCRIPTION CLIENT ADDRESS MECHANISM
secured_roundtrip() {
  SECURITY_PROTOCOL=SASL_SSL CA="$work/ca.pem" SASL_MECHANISM=$4 SASL_USERNAME=bob \
    SASL_PASSWORD=bob-secret roundtrip "$2" "$3" "sasl-$2" ../expected.txt > "$2.txt" 2> "$2.err"
  same "$1" ../expected.txt "$2.txt"
  [ -s "$2.err" ] && [ "$failed" -ne 0 ] && head -5 "$2.err"
}

# One broker's checks. Usage: run_on NAME PLAINTEXT SASL_PLAINTEXT SASL_SSL
run_on() {
  local name=$1 admin=$2 sasl=$3 ssl=$4
  mkdir -p "$name" && cd "$name" || return
  # One mechanism a command: both in one request is DUPLICATE_RESOURCE on Kafka too.
  configs "$admin" --alter --entity-type users --entity-name bob \
    --add-config 'SCRAM-SHA-256=[iterations=8192,password=bob-secret]' > alter.txt
  configs "$admin" --alter --entity-type users --entity-name bob \
    --add-config 'SCRAM-SHA-512=[password=bob-secret]' >> alter.txt
  configs "$admin" --alter --entity-type users --entity-name bob \
    --add-config 'SCRAM-SHA-256=[iterations=100,password=bob-secret]' 2>&1 | grep -o "UnacceptableCredentialException.*" | head -1 >> alter.txt
  # The credentials reach the SASL listeners through the metadata: wait until bob is described.
  for _ in $(seq 1 50); do
    configs "$admin" --describe --entity-type users --entity-name bob > describe.txt
    grep -q SCRAM-SHA-512 describe.txt && break
    sleep 0.2
  done

  local ssl_args=(-X security.protocol=sasl_ssl -X ssl.ca.location="$work/ca.pem")
  local plain_alice=(-X sasl.mechanism=PLAIN -X sasl.username=alice -X sasl.password=alice-secret)
  kcat -b "$ssl" "${ssl_args[@]}" "${plain_alice[@]}" -P -t sasl-kcat -p 0 < ../expected.txt 2> kcat-produce.err
  kcat -b "$ssl" "${ssl_args[@]}" "${plain_alice[@]}" -C -t sasl-kcat -p 0 -o beginning -e -q > kcat.txt 2> kcat.err
  same "$name: kcat over SASL_SSL with PLAIN" ../expected.txt kcat.txt
  if timeout 20 kcat -b "$ssl" "${ssl_args[@]}" -X sasl.mechanism=PLAIN -X sasl.username=alice \
    -X sasl.password=wrong -L -m 5 > wrong.txt 2>&1; then
    fail "$name: a wrong PLAIN password is refused" "$(head -3 wrong.txt)"
  elif ! grep -q "Authentication failed" wrong.txt; then
    fail "$name: a wrong PLAIN password says authentication failed" "$(grep -i -m3 "error\|fail" wrong.txt)"
  else
    pass
  fi
  # Debian's kcat links librdkafka 2.0.2, whose SCRAM client-final message repeats the client
  # nonce (fixed in librdkafka 2.6.1, confluentinc/librdkafka#4895): Kafka 4.x checks the nonce
  # strictly (RFC 5802) and refuses it even with the right password, and so must Weir.
  if timeout 20 kcat -b "$ssl" "${ssl_args[@]}" -X sasl.mechanism=SCRAM-SHA-256 -X sasl.username=bob \
    -X sasl.password=bob-secret -L -m 5 > old-scram.txt 2>&1; then
    fail "$name: librdkafka 2.0.2's SCRAM nonce is refused, as by Kafka 4.x" "$(head -3 old-scram.txt)"
  elif ! grep -q "invalid credentials" old-scram.txt; then
    fail "$name: librdkafka 2.0.2's SCRAM is refused as invalid credentials" "$(grep -i -m3 "error\|fail" old-scram.txt)"
  else
    pass
  fi
  if "$python" - "$ssl" "$work/ca.pem" > wrong-scram.txt 2>&1 <<'PY'
import sys
from confluent_kafka.admin import AdminClient
bootstrap, ca = sys.argv[1:3]
admin = AdminClient({"bootstrap.servers": bootstrap, "security.protocol": "sasl_ssl",
                     "ssl.ca.location": ca, "sasl.mechanism": "SCRAM-SHA-256",
                     "sasl.username": "bob", "sasl.password": "wrong"})
try:
    admin.list_topics(timeout=10)
except Exception as error:
    print(error)
    sys.exit(1)
PY
  then
    fail "$name: a wrong SCRAM-SHA-256 password is refused (confluent-kafka)" "$(head -3 wrong-scram.txt)"
  elif ! grep -q "Authentication failed" wrong-scram.txt; then
    fail "$name: a wrong SCRAM-SHA-256 password says authentication failed" "$(head -3 wrong-scram.txt)"
  else
    pass
  fi
  if timeout 20 kcat -b "$sasl" -X security.protocol=sasl_plaintext -X sasl.mechanism=PLAIN \
    -X sasl.username=mallory -X sasl.password=alice-secret -L -m 5 > unknown.txt 2>&1; then
    fail "$name: an unknown PLAIN user is refused" "$(head -3 unknown.txt)"
  else
    pass
  fi

  "$python" - "$sasl" ../expected.txt > confluent.txt <<'PY'
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, expected = sys.argv[1:3]
common = {"bootstrap.servers": bootstrap, "security.protocol": "sasl_plaintext",
          "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bob", "sasl.password": "bob-secret"}
values = [line.rstrip("\n") for line in open(expected)]
producer = Producer(common)
for value in values:
    producer.produce("sasl-confluent", value=value.encode(), partition=0)
assert producer.flush(30) == 0, "undelivered records"
consumer = Consumer({**common, "group.id": "sasl-confluent", "enable.auto.commit": False})
consumer.assign([TopicPartition("sasl-confluent", 0, 0)])
read = []
while len(read) < len(values):
    message = consumer.poll(10)
    assert message is not None, f"only {len(read)} records read"
    assert message.error() is None, message.error()
    read.append(message.value().decode())
consumer.close()
print("\n".join(read))
PY
  same "$name: confluent-kafka over SASL_PLAINTEXT with SCRAM-SHA-512" ../expected.txt confluent.txt

  # kafka-python, kafkajs and franz-go over SASL_SSL with SCRAM (compat/clients).
  secured_roundtrip "$name: kafka-python over SASL_SSL with SCRAM-SHA-256" kafka-python "$ssl" SCRAM-SHA-256
  secured_roundtrip "$name: kafkajs over SASL_SSL with SCRAM-SHA-512" kafkajs "$ssl" SCRAM-SHA-512
  secured_roundtrip "$name: franz-go over SASL_SSL with SCRAM-SHA-512" franz-go "$ssl" SCRAM-SHA-512

  {
    echo "security.protocol=SASL_SSL"
    echo "sasl.mechanism=PLAIN"
    echo 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="alice-secret";'
    echo "ssl.truststore.type=PEM"
    echo "ssl.truststore.location=$work/ca.pem"
  } > java.properties
  java_tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$ssl" --topic sasl-java \
    --command-config java.properties < ../expected.txt > java-producer.log 2>&1
  java_tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$ssl" --topic sasl-java \
    --command-config java.properties --from-beginning --max-messages 200 --timeout-ms 30000 \
    2> java-consumer.log | grep '^record-' > java.txt
  same "$name: Java console producer and consumer over SASL_SSL with PLAIN" ../expected.txt java.txt

  configs "$admin" --alter --entity-type users --entity-name bob --delete-config SCRAM-SHA-512 > delete.txt
  for _ in $(seq 1 50); do
    configs "$admin" --describe --entity-type users --entity-name bob > after-delete.txt
    grep -q SCRAM-SHA-512 after-delete.txt || break
    sleep 0.2
  done
  if timeout 20 kcat -b "$sasl" -X security.protocol=sasl_plaintext -X sasl.mechanism=SCRAM-SHA-512 \
    -X sasl.username=bob -X sasl.password=bob-secret -L -m 5 > deleted.txt 2>&1; then
    fail "$name: a deleted SCRAM-SHA-512 credential is refused" "$(head -3 deleted.txt)"
  else
    pass
  fi
  configs "$admin" --alter --entity-type users --entity-name nobody --delete-config SCRAM-SHA-256 2>&1 \
    | grep -o "ResourceNotFoundException.*" | head -1 > delete-missing.txt
  # Kafka lists a user's mechanisms in HashMap order (enum identity hashes, so it changes from run
  # to run): compare the described mechanisms as a set.
  cat alter.txt describe.txt delete.txt after-delete.txt delete-missing.txt | sorted_mechanisms > configs.txt
  cd "$work" || return
}

kafka=$(cat kafka.address)
run_on weir "127.0.0.1:$w_plain" "127.0.0.1:$w_sasl" "localhost:$w_ssl"
run_on kafka "$kafka" "127.0.0.1:$k_sasl" "localhost:$k_ssl"
# kafka-configs prints the same for both brokers: what it altered, described and refused.
same "kafka-configs on SCRAM users says the same for Weir and Kafka" kafka/configs.txt weir/configs.txt

if [ "$failed" -ne 0 ]; then
  grep -E " (WARN|ERROR|INFO) .*(SASL|sasl|authentication)" "$work/weir.log" | tail -10
fi
echo "sasl clients: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
