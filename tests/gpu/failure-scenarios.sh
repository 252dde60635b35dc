#!/usr/bin/env bash
# Real NCCL failure logs: two ranks of reference_allreduce on one GPU (distinct NCCL_HOSTID values,
# so they form a two-"node" communicator over sockets), one misconfiguration per scenario.
#
#   tests/gpu/failure-scenarios.sh          (results in $OUT if set, else tests/gpu/results-failures/)
#
# Variables:
#   NCCL_HOME     folder with include/nccl.h and lib/libnccl.so.2
#                 (default: the pip wheel of the PyTorch venv, NCCL 2.28.9)
#   ALT_NCCL_LIB  folder with another libnccl.so.2 for the version-mix scenario
#                 (default: the folder of the system libnccl.so.2 found by ldconfig)
#   CASE_TIMEOUT  seconds before a rank is killed (default 30)
#   JOBS          scenarios run at the same time (default 6)
#   ONLY          space-separated scenario names to run (default: all)
#   EXTRA         environment words added to every rank (e.g. NCCL_RUN_DIAGNOSTICS=1)
#   SET           name of the result folder and archive (default failures)
#
# For every scenario it writes <scenario>/{r0.log,r1.log,r0.cmd,r1.cmd,rc.txt} (each log holds the
# rank's stdout and stderr with NCCL_DEBUG=INFO; rc 124 = killed by the timeout) and packs the
# whole result folder into $SET.tar.gz, one file to copy off the GPU machine. NCCL writes its INFO
# lines to stdout with stdio buffering, so a rank that is killed would lose them: every rank runs
# under `stdbuf -oL -eL`.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
NCCL_HOME="${NCCL_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
CASE_TIMEOUT="${CASE_TIMEOUT:-30}"
JOBS="${JOBS:-6}"
ONLY="${ONLY:-}"
EXTRA="${EXTRA:-}"
SET="${SET:-failures}"
results="${OUT:-$here/results-failures}/$SET"
work="$(mktemp -d /tmp/nccl-failures-XXXXXX)"
mkdir -p "$results"

meta="$results/meta.txt"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader 2>&1 | head -1)"
  echo "nccl: $NCCL_HOME/lib: $(ls "$NCCL_HOME/lib" 2>&1 | tr '\n' ' ')"
  echo "ldconfig nccl: $(ldconfig -p 2>/dev/null | grep libnccl | tr '\n' ' ')"
  echo "interfaces: $(ls /sys/class/net | tr '\n' ' ')"
  echo "ipv6: $(cat /proc/net/if_inet6 2>&1 | tr '\n' ';')"
  echo "ulimit -l: $(ulimit -l)"
  echo "/dev/shm: $(df -h /dev/shm | tail -1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "extra environment: $EXTRA"
} >"$meta" 2>&1

# ------------------------------------------------------------------ build
ref="$work/reference_allreduce"
if command -v nvcc >/dev/null; then
  nvcc -O2 -std=c++17 "$here/reference_allreduce.cc" -I"$NCCL_HOME/include" -L"$NCCL_HOME/lib" \
    -l:libnccl.so.2 -Xlinker -rpath -Xlinker "$NCCL_HOME/lib" -o "$ref" >"$results/build.log" 2>&1
else
  g++ -O2 -std=c++17 "$here/reference_allreduce.cc" -I"$NCCL_HOME/include" -I"$CUDA_HOME/include" \
    -L"$NCCL_HOME/lib" -L"$CUDA_HOME/lib64" -l:libnccl.so.2 -lcudart \
    -Wl,-rpath,"$NCCL_HOME/lib" -o "$ref" >"$results/build.log" 2>&1
fi
if [[ ! -x "$ref" ]]; then
  echo "build failed, see build.log" | tee -a "$meta"
  tar -C "$results/.." -czf "$results/../$SET.tar.gz" "$SET"
  exit 1
fi
readelf -d "$ref" 2>/dev/null | grep -Ei 'rpath|runpath' >>"$meta"

alt_lib="${ALT_NCCL_LIB:-}"
if [[ -z "$alt_lib" ]]; then
  sys="$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')"
  [[ -n "$sys" ]] && alt_lib="$(dirname "$(readlink -f "$sys")")"
fi
echo "alt nccl: $alt_lib ($(ls "$alt_lib"/libnccl.so* 2>&1 | tr '\n' ' '))" >>"$meta"

ifname="$(awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { print $1; exit }' /proc/net/route)"
ifname="${ifname:-lo}"
echo "socket interface: $ifname" >>"$meta"

printf '%s\n' "garbage, not XML <<<< &&& 1234" >"$work/garbage.xml"
head -c 4096 /dev/urandom >>"$work/garbage.xml"

# ------------------------------------------------------------------ one scenario
# Per scenario (set before calling `scenario NAME`):
#   E0 / E1     extra environment of rank 0 / rank 1 (words KEY=VALUE)
#   W0 / W1     a wrapper command line for the rank (e.g. a namespace with a tiny /dev/shm)
#   N0 / N1     the NRANKS argument of each rank (default 2)
#   H0 / H1     NCCL_HOSTID of each rank (default NAME-r0, NAME-r1)
#   BYTES ITERS size and count of the all-reduce loop
#   KILL        a signal sent to rank 1 two seconds after its log says Init COMPLETE
reset() {
  E0=""; E1=""; W0=""; W1=""; N0=2; N1=2; H0=""; H1=""; BYTES=8388608; ITERS=20; KILL=""
}
scenario() {
  local name="$1"
  if [[ -n "$ONLY" && " $ONLY " != *" $name "* ]]; then return; fi
  local d="$results/$name" w="$work/$name"
  mkdir -p "$d" "$w"
  local h0="${H0:-$name-r0}" h1="${H1:-$name-r1}"
  local base="NCCL_DEBUG=INFO NCCL_NVLS_ENABLE=0${EXTRA:+ $EXTRA}"
  local c0="$W0 env $base NCCL_HOSTID=$h0 $E0 stdbuf -oL -eL $ref 0 $N0 $w/id $BYTES 2 $ITERS"
  local c1="$W1 env $base NCCL_HOSTID=$h1 $E1 stdbuf -oL -eL $ref 1 $N1 $w/id $BYTES 2 $ITERS"
  echo "$c0" >"$d/r0.cmd"
  echo "$c1" >"$d/r1.cmd"
  (
    start=$(date +%s.%N)
    timeout -k 3 "$CASE_TIMEOUT" bash -c "echo \$\$ >'$w/pid0'; exec $c0" >"$d/r0.log" 2>&1 &
    p0=$!
    sleep 0.3
    timeout -k 3 "$CASE_TIMEOUT" bash -c "echo \$\$ >'$w/pid1'; exec $c1" >"$d/r1.log" 2>&1 &
    p1=$!
    if [[ -n "$KILL" ]]; then
      for _ in $(seq 1 200); do
        grep -q "Init COMPLETE" "$d/r1.log" 2>/dev/null && break
        sleep 0.1
      done
      sleep 2
      echo "sent SIG$KILL to rank 1 (pid $(cat "$w/pid1")) at $(date -u +%H:%M:%S.%N)" >>"$d/rc.txt"
      kill -s "$KILL" "$(cat "$w/pid1")"
    fi
    wait "$p0"; rc0=$?
    wait "$p1"; rc1=$?
    end=$(date +%s.%N)
    {
      echo "r0 exit $rc0"
      echo "r1 exit $rc1"
      echo "seconds $(python3 -c "print(round($end - $start, 1))" 2>/dev/null)"
    } >>"$d/rc.txt"
    echo "$name: r0 $rc0 r1 $rc1"
  ) &
  while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n; done
}

# ------------------------------------------------------------------ the scenarios
reset; scenario healthy-default
reset; E0="NCCL_NET=Socket NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=$ifname"; E1="$E0"
scenario healthy-socket
reset; E0="NCCL_P2P_LEVEL=LOC NCCL_SHM_DISABLE=1"; E1="$E0"; scenario healthy-p2p-loc-shm-off
reset; E0="NCCL_IB_HCA=mlx5_0"; E1="$E0"; scenario ib-hca-on-socket
reset; E0="NCCL_SOCKET_IFNAME=nosuch0"; E1="$E0"; scenario ifname-missing-both
reset; E1="NCCL_SOCKET_IFNAME=nosuch0"; scenario ifname-missing-r1
reset; E0="NCCL_NET=IB"; E1="$E0"; scenario net-ib-no-hca
reset; E0="NCCL_NET=Bogus"; E1="$E0"; scenario net-bogus
reset; E0="NCCL_NET=IB NCCL_IB_DISABLE=1"; E1="$E0"; scenario net-ib-but-ib-disabled
reset; E0="NCCL_ALGO=Nonsense"; E1="$E0"; scenario algo-nonsense
reset; E0="NCCL_PROTO=Nonsense"; E1="$E0"; scenario proto-nonsense
reset; E0="NCCL_BUFFSIZE=1"; E1="$E0"; scenario buffsize-1
reset; E0="NCCL_BUFFSIZE=1099511627776"; E1="$E0"; scenario buffsize-1t
reset; H0="dup-gpu-host"; H1="dup-gpu-host"; scenario dup-gpu
reset; E1="LD_LIBRARY_PATH=$alt_lib"; scenario nccl-version-mix
reset; W0="unshare -m sh -c 'mount -t tmpfs -o size=4k tmpfs /dev/shm && exec \"\$0\" \"\$@\"'"; W1="$W0"
scenario shm-tiny
reset; W0="sh -c 'ulimit -l 4 && exec \"\$0\" \"\$@\"'"; W1="$W0"; E0="NCCL_NET=IB"; E1="$E0"
scenario memlock-tiny-ib
reset; BYTES=67108864; ITERS=100000; KILL=KILL; scenario peer-sigkill
reset; BYTES=67108864; ITERS=100000; KILL=SEGV; scenario peer-sigsegv
reset; BYTES=67108864; ITERS=100000; KILL=FPE; scenario peer-sigfpe
reset; E0="NCCL_TOPO_FILE=/nonexistent/topo.xml"; E1="$E0"; scenario topo-file-missing
reset; E0="NCCL_TOPO_FILE=$work/garbage.xml"; E1="$E0"; scenario topo-file-garbage
reset; E0="NCCL_GRAPH_FILE=/nonexistent/graph.xml"; E1="$E0"; scenario graph-file-missing
reset; E0="NCCL_GRAPH_FILE=$work/garbage.xml"; E1="$E0"; scenario graph-file-garbage
reset; E1="CUDA_VISIBLE_DEVICES=7"; scenario cvd-invalid-r1
reset; E0="NCCL_COMM_ID=192.0.2.1:29500"; E1="$E0"; scenario comm-id-unreachable
reset; N1=3; scenario worldsize-mismatch
reset; E0="NCCL_SOCKET_FAMILY=AF_INET6"; E1="$E0"; scenario socket-family-inet6
wait

tar -C "$results/.." -czf "$results/../$SET.tar.gz" "$SET"
cat "$meta"
cat "$results"/*/rc.txt >/dev/null
for d in "$results"/*/; do echo "$(basename "$d"): $(tr '\n' ' ' <"$d/rc.txt")"; done
rm -rf "$work"
