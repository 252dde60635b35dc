#!/usr/bin/env bash
# A real one-node cluster for the tests: the control plane of cluster.sh (etcd, kube-apiserver)
# plus kube-controller-manager, kube-scheduler, containerd 2 with runc and the CNI bridge, a
# kubelet registered as node NODE (default kt-node), kube-proxy (nftables mode: Services work,
# the API server's own included) and CoreDNS as a pod behind the Service kube-dns (10.96.0.10,
# the kubelet's cluster DNS, domain cluster.local), all of the pinned builds of
# scripts/k8s-tools.sh and scripts/kubelet-tools.sh. Pods really run: images come from
# `ctr images import` (tests/k8s/oci_image.py assembles them from this machine's files; nothing is
# pulled), including the sandbox image registry.k8s.io/pause:3.10 (tests/k8s/pause.c).
#   node.sh start K8S_TOOLS NODE_TOOLS WORK [NODE]   starts it, waits until the node is Ready;
#                                                    writes WORK/kubeconfig, WORK/env (cluster.sh's
#                                                    plus NODE, KUBELET_ROOT, CONTAINERD_SOCK)
#   node.sh import NODE_TOOLS WORK IMAGE.tar          imports an image archive for the kubelet
#   node.sh stop WORK                                 stops the pods, the node and the cluster
# Everything lives under WORK (kubelet root, containerd root and state, CNI config) and listens on
# free ports; the pods' cgroups are under one cgroup root of this run; the CNI bridge and subnet
# are named after this run, so several clusters can run on one machine. Needs root and writable
# cgroups (a privileged container is enough; cgroup v1 or v2) and nft. Two things have fixed
# names on the machine: the kubelet's device-plugin directory (/var/lib/kubelet/device-plugins,
# whatever its root directory) and kube-proxy's nftables tables. So one node of the tests runs at
# a time on a machine: `start` takes a lock file in /tmp (a second waits) and `stop` removes the
# tables, then gives the lock back.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { echo "node.sh: $*" >&2; exit 1; }
say() { echo "node.sh: $*" >&2; }

kill_pidfile() {
  local f="$1" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}
stop() {
  local work="$1" sock cg ns
  for c in kubelet kube-scheduler kube-controller-manager kube-proxy; do kill_pidfile "$work/$c.pid"; done
  # kube-proxy's tables, while this run still holds the machine's lock (they may be another's).
  if [ -f "$work/node-lock.pid" ] && kill -0 "$(cat "$work/node-lock.pid")" 2>/dev/null; then
    nft delete table ip kube-proxy 2>/dev/null || true
    nft delete table ip6 kube-proxy 2>/dev/null || true
  fi
  sock="$work/containerd/containerd.sock"
  if [ -S "$sock" ] && [ -f "$work/node-tools" ]; then
    local crictl; crictl="$(cat "$work/node-tools")/bin/crictl"
    # Pods first (their CNI teardown and mounts), while containerd still runs.
    "$crictl" -r "unix://$sock" rmp -fa >/dev/null 2>&1 || true
  fi
  kill_pidfile "$work/containerd.pid"
  # Shims left behind (each is a process of this run's containerd, found by its socket address).
  for pid in $(pgrep -f -- "-address $sock" 2>/dev/null || true); do kill -9 "$pid" 2>/dev/null || true; done
  # Mounts under WORK (snapshots, pod volumes, netns), deepest first.
  if [ -d "$work" ]; then
    awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
  if [ -f "$work/cgroup-root" ]; then
    cg="$(cat "$work/cgroup-root")"
    # Leaf-first removal of this run's cgroups in every hierarchy (empty once the pods are gone).
    for h in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts); do
      [ -d "$h$cg" ] && find "$h$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
  fi
  if [ -f "$work/bridge" ]; then ip link del "$(cat "$work/bridge")" 2>/dev/null || true; fi
  "$here/cluster.sh" stop "$work" >/dev/null
  rm -rf "$work/kubelet" "$work/containerd" "$work/cni"
  kill_pidfile "$work/node-lock.pid"
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd="${1:-}"
case "$cmd" in
  stop) [ $# -eq 2 ] || die "usage: node.sh stop WORK"; stop "$2"; echo "node stopped"; exit 0 ;;
  import)
    [ $# -eq 4 ] || die "usage: node.sh import NODE_TOOLS WORK IMAGE.tar"
    "$2/bin/ctr" -a "$3/containerd/containerd.sock" -n k8s.io images import \
      --snapshotter "$(cat "$3/snapshotter")" "$4" >/dev/null
    exit 0 ;;
  start) [ $# -ge 4 ] && [ $# -le 5 ] || die "usage: node.sh start K8S_TOOLS NODE_TOOLS WORK [NODE]" ;;
  *) die "usage: node.sh start K8S_TOOLS NODE_TOOLS WORK [NODE] | import NODE_TOOLS WORK IMAGE.tar | stop WORK" ;;
esac
ktools="$2"; ntools="$3"; work="$4"; node="${5:-kt-node}"
[ "$(id -u)" = 0 ] || die "needs root (containerd, runc, the kubelet)"
for t in kubelet kube-scheduler kube-controller-manager kube-proxy containerd containerd-shim-runc-v2 ctr runc \
         crictl coredns; do
  [ -x "$ntools/bin/$t" ] || die "$ntools/bin/$t missing: run scripts/kubelet-tools.sh"
done
mkdir -p "$work"; work="$(cd "$work" && pwd)"
stop "$work"
start_s=$SECONDS
# The machine's lock, held by a process of this run until `stop` (see the header).
lock=/tmp/nccl-triage-node.lock
exec 8>>"$lock"
if ! flock -n 8; then say "waiting for another node of the tests on this machine to stop ($lock)"; fi
exec 8>&-
flock -w 1800 "$lock" bash -c 'echo $$ >"$1"; exec sleep infinity' node-lock "$work/node-lock.pid" \
  </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 3600); do
  [ -f "$work/node-lock.pid" ] && break
  kill -0 $! 2>/dev/null || die "no lock on $lock in 30 minutes"
  sleep 0.5
done
# The node's address: the kubelet refuses a loopback one. The source address of the default
# route, else the first global IPv4 address. hostNetwork pods (the agent) have it as pod IP, so
# the kubelet's probes of them go there; the API server listens there too (the endpoint of the
# Service kubernetes, for pods).
node_ip="$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1)"
[ -n "$node_ip" ] || node_ip="$(ip -4 -o addr show scope global | awk '{sub("/.*", "", $4); print $4; exit}')"
[ -n "$node_ip" ] || die "no global IPv4 address for the node"
command -v nft >/dev/null || die "nft missing (kube-proxy's nftables mode; Debian package nftables)"
CLUSTER_ADVERTISE_IP="$node_ip" "$here/cluster.sh" start "$ktools" "$work" >/dev/null
. "$work/env"
echo "$ntools" >"$work/node-tools"
kubeconfig="$work/kubeconfig"
k() { "$ktools/bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }
run_id="kt$API_PORT"
# The pods' cgroup root: a child of this shell's own cgroup (its memory cgroup on a v1 host, so
# the pods stay inside whatever limit this machine's processes run under), the same path in every
# hierarchy, created before the kubelet starts (it refuses a root with missing paths).
parent="$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)"
[ -n "$parent" ] || parent="$(awk -F: '$1 == 0 {print $3}' /proc/self/cgroup)"
cgroot="${parent%/}/$run_id"
echo "$cgroot" >"$work/cgroup-root"
mounts="$(awk '$3 == "cgroup" {print $2}' /proc/mounts)"
[ -n "$mounts" ] || mounts="$(awk '$3 == "cgroup2" {print $2}' /proc/mounts)"
for m in $mounts; do
  d="$m"
  for part in $(echo "$cgroot" | tr / ' '); do
    d="$d/$part"
    mkdir -p "$d"
    # cpuset (v1): a new cgroup starts with no CPUs or memory nodes; inherit the parent's.
    for f in cpuset.cpus cpuset.mems; do
      if [ -f "$d/$f" ] && [ -z "$(cat "$d/$f")" ]; then cat "$(dirname "$d")/$f" >"$d/$f"; fi
    done
  done
done
echo "${run_id}br" | cut -c1-15 >"$work/bridge"

# ---------------------------------------------------------------------------------- containerd
cdir="$work/containerd"; mkdir -p "$cdir/root" "$cdir/state"
sock="$cdir/containerd.sock"
# overlayfs where the kernel lets this directory be an upper layer, else the copying snapshotter.
snap=overlayfs
probe="$cdir/overlay-probe"; mkdir -p "$probe/l" "$probe/u" "$probe/w" "$probe/m"
if ! mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
  snap=native
else
  umount "$probe/m"
fi
rm -rf "$probe"
echo "$snap" >"$work/snapshotter"
# A /24 of 10.128.0.0/9 and a bridge named after this run.
subnet="10.$((128 + API_PORT % 128)).$(( (API_PORT / 128) % 256 )).0/24"
mkdir -p "$work/cni/net.d"
cat >"$work/cni/net.d/10-kt.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "kt",
  "plugins": [
    {"type": "bridge", "bridge": "$(cat "$work/bridge")", "isGateway": true, "ipMasq": false,
     "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$work/cni/ipam"}},
    {"type": "loopback"}
  ]
}
JSON
cat >"$cdir/config.toml" <<TOML
version = 3
root = "$cdir/root"
state = "$cdir/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "$snap"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "registry.k8s.io/pause:3.10"
[plugins."io.containerd.cri.v1.runtime"]
  # The kubelet asks for a lower oom_score_adj than this process may set (a container whose own
  # is raised, without CAP_SYS_RESOURCE over it): no lower than containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$ntools/bin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$ntools/cni"]
    conf_dir = "$work/cni/net.d"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
PATH="$ntools/bin:$PATH" "$ntools/bin/containerd" --config "$cdir/config.toml" \
  >"$work/containerd.log" 2>&1 &
echo $! >"$work/containerd.pid"
for _ in $(seq 1 300); do
  "$ntools/bin/ctr" -a "$sock" version >/dev/null 2>&1 && break
  kill -0 "$(cat "$work/containerd.pid")" 2>/dev/null || { tail -20 "$work/containerd.log" >&2; die "containerd exited"; }
  sleep 0.2
done
"$ntools/bin/ctr" -a "$sock" version >/dev/null 2>&1 || die "containerd did not serve (see $work/containerd.log)"
# The sandbox image: a static pause process, assembled here.
gcc -static -O2 -o "$cdir/pause" "$here/pause.c"
python3 "$here/oci_image.py" "$cdir/pause.tar" registry.k8s.io/pause:3.10 --entrypoint /pause \
  "$cdir/pause:/pause" >/dev/null
"$ntools/bin/ctr" -a "$sock" -n k8s.io images import --snapshotter "$snap" "$cdir/pause.tar" >/dev/null

# ------------------------------------------------------------------- controllers and scheduler
cm_port="$(free_port)"; sched_port="$(free_port)"
"$ntools/bin/kube-controller-manager" --kubeconfig "$kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port "$cm_port" --root-ca-file "$work/ca.crt" \
  --service-account-private-key-file "$work/pki/sa.key" --use-service-account-credentials=false \
  >"$work/kube-controller-manager.log" 2>&1 &
echo $! >"$work/kube-controller-manager.pid"
"$ntools/bin/kube-scheduler" --kubeconfig "$kubeconfig" --leader-elect=false \
  --bind-address 127.0.0.1 --secure-port "$sched_port" >"$work/kube-scheduler.log" 2>&1 &
echo $! >"$work/kube-scheduler.pid"

# ------------------------------------------------------------------------------------- kubelet
kroot="$work/kubelet"; mkdir -p "$kroot"
kubelet_port="$(free_port)"; healthz_port="$(free_port)"
cat >"$work/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 hosts (these machines are hybrid v1): the kubelet refuses them unless told.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: $cgroot
containerRuntimeEndpoint: unix://$sock
address: $node_ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
# A shared test machine: no eviction, no image garbage collection, no local storage accounting.
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
resolvConf: /etc/resolv.conf
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
podPidsLimit: -1
maxPods: 30
YAML
"$ntools/bin/kubelet" --config "$work/kubelet-config.yaml" --kubeconfig "$kubeconfig" \
  --root-dir "$kroot" --hostname-override "$node" --node-ip "$node_ip" \
  >"$work/kubelet.log" 2>&1 &
echo $! >"$work/kubelet.pid"
for _ in $(seq 1 600); do
  kill -0 "$(cat "$work/kubelet.pid")" 2>/dev/null || { tail -20 "$work/kubelet.log" >&2; die "kubelet exited"; }
  st="$(k get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)"
  [ "$st" = True ] && break
  sleep 0.5
done
[ "${st:-}" = True ] || { tail -20 "$work/kubelet.log" >&2; die "node $node not Ready (see $work/kubelet.log)"; }
# The kubelet registers the node with the not-ready taint; the controller-manager's node
# lifecycle controller lifts it once the node is Ready.
for _ in $(seq 1 300); do
  taints="$(k get node "$node" -o jsonpath='{.spec.taints}' 2>/dev/null || echo pending)"
  [ -z "$taints" ] && break
  sleep 0.5
done
for c in kube-controller-manager kube-scheduler; do
  kill -0 "$(cat "$work/$c.pid")" 2>/dev/null || { tail -5 "$work/$c.log" >&2; die "$c exited"; }
done
[ -z "$taints" ] || die "node $node keeps its taints: $taints (see $work/kube-controller-manager.log)"
node_s=$((SECONDS - start_s))

# ---------------------------------------------------------------------------------- kube-proxy
proxy_health="$(free_port)"; proxy_metrics="$(free_port)"
cat >"$work/kube-proxy-config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $kubeconfig}
hostnameOverride: $node
clusterCIDR: $subnet
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:$proxy_health
metricsBindAddress: 127.0.0.1:$proxy_metrics
nodePortAddresses: [$node_ip/32]
# A shared machine: leave its conntrack table size and timeouts alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
"$ntools/bin/kube-proxy" --config "$work/kube-proxy-config.yaml" >"$work/kube-proxy.log" 2>&1 &
echo $! >"$work/kube-proxy.pid"
for _ in $(seq 1 600); do
  kill -0 "$(cat "$work/kube-proxy.pid")" 2>/dev/null || { tail -20 "$work/kube-proxy.log" >&2; die "kube-proxy exited"; }
  curl -sf "http://127.0.0.1:$proxy_health/healthz" >/dev/null 2>&1 && break
  sleep 0.5
done
curl -sf "http://127.0.0.1:$proxy_health/healthz" >/dev/null 2>&1 ||
  { tail -20 "$work/kube-proxy.log" >&2; die "kube-proxy not healthy (see $work/kube-proxy.log)"; }

# ------------------------------------------------------------------------------------- CoreDNS
python3 "$here/oci_image.py" "$cdir/coredns.tar" registry.k8s.io/coredns/coredns:kt \
  --entrypoint /coredns "$ntools/bin/coredns:/coredns" >/dev/null
"$ntools/bin/ctr" -a "$sock" -n k8s.io images import --snapshotter "$snap" "$cdir/coredns.tar" >/dev/null
k apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kt:coredns}
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kt:coredns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kt:coredns}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: coredns, namespace: kube-system}
data:
  Corefile: |
    .:53 {
        errors
        health :8080
        ready :8181
        kubernetes cluster.local in-addr.arpa ip6.arpa {
            pods insecure
            fallthrough in-addr.arpa ip6.arpa
        }
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  replicas: 1
  selector: {matchLabels: {k8s-app: kube-dns}}
  template:
    metadata: {labels: {k8s-app: kube-dns}}
    spec:
      serviceAccountName: coredns
      dnsPolicy: Default
      terminationGracePeriodSeconds: 1
      containers:
        - name: coredns
          image: registry.k8s.io/coredns/coredns:kt
          imagePullPolicy: Never
          args: [-conf, /etc/coredns/Corefile]
          ports:
            - {name: dns, containerPort: 53, protocol: UDP}
            - {name: dns-tcp, containerPort: 53, protocol: TCP}
          readinessProbe:
            httpGet: {path: /ready, port: 8181}
            periodSeconds: 1
          volumeMounts: [{name: config, mountPath: /etc/coredns, readOnly: true}]
      volumes: [{name: config, configMap: {name: coredns}}]
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec:
  clusterIP: 10.96.0.10
  selector: {k8s-app: kube-dns}
  ports:
    - {name: dns, port: 53, protocol: UDP}
    - {name: dns-tcp, port: 53, protocol: TCP}
YAML
k -n kube-system rollout status deployment/coredns --timeout 240s >/dev/null ||
  { k -n kube-system describe pods -l k8s-app=kube-dns | tail -20 >&2; die "CoreDNS not Ready"; }
# The path a hostNetwork pod of the chart takes: a name of the Service kubernetes, through
# kube-proxy, to CoreDNS (it answers only after it reached the API server the same way).
for _ in $(seq 1 120); do
  ans="$(python3 "$here/dns_query.py" 10.96.0.10 kubernetes.default.svc.cluster.local 2>/dev/null || true)"
  [ "$ans" = 10.96.0.1 ] && break
  sleep 0.5
done
[ "$ans" = 10.96.0.1 ] || { tail -20 "$work/kube-proxy.log" >&2; k -n kube-system logs deployment/coredns 2>&1 | tail -10 >&2
  die "kube-dns (10.96.0.10) does not answer kubernetes.default.svc.cluster.local with 10.96.0.1"; }
printf 'NODE=%s\nNODE_IP=%s\nKUBELET_ROOT=%s\nCONTAINERD_SOCK=%s\n' "$node" "$node_ip" "$kroot" "$sock" >>"$work/env"
echo "node $node Ready in $node_s s, kube-proxy and CoreDNS in $((SECONDS - start_s - node_s)) s more" \
  "($snap snapshotter, pods on $subnet)"
