#!/usr/bin/env bash
# A healthy two-rank job asked by the project's RAS client every 10 s for minutes: no rank may be
# named, and the questions may not slow the job.
#
#   tests/gpu/ras-soak.sh   (results in $OUT, else tests/gpu/results-ras-soak/)
#
# Variables: NCCL_HOME (default: the NCCL 2.28.9 wheel of the PyTorch venv), QUIET_S (120) and
# ASKED_S (300): the job runs QUIET_S seconds unasked, ASKED_S seconds asked every 10 s (a text and
# a JSON status report, alternating), then QUIET_S seconds unasked again. The all-reduce rate
# (1 MiB, one at a time, counted from the ranks' "iter N" lines every 2 s) of each phase goes to
# soak-rate.tsv; every report to reports.tar.gz. A report whose raw text shows anything (a
# communicator not RUNNING, MISMATCH, INCOMPLETE, DEAD, an error, an unresponsive or dead rank) is
# counted and logged. A MISMATCH of one operation is expected now and then on a running job (NCCL
# reads each rank's counts at a slightly different moment); whether the product names a rank is
# the judgement of the reports in order, each against the one before, as the agent's watch does:
# copy them to tests/ras/transcripts/ and replay them (RasJudgeTwice in tests/ras/parse_test.cc).
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
NCCL_HOME="${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
QUIET_S="${QUIET_S:-120}"
ASKED_S="${ASKED_S:-300}"
out="${OUT:-$repo/tests/gpu/results-ras-soak}"
work="$(mktemp -d /tmp/nccl-triage-ras-soak-XXXXXX)"
mkdir -p "$out/reports"
export NCCL_NVLS_ENABLE=0
log="$out/ras-soak-log.txt"
: >"$log"
t0=$(date +%s)
note() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$log"; }

if command -v nvcc >/dev/null 2>&1; then nvcc=nvcc; else nvcc="$CUDA_HOME/bin/nvcc"; fi
"$nvcc" -O2 -std=c++17 "$repo/tests/gpu/ras_hang_loop.cc" -I"$NCCL_HOME/include" \
  -L"$NCCL_HOME/lib" -l:libnccl.so.2 -o "$work/loop" >"$work/build.log" 2>&1 \
  || { note "FAIL build loop"; cat "$work/build.log" >>"$log"; exit 1; }
g++ -std=c++20 -O1 -I"$repo/agent" "$repo/tests/gpu/ras_query.cc" "$repo/agent/ras/client.cc" \
  -o "$work/query" >>"$work/build.log" 2>&1 || { note "FAIL build query"; exit 1; }
note "host: $(uname -srm); gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
note "nccl: $(grep -E '^#define NCCL_(MAJOR|MINOR|PATCH) ' "$NCCL_HOME/include/nccl.h" | awk '{printf "%s ", $3}')"

ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
pids=()
for r in 0 1; do
  env LD_LIBRARY_PATH="$NCCL_HOME/lib" NCCL_NET=Socket NCCL_IB_DISABLE=1 \
    NCCL_SOCKET_IFNAME="${ifname:-lo}" NCCL_HOSTID="soak-rank$r" \
    NCCL_RAS_ADDR="127.0.0.1:$((28028 + r))" "$work/loop" "$r" 2 "$work/id" 1048576 \
    >"$work/rank$r.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 1 120); do grep -q 'iter 400' "$work/rank0.log" && break; sleep 0.5; done
note "ranks ${pids[*]} running"

iters() { tail -c 4096 "$work/rank0.log" | grep -o 'iter [0-9]*' | tail -1 | cut -d' ' -f2; }
named=0
asked=0
ask() {  # ask N
  local fmt=text
  (( $1 % 2 == 1 )) && fmt=json
  local f="$out/reports/$(printf '%03d' "$1")-$fmt.txt"
  "$work/query" 127.0.0.1:28028 "$fmt" "$f" >>"$work/query.log" 2>&1
  asked=$((asked + 1))
  if grep -Eq '^# error|MISMATCH|INCOMPLETE|DEAD|"unresponsive": *true|"considered_dead": *true|Remote process error' "$f" \
     || { [[ $fmt == text ]] && ! grep -Eq ' RUNNING +OK' "$f"; }; then
    named=$((named + 1))
    note "report $1 ($fmt) shows in NCCL's raw words: $(grep -m2 -E 'MISMATCH|INCOMPLETE|DEAD|error|ERROR' "$f" | tr '\n' ' ')"
  fi
}
phase() {  # phase NAME SECONDS ASK
  local name=$1 secs=$2 asking=$3 start end i0 i1 n=0
  start=$(date +%s.%N); i0=$(iters)
  local until=$(( $(date +%s) + secs ))
  while (( $(date +%s) < until )); do
    if [[ $asking == 1 ]]; then ask "$((asked))"; n=$((n + 1)); sleep 10; else sleep 2; fi
  done
  end=$(date +%s.%N); i1=$(iters)
  local rate
  rate=$(python3 -c "print(f'{($i1 - $i0) / ($end - $start):.1f}')")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$secs" "$((i1 - i0))" "$rate" "$n" >>"$out/soak-rate.tsv"
  note "$name: $((i1 - i0)) all-reduces in ${secs} s = $rate per s, $n queries"
}
printf 'phase\tseconds\tall_reduces\tper_second\tqueries\n' >"$out/soak-rate.tsv"
phase quiet-1 "$QUIET_S" 0
phase asked "$ASKED_S" 1
phase quiet-2 "$QUIET_S" 0
note "asked $asked times, $named raw report(s) showed a mismatch, a missing rank or an error"
kill -KILL "${pids[@]}" 2>/dev/null
wait 2>/dev/null
tar -C "$out" -czf "$out/reports.tar.gz" reports && rm -rf "$out/reports"
note "done"
