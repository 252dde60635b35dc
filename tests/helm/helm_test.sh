#!/usr/bin/env bash
# The chart by the real helm of scripts/k8s-tools.sh, offline and against the real API server of
# tests/k8s/cluster.sh (WORK is its directory: kubeconfig, ...).
#   helm_test.sh lint      TOOLS CHART VALUES...        helm lint --strict, default values and each file
#   helm_test.sh template  TOOLS CHART VALUES...        helm template of each file succeeds
#   helm_test.sh rejects   TOOLS CHART WORK CASES_DIR   every case is refused with its "# expect:" lines
#   helm_test.sh install   TOOLS CHART WORK OUT CHARTCHECK MODE [VALUES]
#                          helm install (default | all-on | standalone), then chartcheck on what helm
#                          says it installed; all-on and standalone uninstall again and check that
#                          nothing is left
#   helm_test.sh upgrade   TOOLS CHART WORK OUT CHARTCHECK   helm upgrade of the default release
#   helm_test.sh uninstall TOOLS WORK                   helm uninstall of the default release
#   helm_test.sh offline   TOOLS CHART WORK             lint, template and a client dry run need no
#                          cluster objects: no failure, the same render twice, no token Secret
#   helm_test.sh identity  TOOLS CHART                  token.mode identity: offline renders
#                          complete and stable, no token Secret or mount, identity_only set;
#                          the values it cannot work with refused with the reason
#   helm_test.sh identity-install TOOLS CHART WORK     helm install with token.mode identity: the
#                          API server accepts every object, no token Secret is made, pods mount
#                          none, the stored config has identity_only; uninstalled again
#   helm_test.sh validation-selector TOOLS CHART       validation.node_selector defaults to the
#                          agent's nodeSelector in the rendered config
#   helm_test.sh monitors  TOOLS CHART                  prometheus-operator objects only where
#                          their kinds are served (or monitoring.assumeCRDs)
#   helm_test.sh dashboard TOOLS CHART                 runbookBaseUrl reaches every docs link of
#                          the dashboard, alerts.md and the pages beside it
#   helm_test.sh cleanup   TOOLS WORK INSTALL_MD        the uninstall clean-up block of INSTALL_MD
#                          removes the node condition and the pods' annotations, nothing else
#   helm_test.sh report    TOOLS WORK INSTALL_MD        the kubectl command of "A node's report"
#                          (where the dashboard's node links lead) prints that node's report
#   helm_test.sh podsecurity TOOLS CHART WORK           a namespace enforcing baseline: the NOTES
#                          warn, the API server refuses the agent's pod; namespace.create admits it
#   helm_test.sh scraper   TOOLS CHART WORK             the scraper account may read /status; the
#                          NOTES name a PodMonitor Secret that does not exist
#   helm_test.sh remediation TOOLS CHART WORK           the NOTES of an upgrade to each mode say it
#   helm_test.sh umbrella  TOOLS CHART UMBRELLA OUT     the chart as a subchart of the umbrella
#                          chart UMBRELLA (copied to OUT): dependency build, lint, template; the
#                          umbrella's global registry and the pull secrets reach the pods
set -euo pipefail
die() { echo "FAIL: $*"; exit 1; }
cmd="$1"; tools="$2"; shift 2
# The tests' API server runs no kubelet or controllers: the chart's pre-delete hook (a Job) could
# never run, so every uninstall here skips the hooks (node.agent_pod runs it on a real kubelet;
# `install` checks the hook's objects with chartcheck --hooks).
helm() {
  if [ "$1" = uninstall ]; then shift; "$tools/bin/helm" uninstall --no-hooks "$@"; else "$tools/bin/helm" "$@"; fi
}
kubectl() { "$tools/bin/kubectl" "$@"; }
# The namespace exists afterwards: tests running at the same time may create the same one.
ensure_ns() {
  kubectl get ns "$1" >/dev/null 2>&1 || kubectl create ns "$1" >/dev/null 2>&1 ||
    kubectl get ns "$1" >/dev/null || die "namespace $1"
}
# Offline renders of a chart that asks for a token: the value is fixed, as for GitOps users.
offline_token=(--set token.value=offline-render-token)

# release -> "namespace fullname" of the installs below (fullname: the chart's object prefix).
where() {
  case "$1" in
    nccl-triage) echo "nccl-triage nccl-triage" ;;
    all-on) echo "nccl-triage triage" ;;              # values-all-on.yaml: fullnameOverride
    standalone) echo "standalone standalone-nccl-triage" ;;
  esac
}

# Nothing of the release is left: no object of any listable kind, in any namespace or cluster-wide,
# carries its instance label or its name prefix (Events excepted: they are the cluster's record).
leftovers() {
  local release="$1" fullname="$2" kinds found
  kinds="$(kubectl api-resources --verbs=list -o name | grep -v -E '^(events|events\.events\.k8s\.io)$' | paste -sd, -)"
  # (kubectl's deprecation warnings on stderr are not objects)
  found="$(kubectl get "$kinds" -A -l "app.kubernetes.io/instance=$release" -o name 2>/dev/null)" ||
    die "kubectl get of every kind failed"
  # (the namespace kt is the other real-API tests' own: their Lease and ConfigMaps carry our names
  # but are not the release's)
  found+=$'\n'"$(kubectl get "$kinds" -A -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.metadata.namespace}{"\n"}{end}' 2>/dev/null |
                 awk '$2 != "kt" {print $1}' | grep -v '^Namespace/' | grep -E "/$fullname(-|$)" || true)"
  found="$(echo "$found" | grep -v -E '^\s*$|^No resources found' || true)"
  [ -z "$found" ] || die "helm uninstall $release left: $(echo $found)"
  echo "uninstall of $release left nothing behind"
}

case "$cmd" in
offline)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"
  # Lint renders without a cluster: nothing may fail, not even as an [INFO] line.
  out="$(helm lint --strict "$chart" 2>&1)" || die "helm lint --strict: $out"
  if grep -q -i -E 'fail:|\[error\]|\[warning\]' <<<"$out"; then die "helm lint reported: $out"; fi
  grep -q '0 chart(s) failed' <<<"$out" || die "helm lint: $out"
  one="$(helm template nccl-triage "$chart" -n nccl-triage)" || die "helm template of the default values"
  two="$(helm template nccl-triage "$chart" -n nccl-triage)" || die "helm template, again"
  # GitOps tools render again and again: a render must not change by itself (no random token).
  [ "$one" = "$two" ] || die "two offline renders differ: $(diff <(echo "$one") <(echo "$two") | head -5)"
  if grep -A3 '^kind: Secret$' <<<"$one" | grep -q 'name: nccl-triage-token$'; then
    die "an offline render holds a token Secret"
  fi
  grep -q '^# The Secret nccl-triage-token is not in this render' <<<"$one" ||
    die "the offline render does not say why the token Secret is missing"
  # A client-side dry run (the API server's version, none of its objects) succeeds and says so.
  # A release name of its own: helm still checks that the cluster-scoped objects it would create
  # (ClusterRoles, named after the release) are not another release's, such as helm.install's.
  notes="$(helm install offline-render "$chart" -n offline-render --dry-run=client 2>&1)" ||
    die "helm install --dry-run=client: $notes"
  grep -q 'This render could not see the cluster, so it holds no token Secret' <<<"$notes" ||
    die "the client dry run's NOTES do not say the token Secret is missing: $notes"
  # With token.value the Secret is rendered, offline too.
  helm template nccl-triage "$chart" -n nccl-triage "${offline_token[@]}" | grep -A3 '^kind: Secret$' |
    grep -q 'name: nccl-triage-token$' || die "token.value did not render the token Secret"
  echo "lint clean, offline renders stable without a token Secret, client dry run explains it"
  ;;
identity)
  chart="$1"
  mode=(--set token.mode=identity)
  out="$(helm lint --strict "$chart" "${mode[@]}" 2>&1)" || die "helm lint --strict, token.mode identity: $out"
  if grep -q -i -E 'fail:|\[error\]|\[warning\]' <<<"$out"; then die "helm lint reported: $out"; fi
  one="$(helm template nccl-triage "$chart" -n nccl-triage "${mode[@]}")" || die "helm template, token.mode identity"
  two="$(helm template nccl-triage "$chart" -n nccl-triage "${mode[@]}")" || die "helm template, again"
  [ "$one" = "$two" ] || die "two offline renders differ: $(diff <(echo "$one") <(echo "$two") | head -5)"
  # Nothing of a shared token: no Secret, no comment about a missing one, no mount, no checksum.
  ! grep -q 'nccl-triage-token' <<<"$one" || die "the render names the token Secret: $(grep -m3 nccl-triage-token <<<"$one")"
  # (the scraper's Secret is the API server's to fill: nothing in it is rendered)
  others="$(grep -A1 '^kind: Secret$' <<<"$one" | grep -v -E '^(kind: Secret|type: kubernetes.io/service-account-token|--)$' || true)"
  [ -z "$others" ] || die "the render holds a Secret other than service-account tokens: $others"
  ! grep -q -E 'mountPath: /var/run/secrets/nccl-triage$' <<<"$one" || die "a pod mounts the token directory"
  ! grep -q 'checksum/token' <<<"$one" || die "a pod carries checksum/token"
  ! grep -q -E '^ +token_file:' <<<"$one" || die "config.yaml names a token file"
  [ "$(grep -c -E '^ +identity_only: true$' <<<"$one")" = 1 ] || die "config.yaml lacks coordinator.identity_only: true"
  grep -q 'mountPath: /var/run/secrets/nccl-triage-identity$' <<<"$one" || die "the agents do not mount their identity token"
  grep -q 'audience: nccl-triage$' <<<"$one" || die "no identity token projected for the audience nccl-triage"
  grep -q 'NCCL_TRIAGE_AGENT_SERVICE_ACCOUNT' <<<"$one" || die "the coordinator is not told the agents' account"
  # The shared mode's render is what it was: the Secret only with a token it can keep.
  shared="$(helm template nccl-triage "$chart" -n nccl-triage "${offline_token[@]}")" || die "helm template, shared"
  [ "$(grep -c -E '^ +token_file: /var/run/secrets/nccl-triage/token$' <<<"$shared")" = 2 ] ||
    die "token.mode shared lost the token files"
  grep -q -E 'mountPath: /var/run/secrets/nccl-triage$' <<<"$shared" || die "token.mode shared mounts no token"
  # What identity mode cannot work with is refused, with the reason.
  refused() {  # EXPECTED ARGS...
    local want="$1"; shift
    local got; if got="$(helm template t "$chart" -n t "$@" 2>&1)"; then die "rendered: $*"; fi
    grep -q -F -- "$want" <<<"$got" || die "helm template $*: said '$got', not '$want'"
  }
  refused 'token.mode identity (config.coordinator.identity_only) needs config.coordinator.verify_node_identity: true' \
    "${mode[@]}" --set config.coordinator.verify_node_identity=false
  refused 'token.mode identity (config.coordinator.identity_only) needs config.agent.identity_token_file' \
    "${mode[@]}" --set config.agent.identity_token_file=
  refused 'token.mode identity (config.coordinator.identity_only) uses no shared token: unset token.value and token.existingSecret' \
    "${mode[@]}" --set token.value=x
  refused 'token.mode identity (config.coordinator.identity_only) uses no shared token' "${mode[@]}" --set token.existingSecret=s
  # The configuration key alone is the same mode: the chart drops what it would refuse.
  by_key="$(helm template nccl-triage "$chart" -n nccl-triage --set config.coordinator.identity_only=true)" ||
    die "helm template, config.coordinator.identity_only"
  [ "$by_key" = "$one" ] || die "config.coordinator.identity_only renders otherwise than token.mode identity: $(diff <(echo "$one") <(echo "$by_key") | head -5)"
  refused "at '/token/mode': value must be one of 'shared', 'identity'" --set token.mode=none
  echo "token.mode identity: lint clean, two offline renders equal, no Secret, mount or token file; 5 bad values refused"
  ;;
identity-install)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"
  release=identity ns=identity-mode
  ensure_ns "$ns"
  helm uninstall "$release" -n "$ns" --ignore-not-found >/dev/null
  notes="$(helm install "$release" "$chart" -n "$ns" --set token.mode=identity)" || die "helm install, token.mode identity: $notes"
  manifest="$(helm get manifest "$release" -n "$ns")"
  kubectl get -f <(echo "$manifest") -o name >/dev/null || die "objects of $release missing after install"
  ! kubectl get secret -n "$ns" identity-nccl-triage-token >/dev/null 2>&1 || die "a token Secret was made"
  grep -q 'token.mode identity: the agents authenticate by their identity tokens alone' <<<"$notes" ||
    die "the NOTES do not state identity mode: $notes"
  ! grep -q 'holds no token Secret' <<<"$notes" || die "the NOTES ask for a token Secret: $notes"
  config="$(kubectl get cm identity-nccl-triage-config -n "$ns" -o jsonpath='{.data.config\.yaml}')"
  grep -q -E '^ +identity_only: true$' <<<"$config" || die "the stored config lacks identity_only: true"
  ! grep -q -E '^ +token_file:' <<<"$config" || die "the stored config names a token file"
  for w in ds/identity-nccl-triage-agent deploy/identity-nccl-triage-coordinator; do
    vols="$(kubectl get "$w" -n "$ns" -o jsonpath='{.spec.template.spec.volumes[*].name}')"
    ! grep -q -w token <<<"$vols" || die "$w mounts a token volume: $vols"
  done
  helm uninstall "$release" -n "$ns" --wait >/dev/null
  echo "helm install with token.mode identity: $(grep -c '^kind: ' <<<"$manifest") objects, no token Secret or mount, identity_only stored"
  ;;
monitors)
  chart="$1"
  on=(--set monitoring.podMonitor.enabled=true --set monitoring.serviceMonitor.enabled=true
      --set prometheusRule.enabled=true --set alertmanagerConfig.enabled=true)
  count() { grep -c -E '^kind: (PodMonitor|ServiceMonitor|PrometheusRule|AlertmanagerConfig)$' || true; }
  n="$(helm template t "$chart" -n t "${on[@]}" | count)"
  [ "$n" = 0 ] || die "$n prometheus-operator objects rendered where helm sees none of their kinds"
  n="$(helm template t "$chart" -n t "${on[@]}" --api-versions monitoring.coreos.com/v1/PodMonitor \
       --api-versions monitoring.coreos.com/v1/ServiceMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule \
       --api-versions monitoring.coreos.com/v1alpha1/AlertmanagerConfig | count)"
  [ "$n" = 6 ] || die "$n prometheus-operator objects where their kinds are served, want 6"
  n="$(helm template t "$chart" -n t "${on[@]}" --api-versions monitoring.coreos.com/v1/PodMonitor | count)"
  [ "$n" = 2 ] || die "$n objects where only PodMonitor is served, want the 2 PodMonitors"
  n="$(helm template t "$chart" -n t "${on[@]}" --set monitoring.assumeCRDs=true | count)"
  [ "$n" = 6 ] || die "$n prometheus-operator objects with monitoring.assumeCRDs, want 6"
  echo "prometheus-operator objects: 0 without their CRDs, 6 with them or with monitoring.assumeCRDs"
  ;;
validation-selector)
  # validation.node_selector left empty is the agent's nodeSelector: only the nodes an agent runs
  # on are tainted while they are validated; one set is kept; none anywhere is every node.
  chart="$1"
  selector() {  # HELM ARGS...: the rendered config's validation.node_selector, one label a line
    helm template nccl-triage "$chart" -n nccl-triage --show-only templates/configmap.yaml "$@" |
      awk '/^ +node_selector:/ { n = match($0, /[^ ]/); on = 1; if ($0 ~ /\{\}$/) print "{}"; next }
           on { if (match($0, /[^ ]/) <= n) exit; sub(/^ +/, ""); print }'
  }
  got="$(selector)"
  [ "$got" = 'nvidia.com/gpu.present: "true"' ] || die "default node_selector: '$got'"
  got="$(selector --set-string agent.nodeSelector.node-role/gpu=yes --set agent.nodeSelector.nvidia\\.com/gpu\\.present=null)"
  [ "$got" = 'node-role/gpu: "yes"' ] || die "node_selector from agent.nodeSelector: '$got'"
  got="$(selector --set-string config.validation.node_selector.pool=train)"
  [ "$got" = 'pool: train' ] || die "node_selector set: '$got'"
  got="$(selector --set agent.nodeSelector=null)"
  [ "$got" = '{}' ] || die "no selector anywhere: '$got'"
  echo "validation.node_selector: the agent's nodeSelector by default, a set one kept"
  ;;
job-hangs)
  # The job-hang alerts are opt-in: absent by default, present with prometheusRule.jobHangs.enabled,
  # runbook links rewritten, and prometheusRule.disabled can leave one out.
  chart="$1"
  on=(--set prometheusRule.enabled=true --set monitoring.assumeCRDs=true)
  out="$(helm template t "$chart" -n t "${on[@]}")"
  ! grep -q 'alert: NcclTriageJob' <<<"$out" || die "job-hang alerts rendered without jobHangs.enabled"
  out="$(helm template t "$chart" -n t "${on[@]}" --set prometheusRule.jobHangs.enabled=true \
         --set runbookBaseUrl=https://docs.example/nccl-triage/docs/alerts.md)"
  for a in NcclTriageJobRanksNotAnswering NcclTriageJobRankBehind NcclTriageJobRasUnanswered; do
    grep -q "alert: $a\$" <<<"$out" || die "jobHangs.enabled did not render $a"
  done
  grep -q 'name: nccl-triage.jobs$' <<<"$out" || die "no nccl-triage.jobs group"
  grep -q 'runbook_url: https://docs.example/nccl-triage/docs/alerts.md#nccltriagejobranksnotanswering' \
    <<<"$out" || die "the job-hang runbook link does not follow runbookBaseUrl"
  out="$(helm template t "$chart" -n t "${on[@]}" --set prometheusRule.jobHangs.enabled=true \
         --set 'prometheusRule.disabled={NcclTriageJobRankBehind}')"
  ! grep -q 'alert: NcclTriageJobRankBehind' <<<"$out" || die "prometheusRule.disabled kept the alert"
  grep -q 'alert: NcclTriageJobRanksNotAnswering' <<<"$out" || die "disabling one dropped the others"
  echo "job-hang alerts: off by default, three with prometheusRule.jobHangs.enabled"
  ;;
cleanup)
  export KUBECONFIG="$1/kubeconfig"; doc="$2"
  command -v jq >/dev/null || { echo "SKIP: the documented commands need jq"; exit 77; }
  block="$(sed -n '/^<!-- uninstall-cleanup -->$/,/^<!-- \/uninstall-cleanup -->$/p' "$doc" | sed '1,2d;$d' | sed '$d')"
  [ -n "$block" ] || die "no uninstall-cleanup block in $doc"
  # What the agents leave: two nodes with NcclFabricReady among other conditions, one without;
  # workload pods with nccl-triage.io/* annotations beside their own.
  ensure_ns cleanup-jobs
  kubectl create serviceaccount default -n cleanup-jobs >/dev/null 2>&1 || true
  for n in cleanup-gpu-1 cleanup-gpu-2 cleanup-cpu-1 cleanup-gone-1; do
    kubectl delete node "$n" --ignore-not-found >/dev/null
    kubectl create -f - >/dev/null <<NODE || die "node $n"
apiVersion: v1
kind: Node
metadata: {name: $n}
NODE
    conds='{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}'
    case "$n" in cleanup-gpu-*|cleanup-gone-*) conds='{"type": "MemoryPressure", "status": "False", "reason": "Fine", "message": "ok"},
      {"type": "NcclFabricReady", "status": "False", "reason": "IbResource", "message": "ib.port_state"}, '"$conds" ;; esac
    kubectl patch node "$n" --subresource=status --type=merge -p "{\"status\": {\"conditions\": [$conds]}}" >/dev/null ||
      die "conditions of $n"
  done
  for p in train-0 train-1 web-0 gone-0; do
    kubectl delete pod "$p" -n cleanup-jobs --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
    kubectl run "$p" -n cleanup-jobs --image=registry.example/x --restart=Never \
      --overrides='{"spec": {"nodeName": "cleanup-gpu-1"}}' >/dev/null || die "pod $p"
  done
  kubectl annotate pod -n cleanup-jobs train-0 train-1 gone-0 nccl-triage.io/node-verdict=ib_resource \
    nccl-triage.io/causes=ib.port_state team.example/owner=ml >/dev/null || die "annotate"
  kubectl annotate pod -n cleanup-jobs web-0 team.example/owner=web >/dev/null || die "annotate"
  # A node and a pod that go between the block's list and its patch (a job ending, a node scaled
  # in): a kubectl in front of the real one deletes each just before the block patches it.
  real="$tools/bin/kubectl"; shim="$(mktemp -d)"
  cat >"$shim/kubectl" <<SHIM
#!/bin/bash
case " \$* " in
  *" patch node cleanup-gone-1 "*) "$real" delete node cleanup-gone-1 >/dev/null ;;
  *" annotate pod -n cleanup-jobs gone-0 "*) "$real" delete pod gone-0 -n cleanup-jobs --grace-period=0 --force >/dev/null 2>&1 ;;
esac
exec "$real" "\$@"
SHIM
  chmod +x "$shim/kubectl"
  out="$(PATH="$shim:$tools/bin:$PATH" bash -euo pipefail -c "$block")" || { rm -rf "$shim"; die "the documented clean-up failed"; }
  rm -rf "$shim"
  grep -q '^node/cleanup-gone-1: skipped, gone since the list$' <<<"$out" &&
    grep -q '^pod/cleanup-jobs/gone-0: skipped, gone since the list$' <<<"$out" ||
    die "a node or pod gone since the list was not reported as skipped: $out"
  conds="$(kubectl get nodes cleanup-gpu-1 cleanup-gpu-2 cleanup-cpu-1 -o jsonpath='{range .items[*]}{.metadata.name}:{.status.conditions[*].type}{"\n"}{end}')"
  grep -q NcclFabricReady <<<"$conds" && die "NcclFabricReady left: $conds"
  [ "$(grep -c 'MemoryPressure Ready$' <<<"$conds")" = 2 ] && grep -q '^cleanup-cpu-1:Ready$' <<<"$conds" ||
    die "other conditions changed: $conds"
  ann="$(kubectl get pods -n cleanup-jobs -o jsonpath='{range .items[*]}{.metadata.name}:{.metadata.annotations}{"\n"}{end}')"
  grep -q 'nccl-triage.io/' <<<"$ann" && die "nccl-triage.io/ annotations left: $ann"
  [ "$(grep -c 'team.example/owner' <<<"$ann")" = 3 ] || die "other annotations changed: $ann"
  kubectl delete node cleanup-gpu-1 cleanup-gpu-2 cleanup-cpu-1 >/dev/null
  kubectl delete pods --all -n cleanup-jobs --grace-period=0 --force >/dev/null 2>&1 || true
  echo "the documented clean-up removed NcclFabricReady from 2 nodes and the annotations of 2 pods, nothing else"
  ;;
report)
  export KUBECONFIG="$1/kubeconfig"; doc="$2"
  command -v jq >/dev/null || { echo "SKIP: the documented command needs jq"; exit 77; }
  cmd="$(sed -n "/^### A node's report$/,/^### /p" "$doc" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')"
  [ -n "$cmd" ] || die "no command under \"A node's report\" in $doc"
  ensure_ns report-agents
  kubectl create serviceaccount default -n report-agents >/dev/null 2>&1 || true
  for n in 1 2; do
    kubectl delete pod "agent-$n" -n report-agents --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
    kubectl run "agent-$n" -n report-agents --image=registry.example/x --restart=Never \
      --labels=app.kubernetes.io/component=agent --overrides="{\"spec\": {\"nodeName\": \"report-gpu-$n\"}}" >/dev/null ||
      die "pod agent-$n"
    kubectl annotate pod "agent-$n" -n report-agents \
      "nccl-triage.io/report={\"node\":\"report-gpu-$n\",\"class\":\"ib_resource\",\"causes\":[\"ib.port_state\"]}" >/dev/null ||
      die "annotate agent-$n"
  done
  out="$(bash -euo pipefail -c "${cmd//<node>/report-gpu-2}")" || die "the documented command failed: $cmd"
  [ "$(jq -r .node <<<"$out")" = report-gpu-2 ] && [ "$(jq -r '.causes[0]' <<<"$out")" = ib.port_state ] ||
    die "the documented command printed: $out"
  kubectl delete pods --all -n report-agents --grace-period=0 --force >/dev/null 2>&1 || true
  echo "the documented kubectl command printed report-gpu-2's report, not another node's"
  ;;
dashboard)
  chart="$1"; base=https://git.example.com/infra/nccl-triage/-/blob/main/docs/
  urls="$(helm template t "$chart" "${offline_token[@]}" --set runbookBaseUrl="${base}alerts.md" \
          --show-only templates/grafana-dashboard.yaml | sed -n 's/^ *"url": "\(.*\)",*$/\1/p')"
  [ "$(wc -l <<<"$urls")" -ge 5 ] || die "only $(wc -l <<<"$urls") links in the dashboard: $urls"
  while read -r u; do
    [[ "$u" == "$base"* ]] || die "dashboard link $u does not follow runbookBaseUrl"
  done <<<"$urls"
  grep -q "^${base}checks.md#" <<<"$urls" || die "no Fix link to checks.md beside the runbook"
  echo "runbookBaseUrl reaches all $(wc -l <<<"$urls") dashboard links, checks.md and install.md beside alerts.md"
  ;;
podsecurity)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"
  # The agent's pod as the DaemonSet controller would make it, sent as a server-side dry run: the
  # API server's Pod Security admission answers as it would the controller.
  agent_pod() { # NAMESPACE DAEMONSET -> the API server's answer
    kubectl get ds "$2" -n "$1" -o json | python3 -c '
import json, sys
ds = json.load(sys.stdin)
print(json.dumps({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "agent-admission", "namespace": ds["metadata"]["namespace"]},
                  "spec": ds["spec"]["template"]["spec"]}))' |
      kubectl create --dry-run=server -f - 2>&1
  }
  # Releases left by an earlier, interrupted run go first.
  helm list -A --filter '^psa' | awk 'NR > 1 {print $1, $2}' | while read -r r n; do
    helm uninstall "$r" -n "$n" >/dev/null 2>&1 || true
  done
  ensure_ns psa-baseline
  kubectl label --overwrite ns psa-baseline pod-security.kubernetes.io/enforce=baseline >/dev/null
  notes="$(helm install psa "$chart" -n psa-baseline)" || die "helm install into a baseline namespace"
  grep -q 'WARNING: namespace psa-baseline enforces the Pod Security level "baseline"' <<<"$notes" ||
    die "the NOTES do not warn about the baseline namespace: $notes"
  grep -q 'kubectl label --overwrite namespace psa-baseline pod-security.kubernetes.io/enforce=privileged' <<<"$notes" ||
    die "the NOTES do not give the label command"
  # helm succeeded: the DaemonSet is there, and its every pod would be refused.
  kubectl get ds psa-nccl-triage-agent -n psa-baseline >/dev/null || die "no DaemonSet in psa-baseline"
  if answer="$(agent_pod psa-baseline psa-nccl-triage-agent)"; then die "baseline admitted the agent: $answer"; fi
  for want in 'Error from server (Forbidden)' 'pods "agent-admission" is forbidden' \
              'violates PodSecurity "baseline:latest"' 'host namespaces' 'privileged' 'hostPath volumes'; do
    grep -q -F "$want" <<<"$answer" || die "the API server's refusal lacks '$want': $answer"
  done
  echo "baseline namespace: NOTES warn; the API server refuses the agent: $(head -c 160 <<<"$answer")..."
  # The NOTES' command: with the label privileged the same pod is admitted.
  kubectl label --overwrite namespace psa-baseline pod-security.kubernetes.io/enforce=privileged >/dev/null
  answer="$(agent_pod psa-baseline psa-nccl-triage-agent)" || die "privileged refused the agent: $answer"
  kubectl label --overwrite namespace psa-baseline pod-security.kubernetes.io/enforce=baseline >/dev/null
  echo "the NOTES' label command: the agent's pod admitted once psa-baseline enforces privileged"
  # namespace.create: the release record stays in psa-baseline, the agents go to a namespace the
  # chart makes, labelled privileged, where the same pod is admitted.
  # (a unique name: without a namespace controller, a deleted namespace stays Terminating)
  created="psa-privileged-$$"
  notes="$(helm install psa-created "$chart" -n psa-baseline --set namespace.create=true \
           --set namespace.name="$created")" || die "helm install with namespace.create"
  [ "$(kubectl get ns "$created" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" = privileged ] ||
    die "namespace.create did not label $created privileged"
  if grep -q 'Pod Security' <<<"$notes"; then die "NOTES warn about a namespace the chart labelled: $notes"; fi
  answer="$(agent_pod "$created" psa-created-nccl-triage-agent)" || die "the agent's pod refused in the chart's namespace: $answer"
  echo "namespace.create: $created labelled privileged, the agent's pod admitted"
  # --create-namespace makes an unlabelled namespace, unknown to the chart when it renders.
  fresh="psa-new-$$"
  notes="$(helm install psa-new "$chart" -n "$fresh" --create-namespace)" || die "helm install --create-namespace"
  grep -q "Namespace $fresh is new (--create-namespace), without a pod-security.kubernetes.io/enforce label" <<<"$notes" ||
    die "the NOTES say nothing of the unlabelled new namespace: $notes"
  echo "--create-namespace: the NOTES say the new namespace has no Pod Security label"
  for r in psa:psa-baseline psa-created:psa-baseline "psa-new:$fresh"; do
    helm uninstall "${r%%:*}" -n "${r#*:}" >/dev/null || die "helm uninstall ${r%%:*}"
  done
  ;;
scraper)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; ns=scrape
  helm uninstall scrape -n "$ns" --ignore-not-found >/dev/null 2>&1 || true
  ensure_ns "$ns"
  notes="$(helm install scrape "$chart" -n "$ns")" || die "helm install"
  sa="system:serviceaccount:$ns:scrape-nccl-triage-scraper"
  for path in /status /metrics; do
    [ "$(kubectl auth can-i get "$path" --as "$sa")" = yes ] || die "the scraper may not get $path"
  done
  [ "$(kubectl auth can-i get /sweep --as "$sa")" = no ] || die "the scraper may get /sweep"
  [ "$(kubectl get secret scrape-nccl-triage-scraper-token -n "$ns" -o jsonpath='{.type}')" = kubernetes.io/service-account-token ] ||
    die "no service-account-token Secret for the scraper"
  # The NOTES' first command: its token comes from kubectl create token.
  cmd="$(grep -o 'kubectl -n scrape create token scrape-nccl-triage-scraper' <<<"$notes")" ||
    die "the NOTES do not say how to get a token: $notes"
  token="$(kubectl -n "$ns" create token scrape-nccl-triage-scraper)" || die "$cmd"
  [ -n "$token" ] || die "$cmd gave no token"
  grep -q 'curl -s -H "Authorization: Bearer $TOKEN" localhost:9502/status' <<<"$notes" || die "no curl with the token in the NOTES"
  echo "scraper: may get /status and /metrics, not /sweep; its token Secret exists; the NOTES' kubectl create token works"
  # A PodMonitor naming a Secret that does not exist: the NOTES say so.
  notes="$(helm upgrade scrape "$chart" -n "$ns" --dry-run=server --set monitoring.podMonitor.enabled=true \
           --set monitoring.podMonitor.tokenSecret.name=absent-token)" || die "helm upgrade --dry-run=server"
  grep -q 'WARNING: the PodMonitors send the token of Secret scrape/absent-token, which does not exist' <<<"$notes" ||
    die "the NOTES do not name the missing Secret: $notes"
  # A ServiceMonitor sends Prometheus' own token: unbound, the NOTES say every scrape is 403.
  notes="$(helm upgrade scrape "$chart" -n "$ns" --dry-run=server --set monitoring.serviceMonitor.enabled=true)" ||
    die "helm upgrade --dry-run=server (ServiceMonitor)"
  grep -q "WARNING: the ServiceMonitors send Prometheus' own service-account token" <<<"$notes" ||
    die "the NOTES do not say the ServiceMonitors' account is unbound: $notes"
  helm uninstall scrape -n "$ns" >/dev/null || die "helm uninstall"
  echo "a PodMonitor's missing token Secret and a ServiceMonitor's unbound account are named in the NOTES"
  ;;
remediation)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; ns=remedy
  helm uninstall remedy -n "$ns" --ignore-not-found >/dev/null 2>&1 || true
  ensure_ns "$ns"
  notes="$(helm install remedy "$chart" -n "$ns")" || die "helm install"
  grep -q 'changes no node' <<<"$notes" || die "install NOTES do not say remediation is off: $notes"
  # As an SRE turns it on: helm upgrade --set, each mode in turn.
  for mode in dry-run taint cordon off; do
    notes="$(helm upgrade remedy "$chart" -n "$ns" --reuse-values --set config.remediation.mode=$mode)" ||
      die "helm upgrade to $mode"
    grep -q "^Remediation: config.remediation.mode=$mode\.$" <<<"$notes" || die "$mode: the NOTES do not state the mode: $notes"
    case "$mode" in
      off) want='changes no node' ;;
      dry-run) want='No node is changed' ;;
      taint) want='NoSchedule taint nccl-triage.io/fault=<class> (new pods' ;;
      cordon) want='NoSchedule taint nccl-triage.io/fault=<class> and is cordoned' ;;
    esac
    grep -q -F "$want" <<<"$notes" || die "$mode: the NOTES lack '$want': $notes"
    case "$mode" in taint|cordon) grep -q 'WARNING: the coordinator now CHANGES NODES' <<<"$notes" || die "$mode: no warning" ;; esac
    # The NOTES say whether the coordinator may patch nodes, and the API server agrees.
    can="$(kubectl auth can-i patch nodes --as "system:serviceaccount:$ns:remedy-nccl-triage-coordinator" || true)"
    case "$mode" in
      taint|cordon)
        grep -q -F '"patch nodes" (besides get, list and watch nodes and create events) in this mode' <<<"$notes" ||
          die "$mode: the NOTES do not say the coordinator may now patch nodes: $notes"
        [ "$can" = yes ] || die "$mode: the NOTES say patch nodes, the API server says '$can'" ;;
      dry-run)
        grep -q -F 'it may not patch them' <<<"$notes" || die "dry-run: the NOTES do not say nodes stay unpatched"
        [ "$can" = no ] || die "dry-run: the coordinator may patch nodes" ;;
    esac
    echo "upgrade to $mode: the NOTES say '$want'"
  done
  helm uninstall remedy -n "$ns" >/dev/null || die "helm uninstall"
  ;;
umbrella)
  chart="$(cd "$1" && pwd)"; umbrella="$2"; out="$3"
  rm -rf "$out/umbrella"; mkdir -p "$out"; cp -r "$umbrella" "$out/umbrella"
  sed -i "s|file://CHART_DIR|file://$chart|" "$out/umbrella/Chart.yaml"
  helm dependency build "$out/umbrella" >/dev/null || die "helm dependency build of the umbrella chart"
  [ -f "$out/umbrella/charts/nccl-triage-0.1.0.tgz" ] || die "the subchart was not packaged into charts/"
  helm lint --strict "$out/umbrella" || die "helm lint --strict of the umbrella chart"
  rendered="$(helm template platform "$out/umbrella" -n gpu)" || die "helm template of the umbrella chart"
  # Every image of the subchart's pods comes from the umbrella's global registry, and each pod
  # template names the pull secret.
  images="$(grep -E '^ +image: ' <<<"$rendered" | sed 's/.*image: *//; s/"//g' | sort -u)"
  [ -n "$images" ] || die "no image in the umbrella's render"
  while read -r image; do
    [[ "$image" == registry.example/mirror/* ]] || die "image $image is not from global.imageRegistry"
  done <<<"$images"
  # (the uninstall hook's Job included)
  pods="$(grep -c -E '^kind: (DaemonSet|Deployment|Job)$' <<<"$rendered")"
  secrets="$(grep -c -E '^ +- name: mirror-credentials$' <<<"$rendered")"
  [ "$pods" -ge 3 ] && [ "$secrets" -eq "$pods" ] ||
    die "$pods workloads, $secrets name the pull secret mirror-credentials"
  grep -q 'path: /opt/nccl-2.28/lib' <<<"$rendered" || die "the probes' NCCL hostPath did not reach the DaemonSet"
  echo "umbrella chart: subchart rendered, $pods workloads from registry.example/mirror with the pull secret"
  ;;
lint)
  chart="$1"; shift
  helm lint --strict "$chart"
  for f in "$@"; do helm lint --strict "$chart" -f "$f" "${offline_token[@]}"; done
  ;;
template)
  chart="$1"; shift
  for f in "$@"; do
    out="$(helm template nccl-triage "$chart" -n nccl-triage -f "$f" "${offline_token[@]}")" ||
      die "helm template -f $f"
    n="$(grep -c '^kind: ' <<<"$out")"
    [ "$n" -gt 5 ] || die "helm template -f $f rendered $n objects"
    echo "helm template -f $(basename "$f"): $n objects"
  done
  ;;
rejects)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; cases="$3"; failed=0
  ensure_ns nccl-triage
  for f in "$cases"/*.yaml; do
    # As a user meets them: `helm install` against the cluster (server-side dry run: lookup sees
    # it), or `helm template` for the cases that say "# render: offline".
    if grep -q '^# render: offline$' "$f"; then
      args=(template rejected "$chart" -n nccl-triage -f "$f")
    else
      args=(install rejected "$chart" -n nccl-triage --dry-run=server -f "$f")
    fi
    if out="$(helm "${args[@]}" 2>&1 >/dev/null)"; then
      echo "FAIL: $(basename "$f"): helm ${args[0]} accepted the values"; failed=1; continue
    fi
    n=0
    while IFS= read -r want; do
      n=$((n + 1))
      grep -qF -- "$want" <<<"$out" || { echo "FAIL: $(basename "$f"): helm said:"; echo "$out"; echo "  not: $want"; failed=1; }
    done < <(sed -n 's/^# expect: //p' "$f")
    [ "$n" -gt 0 ] || { echo "FAIL: $(basename "$f") has no '# expect:' line"; failed=1; }
    echo "$(basename "$f"): rejected ($n messages)"
  done
  exit "$failed"
  ;;
install)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; out="$3"; chartcheck="$4"; mode="$5"; values=("${@:6}")
  case "$mode" in default) release=nccl-triage ;; *) release="$mode" ;; esac
  read -r ns fullname <<<"$(where "$release")"
  mkdir -p "$out"
  # all-on puts the Grafana dashboard into the monitoring stack's namespace.
  for n in "$ns" monitoring; do ensure_ns "$n"; done
  args=()
  for f in "${values[@]}"; do args+=(-f "$f"); done
  # A release left by an earlier, interrupted run goes first.
  helm uninstall "$release" -n "$ns" --ignore-not-found >/dev/null
  # --wait is no use without kubelet and controllers; every object is created or the install fails.
  helm install "$release" "$chart" -n "$ns" "${args[@]}" >"$out/$mode-install.txt" || die "helm install $release"
  helm get manifest "$release" -n "$ns" >"$out/$mode.yaml"
  helm get hooks "$release" -n "$ns" >"$out/$mode-hooks.yaml"
  helm get values "$release" -n "$ns" --all -o json >"$out/$mode-values.json"
  kubectl get -f "$out/$mode.yaml" -o name >/dev/null || die "objects of $release missing after install"
  echo "helm install $release: $(grep -c '^kind: ' "$out/$mode.yaml") objects accepted by the API server"
  rc=0
  "$chartcheck" --manifests "$out/$mode.yaml" --values "$out/$mode-values.json" --chart "$chart" \
    --mode "$mode" --release "$release" --extract-config "$out/$mode-config.yaml" \
    --hooks "$out/$mode-hooks.yaml" || rc=$?
  if [ "$mode" != default ]; then
    helm uninstall "$release" -n "$ns" --wait >/dev/null
    leftovers "$release" "$fullname"
  fi
  exit "$rc"
  ;;
upgrade)
  chart="$1"; export KUBECONFIG="$2/kubeconfig"; out="$3"; chartcheck="$4"
  secret() { kubectl get secret nccl-triage-token -n nccl-triage -o jsonpath='{.data.token}' | base64 -d; }
  before="$(secret)"
  [ -n "$before" ] || die "no token Secret before the upgrade"
  # A values change and an image tag change, as a user upgrades.
  helm upgrade nccl-triage "$chart" -n nccl-triage --set image.tag=9.9.9 \
    --set config.agent.interval_seconds=45 >/dev/null || die "helm upgrade"
  helm get manifest nccl-triage -n nccl-triage >"$out/upgrade.yaml"
  helm get values nccl-triage -n nccl-triage --all -o json >"$out/upgrade-values.json"
  image="$(kubectl get ds nccl-triage-agent -n nccl-triage -o jsonpath='{.spec.template.spec.containers[0].image}')"
  [ "$image" = nccl-triage:9.9.9 ] || die "the agent DaemonSet runs $image after the upgrade, want nccl-triage:9.9.9"
  kubectl get cm nccl-triage-config -n nccl-triage -o jsonpath='{.data.config\.yaml}' | grep -q 'interval_seconds: 45' ||
    die "the ConfigMap on the server lacks interval_seconds: 45 after the upgrade"
  [ "$(secret)" = "$before" ] || die "the upgrade replaced the token"
  [ "$(helm history nccl-triage -n nccl-triage -o json | grep -o '"revision":[0-9]*' | tail -1)" = '"revision":2' ] ||
    die "helm history has no revision 2"
  echo "helm upgrade: image nccl-triage:9.9.9, interval 45 s on the server, token kept"
  "$chartcheck" --manifests "$out/upgrade.yaml" --values "$out/upgrade-values.json" --chart "$chart" \
    --mode upgrade --kept-token "$before"
  ;;
uninstall)
  export KUBECONFIG="$1/kubeconfig"
  helm uninstall nccl-triage -n nccl-triage --wait >/dev/null || die "helm uninstall"
  leftovers nccl-triage nccl-triage
  ;;
*) die "unknown command $cmd" ;;
esac
