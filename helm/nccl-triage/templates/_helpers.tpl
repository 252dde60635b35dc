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

{{- /*
  The label the leading coordinator puts on its own pod and takes off every other coordinator pod
  of the release (agent/kube/leader_label.h); with more than one replica the Service selects it.
*/}}
{{- define "nccl-triage.leaderLabel" -}}
nccl-triage.io/coordinator-role: leader
{{- end }}

{{- /* The coordinator pods of the release as a label selector ("k=v,k=v"), for the leader label. */}}
{{- define "nccl-triage.coordinatorPodSelector" -}}
{{- $labels := include "nccl-triage.selectorLabels" (dict "root" . "component" "coordinator") | fromYaml }}
{{- $terms := list }}
{{- range $k := keys $labels | sortAlpha }}
{{- $terms = append $terms (printf "%s=%s" $k (get $labels $k)) }}
{{- end }}
{{- join "," $terms }}
{{- end }}

{{- /* "true" when the coordinator keeps the leader label: with leader election. */}}
{{- define "nccl-triage.leaderLabelled" -}}
{{- if and .Values.coordinator.enabled .Values.config.coordinator.leader_election }}true{{ end -}}
{{- end }}

{{- /* "true" when the chart runs several coordinators: the Service selects the leader label, a
  PodDisruptionBudget may keep one of them up. */}}
{{- define "nccl-triage.coordinatorReplicated" -}}
{{- if and .Values.coordinator.enabled (gt (int .Values.coordinator.replicas) 1) }}true{{ end -}}
{{- end }}

{{- /*
  image.registry, else global.imageRegistry (an umbrella chart's), before the repository.
*/}}
{{- define "nccl-triage.image" -}}
{{- if and (eq (toString .Values.image.tag) "latest") (ne .Values.image.pullPolicy "Always") }}
{{- fail "image.tag latest needs image.pullPolicy Always: with IfNotPresent a node keeps the image it pulled first, and agents of one cluster run different builds (pin a version tag or set image.pullPolicy=Always)" }}
{{- end }}
{{- $registry := .Values.image.registry | default (dig "imageRegistry" "" (.Values.global | default dict)) -}}
{{- if $registry }}{{ trimSuffix "/" $registry }}/{{ end -}}
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
{{- printf "%s-coordinator.%s.svc.%s:%s" (include "nccl-triage.fullname" .) (include "nccl-triage.namespace" .) .Values.clusterDomain (include "nccl-triage.grpcPort" .) }}
{{- end }}
{{- end }}

{{/* The token Secret's mount (config.*.token_file defaults point into it). */}}
{{- define "nccl-triage.tokenDir" -}}
/var/run/secrets/nccl-triage
{{- end }}

{{/*
  The namespace of every namespaced object: namespace.name, else the release's. They differ only
  with namespace.create, where the chart makes the namespace: helm stores its release record in
  the release namespace before it creates any object, so that one must exist already.
*/}}
{{- define "nccl-triage.namespace" -}}
{{- (.Values.namespace | default dict).name | default .Release.Namespace -}}
{{- end }}

{{/*
  "true" when `lookup` reaches an API server (helm install/upgrade, --dry-run=server). A list
  answers with a List object even when empty; without a cluster (helm template, lint, a client
  dry run, GitOps tools that render offline) every lookup answers an empty map.
*/}}
{{- define "nccl-triage.clusterVisible" -}}
{{- if (lookup "v1" "ConfigMap" (include "nccl-triage.namespace" .) "") }}true{{ end -}}
{{- end }}

{{/*
  "true" with token.mode identity (or config.coordinator.identity_only, the key it sets): no
  shared token exists. The agents authenticate by their projected identity token alone (the
  coordinator's TokenReview binds each to its node), so no Secret is rendered or mounted and an
  offline render is complete. It needs what makes that
  check work, and refuses a shared token set beside it.
*/}}
{{- define "nccl-triage.identityOnly" -}}
{{- if or (eq (.Values.token.mode | default "shared") "identity") .Values.config.coordinator.identity_only }}
{{- if not .Values.config.coordinator.verify_node_identity }}
{{- fail "token.mode identity (config.coordinator.identity_only) needs config.coordinator.verify_node_identity: true (the agents' identity tokens are then their only authentication)" }}
{{- end }}
{{- if not .Values.config.agent.identity_token_file }}
{{- fail "token.mode identity (config.coordinator.identity_only) needs config.agent.identity_token_file (the identity token each agent presents)" }}
{{- end }}
{{- if or .Values.token.value .Values.token.existingSecret }}
{{- fail "token.mode identity (config.coordinator.identity_only) uses no shared token: unset token.value and token.existingSecret" }}
{{- end -}}
true
{{- end }}
{{- end }}

{{/*
  The configuration file of the agent and the coordinator: .Values.config; with token.mode
  identity, without the token files and with coordinator.identity_only; validation.node_selector
  left empty is agent.nodeSelector.
*/}}
{{- define "nccl-triage.config" -}}
{{- $config := deepCopy .Values.config }}
{{- if include "nccl-triage.identityOnly" . }}
{{- $_ := unset $config.agent "token_file" }}
{{- $_ := unset $config.coordinator "token_file" }}
{{- $_ := set $config.coordinator "identity_only" true }}
{{- end }}
{{- if .Values.classify.extraRules }}
{{- $_ := set $config "classify" (dict "rule_files" (list "/etc/nccl-triage/classify-rules.yaml")) }}
{{- end }}
{{- /* Validation taints only the nodes the agent runs on (a node without an agent is never probed). */}}
{{- if not $config.validation }}
{{- $_ := set $config "validation" (dict) }}
{{- end }}
{{- if not $config.validation.node_selector }}
{{- $_ := set $config.validation "node_selector" (default (dict) .Values.agent.nodeSelector) }}
{{- end }}
{{- toYaml $config }}
{{- end }}

{{/*
  The shared token, resolved once per render (the Secret and the pods' checksum/token annotation
  must agree, and a generated token is random): token.value; else the token of the chart's Secret
  from an earlier install (a new random one would cut every agent off); else a new random one,
  but only when `lookup` can see the cluster. Offline renders (helm template, lint, a client dry
  run, GitOps tools) get empty lookups, and a token made there would change at every render: the
  token is then empty and secret.yaml leaves the Secret out (it says so in the rendered stream).
  With token.existingSecret it is that Secret's token when lookup can read it, else empty (no
  checksum: the chart cannot see it).
*/}}
{{- define "nccl-triage.token" -}}
{{- if not (hasKey .Values.token "_resolved") }}
{{- $token := .Values.token.value }}
{{- if include "nccl-triage.identityOnly" . }}
{{- $token = "" }}
{{- else if .Values.token.existingSecret }}
{{- $existing := lookup "v1" "Secret" (include "nccl-triage.namespace" .) .Values.token.existingSecret }}
{{- if and $existing $existing.data (hasKey $existing.data "token") }}
{{- $token = index $existing.data "token" | b64dec }}
{{- end }}
{{- else if and .Values.token.create (not $token) }}
{{- $existing := lookup "v1" "Secret" (include "nccl-triage.namespace" .) (include "nccl-triage.tokenSecretName" .) }}
{{- if and $existing $existing.data (hasKey $existing.data "token") }}
{{- $token = index $existing.data "token" | b64dec }}
{{- else if include "nccl-triage.clusterVisible" . }}
{{- $token = randAlphaNum 48 }}
{{- end }}
{{- end }}
{{- $_ := set .Values.token "_resolved" $token }}
{{- end }}
{{- .Values.token._resolved }}
{{- end }}

{{/* Pod annotation that rolls the pods when the token changes (none when it cannot be seen). */}}
{{- define "nccl-triage.tokenChecksum" -}}
{{- $token := include "nccl-triage.token" . }}
{{- if $token }}
checksum/token: {{ printf "%s/%s" .Release.Name $token | sha256sum }}
{{- end }}
{{- end }}

{{- /*
  Where the probes' libraries are mounted in the agent container (probe.nccl / probe.cuda). The
  image's LD_LIBRARY_PATH names both (Dockerfile), so the probe child's loader finds libnccl.so.2
  there first, and NCCL finds a libnccl-net*.so net plugin beside it.
*/}}
{{- define "nccl-triage.ncclDir" -}}/opt/nccl-triage/nccl{{- end }}
{{- define "nccl-triage.cudaDir" -}}/opt/nccl-triage/cuda{{- end }}

{{/* "true" when config.server.auth is kubernetes: /metrics and /status ask the API server. */}}
{{- define "nccl-triage.httpAuth" -}}
{{- if eq (toString (dig "server" "auth" "none" .Values.config)) "kubernetes" }}true{{ end }}
{{- end }}

{{/* remediation.mode of the config ("off" when unset): off, dry-run, taint or cordon. */}}
{{/* "true" when config.validation.new_nodes is on (the coordinator taints and releases nodes). */}}
{{- define "nccl-triage.validatesNodes" -}}
{{- if (.Values.config.validation | default dict).new_nodes -}}true{{- end -}}
{{- end }}

{{- define "nccl-triage.remediationMode" -}}
{{- (.Values.config.remediation | default dict).mode | default "off" -}}
{{- end }}

{{/* The ConfigMap that keeps the coordinator's faults and remediation memory across restarts. */}}
{{- define "nccl-triage.stateConfigMap" -}}
{{- printf "%s-state" (include "nccl-triage.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* "true" when the coordinator calls the API server: identity tokens, the tokens of /metrics and
/status (config.server.auth kubernetes) or remediation. */}}
{{- define "nccl-triage.coordinatorUsesApi" -}}
{{- if or .Values.config.coordinator.verify_node_identity (include "nccl-triage.httpAuth" .) (ne (include "nccl-triage.remediationMode" .) "off") .Values.config.coordinator.leader_election (include "nccl-triage.validatesNodes" .) -}}true{{- end -}}
{{- end }}

{{/*
  "true" when the prometheus-operator kind (dict "root" . "kind" "monitoring.coreos.com/v1/PodMonitor")
  may be rendered: the API server serves it, or monitoring.assumeCRDs says it will.
*/}}
{{- define "nccl-triage.servesKind" -}}
{{- if or .root.Values.monitoring.assumeCRDs (.root.Capabilities.APIVersions.Has .kind) }}true{{ end -}}
{{- end }}

{{/* "true" when the chart makes the scraper's ServiceAccount, token Secret and binding. */}}
{{- define "nccl-triage.scraper" -}}
{{- $m := .Values.monitoring }}
{{- if and .Values.rbac.create (include "nccl-triage.httpAuth" .) (or $m.scraper.create (and $m.podMonitor.enabled (not $m.podMonitor.tokenSecret.name))) }}true{{ end -}}
{{- end }}

{{- define "nccl-triage.scraperName" -}}
{{- printf "%s-scraper" (include "nccl-triage.fullname" .) }}
{{- end }}

{{/* The Secret whose token the PodMonitors send: the one named, else the scraper's. */}}
{{- define "nccl-triage.podMonitorSecret" -}}
{{- .Values.monitoring.podMonitor.tokenSecret.name | default (printf "%s-token" (include "nccl-triage.scraperName" .)) }}
{{- end }}
