#!/usr/bin/env bash
# Runs every Grafana dashboard query, and the alert rules, against a real Prometheus (Debian's
# `prometheus`, on loopback) that scrapes running nccl-triage processes:
#   - agents judging fixture roots: `nccl-triage-server agent --standalone --root build/fixtures/<f>`
#     (node verdicts, checks, ports, limits, freshness; gpu-pods runs three GPU pods, so its
#     agent's workload view exports workload_check_status);
#   - `nccl-triage-demo --serve` when it was built (probes, pairs, coordinator metrics), and a
#     second one with 256 agents and one sweep (the fleet-scale case: every query must answer
#     with fewer than 500 series, so per-node/per-pair/per-port panels must filter or top-k).
# Without the demo, the queries of metrics only probes and the coordinator export are reported as
# SKIP with that reason. Without an `agent` subcommand the test is skipped (exit 77).
#
# Usage: dashboard_live.sh NCCL_TRIAGE_SERVER NCCL_TRIAGE_DEMO DEPLOYCHECK PROMETHEUS SOURCE_DIR WORK_DIR
#        FIXTURE_DIR
set -euo pipefail
bin="$1"; demo_bin="$2"; deploycheck="$3"; prometheus="$4"; src="$5"; work="$6"
fixtures="$7"
dashboard="$src/helm/nccl-triage/files/nccl-triage-dashboard.json"
rules="$src/helm/nccl-triage/files/nccl-triage-rules.yaml"

has_cmd() { "$bin" "$1" --help 2>&1 | grep -q -- "$2"; }
if ! has_cmd agent --standalone; then
  echo "SKIP: this nccl-triage has no 'agent --standalone' subcommand yet"
  exit 77
fi

rm -rf "$work"; mkdir -p "$work"
started=$SECONDS
pids=()
# The 256-agent demo writes a fixture root per node (~180,000 files, ~600 MB): on tmpfs when there
# is one, where writing and removing them takes seconds instead of minutes on a slow disk.
fleet_dir="$(mktemp -d /dev/shm/nccl-triage-fleet-XXXXXX 2>/dev/null || mktemp -d)"
cleanup() {
  local p i
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$fleet_dir"
}
trap cleanup EXIT

# A free loopback port below the kernel's ephemeral range: a port inside it can be the local end
# of one of the many connections that Prometheus and the demos open (connect refused, so it looks
# free) and then refuse a listener with EADDRINUSE. Bind-tested with bash's /dev/tcp.
ephemeral_low="$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
port_floor=10000
[ "$ephemeral_low" -gt $((port_floor + 2000)) ] || port_floor=1024
port_span=$(( ephemeral_low - port_floor - 1000 ))
next_port=$(( port_floor + ($$ % port_span) ))
free_port() {
  while (exec 3<>"/dev/tcp/127.0.0.1/$next_port") 2>/dev/null; do next_port=$((next_port + 1)); done
  echo "$next_port"; next_port=$((next_port + 1))
}

# wait_listen HOST:PORT SECONDS PID LOG: until something listens there; fails at once, with the
# end of its log, when the process PID exited first.
wait_listen() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${1##*:}") 2>/dev/null; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then
      echo "FAIL: the process meant to listen on $1 exited; the end of $4:"; tail -n 5 "$4"; return 1
    fi
    sleep 0.1
  done
  echo "FAIL: nothing listens on $1 after $2 s; the end of $4:"; tail -n 5 "$4"; return 1
}

# ------------------------------------------------------------------ agents on fixture roots
# One agent per scenario; the Prometheus target gets node=<fixture> as the chart's PodMonitor
# gives node=<node name>.
scenarios=(dgx-h100 port-down memlock-64k rate-degraded no-dev-ib gpu-pods)
targets=""
for f in "${scenarios[@]}"; do
  [ -d "$fixtures/$f" ] || { echo "FAIL: no fixture $fixtures/$f"; exit 1; }
  port="$(free_port)"
  "$bin" agent --standalone --root "$fixtures/$f" --node "$f" --listen "127.0.0.1:$port" \
    >"$work/agent-$f.log" 2>&1 &
  pids+=($!)
  wait_listen "127.0.0.1:$port" 60 "$!" "$work/agent-$f.log"
  targets+="
      - targets: ['127.0.0.1:$port']
        labels: {node: '$f'}"
done

# Probe, pair and coordinator metrics come only from sweeps: `nccl-triage-demo --serve` runs a
# coordinator and 8 agents on fixture roots with the fake NCCL (faults: node-2 port down, a bad
# cable between node-4 and node-6, memory registration failing on node-3's HCA of rail 5, which
# turns on the per-rail probes), finishes its sweeps, then serves every /metrics endpoint and
# prints their URLs. Without the demo executable, those queries are reported as SKIP.
demo_job=""
demo_alerts=()
# What no target of this run can export, as (regexp, reason) pairs. The incident counter has no
# series until an incident is recorded on a coordinator: only the demo's is asked to count one.
skip_re=('nccl_triage_incidents_total')
skip_why=("no incident recorded: the series appear when nccl-triage triage counts one")
skip_re+=('nccl_triage_(probe_|pair_verdict|last_probe_|coordinator_|nccl_info|rail_probe_)')
skip_why+=("exported only by probes and the coordinator: needs 'nccl-triage-demo --serve'")
skip_re+=('nccl_triage_job_')
skip_why+=("no GPU pod runs NCCL here: RAS job series need a job to ask (tests/workload ras_watch_test covers them)")
skip_re+=('nccl_triage_kernel_events_dropped_total')
skip_why+=("no kernel event dropped: the series appear past 256 keys of a family or on an invalid Xid code")
targets_expected=${#scenarios[@]}
# launch_demo NAME ARGS...: starts `nccl-triage-demo --serve ARGS` in the background (both demos
# sweep at the same time). collect_demo NAME PREFIX: waits until it serves, then sets
# $agents_of_demo (targets labelled node=<PREFIX><node>) and $coordinator_of_demo.
declare -A demo_pids
launch_demo() {
  local name="$1"; shift
  local dir="$work/$name"
  [ "$name" = fleet ] && dir="$fleet_dir/$name"
  "$demo_bin" --serve --work-dir "$dir" "$@" >"$work/$name.log" 2>&1 &
  demo_pids[$name]=$!
  pids+=("${demo_pids[$name]}")
}
collect_demo() {
  local name="$1" prefix="$2" pid="${demo_pids[$1]}"
  for _ in $(seq 4200); do
    grep -q 'serving until Ctrl-C' "$work/$name.log" && break
    kill -0 "$pid" 2>/dev/null || { echo "FAIL: $name exited:"; tail -n 20 "$work/$name.log"; exit 1; }
    sleep 0.1
  done
  grep -q 'serving until Ctrl-C' "$work/$name.log" || { echo "FAIL: $name did not finish its sweeps"; exit 1; }
  echo "== $name serving after $((SECONDS - started)) s"
  # "  <name>  http://127.0.0.1:<port>/metrics  /status" after the "serving" line.
  agents_of_demo="" coordinator_of_demo=""
  local node address hostport
  while read -r node address; do
    hostport="${address#http://}"; hostport="${hostport%%/*}"
    if [ "$node" = coordinator ]; then
      coordinator_of_demo="$hostport"
    else
      agents_of_demo+="
      - targets: ['$hostport']
        labels: {node: '$prefix$node'}"
      targets_expected=$((targets_expected + 1))
    fi
  done < <(awk '/serving until Ctrl-C:/ {on = 1; next} on && $2 ~ /^http:/ {print $1, $2}' "$work/$name.log")
  [ -n "$coordinator_of_demo" ] || { echo "FAIL: $name printed no coordinator URL"; exit 1; }
  targets_expected=$((targets_expected + 1))
}

if [[ -x "$demo_bin" ]] && "$demo_bin" --help 2>&1 | grep -q -- --serve; then
  # 8 agents until every pair is covered and every fault confirmed; 256 agents for one sweep.
  launch_demo demo --fault node:2:port_down --fault link:4-6:cable --fault rail:3:5:mr_register
  launch_demo fleet --nodes 256 --rounds 1
  collect_demo demo ""
  agents="$agents_of_demo" coordinators="
      - targets: ['$coordinator_of_demo']
        labels: {cluster: demo}"
  collect_demo fleet fleet-
  agents+="$agents_of_demo"
  coordinators+="
      - targets: ['$coordinator_of_demo']
        labels: {cluster: fleet}"
  demo_job="  - job_name: nccl-triage-agent-demo
    honor_labels: true
    scrape_interval: 10s
    static_configs:$agents
    relabel_configs:
      - target_label: job
        replacement: nccl-triage-agent
  - job_name: nccl-triage-coordinator
    honor_labels: true
    static_configs:$coordinators"
  unset 'skip_re[1]' 'skip_why[1]'
  # One incident, counted the way `nccl-triage triage` counts it, so that the incident panel has
  # a series: "  coordinator-grpc  127.0.0.1:PORT  --token-file FILE".
  read -r grpc token_file < <(awk '$1 == "coordinator-grpc" {print $2, $4}' "$work/demo.log")
  "$bin" triage-coordinator --coordinator "$grpc" --token-file "$token_file" \
    --count ib_resource --cause limits.memlock ||
    { echo "FAIL: the demo's coordinator did not count an incident"; exit 1; }
  unset 'skip_re[0]' 'skip_why[0]'
  demo_alerts=(--expect 'NcclTriageIbPortDown{node="node-2"}'
               --absent 'NcclTriageNodeFaultConfirmed{node="node-0"}'
               --absent 'NcclTriageCoordinatorDown')
fi

# ------------------------------------------------------------------ Prometheus
# With the demos' 264 agents the rules (fabric-wide counts over every node) are evaluated every
# 5 s: every second would keep a loaded machine's Prometheus busy with nothing but rules.
eval_interval=1s
[ -n "$demo_job" ] && eval_interval=5s
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: ${eval_interval}
rule_files: ['$rules']
scrape_configs:
  # 3 s to answer (a timeout is capped at the interval): at 1 s, a scrape of a busy agent on a
  # loaded machine timed out, and up == 0 set NcclTriageAgentDown pending.
  - job_name: nccl-triage-agent
    honor_labels: true
    scrape_interval: 3s
    scrape_timeout: 3s
    static_configs:$targets
$demo_job
EOF
# Prometheus is started again on another port when it exits before it listens (a port taken
# between the test and the bind); three tries.
prom_port=""
for try in 1 2 3; do
  prom_port="$(free_port)"
  "$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  prom_pid=$!
  pids+=("$prom_pid")
  if wait_listen "127.0.0.1:$prom_port" 120 "$prom_pid" "$work/prometheus.log"; then break; fi
  kill -0 "$prom_pid" 2>/dev/null && exit 1  # alive but not listening: no retry hides that
  [ "$try" -lt 3 ] || exit 1
  echo "== Prometheus exited before it listened (try $try); again on another port"
done
# rate() needs two samples: wait until every target has been scraped a few times.
url="http://127.0.0.1:$prom_port"
samples=4
[ -n "$demo_job" ] && samples=3  # the demos' 264 targets are scraped every 10 s, not every second
echo "== waiting for $targets_expected targets to be scraped $samples times"
"$deploycheck" wait-scrapes --prometheus "$url" --targets "$targets_expected" --samples "$samples" --timeout 120s

# Confirmed faults: when the demo's coordinator says it localised faults, the fault series and
# their alerts must be there; when it confirmed none, they are reported as SKIP.
if [ -n "$demo_job" ]; then
  confirmed="$("$deploycheck" value --prometheus "$url" --expr 'sum(nccl_triage_coordinator_localised_faults)' 2>&1 >/dev/null)"
  if awk -v v="$confirmed" 'BEGIN { exit !(v + 0 > 0) }'; then
    demo_alerts+=(--expect 'NcclTriageNodeFaultConfirmed{node="node-2"}'
                  --expect 'NcclTriageLinkFault{node=~"node-4|node-6",peer=~"node-4|node-6"}'
                  --expect 'NcclTriageRailFault{node="node-3",rail="5",device="mlx5_5"}'
                  --absent 'NcclTriageRailFault{node!~"node-2|node-3"}')
  else
    echo "SKIP confirmed-fault queries and alerts: the demo's coordinator localised no fault (nccl_triage_coordinator_localised_faults = ${confirmed:-?})"
    skip_re+=('nccl_triage_coordinator_fault\b')
    skip_why+=("no fault confirmed by the demo's coordinator")
  fi
fi

status=0
echo "== dashboard queries ($((SECONDS - started)) s after the start)"
max_series=()
rail_map=()
if [ -n "$demo_job" ]; then
  max_series=(--max-series 500)
  # The rail map shows node-3's rail 5 red (fails with every peer) and node-0's rail 3 green
  # (node-2's port-down mlx5_0 is its rail 0, alerted on too).
  rail_map=(--expect-value 'Rails × nodes|node="node-3",rail="5"|0'
            --expect-value 'Rails × nodes|node="node-0",rail="3"|1')
fi
skip_pattern="$(IFS='|'; echo "${skip_re[*]}")"
skip_reason="$(printf '%s; ' "${skip_why[@]}")"
"$deploycheck" dashboard --dashboard "$dashboard" --prometheus "$url" "${max_series[@]}" "${rail_map[@]}" \
  --skip-metric "$skip_pattern" --skip-reason "${skip_reason%; }" || status=1
echo "== alert rules on live agent metrics (pending state; 'for' has not elapsed; $((SECONDS - started)) s after the start)"
"$deploycheck" alerts-live --prometheus "$url" \
  --expect 'NcclTriageIbPortDown{node="port-down"}' \
  --expect 'NcclTriageNodeIbResource{node="port-down",cause="ib.port_state"}' \
  --expect 'NcclTriageMemlockTooLow{node="memlock-64k"}' \
  --expect 'NcclTriageIbPortRateDegraded{node="rate-degraded"}' \
  --expect 'NcclTriageRdmaDevicesMissing{node="no-dev-ib"}' \
  --expect 'NcclTriageWorkloadMemlockTooLow{node="gpu-pods"}' \
  --absent 'NcclTriageWorkloadMemlockTooLow{node="dgx-h100"}' \
  --absent 'NcclTriageNodeArchitecture{node="gpu-pods"}' \
  --absent 'NcclTriageIbPortDown{node="dgx-h100"}' \
  --absent 'NcclTriageNodeIbResource{node="dgx-h100"}' \
  --absent 'NcclTriageNodeArchitecture{node="dgx-h100"}' \
  --absent 'NcclTriageMemlockTooLow{node="dgx-h100"}' \
  --absent "NcclTriageChecksStale{node=~\"$(IFS='|'; echo "${scenarios[*]}")\"}" \
  --absent 'NcclTriageAgentDown' "${demo_alerts[@]}" || status=1
if [ "$status" -ne 0 ]; then
  echo "--- logs in $work"; tail -n 5 "$work"/*.log
fi
echo "== done $((SECONDS - started)) s after the start"
exit "$status"
