#!/usr/bin/env bash
# The release tooling (scripts/release.sh, release_notes.py, sbom.py; docs/release.md).
#   release_test.sh notes      SRC WORK         the notes of Chart.yaml's version are its dated
#                              CHANGELOG.md section, whole; Unreleased and unknown versions fail
#   release_test.sh version    SRC WORK         --check-version passes on a copy of the sources,
#                              and fails with one line naming the file for each mismatch
#   release_test.sh sbom       SRC WORK BINARY  the SBOM of BINARY is SPDX 2.3 with its Debian
#                              packages; broken documents are refused
#   release_test.sh dry-run    SRC WORK         --dry-run prints the plan and builds nothing; a
#                              bad REGISTRY or NCCL_WHEEL fails before anything is built
#   release_test.sh actionlint SRC WORK         the workflows pass the pinned actionlint (77
#                              when scripts/actionlint.sh has not built it)
set -euo pipefail
die() { echo "FAIL: $*"; exit 1; }
cmd="$1"; src="$2"; work="$3"; shift 3
rm -rf "$work"; mkdir -p "$work"
version="$("$src/scripts/release.sh" --check-version "$src")"

case "$cmd" in
notes)
  "$src/scripts/release_notes.py" "$src/CHANGELOG.md" "v$version" > "$work/notes.md"
  # The section's first and last non-empty lines, read from CHANGELOG.md independently.
  awk -v h="## [$version] - " 'index($0, h) == 1 {on = 1; next} on && /^## / {exit} on' \
    "$src/CHANGELOG.md" | sed '/^\[[^]]*\]: /d' > "$work/expected.md"
  diff <(sed '/./,$!d' "$work/expected.md" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}') \
       "$work/notes.md" || die "the notes differ from CHANGELOG.md's [$version] section"
  grep -q '^### ' "$work/notes.md" || die "the notes have no ### subsection"
  ! grep -q '^## ' "$work/notes.md" || die "the notes hold a ## header"
  for bad in Unreleased 99.99.99; do
    if "$src/scripts/release_notes.py" "$src/CHANGELOG.md" "$bad" >"$work/out" 2>"$work/err"; then
      die "notes of '$bad' did not fail"
    fi
    [ "$(wc -l <"$work/err")" = 1 ] || die "notes of '$bad': not one line: $(cat "$work/err")"
  done
  echo "notes of $version: $(wc -l <"$work/notes.md") lines" ;;

version)
  copy() {
    rm -rf "$work/src"; mkdir -p "$work/src/helm/nccl-triage"
    cp "$src/helm/nccl-triage/Chart.yaml" "$work/src/helm/nccl-triage/"
    cp "$src/CMakeLists.txt" "$src/Dockerfile" "$src/CHANGELOG.md" "$work/src/"
  }
  copy
  [ "$("$src/scripts/release.sh" --check-version "$work/src")" = "$version" ] ||
    die "the unchanged copy does not pass"
  expect() {  # WHAT EXPECTED_MESSAGE [TAG]
    if "$src/scripts/release.sh" --check-version "$work/src" "${3:-}" >"$work/out" \
         2>"$work/err"; then
      die "$1: passed"
    fi
    [ "$(wc -l <"$work/err")" = 1 ] || die "$1: not one line: $(cat "$work/err")"
    grep -qF "$2" "$work/err" || die "$1: '$(cat "$work/err")' does not say '$2'"
    echo "ok: $1: $(cat "$work/err")"
    copy
  }
  sed -i 's/^appVersion: .*/appVersion: "9.9.9"/' "$work/src/helm/nccl-triage/Chart.yaml"
  expect appVersion "Chart.yaml appVersion '9.9.9' != Chart.yaml version '$version'"
  sed -i 's/^version: .*/version: 9.9.9/' "$work/src/helm/nccl-triage/Chart.yaml"
  expect "chart version" "Chart.yaml appVersion '$version' != Chart.yaml version '9.9.9'"
  sed -i "s/^project(nccl_triage VERSION [^ ]*/project(nccl_triage VERSION 9.9.9/" \
    "$work/src/CMakeLists.txt"
  expect CMakeLists "CMakeLists.txt project(VERSION) '9.9.9'"
  sed -i 's/^ARG VERSION=.*/ARG VERSION=9.9.9/' "$work/src/Dockerfile"
  expect Dockerfile "Dockerfile ARG VERSION '9.9.9'"
  sed -i "s/^## \[$version\] - /## [$version-rc] - /" "$work/src/CHANGELOG.md"
  expect CHANGELOG "CHANGELOG.md has no dated section '## [$version] - YYYY-MM-DD'"
  expect tag "tag 'v9.9.9' != v$version" v9.9.9
  sed -i 's/^version: .*/version: one/' "$work/src/helm/nccl-triage/Chart.yaml"
  expect "not semantic" "version 'one' is not semantic" ;;

sbom)
  binary="$1"
  "$src/scripts/sbom.py" generate --version "$version" --nccl-wheel nvidia-nccl-cu12==2.28.9 \
    --compiled-in nlohmann-json3-dev --out "$work/sbom.json" "$binary"
  "$src/scripts/sbom.py" check "$work/sbom.json" --expect-package nccl-triage \
    --expect-package libc6 --expect-package libibverbs1 --expect-package nvidia-nccl-cu12 \
    --expect-package nlohmann-json3-dev || die "the generated SBOM fails its check"
  python3 - "$work/sbom.json" <<'PY' || die "SBOM content"
import json, sys
d = json.load(open(sys.argv[1]))
bins = [p for p in d["packages"] if p["name"] == "nccl-triage"]
assert len(bins) == 1 and bins[0]["checksums"][0]["algorithm"] == "SHA256", bins
debs = [p for p in d["packages"] if p.get("supplier") == "Organization: Debian"]
assert all(r["referenceLocator"].startswith("pkg:deb/debian/") for p in debs
           for r in p["externalRefs"]), "deb purls"
links = {r["relatedSpdxElement"] for r in d["relationships"]
         if r["relationshipType"] == "DYNAMIC_LINK"}
assert {p["SPDXID"] for p in debs if p["name"] != "nlohmann-json3-dev"} == links, "links"
wheel = [p for p in d["packages"] if p["name"] == "nvidia-nccl-cu12"]
assert wheel[0]["versionInfo"] == "2.28.9", wheel
PY
  # Broken documents: each is refused with a line naming the problem.
  broken() {  # NAME PYTHON_EDIT EXPECTED
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2
json.dump(d, open(sys.argv[2], 'w'))" \
      "$work/sbom.json" "$work/$1.json"
    if "$src/scripts/sbom.py" check "$work/$1.json" >"$work/out"; then die "$1: accepted"; fi
    grep -qF "$3" "$work/out" || die "$1: '$(cat "$work/out")' does not say '$3'"
  }
  broken version "d['spdxVersion']='SPDX-2.2'" "spdxVersion is 'SPDX-2.2'"
  broken dangling "d['relationships'][0]['relatedSpdxElement']='SPDXRef-nothing'" "names no element"
  broken duplicate "d['packages'].append(dict(d['packages'][0]))" "is not unique"
  broken noversion "del d['packages'][1]['versionInfo']" "has no versionInfo"
  broken created "d['creationInfo']['created']='yesterday'" "creationInfo needs created"
  echo "garbage" > "$work/garbage.json"
  if "$src/scripts/sbom.py" check "$work/garbage.json" >/dev/null; then die "garbage accepted"; fi
  echo "SBOM of $(basename "$binary"): $(grep -c '"SPDXID"' "$work/sbom.json") elements" ;;

dry-run)
  out="$(cd "$work" && DIST="$work/dist" BUILD_DIR="$work/build" REGISTRY=registry.example.com/ml \
         "$src/scripts/release.sh" --dry-run)"
  echo "$out"
  for want in "release $version (" "nccl-triage-$version.tgz" \
              "image.registry=registry.example.com/ml" \
              "nccl-triage-$version-linux-" "SHA256SUMS" "nccl-triage-$version.spdx.json" \
              "registry.example.com/ml/nccl-triage:$version-nccl" \
              "/nccl-triage-$version.tgz oci://registry.example.com/ml/charts"; do
    case "$out" in *"$want"*) ;; *) die "the plan does not say '$want'" ;; esac
  done
  [ ! -e "$work/dist" ] && [ ! -e "$work/build" ] || die "the dry run wrote dist/ or the build"
  refuse() {  # VAR=VALUE EXPECTED
    if env "$1" DIST="$work/dist" "$src/scripts/release.sh" --dry-run >/dev/null 2>"$work/err"; then
      die "$1: the dry run passed"
    fi
    grep -qF "$2" "$work/err" || die "$1: '$(cat "$work/err")' does not say '$2'"
  }
  refuse REGISTRY='https://ghcr.io/x' "is not a registry host and path"
  refuse NCCL_WHEEL='nvidia-nccl-cu12' "NCCL_WHEEL must be"
  if "$src/scripts/release.sh" --dry-run --tag v0.0.0-no >/dev/null 2>"$work/err"; then
    die "a wrong tag passed the dry run"
  fi
  grep -qF "tag 'v0.0.0-no'" "$work/err" || die "wrong tag: $(cat "$work/err")" ;;

actionlint)
  bin="$("$src/scripts/actionlint.sh" --path)"
  if [ ! -x "$bin" ]; then
    echo "actionlint is not built (make k8s-tools, scripts/actionlint.sh): skipped"; exit 77
  fi
  # shellcheck and pyflakes off: the same verdict wherever they are installed or not.
  (cd "$src" && "$bin" -no-color -oneline -shellcheck= -pyflakes= \
     .github/workflows/*.yml) || die "actionlint $("$bin" -version | head -1)"
  # It does find errors: an undefined step output and a broken expression.
  printf 'on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n%s\n' \
    '      - run: echo ${{ steps.x.outputs.y }' \
    > "$work/bad.yml"
  if "$bin" -no-color -oneline -shellcheck= -pyflakes= "$work/bad.yml" >"$work/out"; then
    die "actionlint accepted a broken workflow"
  fi
  n="$(ls "$src"/.github/workflows/*.yml | wc -l)"
  echo "actionlint $("$bin" -version | head -1): $n workflows clean" ;;
*) die "unknown command $cmd" ;;
esac
