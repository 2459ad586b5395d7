{{/* The ingest's env: its public port and topic, the admin API's identity provider when on. */}}
{{- define "webhook-fanout.ingest.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{ include "webhook-fanout.env.aws" . }}
{{- /* the admin API's replays start workflow runs: Temporal is connected lazily */}}
{{ include "webhook-fanout.env.temporal" . }}
{{ include "webhook-fanout.env.tracing" . }}
{{- $settings := dict "PORT" .Values.ingest.port "TOPIC_ARN" .Values.aws.topicArn }}
{{- if .Values.tracing.otlpEndpoint }}{{ $_ := set $settings "INBOUND_TRACEPARENT" .Values.tracing.inboundTraceparent }}{{ end }}
{{- /* behind the chart's Ingress the controller's pods are the TCP peer: their private ranges by default (values.yaml) */}}
{{- $trusted := .Values.ingest.trustedProxies }}
{{- if and (kindIs "invalid" $trusted) .Values.ingest.ingress.enabled }}{{ $trusted = list "10.0.0.0/8" "172.16.0.0/12" "192.168.0.0/16" "fc00::/7" }}{{ end }}
{{- with $trusted }}{{ $_ := set $settings "INGEST_TRUSTED_PROXIES" (join "," .) }}{{ end }}
{{- if .Values.adminApi.enabled }}
{{- $auth := .Values.adminApi.auth }}
{{- $_ := set $settings "ADMIN_API_ENABLED" "true" }}
{{- $_ := set $settings "AUTH_URL" (required "adminApi.auth.url is required when adminApi.enabled (the identity provider's base address)" $auth.url) }}
{{- $_ := set $settings "AUTH_AUDIENCE" (required "adminApi.auth.audience is required when adminApi.enabled" $auth.audience) }}
{{- with $auth.issuer }}{{ $_ := set $settings "AUTH_ISSUER" . }}{{ end }}
{{- with $auth.namespacesClaim }}{{ $_ := set $settings "AUTH_NAMESPACES_CLAIM" . }}{{ end }}
{{- if include "webhook-fanout.console.on" . }}
{{- $_ := set $settings "CONSOLE_ENABLED" "true" }}
{{- $_ := set $settings "CONSOLE_CLIENT_ID" (required "console.clientId is required when console.enabled and adminApi.enabled (the console's OAuth client id; or set console.enabled=false)" .Values.console.clientId) }}
{{- $_ := set $settings "CONSOLE_AUTH_FLOW" .Values.console.authFlow }}
{{- else }}
{{- $_ := set $settings "CONSOLE_ENABLED" "false" }}
{{- end }}
{{- else }}
{{- $_ := set $settings "ADMIN_API_ENABLED" "false" }}
{{- end }}
{{- with .Values.retention.maxAge }}{{ $_ := set $settings "RETENTION_MAX_AGE" . }}{{ end }}
{{- with .Values.retention.payloadMaxAge }}{{ $_ := set $settings "RETENTION_PAYLOAD_MAX_AGE" . }}{{ end }}
{{- with .Values.retention.settledGrace }}{{ $_ := set $settings "RETENTION_SETTLED_GRACE" . }}{{ end }}
{{- /* the process would refuse to start on it (src/config): say it at install time instead */}}
{{- if and .Values.retention.maxAge .Values.retention.payloadMaxAge }}
{{- if ge (include "webhook-fanout.durationSeconds" .Values.retention.payloadMaxAge | atoi) (include "webhook-fanout.durationSeconds" .Values.retention.maxAge | atoi) }}
{{- fail (printf "retention.payloadMaxAge (%s) must be shorter than retention.maxAge (%s): events are deleted whole at maxAge" .Values.retention.payloadMaxAge .Values.retention.maxAge) }}
{{- end }}
{{- end }}
{{ include "webhook-fanout.env.map" (merge $settings (.Values.ingest.settings | default dict)) | trim }}
{{- end }}

{{/* Seconds of a retention age ("90d", "36h", "30m", "45s"; the schema checked its form). */}}
{{- define "webhook-fanout.durationSeconds" -}}
{{- $unit := regexFind "[dhms]$" . -}}
{{- mul (trimSuffix $unit . | atoi) (get (dict "d" 86400 "h" 3600 "m" 60 "s" 1) $unit) -}}
{{- end }}
