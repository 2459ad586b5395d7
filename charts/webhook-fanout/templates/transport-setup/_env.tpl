{{/* setup-transport's env: the names of the topic, queue and dead-letter queue it creates. */}}
{{- define "webhook-fanout.transportSetup.env" -}}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.aws" . }}
{{- $t := .Values.transportSetup }}
{{- $settings := dict "TOPIC_NAME" $t.topicName "QUEUE_NAME" $t.queueName "DLQ_NAME" $t.dlqName }}
{{- /* the queue's visibility timeout is the consumer's setting */}}
{{- with .Values.consumer.settings.QUEUE_VISIBILITY_TIMEOUT_SECONDS }}
{{- $_ := set $settings "QUEUE_VISIBILITY_TIMEOUT_SECONDS" . }}
{{- end }}
{{ include "webhook-fanout.env.map" $settings | trim }}
{{- end }}
