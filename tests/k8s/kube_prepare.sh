#!/usr/bin/env bash
# Sets up the real API server of tests/k8s/cluster.sh for the kube client tests: the chart
# installed by helm (release kt, namespace kt, values-kube.yaml: its ServiceAccounts, RBAC and
# admission policy as a user gets them), two nodes (and 64 more for remediation), a job's pods on them, an agent pod per node,
# and the service-account tokens the kubelet would give those pods, written as service-account
# directories (token, ca.crt, namespace) under WORK/kube/:
#   agent-1/, agent-2/       the agent's API token, bound to agent pod on gpu-node-1 / gpu-node-2;
#                            identity-token: the same pod's token for the audience nccl-triage
#   agent-gone/identity-token  an identity token whose pod has been deleted
#   coordinator/             the coordinator's API token; identity-token: one for nccl-triage
#   scraper/, stranger/      tokens of two more ServiceAccounts of kt: scraper is bound to the
#                            chart's metrics-reader ClusterRole (values rbac.metricsReaders),
#                            stranger to nothing
# Usage: kube_prepare.sh TOOLS_DIR WORK_DIR CHART VALUES
set -euo pipefail
tools="$1"; work="$2"; chart="$3"; values="$4"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
out="$work/kube"; rm -rf "$out"; mkdir -p "$out"

# A second run on the same cluster starts over (no namespace controller runs: namespaces stay).
"$tools/bin/helm" uninstall kt -n kt --no-hooks --wait >/dev/null 2>&1 || true
for ns in jobs kt; do k delete pods --all -n "$ns" --grace-period=0 --force >/dev/null 2>&1 || true; done
"$tools/bin/helm" install kt "$chart" -n kt --create-namespace -f "$values" >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-1
  labels: {nvidia.com/gpu.present: "true", node.kubernetes.io/instance-type: p5.48xlarge}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-2
  labels: {nvidia.com/gpu.present: "true", node.kubernetes.io/instance-type: p5.48xlarge}
YAML
# The remediation test's pool: 64 plain Node objects (kwok-style, no kubelet), one label.
for i in $(seq -w 0 63); do
  printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: remediation-%s\n  labels: {pool.example/name: remediation}\n' "$i"
done | k apply -f - >/dev/null
# Pods: no kubelet runs them, the API server stores them (and binds tokens to them).
pod() {  # NAMESPACE NAME NODE SERVICEACCOUNT
  cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: {app: $2}}
spec:
  nodeName: $3
  serviceAccountName: $4
  automountServiceAccountToken: false
  containers: [{name: main, image: registry.example/train:1}]
YAML
}
k create ns jobs >/dev/null 2>&1 || true
k create serviceaccount default -n jobs >/dev/null 2>&1 || true
{ pod jobs train-0 gpu-node-1 default; pod jobs train-1 gpu-node-2 default
  pod kt agent-gpu-node-1 gpu-node-1 kt-nccl-triage-agent
  pod kt agent-gpu-node-2 gpu-node-2 kt-nccl-triage-agent
  pod kt agent-gone gpu-node-1 kt-nccl-triage-agent; } | k apply -f - >/dev/null

sa_dir() {  # DIR SERVICEACCOUNT POD|""
  local bind=(); [ -n "$3" ] && bind=(--bound-object-kind Pod --bound-object-name "$3")
  mkdir -p "$out/$1"
  k create token "$2" -n kt --duration 2h "${bind[@]}" >"$out/$1/token"
  k create token "$2" -n kt --duration 2h "${bind[@]}" --audience nccl-triage >"$out/$1/identity-token"
  cp "$work/ca.crt" "$out/$1/ca.crt"; echo kt >"$out/$1/namespace"
}
sa_dir agent-1 kt-nccl-triage-agent agent-gpu-node-1
sa_dir agent-2 kt-nccl-triage-agent agent-gpu-node-2
sa_dir agent-gone kt-nccl-triage-agent agent-gone
sa_dir coordinator kt-nccl-triage-coordinator ""
for sa in scraper stranger; do
  k create serviceaccount "$sa" -n kt >/dev/null 2>&1 || true
  sa_dir "$sa" "$sa" ""
done
k delete pod agent-gone -n kt --grace-period=0 --force >/dev/null 2>&1
echo "kube test objects ready: release kt, nodes gpu-node-1/2, tokens in $out"
