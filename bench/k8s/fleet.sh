#!/usr/bin/env bash
# API load of nccl-triage on a simulated GPU fleet: the real kube-apiserver and etcd of
# tests/k8s/cluster.sh, N kwok nodes in two node pools (p5.48xlarge and p4d.24xlarge, 8
# nvidia.com/gpu each) with one 8-GPU job pod per node, the chart installed by helm, and a sample
# of real agents (nccl-triage-server agent, each told it is one kwok node and given a token bound
# to an agent pod on that node, as the DaemonSet's pods are). kwok makes the nodes Ready and the
# pods Running and is stopped before the measurement, so the API server's own
# apiserver_request_total counts the agents' requests alone (less the bench's metric scrapes).
#   bench/k8s/fleet.sh [--nodes 512,4096] [--agents 16] [--seconds 320] [--build build]
# Prints, per fleet size: requests by verb and resource in the window, requests/s per agent, and
# the fleet-wide rate extrapolated to N agents (per 100 nodes). The agents run with the chart's
# defaults plus the node condition and events (agent.interval_seconds 60, heartbeat 5 min): a
# window of 320 s holds one heartbeat per agent.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sizes=512,4096 agents=16 seconds=320 build="$root/build"
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) sizes="$2"; shift 2 ;; --agents) agents="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;; --build) build="$2"; shift 2 ;;
    *) echo "usage: fleet.sh [--nodes N,...] [--agents A] [--seconds S] [--build DIR]" >&2; exit 2 ;;
  esac
done
server="$build/nccl-triage-server"
[ -x "$server" ] || { echo "fleet: $server missing (make build)" >&2; exit 1; }
tools="$("$root/scripts/k8s-tools.sh")"
# kwok's "fast" stages (node Ready at once, pods Running at once) from the pinned kwok module.
kwok_dir="$(cd "$root/tools/k8s" && GOFLAGS=-mod=readonly "$root/scripts/go.sh" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
stages="$(mktemp -d)"
cp "$kwok_dir"/kustomize/stage/node/fast/node-initialize.yaml "$kwok_dir"/kustomize/stage/pod/fast/pod-ready.yaml "$stages/"
work="$(mktemp -d)"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
            "$root/tests/k8s/cluster.sh" stop "$work" >/dev/null 2>&1 || true; rm -rf "$work" "$stages"; }
trap cleanup EXIT
k() { "$tools/bin/kubectl" --kubeconfig "$work/kubeconfig" "$@"; }

# The API server's request counters by verb and resource (non-resource URLs left out: the scrape).
counters() {
  k get --raw /metrics | awk '/^apiserver_request_total\{/ {
      match($0, /resource="[^"]*"/); r = substr($0, RSTART + 10, RLENGTH - 11)
      match($0, /subresource="[^"]*"/); s = RLENGTH > 0 ? substr($0, RSTART + 13, RLENGTH - 14) : ""
      match($0, /verb="[^"]*"/); v = substr($0, RSTART + 6, RLENGTH - 7)
      if (r == "") next
      key = v " " r (s != "" ? "/" s : ""); n[key] += $NF }
    END { for (key in n) print key, n[key] }' | sort
}

for n in ${sizes//,/ }; do
  echo "== $n nodes, $agents agents, $seconds s"
  "$root/tests/k8s/cluster.sh" start "$tools" "$work" >/dev/null
  . "$work/env"
  k create ns nccl-triage >/dev/null; k create ns jobs >/dev/null
  k create serviceaccount default -n jobs >/dev/null
  "$tools/bin/helm" install nccl-triage "$root/helm/nccl-triage" -n nccl-triage --kubeconfig "$work/kubeconfig" \
    --set config.agent.node_condition=true --set config.agent.events=true >/dev/null
  start=$SECONDS
  # Nodes of two pools and one job pod per node, applied in chunks of 512.
  for ((first = 0; first < n; first += 512)); do
    for ((i = first; i < n && i < first + 512; i++)); do
      if ((i % 2)); then pool=a100 type=p4d.24xlarge; else pool=h100 type=p5.48xlarge; fi
      cat <<YAML
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-$i
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {type: kwok, nvidia.com/gpu.present: "true", node.kubernetes.io/instance-type: $type, pool: $pool}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  capacity: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
  allocatable: {cpu: "96", memory: 1Ti, pods: "110", nvidia.com/gpu: "8"}
---
apiVersion: v1
kind: Pod
metadata: {name: train-$i, namespace: jobs, labels: {job-name: train}}
spec:
  nodeName: gpu-$i
  automountServiceAccountToken: false
  tolerations: [{operator: Exists}]
  containers: [{name: trainer, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: "8"}}}]
YAML
    done | k apply -f - >/dev/null
  done
  # The agents' own pods (for their bound tokens) on the first nodes.
  for ((i = 0; i < agents; i++)); do
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: agent-$i, namespace: nccl-triage}
spec:
  nodeName: gpu-$i
  serviceAccountName: nccl-triage-agent
  automountServiceAccountToken: false
  tolerations: [{operator: Exists}]
  containers: [{name: agent, image: nccl-triage:0.1.0}]
YAML
  done | k apply -f - >/dev/null
  "$tools/bin/kwok" --kubeconfig "$work/kubeconfig" --manage-nodes-with-label-selector type=kwok \
    --config "$stages/node-initialize.yaml" --config "$stages/pod-ready.yaml" >"$work/kwok.log" 2>&1 &
  kwok_pid=$!; pids+=("$kwok_pid")
  for _ in $(seq 1 600); do
    running="$(k get pods -n jobs --field-selector status.phase=Running --no-headers 2>/dev/null | wc -l)"
    [ "$running" -ge "$n" ] && break; sleep 1
  done
  ready="$(k get nodes --no-headers | grep -c ' Ready ' || true)"
  echo "fleet up in $((SECONDS - start)) s: $ready of $n nodes Ready, $running of $n job pods Running (kwok)"
  kill "$kwok_pid"; wait "$kwok_pid" 2>/dev/null || true

  cat >"$work/agent.yaml" <<YAML
agent:
  listen: 127.0.0.1:0
  node_condition: true
  events: true
YAML
  agent_pids=()
  for ((i = 0; i < agents; i++)); do
    sa="$work/sa-$i"; mkdir -p "$sa"; cp "$work/ca.crt" "$sa/"; echo nccl-triage >"$sa/namespace"
    k create token nccl-triage-agent -n nccl-triage --bound-object-kind Pod --bound-object-name "agent-$i" \
      --duration 2h >"$sa/token"
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$sa" \
    NODE_NAME="gpu-$i" POD_NAME="agent-$i" POD_NAMESPACE=nccl-triage \
      nice "$server" agent --standalone --config "$work/agent.yaml" --root "$build/fixtures/dgx-h100" \
      >"$work/agent-$i.log" 2>&1 &
    agent_pids+=($!); pids+=($!)
  done
  sleep 90   # start-up: first cycle, annotations, node conditions
  before="$(counters)"
  sleep "$seconds"
  after="$(counters)"
  for p in "${agent_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # The agents were live: their nodes carry the condition, and the API refused them nothing.
  published="$(k get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="NcclFabricReady")].type}{"\n"}{end}' | grep -c NcclFabricReady || true)"
  refused="$(cat "$work"/agent-*.log | grep -c 'HTTP 4[0-9][0-9]' || true)"
  echo "  agents live: $published of $agents nodes carry NcclFabricReady; $refused refusals in their logs"
  # The agents' resources: pods, nodes (and nodes/status), events; nothing else touches them once
  # kwok is stopped (no kubelet, no controllers), except the API server's own informers, which
  # re-open WATCHes (the agents' client never watches). Other rows are the API server's own loops.
  total=0 lists=0
  while read -r verb res count; do
    was="$(awk -v k="$verb $res" '$1 " " $2 == k { print $3 }' <<<"$before")"
    d=$((${count%.*} - ${was:-0}))
    [ "$d" -gt 0 ] || continue
    case "$verb $res" in
      "WATCH "*) echo "  ($verb $res: $d, the API server's own)" ;;
      *" pods"|*" pods/"*|*" nodes"|*" nodes/"*|*" events") echo "  $verb $res: $d"; total=$((total + d))
                                        [ "$verb $res" = "LIST pods" ] && lists=$d ;;
      *) echo "  ($verb $res: $d, the API server's own)" ;;
    esac
  done <<<"$after"
  echo "  LIST pods in the window: $lists"
  awk -v t="$total" -v s="$seconds" -v a="$agents" -v n="$n" 'BEGIN {
    per = t / s / a
    printf "  %d requests in %d s from %d agents: %.5f req/s per agent; fleet of %d: %.3f req/s (%.4f per 100 nodes)\n",
           t, s, a, per, n, per * n, per * 100 }'
  "$root/tests/k8s/cluster.sh" stop "$work" >/dev/null
  rm -rf "$work"/etcd-data
done
