{{/*
The operator's env: Temporal (a WebhookReplay starts replay runs), its pod's name (its
leader-election identity) and namespace (where the Lease lives) from the downward API, leader
election, the namespaces it watches when confined, and what a credential without
spec.allowedEndpoints allows.
*/}}
{{- define "webhook-fanout.operator.env" -}}
{{- $op := .Values.operator }}
{{ include "webhook-fanout.env.common" . }}
{{ include "webhook-fanout.env.database" . }}
{{ include "webhook-fanout.env.temporal" . }}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- $settings := dict "LEADER_ELECTION" (ternary "true" "false" $op.leaderElection.enabled) "LEADER_ELECTION_LEASE_NAME" (default (include "webhook-fanout.componentName" (dict "root" . "component" "operator")) $op.leaderElection.leaseName) }}
{{- with $op.watchNamespaces }}{{ $_ := set $settings "WATCH_NAMESPACE" (join "," .) }}{{ end }}
{{- $_ := set $settings "TENANCY_DEFAULT_ALLOWED_NAMESPACES" .Values.tenancy.defaultAllowedNamespaces }}
{{ include "webhook-fanout.env.map" (merge $settings ($op.settings | default dict)) | trim }}
{{- end }}
