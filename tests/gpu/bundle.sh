#!/usr/bin/env bash
# Gathers, on a development machine, everything build-standalone.sh needs that a GPU machine
# lacks: the sources CMake generates (the host-check tables, the built-in classifier rules and
# NCCL message catalogue) and the headers and static libraries of RE2, yaml-cpp and nlohmann/json
# from this machine's Debian packages. The GPU machine then needs only g++.
#   usage: tests/gpu/bundle.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, .gpu-deps)
# BUILD_DIR is a CMake build directory of this repository (configured is enough: the script
# builds the generated sources it needs). OUT_DIR is ignored by git; carry it to the GPU machine.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$repo/build}"
out="${2:-$repo/.gpu-deps}"
[[ "$build" = /* ]] || build="$PWD/$build"
[[ "$out" = /* ]] || out="$PWD/$out"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  echo "bundle: $build is not a CMake build directory (run cmake -S . -B $build first)" >&2
  exit 2
fi
# The generated sources are outputs of the classify and core targets' configure and build steps.
cmake --build "$build" --target nccl_triage_classify >/dev/null

rm -rf "$out.tmp"
mkdir -p "$out.tmp/include" "$out.tmp/lib" "$out.tmp/generated/core"
cp "$build"/generated/core/*.inc "$out.tmp/generated/core/"
cp "$build/agent/classify/builtin_rules.cc" "$build/agent/classify/catalogue_text.cc" \
  "$out.tmp/generated/"

multiarch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
for hdr in re2 yaml-cpp nlohmann; do
  src=""
  for dir in /usr/include /usr/local/include; do
    if [[ -d "$dir/$hdr" ]]; then src="$dir/$hdr"; break; fi
  done
  if [[ -z "$src" ]]; then
    echo "bundle: headers of $hdr not found (install libre2-dev, libyaml-cpp-dev," \
         "nlohmann-json3-dev)" >&2
    exit 2
  fi
  cp -r "$src" "$out.tmp/include/"
done
for lib in libre2.a libyaml-cpp.a; do
  found=""
  for dir in "/usr/lib/$multiarch" /usr/lib /usr/local/lib; do
    if [[ -f "$dir/$lib" ]]; then found="$dir/$lib"; break; fi
  done
  if [[ -z "$found" ]]; then
    echo "bundle: $lib not found (the static library of libre2-dev / libyaml-cpp-dev)" >&2
    exit 2
  fi
  cp "$found" "$out.tmp/lib/"
done
{
  echo "made from $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  dpkg-query -W -f='${Package} ${Version}\n' libre2-dev libyaml-cpp-dev nlohmann-json3-dev \
    2>/dev/null || true
} >"$out.tmp/VERSIONS"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "bundle: $out ($(du -sh "$out" | cut -f1))"
