#!/usr/bin/env bash
# API load of nccl-triage on a simulated GPU fleet: the real kube-apiserver and etcd of
# tests/k8s/cluster.sh, N kwok nodes in two node pools (p5.48xlarge and p4d.24xlarge, 8
# nvidia.com/gpu each) with one 8-GPU job pod per node, the chart installed by helm, the real
# coordinator (nccl-triage-server coordinator with verify_node_identity, holding a token of the
# chart's coordinator ServiceAccount) and a sample of real agents (nccl-triage-server agent, each
# told it is one kwok node and given API and identity tokens bound to an agent pod on that node,
# as the DaemonSet's pods are), each in a session with the coordinator. kwok makes the nodes
# Ready and the pods Running and is stopped before the measurement, so the API server's own
# apiserver_request_total counts the agents' and the coordinator's requests alone (less the
# bench's metric scrapes).
#   bench/k8s/fleet.sh [--nodes 512,4096] [--agents 16] [--seconds 320] [--restart-seconds 120]
#                      [--build build] [--remediation off|dry-run|taint|cordon] [--sweep-seconds S]
# Three windows per fleet size: the steady state (--seconds), the first --restart-seconds after
# the coordinator is killed (SIGKILL) and started again (every agent reconnects, every identity
# token is reviewed again), and the steady state after that (--seconds). Prints, per window:
# requests by verb and resource, requests/s per agent, and the fleet-wide rate extrapolated to N
# agents (per 100 nodes). The agents run with the chart's defaults plus the node condition and
# events (agent.interval_seconds 60, heartbeat 5 min): a window of 320 s holds one heartbeat per
# agent. The coordinator's sweeps are pushed out of the windows (they run probes and call no API).
# With --remediation other than off, the chart is installed in that mode (its RBAC), the
# coordinator keeps its state in the chart's ConfigMap and sweeps every --sweep-seconds (default
# 60): each sweep is followed by a remediation step, which reads every node, and the figures then
# count the coordinator's node reads (LIST and WATCH nodes, configmaps) and its bytes: what the
# API server answered to node LISTs and GETs (apiserver_response_sizes), the Node events it sent
# to watchers (apiserver_watch_events_sizes), and what the coordinator process read from its
# sockets and files (rchar of /proc/<pid>/io: the TLS bytes from the API server, plus the agents'
# gRPC and the token file it re-reads before every request).
# Everything runs under nice; run the whole script niced on a shared machine.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
sizes=512,4096 agents=16 seconds=320 restart_seconds=120 build="$root/build" remediation=off sweep=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) sizes="$2"; shift 2 ;; --agents) agents="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;; --restart-seconds) restart_seconds="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --remediation) remediation="$2"; shift 2 ;; --sweep-seconds) sweep="$2"; shift 2 ;;
    *) echo "usage: fleet.sh [--nodes N,...] [--agents A] [--seconds S] [--restart-seconds S] [--build DIR]" \
            "[--remediation MODE] [--sweep-seconds S]" >&2
       exit 2 ;;
  esac
done
case "$remediation" in off|dry-run|taint|cordon) ;; *) echo "fleet: --remediation $remediation?" >&2; exit 2 ;; esac
if [ -z "$sweep" ]; then if [ "$remediation" = off ]; then sweep=1000000; else sweep=60; fi; fi
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

# A free port below the ephemeral range (a listener the agents reach again after a restart).
free_port() {
  python3 -c 'import random, socket
for _ in range(200):
    p = random.randrange(20000, 32000); s = socket.socket()
    try: s.bind(("127.0.0.1", p)); print(p); break
    except OSError: pass
    finally: s.close()'
}

# Bytes: the API server's response sizes of node LISTs and GETs, the Node watch events it sent, and
# what the coordinator process read (rchar), as "name value" lines.
bytes_now() {
  k get --raw /metrics | awk '
    /^apiserver_response_sizes_sum\{/ && /resource="nodes"/ && /verb="(LIST|GET)"/ { r += $NF }
    /^apiserver_watch_events_sizes_sum\{/ && (/kind="Node"/ || /resource="nodes"/) { w += $NF }
    END { printf "list_get %d\nwatch_events %d\n", r, w }'
  awk '/^rchar:/ { print "coordinator_rchar", $2 }' "/proc/$coordinator_pid/io" 2>/dev/null || echo "coordinator_rchar 0"
}
bytes_window() {  # BEFORE AFTER SECONDS
  awk -v s="$3" 'NR == FNR { b[$1] = $2; next } { d = $2 - b[$1]
      printf "  %s: %d bytes in %d s, %.0f bytes/min\n", $1, d, s, d * 60 / s }' <(echo "$1") <(echo "$2")
}

# One window's figures from two readings of counters(): the requests of the agents (pods, nodes,
# nodes/status, events) and the coordinator (tokenreviews; GET pods only before Kubernetes 1.30);
# nothing else touches those resources once kwok is stopped (no kubelet, no controllers), except
# the API server's own informers, which re-open WATCHes (neither client ever watches). Other rows
# are the API server's own loops.
window() {  # LABEL BEFORE AFTER SECONDS
  local total=0 lists=0 reviews=0 coord=0 verb res count was d
  echo "  -- $1"
  while read -r verb res count; do
    was="$(awk -v k="$verb $res" '$1 " " $2 == k { print $3 }' <<<"$2")"
    d=$((${count%.*} - ${was:-0}))
    [ "$d" -gt 0 ] || continue
    case "$verb $res" in
      "WATCH nodes")  # the coordinator's node watch (counted when each watch ends)
        echo "  $verb $res: $d"; total=$((total + d)); coord=$((coord + d)) ;;
      "WATCH "*) echo "  ($verb $res: $d, the API server's own)" ;;
      *" pods"|*" pods/"*|*" nodes"|*" nodes/"*|*" events"|*" tokenreviews"|*" configmaps")
        echo "  $verb $res: $d"; total=$((total + d))
        [ "$verb $res" = "LIST pods" ] && lists=$d
        [ "$res" = tokenreviews ] && reviews=$d
        case "$verb $res" in "LIST nodes"|"GET nodes"|*" configmaps") coord=$((coord + d)) ;; esac ;;
      *) echo "  ($verb $res: $d, the API server's own)" ;;
    esac
  done <<<"$3"
  echo "  LIST pods in the window: $lists; TokenReviews: $reviews; the coordinator's node and state reads: $coord"
  awk -v t="$total" -v s="$4" -v a="$agents" -v n="$n" 'BEGIN {
    per = t / s / a
    printf "  %d requests in %d s for %d agents: %.5f req/s per agent; fleet of %d: %.3f req/s (%.4f per 100 nodes)\n",
           t, s, a, per, n, per * n, per * 100 }'
  # The coordinator's reads are the fleet's already (one coordinator): not extrapolated.
  awk -v c="$coord" -v s="$4" -v n="$n" 'BEGIN {
    printf "  coordinator: %d node/state reads in %d s: %.4f req/s for the fleet of %d (%.5f per 100 nodes)\n",
           c, s, c / s, n, c / s * 100 / n }'
}

for n in ${sizes//,/ }; do
  echo "== $n nodes, $agents agents, $seconds s, remediation $remediation (sweeps every $sweep s)"
  "$root/tests/k8s/cluster.sh" start "$tools" "$work" >/dev/null
  . "$work/env"
  k create ns nccl-triage >/dev/null; k create ns jobs >/dev/null
  k create serviceaccount default -n jobs >/dev/null
  "$tools/bin/helm" install nccl-triage "$root/helm/nccl-triage" -n nccl-triage --kubeconfig "$work/kubeconfig" \
    --set config.agent.node_condition=true --set config.agent.events=true \
    --set config.remediation.mode="$remediation" >/dev/null
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

  # The coordinator, at fixed ports (the agents reconnect to the same address after its restart):
  # the chart's coordinator ServiceAccount token, node identities checked.
  cport="$(free_port)"; hport="$(free_port)"; shared="fleet-$$-$RANDOM"
  csa="$work/sa-coordinator"; mkdir -p "$csa"; cp "$work/ca.crt" "$csa/"; echo nccl-triage >"$csa/namespace"
  k create token nccl-triage-coordinator -n nccl-triage --duration 2h >"$csa/token"
  cat >"$work/coordinator.yaml" <<YAML
coordinator:
  sweep_interval_seconds: $sweep
  verify_node_identity: true
  agent_service_account: nccl-triage:nccl-triage-agent
remediation:
  mode: $remediation
YAML
  start_coordinator() {
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$csa" \
    NCCL_TRIAGE_TOKEN="$shared" POD_NAMESPACE=nccl-triage \
    NCCL_TRIAGE_STATE_CONFIGMAP="$([ "$remediation" = off ] || echo nccl-triage-state)" \
    nice "$server" coordinator --config "$work/coordinator.yaml" \
      --listen "127.0.0.1:$cport" --http-listen "127.0.0.1:$hport" >>"$work/coordinator.log" 2>&1 &
    coordinator_pid=$!; pids+=("$coordinator_pid")
    for _ in $(seq 1 300); do
      curl -sf --max-time 5 "http://127.0.0.1:$hport/readyz" >/dev/null 2>&1 && return 0
      kill -0 "$coordinator_pid" 2>/dev/null || break; sleep 0.2
    done
    echo "fleet: the coordinator did not start:" >&2; tail -5 "$work/coordinator.log" >&2; exit 1
  }
  connected() {  # agents in a session with the coordinator now
    curl -sf --max-time 10 "http://127.0.0.1:$hport/status" |
      python3 -c 'import json,sys; print(sum(1 for a in json.load(sys.stdin)["agents"] if a["connected"]))' 2>/dev/null ||
      echo 0
  }
  : >"$work/coordinator.log"
  start_coordinator

  cat >"$work/agent.yaml" <<YAML
agent:
  listen: 127.0.0.1:0
  node_condition: true
  events: true
  coordinator: 127.0.0.1:$cport
  identity_token_file: identity-token
YAML
  agent_pids=()
  for ((i = 0; i < agents; i++)); do
    sa="$work/sa-$i"; mkdir -p "$sa"; cp "$work/ca.crt" "$sa/"; echo nccl-triage >"$sa/namespace"
    for aud in "" nccl-triage; do
      k create token nccl-triage-agent -n nccl-triage --bound-object-kind Pod --bound-object-name "agent-$i" \
        --duration 2h ${aud:+--audience "$aud"} >"$sa/${aud:+identity-}token"
    done
    sed "s|identity_token_file: identity-token|identity_token_file: $sa/identity-token|" "$work/agent.yaml" >"$sa/agent.yaml"
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$sa" \
    NODE_NAME="gpu-$i" POD_NAME="agent-$i" POD_NAMESPACE=nccl-triage NCCL_TRIAGE_TOKEN="$shared" \
      nice "$server" agent --config "$sa/agent.yaml" --root "$build/fixtures/dgx-h100" \
      >"$work/agent-$i.log" 2>&1 &
    agent_pids+=($!); pids+=($!)
  done
  sleep 90   # start-up: first cycle, annotations, node conditions, sessions
  echo "  agents in a session with the coordinator: $(connected) of $agents"

  # Window 1: the steady state.
  before="$(counters)"; bb="$(bytes_now)"; sleep "$seconds"; after="$(counters)"; ba="$(bytes_now)"
  window "steady state, $seconds s" "$before" "$after" "$seconds"
  bytes_window "$bb" "$ba" "$seconds"
  # Window 2: the coordinator killed and started again; the first minutes.
  kill -9 "$coordinator_pid"; wait "$coordinator_pid" 2>/dev/null || true
  before="$(counters)"; restarted=$SECONDS
  start_coordinator
  back=""
  while [ $((SECONDS - restarted)) -lt "$restart_seconds" ]; do
    if [ -z "$back" ] && [ "$(connected)" -ge "$agents" ]; then back=$((SECONDS - restarted)); fi
    sleep 1
  done
  after="$(counters)"
  echo "  coordinator restarted (SIGKILL, then started again): all $agents agents back in ${back:-more than $restart_seconds} s"
  window "first $restart_seconds s after the coordinator's restart" "$before" "$after" "$restart_seconds"
  # Window 3: the steady state again.
  before="$(counters)"; bb="$(bytes_now)"; sleep "$seconds"; after="$(counters)"; ba="$(bytes_now)"
  window "steady state after the restart, $seconds s" "$before" "$after" "$seconds"
  bytes_window "$bb" "$ba" "$seconds"
  echo "  agents in a session with the coordinator: $(connected) of $agents"

  for p in "${agent_pids[@]}" "$coordinator_pid"; do kill "$p" 2>/dev/null || true; done
  # The agents were live: their nodes carry the condition, and the API refused them nothing.
  published="$(k get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="NcclFabricReady")].type}{"\n"}{end}' | grep -c NcclFabricReady || true)"
  refused="$(cat "$work"/agent-*.log "$work/coordinator.log" | grep -c 'HTTP 4[0-9][0-9]' || true)"
  rejected="$(grep -c 'rejected agent session' "$work/coordinator.log" || true)"
  echo "  agents live: $published of $agents nodes carry NcclFabricReady; $refused API refusals in the logs;" \
       "$rejected sessions rejected by the coordinator"
  "$root/tests/k8s/cluster.sh" stop "$work" >/dev/null
  rm -rf "$work"/etcd-data
done
