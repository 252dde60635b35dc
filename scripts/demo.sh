#!/usr/bin/env bash
# The check table for this machine, then for each bundled fixture root (one heading each).
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -uo pipefail
build="${1:-build}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$build/nccl-triage"
if [ ! -x "$bin" ]; then
  echo "demo: $bin not found (run make build first)" >&2
  exit 2
fi

heading() { printf '\n==== %s ====\n\n' "$1"; }

heading "this machine ($(hostname))"
"$bin" check
for root in "$here"/tests/fixtures/*/; do
  [ -d "$root/sys" ] || [ -d "$root/proc" ] || continue  # only node roots
  name="$(basename "$root")"
  heading "fixture $name"
  "$bin" check --root "$root" --node "$name"
done
exit 0
