#!/usr/bin/env bash
# The embedded demo: a coordinator and 8 agents on this machine over real gRPC, each agent with a
# generated fixture root and the fake NCCL/CUDA libraries of the build, one node fault and one link
# fault injected into the roots; prints what the coordinator localised (see the README, "The demo").
# Usage: scripts/demo.sh [BUILD_DIR] [demo flags...]   (default: build; e.g. --serve, --format json)
# exec: Ctrl-C reaches the demo itself, which stops within 2 s and removes its work folder.
set -uo pipefail
build="${1:-build}"
shift || true
bin="$build/nccl-triage-demo"
if [ ! -x "$bin" ]; then
  echo "demo: $bin not found (run make build first; the demo is built with the tests)" >&2
  exit 2
fi
exec "$bin" "$@"
