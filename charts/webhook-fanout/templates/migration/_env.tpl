{{/* The migration's env: the database only. */}}
{{- define "webhook-fanout.migration.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{- end }}
