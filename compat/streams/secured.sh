#!/usr/bin/env bash
# The Kafka Streams exactly_once_v2 word count (compat/streams/run.sh, killed -9 mid-way) as a
# secured application: Weir with a PLAINTEXT admin listener (User:ANONYMOUS a super user) and a
# SASL_SSL one (SCRAM-SHA-512, a CA made here with openssl), StandardAuthorizer on. The
# application logs in as User:streams (made with `weir user create`) and holds only the ACLs
# Kafka's security guide gives a Streams application: READ on its input, WRITE on its output,
# ALL on topics prefixed by its application id (internal topics), READ on its group and WRITE on
# transactional ids prefixed by the application id (`weir acl create`). Its read_committed
# output must be exact. Then a second application without the transactional-id ACL must be
# refused with TransactionalIdAuthorizationException.
# Usage: compat/streams/secured.sh PATH/TO/weir [LINES] [KILLS]
#   Prints "kafka streams secured: exact" on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
lines=${2:-20000}
kills=${3:-2}
cache=${WEIR_CACHE:-$HOME/.cache/weir}
work=$(mktemp -d)
weir_pid=
app_pid=
cleanup() {
  if [ -n "$app_pid" ]; then { kill -9 "$app_pid"; wait "$app_pid"; } 2>/dev/null || true; fi
  if [ -n "$weir_pid" ]; then { kill "$weir_pid"; wait "$weir_pid"; } 2>/dev/null || true; fi
  [ -n "${KEEP_STREAMS_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cd "$work"

openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Weir test CA"
openssl_quiet req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=weir-broker"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl_quiet x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.crt -days 2 -extfile server.ext
cat broker.crt broker.key > broker.pem

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
plain=$(free_port); ssl=$(free_port)
{
  echo "listeners=PLAINTEXT://127.0.0.1:$plain,SASL_SSL://127.0.0.1:$ssl"
  echo "advertised.listeners=PLAINTEXT://127.0.0.1:$plain,SASL_SSL://localhost:$ssl"
  echo "sasl.enabled.mechanisms=SCRAM-SHA-512"
  echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;"
  echo "ssl.keystore.type=PEM"
  echo "ssl.keystore.location=$work/broker.pem"
  echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
  echo "super.users=User:ANONYMOUS"
  echo "group.initial.rebalance.delay.ms=0"
} > weir.properties
"$weir" broker --metrics-listen off --data-dir "$work/data" --config weir.properties > weir.log 2>&1 &
weir_pid=$!
for _ in $(seq 1 100); do grep -q "weir broker ready" weir.log && break; sleep 0.1; done
grep -q "weir broker ready" weir.log || { tail -20 weir.log; echo "kafka streams secured: Weir did not start"; exit 1; }

admin=127.0.0.1:$plain
echo streams-secret | "$weir" user create streams -b "$admin" --password-file - > /dev/null
run=wcs$$-$RANDOM
acl() { "$weir" acl create -b "$admin" --principal User:streams "$@" > /dev/null; }
grant_application() { # application id
  acl --topic "$1" --pattern-type prefixed --operation ALL
  acl --group "$1" --operation READ
}
acl --topic "$run-input" --operation READ
acl --topic "$run-output" --operation WRITE
grant_application "$run-app"
acl --transactional-id "$run-app" --pattern-type prefixed --operation WRITE
{
  echo "security.protocol=SASL_SSL"
  echo "sasl.mechanism=SCRAM-SHA-512"
  echo 'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="streams" password="streams-secret";'
  echo "ssl.truststore.type=PEM"
  echo "ssl.truststore.location=$work/ca.pem"
} > app.properties

WORDCOUNT_RUN=$run APP_BOOTSTRAP=localhost:$ssl APP_PROPERTIES=$work/app.properties \
  "$here/run.sh" "$admin" "$lines" "$kills" | sed 's/^kafka streams:/kafka streams secured:/'

# A second application of the same principal, without the transactional-id ACL: refused.
grant_application "$run-denied"
version=$(grep -o '<kafka.version>[^<]*' "$here/pom.xml" | cut -d'>' -f2)
WORDCOUNT_APP_PROPERTIES=$work/app.properties java -Xmx256m \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=error \
  -cp "$cache/kafka-streams-$version/libs/*:$cache/streams-classes" WordCount app "localhost:$ssl" \
  "$run-denied" "$work/denied-state" "$run-input" "$run-denied-output" > denied.log 2>&1 &
app_pid=$!
for _ in $(seq 1 600); do
  grep -q "TransactionalIdAuthorizationException" denied.log && break
  sleep 0.1
done
if ! grep -q "TransactionalIdAuthorizationException" denied.log; then
  echo "kafka streams secured: an application without the transactional-id ACL was not refused; its log:"
  tail -20 denied.log
  exit 1
fi
echo "kafka streams secured: refused without the transactional-id ACL"
