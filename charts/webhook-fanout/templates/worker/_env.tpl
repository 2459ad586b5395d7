{{/* The worker's env: Temporal, and the CIDR lists of the outbound (SSRF) guard when set. */}}
{{- define "webhook-fanout.worker.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{ include "webhook-fanout.env.temporal" . }}
{{- $settings := dict }}
{{- with .Values.worker.outbound.denyCidrs }}{{ $_ := set $settings "OUTBOUND_DENY_CIDRS" (join "," .) }}{{ end }}
{{- with .Values.worker.outbound.allowCidrs }}{{ $_ := set $settings "OUTBOUND_ALLOW_CIDRS" (join "," .) }}{{ end }}
{{ include "webhook-fanout.env.map" (merge $settings (.Values.worker.settings | default dict)) | trim }}
{{- end }}
