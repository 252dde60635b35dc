#!/usr/bin/env bash
# The chart as real pods on the one-node cluster of node.sh (kube-proxy and CoreDNS included): a
# plain pod runs first (the runtime, CNI and the sandbox image work), the device plugin of the
# tests (kt_device_plugin) registers nvidia.com/gpu and an rdma/* resource with the kubelet, then
# `helm install` of the chart with an image assembled from the build's binaries (node_images.sh):
#   - the agent's and the coordinator's pods reach Running and Ready through the kubelet's own
#     probes, the agent without restarts;
#   - the agent serves /status (behind the API server: 401 without a token, 200 with an admin's)
#     with its node named and a verdict that is not healthy (this machine has no GPU, no NCCL and
#     no HCA), and the Node carries its condition and events;
#   - the agent reaches the coordinator by the Service name the chart gives it (CoreDNS, then
#     kube-proxy), and both reach the API server through the Service kubernetes: the
#     coordinator's /status, read through its Service's address, lists the node connected, with
#     its verdict, never healthy, and why its probes cannot run (probe.reason no_gpu / no_nccl,
#     sent by the agent) among its causes;
#   - with NCCL_LIBRARY (the tests' fake NCCL), `helm upgrade` sets probe.nccl.fromImage to a
#     training image carrying it: the DaemonSet rolls, the initContainer copies the library, and
#     the agent's probes find it (no longer no_nccl);
#   - a "training" pod requesting the plugin's GPU, with NCCL variables and no /dev/infiniband,
#     is judged by the agent through the kubelet's pod-resources API and annotated;
#   - a real Prometheus (Debian's) scrapes the agent and the coordinator with the jobs of
#     deploy/prometheus/scrape-config.yaml and the chart's scraper token; no token gets 401, an
#     unbound account's 403 (node_prometheus.sh);
#   - the agent's container stopped on the runtime (crictl) is restarted by the kubelet; the
#     coordinator's pod deleted comes back and the agent connects again; both killed together
#     while the node is tainted for a confirmed fault: the new coordinator still holds the fault
#     confirmed, the taint stays, no second taint;
#   - `helm uninstall` (its pre-delete hook) leaves nothing of ours: no object of the release, no
#     condition, annotation or taint on the Node or the pods, no state directory on the host.
# Says what it does not show. Usage:
#   node_agent.sh K8S_TOOLS NODE_TOOLS WORK CHART SOURCE_DIR SERVER_BINARY CLI_BINARY DEVICE_PLUGIN
#                 [NCCL_LIBRARY]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ktools="$1"; ntools="$2"; work="$3"; chart="$4"; src="$5"; server="$6"; cli="$7"; plugin="$8"
nccl="${9:-}"
start_s=$SECONDS
mkdir -p "$work"; work="$(cd "$work" && pwd)"
keep="${NODE_AGENT_KEEP:-}"          # set: leave the cluster running for a look
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    echo "--- kubelet log (last lines)"; tail -25 "$work/kubelet.log" 2>/dev/null || true
    echo "--- pods"; k get pods -A -o wide 2>/dev/null || true
    k describe pods -n kt 2>/dev/null | tail -40 || true
    echo "--- coordinator log (last lines)"; k logs -n kt deploy/kt-nccl-triage-coordinator 2>/dev/null | tail -15 || true
    echo "--- agent log (last lines)"; k logs -n kt ds/kt-nccl-triage-agent 2>/dev/null | tail -15 || true
    echo "--- kube-proxy log (last lines)"; tail -8 "$work/kube-proxy.log" 2>/dev/null || true
    echo "--- device plugin log"; tail -8 "$work/device-plugin.log" 2>/dev/null || true
  fi
  if [ -z "$keep" ]; then
    if [ -f "$work/device-plugin.pid" ]; then kill "$(cat "$work/device-plugin.pid")" 2>/dev/null || true; fi
    rm -f "$work/device-plugin.pid"
    "$here/node.sh" stop "$work" >/dev/null 2>&1 || true
  fi
  exit "$rc"
}
trap cleanup EXIT
k() { "$ktools/bin/kubectl" --kubeconfig "$work/kubeconfig" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }

"$here/node.sh" start "$ktools" "$ntools" "$work"
. "$work/env"
"$here/node_images.sh" "$src" "$server" "$cli" "$work/images" "$nccl"
for i in "$work"/images/*.tar; do "$here/node.sh" import "$ntools" "$work" "$i"; done
echo "images imported ($((SECONDS - start_s)) s so far)"

# 0. The device plugin of the tests: two GPUs (each the stand-in device node /dev/nvidia<i> in a
# container, made from the host's /dev/null) and four devices of an RDMA resource (no node). The
# kubelet's registration socket is in /var/lib/kubelet/device-plugins whatever its root directory
# (node.sh's machine lock keeps other nodes of the tests away from it).
"$plugin" --dir /var/lib/kubelet/device-plugins --resource nvidia.com/gpu=2:/dev/null \
  --resource rdma/hca_shared_devices_a=4 >"$work/device-plugin.out" 2>"$work/device-plugin.log" &
echo $! >"$work/device-plugin.pid"
for _ in $(seq 1 120); do
  gpus="$(k get node "$NODE" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')"
  rdma="$(k get node "$NODE" -o jsonpath='{.status.allocatable.rdma/hca_shared_devices_a}')"
  [ "$gpus" = 2 ] && [ "$rdma" = 4 ] && break
  kill -0 "$(cat "$work/device-plugin.pid")" 2>/dev/null || { cat "$work/device-plugin.log"; fail "the device plugin exited"; }
  sleep 0.5
done
echo "device plugin: $(tr '\n' ';' <"$work/device-plugin.out") node allocatable nvidia.com/gpu=$gpus rdma/hca_shared_devices_a=$rdma"
[ "$gpus" = 2 ] && [ "$rdma" = 4 ] || fail "the kubelet does not advertise the plugin's devices"

# 1. A plain pod: sandbox, CNI address, container.
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: default}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/kt-shell:test
      imagePullPolicy: Never
      command: [sh, -c, 'echo started; exec sleep 3600']
YAML
k wait --for condition=Ready pod/plain --timeout 180s >/dev/null || fail "the plain pod is not Ready"
echo "plain pod Running on $NODE, pod IP $(k get pod plain -o jsonpath='{.status.podIP}'), log: $(k logs plain 2>&1 | head -1)"
k delete pod plain --wait=false >/dev/null

# 2. The chart, with the coordinator. The node is labelled as a GPU node (the agent's
# nodeSelector); the agent's port, the kubelet directory and the state directory are this run's;
# one check cycle every 5 s so that the workload pass follows the training pod quickly.
k label node "$NODE" nvidia.com/gpu.present=true --overwrite >/dev/null
agent_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
state_dir="$work/agent-state"
fast='{initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3}'
cat >"$work/values-node.yaml" <<YAML
image: {registry: docker.io/library, repository: nccl-triage, tag: test, pullPolicy: Never}
token: {value: node-test-token}
config:
  agent:
    listen: $NODE_IP:$agent_port
    interval_seconds: 5
    node_condition: true
    events: true
  kernel:
    state_dir: $state_dir
agent:
  hostMounts:
    podResourcesPath: $KUBELET_ROOT/pod-resources
  livenessProbe: {initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3}
  readinessProbe: $fast
coordinator:
  readinessProbe: $fast
  # The only node is the GPU node: the coordinator must stay on it once remediation taints it.
  tolerations: [{key: nccl-triage.io/fault, operator: Exists, effect: NoSchedule}]
YAML
"$ktools/bin/helm" --kubeconfig "$work/kubeconfig" install kt "$chart" -n kt --create-namespace \
  -f "$work/values-node.yaml" >/dev/null
echo "helm install done ($((SECONDS - start_s)) s so far)"
pod=""
for _ in $(seq 1 120); do
  pod="$(k get pods -n kt -l app.kubernetes.io/component=agent -o name 2>/dev/null | head -1)"
  [ -n "$pod" ] && break; sleep 1
done
[ -n "$pod" ] || fail "the DaemonSet made no agent pod"
k wait -n kt --for condition=Ready "$pod" --timeout 240s >/dev/null || fail "$pod not Ready"
echo "$pod Ready ($((SECONDS - start_s)) s so far)"
k -n kt rollout status deployment/kt-nccl-triage-coordinator --timeout 240s >/dev/null ||
  fail "the coordinator's pod is not Ready"
echo "coordinator $(k get pods -n kt -l app.kubernetes.io/component=coordinator -o name | head -1) Ready," \
  "pod IP $(k get pods -n kt -l app.kubernetes.io/component=coordinator -o jsonpath='{.items[0].status.podIP}')"
# The liveness probe has run a few times by now (period 5 s): still no restart.
sleep 12
restarts="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
ready="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].ready}')"
echo "agent container ready=$ready restarts=$restarts"
[ "$ready" = true ] && [ "$restarts" = 0 ] || fail "the agent restarted or is not ready"

# 3. /status behind the API server.
admin="$(cut -d, -f1 "$work/pki/tokens.csv")"
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "http://$NODE_IP:$agent_port/status")"
echo "GET /status without a token -> $code"
[ "$code" = 401 ] || fail "want 401"
code="$(curl -s -o "$work/status.json" -w '%{http_code}' --max-time 60 \
  -H "Authorization: Bearer $admin" "http://$NODE_IP:$agent_port/status")"
echo "GET /status as an admin -> $code"
[ "$code" = 200 ] || fail "want 200"
python3 - "$work/status.json" "$NODE" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
report, avail = s.get("report") or {}, s.get("probe_availability") or {}
print(f"/status: node {s.get('node')}, verdict class {report.get('class')} "
      f"(basis {report.get('basis')}, causes {report.get('causes')}), probes available "
      f"{avail.get('available')} (reason {avail.get('reason')})")
if s.get("node") != sys.argv[2]:
    sys.exit(f"FAIL: /status names node {s.get('node')}, not {sys.argv[2]}")
if report.get("class") in (None, "", "healthy"):
    sys.exit("FAIL: a node without GPU, NCCL or HCA judged healthy (or not judged)")
if avail.get("available") is not False or avail.get("reason") not in ("no_nccl", "no_gpu"):
    sys.exit("FAIL: the probes should be unavailable for no_nccl or no_gpu")
PY
echo "node condition NcclFabricReady=$(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="NcclFabricReady")].status}')"
events="$(k get events -A --field-selector "involvedObject.name=$NODE" \
  -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | grep '^NcclFabric' | sort -u | tr '\n' ' ')"
echo "events on the Node: $events"
[ -n "$events" ] || fail "no NcclFabric* event on the Node"

# 3b. The coordinator, through its Service: the agent was given its DNS name (CoreDNS answers it
# with the Service's address, kube-proxy forwards to the pod); its /status is read here through
# the same Service address.
coord_arg="$(k get -n kt daemonset/kt-nccl-triage-agent -o json | python3 -c '
import json, sys
a = json.load(sys.stdin)["spec"]["template"]["spec"]["containers"][0]["args"]
print(a[a.index("--coordinator") + 1])')"
coord_ip="$(k get -n kt service/kt-nccl-triage-coordinator -o jsonpath='{.spec.clusterIP}')"
coord_http="$(k get -n kt service/kt-nccl-triage-coordinator -o jsonpath='{.spec.ports[?(@.name=="http")].port}')"
echo "agent --coordinator $coord_arg; kube-dns answers $(python3 "$here/dns_query.py" 10.96.0.10 "${coord_arg%:*}" | tr '\n' ' ')(Service address $coord_ip)"
coordinator_status() {  # WANT: connected | any
  for _ in $(seq 1 90); do
    rm -f "$work/coordinator-status.json"  # (a failed read must not leave the last one)
    curl -s -o "$work/coordinator-status.json" --max-time 30 -H "Authorization: Bearer $admin" \
      "http://$coord_ip:$coord_http/status" || true
    python3 - "$work/coordinator-status.json" "$NODE" <<'PY' 2>/dev/null && return 0
import json, sys
s = json.load(open(sys.argv[1]))
ok = any(a.get("node") == sys.argv[2] and a.get("connected") for a in s.get("agents", []))
# (and the agent's first check of its probes reached the coordinator: not pending, not unknown)
ok = ok and any(n.get("node") == sys.argv[2] and
                (n.get("probe") or {}).get("reason") not in (None, "pending", "unknown")
                for n in s.get("nodes", []))
sys.exit(0 if ok else 1)
PY
    sleep 1
  done
  return 1
}
coordinator_status || { cat "$work/coordinator-status.json" 2>/dev/null; echo; fail "the coordinator does not list $NODE connected with a verdict"; }
python3 - "$work/coordinator-status.json" "$NODE" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
agent = next(a for a in s["agents"] if a.get("node") == sys.argv[2])
node = next(n for n in s["nodes"] if n.get("node") == sys.argv[2])
probe = node.get("probe") or {}
print(f"coordinator /status: agent {agent['node']} connected from {agent.get('peer')}; node verdict "
      f"class {node.get('class')}, basis {node.get('basis')}, causes {node.get('causes')}, "
      f"state {node.get('state')}; probes available={probe.get('available')} "
      f"reason={probe.get('reason')} ({probe.get('evidence')})")
if node.get("class") in (None, "", "healthy"):
    sys.exit("FAIL: the coordinator judges a node without GPU, NCCL or HCA healthy (or not at all)")
causes = node.get("causes") or []
# The agent told the coordinator why its probes cannot run: the node is left out of the sweeps
# and its verdict names the reason.
if probe.get("available") is not False or probe.get("reason") not in ("no_gpu", "no_nccl", "no_cuda"):
    sys.exit("FAIL: the coordinator's /status does not say the node's probes cannot run, and why")
if not any(c in ("probe.no_gpu", "probe.no_nccl", "probe.no_cuda") for c in causes):
    sys.exit("FAIL: the coordinator's verdict does not name why the node cannot be probed")
PY

# 4. probe.nccl.fromImage: the initContainer copies the training image's NCCL.
if [ -n "$nccl" ]; then
  "$ktools/bin/helm" --kubeconfig "$work/kubeconfig" upgrade kt "$chart" -n kt --reuse-values \
    --set probe.nccl.fromImage=docker.io/library/kt-training:test >/dev/null
  k rollout status -n kt daemonset/kt-nccl-triage-agent --timeout 240s >/dev/null ||
    fail "the DaemonSet did not roll out with probe.nccl.fromImage"
  pod="$(k get pods -n kt -l app.kubernetes.io/component=agent -o name | head -1)"
  k wait -n kt --for condition=Ready "$pod" --timeout 240s >/dev/null || fail "$pod not Ready"
  echo "after helm upgrade: $pod Ready ($((SECONDS - start_s)) s so far); initContainer:"
  k logs -n kt "$pod" -c copy-nccl | sed 's/^/  /'
  k logs -n kt "$pod" -c copy-nccl | grep -q '^copied from /usr/lib/' || fail "no NCCL copied"
  for _ in $(seq 1 60); do
    curl -s -o "$work/status.json" --max-time 60 -H "Authorization: Bearer $admin" \
      "http://$NODE_IP:$agent_port/status" || true
    python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["probe_availability"]
sys.exit(0 if a.get("reason") != "no_nccl" and a.get("nccl_library") else 1)' "$work/status.json" \
      2>/dev/null && break
    sleep 1
  done
  python3 - "$work/status.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["probe_availability"]
print(f"probes: available {a.get('available')}, reason {a.get('reason')}, NCCL {a.get('nccl_library')} "
      f"{a.get('nccl_version')}")
if a.get("reason") == "no_nccl" or not a.get("nccl_library"):
    sys.exit("FAIL: the agent did not find the NCCL copied from the training image")
PY
fi
# 4b. A training pod: it requests one of the plugin's GPUs (and no RDMA resource), sets NCCL's IB
# variables, has no /dev/infiniband, and holds its GPU's device node open as a CUDA process does.
# The agent finds it among the GPU holders, names it through the pod list and the kubelet's
# pod-resources API (which device the plugin gave it), judges it and annotates it.
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: training, namespace: default}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: docker.io/library/kt-shell:test
      imagePullPolicy: Never
      # the device node the plugin gave it (/dev/nvidia<its id>), open as a CUDA process holds it
      command: [sh, -c, 'set -- /dev/nvidia[0-9]*; exec 3<"$1"; exec sleep 3600']
      env:
        - {name: NCCL_IB_HCA, value: mlx5_0}
        - {name: NCCL_DEBUG, value: INFO}
      resources:
        limits: {nvidia.com/gpu: 1}
YAML
k wait --for condition=Ready pod/training --timeout 180s >/dev/null || fail "the training pod is not Ready"
given="$(k exec training -- sh -c 'echo $NVIDIA_VISIBLE_DEVICES' 2>/dev/null || true)"
echo "training pod Ready; the kubelet gave it ${given:-?} ($(grep -c allocated "$work/device-plugin.log")" \
  "Allocate call(s) at the plugin)"
verdict=""
for _ in $(seq 1 120); do
  verdict="$(k get pod training -o jsonpath='{.metadata.annotations.nccl-triage\.io/verdict}')"
  [ -n "$verdict" ] && break
  sleep 1
done
echo "training pod annotations: verdict=$verdict causes=$(k get pod training -o jsonpath='{.metadata.annotations.nccl-triage\.io/causes}')"
[ -n "$verdict" ] && [ "$verdict" != healthy ] || fail "the agent did not annotate the training pod with a verdict"
curl -s -o "$work/status.json" --max-time 60 -H "Authorization: Bearer $admin" \
  "http://$NODE_IP:$agent_port/status" || true
python3 - "$work/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s.get("workloads") or []
containers = w.get("containers", []) if isinstance(w, dict) else w
mine = [c for c in containers if c.get("pod") == "training"]
if not mine:
    sys.exit("FAIL: the agent's /status does not list the training pod: " + json.dumps(w)[:800])
c = mine[0]
print(f"agent /status: training/{c.get('container')} verdict {c.get('verdict') or c.get('class')}, "
      f"causes {c.get('causes')}, GPUs {c.get('gpus')}, findings " +
      ", ".join(f"{f.get('check')}={f.get('status')}" for f in c.get("findings", []) if f.get("status") not in ("pass", "PASS")))
# The container's RDMA finding says where the agent read what the pod was given: the pod spec
# and, with the socket mounted, the kubelet's pod-resources List (the plugin's assignment).
text = json.dumps(c)
if "kubelet pod-resources List" not in text:
    sys.exit("FAIL: the training pod was judged without the kubelet's pod-resources API: " + text[:1500])
rdma = [f for f in c.get("findings", []) if f.get("check") == "container.rdma_devices"]
print("container.rdma_devices: " + (json.dumps(rdma[0])[:400] if rdma else "absent"))
PY

# 4c. A real Prometheus scrapes the release's pods (the training pod's series included).
"$here/node_prometheus.sh" "$ktools" "$work" "$src" kt kt-nccl-triage "$NODE" training ||
  fail "Prometheus does not scrape the chart's pods as docs/install.md says"

# 5. The agent's container stopped under the kubelet (crictl, on the runtime): it is restarted.
pod="$(k get pods -n kt -l app.kubernetes.io/component=agent -o name | head -1)"
printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\n' \
  "$CONTAINERD_SOCK" "$CONTAINERD_SOCK" >"$work/crictl.yaml"
crictl=("$ntools/bin/crictl" --config "$work/crictl.yaml")
cid="$("${crictl[@]}" ps -q --name '^agent$' | head -1)"
[ -n "$cid" ] || fail "crictl finds no running agent container"
"${crictl[@]}" stop --timeout 0 "$cid" >/dev/null
restarts=0
for _ in $(seq 1 120); do
  restarts="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
  ready="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].ready}')"
  [ "${restarts:-0}" -ge 1 ] && [ "$ready" = true ] && break
  sleep 1
done
echo "agent container stopped with crictl: restarts=$restarts ready=$ready"
[ "${restarts:-0}" -ge 1 ] && [ "$ready" = true ] || fail "the kubelet did not restart the agent"
# 6. The coordinator's pod deleted: the Deployment makes another, the agent connects to it.
replacement_coordinator() {  # OLD: the coordinator pod made after OLD was deleted, once Ready
  local old=$1 new=""
  for _ in $(seq 1 120); do
    new="$(k get pods -n kt -l app.kubernetes.io/component=coordinator -o name | grep -v "^$old\$" | head -1)"
    [ -n "$new" ] && break; sleep 1
  done
  [ -n "$new" ] || fail "no new coordinator pod after $old" >&2
  k wait -n kt --for condition=Ready "$new" --timeout 180s >/dev/null || fail "$new not Ready" >&2
  echo "$new"
}
old="$(k get pods -n kt -l app.kubernetes.io/component=coordinator -o name | head -1)"
k delete -n kt "$old" --wait=false >/dev/null
new="$(replacement_coordinator "$old")" || exit 1
coordinator_status || fail "the agent did not connect to the new coordinator"
echo "coordinator $old deleted: $new Ready, agent connected again ($((SECONDS - start_s)) s so far)"

# 6b. Remediation on the real Node, dry-run then taint. One node cannot have a fault localised to
# it (the A/B probes need a known-good peer, and this machine cannot probe at all), so the fault
# comes as a restarted coordinator finds one: confirmed in its state ConfigMap, as the coordinator
# before it wrote it (coordinator/state_store.h). The DaemonSet "tolerant" (it tolerates the
# taint) runs a pod before the taint: it stays; one made after it without the toleration gets no
# pod; the agent stays Ready.
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: kt-nccl-triage-state, namespace: kt}
data:
  faults: '[{"kind": "node", "nodes": ["$NODE"], "class": "ib_resource", "causes": ["ib.port_state"],
    "reason": "confirmed by an earlier coordinator (the test writes it)", "seen": 2, "unseen": 0,
    "confirmed": true}]'
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: tolerant, namespace: default}
spec:
  selector: {matchLabels: {app: tolerant}}
  template:
    metadata: {labels: {app: tolerant}}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      tolerations: [{key: nccl-triage.io/fault, operator: Exists, effect: NoSchedule}]
      containers:
        - {name: main, image: docker.io/library/kt-shell:test, imagePullPolicy: Never,
           command: [sleep, "3600"]}
YAML
k rollout status daemonset/tolerant --timeout 120s >/dev/null || fail "the DaemonSet tolerant has no pod"
tolerant_uid="$(k get pods -l app=tolerant -o jsonpath='{.items[0].metadata.uid}')"
sweep() {  # the coordinator's POST /sweep (its bearer token is the chart's token)
  curl -s -o /dev/null -w '%{http_code}' --max-time 120 -X POST \
    -H "Authorization: Bearer node-test-token" "http://$coord_ip:$coord_http/sweep" || true
}
remediation_mode() {  # MODE: helm upgrade, the coordinator restarts and reads the state
  "$ktools/bin/helm" --kubeconfig "$work/kubeconfig" upgrade kt "$chart" -n kt --reuse-values \
    --set "config.remediation.mode=$1" --set config.remediation.max_percent=100 >/dev/null
  k -n kt rollout status deployment/kt-nccl-triage-coordinator --timeout 240s >/dev/null ||
    fail "the coordinator did not roll out in remediation mode $1"
  # (the config changed: the agents roll too)
  k -n kt rollout status daemonset/kt-nccl-triage-agent --timeout 240s >/dev/null ||
    fail "the agents did not roll out in remediation mode $1"
  coordinator_status || fail "the agent did not connect to the coordinator in mode $1"
}
node_events() {
  k get events -A --field-selector "involvedObject.name=$NODE" \
    -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | sort -u | tr '\n' ' '
}
remediation_mode dry-run
for _ in $(seq 1 30); do
  code="$(sweep)"
  node_events | grep -q NcclTriageWouldTaint && break
  sleep 2
done
taints="$(k get node "$NODE" -o jsonpath='{.spec.taints}')"
echo "remediation dry-run: POST /sweep -> $code; events on the Node: $(node_events); taints: ${taints:-none}"
node_events | grep -q NcclTriageWouldTaint || fail "no NcclTriageWouldTaint event in dry-run"
[ -z "$taints" ] || fail "dry-run changed the node's taints"
remediation_mode taint
for _ in $(seq 1 30); do
  code="$(sweep)"
  taints="$(k get node "$NODE" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect} {end}')"
  case "$taints" in *nccl-triage.io/fault=ib_resource:NoSchedule*) break ;; esac
  sleep 2
done
echo "remediation taint: taints $taints; annotation nccl-triage.io/remediated=$(k get node "$NODE" \
  -o jsonpath='{.metadata.annotations.nccl-triage\.io/remediated}'); events: $(node_events)"
case "$taints" in *nccl-triage.io/fault=ib_resource:NoSchedule*) ;; *) fail "the node was not tainted" ;; esac
k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: intolerant, namespace: default}
spec:
  selector: {matchLabels: {app: intolerant}}
  template:
    metadata: {labels: {app: intolerant}}
    spec:
      automountServiceAccountToken: false
      containers:
        - {name: main, image: docker.io/library/kt-shell:test, imagePullPolicy: Never,
           command: [sleep, "3600"]}
YAML
sleep 5
now_uid="$(k get pods -l app=tolerant -o jsonpath='{.items[0].metadata.uid}')"
now_ready="$(k get pods -l app=tolerant -o jsonpath='{.items[0].status.containerStatuses[0].ready}')"
intolerant="$(k get daemonset intolerant -o jsonpath='{.status.desiredNumberScheduled}')"
agent_ready="$(k get pods -n kt -l app.kubernetes.io/component=agent -o jsonpath='{.items[0].status.containerStatuses[0].ready}')"
echo "after the taint: the tolerant DaemonSet's pod $([ "$now_uid" = "$tolerant_uid" ] && echo stays) (ready=$now_ready);" \
  "a DaemonSet without the toleration gets ${intolerant:-?} pod(s); the agent ready=$agent_ready"
[ "$now_uid" = "$tolerant_uid" ] && [ "$now_ready" = true ] || fail "the tolerated DaemonSet's pod did not stay"
[ "${intolerant:-x}" = 0 ] || fail "a DaemonSet without the toleration was scheduled on the tainted node"
[ "$agent_ready" = true ] || fail "the agent is not ready on the tainted node"
k delete daemonset tolerant intolerant --wait=false >/dev/null

# 6c. The agent's container and the coordinator's pod killed together (a rollout of both, a node
# that lost both at once): the kubelet restarts the agent, the Deployment makes a coordinator,
# and the new coordinator still holds the node's fault confirmed (from its state ConfigMap, not
# from the agent), the taint stays, and nothing is tainted twice.
tainted_events() {  # count of NcclTriageTainted events on the Node (an event's count included)
  k get events -A --field-selector "involvedObject.name=$NODE,reason=NcclTriageTainted" \
    -o jsonpath='{range .items[*]}{.count}{"\n"}{end}' | awk '{n += ($1 == "" ? 1 : $1)} END {print n + 0}'
}
tainted_before="$(tainted_events)"
pod="$(k get pods -n kt -l app.kubernetes.io/component=agent -o name | head -1)"
restarts_before="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
old="$(k get pods -n kt -l app.kubernetes.io/component=coordinator -o name | head -1)"
cid="$("${crictl[@]}" ps -q --name '^agent$' | head -1)"
[ -n "$cid" ] || fail "crictl finds no running agent container"
"${crictl[@]}" stop --timeout 0 "$cid" >/dev/null
k delete -n kt "$old" --grace-period=0 --force --wait=false >/dev/null 2>&1
new="$(replacement_coordinator "$old")" || exit 1
for _ in $(seq 1 120); do
  restarts="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')"
  ready="$(k get -n kt "$pod" -o jsonpath='{.status.containerStatuses[0].ready}')"
  [ "${restarts:-0}" -gt "${restarts_before:-0}" ] && [ "$ready" = true ] && break
  sleep 1
done
[ "${restarts:-0}" -gt "${restarts_before:-0}" ] && [ "$ready" = true ] ||
  fail "the kubelet did not restart the agent killed with the coordinator"
coordinator_status || fail "the agent did not connect to the coordinator made after the kill"
confirmed="$(python3 - "$work/coordinator-status.json" "$NODE" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ".join("%s:%s" % (f.get("class"), ",".join(f.get("causes", []))) for f in s.get("faults", [])
               if sys.argv[2] in f.get("nodes", []) and f.get("confirmed")))
PY
)"
taints="$(k get node "$NODE" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect} {end}')"
code="$(sweep)"
sleep 3
tainted_after="$(tainted_events)"
echo "agent container and coordinator pod killed together: agent restarts=$restarts ready=$ready," \
  "$new Ready; the node's confirmed fault: ${confirmed:-none}; taints: ${taints:-none};" \
  "NcclTriageTainted events $tainted_before -> $tainted_after after a sweep (POST /sweep -> $code)"
[ -n "$confirmed" ] || fail "the new coordinator lost the node's confirmed fault"
case "$taints" in *nccl-triage.io/fault=ib_resource:NoSchedule*) ;; *) fail "the taint went" ;; esac
[ "$tainted_after" = "$tainted_before" ] || fail "the node was tainted again"

echo "NOT SHOWN HERE (this cluster or machine cannot): verdicts on a GPU, a CUDA driver or an"
echo "  HCA (this machine has none: the plugin's devices are stand-ins), A/B probes between nodes"
echo "  (one node: the remediated fault is one the coordinator's state held), Prometheus' own"
echo "  Kubernetes discovery (Debian builds Prometheus without it: the scrape above used file_sd)."
[ -n "$nccl" ] || echo "  No NCCL library given: probe.nccl.fromImage not shown either."

# 7. helm uninstall: the pre-delete hook stops the agents and the coordinator (the agents remove
# their state directory as their DaemonSet is being deleted), then removes the condition, the
# annotations and any taint of ours. Nothing of the release is left.
ls "$state_dir" >/dev/null 2>&1 || fail "the agent wrote no state directory ($state_dir)"
echo "before uninstall: $state_dir holds $(ls "$state_dir" | tr '\n' ' ')"
# The agent's last words (its log goes with its pod).
k logs -n kt -f "$(k get pods -n kt -l app.kubernetes.io/component=agent -o name | head -1)" \
  >"$work/agent-last.log" 2>&1 &
follow=$!
t0=$SECONDS
"$ktools/bin/helm" --kubeconfig "$work/kubeconfig" uninstall kt -n kt --wait --timeout 300s >/dev/null ||
  fail "helm uninstall failed"
echo "helm uninstall done in $((SECONDS - t0)) s; the agent said: $(grep -o 'stopping on SIGTERM' "$work/agent-last.log" | head -1)," \
  "$(grep -o 'the release is being uninstalled: .*' "$work/agent-last.log" | head -1)"
kill "$follow" 2>/dev/null || true
left=0
# (the garbage collector takes the hook Job's pod a moment after helm deleted the Job)
for _ in $(seq 1 60); do
  objs="$(k get all,configmap,secret,serviceaccount,role,rolebinding,lease -n kt -o name 2>/dev/null |
    grep -v -e '^configmap/kube-root-ca.crt$' -e '^serviceaccount/default$' || true)"
  [ -z "$objs" ] && break
  sleep 1
done
[ -z "$objs" ] || { echo "left in namespace kt: $(echo $objs)"; left=1; }
cluster_objs="$(k get clusterrole,clusterrolebinding,validatingadmissionpolicy,validatingadmissionpolicybinding \
  -l app.kubernetes.io/instance=kt -o name 2>/dev/null || true)"
[ -z "$cluster_objs" ] || { echo "left cluster-wide: $cluster_objs"; left=1; }
k get node "$NODE" -o json >"$work/node-after.json"
node_left="$(python3 - "$work/node-after.json" <<'PY'
import json, sys
n = json.load(open(sys.argv[1]))
out = ["taint " + t["key"] for t in n["spec"].get("taints", []) if t["key"].startswith("nccl-triage.io/")]
out += ["annotation " + a for a in n["metadata"].get("annotations", {}) if a.startswith("nccl-triage.io/")]
out += ["condition " + c["type"] for c in n["status"].get("conditions", []) if c["type"] == "NcclFabricReady"]
print(", ".join(out))
PY
)"
[ -z "$node_left" ] || { echo "left on the Node: $node_left"; left=1; }
pod_left="$(k get pod training -o jsonpath='{.metadata.annotations}' | python3 -c '
import json, sys
t = sys.stdin.read().strip()
print(" ".join(k for k in (json.loads(t) if t else {}) if k.startswith("nccl-triage.io/")))')"
[ -z "$pod_left" ] || { echo "left on the training pod: $pod_left"; left=1; }
# The files go; the directory (the hostPath volume's source) goes too where the agent can reach
# the host's root as pid 1 sees it. This machine's pid 1 refuses that (EACCES, as the workload
# checks above show for its namespaces): an empty directory stays, and the test says so.
if [ -e "$state_dir" ] && [ -n "$(ls -A "$state_dir")" ]; then
  echo "left on the host: $state_dir ($(ls -A "$state_dir" | tr '\n' ' '))"; left=1
elif [ -e "$state_dir" ]; then
  echo "NOT SHOWN HERE: the state directory's own removal (this machine's pid 1 cannot be entered" \
    "from a pod: $state_dir stays, empty)"
fi
[ "$left" = 0 ] || fail "helm uninstall left something of ours"
echo "after helm uninstall: nothing of the release in namespace kt or cluster-wide, no taint," \
  "annotation or condition of ours on the Node or the training pod, no state file on the host"
k delete pod training --wait=false >/dev/null
echo "PASS in $((SECONDS - start_s)) s"
