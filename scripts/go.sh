#!/usr/bin/env bash
# Runs the Go toolchain the project's Go programs and Kubernetes tools build with: $GO if set,
# else the upstream distribution's /usr/local/go/bin/go, else `go` on PATH; it must be Go >= 1.25
# (Debian 12's golang-go is 1.19, too old for the Kubernetes modules, and is never chosen over a
# newer one). Usage: scripts/go.sh ARGS...   |   scripts/go.sh --which (prints the path)
set -euo pipefail
pick=""
for g in "${GO:-}" /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)"; do
  [ -n "$g" ] && [ -x "$g" ] || continue
  v="$("$g" env GOVERSION 2>/dev/null || true)"          # go1.26.8
  v="${v#go}"; major="${v%%.*}"; rest="${v#*.}"; minor="${rest%%.*}"
  if [ "$major" = 1 ] && [ "${minor:-0}" -ge 25 ] 2>/dev/null; then pick="$g"; break; fi
done
if [ -z "$pick" ]; then
  echo "go.sh: Go >= 1.25 not found (set GO=/path/to/go or install it in /usr/local/go; Debian's golang-go is too old)" >&2
  exit 1
fi
if [ "${1:-}" = "--which" ]; then echo "$pick"; exit 0; fi
# The chosen Go first on PATH, so that anything it starts finds the same toolchain.
export PATH="$(dirname "$pick"):$PATH"
exec "$pick" "$@"
