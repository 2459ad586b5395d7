{{/* The worker's env: Temporal, the CIDR lists of the outbound (SSRF) guard and the forward proxy (delivery.proxy) when set, and the consumer's with worker.consumeQueue. */}}
{{- define "webhook-fanout.worker.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{ include "webhook-fanout.env.temporal" . }}
{{ include "webhook-fanout.env.tracing" . }}
{{- $settings := dict }}
{{- with .Values.worker.outbound.denyCidrs }}{{ $_ := set $settings "OUTBOUND_DENY_CIDRS" (join "," .) }}{{ end }}
{{- with .Values.worker.outbound.allowCidrs }}{{ $_ := set $settings "OUTBOUND_ALLOW_CIDRS" (join "," .) }}{{ end }}
{{- with .Values.delivery.proxy }}
{{- with .url }}{{ $_ := set $settings "DELIVERY_PROXY_URL" . }}{{ end }}
{{- with .noProxy }}{{ $_ := set $settings "DELIVERY_NO_PROXY" (join "," .) }}{{ end }}
{{- if and .url .credentials.existingSecret }}
{{- $_ := set $settings "DELIVERY_PROXY_USERNAME_FILE" (printf "/etc/webhook-fanout/delivery-proxy/%s" .credentials.usernameKey) }}
{{- $_ := set $settings "DELIVERY_PROXY_PASSWORD_FILE" (printf "/etc/webhook-fanout/delivery-proxy/%s" .credentials.passwordKey) }}
{{- end }}
{{- end }}
{{ include "webhook-fanout.env.map" (merge $settings (.Values.worker.settings | default dict)) | trim }}
{{- if .Values.worker.consumeQueue }}
{{/* the consumer's work in the worker: its queue, AWS access and queue settings (not its NODE_OPTIONS) */}}
- name: WORKER_CONSUME_QUEUE
  value: "true"
{{ include "webhook-fanout.env.aws" . }}
{{ include "webhook-fanout.env.map" (merge (dict "QUEUE_URL" .Values.aws.queueUrl) (omit (.Values.consumer.settings | default dict) "NODE_OPTIONS")) | trim }}
{{- else }}
{{/* the AWS destinations (SQS, SNS, EventBridge) sign with the worker's identity: its ServiceAccount's, or these keys */}}
{{ include "webhook-fanout.env.awsKeys" . }}
{{- end }}
{{- end }}
