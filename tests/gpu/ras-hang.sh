#!/usr/bin/env bash
# What NCCL's RAS port says about a hung job, recorded on a machine with one GPU.
#
#   tests/gpu/ras-hang.sh           (results in $OUT if set, else tests/gpu/results-ras/)
#
# Two ranks of tests/gpu/ras_hang_loop.cc on the one GPU (distinct NCCL_HOSTID, sockets, each
# with its own RAS port: rank 0 on 127.0.0.1:28028, rank 1 on 127.0.0.1:28029) run all-reduces
# one at a time. tests/gpu/ras_query.cc (the project's RAS client alone) asks rank 0's port:
#   1. healthy: both ranks running;
#   2. lagging: rank 1's main thread stalls (SIGUSR1) while its RAS thread answers;
#   3. stopped: rank 1 resumed, then SIGSTOP (the whole process, RAS thread too), asked 5 s and
#      20 s later;
#   4. killed: rank 1 SIGKILLed, asked 3 s and 65 s later (RAS declares a peer dead after 60 s).
# Each query is asked as text and as JSON. The transcripts and the ranks' logs go into
# ras-transcripts.tar.gz, the timeline into ras-log.txt.
#
# Variables: NCCL_HOME (folder with include/nccl.h and lib/libnccl.so.2; default: the NCCL
# 2.28.9 wheel of the PyTorch venv), CUDA_HOME (default /usr/local/cuda).
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
NCCL_HOME="${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
out="${OUT:-$repo/tests/gpu/results-ras}"
work="$(mktemp -d /tmp/nccl-triage-ras-XXXXXX)"
mkdir -p "$out" "$work/t"
export NCCL_NVLS_ENABLE=0
log="$out/ras-log.txt"
: >"$log"
t0=$(date +%s%N)
note() { printf '[%7.1f s] %s\n' "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$*" | tee -a "$log"; }

note "host: $(uname -srm); gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
note "nccl: $NCCL_HOME: $(ls "$NCCL_HOME/lib" 2>&1 | tr '\n' ' '); ncclras: $(ls "$NCCL_HOME/bin" 2>/dev/null | tr '\n' ' ') $(command -v ncclras || echo 'not on PATH')"
if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc; else nvcc="$CUDA_HOME/bin/nvcc"; fi
"$nvcc" -O2 -std=c++17 "$repo/tests/gpu/ras_hang_loop.cc" -I"$NCCL_HOME/include" \
  -L"$NCCL_HOME/lib" -l:libnccl.so.2 -o "$work/loop" >"$work/t/build.log" 2>&1 || { note "FAIL build loop"; cat "$work/t/build.log" >>"$log"; exit 1; }
g++ -std=c++20 -O1 -I"$repo/agent" "$repo/tests/gpu/ras_query.cc" "$repo/agent/ras/client.cc" \
  -o "$work/query" >>"$work/t/build.log" 2>&1 || { note "FAIL build query"; cat "$work/t/build.log" >>"$log"; exit 1; }
note "built"

ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
export LD_LIBRARY_PATH="$NCCL_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
common=(NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME="${ifname:-lo}" NCCL_DEBUG=INFO
        NCCL_DEBUG_SUBSYS=INIT,RAS)
pids=()
for r in 0 1; do
  env "${common[@]}" NCCL_HOSTID="ras-rank$r" NCCL_RAS_ADDR="127.0.0.1:$((28028 + r))" \
    "$work/loop" "$r" 2 "$work/id" 1048576 >"$work/t/rank$r.log" 2>&1 &
  pids+=($!)
done
note "ranks started: pids ${pids[*]} (interface ${ifname:-lo})"
for _ in $(seq 1 120); do grep -q 'iter 400' "$work/t/rank0.log" && break; sleep 0.5; done
note "rank 0: $(grep -c iter "$work/t/rank0.log") progress lines"

q() {  # q NAME FORMAT [PORT]
  local r
  r="$("$work/query" "127.0.0.1:${3:-28028}" "$2" "$work/t/$1.$2.txt" 2>&1)"
  note "$1 ($2): $r"
}
q 1-healthy text; q 1-healthy json; q 1-healthy-rank1 auto 28029

kill -USR1 "${pids[1]}"; note "rank 1: SIGUSR1 (main thread stalls)"; sleep 3
q 2-lagging text; q 2-lagging json
kill -USR2 "${pids[1]}"; sleep 2; note "rank 1 resumed: $(tail -1 "$work/t/rank1.log")"

kill -STOP "${pids[1]}"; stop=$(date +%s); note "rank 1: SIGSTOP"
sleep 5; q 3-stopped-5s json; q 3-stopped-5s text
while (( $(date +%s) - stop < 20 )); do sleep 1; done
q 3-stopped-20s json; q 3-stopped-20s text

kill -KILL "${pids[1]}"; killed=$(date +%s); note "rank 1: SIGKILL"
sleep 3; q 4-killed-3s json; q 4-killed-3s text
while (( $(date +%s) - killed < 65 )); do sleep 1; done
q 4-killed-65s json; q 4-killed-65s text
kill -KILL "${pids[0]}" 2>/dev/null; wait 2>/dev/null
note "done; rank 0 last line: $(tail -1 "$work/t/rank0.log")"
tar -C "$work/t" -czf "$out/ras-transcripts.tar.gz" .
