{{/*
The pod template (metadata and spec) of every Deployment and hook Job: one container running
`webhook-fanout <command>` from the one image, with the restricted security context and the
writable /tmp (the root filesystem is read-only). The chart-wide settings (extraEnv, envFrom,
podLabels, podAnnotations, scheduling) apply to every pod; a component's own setting is added
(env, labels, annotations) or wins (scheduling). Call with (dict
  "root" $  "component" "worker"  "values" .Values.worker
  "command" "worker"                 the CLI command (the container's args; the values'
                                     nodeFlags, if any, go before the CLI in its command)
  "env" (include "..." $)            the component's env entries, as YAML
  "ports" (list, optional)           container ports besides "management"
  "lifecycle" (map, optional)        e.g. the ingest's preStop
  "automountToken" (bool, optional)  only the operator talks to the API server
  "job" (bool, optional)             a hook Job's pod: runs to completion (restartPolicy Never),
                                     serves no management port and has no probes
  "database", "temporal" (bool)      it connects to Postgres / Temporal: their TLS Secrets
                                     (database.tls, temporal.tls, temporal.apiKey) are mounted
  "proxy" (bool, optional)           it delivers: the forward proxy's credentials Secret
                                     (delivery.proxy.credentials) is mounted).
*/}}
{{- define "webhook-fanout.podTemplate" -}}
{{- $root := .root }}
{{- $v := .values }}
{{- $ctx := dict "root" $root "component" .component "values" $v -}}
metadata:
  labels:
    {{- include "webhook-fanout.componentLabels" $ctx | nindent 4 }}
    {{- with $root.Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    {{- with $v.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with merge (dict) ($v.podAnnotations | default dict) ($root.Values.podAnnotations | default dict) }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- if .job }}
  restartPolicy: Never
  {{- end }}
  serviceAccountName: {{ include "webhook-fanout.serviceAccountName" $ctx }}
  automountServiceAccountToken: {{ .automountToken | default false }}
  # no <SERVICE>_PORT / _HOST variables of every Service in the namespace in the environment
  enableServiceLinks: false
  {{- with $root.Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (default $root.Values.priorityClassName $v.priorityClassName) }}
  priorityClassName: {{ . }}
  {{- end }}
  securityContext:
    {{- toYaml $root.Values.podSecurityContext | nindent 4 }}
  {{- with $v.terminationGracePeriodSeconds }}
  terminationGracePeriodSeconds: {{ . }}
  {{- end }}
  containers:
    - name: {{ .component }}
      image: {{ include "webhook-fanout.image" $root | quote }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      {{- with $v.nodeFlags }}
      # the image's entrypoint (node /app/dist/cmd/cli.js) with node's own flags first: V8 flags
      # that NODE_OPTIONS refuses (values <component>.nodeFlags)
      command: {{ concat (list "node") . (list "/app/dist/cmd/cli.js") | toJson }}
      {{- end }}
      args: [{{ .command | quote }}]
      {{- if not .job }}
      ports:
        {{- with .ports }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        - name: management
          containerPort: {{ $root.Values.managementPort }}
          protocol: TCP
      {{- end }}
      env:
        {{- .env | trim | nindent 8 }}
        {{- with $root.Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $v.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with concat ($root.Values.envFrom | default list) ($v.envFrom | default list) }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if not .job }}
      {{- include "webhook-fanout.probes" $root | nindent 6 }}
      {{- end }}
      {{- with .lifecycle }}
      lifecycle:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      resources:
        {{- toYaml $v.resources | nindent 8 }}
      securityContext:
        {{- toYaml $root.Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- include "webhook-fanout.tlsSecrets" (dict "root" $root "database" .database "temporal" .temporal "proxy" .proxy "part" "mounts") | nindent 8 }}
        {{- with $v.extraVolumeMounts }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
  volumes:
    {{- include "webhook-fanout.tmpVolume" $root | nindent 4 }}
    {{- include "webhook-fanout.tlsSecrets" (dict "root" $root "database" .database "temporal" .temporal "proxy" .proxy "part" "volumes") | nindent 4 }}
    {{- with $v.extraVolumes }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with (default $root.Values.nodeSelector $v.nodeSelector) }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (default $root.Values.tolerations $v.tolerations) }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (default $root.Values.affinity $v.affinity) }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with (default $root.Values.topologySpreadConstraints $v.topologySpreadConstraints) }}
  {{- $selector := dict "matchLabels" (include "webhook-fanout.componentSelectorLabels" $ctx | fromYaml) }}
  topologySpreadConstraints:
    {{- range . }}
    {{- $c := deepCopy . }}
    {{- if not (hasKey $c "labelSelector") }}
    {{- $_ := set $c "labelSelector" $selector }}
    {{- end }}
    - {{- toYaml $c | nindent 6 }}
    {{- end }}
  {{- end }}
{{- end }}

{{/* The writable /tmp of every container (the root filesystem is read-only); also the helm test Pod's. */}}
{{- define "webhook-fanout.tmpVolume" -}}
- name: tmp
  emptyDir:
    {{- with .Values.tmpVolume.medium }}
    medium: {{ . }}
    {{- end }}
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- end }}

{{/* Probes on the management port: /healthz (the process runs) and /readyz (it started and its dependencies answer). */}}
{{- define "webhook-fanout.probes" -}}
{{- $p := .Values.probes -}}
startupProbe:
  httpGet:
    path: /healthz
    port: management
  periodSeconds: {{ $p.startup.periodSeconds }}
  timeoutSeconds: {{ $p.startup.timeoutSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /healthz
    port: management
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: management
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
{{- end }}
