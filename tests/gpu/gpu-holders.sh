#!/usr/bin/env bash
# Real GPU facts for the busy-GPU gate: the driver's information file (UUID, minor), what the
# gatherer makes of it, and a real CUDA process seen as a workload holder (libcuda mapped).
#   PROBE_BIN   the nccl-triage executable (its libraries found through LD_LIBRARY_PATH)
#   TORCH_PY    a Python with PyTorch, to hold a CUDA context while the snapshot is taken
#   NCCL_HOME   NCCL's directory (lib/libnccl.so.2), for the intra-node probe
#   OUT         where the results go
set -u
: "${PROBE_BIN:?}" "${TORCH_PY:?}" "${NCCL_HOME:?}" "${OUT:?}"
export NCCL_NVLS_ENABLE=0
bin="$PROBE_BIN"
mkdir -p "$OUT"
for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done > "$OUT/information.txt" 2>&1
pick() { python3 -c 'import json,sys; s=json.load(sys.stdin); print(json.dumps({k:s.get(k) for k in ("gpus","gpu_holders","gpu_allocations","proc_scan_error")},indent=1))'; }
"$bin" check --root / --dump-snapshot - 2>"$OUT/idle.err" | pick > "$OUT/idle.json"
"$TORCH_PY" -c 'import torch,time; x=torch.zeros(1,device="cuda"); print("ctx", flush=True); time.sleep(40)' > "$OUT/torch.txt" 2>&1 &
tp=$!
for i in $(seq 1 60); do grep -q ctx "$OUT/torch.txt" 2>/dev/null && break; sleep 1; done
echo "torch pid $tp" >> "$OUT/torch.txt"
"$bin" check --root / --dump-snapshot - 2>"$OUT/busy.err" | pick > "$OUT/busy.json"
grep -c libcuda /proc/$tp/maps >> "$OUT/torch.txt" 2>&1
ls -l /proc/$tp/fd 2>/dev/null | grep nvidia >> "$OUT/torch.txt"
kill $tp; wait $tp 2>/dev/null
"$bin" probe --intra-node --size 64M --nccl-lib "$NCCL_HOME/lib" --work-dir "${TMPDIR:-/tmp}/intra" \
  --format json > "$OUT/intra.json" 2>"$OUT/intra.err"
echo "exit $?" >> "$OUT/intra.err"
