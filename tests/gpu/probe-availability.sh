#!/usr/bin/env bash
# Whether the probes can run, on a real GPU: the start-up library check of the agent
# (`probe --child --check`) and a pair-local probe, each where the chart puts NCCL and CUDA.
#
#   PROBE_BIN=<nccl-triage> tests/gpu/probe-availability.sh   (results in $OUT, else ./results)
#
# Variables: PROBE_BIN (required: a built nccl-triage), NCCL_HOME (default: the PyTorch venv's
# NCCL wheel). Cases, each PASS/FAIL in summary.txt (exit 1 if any FAIL):
#   1. check, NCCL given: nccl_version read, outcome pass, the GPUs counted.
#   2. check, no NCCL where the agent looks (--only-configured-libs and an empty folder):
#      unavailable with cause probe.no_nccl.
#   3. check, no GPU visible (CUDA_VISIBLE_DEVICES empty, as with NVIDIA_VISIBLE_DEVICES=void):
#      unavailable with cause probe.no_gpu.
#   4. pair-local with NCCL copied into a folder of its own (what probe.nccl.fromImage's
#      initContainer leaves in the emptyDir), libcuda from the driver as the runtime mounts it:
#      the ranks load the copy; socket pass, IB fail, verdict ib_resource.
#   5. pair-local with no GPU visible to the ranks: never healthy, cause probe.no_gpu first (the
#      class is the node checks' prediction).
set -uo pipefail
bin="${PROBE_BIN:?set PROBE_BIN to a built nccl-triage}"
NCCL_HOME="${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
results="${OUT:-$PWD/results}"
work="$(mktemp -d /tmp/nccl-triage-avail-XXXXXX)"
mkdir -p "$results"
export NCCL_NVLS_ENABLE=0
summary="$results/summary.txt"; : >"$summary"
failures=0
result() { echo "$1 $2" | tee -a "$summary"; [ "$1" = PASS ] || failures=$((failures + 1)); }
has() { grep -q -- "$2" "$1"; }
child=("$bin" probe --child --mode socket --rank 0 --nranks 1 --check)

"${child[@]}" --nccl-lib "$NCCL_HOME/lib" >"$results/check-ok.json" 2>"$results/check-ok.err"
if has "$results/check-ok.json" '"outcome":"pass"' && has "$results/check-ok.json" '"nccl_version":"2\.' &&
   has "$results/check-ok.json" 'CUDA device(s)'; then
  result PASS "1 check with NCCL: $(grep -o '"nccl_version":"[^"]*"' "$results/check-ok.json"), $(grep -o '"detail":"[^"]*"' "$results/check-ok.json")"
else result FAIL "1 check with NCCL (check-ok.json)"; fi

mkdir -p "$work/empty"
"${child[@]}" --only-configured-libs --nccl-lib "$work/empty" >"$results/check-no-nccl.json" 2>&1
if has "$results/check-no-nccl.json" '"unavailable_cause":"probe.no_nccl"'; then
  result PASS "2 check without NCCL: probe.no_nccl"
else result FAIL "2 check without NCCL (check-no-nccl.json)"; fi

CUDA_VISIBLE_DEVICES= "${child[@]}" --nccl-lib "$NCCL_HOME/lib" >"$results/check-no-gpu.json" 2>&1
if has "$results/check-no-gpu.json" '"unavailable_cause":"probe.no_gpu"'; then
  result PASS "3 check without a visible GPU: probe.no_gpu ($(grep -o '"detail":"[^"]*"' "$results/check-no-gpu.json"))"
else result FAIL "3 check without a visible GPU (check-no-gpu.json)"; fi

ifname="$(awk 'NR>1 && $2=="00000000" {print $1; exit}' /proc/net/route)"
mkdir -p "$work/nccl"
cp "$NCCL_HOME"/lib/libnccl.so* "$work/nccl/"
"$bin" probe --pair-local --format json --size 16M --socket-ifname "$ifname" \
  --nccl-lib "$work/nccl" --work-dir "$work/pair" \
  >"$results/pair-from-copy.json" 2>"$results/pair-from-copy.err"
rc=$?
verdict() { python3 -c "import json,sys; v=json.load(open(sys.argv[1]))['verdict']; print(v['class'], ','.join(c['cause'] for c in v['causes']))" "$1" 2>/dev/null; }
if [ "$rc" = 1 ] && [ "$(verdict "$results/pair-from-copy.json" | cut -d' ' -f1)" = ib_resource ] &&
   has "$results/pair-from-copy.json" "\"nccl_library\": *\"$work/nccl/libnccl.so.2\""; then
  result PASS "4 pair-local on a copied NCCL: $(verdict "$results/pair-from-copy.json"), exit $rc, the ranks loaded the copy"
else result FAIL "4 pair-local on a copied NCCL: exit $rc (pair-from-copy.json)"; fi

CUDA_VISIBLE_DEVICES= "$bin" probe --pair-local --format json --size 1M --socket-ifname "$ifname" \
  --env-allow CUDA_VISIBLE_DEVICES --nccl-lib "$NCCL_HOME/lib" --work-dir "$work/blind" \
  >"$results/pair-no-gpu.json" 2>"$results/pair-no-gpu.err"
rc=$?
v="$(verdict "$results/pair-no-gpu.json")"
if [ "${v%% *}" != healthy ] && [ "$(echo "${v#* }" | cut -d, -f1)" = probe.no_gpu ]; then
  result PASS "5 pair-local without a visible GPU: $v, exit $rc"
else result FAIL "5 pair-local without a visible GPU: exit $rc (pair-no-gpu.json)"; fi

echo "failures: $failures" | tee -a "$summary"
rm -rf "$work"
[ "$failures" = 0 ]
