#!/usr/bin/env bash
# Builds the pinned Kubernetes tools of tools/k8s/go.mod (helm, kube-apiserver, kubectl, etcd,
# kwok) and copies the prometheus-operator CRDs of the pinned module, once: the result is cached
# outside the clone, in a directory named after the hash of go.mod and go.sum, so a second run
# (or another clone at the same pins) reuses it.
#   scripts/k8s-tools.sh          build what is missing; prints the tools directory last
#   scripts/k8s-tools.sh --dir    prints the tools directory only (built or not)
# The directory holds bin/{helm,kube-apiserver,kubectl,etcd,kwok}, crds/*.yaml, versions.txt.
# Cache root: $NCCL_TRIAGE_K8S_TOOLS_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/nccl-triage/k8s-tools.
# Builds run under `nice` with GOFLAGS=-p=${K8S_TOOLS_JOBS:-2}.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$(dirname "$here")/tools/k8s"
cache="${NCCL_TRIAGE_K8S_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nccl-triage/k8s-tools}"
# The key covers the pins and how they are built (this script's flags).
key="$(cat "$mod/go.mod" "$mod/go.sum" "$mod/tools.go" "$mod/cmd/etcd/main.go" "${BASH_SOURCE[0]}" |
       sha256sum | cut -c1-16)"
dir="$cache/$key"
if [ "${1:-}" = "--dir" ]; then echo "$dir"; exit 0; fi
if [ -f "$dir/complete" ]; then echo "$dir"; exit 0; fi

go="$("$here/go.sh" --which)" || exit 1
export PATH="$(dirname "$go"):$PATH" GOFLAGS="-mod=readonly -trimpath -buildvcs=false -p=${K8S_TOOLS_JOBS:-2}"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9                                      # one build at a time; a waiter then finds it done
if [ -f "$dir/complete" ]; then echo "$dir"; exit 0; fi

tmp="$cache/.build-$key-$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin" "$tmp/crds"
trap 'rm -rf "$tmp"' EXIT
cd "$mod"
version() { go list -m -f '{{.Version}}' "$1"; }
kube="$(version k8s.io/kubernetes)"; helm="$(version helm.sh/helm/v3)"
etcd="$(version go.etcd.io/etcd/server/v3)"; kwok="$(version sigs.k8s.io/kwok)"
promop="$(version github.com/prometheus-operator/prometheus-operator)"
kmajor="${kube#v}"; kminor="${kmajor#*.}"; kminor="${kminor%%.*}"; kmajor="${kmajor%%.*}"
# helm's default .Capabilities.KubeVersion (helm template, helm lint): the Kubernetes minor of its
# client-go, as helm's own Makefile stamps it.
hv="-X helm.sh/helm/v3/internal/version.version=$helm"
for p in chartutil lint/rules; do
  hv="$hv -X helm.sh/helm/v3/pkg/$p.k8sVersionMajor=$kmajor -X helm.sh/helm/v3/pkg/$p.k8sVersionMinor=$kminor"
done

# Version stamps, as each project's own release build sets them (servers and clients report
# them; helm and kubectl compare them).
kv="-X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=$kmajor
    -X k8s.io/component-base/version.gitMinor=$kminor -X k8s.io/component-base/version.gitTreeState=clean
    -X k8s.io/client-go/pkg/version.gitVersion=$kube -X k8s.io/client-go/pkg/version.gitMajor=$kmajor
    -X k8s.io/client-go/pkg/version.gitMinor=$kminor"
build() {  # NAME PACKAGE LDFLAGS
  local start=$SECONDS
  echo "k8s-tools: building $1 ($2)" >&2
  nice -n 10 go build -ldflags "-s -w $3" -o "$tmp/bin/$1" "$2"
  echo "k8s-tools: $1 built in $((SECONDS - start)) s" >&2
}
total=$SECONDS
build helm helm.sh/helm/v3/cmd/helm "$hv"
build kubectl k8s.io/kubernetes/cmd/kubectl "$kv"
build etcd ./cmd/etcd ""
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kv"
build kwok sigs.k8s.io/kwok/cmd/kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=$kwok"

# `go mod download` fetches the module where nothing built from it did (a cold module cache).
module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
crds="$(module_dir github.com/prometheus-operator/prometheus-operator)/example/prometheus-operator-crd"
[ -d "$crds" ] || { echo "k8s-tools: no CRDs at $crds" >&2; exit 1; }
cp "$crds"/*.yaml "$tmp/crds/"
chmod -R u+w "$tmp/crds"
printf 'kubernetes %s\nhelm %s\netcd %s\nkwok %s\nprometheus-operator %s\ngo %s\n' \
  "$kube" "$helm" "$etcd" "$kwok" "$promop" "$(go env GOVERSION)" >"$tmp/versions.txt"
echo "k8s-tools: all built in $((SECONDS - total)) s" >&2
touch "$tmp/complete"
rm -rf "$dir"; mv "$tmp" "$dir"; trap - EXIT
echo "$dir"
