#!/usr/bin/env bash
# The config.yaml that the chart renders must be accepted by `nccl-triage check --config`, and
# its --dump-config must give back every value the chart set.
# Usage: config_loads.sh NCCL_TRIAGE_BINARY CHARTCHECK_BINARY RENDERED_CONFIG
set -euo pipefail
bin="$1"; chartcheck="$2"; config="$3"
if ! "$bin" check --help 2>&1 | grep -q -- '--dump-config'; then
  echo "SKIP: this nccl-triage has no 'check --dump-config' yet"
  exit 77
fi
dump="$(mktemp)"; err="$(mktemp)"; trap 'rm -f "$dump" "$err"' EXIT
if ! "$bin" check --config "$config" --dump-config >"$dump" 2>"$err"; then
  echo "FAIL: nccl-triage rejected the rendered config:"; cat "$err"; exit 1
fi
exec "$chartcheck" --config-subset "$config" --config-dump "$dump"
