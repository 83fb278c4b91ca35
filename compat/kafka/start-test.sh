#!/usr/bin/env bash
# Starts the reference Kafka the Rust tests use (compat/kafka/start.sh on KAFKA_PORT, default
# 29192) with a SASL_SSL listener beside PLAINTEXT, so the bridge test's pipeline reaches it as
# it would a production cluster: SASL_SSL on KAFKA_PORT+3 (advertised as localhost), PLAIN and
# SCRAM-SHA-512 mechanisms, PLAIN user `bridge` (password `bridge-secret`), a certificate signed
# by the CA at $run/tls/ca.pem (the run dir is kafka-run-$KAFKA_PORT in the cache). Prints the
# PLAINTEXT bootstrap address; the SASL_SSL one is localhost:$((KAFKA_PORT + 3)).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEIR_CACHE:-$HOME/.cache/weir}
port=${KAFKA_PORT:-29192}
secured=$((port + 3))
tls=$cache/kafka-test-tls-$port
if [ ! -f "$tls/security.properties" ]; then
  rm -rf "$tls" && mkdir -p "$tls"
  quiet() { openssl "$@" 2>/dev/null; }
  quiet req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 3650 \
    -subj "/CN=Weir test Kafka CA"
  quiet req -newkey rsa:2048 -nodes -keyout "$tls/broker.key" -out "$tls/broker.csr" -subj "/CN=kafka"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$tls/server.ext"
  quiet x509 -req -in "$tls/broker.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -out "$tls/broker.crt" -days 3650 -extfile "$tls/server.ext"
  cat "$tls/broker.crt" "$tls/broker.key" > "$tls/broker.pem"
  plain='org.apache.kafka.common.security.plain.PlainLoginModule required user_bridge="bridge-secret";'
  {
    echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
    echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"
    echo "listener.name.sasl_ssl.plain.sasl.jaas.config=$plain"
    echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
    echo "ssl.keystore.type=PEM"
    echo "ssl.keystore.location=$tls/broker.pem"
  } > "$tls/security.properties.tmp"
  mv "$tls/security.properties.tmp" "$tls/security.properties"
fi
KAFKA_PORT=$port KAFKA_EXTRA_LISTENERS="SASL_SSL://127.0.0.1:$secured" \
  KAFKA_EXTRA_ADVERTISED="SASL_SSL://localhost:$secured" \
  KAFKA_EXTRA_PROPERTIES="$tls/security.properties" exec "$here/start.sh"
