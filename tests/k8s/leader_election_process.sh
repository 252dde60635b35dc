#!/usr/bin/env bash
# Two coordinator processes with leader election (coordinator.leader_election) against the real
# API server of kube_prepare.sh, each with the chart's coordinator token (so only the chart's RBAC
# lets it hold the Lease), and two agents that reach them through a Service (ready_proxy.py:
# connections go to the ready replica, as kube-proxy sends them to ready endpoints):
#   1. one leads (the Lease names it; /readyz 200), the other is live (/livez 200) but not ready
#      (/readyz 503 saying who holds the Lease), and the agents are connected to the leader;
#   2. kill -9 of the leader: the other takes the Lease over (leaseTransitions + 1), becomes ready,
#      and both agents reconnect to it;
#   3. a third replica starts as a follower; the leader is frozen (SIGSTOP) past the lease
#      duration: the follower takes over; thawed (SIGCONT), the old leader says it lost the Lease,
#      is not ready, holds no agent and never leads again: fenced, it starts no sweep and sends no
#      write (its remediation is in dry-run; every write would go through the fence, which it
#      logs when it refuses one).
# The times are printed (failover, reconnect), never asserted: deadlines are generous, for a
# loaded machine; bench/k8s/leader_failover.sh runs it with client-go's default timings.
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
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$run"/coord-*.log; do echo "--- $f"; tail -25 "$f" || true; done
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

# 1. Two replicas: one leader, one live standby that is not ready.
coordinator coord-a
coordinator coord-b
has_holder() { [ -n "$(holder)" ]; }
wait_for 120 "no replica took the Lease" has_holder
first="$(holder)"; other=coord-a; [ "$first" = coord-a ] && other=coord-b
echo "leader: $first (transitions $(transitions)), standby: $other"
wait_for 60 "$first is not ready" is_code "$first" /readyz 200
wait_for 60 "$other is ready" is_code "$other" /readyz 503
[ "$(code "$other" /livez)" = 200 ] || fail "$other is not live"
reason="$(curl -s --max-time 5 "http://127.0.0.1:${http[$other]}/readyz")"
grep -q "not the leader: the lease $ns/$lease is held by $first" <<<"$reason" ||
  fail "$other's /readyz says '$reason'"
echo "$other /readyz: $reason"
gauge() { curl -s --max-time 5 "http://127.0.0.1:${http[$1]}/metrics" |
  sed -n 's/^nccl_triage_coordinator_leader \([0-9]*\).*/\1/p'; }
[ "$(gauge "$first")" = 1 ] && [ "$(gauge "$other")" = 0 ] ||
  fail "nccl_triage_coordinator_leader: $first $(gauge "$first"), $other $(gauge "$other")"

# The Service and the agents.
printf '%s:%s\n' "${grpc[coord-a]}" "${http[coord-a]}" "${grpc[coord-b]}" "${http[coord-b]}" \
  >"$run/endpoints"
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

# 2. kill -9 of the leader.
before="$(transitions)"
killed="$(now)"
kill -9 "${pid[$first]}"
wait_for 180 "$other did not take the Lease over" is_holder "$other"
failover="$(since "$killed")"
wait_for 60 "$other is not ready as leader" is_code "$other" /readyz 200
ready_after="$(since "$killed")"
wait_for 180 "the agents did not reconnect to $other" has_agents "$other"
reconnect="$(since "$killed")"
after="$(transitions)"
[ "$after" -gt "$before" ] || fail "leaseTransitions $before -> $after"
echo "failover: the Lease held by $other ${failover} s after kill -9 of $first (lease duration" \
  "${lease_duration} s); ready after ${ready_after} s; agents reconnected after ${reconnect} s"
echo "FIGURES failover_s=$failover ready_s=$ready_after reconnect_s=$reconnect lease_duration_s=$lease_duration"

# 3. A frozen leader is fenced: it never acts again once thawed.
third=coord-c
coordinator "$third"
printf '%s:%s\n' "${grpc[$third]}" "${http[$third]}" >>"$run/endpoints"   # it joins the Service
wait_for 60 "$third is ready as a standby" is_code "$third" /readyz 503
leader="$other"
frozen="$(now)"
kill -STOP "${pid[$leader]}"
wait_for 180 "$third did not take the Lease from the frozen $leader" is_holder "$third"
echo "the Lease passed from frozen $leader to $third after $(since "$frozen") s"
lines_before="$(wc -l <"$run/$leader.log")"
kill -CONT "${pid[$leader]}"
wait_for 60 "thawed $leader does not say it lost the Lease" \
  grep -qE 'lost the lease|not leading any more' "$run/$leader.log"
wait_for 60 "thawed $leader is ready" is_code "$leader" /readyz 503
sleep "$((lease_duration + retry))"   # long enough to see it try (and fail) to lead again
tail -n +"$((lines_before + 1))" "$run/$leader.log" >"$run/thawed.log"
if grep -E 'coordinator: leading|acquired the lease|created the lease|sweep [0-9]+:' \
    "$run/thawed.log"; then
  fail "thawed $leader acted after it lost the Lease"
fi
[ -z "$(connected "$leader")" ] || fail "thawed $leader holds agents: $(connected "$leader")"
[ "$(holder)" = "$third" ] || fail "the Lease is held by $(holder), not $third"
wait_for 180 "the agents did not reconnect to $third" has_agents "$third"
echo "thawed $leader: lost the Lease, not ready, no agent, no sweep and no write after it;" \
  "the agents are with $third"
fenced="$(grep -c 'fenced: ' "$run/$leader.log" || true)"
echo "writes refused by the fence in $leader's log: $fenced"
# Every call of the replicas to the API server was allowed by the chart's RBAC.
if grep -E 'HTTP 40[13]' "$run"/coord-*.log; then fail "the API server refused a call"; fi
echo "leader election: 2 failovers, no API refusal"
