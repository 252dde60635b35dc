# Coordinator replicas as their pods run them, for the process tests of leader election
# (leader_election_process.sh, failover_process.sh). Sourced, not run. The caller sets:
#   server  the nccl-triage-server binary     run  the test's directory (coordinator.yaml in it)
#   ns      the namespace of the pods          lease  the Lease's name
#   pids    an array the caller's cleanup kills
# and defines k (kubectl) and fail. Each replica's ports are in grpc[NAME] and http[NAME], its
# process in pid[NAME], its log in $run/NAME.log. The Service in front of them is service_start's,
# the agents' configuration agent_config's.
declare -A grpc http pid

# replica_start NAME [VAR=value...]: starts a replica (POD_NAME, POD_NAMESPACE as the downward
# API gives them, and the caller's environment for it) and waits until it listens.
replica_start() {
  local name="$1"; shift
  env "$@" POD_NAME="$name" POD_NAMESPACE="$ns" \
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

# service_start PROXY: the Service of the replicas listed in $run/endpoints (ready_proxy.py:
# connections go to the ready one, as kube-proxy sends them to ready endpoints); its address in
# $service.
service_start() {
  python3 "$1" "$run/proxy.port" "$run/endpoints" >"$run/ready-proxy.log" 2>&1 &
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
