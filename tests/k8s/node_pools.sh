#!/usr/bin/env bash
# Node pools (config.pools) on the real API server of kube_prepare.sh: three nodes, one of the
# pool h100-8x400 (node.kubernetes.io/instance-type h100-8x400, 8 nvidia.com/gpu), one of
# a100-4x200 (4 GPUs) and one of no pool (l40s-4x100), and an agent process per node, as its
# pod runs it (the API address from KUBERNETES_SERVICE_HOST/PORT, NODE_NAME, a token of the
# chart's agent ServiceAccount bound to a pod on that node). Each reads its Node from the API
# server (the chart's RBAC: nodes get) and must judge the same root (the DGX H100 fixture,
# 8 HCAs at 400 Gb/s) by its own pool's expect, top-level keys inherited:
#   h100-8x400  expect.hcas 8, rate_gbps 400: ib.hca_present and ib.port_rate pass, with those
#               expectations as evidence; pool="h100-8x400" on nccl_triage_node_verdict
#   a100-4x200  expect.hcas 4, rate_gbps 200: ib.hca_present warns (8 found, more than
#               expected), the rate passes (400 >= 200); pool="a100-4x200" on the verdict
#   none        the top-level expect (none of these keys: derived from the node), no pool label
# Usage: node_pools.sh TOOLS WORK SERVER_BINARY FIXTURE_ROOT
set -euo pipefail
tools="$1"; work="$2"; server="$3"; root="$4"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
. "$work/env"
run="$work/node-pools"; rm -rf "$run"; mkdir -p "$run"
ns=kt agent_sa=kt-nccl-triage-agent
names=(h100 a100 none)
declare -A type=([h100]=h100-8x400 [a100]=a100-4x200 [none]=l40s-4x100) gpus=([h100]=8 [a100]=4 [none]=4)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "${names[@]}"; do
    k delete pod -n "$ns" "pools-agent-$n" --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
    k delete node "pools-node-$n" --ignore-not-found >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for n in "${names[@]}"; do echo "--- agent $n"; tail -15 "$run/agent-$n.log" || true; done; exit 1; }

cleanup
for n in "${names[@]}"; do
  cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: pools-node-$n
  labels: {nvidia.com/gpu.present: "true", node.kubernetes.io/instance-type: ${type[$n]}}
status:
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "${gpus[$n]}"}
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "${gpus[$n]}"}
---
apiVersion: v1
kind: Pod
metadata: {name: pools-agent-$n, namespace: $ns}
spec:
  nodeName: pools-node-$n
  serviceAccountName: $agent_sa
  automountServiceAccountToken: false
  containers: [{name: agent, image: registry.example/nccl-triage:1}]
YAML
done | k apply -f - >/dev/null
# The API server keeps a created node's status: the labels and the GPU capacity are there.
capacity="$(k get node pools-node-a100 -o jsonpath='{.status.capacity.nvidia\.com/gpu}')"
[ "$capacity" = 4 ] || fail "pools-node-a100 has nvidia.com/gpu capacity '$capacity', not 4"

cat >"$run/config.yaml" <<'YAML'
agent:
  listen: 127.0.0.1:0
  interval_seconds: 30
  annotate_pod: false
  node_condition: false
  events: false
  workloads: false
kernel:
  state_dir: ""
expect:
  nofile_min: 1024            # inherited by both pools
pools:
  - name: h100-8x400
    selector: {node.kubernetes.io/instance-type: h100-8x400, nvidia.com/gpu.present: "true"}
    expect: {hcas: 8, rate_gbps: 400}
  - name: a100-4x200
    selector: {node.kubernetes.io/instance-type: a100-4x200}
    expect: {hcas: 4, rate_gbps: 200}
YAML
for n in "${names[@]}"; do
  sa="$run/sa-$n"; mkdir -p "$sa"; cp "$work/ca.crt" "$sa/"; echo "$ns" >"$sa/namespace"
  k create token "$agent_sa" -n "$ns" --bound-object-kind Pod --bound-object-name "pools-agent-$n" \
    --duration 2h >"$sa/token"
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$sa" \
  NODE_NAME="pools-node-$n" POD_NAME="pools-agent-$n" POD_NAMESPACE="$ns" \
    "$server" agent --standalone --config "$run/config.yaml" --root "$root" >"$run/agent-$n.log" 2>&1 &
  pids+=($!)
done

# Each agent's HTTP port (from its log), then its first report.
declare -A port
deadline=$((SECONDS + 180))   # generous: a loaded machine
for i in "${!names[@]}"; do
  n="${names[$i]}"
  while [ "$SECONDS" -lt "$deadline" ]; do
    kill -0 "${pids[$i]}" 2>/dev/null || fail "agent $n exited"
    port[$n]="$(sed -nE 's/.*serving .* on 127\.0\.0\.1:([0-9]+) .*/\1/p' "$run/agent-$n.log" | head -1)"
    [ -n "${port[$n]}" ] && curl -sf --max-time 10 "http://127.0.0.1:${port[$n]}/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -sf --max-time 10 "http://127.0.0.1:${port[$n]}/readyz" >/dev/null || fail "agent $n did not become ready"
done

# One line per agent: the verdict, and per check: status and the "expected" evidence.
judged() {  # NAME
  curl -sf --max-time 10 "http://127.0.0.1:${port[$1]}/status" | python3 -c '
import json, sys
r = json.load(sys.stdin)["report"]
out = []
for f in r["findings"]:
    if f["check"] in ("ib.hca_present", "ib.port_rate"):
        exp = [e["value"] for e in f["evidence"] if e["key"].startswith("expected")]
        out.append("%s=%s[%s]" % (f["check"], f["status"], ",".join(exp)))
print(" ".join(sorted(out)))'
}
pool_label() {  # NAME: the pool label of nccl_triage_node_verdict, "-" when it has none
  curl -sf --max-time 10 "http://127.0.0.1:${port[$1]}/metrics" | awk '
    /^nccl_triage_node_verdict\{/ { if (match($0, /pool="[^"]*"/)) p = substr($0, RSTART + 6, RLENGTH - 7); else p = "-"; seen = 1 }
    END { if (seen) print p }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
declare -A want_judged=(
  [h100]='ib.hca_present=pass[8] ib.port_rate=pass[400 Gb/s]'
  [a100]='ib.hca_present=warn[4] ib.port_rate=pass[200 Gb/s]'
  [none]='ib.hca_present=pass[] ib.port_rate=pass[]'
)
declare -A want_pool=([h100]=h100-8x400 [a100]=a100-4x200 [none]=-)
declare -A want_log=([h100]='node pool h100-8x400: its expect applies'
                     [a100]='node pool a100-4x200: its expect applies'
                     [none]='node pools-node-none is in no pool: the top-level expect applies')
bad=0
for n in "${names[@]}"; do
  got="$(judged "$n")"; label="$(pool_label "$n")"
  echo "pools-node-$n (${type[$n]}): $got; pool label: ${label:-<no verdict>}"
  [ "$got" = "${want_judged[$n]}" ] || { echo "  expected: ${want_judged[$n]}"; bad=1; }
  [ "$label" = "${want_pool[$n]}" ] || { echo "  expected pool label: ${want_pool[$n]}"; bad=1; }
  grep -qF "${want_log[$n]}" "$run/agent-$n.log" || { echo "  log lacks: ${want_log[$n]}"; bad=1; }
  if grep -E 'node pools ignored|HTTP 40[13]' "$run/agent-$n.log"; then bad=1; fi
done
[ "$bad" = 0 ] || fail "an agent did not judge its node by its pool"
echo "each agent judged by its node's pool, read from the API server"
