#!/usr/bin/env bash
# Builds the pinned node components of the one-node cluster of the tests: kubelet,
# kube-scheduler, kube-controller-manager, kube-proxy and crictl (tools/kubelet/go.mod, the
# Kubernetes pin of tools/k8s), containerd 2, its runc shim, ctr, runc and the CNI plugins bridge,
# host-local, loopback and portmap (tools/containerd/go.mod) and CoreDNS (tools/coredns).
# Cached like scripts/k8s-tools.sh, under its own key, so the tools of tools/k8s are not rebuilt
# when these pins move (and the reverse).
#   scripts/kubelet-tools.sh          build what is missing; prints the tools directory last
#   scripts/kubelet-tools.sh --dir    prints the tools directory only (built or not)
# The directory holds bin/{kubelet,kube-scheduler,kube-controller-manager,kube-proxy,crictl,
# containerd,containerd-shim-runc-v2,ctr,runc,coredns}, cni/{bridge,host-local,loopback,portmap},
# versions.txt.
# Cache root: $NCCL_TRIAGE_KUBELET_TOOLS_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/nccl-triage/kubelet-tools.
# Builds run under `nice` with GOFLAGS=-p=${K8S_TOOLS_JOBS:-2}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kmod="$(dirname "$here")/tools/kubelet"
cmod="$(dirname "$here")/tools/containerd"
dmod="$(dirname "$here")/tools/coredns"
cache="${NCCL_TRIAGE_KUBELET_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nccl-triage/kubelet-tools}"
key="$(cat "$kmod/go.mod" "$kmod/go.sum" "$kmod/tools.go" "$cmod/go.mod" "$cmod/go.sum" \
           "$cmod/tools.go" "$dmod/go.mod" "$dmod/go.sum" "$dmod/main.go" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
dir="$cache/$key"
if [ "${1:-}" = "--dir" ]; then echo "$dir"; exit 0; fi
if [ -f "$dir/complete" ]; then echo "$dir"; exit 0; fi

go="$("$here/go.sh" --which)" || exit 1
export PATH="$(dirname "$go"):$PATH" GOFLAGS="-mod=readonly -trimpath -buildvcs=false -p=${K8S_TOOLS_JOBS:-2}"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9                                      # one build at a time; a waiter then finds it done
if [ -f "$dir/complete" ]; then echo "$dir"; exit 0; fi

tmp="$cache/.build-$key-$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/cni"
trap 'rm -rf "$tmp"' EXIT
version() { (cd "$1" && go list -m -f '{{.Version}}' "$2"); }
kube="$(version "$kmod" k8s.io/kubernetes)"; crictl="$(version "$kmod" sigs.k8s.io/cri-tools)"
ctd="$(version "$cmod" github.com/containerd/containerd/v2)"
runc="$(version "$cmod" github.com/opencontainers/runc)"
cni="$(version "$cmod" github.com/containernetworking/plugins)"
coredns="$(version "$dmod" github.com/coredns/coredns)"
kmajor="${kube#v}"; kminor="${kmajor#*.}"; kminor="${kminor%%.*}"; kmajor="${kmajor%%.*}"
kv="-X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=$kmajor
    -X k8s.io/component-base/version.gitMinor=$kminor -X k8s.io/component-base/version.gitTreeState=clean
    -X k8s.io/client-go/pkg/version.gitVersion=$kube -X k8s.io/client-go/pkg/version.gitMajor=$kmajor
    -X k8s.io/client-go/pkg/version.gitMinor=$kminor"
cv="-X github.com/containerd/containerd/v2/version.Version=$ctd
    -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
build() {  # MODULE_DIR OUT PACKAGE LDFLAGS [go build flags...]
  local mdir="$1" out="$2" pkg="$3" ld="$4"; shift 4
  local start=$SECONDS
  echo "kubelet-tools: building $(basename "$out") ($pkg)" >&2
  (cd "$mdir" && nice -n 10 go build "$@" -ldflags "-s -w $ld" -o "$out" "$pkg")
  echo "kubelet-tools: $(basename "$out") built in $((SECONDS - start)) s" >&2
}
total=$SECONDS
# runc with seccomp (Debian's libseccomp-dev: containerd gives every pod sandbox the runtime's
# default profile, which a runc without it refuses) and without libpathrs (a Rust library; runc
# falls back to its Go implementation).
build "$cmod" "$tmp/bin/runc" github.com/opencontainers/runc "-X main.version=${runc#v}" \
  -tags seccomp,urfave_cli_no_docs
# The shim is static without cgo, as containerd's own Makefile builds it.
CGO_ENABLED=0 build "$cmod" "$tmp/bin/containerd-shim-runc-v2" \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$cv" -tags urfave_cli_no_docs,no_grpc
build "$cmod" "$tmp/bin/containerd" github.com/containerd/containerd/v2/cmd/containerd "$cv" \
  -tags urfave_cli_no_docs,no_btrfs,no_devmapper,no_zfs
build "$cmod" "$tmp/bin/ctr" github.com/containerd/containerd/v2/cmd/ctr "$cv" -tags urfave_cli_no_docs
for p in main/bridge ipam/host-local main/loopback meta/portmap; do
  CGO_ENABLED=0 build "$cmod" "$tmp/cni/${p#*/}" "github.com/containernetworking/plugins/plugins/$p" \
    "-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$cni"
done
build "$kmod" "$tmp/bin/kubelet" k8s.io/kubernetes/cmd/kubelet "$kv"
build "$kmod" "$tmp/bin/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler "$kv"
build "$kmod" "$tmp/bin/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager "$kv"
build "$kmod" "$tmp/bin/kube-proxy" k8s.io/kubernetes/cmd/kube-proxy "$kv"
# Static: it runs in a pod of an image holding only itself (tests/k8s/node.sh).
CGO_ENABLED=0 build "$dmod" "$tmp/bin/coredns" . \
  "-X github.com/coredns/coredns/coremain.GitCommit=$coredns"
build "$kmod" "$tmp/bin/crictl" sigs.k8s.io/cri-tools/cmd/crictl \
  "-X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl"
printf 'kubernetes %s\ncri-tools %s\ncontainerd %s\nrunc %s\ncni-plugins %s\ncoredns %s\ngo %s\n' \
  "$kube" "$crictl" "$ctd" "$runc" "$cni" "$coredns" "$(go env GOVERSION)" >"$tmp/versions.txt"
echo "kubelet-tools: all built in $((SECONDS - total)) s" >&2
touch "$tmp/complete"
rm -rf "$dir"; mv "$tmp" "$dir"; trap - EXIT
echo "$dir"
