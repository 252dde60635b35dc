#!/usr/bin/env bash
# Builds the standalone probe `nccl-triage-probe` with g++ alone (no CMake, no gRPC): the sources
# of agent/core, agent/classify and agent/probe, the C++ standard library, RE2 and yaml-cpp (the
# classifier's rules; Debian libre2-dev, libyaml-cpp-dev), and the header-only nlohmann/json
# (found in NLOHMANN_INCLUDE, the system include path, or a folder the caller brought along as
# .gpu-deps/include).
#   usage: tests/gpu/build-standalone.sh OUTPUT_BINARY
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build-standalone.sh OUTPUT_BINARY}"
cxx="${CXX:-g++}"

includes=(-I"$repo/agent")
found=""
for dir in "${NLOHMANN_INCLUDE:-}" /usr/include /usr/local/include "$repo/.gpu-deps/include"; do
  if [[ -n "$dir" && -f "$dir/nlohmann/json.hpp" ]]; then found="$dir"; break; fi
done
if [[ -z "$found" ]]; then
  echo "build-standalone: nlohmann/json.hpp not found; set NLOHMANN_INCLUDE or copy the" \
       "nlohmann folder into $repo/.gpu-deps/include" >&2
  exit 2
fi
[[ "$found" == /usr/include ]] || includes+=(-I"$found")

# The classifier's rules are built in from agent/classify/rules.yaml (as CMake does).
gen="$(mktemp -d)"
trap 'rm -rf "$gen"' EXIT
python3 - "$repo/agent/classify/builtin_rules.cc.in" "$repo/agent/classify/rules.yaml" \
  "$gen/builtin_rules.cc" <<'PY'
import sys
template, rules, out = sys.argv[1:4]
text = open(rules).read()
open(out, "w").write(open(template).read().replace("@NCCL_TRIAGE_RULES_TEXT@", text))
PY
sources=("$repo"/agent/core/*.cc "$repo"/agent/classify/classifier.cc
         "$repo"/agent/classify/log_line.cc "$repo"/agent/classify/rules.cc "$gen/builtin_rules.cc"
         "$repo"/agent/base/files.cc "$repo"/agent/base/flags.cc)
for f in child environment intra_node libraries pair_local probe_cli runner subprocess standalone_main; do
  sources+=("$repo/agent/probe/$f.cc")
done
mkdir -p "$(dirname "$out")"
"$cxx" -std=c++20 -O2 -g -Wall -Wextra -Wno-missing-field-initializers "${includes[@]}" \
  "${sources[@]}" -o "$out" -lre2 -lyaml-cpp -ldl -lpthread
echo "built $out"
