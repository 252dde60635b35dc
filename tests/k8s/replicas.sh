# Coordinator replicas as their pods run them, for the process tests of leader election
# (leader_election_process.sh, failover_process.sh). Sourced, not run. The caller sets:
#   server  the nccl-triage-server binary     run  the test's directory (coordinator.yaml in it)
#   ns      the namespace of the pods          lease  the Lease's name
#   pids    an array the caller's cleanup kills
# and defines k (kubectl) and fail. Each replica has a Pod object NAME in $ns with the chart's
# coordinator labels (release kt; no kubelet runs it: the process below is its container), on
# which it keeps the leader label. Its ports are in grpc[NAME] and http[NAME], its process in
# pid[NAME], its log in $run/NAME.log. The Service in front of them is service_start's, the
# agents' configuration agent_config's.
declare -A grpc http pid
# The chart's coordinator pods of release kt (the Deployment's selector), and the leader label
# that its Service selects with more than one replica.
pod_selector="app.kubernetes.io/component=coordinator,app.kubernetes.io/instance=kt,app.kubernetes.io/name=nccl-triage"
leader_label="nccl-triage.io/coordinator-role=leader"

# replica_pod NAME: the Pod object of a replica (made again: a test starts from pods without the
# label).
replica_pod() {
  k delete pod "$1" -n "$ns" --grace-period=0 --force --ignore-not-found >/dev/null 2>&1 || true
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $ns
  labels:
    app.kubernetes.io/name: nccl-triage
    app.kubernetes.io/instance: kt
    app.kubernetes.io/component: coordinator
spec:
  serviceAccountName: kt-nccl-triage-coordinator
  automountServiceAccountToken: false
  containers: [{name: coordinator, image: registry.example/nccl-triage:test}]
YAML
}

# replica_start NAME [VAR=value...]: starts a replica (POD_NAME, POD_NAMESPACE as the downward
# API gives them, NCCL_TRIAGE_COORDINATOR_POD_SELECTOR as the chart sets it, and the caller's
# environment for it) on its Pod object and waits until it listens.
replica_start() {
  local name="$1"; shift
  replica_pod "$name"
  env "$@" POD_NAME="$name" POD_NAMESPACE="$ns" NCCL_TRIAGE_COORDINATOR_POD_SELECTOR="$pod_selector" \
    "$server" coordinator --config "$run/coordinator.yaml" --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 >"$run/$name.log" 2>&1 &
  pid[$name]=$!; pids+=($!)
  local deadline=$((SECONDS + 60)) line=""
  while [ "$SECONDS" -lt "$deadline" ]; do
    kill -0 "${pid[$name]}" 2>/dev/null || fail "$name exited"
    line="$(grep -m1 'listening for agents on port' "$run/$name.log" || true)"
    [ -n "$line" ] && break
    sleep 0.2
  done
  [ -n "$line" ] || fail "$name did not start listening"
  grpc[$name]="$(sed -E 's/.*listening for agents on port ([0-9]+).*/\1/' <<<"$line")"
  http[$name]="$(sed -E 's/.*HTTP on port ([0-9]+).*/\1/' <<<"$line")"
}

# service_start PROXY: the Service of the replicas listed in $run/endpoints (service_proxy.py:
# connections go to a ready replica whose pod carries the leader label, as kube-proxy sends them
# to the endpoints of the chart's Service with more than one replica); its address in $service.
service_start() {
  python3 "$1" "$run/proxy.port" "$run/endpoints" "$KUBECONFIG" "$ns" "$leader_label" \
    >"$run/service-proxy.log" 2>&1 &
  pids+=($!)
  wait_for 30 "the Service proxy did not start" test -s "$run/proxy.port"
  service="127.0.0.1:$(cat "$run/proxy.port")"
}

# agent_config FILE: an agent of these tests (nothing written to pods or the Node, no kernel
# state), then the YAML on standard input.
agent_config() {
  {
    cat <<'YAML'
agent:
  listen: 127.0.0.1:0
  interval_seconds: 30
  annotate_pod: false
  node_condition: false
  events: false
  workloads: false
kernel:
  state_dir: ""
YAML
    cat
  } >"$1"
}

now() { date +%s.%N; }
since() { python3 -c "print('%.1f' % ($(now) - $1))"; }
wait_for() {  # SECONDS WHAT COMMAND...: until the command succeeds
  local deadline=$((SECONDS + $1)) what="$2"; shift 2
  while [ "$SECONDS" -lt "$deadline" ]; do "$@" && return 0; sleep 0.2; done
  fail "$what"
}
# endpoint NAME: its line in $run/endpoints (the Service's candidates).
endpoint() { printf '%s:%s:%s\n' "${grpc[$1]}" "${http[$1]}" "$1"; }
# labelled: the pods of $ns that carry the leader label, sorted.
labelled() {
  k get pods -n "$ns" -l "$leader_label" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null |
    tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//' || true
}
is_labelled() { [ "$(labelled)" = "$1" ]; }   # NAME: the only labelled pod
role() {  # NAME: "leader" or "standby", as its /status says
  status "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["leader_election"]["role"])' \
    2>/dev/null || true
}
holder() { k get lease -n "$ns" "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
is_holder() { [ "$(holder)" = "$1" ]; }
new_holder() { local h; h="$(holder)"; [ -n "$h" ] && [ "$h" != "$1" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:${http[$1]}$2" || true; }
is_code() { [ "$(code "$1" "$2")" = "$3" ]; }
status() { curl -sf --max-time 5 "http://127.0.0.1:${http[$1]}/status" 2>/dev/null || true; }
connected() {  # NAME: the connected agents of its /status, sorted
  status "$1" | python3 -c '
import json, sys
print(" ".join(sorted(a["node"] for a in json.load(sys.stdin)["agents"] if a["connected"])))' \
    2>/dev/null || true
}
