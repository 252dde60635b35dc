#!/usr/bin/env bash
# gpu.standalone_build: the bundle, then the standalone probe built from it alone; the binary
# must not need RE2 or yaml-cpp at run time (a GPU machine has neither) and must run.
#   usage: standalone_build_test.sh BUILD_DIR WORK_DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1"
work="$2"
rm -rf "$work"
mkdir -p "$work"
"$here/bundle.sh" "$build" "$work/deps"
# -O0: this checks that it compiles and links; the GPU machine builds it optimised.
GPU_DEPS="$work/deps" OPT="-O0" "$here/build-standalone.sh" "$work/nccl-triage-probe"
if ldd "$work/nccl-triage-probe" | grep -E 'libre2|libyaml-cpp'; then
  echo "FAIL: the standalone probe links RE2 or yaml-cpp dynamically" >&2
  exit 1
fi
"$work/nccl-triage-probe" --help >"$work/help.txt" 2>&1 || true
grep -q -- "--pair-local" "$work/help.txt" || { cat "$work/help.txt"; exit 1; }
# Without a bundle the script says what to do, in one line, and fails.
if GPU_DEPS="$work/none" "$here/build-standalone.sh" "$work/x" 2>"$work/err.txt"; then
  echo "FAIL: built without a bundle" >&2
  exit 1
fi
grep -q "run tests/gpu/bundle.sh" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
echo "standalone probe built from the bundle alone: $(du -h "$work/nccl-triage-probe" | cut -f1)"
