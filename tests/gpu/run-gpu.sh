#!/usr/bin/env bash
# The probe against real NCCL on a machine with one GPU and no InfiniBand HCA.
#
#   tests/gpu/run-gpu.sh            (results in $OUT if set, else tests/gpu/results/)
#
# Variables:
#   NCCL_HOME   folder with include/nccl.h and lib/libnccl.so.2
#               (default: the pip wheel of the PyTorch venv, NCCL 2.28.9)
#   PROBE_BIN   an already built nccl-triage-probe or nccl-triage (skips the build)
#   CUDA_HOME   for compiling the reference without nvcc on the PATH (default /usr/local/cuda)
#   SIZES       socket sweep sizes (default "1M 4M 16M 64M 256M 1G")
#
# What it checks (each line PASS/FAIL in summary.txt; exit 1 if any FAIL):
#   1. `probe --pair-local`: the socket probe passes with every element verified and a busbw;
#      the IB probe fails and the verdict is ib_resource with cause ib.hca_present.
#   2. a socket probe per size (busbw per size, sizes.tsv).
#   3. a hand-written two-process NCCL all-reduce (reference_allreduce.cc) at 64 MiB under the
#      same environment: the probe's socket busbw is within 10 % of it.
#   4. rank 0 alone (its peer never comes): the child aborts NCCL at its deadline and reports a
#      timeout instead of hanging.
#   1b. `probe --pair-local --rails mlx5_0,...,mlx5_7`: with no HCA every rail's IB probe fails as
#      ib_resource and the verdict names the rail's HCA (rails.json).
#   5. `probe --intra-node` over every GPU the driver lists (intra-node.json): on one GPU a
#      one-rank communicator passes (no transport, busbw 0) and probe.intra_node is pass; on two
#      or more GPUs the default run passes via P2P (the transport NCCL chose is recorded).
# NVLink SHARP stays off (NCCL_NVLS_ENABLE=0) in this script and in every probe child.
set -uo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
NCCL_HOME="${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
SIZES="${SIZES:-1M 4M 16M 64M 256M 1G}"
results="${OUT:-$repo/tests/gpu/results}"
work="$(mktemp -d /tmp/nccl-triage-gpu-XXXXXX)"
mkdir -p "$results"
export NCCL_NVLS_ENABLE=0

summary="$results/summary.txt"
: >"$summary"
failures=0
note() { echo "$*" | tee -a "$summary"; }
check() {  # check NAME CONDITION-EXIT-CODE DETAIL
  if [[ "$2" == 0 ]]; then note "PASS $1: $3"; else note "FAIL $1: $3"; failures=$((failures + 1)); fi
}

note "# nccl-triage GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
note "host: $(uname -srm)"
note "gpu: $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>&1 | head -1)"
note "nccl: $NCCL_HOME ($(ls "$NCCL_HOME/lib" 2>&1 | tr '\n' ' '))"

# ------------------------------------------------------------------ build
bin="${PROBE_BIN:-}"
if [[ -z "$bin" ]]; then
  bin="$work/nccl-triage-probe"
  start=$(date +%s)
  if ! "$repo/tests/gpu/build-standalone.sh" "$bin" >"$results/build.log" 2>&1; then
    note "FAIL build: see build.log"
    exit 1
  fi
  note "built the standalone probe in $(( $(date +%s) - start )) s"
fi

ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
ifname="${ifname:-lo}"
note "socket interface: $ifname"
probe=("$bin" probe --pair-local --socket-ifname "$ifname" --nccl-lib "$NCCL_HOME/lib")

json_get() {  # json_get FILE PYTHON-EXPRESSION-ON-d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}

# ------------------------------------------------------------------ 1. the local pair
"${probe[@]}" --mode both --size 64M --warmup 5 --iters 20 --work-dir "$work/pair" \
  >"$results/pair-local.txt" 2>&1
pair_rc=$?
cat "$results/pair-local.txt"
"${probe[@]}" --mode both --size 64M --warmup 5 --iters 20 --work-dir "$work/pair-json" \
  --format json >"$results/pair-local.json" 2>"$results/pair-local.stderr"
j="$results/pair-local.json"
check "exit code" "$([[ $pair_rc == 1 ]]; echo $?)" "probe --pair-local exited $pair_rc (1 = fault verdict)"
check "socket pass" "$([[ $(json_get "$j" "d['rows'][0]['result']['outcome']") == pass ]]; echo $?)" \
  "socket outcome $(json_get "$j" "d['rows'][0]['result']['outcome']"): $(json_get "$j" "d['rows'][0]['result']['detail']")"
check "socket verified" "$([[ $(json_get "$j" "d['rows'][0]['result']['data_verified']") == True ]]; echo $?)" \
  "mismatches $(json_get "$j" "d['rows'][0]['result']['mismatches']"), transport $(json_get "$j" "d['rows'][0]['result']['transport']")"
socket_busbw="$(json_get "$j" "d['rows'][0]['result']['busbw_bytes_per_second']/1e9")"
check "socket busbw" "$(python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "${socket_busbw:-0}"; echo $?)" \
  "busbw ${socket_busbw} GB/s at 64 MiB"
check "ib fails" "$([[ $(json_get "$j" "d['rows'][1]['result']['outcome']") == fail ]]; echo $?)" \
  "IB: $(json_get "$j" "d['rows'][1]['result']['detail']")"
check "verdict" "$([[ $(json_get "$j" "d['verdict']['class']") == ib_resource ]]; echo $?)" \
  "class $(json_get "$j" "d['verdict']['class']"), causes $(json_get "$j" "','.join(c['cause'] for c in d['verdict']['causes'])")"
check "cause" "$(json_get "$j" "'ib.hca_present' in [c['cause'] for c in d['verdict']['causes']]" | grep -q True; echo $?)" \
  "ib.hca_present among the causes"
note "nccl $(json_get "$j" "d['rows'][0]['result']['nccl_version']") from $(json_get "$j" "d['rows'][0]['result']['nccl_library']"), cuda driver $(json_get "$j" "d['rows'][0]['result']['cuda_driver_version']"), gpu $(json_get "$j" "d['rows'][0]['result']['gpu_name']") $(json_get "$j" "d['rows'][0]['result']['gpu_bus_id']")"
note "startup (spawn to first NCCL call): rank0 $(json_get "$j" "d['rows'][0]['ranks'][0]['startup_seconds']") s, rank1 $(json_get "$j" "d['rows'][0]['ranks'][1]['startup_seconds']") s"
for f in "$work"/pair-json/nccl-*.log; do
  echo "==> $(basename "$f")"
  cat "$f"
done >"$results/nccl-logs.txt" 2>/dev/null

# ------------------------------------------------------------------ 1b. per-rail IB probes
# A DGX names eight rails; this machine has no HCA, so each rail's probe must fail as ib_resource
# and say which HCA it asked for (NCCL_IB_HCA==mlx5_K:1 finds no device).
rails_list="mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"
"${probe[@]}" --mode both --size 1M --rails "$rails_list" --format json --work-dir "$work/rails" \
  >"$results/rails.json" 2>"$results/rails.stderr"
r="$results/rails.json"
check "rails probed" "$([[ $(json_get "$r" "len(d['rails'])") == 8 ]]; echo $?)" \
  "$(json_get "$r" "len(d['rails'])") rail rows"
check "rails fail as ib_resource" \
  "$(json_get "$r" "all(x['outcome'] == 'fail' and x['verdict']['class'] == 'ib_resource' for x in d['rails'])" | grep -q True; echo $?)" \
  "$(json_get "$r" "' '.join(x['device'] + ':' + x['outcome'] + '/' + x.get('verdict', {}).get('class', '-') for x in d['rails'])")"
check "rails named" "$(json_get "$r" "d['verdict']['reason']" | grep -q "mlx5_0/1"; echo $?)" \
  "verdict: $(json_get "$r" "d['verdict']['reason']")"

# The default library search (no --nccl-lib): which NCCL does it find?
"$bin" probe --pair-local --mode socket --size 1M --socket-ifname "$ifname" --format json \
  --work-dir "$work/search" >"$work/search.json" 2>/dev/null
note "default search found: $(json_get "$work/search.json" "d['rows'][0]['result']['nccl_library']") ($(json_get "$work/search.json" "d['rows'][0]['result']['outcome']"))"

# ------------------------------------------------------------------ 2. socket sweep
printf "size_bytes\toutcome\tbusbw_GBps\ttime_us\tverified\n" >"$results/sizes.tsv"
for size in $SIZES; do
  "${probe[@]}" --mode socket --size "$size" --format json --work-dir "$work/sweep-$size" \
    >"$work/sweep-$size.json" 2>/dev/null
  json_get "$work/sweep-$size.json" \
    "'\t'.join(str(x) for x in [d['rows'][0]['result']['size_bytes'], d['rows'][0]['result']['outcome'], round(d['rows'][0]['result']['busbw_bytes_per_second']/1e9, 3), round(d['rows'][0]['result']['time_seconds']*1e6, 1), d['rows'][0]['result']['data_verified']])" \
    >>"$results/sizes.tsv"
done
cat "$results/sizes.tsv" | tee -a "$summary"

# ------------------------------------------------------------------ 3. the reference loop
ref="$work/reference_allreduce"
if command -v nvcc >/dev/null 2>&1; then
  nvcc -O2 -std=c++17 "$repo/tests/gpu/reference_allreduce.cc" -I"$NCCL_HOME/include" \
    -L"$NCCL_HOME/lib" -l:libnccl.so.2 -Xlinker -rpath -Xlinker "$NCCL_HOME/lib" -o "$ref" \
    >"$results/reference-build.log" 2>&1
else
  g++ -O2 -std=c++17 "$repo/tests/gpu/reference_allreduce.cc" -I"$NCCL_HOME/include" \
    -I"$CUDA_HOME/include" -L"$NCCL_HOME/lib" -L"$CUDA_HOME/lib64" -l:libnccl.so.2 -lcudart \
    -Wl,-rpath,"$NCCL_HOME/lib" -o "$ref" >"$results/reference-build.log" 2>&1
fi
if [[ -x "$ref" ]]; then
  ref_env=(NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0
           NCCL_SOCKET_IFNAME="$ifname")
  rm -f "$work/ref.id"
  env "${ref_env[@]}" NCCL_HOSTID=reference-rank0 "$ref" 0 2 "$work/ref.id" 67108864 5 20 \
    >"$work/ref0.txt" 2>&1 &
  p0=$!
  env "${ref_env[@]}" NCCL_HOSTID=reference-rank1 "$ref" 1 2 "$work/ref.id" 67108864 5 20 \
    >"$work/ref1.txt" 2>&1 &
  p1=$!
  wait $p0 $p1
  cat "$work/ref0.txt" "$work/ref1.txt" | tee "$results/reference.txt" | tee -a "$summary"
  ref_busbw="$(awk '/busbw_GBps/ { for (i = 1; i < NF; i++) if ($i == "busbw_GBps") print $(i + 1); exit }' "$work/ref0.txt")"
  ratio="$(python3 -c "import sys; print(round(float(sys.argv[1]) / float(sys.argv[2]), 3))" "${socket_busbw:-0}" "${ref_busbw:-0}" 2>/dev/null)"
  check "vs reference" "$(python3 -c "import sys; sys.exit(0 if abs(float(sys.argv[1]) - 1) <= 0.10 else 1)" "${ratio:-0}" 2>/dev/null; echo $?)" \
    "probe ${socket_busbw} GB/s, reference ${ref_busbw} GB/s, ratio ${ratio}"
else
  check "reference build" 1 "see reference-build.log"
fi

# ------------------------------------------------------------------ 4. a peer that never comes
# Rank 0 alone: NCCL's bootstrap waits for rank 1 forever; the child must abort the non-blocking
# communicator at its own deadline and still report (timeout), well before the outer limit.
start=$(date +%s)
timeout 60 env -i PATH="$PATH" ${LD_LIBRARY_PATH:+LD_LIBRARY_PATH="$LD_LIBRARY_PATH"} \
  NCCL_SOCKET_IFNAME="$ifname" NCCL_HOSTID=lonely-rank0 \
  NCCL_NVLS_ENABLE=0 "$bin" probe --child --mode socket --rank 0 --nranks 2 --size 1M \
  --deadline-ms 8000 --log-file "$work/lonely.log" --nccl-lib "$NCCL_HOME/lib" \
  >"$work/lonely.out" 2>&1
lonely_rc=$?
tail -n 1 "$work/lonely.out" >"$work/lonely.json"
check "lonely rank" "$([[ $lonely_rc == 0 && $(json_get "$work/lonely.json" "d['outcome']") == timeout ]]; echo $?)" \
  "rc $lonely_rc after $(( $(date +%s) - start )) s: $(json_get "$work/lonely.json" "d['outcome'] + ': ' + d['detail']")"

# ------------------------------------------------------------------ 5. single node first
"$bin" probe --intra-node --size 64M --warmup 5 --iters 20 --nccl-lib "$NCCL_HOME/lib" \
  --work-dir "$work/intra" --format json >"$results/intra-node.json" 2>"$work/intra.stderr"
intra_rc=$?
j="$results/intra-node.json"
gpus="$(json_get "$j" "len(d['gpus'])")"
note "intra-node: $gpus GPU(s), runs $(json_get "$j" "', '.join(r['variant'] + '=' + r['result']['outcome'] + ' via ' + (r['result']['transport'] or '-') + ' busbw ' + str(round(r['result']['busbw_bytes_per_second'] / 1e9, 3)) for r in d['runs'])")"
if [[ "$gpus" == 1 ]]; then
  check "intra-node one GPU" "$([[ $intra_rc == 0 && $(json_get "$j" "d['finding']['status']") == pass && $(json_get "$j" "d['runs'][0]['result']['nranks']") == 1 ]]; echo $?)" \
    "rc $intra_rc: $(json_get "$j" "d['finding']['status'] + ': ' + d['finding']['message']")"
else
  check "intra-node" "$([[ $intra_rc == 0 && $(json_get "$j" "d['runs'][0]['result']['transport']") == P2P* ]]; echo $?)" \
    "rc $intra_rc: $(json_get "$j" "d['finding']['status'] + ': ' + d['finding']['message']")"
fi
[[ -s "$work/intra.stderr" ]] && cat "$work/intra.stderr" >>"$summary"

note "failures: $failures"
# At most eight files come back from a remote run: keep the build logs only when they matter.
[[ -s "$results/pair-local.stderr" ]] || rm -f "$results/pair-local.stderr"
[[ -x "$ref" ]] && rm -f "$results/reference-build.log"
[[ -n "${PROBE_BIN:-}" || $failures != 0 ]] || rm -f "$results/build.log"
rm -rf "$work"
[[ $failures == 0 ]]
