#!/usr/bin/env bash
# Leader failover in the middle of remediation's work, against the real API server of
# kube_prepare.sh: two coordinator processes with leader election and remediation in taint mode
# (the chart's coordinator token, so only the chart's RBAC lets them hold the Lease, patch nodes
# and keep the state ConfigMap), three agent processes that run real probes (the fake NCCL and
# CUDA of the build, TCP over loopback) behind a Service that follows the leader label
# (service_proxy.py, replicas.sh), one of them on a node whose probe HCA is down. Every call of
# the replicas to the API server goes through fault_proxy.py, which holds the first patch that
# taints that node. Nothing waits on a sleep: each kill lands where a hook holds the leader.
#   1. kill -9 during a taint: the leader's patch is held in flight (sent, not yet at the API
#      server) and the leader is killed. The other replica takes the Lease and the label (the dead
#      leader's pod keeps its own until the new leader takes it off), has the agents back,
#      resumes the suspected fault from the state ConfigMap, confirms it and taints the node
#      once. The dead leader's patch then reaches the API server: it carries the resourceVersion
#      its sender read, so it is refused with 409 Conflict (fencing by resourceVersion), and the
#      node carries one taint and one event.
#   2. kill -9 during a sweep: a third replica stands by; the leader's next sweep is held after
#      its first round of probes (the coordinator's test hook, $NCCL_TRIAGE_TEST_HOLD_DIR) and the
#      leader is killed there. The third replica takes over with the fault still confirmed (the
#      ConfigMap), its first sweep confirms it again, and the node keeps its one taint: no second
#      taint, no second event, no release.
# Prints the failover, label and reconnect times of both kills ("FIGURES ..."), never asserts them:
# deadlines are generous, for a loaded machine (bench/k8s/leader_failover.sh collects them).
# With "answer" as the last argument, step 1 holds the patch's answer instead: the taint is on
# the node when the leader dies, without its event (left in nccl-triage.io/pending-event). The
# new leader then finds the node tainted and marked: it posts the event and taints nothing.
# Usage: failover_process.sh TOOLS WORK SERVER_BINARY FIXTURES FAKES SERVICE_PROXY FAULT_PROXY
#                            [request|answer]
#   FIXTURES: the fixture roots of the build (dgx-a100 is used); FAKES: the folder holding
#   lib/libnccl.so.2 and lib/libcuda.so.1 of the fake NCCL and CUDA.
# Environment: LEASE_DURATION RENEW_DEADLINE RETRY_PERIOD (seconds; default 15 10 2, client-go's).
set -euo pipefail
tools="$1"; work="$2"; server="$3"; fixtures="$4"; fakes="$5"; service_proxy="$6"; fault_proxy="$7"
held="${8:-request}"
hold_answer=(); [ "$held" = answer ] && hold_answer=(--hold-answer)
lease_duration="${LEASE_DURATION:-15}" renew_deadline="${RENEW_DEADLINE:-10}" retry="${RETRY_PERIOD:-2}"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
. "$work/env"
run="$work/failover-process"; rm -rf "$run"; mkdir -p "$run/hold"
ns=kt lease=nccl-triage-coordinator state=kt-nccl-triage-state
nodes=(failover-1 failover-2 failover-3) faulty=failover-3
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  k delete lease -n "$ns" "$lease" --ignore-not-found >/dev/null 2>&1 || true
  k delete configmap -n "$ns" "$state" --ignore-not-found >/dev/null 2>&1 || true
  k delete node "${nodes[@]}" --ignore-not-found >/dev/null 2>&1 || true
  k delete pods -n "$ns" coord-a coord-b coord-c --grace-period=0 --force --ignore-not-found \
    >/dev/null 2>&1 || true
  for n in "${nodes[@]}"; do
    k delete events -n default --field-selector "involvedObject.name=$n" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$run"/coord-*.log "$run/fault-proxy.log" "$run/service-proxy.log"; do echo "--- $f"; tail -30 "$f" || true; done
  for f in "$run"/agent-*.log; do echo "--- $f"; tail -8 "$f" || true; done
  exit 1
}
. "$(dirname "$0")/replicas.sh"
cleanup

# The nodes (plain Node objects of a pool of their own) and the roots of their agents: a DGX
# A100 each, the faulty one with mlx5_0 (the HCA the probes use) down.
for n in "${nodes[@]}"; do
  printf -- '---\napiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels: {pool.example/failover: "yes"}\n' "$n"
done | k apply -f - >/dev/null
for n in "${nodes[@]}"; do cp -a "$fixtures/dgx-a100" "$run/root-$n"; done
port="$run/root-$faulty/sys/class/infiniband/mlx5_0/ports/1"
[ -f "$port/state" ] || fail "no $port/state in the fixture"
echo "1: DOWN" >"$port/state"; echo "3: Disabled" >"$port/phys_state"

python3 "$fault_proxy" "$work" "$run/api.port" --hold-patch "$faulty" --hold-dir "$run/hold" \
  "${hold_answer[@]}" >"$run/fault-proxy.log" 2>&1 &
pids+=($!)
wait_for 30 "the API proxy did not start" test -s "$run/api.port"
api_port="$(cat "$run/api.port")"

shared="failover-$$-$RANDOM"
cat >"$run/coordinator.yaml" <<YAML
coordinator:
  sweep_interval_seconds: 2
  hold_down: 2
  verify_node_identity: false
  leader_election: true
  lease_duration_seconds: $lease_duration
  renew_deadline_seconds: $renew_deadline
  retry_period_seconds: $retry
  heartbeat_timeout_seconds: 60
remediation:
  mode: taint
  max_nodes: 2
  max_percent: 50
  pool_label: pool.example/failover
  recover_after_seconds: 3600
probe:
  size_bytes: 65536
  timeout_seconds: 60
YAML
coordinator() {  # NAME: a replica, as its pod runs it, whose API server is the fault proxy
  replica_start "$1" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$api_port" \
    NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$work/kube/coordinator" NCCL_TRIAGE_TOKEN="$shared" \
    NCCL_TRIAGE_STATE_CONFIGMAP="$state" NCCL_TRIAGE_TEST_HOLD_DIR="$run/hold"
  endpoint "$1" >>"$run/endpoints"  # it joins the Service
}
has_agents() { [ "$(connected "$1")" = "${nodes[*]}" ]; }
# Our taints on a node, one "key=value" a line.
our_taints() {
  k get node "$1" -o json | python3 -c '
import json, sys
for t in json.load(sys.stdin)["spec"].get("taints") or []:
    if t["key"].startswith("nccl-triage.io/"):
        print("%s=%s" % (t["key"], t.get("value", "")))'
}
tainted_once() {  # one taint of ours on the faulty node: nccl-triage.io/fault=<class>
  local t; t="$(our_taints "$faulty")"
  [ "$(wc -l <<<"$t")" = 1 ] && [[ "$t" == nccl-triage.io/fault=* ]]
}
no_pending_event() {
  [ -z "$(k get node "$faulty" -o jsonpath='{.metadata.annotations.nccl-triage\.io/pending-event}')" ]
}
events() {  # REASON: how many events of that reason were posted about the faulty node
  k get events -n default --field-selector "reason=$1,involvedObject.name=$faulty" -o name |
    wc -l | tr -d ' '
}
confirmed_on() {  # NAME: its /status lists a confirmed fault of the faulty node
  status "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)
ok = any(f.get("confirmed") and sys.argv[1] in (f.get("nodes") or []) for f in s.get("faults", []))
sys.exit(0 if ok else 1)' "$faulty" 2>/dev/null
}
sweeps_done() {  # NAME: how many sweeps it finished (its log)
  grep -c 'coordinator: sweep [0-9]* done' "$run/$1.log" || true
}

coordinator coord-a
coordinator coord-b
service_start "$service_proxy"
for n in "${nodes[@]}"; do
  agent_config "$run/agent-$n.yaml" <<YAML
probe:
  nccl_library_paths: ["$fakes/lib/libnccl.so.2"]
  cuda_library_paths: ["$fakes/lib/libcuda.so.1"]
  size_bytes: 65536
  warmup_iterations: 1
  iterations: 2
  timeout_seconds: 60
  socket_ifname: lo
  ib_hca: mlx5_0
  env_allowlist: [NCCL_FAKE_ROOT, NCCL_HOSTID]
YAML
  NCCL_TRIAGE_TOKEN="$shared" NCCL_FAKE_ROOT="$run/root-$n" NCCL_HOSTID="$n" \
    "$server" agent --config "$run/agent-$n.yaml" --root "$run/root-$n" --node "$n" \
    --coordinator "$service" >"$run/agent-$n.log" 2>&1 &
  pids+=($!)
done
has_holder() { [ -n "$(holder)" ]; }
wait_for 120 "no replica took the Lease" has_holder
first="$(holder)"
wait_for 180 "the agents did not connect to $first" has_agents "$first"
echo "leader $first with agents ${nodes[*]}"

# 1. kill -9 during a taint. The sweep that confirms the fault taints the node: held in flight
# (or, "answer", done but its answer held).
wait_for 400 "no patch tainting $faulty came (no fault confirmed?)" test -s "$run/hold/held"
[ "$(holder)" = "$first" ] || fail "the patch was held while $(holder) leads, not $first"
[ "$(events NcclTriageTainted)" = 0 ] || fail "an event before the patch"
if [ "$held" = answer ]; then
  tainted_once || fail "the patch whose answer is held did not taint $faulty"
  no_pending_event && fail "the patch did not leave its event in nccl-triage.io/pending-event"
fi
killed="$(now)"
kill -9 "${pid[$first]}"
echo "killed $first (pid ${pid[$first]}) with its taint of $faulty in flight ($held held)"
wait_for 180 "no replica took the Lease over from $first" new_holder "$first"
failover1="$(since "$killed")"
second="$(holder)"
wait_for 60 "$second's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$second"
ready1="$(since "$killed")"
wait_for 180 "the agents did not reconnect to $second" has_agents "$second"
reconnect1="$(since "$killed")"
wait_for 400 "$second did not taint $faulty" tainted_once
wait_for 400 "$second did not post the taint's event" no_pending_event
tainted1="$(since "$killed")"
# The dead leader's patch reaches the API server now (or its answer comes back to nobody).
touch "$run/hold/release"
wait_for 60 "the held patch was not forwarded" test -s "$run/hold/released"
late="$(head -1 "$run/hold/released")"
if [ "$held" = request ]; then
  [ "$late" = 409 ] ||
    fail "the dead leader's patch was answered $late, not 409: $(cat "$run/hold/released")"
else
  # The new leader found the node tainted and marked: it only posted the event.
  taints="$(curl -s --max-time 5 "http://127.0.0.1:${http[$second]}/metrics" |
    sed -n 's/^nccl_triage_remediation_actions_total{action="taint"[^}]*result="ok"} \([0-9]*\).*/\1/p')"
  [ -z "$taints" ] || [ "$taints" = 0 ] || fail "$second tainted $taints node(s) again"
fi
tainted_once || fail "$faulty carries $(our_taints "$faulty" | tr '\n' ' ')"
[ "$(events NcclTriageTainted)" = 1 ] || fail "$(events NcclTriageTainted) NcclTriageTainted events"
for n in failover-1 failover-2; do
  [ -z "$(our_taints "$n")" ] || fail "$n is tainted: $(our_taints "$n")"
done
echo "kill -9 during the taint ($held held): Lease taken by $second after ${failover1} s," \
  "labelled ${ready1} s, agents back ${reconnect1} s, $faulty tainted once and its event posted" \
  "${tainted1} s after the kill; the dead leader's patch answered $late"

# 2. kill -9 during a sweep. A third replica stands by.
coordinator coord-c
wait_for 60 "coord-c is not a ready standby" is_code coord-c /readyz 200
[ "$(role coord-c)" = standby ] || fail "coord-c is $(role coord-c)"
touch "$run/hold/hold-sweep"
wait_for 300 "$second's sweep did not reach the hold" test -s "$run/hold/held-sweep"
held_pid="$(head -1 "$run/hold/held-sweep")"
[ "$held_pid" = "${pid[$second]}" ] || fail "the held sweep is pid $held_pid's, not $second's"
killed="$(now)"
kill -9 "${pid[$second]}"
rm -f "$run/hold/hold-sweep"
echo "killed $second (pid ${pid[$second]}) in the middle of a sweep"
wait_for 180 "no replica took the Lease over from $second" new_holder "$second"
failover2="$(since "$killed")"
third="$(holder)"
[ "$third" = coord-c ] || fail "the Lease went to $third"
wait_for 60 "$third's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$third"
ready2="$(since "$killed")"
wait_for 180 "the agents did not reconnect to $third" has_agents "$third"
reconnect2="$(since "$killed")"
before="$(sweeps_done "$third")"
more_sweeps() { [ "$(sweeps_done "$third")" -ge $((before + 2)) ]; }
wait_for 400 "$third did not finish two sweeps" more_sweeps
confirmed_on "$third" || fail "$third does not have the fault of $faulty confirmed"
tainted_once || fail "$faulty carries $(our_taints "$faulty" | tr '\n' ' ')"
[ "$(events NcclTriageTainted)" = 1 ] || fail "$(events NcclTriageTainted) NcclTriageTainted events"
[ "$(events NcclTriageReleased)" = 0 ] || fail "$faulty was released"
taints="$(curl -s --max-time 5 "http://127.0.0.1:${http[$third]}/metrics" |
  sed -n 's/^nccl_triage_remediation_actions_total{action="taint"[^}]*result="ok"} \([0-9]*\).*/\1/p')"
[ -z "$taints" ] || [ "$taints" = 0 ] || fail "$third tainted $taints node(s) again"
echo "kill -9 during a sweep: Lease taken by $third after ${failover2} s, labelled ${ready2} s," \
  "agents back ${reconnect2} s; the fault stays confirmed and $faulty keeps its one taint"
echo "FIGURES held=$held taint_failover_s=$failover1 taint_labelled_s=$ready1 taint_reconnect_s=$reconnect1" \
  "retaint_s=$tainted1 sweep_failover_s=$failover2 sweep_labelled_s=$ready2" \
  "sweep_reconnect_s=$reconnect2 lease_duration_s=$lease_duration"
if grep -E 'HTTP 40[13]' "$run"/coord-*.log; then fail "the API server refused a call"; fi
echo "failover during a taint and during a sweep: no taint twice, no fault lost, the dead" \
  "leader's write fenced"
