#!/usr/bin/env bash
# The agent as a process, as its pod runs it, against the real API server of kube_prepare.sh:
# the API address from KUBERNETES_SERVICE_HOST/PORT, the token of the pod agent-gpu-node-2
# (NCCL_TRIAGE_SERVICE_ACCOUNT_DIR), NODE_NAME, POD_NAME and POD_NAMESPACE. It must set the
# NcclFabricReady condition of its node, annotate its own pod and post an Event (the fixture root
# given has a fault, so the condition is False; the first verdict of a healthy node makes no
# Event), with nothing but the chart's RBAC. gpu-node-2 is its own: the client tests use gpu-node-1.
# Its /metrics and /status are behind the API server (server.auth: kubernetes, with its own
# service account's TokenReview and SubjectAccessReview): 401 without a token, 403 with the token
# of kt/stranger (bound to nothing), 200 with kt/scraper's (bound to the chart's metrics-reader
# ClusterRole by rbac.metricsReaders); /livez and /readyz stay open.
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
server:
  auth: kubernetes
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

# Who may read the HTTP endpoints, decided by the real API server.
port="$(sed -n 's/.*serving \/metrics \/livez \/readyz \/status on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$run/agent.log" | head -1)"
[ -n "$port" ] || { echo "FAIL: no listening port in the agent's log"; tail -20 "$run/agent.log"; exit 1; }
code() {  # PATH [TOKEN-DIR]: the HTTP status of a GET
  local auth=()
  [ -n "${2:-}" ] && auth=(-H "Authorization: Bearer $(cat "$work/kube/$2/token")")
  curl -s -o "$run/body" -w '%{http_code} %{time_total}' --max-time 60 "${auth[@]}" \
    "http://127.0.0.1:$port$1"
}
expect() {  # WANT PATH [TOKEN-DIR]
  local got seconds; read -r got seconds <<<"$(code "$2" "${3:-}")"
  echo "GET $2 ${3:+as $3 }-> $got in ${seconds}s ($(head -c 150 "$run/body" | head -1))"
  [ "$got" = "$1" ] || { echo "FAIL: want $1"; tail -20 "$run/agent.log"; exit 1; }
}
expect 200 /livez
expect 200 /readyz
expect 401 /metrics
expect 401 /status
expect 401 /metrics agent-gone   # a bound token whose pod is gone: the API server refuses it
expect 403 /metrics stranger
expect 403 /status stranger
expect 200 /metrics scraper
grep -q '^nccl_triage_probe_available' "$run/body" || { echo "FAIL: /metrics lacks probe_available"; exit 1; }
expect 200 /status scraper
grep -q '"probe_availability"' "$run/body" || { echo "FAIL: /status lacks probe_availability"; exit 1; }
expect 200 /metrics scraper      # again, from the cache
# The quick start's first command after install (README): a token of the chart's own scraper
# account (monitoring.scraper.create, on by default) from kubectl create token.
mkdir -p "$work/kube/chart-scraper"
k -n kt create token kt-nccl-triage-scraper >"$work/kube/chart-scraper/token" ||
  { echo "FAIL: kubectl -n kt create token kt-nccl-triage-scraper"; exit 1; }
expect 200 /status chart-scraper
