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
unless it names another cluster. */}}
{{- define "weir.pipeline.file" -}}
{{- $defaults := dict "bootstrap" (include "weir.bootstrap" .root) -}}
{{- $file := merge (dict "name" .pipeline.name) (deepCopy .pipeline.pipeline) $defaults -}}
{{- toYaml $file -}}
{{- end -}}

{{/* The port of an http source's `listen` address, or nothing. */}}
{{- define "weir.pipeline.httpPort" -}}
{{- $source := .pipeline.pipeline.source | default dict -}}
{{- if eq (toString $source.kind) "http" -}}
{{- last (splitList ":" (toString $source.listen)) -}}
{{- end -}}
{{- end -}}
