#!/usr/bin/env bash
# NCCL 2.31+'s on-demand RAS diagnostics (the DIAGNOSTICS request of the RAS port), recorded with
# the project's client on a machine with one GPU.
#
#   NCCL_HOME=/path/to/nccl-2.32 tests/gpu/ras-diag.sh   (results in $OUT, else tests/gpu/results-ras-diag/)
#
# Two ranks of tests/gpu/ras_hang_loop.cc on the one GPU (distinct NCCL_HOSTID, sockets, rank 0's
# RAS port on 127.0.0.1:28028, rank 1's on 127.0.0.1:28029) run all-reduces; tests/gpu/ras_query.cc
# (agent/ras/client.cc alone) sends DIAGNOSTICS:
#   1. same: both ranks with the same NCCL_* settings but the two that must differ;
#      asked at rank 0's and rank 1's port, then five requests at once (one may be BUSY);
#   2. differ: rank 1 also has NCCL_DEBUG_SUBSYS=INIT,RAS,ENV and NCCL_TRIAGE_DIAG_MARK=1;
#   3. old: one rank of OLD_NCCL_HOME (default: the 2.28.9 wheel of the PyTorch venv), which has
#      no diagnostics: its answer to DIAGNOSTICS;
#   4. init: the two ranks with NCCL_RUN_DIAGNOSTICS=1 (the report NCCL prints at init, stdout).
# Transcripts and logs go to $OUT (diag-*.txt, rank logs in ras-diag-logs.tar.gz), the timeline
# to ras-diag-log.txt.
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
NCCL_HOME="${NCCL_HOME:?NCCL_HOME: a folder with include/nccl.h and lib/libnccl.so.2 of NCCL 2.31+}"
OLD_NCCL_HOME="${OLD_NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
out="${OUT:-$repo/tests/gpu/results-ras-diag}"
work="$(mktemp -d /tmp/nccl-triage-ras-diag-XXXXXX)"
mkdir -p "$out" "$work/t"
export NCCL_NVLS_ENABLE=0
log="$out/ras-diag-log.txt"
: >"$log"
t0=$(date +%s%N)
note() { printf '[%7.1f s] %s\n' "$(( ($(date +%s%N) - t0) / 1000000 ))e-3" "$*" | tee -a "$log"; }

note "host: $(uname -srm); gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
note "nccl: $(grep -m1 -E '^#define NCCL_(VERSION_CODE|SUFFIX)' "$NCCL_HOME/include/nccl.h" | tr -s ' '); $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH) ' "$NCCL_HOME/include/nccl.h" | awk '{printf "%s ", $3}')"
if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc; else nvcc="$CUDA_HOME/bin/nvcc"; fi
for v in new old; do
  home=$NCCL_HOME; [[ $v == old ]] && home=$OLD_NCCL_HOME
  "$nvcc" -O2 -std=c++17 "$repo/tests/gpu/ras_hang_loop.cc" -I"$home/include" \
    -L"$home/lib" -l:libnccl.so.2 -o "$work/loop-$v" >>"$work/t/build.log" 2>&1 \
    || { note "FAIL build loop-$v"; cat "$work/t/build.log" >>"$log"; exit 1; }
done
g++ -std=c++20 -O1 -I"$repo/agent" "$repo/tests/gpu/ras_query.cc" "$repo/agent/ras/client.cc" \
  -o "$work/query" >>"$work/t/build.log" 2>&1 || { note "FAIL build query"; cat "$work/t/build.log" >>"$log"; exit 1; }
note "built"

ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
common=(NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME="${ifname:-lo}" NCCL_DEBUG=INFO
        NCCL_DEBUG_SUBSYS=INIT,RAS)
pids=()
start_ranks() {  # start_ranks NAME NRANKS LIBDIR LOOP [VAR=VALUE for rank 1 ...]
  local name=$1 n=$2 lib=$3 loop=$4; shift 4
  pids=()
  rm -f "$work/id-$name"
  for ((r = 0; r < n; r++)); do
    local extra=()
    (( r == 1 )) && extra=("$@")
    env LD_LIBRARY_PATH="$lib" "${common[@]}" NCCL_HOSTID="ras-rank$r" \
      NCCL_RAS_ADDR="127.0.0.1:$((28028 + r))" "${extra[@]}" \
      "$loop" "$r" "$n" "$work/id-$name" 1048576 >"$work/t/$name-rank$r.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 1 120); do grep -q 'iter 400' "$work/t/$name-rank0.log" && break; sleep 0.5; done
  note "$name: ranks ${pids[*]} started, rank 0: $(grep -c iter "$work/t/$name-rank0.log") progress lines"
}
stop_ranks() { kill -KILL "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
q() {  # q NAME [PORT]
  local r
  r="$("$work/query" "127.0.0.1:${2:-28028}" diagnostics "$out/diag-$1.txt" 2>&1)"
  note "$1: $r"
}

start_ranks same 2 "$NCCL_HOME/lib" "$work/loop-new"
q 1-same-rank0; q 1-same-rank1 28029
bpids=()
for i in 1 2 3 4 5; do
  "$work/query" 127.0.0.1:28028 diagnostics "$work/t/burst-$i.txt" >"$work/t/burst-$i.out" 2>&1 &
  bpids+=($!)
done
wait "${bpids[@]}"
for i in 1 2 3 4 5; do note "1-burst-$i: $(cat "$work/t/burst-$i.out")"; done
for i in 1 2 3 4 5; do
  if grep -q BUSY "$work/t/burst-$i.txt"; then cp "$work/t/burst-$i.txt" "$out/diag-1-busy.txt"; break; fi
done
"$work/query" 127.0.0.1:28028 text "$out/status-1-same.txt" | sed 's/^/status: /' | tee -a "$log"
stop_ranks

start_ranks differ 2 "$NCCL_HOME/lib" "$work/loop-new" NCCL_DEBUG_SUBSYS=INIT,RAS,ENV NCCL_TRIAGE_DIAG_MARK=1
q 2-differ-rank0
stop_ranks

if [[ -e "$OLD_NCCL_HOME/lib/libnccl.so.2" ]]; then
  start_ranks old 1 "$OLD_NCCL_HOME/lib" "$work/loop-old"
  q 3-old-2.28
  stop_ranks
else
  note "3-old: $OLD_NCCL_HOME/lib/libnccl.so.2 is missing: skipped"
fi

common+=(NCCL_RUN_DIAGNOSTICS=1)
start_ranks init 2 "$NCCL_HOME/lib" "$work/loop-new"
stop_ranks
grep -h 'NCCL DIAG' "$work/t/init-rank0.log" "$work/t/init-rank1.log" >"$out/diag-4-init-stdout.txt"
note "4-init: $(wc -l <"$out/diag-4-init-stdout.txt") NCCL DIAG lines printed by the ranks"
grep -h 'NCCL DIAG' "$work"/t/same-rank*.log "$work"/t/differ-rank*.log >"$out/diag-rank-stdout.txt" 2>/dev/null
note "done"
tar -C "$work/t" -czf "$out/ras-diag-logs.tar.gz" .
