#!/usr/bin/env bash
# The chart's agent as a real pod on the one-node cluster of node.sh: a plain pod runs first (the
# runtime, CNI and the sandbox image work), then `helm install` of the chart with an image
# assembled from the build's binaries (node_images.sh). The agent's pod must reach Running and
# Ready through the kubelet's own probes on /livez and /readyz, stay without restarts, and serve
# /status (behind the API server: 401 without a token, 200 with an admin's) with its node named
# and a verdict that is not healthy (this machine has no GPU, no NCCL and no HCA). Says what it
# does not show. With NCCL_LIBRARY (the tests' fake NCCL), `helm upgrade` then sets
# probe.nccl.fromImage to a training image carrying it: the DaemonSet rolls, the initContainer
# copies the library, and the agent's probes find it (no longer no_nccl). Last, the agent's
# container is stopped on the runtime (crictl): the kubelet restarts it. Usage:
#   node_agent.sh K8S_TOOLS NODE_TOOLS WORK CHART SOURCE_DIR SERVER_BINARY CLI_BINARY [NCCL_LIBRARY]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ktools="$1"; ntools="$2"; work="$3"; chart="$4"; src="$5"; server="$6"; cli="$7"; nccl="${8:-}"
start_s=$SECONDS
mkdir -p "$work"; work="$(cd "$work" && pwd)"
keep="${NODE_AGENT_KEEP:-}"          # set: leave the cluster running for a look
cleanup() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    echo "--- kubelet log (last lines)"; tail -25 "$work/kubelet.log" 2>/dev/null || true
    echo "--- pods"; k get pods -A -o wide 2>/dev/null || true
    k describe pods -n kt 2>/dev/null | tail -40 || true
  fi
  [ -n "$keep" ] || "$here/node.sh" stop "$work" >/dev/null 2>&1 || true
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

# 2. The chart. The node is labelled as a GPU node (the agent's nodeSelector); the agent's API
# address is the API server's (no kube-proxy runs: the Service kubernetes has no path from a pod);
# its port and the kubelet directory are this run's.
k label node "$NODE" nvidia.com/gpu.present=true --overwrite >/dev/null
agent_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cat >"$work/values-node.yaml" <<YAML
image: {registry: docker.io/library, repository: nccl-triage, tag: test, pullPolicy: Never}
token: {value: node-test-token}
coordinator: {enabled: false}
config:
  agent:
    listen: $NODE_IP:$agent_port
    node_condition: true
    events: true
  kernel:
    state_dir: $work/agent-state
agent:
  env:
    - {name: KUBERNETES_SERVICE_HOST, value: 127.0.0.1}
    - {name: KUBERNETES_SERVICE_PORT, value: "$API_PORT"}
  hostMounts:
    podResourcesPath: $KUBELET_ROOT/pod-resources
  livenessProbe: {initialDelaySeconds: 5, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3}
  readinessProbe: {initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3}
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
echo "NOT SHOWN HERE (this cluster or machine cannot): the coordinator and the agents' path"
echo "  through its Service (no kube-proxy, no CoreDNS; coordinator.enabled false), verdicts on a"
echo "  GPU, a CUDA driver or an HCA (this machine has none), a device plugin and the pod-resources"
echo "  API with GPUs, Prometheus scraping the pod, remediation on this node.$([ -n "$nccl" ] ||
  echo ' No NCCL library given: probe.nccl.fromImage not shown either.')"

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
"$ktools/bin/helm" --kubeconfig "$work/kubeconfig" uninstall kt -n kt --wait >/dev/null
echo "PASS in $((SECONDS - start_s)) s"
