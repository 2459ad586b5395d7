{{/* The consumer's env: the queue it reads, and Temporal, where it starts the workflows. */}}
{{- define "webhook-fanout.consumer.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{ include "webhook-fanout.env.aws" . }}
{{ include "webhook-fanout.env.temporal" . }}
{{ include "webhook-fanout.env.tracing" . }}
{{ include "webhook-fanout.env.map" (merge (dict "QUEUE_URL" .Values.aws.queueUrl) (.Values.consumer.settings | default dict)) | trim }}
{{- end }}
