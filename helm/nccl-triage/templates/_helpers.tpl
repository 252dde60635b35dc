{{/* Names. */}}
{{- define "nccl-triage.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nccl-triage.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels: common ones, and the selector labels of one component (agent|coordinator). */}}
{{- define "nccl-triage.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "nccl-triage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nccl-triage.componentLabels" -}}
{{ include "nccl-triage.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "nccl-triage.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nccl-triage.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "nccl-triage.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "nccl-triage.agentServiceAccount" -}}
{{- if .Values.serviceAccount.agent.create }}
{{- default (printf "%s-agent" (include "nccl-triage.fullname" .)) .Values.serviceAccount.agent.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.agent.name }}
{{- end }}
{{- end }}

{{- define "nccl-triage.coordinatorServiceAccount" -}}
{{- if .Values.serviceAccount.coordinator.create }}
{{- default (printf "%s-coordinator" (include "nccl-triage.fullname" .)) .Values.serviceAccount.coordinator.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.coordinator.name }}
{{- end }}
{{- end }}

{{- define "nccl-triage.tokenSecretName" -}}
{{- default (printf "%s-token" (include "nccl-triage.fullname" .)) .Values.token.existingSecret }}
{{- end }}

{{/* The port of a "host:port" listen address from the configuration (one source of truth). */}}
{{- define "nccl-triage.port" -}}
{{- $port := splitList ":" . | last }}
{{- if not (regexMatch "^[0-9]+$" $port) }}
{{- fail (printf "listen address %q has no numeric port" .) }}
{{- end }}
{{- $port }}
{{- end }}

{{- define "nccl-triage.agentPort" -}}
{{- include "nccl-triage.port" (required "config.agent.listen is required" .Values.config.agent.listen) }}
{{- end }}

{{- define "nccl-triage.grpcPort" -}}
{{- include "nccl-triage.port" (required "config.coordinator.listen is required" .Values.config.coordinator.listen) }}
{{- end }}

{{- define "nccl-triage.httpPort" -}}
{{- include "nccl-triage.port" (required "config.coordinator.http_listen is required" .Values.config.coordinator.http_listen) }}
{{- end }}

{{/* Where the agents reach the coordinator: the configured address, else the chart's Service. */}}
{{- define "nccl-triage.coordinatorAddress" -}}
{{- if .Values.config.agent.coordinator }}
{{- .Values.config.agent.coordinator }}
{{- else }}
{{- printf "%s-coordinator.%s.svc.%s:%s" (include "nccl-triage.fullname" .) .Release.Namespace .Values.clusterDomain (include "nccl-triage.grpcPort" .) }}
{{- end }}
{{- end }}

{{/* The token Secret's mount (config.*.token_file defaults point into it). */}}
{{- define "nccl-triage.tokenDir" -}}
/var/run/secrets/nccl-triage
{{- end }}
