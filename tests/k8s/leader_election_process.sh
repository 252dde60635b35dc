#!/usr/bin/env bash
# Two coordinator processes with leader election (coordinator.leader_election) against the real
# API server of kube_prepare.sh, each with the chart's coordinator token (so only the chart's RBAC
# and admission policy let it hold the Lease and move the leader label) on a Pod object of its
# own, and two agents that reach them through a Service (service_proxy.py: connections go to a
# ready replica whose pod carries nccl-triage.io/coordinator-role=leader, as kube-proxy sends them
# to the endpoints of the chart's Service with two replicas):
#   1. one leads (the Lease names it, its pod alone carries the label), the other stands by: live
#      and ready (/readyz 200, so a PodDisruptionBudget counts it), its /status saying who leads;
#      the agents are connected to the leader; the coordinator's token may not label another pod
#      or change another label (the chart's admission policy);
#   2. kill -9 of the leader (its Pod keeps the label, as a container killed in its pod does): the
#      other takes the Lease over (leaseTransitions + 1), labels its pod, takes the label off the
#      dead leader's, and both agents reconnect to it;
#   3. a third replica starts as a standby; the leader is frozen (SIGSTOP) past the lease
#      duration: the standby takes over and moves the label; thawed (SIGCONT), the old leader says
#      it lost the Lease, stays ready but unlabelled, holds no agent and never leads again: fenced,
#      it starts no sweep and sends no write (its remediation is in dry-run; every write would go
#      through the fence, which it logs when it refuses one);
#   4. SIGTERM of the leader: its label goes before the Lease, and the standby takes both.
# The times are printed (failover, label moved, reconnect), never asserted: deadlines are
# generous, for a loaded machine; bench/k8s/leader_failover.sh runs it with client-go's default
# timings.
# Usage: leader_election_process.sh TOOLS WORK SERVER_BINARY FIXTURE_ROOT PROXY
# Environment: LEASE_DURATION RENEW_DEADLINE RETRY_PERIOD (seconds; default 8 6 2).
set -euo pipefail
tools="$1"; work="$2"; server="$3"; root="$4"; proxy="$5"
lease_duration="${LEASE_DURATION:-8}" renew_deadline="${RENEW_DEADLINE:-6}" retry="${RETRY_PERIOD:-2}"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
. "$work/env"
run="$work/leader-election-process"; rm -rf "$run"; mkdir -p "$run"
ns=kt lease=nccl-triage-coordinator
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  k delete lease -n "$ns" "$lease" --ignore-not-found >/dev/null 2>&1 || true
  k delete pods -n "$ns" coord-a coord-b coord-c --grace-period=0 --force --ignore-not-found \
    >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$run"/coord-*.log "$run"/service-proxy.log; do echo "--- $f"; tail -25 "$f" || true; done
  exit 1
}
. "$(dirname "$0")/replicas.sh"
cleanup

shared="leader-election-$$-$RANDOM"
cat >"$run/coordinator.yaml" <<YAML
coordinator:
  sweep_interval_seconds: 1000000
  verify_node_identity: false
  leader_election: true
  lease_duration_seconds: $lease_duration
  renew_deadline_seconds: $renew_deadline
  retry_period_seconds: $retry
remediation:
  mode: dry-run
YAML
coordinator() {  # NAME: a replica, as its pod runs it (POD_NAME, POD_NAMESPACE)
  replica_start "$1" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" \
    NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$work/kube/coordinator" NCCL_TRIAGE_TOKEN="$shared"
}
transitions() { k get lease -n "$ns" "$lease" -o jsonpath='{.spec.leaseTransitions}' 2>/dev/null || true; }
has_agents() { [ "$(connected "$1")" = "leader-node-1 leader-node-2" ]; }

# 1. Two replicas: one leader with the label, one live and ready standby.
coordinator coord-a
coordinator coord-b
has_holder() { [ -n "$(holder)" ]; }
wait_for 120 "no replica took the Lease" has_holder
first="$(holder)"; other=coord-a; [ "$first" = coord-a ] && other=coord-b
echo "leader: $first (transitions $(transitions)), standby: $other"
wait_for 60 "$first's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$first"
wait_for 60 "$first is not ready" is_code "$first" /readyz 200
wait_for 60 "$other is not ready as a standby" is_code "$other" /readyz 200
[ "$(code "$other" /livez)" = 200 ] || fail "$other is not live"
[ "$(role "$other")" = standby ] && [ "$(role "$first")" = leader ] ||
  fail "roles: $first $(role "$first"), $other $(role "$other")"
said="$(status "$other" | python3 -c 'import json, sys; e = json.load(sys.stdin)["leader_election"]
print(e["leader"], e["lease"], e["pod_labelled"])')"
[ "$said" = "$first $ns/$lease False" ] || fail "$other's /status says '$said'"
echo "$other: ready, /status: standby, the leader is $first"
# The coordinator's token moves that one label of its release's coordinator pods, nothing else
# (RBAC lets it patch any pod of $ns; the chart's admission policy narrows it).
label_as_coordinator() {  # POD KEY VALUE: the merge patch the coordinator sends, with its token
  k --token "$(cat "$work/kube/coordinator/token")" patch pod -n "$ns" "$1" --type merge \
    -p "{\"metadata\":{\"labels\":{\"$2\":\"$3\"}}}"
}
if label_as_coordinator agent-gpu-node-1 nccl-triage.io/coordinator-role leader \
    >"$run/denied.log" 2>&1; then
  fail "the coordinator's token labelled an agent's pod"
fi
grep -q "only the coordinator pods of their release" "$run/denied.log" || fail "$(cat "$run/denied.log")"
if label_as_coordinator "$other" other x >"$run/denied.log" 2>&1; then
  fail "the coordinator's token changed another label"
fi
grep -q "may change only the label" "$run/denied.log" || fail "$(cat "$run/denied.log")"
if label_as_coordinator "$other" nccl-triage.io/coordinator-role other >"$run/denied.log" 2>&1; then
  fail "the coordinator's token set the leader label to another value"
fi
grep -q "may change only the label" "$run/denied.log" || fail "$(cat "$run/denied.log")"
echo "the admission policy refused the coordinator's token 3 patches beyond the leader label"
gauge() { curl -s --max-time 5 "http://127.0.0.1:${http[$1]}/metrics" |
  sed -n 's/^nccl_triage_coordinator_leader \([0-9]*\).*/\1/p'; }
[ "$(gauge "$first")" = 1 ] && [ "$(gauge "$other")" = 0 ] ||
  fail "nccl_triage_coordinator_leader: $first $(gauge "$first"), $other $(gauge "$other")"

# The Service and the agents.
{ endpoint coord-a; endpoint coord-b; } >"$run/endpoints"
service_start "$proxy"
for n in 1 2; do
  agent_config "$run/agent-$n.yaml" </dev/null
  NCCL_TRIAGE_TOKEN="$shared" "$server" agent --config "$run/agent-$n.yaml" --root "$root" \
    --node "leader-node-$n" --coordinator "$service" >"$run/agent-$n.log" 2>&1 &
  pids+=($!)
done
wait_for 120 "the agents did not connect to $first" has_agents "$first"
[ -z "$(connected "$other")" ] || fail "$other holds agents: $(connected "$other")"
echo "agents connected to $first through the Service"

# 2. kill -9 of the leader: its pod keeps the label.
before="$(transitions)"
killed="$(now)"
kill -9 "${pid[$first]}"
wait_for 180 "$other did not take the Lease over" is_holder "$other"
failover="$(since "$killed")"
wait_for 60 "$other's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$other"
labelled_after="$(since "$killed")"
wait_for 180 "the agents did not reconnect to $other" has_agents "$other"
reconnect="$(since "$killed")"
after="$(transitions)"
[ "$after" -gt "$before" ] || fail "leaseTransitions $before -> $after"
grep -q "removed the leader label from $first" "$run/$other.log" ||
  fail "$other does not say it took the label off $first"
echo "failover: the Lease held by $other ${failover} s after kill -9 of $first (lease duration" \
  "${lease_duration} s); the label moved after ${labelled_after} s; agents reconnected after" \
  "${reconnect} s"
echo "FIGURES failover_s=$failover labelled_s=$labelled_after reconnect_s=$reconnect lease_duration_s=$lease_duration"

# 3. A frozen leader is fenced: it never acts again once thawed.
third=coord-c
coordinator "$third"
endpoint "$third" >>"$run/endpoints"   # it joins the Service
wait_for 60 "$third is not ready as a standby" is_code "$third" /readyz 200
[ "$(role "$third")" = standby ] || fail "$third is $(role "$third")"
leader="$other"
frozen="$(now)"
kill -STOP "${pid[$leader]}"
wait_for 180 "$third did not take the Lease from the frozen $leader" is_holder "$third"
wait_for 60 "$third's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$third"
echo "the Lease and the label passed from frozen $leader to $third after $(since "$frozen") s"
lines_before="$(wc -l <"$run/$leader.log")"
kill -CONT "${pid[$leader]}"
wait_for 60 "thawed $leader does not say it lost the Lease" \
  grep -qE 'lost the lease|not leading any more' "$run/$leader.log"
wait_for 60 "thawed $leader is not a standby" test "$(role "$leader")" = standby
[ "$(code "$leader" /readyz)" = 200 ] || fail "thawed $leader is not ready"
[ "$(labelled)" = "$third" ] || fail "labelled after the thaw: '$(labelled)'"
sleep "$((lease_duration + retry))"   # long enough to see it try (and fail) to lead again
tail -n +"$((lines_before + 1))" "$run/$leader.log" >"$run/thawed.log"
if grep -E 'coordinator: leading|acquired the lease|created the lease|sweep [0-9]+:' \
    "$run/thawed.log"; then
  fail "thawed $leader acted after it lost the Lease"
fi
[ -z "$(connected "$leader")" ] || fail "thawed $leader holds agents: $(connected "$leader")"
[ "$(holder)" = "$third" ] || fail "the Lease is held by $(holder), not $third"
wait_for 180 "the agents did not reconnect to $third" has_agents "$third"
[ "$(labelled)" = "$third" ] || fail "labelled after the thaw: '$(labelled)'"
echo "thawed $leader: lost the Lease, unlabelled, no agent, no sweep and no write after it;" \
  "the agents are with $third"
fenced="$(grep -c 'fenced: ' "$run/$leader.log" || true)"
echo "writes refused by the fence in $leader's log: $fenced"

# 4. SIGTERM of the leader: the label leaves its pod before it gives the Lease up, and the standby
# (the thawed one) takes both.
kill -TERM "${pid[$third]}"
wait "${pid[$third]}" 2>/dev/null || true
unlabelled_at="$(grep -n "removed the leader label from this pod $third" "$run/$third.log" | cut -d: -f1)"
released_at="$(grep -n "released the lease" "$run/$third.log" | cut -d: -f1)"
[ -n "$unlabelled_at" ] && [ -n "$released_at" ] && [ "$unlabelled_at" -lt "$released_at" ] ||
  fail "$third on SIGTERM: label removed at line '$unlabelled_at', Lease released at '$released_at'"
wait_for 60 "$leader did not take the Lease after SIGTERM of $third" is_holder "$leader"
wait_for 60 "$leader's pod alone is not labelled (labelled: '$(labelled)')" is_labelled "$leader"
wait_for 180 "the agents did not reconnect to $leader" has_agents "$leader"
echo "SIGTERM of $third: label off, then the Lease released; $leader leads, labelled, with the agents"

# Every call of the replicas to the API server was allowed by the chart's RBAC.
if grep -E 'HTTP 40[13]' "$run"/coord-*.log; then fail "the API server refused a call"; fi
echo "leader election: 3 handovers, no API refusal"
