{{/* The release's base name, as Kubernetes names allow. */}}
{{- define "weir.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "weir.broker.name" -}}
{{- printf "%s-broker" (include "weir.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The headless Service giving each broker pod a stable DNS name. */}}
{{- define "weir.broker.headless" -}}
{{- printf "%s-headless" (include "weir.broker.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The DNS domain of broker pods: <pod>.<this>. */}}
{{- define "weir.broker.domain" -}}
{{- printf "%s.%s.svc.%s" (include "weir.broker.headless" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* controller.quorum.voters: the first `controllers` broker pods, node.id = ordinal. */}}
{{- define "weir.broker.voters" -}}
{{- $name := include "weir.broker.name" . -}}
{{- $domain := include "weir.broker.domain" . -}}
{{- $port := .Values.broker.ports.controller -}}
{{- $voters := list -}}
{{- range $ordinal := until (min (int .Values.broker.controllers) (int .Values.broker.replicas) | int) -}}
{{- $voters = append $voters (printf "%d@%s-%d.%s:%v" $ordinal $name $ordinal $domain $port) -}}
{{- end -}}
{{- join "," $voters -}}
{{- end -}}

{{/* The client bootstrap address (the client Service). */}}
{{- define "weir.bootstrap" -}}
{{- printf "%s.%s.svc.%s:%v" (include "weir.broker.name" .) .Release.Namespace .Values.clusterDomain .Values.broker.ports.kafka -}}
{{- end -}}

{{- define "weir.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "weir.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "weir.broker.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: broker
{{- end -}}

{{/* A pipeline's resources: <release>-pipeline-<name>. */}}
{{- define "weir.pipeline.name" -}}
{{- printf "%s-pipeline-%s" (include "weir.fullname" .root) .pipeline.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What tells a pipeline's objects from the release's others (with weir.labels). */}}
{{- define "weir.pipeline.labels" -}}
app.kubernetes.io/component: pipeline
weir.dev/pipeline: {{ .pipeline.name }}
{{- end -}}

{{- define "weir.pipeline.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{ include "weir.pipeline.labels" . }}
{{- end -}}

{{/* The pipeline file: the pipeline's values with its name, and the brokers as bootstrap
(with the client properties their security needs, under the pipeline's own) unless it names
another cluster. */}}
{{- define "weir.pipeline.file" -}}
{{- $file := merge (dict "name" .pipeline.name) (deepCopy .pipeline.pipeline) -}}
{{- if not (hasKey $file "bootstrap") -}}
{{- $_ := set $file "bootstrap" (include "weir.bootstrap" .root) -}}
{{- $security := include "weir.pipeline.clientProperties" . | fromYaml -}}
{{- if $security -}}
{{- $_ := set $file "client_properties" (merge ($file.client_properties | default dict) $security) -}}
{{- end -}}
{{- end -}}
{{- toYaml $file -}}
{{- end -}}

{{/* The port of an http source's `listen` address, or nothing. */}}
{{- define "weir.pipeline.httpPort" -}}
{{- $source := .pipeline.pipeline.source | default dict -}}
{{- if eq (toString $source.kind) "http" -}}
{{- last (splitList ":" (toString $source.listen)) -}}
{{- end -}}
{{- end -}}

{{/* Security: the protocol of a listener ("client", "internal" or "controller"). */}}
{{- define "weir.listener.protocol" -}}
{{- $security := .root.Values.security -}}
{{- if not $security.tls.enabled -}}
PLAINTEXT
{{- else if and (eq .listener "client") $security.sasl.enabled -}}
SASL_SSL
{{- else -}}
SSL
{{- end -}}
{{- end -}}

{{/* Values that cannot work together fail the render, saying why. */}}
{{- define "weir.security.check" -}}
{{- $security := .Values.security -}}
{{- if and (or $security.sasl.enabled $security.authorization.enabled) (not $security.tls.enabled) -}}
{{- fail "security.sasl and security.authorization need security.tls: the brokers authenticate to each other with their certificates" -}}
{{- end -}}
{{- if and $security.tls.enabled (not $security.tls.secretName) -}}
{{- fail "security.tls.enabled needs security.tls.secretName: a Secret with tls.crt, tls.key and ca.crt" -}}
{{- end -}}
{{- $users := dict -}}
{{- range $security.users -}}{{- $_ := set $users .name . -}}{{- end -}}
{{- range .Values.pipelines -}}
{{- $own := not (hasKey (.pipeline | default dict) "bootstrap") -}}
{{- if and .user (not (hasKey $users .user)) -}}
{{- fail (printf "pipeline %s: user %s is not one of security.users" .name .user) -}}
{{- end -}}
{{- if and $own $security.sasl.enabled (not .user) -}}
{{- fail (printf "pipeline %s: security.sasl is on, so it needs a user (one of security.users) to log in to the brokers" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The brokers' security properties (merged under broker.config, which wins). */}}
{{- define "weir.broker.securityConfig" -}}
{{- $security := .Values.security -}}
{{- if $security.tls.enabled }}
ssl.keystore.location: /etc/weir/tls/tls.crt
ssl.keystore.key.location: /etc/weir/tls/tls.key
ssl.truststore.location: /etc/weir/tls/ca.crt
listener.name.internal.ssl.client.auth: required
listener.name.controller.ssl.client.auth: required
ssl.principal.mapping.rules: RULE:^CN=([^,]+).*$/$1/,DEFAULT
{{- end }}
{{- if $security.sasl.enabled }}
listener.name.client.sasl.enabled.mechanisms: {{ $security.sasl.mechanism }}
listener.name.client.{{ lower $security.sasl.mechanism }}.sasl.jaas.config: "org.apache.kafka.common.security.scram.ScramLoginModule required;"
{{- end }}
{{- if $security.authorization.enabled }}
authorizer.class.name: org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users: {{ join ";" (prepend $security.authorization.superUsers (printf "User:%s" $security.tls.brokerCommonName)) | quote }}
{{- end }}
{{- end -}}

{{/* Client properties reaching the brokers as the INTERNAL listener's super user (the Job). */}}
{{- define "weir.security.brokerClientArgs" -}}
{{- if .Values.security.tls.enabled -}}
-X security.protocol=ssl -X ssl.ca.location=/etc/weir/tls/ca.crt -X ssl.certificate.location=/etc/weir/tls/tls.crt -X ssl.key.location=/etc/weir/tls/tls.key
{{- end -}}
{{- end -}}

{{/* A pipeline's client properties for the brokers (pipelines that name no other cluster). */}}
{{- define "weir.pipeline.clientProperties" -}}
{{- $security := .root.Values.security -}}
{{- $properties := dict -}}
{{- if $security.tls.enabled -}}
{{- $_ := set $properties "security.protocol" (include "weir.listener.protocol" (dict "root" .root "listener" "client")) -}}
{{- $_ := set $properties "ssl.ca.location" "/etc/weir/tls/ca.crt" -}}
{{- end -}}
{{- if and $security.sasl.enabled .pipeline.user -}}
{{- $_ := set $properties "sasl.mechanism" $security.sasl.mechanism -}}
{{- $_ := set $properties "sasl.username" .pipeline.user -}}
{{- $_ := set $properties "sasl.password" "${WEIR_SASL_PASSWORD}" -}}
{{- end -}}
{{- toYaml $properties -}}
{{- end -}}

{{/* The ACLs a pipeline's user needs for the pipeline's own topics, groups and transactional
ids (see the pipelines' naming in pipelines/src): as items of security.authorization.acls. */}}
{{- define "weir.pipeline.acls" -}}
{{- $name := .pipeline.name -}}
{{- $principal := printf "User:%s" .pipeline.user -}}
{{- $config := .pipeline.pipeline | default dict -}}
{{- $raw := (($config.topic | default dict).name) | default (printf "%s-raw" $name) -}}
{{- $acls := list -}}
{{- range $prefix := list $raw (printf "weir-%s-" $name) -}}
{{- $acls = append $acls (dict "principal" $principal "resourceType" "topic" "resourceName" $prefix "patternType" "prefixed" "operations" (list "All")) -}}
{{- end -}}
{{- with $config.dead_letter_topic -}}
{{- $acls = append $acls (dict "principal" $principal "resourceType" "topic" "resourceName" . "operations" (list "All")) -}}
{{- end -}}
{{- $acls = append $acls (dict "principal" $principal "resourceType" "group" "resourceName" (printf "weir-pipeline-%s-" $name) "patternType" "prefixed" "operations" (list "All")) -}}
{{- $acls = append $acls (dict "principal" $principal "resourceType" "group" "resourceName" (printf "%s-windows" $name) "operations" (list "All")) -}}
{{- range $prefix := list (printf "weir-pipeline-%s-" $name) (printf "weir-streams-%s-windows-" $name) -}}
{{- $acls = append $acls (dict "principal" $principal "resourceType" "transactionalId" "resourceName" $prefix "patternType" "prefixed" "operations" (list "All")) -}}
{{- end -}}
{{- toYaml $acls -}}
{{- end -}}

{{/* Every broker's INTERNAL listener, host:port,… */}}
{{- define "weir.broker.internalAddresses" -}}
{{- $name := include "weir.broker.name" . -}}
{{- $domain := include "weir.broker.domain" . -}}
{{- $addresses := list -}}
{{- range $ordinal := until (int .Values.broker.replicas) -}}
{{- $addresses = append $addresses (printf "%s-%d.%s:%v" $name $ordinal $domain $.Values.broker.ports.internal) -}}
{{- end -}}
{{- join "," $addresses -}}
{{- end -}}
