#!/usr/bin/env bash
# Leader failover of two coordinator processes against the real kube-apiserver of the tests
# (tests/k8s/leader_election_process.sh through ctest, which starts the cluster and installs the
# chart): how long after kill -9 of the leader the standby holds the Lease, carries the leader
# label alone (its own put on, the dead leader's taken off), and has both agents back (they reach
# the replicas through a Service that follows the label, and reconnect with their own back-off:
# 0.5 s doubling to 30 s, with jitter). Runs each timing RUNS times.
# With --test failover_process, the same for tests/k8s/failover_process.sh: kill -9 of the leader
# while its taint is in flight and in the middle of a sweep, with three agents running probes.
#   bench/k8s/leader_failover.sh [--runs 3] [--build build] [--timings "15/10/2 8/6/2"]
#                                [--test leader_election_process|failover_process]
# Timings are lease duration / renew deadline / retry period in seconds; 15/10/2 is client-go's
# default (and the coordinator's).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
runs=3 build="$root/build" timings="15/10/2 8/6/2" test=leader_election_process
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;; --build) build="$2"; shift 2 ;;
    --timings) timings="$2"; shift 2 ;; --test) test="$2"; shift 2 ;;
    *) echo "usage: leader_failover.sh [--runs N] [--build DIR] [--timings \"D/R/P ...\"]" \
            "[--test NAME]" >&2
       exit 2 ;;
  esac
done
for t in $timings; do
  IFS=/ read -r d r p <<<"$t"
  for i in $(seq 1 "$runs"); do
    out="$(LEASE_DURATION="$d" RENEW_DEADLINE="$r" RETRY_PERIOD="$p" \
           ctest --test-dir "$build" -R "^kube\\.$test\$" -V 2>&1 || true)"
    line="$(grep -o 'FIGURES .*' <<<"$out" | head -1)"
    echo "timings $t run $i: ${line:-FAILED (ctest -V output above is kept in the log)}"
    [ -n "$line" ] || tail -30 <<<"$out"
  done
done
