#!/bin/sh
# Runs every libFuzzer target of the fuzz build for SECONDS each, one after the other (they share
# the machine's cores with everything else), each from a corpus seeded from the tests, and prints
# one line per target: runs, executions per second, corpus size, crashes. Exit 1 when any target
# crashed (its reproducer is kept under the work folder, named in the output).
#
#   fuzz/run.sh [BUILD_DIR [SECONDS [TARGET...]]]     (make fuzz: build-fuzz, 60 s, all)
#
# Corpora live in a work folder outside the tree (FUZZ_WORK, default /tmp/nccl-triage-fuzz): libFuzzer
# writes every new input into its corpus folder.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-fuzz}
seconds=${2:-60}
[ $# -ge 2 ] && shift 2 || shift $#
work=${FUZZ_WORK:-/tmp/nccl-triage-fuzz}
# Node roots come from the main build (`make build` writes them into build/fixtures); the seeds
# that need them are left out when that build is absent. The NCCL logs are committed.
fixtures=${FIXTURES:-$here/build/fixtures}
logs=$here/tests/fixtures/nccl-logs

all="host_parse_fuzzer snapshot_json_fuzzer gather_tree_fuzzer classify_log_fuzz
workload_parse_fuzzer config_fuzz wire_fuzzer probe_text_fuzzer http_fuzzer serialise_fuzzer
kube_text_fuzzer flags_fuzzer kernel_log_fuzzer"
targets=${*:-$all}

# seed TARGET DIR: copies the test inputs that suit TARGET into DIR.
seed() {
  case $1 in
    host_parse_fuzzer)
      [ -d "$fixtures/dgx-a100" ] || return 0
      find "$fixtures/dgx-a100" "$fixtures/roce" "$fixtures/memlock-64k" "$fixtures/gpu-pods" \
        -type f -size -64k \( -path '*/proc/*' -o -path '*/ports/*' \) | head -400 |
        while read -r f; do cp "$f" "$2/$(echo "$f" | md5sum | cut -c1-16)"; done ;;
    snapshot_json_fuzzer)
      [ -d "$fixtures" ] || return 0
      for d in "$fixtures"/*/; do
        name=$(basename "$d")
        [ -f "$d/fixture.json" ] || continue
        "$here/$build/nccl-triage" check --root "$d" --dump-snapshot "$2/$name.json" \
          >/dev/null 2>&1 || true
      done ;;
    classify_log_fuzz) cp "$logs"/*/*.log "$2/" ;;
    workload_parse_fuzzer)
      [ -d "$fixtures/gpu-pods" ] || return 0
      find "$fixtures/gpu-pods/proc" -type f -size -64k | head -200 |
        while read -r f; do cp "$f" "$2/$(echo "$f" | md5sum | cut -c1-16)"; done ;;
    config_fuzz) cp "$here"/fuzz/config/corpus/* "$2/" ;;
    probe_text_fuzzer)
      printf 'NCCL_TRIAGE_UNIQUE_ID %0256d\n' 0 >"$2/unique-id"
      printf 'Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n' >"$2/route" ;;
    http_fuzzer) cp "$here"/fuzz/exporter/corpus/* "$2/" ;;
    kube_text_fuzzer) cp "$here"/fuzz/kube/corpus/* "$2/" ;;
    kernel_log_fuzzer)
      cp "$here"/tests/kernel/fixtures/*.dmesg "$here"/tests/kernel/fixtures/*.journal "$2/" ;;
    flags_fuzzer)
      printf -- '--root\0build/fixtures/dgx-a100\0--format=json\0--iters\0010' >"$2/check"
      printf -- '--once\0--env-allow\0NCCL_IB_HCA\0--env-allow=NCCL_DEBUG\0-\0--timeout=5' >"$2/agent" ;;
    *) ;;  # structured inputs (trees, messages, states): libFuzzer starts from nothing
  esac
}

options() {
  case $1 in
    classify_log_fuzz) echo "-max_len=65536 -dict=$here/fuzz/classify/classify_log.dict" ;;
    config_fuzz) echo "-dict=$here/fuzz/config/config.dict" ;;
    # Long enough for a line past the message bound (the lines that once overflowed the stack).
    kernel_log_fuzzer) echo "-max_len=65536 -dict=$here/fuzz/kernel/kernel_log.dict" ;;
    gather_tree_fuzzer) echo "-max_len=4096" ;;
    snapshot_json_fuzzer) echo "-max_len=262144" ;;
    # Its inputs light up many features; entropic scheduling then costs more than the target.
    serialise_fuzzer) echo "-max_len=16384 -entropic=0" ;;
    *) echo "-max_len=16384" ;;
  esac
}

failed=0
printf '%-22s %10s %8s %8s %s\n' target runs exec/s corpus crashes
for t in $targets; do
  exe=$here/$build/$t
  if [ ! -x "$exe" ]; then
    printf '%-22s not built (%s)\n' "$t" "$exe"
    failed=1
    continue
  fi
  corpus=$work/$t/corpus
  artifacts=$work/$t/artifacts
  rm -rf "$work/$t"
  mkdir -p "$corpus" "$artifacts"
  seed "$t" "$corpus"
  # shellcheck disable=SC2046
  "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" $(options "$t") "$corpus" >"$work/$t/log" 2>&1
  rc=$?
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/$t/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$work/$t/log" | tail -1)
  crashes=$(find "$artifacts" -type f | wc -l)
  printf '%-22s %10s %8s %8s %s\n' "$t" "${runs:-?}" "${rate:-?}" "$(ls "$corpus" | wc -l)" \
    "$crashes$([ "$crashes" -gt 0 ] && echo " ($artifacts)")"
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    failed=1
    tail -40 "$work/$t/log"
  fi
done
exit $failed
