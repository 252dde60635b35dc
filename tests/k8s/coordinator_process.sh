#!/usr/bin/env bash
# The coordinator and its agents as processes against the real API server of kube_prepare.sh,
# with node identities checked (coordinator.verify_node_identity): the coordinator holds the
# token of the chart's coordinator ServiceAccount (so only the chart's RBAC lets it ask anything)
# and reviews every agent's identity token (TokenReview). Each agent is told its node and
# presents a token of the agents' ServiceAccount requested for the audience nccl-triage and bound
# to a pod on that node, as the DaemonSet's projected volume gives it. Two agents must be
# accepted for their nodes; refused, each with its reason in the coordinator's log:
#   impostor    a valid token of the pod on coord-node-1, in a hello as coord-node-2
#   unbound     a token of the agents' account bound to no pod
#   foreign     a token of another account (the coordinator's) bound to a pod on coord-node-3
#   audience    a token bound to the right pod but for the API server's audience
#   pending     a token bound to a pod not scheduled on any node (the coordinator GETs the pod:
#               the chart's pods get in its namespace, refused as having no node)
#   no-identity no identity token at all
#   bad-shared  the wrong shared token
# The coordinator's /status must list the two agents, connected, and none of the others; its
# log may hold no refusal of the API server (401/403).
# MODE identity-only (coordinator.identity_only, the chart's token.mode identity): no shared
# token anywhere; the two agents are accepted on their identity tokens alone, and refused:
#   impostor, unbound as above
#   no-identity  no token at all
#   shared-only  a shared token and no identity token
# Usage: coordinator_process.sh TOOLS WORK SERVER_BINARY FIXTURE_ROOT [shared|identity-only]
set -euo pipefail
tools="$1"; work="$2"; server="$3"; root="$4"; mode="${5:-shared}"
export KUBECONFIG="$work/kubeconfig"
k() { "$tools/bin/kubectl" "$@"; }
. "$work/env"
run="$work/coordinator-process-$mode"; rm -rf "$run"; mkdir -p "$run"
ns=kt agent_sa=kt-nccl-triage-agent coordinator_sa=kt-nccl-triage-coordinator
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  k delete pod -n "$ns" coord-agent-1 coord-agent-2 coord-foreign coord-pending \
    --ignore-not-found --grace-period=0 --force >/dev/null 2>&1 || true
  k delete node coord-node-1 coord-node-2 coord-node-3 --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- coordinator log"; tail -40 "$run/coordinator.log" || true; exit 1; }

# Nodes and pods of this test alone (other tests use gpu-node-1/2), stored by the API server:
# no kubelet runs them, but it binds tokens to them and names their node in the tokens.
cleanup
{
  for n in 1 2 3; do
    printf -- '---\napiVersion: v1\nkind: Node\nmetadata: {name: coord-node-%s, labels: {nvidia.com/gpu.present: "true"}}\n' "$n"
  done
  pod() {  # NAME NODE|"" SERVICEACCOUNT
    printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n' "$1" "$ns"
    [ -n "$2" ] && printf '  nodeName: %s\n' "$2"
    printf '  serviceAccountName: %s\n  automountServiceAccountToken: false\n' "$3"
    printf '  containers: [{name: agent, image: registry.example/nccl-triage:1}]\n'
  }
  pod coord-agent-1 coord-node-1 "$agent_sa"
  pod coord-agent-2 coord-node-2 "$agent_sa"
  pod coord-foreign coord-node-3 "$coordinator_sa"
  pod coord-pending "" "$agent_sa"
} | k apply -f - >/dev/null

# Identity tokens (audience nccl-triage unless said otherwise), one file per agent.
token() {  # FILE SERVICEACCOUNT POD|"" [AUDIENCE]
  local bind=(); [ -n "$3" ] && bind=(--bound-object-kind Pod --bound-object-name "$3")
  k create token "$2" -n "$ns" --duration 2h --audience "${4:-nccl-triage}" "${bind[@]}" >"$run/$1"
}
token good-1.token "$agent_sa" coord-agent-1
token good-2.token "$agent_sa" coord-agent-2
token impostor.token "$agent_sa" coord-agent-1
token unbound.token "$agent_sa" ""
token foreign.token "$coordinator_sa" coord-foreign
token audience.token "$agent_sa" coord-agent-1 https://kubernetes.default.svc.cluster.local
token pending.token "$agent_sa" coord-pending

# The coordinator: the chart's coordinator token (kube_prepare.sh), sweeps out of the way (they
# run probes; this test is about sessions), ports chosen by the kernel and read from its log.
cat >"$run/coordinator.yaml" <<YAML
coordinator:
  sweep_interval_seconds: 1000000
  verify_node_identity: true
  agent_service_account: $ns:$agent_sa
YAML
shared="coordinator-process-$$-$RANDOM"
coordinator_env=(NCCL_TRIAGE_TOKEN="$shared")
if [ "$mode" = identity-only ]; then
  echo "  identity_only: true" >>"$run/coordinator.yaml"
  coordinator_env=(-u NCCL_TRIAGE_TOKEN)
fi
env "${coordinator_env[@]}" KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT" \
NCCL_TRIAGE_SERVICE_ACCOUNT_DIR="$work/kube/coordinator" \
  "$server" coordinator --config "$run/coordinator.yaml" --listen 127.0.0.1:0 \
  --http-listen 127.0.0.1:0 >"$run/coordinator.log" 2>&1 &
coordinator=$!; pids+=("$coordinator")
grpc_port="" http_port=""
deadline=$((SECONDS + 60))   # generous: a loaded machine
while [ "$SECONDS" -lt "$deadline" ]; do
  kill -0 "$coordinator" 2>/dev/null || fail "the coordinator exited"
  line="$(grep -m1 'listening for agents on port' "$run/coordinator.log" || true)"
  if [ -n "$line" ]; then
    grpc_port="$(sed -E 's/.*listening for agents on port ([0-9]+).*/\1/' <<<"$line")"
    http_port="$(sed -E 's/.*HTTP on port ([0-9]+).*/\1/' <<<"$line")"
    break
  fi
  sleep 0.2
done
[ -n "$grpc_port" ] && [ -n "$http_port" ] || fail "the coordinator did not start listening"
echo "coordinator: gRPC 127.0.0.1:$grpc_port, HTTP 127.0.0.1:$http_port"

# The agents: fixture roots, no Kubernetes publication (no API access of their own: this test is
# the session), the node given, the identity token of the case.
agent() {  # CASE NODE TOKEN_FILE|"" SHARED_TOKEN
  local identity=""; [ -n "$3" ] && identity="  identity_token_file: $run/$3"
  cat >"$run/agent-$1.yaml" <<YAML
agent:
  listen: 127.0.0.1:0
  interval_seconds: 30
  annotate_pod: false
  node_condition: false
  events: false
  workloads: false
$identity
kernel:
  state_dir: ""
YAML
  local shared_env=(NCCL_TRIAGE_TOKEN="$4"); [ -n "$4" ] || shared_env=(-u NCCL_TRIAGE_TOKEN)
  env "${shared_env[@]}" "$server" agent --config "$run/agent-$1.yaml" --root "$root" \
    --node "$2" --coordinator "127.0.0.1:$grpc_port" >"$run/agent-$1.log" 2>&1 &
  pids+=($!)
}
# What the coordinator must log for each refused case.
declare -A reason
if [ "$mode" = identity-only ]; then
  agent good-1 coord-node-1 good-1.token ""
  agent good-2 coord-node-2 good-2.token ""
  agent impostor coord-node-2 impostor.token ""
  agent unbound coord-node-3 unbound.token ""
  agent no-identity coord-node-3 "" ""
  agent shared-only coord-node-3 "" "$shared"
  reason=(
    [impostor]='hello as coord-node-2, but the identity token is of node coord-node-1'
    [unbound]='identity: identity token not bound to a pod'
    [no-identity]='identity: no identity token \(identity-only mode: an agent needs agent.identity_token_file; a shared token is not accepted\)'
  )
  identity_refused=(impostor unbound no-identity shared-only)
else
  agent good-1 coord-node-1 good-1.token "$shared"
  agent good-2 coord-node-2 good-2.token "$shared"
  agent impostor coord-node-2 impostor.token "$shared"
  agent unbound coord-node-3 unbound.token "$shared"
  agent foreign coord-node-3 foreign.token "$shared"
  agent audience coord-node-1 audience.token "$shared"
  agent pending coord-node-3 pending.token "$shared"
  agent no-identity coord-node-3 "" "$shared"
  agent bad-shared coord-node-1 good-1.token "not-$shared"
  reason=(
    [impostor]='hello as coord-node-2, but the identity token is of node coord-node-1'
    [unbound]='identity: identity token not bound to a pod'
    [foreign]="identity: identity token of system:serviceaccount:$ns:$coordinator_sa, not of system:serviceaccount:$ns:$agent_sa"
    [audience]='identity: identity token not accepted'
    [pending]='identity: the pod of the identity token has no node'
    [no-identity]='identity: no identity token'
    [bad-shared]='rejected agent session from .*: wrong token'
  )
  identity_refused=(impostor unbound foreign audience pending no-identity)
fi
status_agents() {  # "node:connected ..." from /status, sorted
  curl -sf --max-time 10 "http://127.0.0.1:$http_port/status" | python3 -c '
import json, sys
print(" ".join(sorted("%s:%s" % (a["node"], str(a["connected"]).lower()) for a in json.load(sys.stdin)["agents"])))' \
    2>/dev/null || true
}
want_agents="coord-node-1:true coord-node-2:true"
agents="" missing=""
deadline=$((SECONDS + 200))   # generous; the refused agents retry with growing back-off
while [ "$SECONDS" -lt "$deadline" ]; do
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process exited early (pid $p)"; done
  agents="$(status_agents)"
  missing=""
  for c in "${!reason[@]}"; do grep -qE -- "${reason[$c]}" "$run/coordinator.log" || missing="$missing $c"; done
  [ "$agents" = "$want_agents" ] && [ -z "$missing" ] && break
  sleep 0.5
done
echo "/status agents: ${agents:-<none>}"
[ "$agents" = "$want_agents" ] || fail "/status lists '${agents}', not '$want_agents'"
[ -z "$missing" ] || fail "not refused with the expected reason:$missing"
for c in "${!reason[@]}"; do echo "refused $c: $(grep -m1 -oE -- "${reason[$c]}" "$run/coordinator.log")"; done
grep -q 'agent coord-node-1 connected' "$run/coordinator.log" || fail "no session of coord-node-1 in the log"
grep -q 'agent coord-node-2 connected' "$run/coordinator.log" || fail "no session of coord-node-2 in the log"
# The refused agents were told so (and know which setting to check).
for c in "${identity_refused[@]}"; do
  grep -q 'rejected this agent: .*(check agent.identity_token_file and the node name)' "$run/agent-$c.log" ||
    { tail -5 "$run/agent-$c.log"; fail "agent $c does not say it was rejected for its identity"; }
done
if [ "$mode" = identity-only ]; then
  # Without an identity token, each is told that this coordinator takes nothing else.
  for c in no-identity shared-only; do
    grep -q 'rejected this agent: .*identity-only mode: an agent needs agent.identity_token_file' \
      "$run/agent-$c.log" || { tail -5 "$run/agent-$c.log"; fail "agent $c is not told why"; }
  done
  grep -q 'identity-only mode: agents are accepted by their node identity token alone' \
    "$run/coordinator.log" || fail "the coordinator does not say it runs in identity-only mode"
  if grep -q 'no token configured' "$run/coordinator.log"; then fail "identity-only mode warns of no token"; fi
else
  grep -q 'rejected this agent: .*(check the shared token)' "$run/agent-bad-shared.log" ||
    fail "agent bad-shared does not say the shared token was wrong"
fi
# The impostor did not take coord-node-2's session.
if grep -q 'agent coord-node-2 disconnected' "$run/coordinator.log"; then fail "coord-node-2 lost its session"; fi
# Every call of the coordinator to the API server was allowed by the chart's RBAC.
if grep -E 'HTTP 40[13]' "$run/coordinator.log"; then fail "the API server refused a call of the coordinator"; fi
if grep -E 'identity: (TokenReview|GET pod)' "$run/coordinator.log"; then fail "a TokenReview or pod GET failed"; fi
echo "coordinator ($mode): 2 agents accepted for their nodes, ${#identity_refused[@]} refused for the right reason, no API refusal"
