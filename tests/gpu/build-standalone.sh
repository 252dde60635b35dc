#!/usr/bin/env bash
# Builds the standalone probe `nccl-triage-probe` with g++ alone (no CMake, no gRPC, no -dev
# packages): the sources of agent/core, agent/classify and agent/probe, and a bundle made on a
# development machine by tests/gpu/bundle.sh (the generated sources, and the headers and static
# libraries of RE2, yaml-cpp and nlohmann/json). Nothing is downloaded.
#   usage: tests/gpu/build-standalone.sh OUTPUT_BINARY
# The bundle is $GPU_DEPS, else .gpu-deps in the repository. OPT overrides -O2 -g.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: build-standalone.sh OUTPUT_BINARY}"
cxx="${CXX:-g++}"
deps="${GPU_DEPS:-$repo/.gpu-deps}"
for need in generated/core/catalogue_host_checks.inc generated/builtin_rules.cc \
            generated/catalogue_text.cc include/re2/re2.h include/yaml-cpp/yaml.h \
            include/nlohmann/json.hpp lib/libre2.a lib/libyaml-cpp.a; do
  if [[ ! -e "$deps/$need" ]]; then
    echo "build-standalone: $deps/$need is missing: run tests/gpu/bundle.sh on a machine with" \
         "the build's packages and bring its output here (GPU_DEPS or .gpu-deps)" >&2
    exit 2
  fi
done

sources=("$repo"/agent/core/*.cc "$deps/generated/builtin_rules.cc"
         "$deps/generated/catalogue_text.cc" "$repo"/agent/base/files.cc "$repo"/agent/base/flags.cc
         "$repo"/agent/base/utf8.cc "$repo"/agent/base/byte_size.cc)
for f in "$repo"/agent/classify/*.cc; do
  # rule_files.cc reads the installed rule file: the full binary's, not the probe's.
  [[ "$(basename "$f")" == rule_files.cc ]] || sources+=("$f")
done
for f in child environment intra_node libraries pair_local probe_cli runner subprocess standalone_main; do
  sources+=("$repo/agent/probe/$f.cc")
done
mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2086
"$cxx" -std=c++20 ${OPT:--O2 -g} -Wall -Wextra -Wno-missing-field-initializers \
  -I"$repo/agent" -I"$deps/generated" -isystem "$deps/include" \
  "${sources[@]}" -o "$out" "$deps/lib/libre2.a" "$deps/lib/libyaml-cpp.a" -ldl -lpthread
echo "built $out"
