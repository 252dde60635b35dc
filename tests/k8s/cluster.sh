#!/usr/bin/env bash
# A real, single-node-less Kubernetes control plane for the tests: etcd and kube-apiserver of the
# pinned tools (scripts/k8s-tools.sh), on 127.0.0.1 at free ports, with RBAC and the
# ValidatingAdmissionPolicy admission of a real cluster, and the prometheus-operator CRDs of the
# pinned module. No kubelet or controllers run: objects are stored and validated, not acted on
# (a Deployment makes no pods; a test creates the pods it needs, and a namespace's default
# ServiceAccount).
#   cluster.sh start TOOLS_DIR WORK_DIR   starts it (replacing one left in WORK_DIR), waits until
#                                          it serves, writes WORK_DIR/kubeconfig (an admin of
#                                          group system:masters), WORK_DIR/ca.crt, WORK_DIR/env
#   cluster.sh stop WORK_DIR              stops it and removes its data
# With CLUSTER_ADVERTISE_IP (node.sh: the node's address), the API server also listens there and
# advertises it: the Service kubernetes (10.96.0.1) then has that endpoint, so that pods reach the
# API server through kube-proxy as in a real cluster.
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 1; }
stop() {
  local work="$1" pid
  for f in "$work/kube-apiserver.pid" "$work/etcd.pid"; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
  rm -rf "$work/etcd-data"
}
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd="${1:-}"
case "$cmd" in
  stop) [ $# -eq 2 ] || die "usage: cluster.sh stop WORK_DIR"; stop "$2"; echo "cluster stopped"; exit 0 ;;
  start) [ $# -eq 3 ] || die "usage: cluster.sh start TOOLS_DIR WORK_DIR" ;;
  *) die "usage: cluster.sh start TOOLS_DIR WORK_DIR | stop WORK_DIR" ;;
esac
tools="$2"; work="$3"
bin="$tools/bin"
for t in etcd kube-apiserver kubectl; do
  [ -x "$bin/$t" ] || die "$bin/$t missing: run scripts/k8s-tools.sh"
done
mkdir -p "$work"; work="$(cd "$work" && pwd)"
stop "$work"
pki="$work/pki"; mkdir -p "$pki"

# A CA, the API server's serving certificate (127.0.0.1, localhost, the Service's names and
# address, CLUSTER_ADVERTISE_IP), the service-account signing key and an admin token. Made once
# per work directory (the certificate again when its names change).
advertise="${CLUSTER_ADVERTISE_IP:-}"
san="IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
san="$san,IP:10.96.0.1${advertise:+,IP:$advertise}"
if [ -f "$pki/ext" ] && ! grep -qxF "subjectAltName=$san" "$pki/ext"; then rm -f "$pki/apiserver.crt"; fi
if [ ! -f "$pki/ca.key" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=nccl-triage-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),admin,admin,system:masters" >"$pki/tokens.csv"
fi
if [ ! -f "$pki/apiserver.crt" ]; then
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$pki/ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 30 -extfile "$pki/ext" -out "$pki/apiserver.crt" 2>/dev/null
fi
cp "$pki/ca.crt" "$work/ca.crt"
admin_token="$(cut -d, -f1 "$pki/tokens.csv")"

for attempt in 1 2 3; do
  etcd_port="$(free_port)"; peer_port="$(free_port)"; api_port="$(free_port)"
  rm -rf "$work/etcd-data"
  "$bin/etcd" --name test --data-dir "$work/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "test=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level error \
    --quota-backend-bytes $((2 * 1024 * 1024 * 1024)) >"$work/etcd.log" 2>&1 &
  echo $! >"$work/etcd.pid"
  if [ -n "$advertise" ]; then
    listen=(--bind-address 0.0.0.0 --advertise-address "$advertise" --endpoint-reconciler-type lease)
  else
    listen=(--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none)
  fi
  "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" "${listen[@]}" \
    --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$pki/tokens.csv" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/16 --allow-privileged \
    --enable-priority-and-fairness=false --profiling=false \
    --kubelet-preferred-address-types InternalIP >"$work/kube-apiserver.log" 2>&1 &
  echo $! >"$work/kube-apiserver.pid"

  cat >"$work/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$work/ca.crt"}
users:
- name: admin
  user: {token: "$admin_token"}
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
KC
  printf 'API_PORT=%s\nETCD_PORT=%s\nAPI_SERVER=https://127.0.0.1:%s\n' "$api_port" "$etcd_port" "$api_port" >"$work/env"
  # Ready: /readyz answers ok (generous: a loaded CI machine starts it slowly).
  for _ in $(seq 1 600); do
    kill -0 "$(cat "$work/kube-apiserver.pid")" 2>/dev/null || break
    if "$bin/kubectl" --kubeconfig "$work/kubeconfig" get --raw /readyz >/dev/null 2>&1; then
      ready=1; break
    fi
    sleep 0.2
  done
  [ "${ready:-0}" = 1 ] && break
  echo "cluster.sh: attempt $attempt did not start (ports $etcd_port/$api_port); last log lines:" >&2
  tail -5 "$work/kube-apiserver.log" "$work/etcd.log" >&2 || true
  stop "$work"
done
[ "${ready:-0}" = 1 ] || die "kube-apiserver did not become ready (see $work/kube-apiserver.log)"

k() { "$bin/kubectl" --kubeconfig "$work/kubeconfig" "$@"; }
# The prometheus-operator CRDs (server-side: they exceed the last-applied annotation's limit).
k apply --server-side -f "$tools/crds" >/dev/null
k wait --for condition=Established --timeout 120s -f "$tools/crds" >/dev/null
# The default ServiceAccount that kube-controller-manager would create.
k create serviceaccount default -n default >/dev/null 2>&1 || true
echo "cluster ready: https://127.0.0.1:$api_port ($(k version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])'))"
