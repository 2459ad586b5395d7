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
{{- end }}

{{/* LOG_LEVEL and MANAGEMENT_PORT: every process. */}}
{{- define "webhook-fanout.env.common" -}}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: MANAGEMENT_PORT
  value: {{ .Values.managementPort | toString | quote }}
{{- end }}

{{/* AWS_REGION, AWS_ENDPOINT_URL and, only when configured, static keys from an existing Secret. */}}
{{- define "webhook-fanout.env.aws" -}}
- name: AWS_REGION
  value: {{ .Values.aws.region | quote }}
{{- with .Values.aws.endpointUrl }}
- name: AWS_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
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
{{- end }}

{{/*
Env entries from a map of NAME: value, in name order, skipping null values (null = the
process's own default). Call with a map.
*/}}
{{- define "webhook-fanout.env.map" -}}
{{- range $name, $value := . }}
{{- if not (kindIs "invalid" $value) }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The writable /tmp of every container (the root filesystem is read-only). */}}
{{- define "webhook-fanout.tmpVolume" -}}
- name: tmp
  emptyDir:
    {{- with .Values.tmpVolume.medium }}
    medium: {{ . }}
    {{- end }}
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- end }}

{{- define "webhook-fanout.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* Probes on the management port: /healthz (the process runs) and /readyz (its dependencies answer). */}}
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

{{/*
The Deployment of one process. Call with (dict
  "root" $ "component" "worker" "values" .Values.worker "command" "worker"
  "env" (env entries as YAML) "ports" (extra container ports, optional)
  "lifecycle" (map, optional) "automountToken" (bool, optional)).
Replicas are left to the HorizontalPodAutoscaler when values.autoscaling.enabled.
*/}}
{{- define "webhook-fanout.deployment" -}}
{{- $root := .root -}}
{{- $v := .values }}
{{- $ctx := dict "root" $root "component" .component "values" $v }}
{{- $autoscaling := and (hasKey $v "autoscaling") $v.autoscaling.enabled }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "webhook-fanout.componentName" $ctx }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "webhook-fanout.componentLabels" $ctx | nindent 4 }}
spec:
  {{- if not $autoscaling }}
  replicas: {{ $v.replicaCount }}
  {{- end }}
  revisionHistoryLimit: {{ $root.Values.revisionHistoryLimit }}
  {{- with $v.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "webhook-fanout.componentSelectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "webhook-fanout.componentLabels" $ctx | nindent 8 }}
        {{- with $root.Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- $annotations := merge (dict) ($v.podAnnotations | default dict) ($root.Values.podAnnotations | default dict) }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "webhook-fanout.serviceAccountName" $ctx }}
      automountServiceAccountToken: {{ .automountToken | default false }}
      # no <SERVICE>_PORT / _HOST variables of every Service in the namespace in the environment
      enableServiceLinks: false
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.priorityClassName $v.priorityClassName) }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      containers:
        - name: {{ .component }}
          image: {{ include "webhook-fanout.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ .command | quote }}]
          ports:
            {{- with .ports }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            - name: management
              containerPort: {{ $root.Values.managementPort }}
              protocol: TCP
          env:
            {{- .env | nindent 12 }}
            {{- with $root.Values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- $envFrom := concat ($root.Values.envFrom | default list) ($v.envFrom | default list) }}
          {{- with $envFrom }}
          envFrom:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- include "webhook-fanout.probes" $root | nindent 10 }}
          {{- with .lifecycle }}
          lifecycle:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            {{- include "webhook-fanout.tmpVolumeMount" $root | nindent 12 }}
            {{- with $v.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        {{- include "webhook-fanout.tmpVolume" $root | nindent 8 }}
        {{- with $v.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with (default $root.Values.nodeSelector $v.nodeSelector) }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.tolerations $v.tolerations) }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.affinity $v.affinity) }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with (default $root.Values.topologySpreadConstraints $v.topologySpreadConstraints) }}
      {{- $selector := dict "matchLabels" (include "webhook-fanout.componentSelectorLabels" $ctx | fromYaml) }}
      topologySpreadConstraints:
        {{- range . }}
        {{- $c := deepCopy . }}
        {{- if not (hasKey $c "labelSelector") }}
        {{- $_ := set $c "labelSelector" $selector }}
        {{- end }}
        - {{- toYaml $c | nindent 10 }}
        {{- end }}
      {{- end }}
{{- end }}

{{/* The PodDisruptionBudget of a component. Call with (dict "root" $ "component" "worker" "values" .Values.worker). */}}
{{- define "webhook-fanout.pdb" -}}
{{- $pdb := .values.podDisruptionBudget }}
{{- if $pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "webhook-fanout.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "webhook-fanout.componentLabels" . | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $pdb.minAvailable) }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- end }}
  unhealthyPodEvictionPolicy: AlwaysAllow
  selector:
    matchLabels:
      {{- include "webhook-fanout.componentSelectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{/*
The ServiceAccount of a component, when it creates one. Call with (dict "root" $ "component"
"worker" "values" .Values.worker "automount" bool "hook" (map of hook annotations, optional)).
*/}}
{{- define "webhook-fanout.serviceAccount" -}}
{{- $sa := .values.serviceAccount | default dict }}
{{- if $sa.create }}
{{- $annotations := merge (dict) (.hook | default dict) ($sa.annotations | default dict) }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "webhook-fanout.serviceAccountName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "webhook-fanout.componentLabels" . | nindent 4 }}
  {{- with $annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ .automount | default false }}
{{- end }}
{{- end }}

{{/* The HorizontalPodAutoscaler of a component. Call with (dict "root" $ "component" "worker" "values" .Values.worker). */}}
{{- define "webhook-fanout.hpa" -}}
{{- $a := .values.autoscaling }}
{{- if $a.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "webhook-fanout.componentName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "webhook-fanout.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "webhook-fanout.componentName" . }}
  minReplicas: {{ $a.minReplicas }}
  maxReplicas: {{ $a.maxReplicas }}
  metrics:
    {{- with $a.targetCPUUtilizationPercentage }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
    {{- with $a.targetMemoryUtilizationPercentage }}
    - type: Resource
      resource:
        name: memory
        target:
          type: Utilization
          averageUtilization: {{ . }}
    {{- end }}
  {{- with $a.behavior }}
  behavior:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* A headless Service in front of the management port of a component, for Prometheus. Call with (dict "root" $ "component" "worker"). */}}
{{- define "webhook-fanout.metricsService" -}}
{{- if .root.Values.metrics.service.enabled }}
apiVersion: v1
kind: Service
metadata:
  name: {{ printf "%s-metrics" (include "webhook-fanout.componentName" .) }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "webhook-fanout.componentLabels" . | nindent 4 }}
    webhookfanout.io/metrics: "true"
spec:
  type: ClusterIP
  clusterIP: None
  ports:
    - name: metrics
      port: {{ .root.Values.managementPort }}
      targetPort: management
      protocol: TCP
  selector:
    {{- include "webhook-fanout.componentSelectorLabels" . | nindent 4 }}
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
