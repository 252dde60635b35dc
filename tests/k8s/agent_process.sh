#!/usr/bin/env bash
# The agent as a process, as its pod runs it, against the real API server of kube_prepare.sh:
# the API address from KUBERNETES_SERVICE_HOST/PORT, the token of the pod agent-gpu-node-2
# (NCCL_TRIAGE_SERVICE_ACCOUNT_DIR), NODE_NAME, POD_NAME and POD_NAMESPACE. It must set the
# NcclFabricReady condition of its node, annotate its own pod and post an Event (the fixture root
# given has a fault, so the condition is False; the first verdict of a healthy node makes no
# Event), with nothing but the chart's RBAC. gpu-node-2 is its own: the client tests use gpu-node-1.
# Usage: agent_process.sh TOOLS WORK SERVER_BINARY FIXTURE_ROOT
set -euo pipefail
tools="$1"; work="$2"; server="$3"; root="$4"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
. "$work/env"
run="$work/agent-process"; rm -rf "$run"; mkdir -p "$run"
cat >"$run/config.yaml" <<YAML
agent:
  listen: 127.0.0.1:0
  interval_seconds: 2
  annotate_pod: true
  node_condition: true
  events: true
  workloads: false
YAML
KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" \
NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$work/kube/agent-2" NODE_NAME=gpu-node-2 \
POD_NAME=agent-gpu-node-2 POD_NAMESPACE=kt \
  "$server" agent --standalone --config "$run/config.yaml" --root "$root" >"$run/agent.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT

condition="" annotated="" event=""
for _ in $(seq 1 120); do     # generous: a loaded machine
  kill -0 $pid 2>/dev/null || { echo "FAIL: the agent exited:"; tail -20 "$run/agent.log"; exit 1; }
  condition="$(k get node gpu-node-2 -o jsonpath='{.status.conditions[?(@.type=="NcclFabricReady")].status}')"
  annotated="$(k get pod agent-gpu-node-2 -n kt -o jsonpath='{.metadata.annotations}' | grep -o 'nccl-triage.io/[a-z-]*' | head -1 || true)"
  event="$(k get events -n default --field-selector involvedObject.name=gpu-node-2,source=nccl-triage-agent -o name 2>/dev/null | head -1 || true)"
  [ "$condition" = False ] && [ -n "$annotated" ] && [ -n "$event" ] && break
  sleep 0.5
done
echo "node condition NcclFabricReady=${condition:-<none>}, pod annotation ${annotated:-<none>}, event ${event:-<none>}"
if [ "$condition" != False ] || [ -z "$annotated" ] || [ -z "$event" ]; then
  echo "FAIL: the agent did not publish all three; its log:"; tail -30 "$run/agent.log"; exit 1
fi
if grep -E 'HTTP 40[13]' "$run/agent.log"; then echo "FAIL: the API refused a call of the agent"; exit 1; fi
# The API server closes idle connections; the next write into the client's kept-alive one (the
# 5-minute heartbeat) must not raise SIGPIPE, which killed the agent silently: it is ignored.
sigign="$(awk '/^SigIgn:/ { print $2 }' "/proc/$pid/status")"
if (( (16#$sigign & 0x1000) == 0 )); then
  echo "FAIL: the agent does not ignore SIGPIPE (SigIgn $sigign)"; exit 1
fi
echo "SIGPIPE ignored"
