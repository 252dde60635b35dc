#!/usr/bin/env bash
# Runs every benchmark executable in the build directory (bench/<area>/ builds bench_* there)
# and prints each one's figures. Usage: scripts/bench.sh [BUILD_DIR]   (default: build)
set -uo pipefail
build="${1:-build}"
if [ ! -d "$build" ]; then
  echo "bench: build directory '$build' not found (run make build first)" >&2
  exit 2
fi
status=0
found=0
for exe in "$build"/bench_*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  found=$((found + 1))
  echo "== $(basename "$exe")"
  if ! "$exe"; then
    echo "bench: $(basename "$exe") failed" >&2
    status=1
  fi
  echo
done
if [ "$found" -eq 0 ]; then
  echo "bench: no bench_* executable in '$build'" >&2
  exit 2
fi
exit "$status"
