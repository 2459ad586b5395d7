{{/*
Names and labels, in the style of the `helm create` scaffold.
*/}}

{{/* Expand the name of the chart. */}}
{{- define "webhook-fanout.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
A default fully qualified app name, truncated to 45 characters so that
"<fullname>-<component>-metrics" still fits the 63 characters of a DNS label. If the release
name contains the chart name it is used as the full name.
*/}}
{{- define "webhook-fanout.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 45 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 45 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Chart name and version as used by the chart label. */}}
{{- define "webhook-fanout.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "webhook-fanout.labels" -}}
helm.sh/chart: {{ include "webhook-fanout.chart" . }}
{{ include "webhook-fanout.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: webhook-fanout
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels. */}}
{{- define "webhook-fanout.selectorLabels" -}}
app.kubernetes.io/name: {{ include "webhook-fanout.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of one component. Call with (dict "root" $ "component" "ingest"). */}}
{{- define "webhook-fanout.componentLabels" -}}
{{ include "webhook-fanout.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Selector labels of one component. Call with (dict "root" $ "component" "ingest"). */}}
{{- define "webhook-fanout.componentSelectorLabels" -}}
{{ include "webhook-fanout.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* "<fullname>-<component>". Call with (dict "root" $ "component" "ingest"). */}}
{{- define "webhook-fanout.componentName" -}}
{{- printf "%s-%s" (include "webhook-fanout.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The ServiceAccount of a component: its own ("<fullname>-<component>" unless named) when
serviceAccount.create, else the given name or the namespace's "default".
Call with (dict "root" $ "component" "ingest" "values" .Values.ingest).
*/}}
{{- define "webhook-fanout.serviceAccountName" -}}
{{- $sa := .values.serviceAccount | default dict }}
{{- if $sa.create }}
{{- default (include "webhook-fanout.componentName" .) $sa.name }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{/* The image reference: a digest wins over a tag; the tag defaults to the chart's appVersion. */}}
{{- define "webhook-fanout.image" -}}
{{- $img := .Values.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/*
The name of a cluster-scoped object (or of a binding in a namespace other than the release's):
"<release namespace>-<name>", so that the same release name installs in two namespaces without
clashing; over 63 characters it is cut and made unique again by a hash of the full name.
Call with (dict "root" $ "name" "<name>").
*/}}
{{- define "webhook-fanout.clusterScopedName" -}}
{{- $full := printf "%s-%s" .root.Release.Namespace .name }}
{{- if gt (len $full) 63 }}
{{- printf "%s-%s" ($full | trunc 54 | trimSuffix "-") ($full | sha256sum | trunc 8) }}
{{- else }}
{{- $full }}
{{- end }}
{{- end }}

{{/*
"true" when the consumer Deployment renders: enabled, and its work not done by the worker
(worker.consumeQueue).
*/}}
{{- define "webhook-fanout.consumer.deployed" -}}
{{- if and .Values.consumer.enabled (not .Values.worker.consumeQueue) }}true{{ end }}
{{- end }}

{{/*
"true" when the web console is on: with the admin API, and either console.enabled=true (which
then requires console.clientId) or, console.enabled left unset, a console.clientId given. A
feature that needs new settings is off until they are given: values written before the console
existed upgrade without any.
*/}}
{{- define "webhook-fanout.console.on" -}}
{{- if .Values.adminApi.enabled }}
{{- $enabled := .Values.console.enabled }}
{{- if kindIs "bool" $enabled }}{{ if $enabled }}true{{ end }}
{{- else if .Values.console.clientId }}true
{{- end }}
{{- end }}
{{- end }}
