#!/usr/bin/env bash
# Where an NCCL 2.31+ prints the report of NCCL_RUN_DIAGNOSTICS=1: on the process's stdout, its
# stderr or into NCCL_DEBUG_FILE. Two ranks of ras_hang_loop.cc on the one GPU (distinct
# NCCL_HOSTID, sockets), each stream to its own file, stopped after 12 s; prints how many
# `NCCL DIAG` lines each file holds.
#
#   NCCL_HOME=<folder with include/nccl.h and lib/libnccl.so.2> tests/gpu/diag-where.sh
#
# Results in $OUT/diagwhere, else tests/gpu/results-diag-where/.
set -u
repo="$(cd "$(dirname "$0")/../.." && pwd)"
NH="${NCCL_HOME:?NCCL_HOME: an NCCL 2.31 or newer}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc; else nvcc="$CUDA_HOME/bin/nvcc"; fi
if [[ -n "${OUT:-}" ]]; then d="$OUT/diagwhere"; else d="$repo/tests/gpu/results-diag-where"; fi
work="$(mktemp -d /tmp/nccl-triage-diag-where-XXXXXX)"
mkdir -p "$d"
"$nvcc" -O2 -std=c++17 "$repo/tests/gpu/ras_hang_loop.cc" -I"$NH/include" -L"$NH/lib" \
  -l:libnccl.so.2 -o "$work/loop" >"$d/build.txt" 2>&1 || { echo "build failed"; cat "$d/build.txt"; exit 1; }
ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
for r in 0 1; do
  env LD_LIBRARY_PATH="$NH/lib" NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_NVLS_ENABLE=0 \
    NCCL_SOCKET_IFNAME="${ifname:-lo}" NCCL_HOSTID="dw$r" NCCL_RAS_ADDR="127.0.0.1:$((28128 + r))" \
    NCCL_RUN_DIAGNOSTICS=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,DIAG \
    NCCL_DEBUG_FILE="$d/debug-rank$r.%p.log" \
    "$work/loop" "$r" 2 "$work/id" 1048576 >"$d/stdout-rank$r.txt" 2>"$d/stderr-rank$r.txt" &
done
sleep 12
pkill -KILL -f "$work/loop"
wait 2>/dev/null
for f in "$d"/*; do
  echo "$(basename "$f"): $(grep -c 'NCCL DIAG' "$f") NCCL DIAG lines, $(wc -l <"$f") lines"
done
grep -h "NCCL DIAG" "$d/stdout-rank0.txt" "$d/stderr-rank0.txt" | head -5
