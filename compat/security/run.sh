#!/usr/bin/env bash
# The security differential: a Weir broker and the reference Apache Kafka configured with the
# same server.properties lines — a PLAINTEXT listener (its ANONYMOUS a super user: the admin
# path), a SASL_SSL listener with PLAIN users from the JAAS config, SCRAM-SHA-256/512 and
# OAUTHBEARER (Kafka's validating handler, a JWKS file), the StandardAuthorizer — then
#   1. the scenario's security section (compat/scenario/src/security.rs) against both: login
#      failures, each operation with and without its ACL, deny over allow, prefixed patterns,
#      super users, hidden topics; the transcripts must match step by step (compare.py);
#   2. its OAUTHBEARER section (compat/scenario/src/oauth.rs): valid tokens of a super user and
#      of an unauthorized user, and expired, foreign, unsigned… tokens, answer for answer;
#   3. Kafka's kafka-acls.sh against both: --add, --list, --remove (over PLAINTEXT and, with
#      --command-config, over SASL_SSL as a super user), its output the same for both;
#   4. `weir acl list` against both: the same listing.
# Certificates are made here with openssl.
# Usage: compat/security/run.sh PATH/TO/weir PATH/TO/weir-compat-scenario
# Prints "security: N passed, N failed" last.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weir=$1
scenario=$2
cache=${WEIR_CACHE:-$HOME/.cache/weir}
python=$cache/venv/bin/python
version=$(grep -o '<kafka.version>[^<]*' "$here/../kafka/pom.xml" | cut -d'>' -f2)
libs=$cache/kafka-$version/libs
work=$(mktemp -d)
weir_pid=
export KAFKA_PORT=${SECURITY_KAFKA_PORT:-29392}
cleanup() {
  [ -n "$weir_pid" ] && kill "$weir_pid" 2>/dev/null
  "$here/../kafka/stop.sh"
  [ -n "${KEEP_SECURITY_WORK:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAILED $1: $2" | head -30; }
same() { if cmp -s "$2" "$3"; then pass; else fail "$1" "$(diff "$2" "$3" | head -20)"; fi; }

cd "$work" || exit 1
openssl_quiet() { openssl "$@" 2>/dev/null; }
openssl_quiet req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=Weir security test CA"
openssl_quiet req -newkey rsa:2048 -nodes -keyout broker.key -out broker.csr -subj "/CN=weir-broker"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl_quiet x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out broker.crt -days 2 -extfile server.ext
cat broker.crt broker.key > broker.pem

# OAUTHBEARER: JWTs checked against a JWKS file (keys made by the scenario binary).
"$scenario" oauth-keys "$work" || { echo "security: no OAuth keys"; echo "security: 0 passed, 1 failed"; exit 1; }
scram_module='org.apache.kafka.common.security.scram.ScramLoginModule required;'
plain_module='org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";'
{
  echo "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"
  echo "listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
  echo "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
  echo "sasl.oauthbearer.jwks.endpoint.url=file://$work/jwks.json"
  echo "sasl.oauthbearer.expected.issuer=https://issuer.compat.example"
  echo "sasl.oauthbearer.expected.audience=compat-brokers"
  echo "listener.name.sasl_ssl.plain.sasl.jaas.config=$plain_module"
  echo "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$scram_module"
  echo "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$scram_module"
  echo "ssl.keystore.type=PEM"
  echo "ssl.keystore.location=$work/broker.pem"
  echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
  echo "super.users=User:ANONYMOUS;User:admin"
} > security.properties
{
  cat security.properties
  echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
} > kafka-security.properties

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
w_plain=$(free_port); w_ssl=$(free_port)
{
  cat security.properties
  echo "listeners=PLAINTEXT://127.0.0.1:$w_plain,SASL_SSL://127.0.0.1:$w_ssl"
  echo "advertised.listeners=PLAINTEXT://127.0.0.1:$w_plain,SASL_SSL://localhost:$w_ssl"
  echo "group.initial.rebalance.delay.ms=0"
} > weir.properties
"$weir" broker --metrics-listen off --data-dir "$work/data" --config weir.properties > "$work/weir.log" 2>&1 &
weir_pid=$!
k_ssl=$(free_port)
# Kafka 4 reads a JWKS only from URLs this system property allows.
KAFKA_JAVA_OPTS="-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file://$work/jwks.json" \
  KAFKA_EXTRA_LISTENERS="SASL_SSL://127.0.0.1:$k_ssl" KAFKA_EXTRA_ADVERTISED="SASL_SSL://localhost:$k_ssl" \
  KAFKA_EXTRA_PROPERTIES="$work/kafka-security.properties" "$here/../kafka/start.sh" > kafka.address \
  || { echo "security: the reference Kafka did not start"; echo "security: 0 passed, 1 failed"; exit 1; }
for _ in $(seq 1 100); do grep -q "weir broker ready" "$work/weir.log" && break; sleep 0.1; done
if ! grep -q "weir broker ready" "$work/weir.log"; then
  tail -20 "$work/weir.log"
  echo "security: 0 passed, 1 failed"
  exit 1
fi
kafka_plain=$(cat kafka.address)

# 1. The scenario's security section against both.
run=sec$$
"$scenario" "127.0.0.1:$w_plain" "$run" security "localhost:$w_ssl" "$work/ca.pem" > weir.json 2> weir-scenario.err \
  || fail "the security scenario against Weir" "$(tail -5 weir-scenario.err)"
"$scenario" "$kafka_plain" "$run" security "localhost:$k_ssl" "$work/ca.pem" > kafka.json 2> kafka-scenario.err \
  || fail "the security scenario against Kafka" "$(tail -5 kafka-scenario.err)"
if [ -s weir.json ] && [ -s kafka.json ]; then
  echo '{}' > no-known-differences.json
  if python3 "$here/../compare.py" weir.json kafka.json no-known-differences.json > compare.txt; then
    pass
  else
    fail "the security scenario's transcripts differ" "$(cat compare.txt)"
  fi
  tail -1 compare.txt
fi

# 2. The OAUTHBEARER logins against both (compat/scenario/src/oauth.rs).
"$scenario" "127.0.0.1:$w_plain" "$run" oauth "localhost:$w_ssl" "$work/ca.pem" "$work" > weir-oauth.json 2> weir-oauth.err \
  || fail "the OAUTHBEARER steps against Weir" "$(tail -5 weir-oauth.err)"
"$scenario" "$kafka_plain" "$run" oauth "localhost:$k_ssl" "$work/ca.pem" "$work" > kafka-oauth.json 2> kafka-oauth.err \
  || fail "the OAUTHBEARER steps against Kafka" "$(tail -5 kafka-oauth.err)"
if [ -s weir-oauth.json ] && [ -s kafka-oauth.json ]; then
  if python3 "$here/../compare.py" weir-oauth.json kafka-oauth.json no-known-differences.json > compare-oauth.txt; then
    pass
  else
    fail "the OAUTHBEARER transcripts differ" "$(cat compare-oauth.txt)"
  fi
  tail -1 compare-oauth.txt
fi

# 3. kafka-acls.sh against both, over PLAINTEXT and over SASL_SSL.
acls() { java -Xmx256m -Dlog4j2.level=WARN -cp "$libs/*" org.apache.kafka.tools.AclCommand "$@" 2>&1 | grep -v "^SLF4J"; }
{
  echo "security.protocol=SASL_SSL"
  echo "sasl.mechanism=PLAIN"
  echo 'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";'
  echo "ssl.truststore.type=PEM"
  echo "ssl.truststore.location=$work/ca.pem"
} > admin-sasl.properties
# One broker's kafka-acls session; its output (lines sorted within each command) in NAME/acls.txt.
acl_session() {
  local name=$1 plain=$2 ssl=$3
  mkdir -p "$name"
  {
    acls --bootstrap-server "$plain" --add --allow-principal User:carol --operation Read \
      --operation Describe --topic acl-tool --group acl-tool-group | sort
    acls --bootstrap-server "$ssl" --command-config admin-sasl.properties --add \
      --deny-principal User:carol --operation Write --topic acl-tool- --resource-pattern-type prefixed | sort
    acls --bootstrap-server "$plain" --add --allow-principal User:carol --producer --topic acl-out \
      --transactional-id acl-txn | sort
    # ACLs reach a broker's authorizer through its metadata a moment after they are answered.
    for _ in $(seq 1 20); do
      acls --bootstrap-server "$plain" --list --topic acl-tool > "$name/list.txt"
      grep -q READ "$name/list.txt" && break
      sleep 0.3
    done
    sort "$name/list.txt"
    acls --bootstrap-server "$ssl" --command-config admin-sasl.properties --list --principal User:carol | sort
    acls --bootstrap-server "$plain" --list --topic acl-tool-x --resource-pattern-type match | sort
    acls --bootstrap-server "$plain" --remove --force --allow-principal User:carol --operation Read \
      --topic acl-tool | sort
  } > "$name/acls.txt"
  "$weir" acl -b "$plain" list | sort > "$name/weir-acl-list.txt"
}
acl_session weir "127.0.0.1:$w_plain" "localhost:$w_ssl"
acl_session kafka "$kafka_plain" "localhost:$k_ssl"
same "kafka-acls.sh prints the same for Weir and Kafka" kafka/acls.txt weir/acls.txt
if grep -q "User:carol" weir/acls.txt; then pass; else fail "kafka-acls.sh listed carol's ACLs" "$(head -20 weir/acls.txt)"; fi
same "weir acl list prints the same for Weir and Kafka" kafka/weir-acl-list.txt weir/weir-acl-list.txt
if grep -q "TOPIC	acl-tool-	PREFIXED	User:carol	\*	WRITE	DENY" weir/weir-acl-list.txt; then
  pass
else
  fail "weir acl list shows the prefixed deny" "$(cat weir/weir-acl-list.txt)"
fi

if [ "$failed" -ne 0 ]; then
  grep -E " (WARN|ERROR) " "$work/weir.log" | tail -10
fi
echo "security: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
