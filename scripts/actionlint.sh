#!/usr/bin/env bash
# Builds actionlint at the pin of tools/actionlint/go.mod, once: the binary is cached outside the
# clone, in a directory named after the hash of go.mod and go.sum, as scripts/k8s-tools.sh does
# for the Kubernetes tools.
#   scripts/actionlint.sh          build it if missing; prints the binary's path last
#   scripts/actionlint.sh --path   prints the binary's path only (built or not)
# Cache root: $NCCL_TRIAGE_ACTIONLINT_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/nccl-triage/actionlint.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod="$(dirname "$here")/tools/actionlint"
cache="${NCCL_TRIAGE_ACTIONLINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nccl-triage/actionlint}"
key="$(cat "$mod/go.mod" "$mod/go.sum" "$mod/tools.go" "${BASH_SOURCE[0]}" |
       sha256sum | cut -c1-16)"
dir="$cache/$key"
if [ "${1:-}" = "--path" ]; then echo "$dir/bin/actionlint"; exit 0; fi
if [ -f "$dir/complete" ]; then echo "$dir/bin/actionlint"; exit 0; fi

go="$("$here/go.sh" --which)" || exit 1
export PATH="$(dirname "$go"):$PATH"
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false -p=${K8S_TOOLS_JOBS:-2}"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -f "$dir/complete" ]; then echo "$dir/bin/actionlint"; exit 0; fi
tmp="$cache/.build-$key-$$"; rm -rf "$tmp"; mkdir -p "$tmp/bin"
trap 'rm -rf "$tmp"' EXIT
cd "$mod"
version="$(go list -m -f '{{.Version}}' github.com/rhysd/actionlint)"
start=$SECONDS
echo "actionlint: building $version" >&2
# actionlint -version prints what its release build stamps here.
nice -n 10 go build -ldflags "-s -w -X github.com/rhysd/actionlint.version=$version" \
  -o "$tmp/bin/actionlint" github.com/rhysd/actionlint/cmd/actionlint
echo "actionlint: built in $((SECONDS - start)) s" >&2
printf 'actionlint %s\ngo %s\n' "$version" "$(go env GOVERSION)" >"$tmp/versions.txt"
touch "$tmp/complete"
rm -rf "$dir"; mv "$tmp" "$dir"; trap - EXIT
echo "$dir/bin/actionlint"
