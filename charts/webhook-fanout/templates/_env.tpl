{{/*
Env entries every process shares, as YAML lists: each component's _env.tpl puts its own
together from these and its settings.
*/}}

{{/* DATABASE_URL from the existing Secret, never inline; DB_POOL_MAX when set. */}}
{{- define "webhook-fanout.env.database" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "database.existingSecret is required: the name of a Secret holding DATABASE_URL" .Values.database.existingSecret | quote }}
      key: {{ .Values.database.existingSecretKey | quote }}
{{- if not (kindIs "invalid" .Values.database.poolMax) }}
- name: DB_POOL_MAX
  value: {{ .Values.database.poolMax | toString | quote }}
{{- end }}
{{- $tls := .Values.database.tls }}
{{- with $tls.sslMode }}
- name: DATABASE_SSL_MODE
  value: {{ . | quote }}
{{- end }}
{{- if $tls.existingSecret }}
{{- with $tls.caKey }}
- name: DATABASE_CA_FILE
  value: {{ printf "/etc/webhook-fanout/database-tls/%s" . | quote }}
{{- end }}
{{- if and $tls.certKey $tls.keyKey }}
- name: DATABASE_CLIENT_CERT_FILE
  value: {{ printf "/etc/webhook-fanout/database-tls/%s" $tls.certKey | quote }}
- name: DATABASE_CLIENT_KEY_FILE
  value: {{ printf "/etc/webhook-fanout/database-tls/%s" $tls.keyKey | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* LOG_LEVEL, MANAGEMENT_PORT and OPERATIONS_EVENTS_*: every process (each records or routes operational events). */}}
{{- define "webhook-fanout.env.common" -}}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: MANAGEMENT_PORT
  value: {{ .Values.managementPort | toString | quote }}
- name: OPERATIONS_EVENTS_SOURCE
  value: {{ .Values.operationsEvents.source | quote }}
{{- with .Values.operationsEvents.platformNamespaces }}
- name: OPERATIONS_EVENTS_PLATFORM_NAMESPACES
  value: {{ join "," . | quote }}
{{- end }}
{{- end }}

{{/* AWS_REGION, AWS_TRANSPORT, AWS_ENDPOINT_URL and, only when configured, static keys from an existing Secret. */}}
{{- define "webhook-fanout.env.aws" -}}
- name: AWS_REGION
  value: {{ .Values.aws.region | quote }}
- name: AWS_TRANSPORT
  value: {{ .Values.aws.transport | default "signed" | quote }}
{{- with .Values.aws.endpointUrl }}
- name: AWS_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
{{ include "webhook-fanout.env.awsKeys" . }}
{{- end }}

{{/* Only the static AWS keys of aws.credentials.existingSecret, when configured: what the worker's AWS destinations sign with when it has no pod identity (IRSA, EKS Pod Identity) and does not consume the queue. Not AWS_ENDPOINT_URL: the SDK would send every destination to the transport's endpoint. */}}
{{- define "webhook-fanout.env.awsKeys" -}}
{{- with .Values.aws.credentials.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.aws.credentials.accessKeyIdKey | quote }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $.Values.aws.credentials.secretAccessKeyKey | quote }}
{{- end }}
{{- end }}

{{/* TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE. */}}
{{- define "webhook-fanout.env.temporal" -}}
- name: TEMPORAL_ADDRESS
  value: {{ .Values.temporal.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ .Values.temporal.namespace | quote }}
- name: TEMPORAL_TASK_QUEUE
  value: {{ .Values.temporal.taskQueue | quote }}
{{- $tls := .Values.temporal.tls }}
{{- if $tls.enabled }}
- name: TEMPORAL_TLS
  value: "true"
{{- end }}
{{- with $tls.serverName }}
- name: TEMPORAL_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if $tls.existingSecret }}
{{- with $tls.caKey }}
- name: TEMPORAL_TLS_CA
  value: {{ printf "/etc/webhook-fanout/temporal-tls/%s" . | quote }}
{{- end }}
{{- if and $tls.certKey $tls.keyKey }}
- name: TEMPORAL_TLS_CERT
  value: {{ printf "/etc/webhook-fanout/temporal-tls/%s" $tls.certKey | quote }}
- name: TEMPORAL_TLS_KEY
  value: {{ printf "/etc/webhook-fanout/temporal-tls/%s" $tls.keyKey | quote }}
{{- end }}
{{- end }}
{{- if .Values.temporal.apiKey.existingSecret }}
- name: TEMPORAL_API_KEY_FILE
  value: {{ printf "/etc/webhook-fanout/temporal-api-key/%s" .Values.temporal.apiKey.key | quote }}
{{- end }}
{{- end }}

{{/*
The Secrets the TLS settings above name, as volumes and their mounts (read-only), for a component
that uses Postgres ("database" true) and/or Temporal ("temporal" true), and the forward proxy's
credentials for the one that delivers ("proxy" true). Call with (dict "root" $ "database" bool
"temporal" bool "proxy" bool "part" "volumes"|"mounts").
*/}}
{{- define "webhook-fanout.tlsSecrets" -}}
{{- $v := .root.Values }}
{{- $secrets := list }}
{{- if and .database $v.database.tls.existingSecret }}
{{- $secrets = append $secrets (list "database-tls" $v.database.tls.existingSecret) }}
{{- end }}
{{- if and .temporal $v.temporal.tls.existingSecret }}
{{- $secrets = append $secrets (list "temporal-tls" $v.temporal.tls.existingSecret) }}
{{- end }}
{{- if and .temporal $v.temporal.apiKey.existingSecret }}
{{- $secrets = append $secrets (list "temporal-api-key" $v.temporal.apiKey.existingSecret) }}
{{- end }}
{{- if and .proxy $v.delivery.proxy.url $v.delivery.proxy.credentials.existingSecret }}
{{- $secrets = append $secrets (list "delivery-proxy" $v.delivery.proxy.credentials.existingSecret) }}
{{- end }}
{{- range $secrets }}
{{- if eq $.part "volumes" }}
- name: {{ index . 0 }}
  secret:
    secretName: {{ index . 1 | quote }}
    defaultMode: 0440
{{- else }}
- name: {{ index . 0 }}
  mountPath: /etc/webhook-fanout/{{ index . 0 }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{/* OTEL_* of the processes that trace (ingest, consumer, worker), when tracing.otlpEndpoint is set. */}}
{{- define "webhook-fanout.env.tracing" -}}
{{- with .Values.tracing }}
{{- if .otlpEndpoint }}
{{- $otel := merge (dict "OTEL_EXPORTER_OTLP_ENDPOINT" .otlpEndpoint "OTEL_EXPORTER_OTLP_PROTOCOL" .protocol "OTEL_TRACES_SAMPLER" .sampler "OTEL_TRACES_SAMPLER_ARG" .samplerArg) (.env | default dict) }}
{{- include "webhook-fanout.env.map" $otel }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Env entries from a map of NAME: value, in name order, skipping null values (null = the
process's own default). Call with a map. YAML numbers arrive as floats: a whole one is written
as an integer (2097152, not "2.097152e+06").
*/}}
{{- define "webhook-fanout.env.map" -}}
{{- range $name, $value := . }}
{{- if not (kindIs "invalid" $value) }}
{{- if and (kindIs "float64" $value) (eq $value (floor $value)) }}
{{- $value = int64 $value }}
{{- end }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
