#!/usr/bin/env bash
# Builds into dist/ what a release publishes (docs/release.md): the chart packaged for an OCI
# registry, the binaries in a tarball per architecture with SHA256SUMS, an SPDX SBOM, and the
# images where a container engine answers. Nothing is pushed: the push commands are printed.
#
#   scripts/release.sh [--dry-run] [--tag vX.Y.Z]   (`make release`, `make release DRY_RUN=1`)
#   scripts/release.sh --check-version [ROOT]       only the version check, of ROOT (default: here)
#
# The version is helm/nccl-triage/Chart.yaml's `version`, the one place a release changes it;
# appVersion, CMakeLists.txt's project(VERSION), the Dockerfile's ARG VERSION and a dated
# CHANGELOG.md section must agree (and --tag, when given). --dry-run checks all inputs and prints
# the plan, building nothing.
# Environment (Makefile variables of the same names):
#   REGISTRY    where the image and the chart are published (default ghcr.io/nccl-triage):
#               image REGISTRY/nccl-triage:VERSION, chart oci://REGISTRY/charts
#   NCCL_WHEEL  the NCCL wheel of the -nccl image (default nvidia-nccl-cu12==2.28.9)
#   DIST        output directory (default dist); BUILD_DIR: the Release build (build-release)
#   JOBS        parallel compile jobs (default: nproc)
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { echo "release: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------- version check
# Prints the version, or one line naming the file that disagrees and exits 1.
check_version() {
  local root="$1" tag="${2:-}" v app cm df
  v="$(sed -n 's/^version:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' \
       "$root/helm/nccl-triage/Chart.yaml")"
  [ -n "$v" ] || die "helm/nccl-triage/Chart.yaml has no version"
  [[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
    die "helm/nccl-triage/Chart.yaml version '$v' is not semantic (X.Y.Z)"
  app="$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}[[:space:]]*$/\1/p' \
         "$root/helm/nccl-triage/Chart.yaml")"
  [ "$app" = "$v" ] ||
    die "version mismatch: Chart.yaml appVersion '$app' != Chart.yaml version '$v'"
  cm="$(sed -n 's/^project(nccl_triage VERSION \([^ )]*\).*/\1/p' "$root/CMakeLists.txt")"
  [ "$cm" = "$v" ] ||
    die "version mismatch: CMakeLists.txt project(VERSION) '$cm' != Chart.yaml version '$v'"
  df="$(sed -n 's/^ARG VERSION=\(.*\)$/\1/p' "$root/Dockerfile")"
  [ "$df" = "$v" ] ||
    die "version mismatch: Dockerfile ARG VERSION '$df' != Chart.yaml version '$v'"
  grep -Eq "^## \[$(printf '%s' "$v" | sed 's/\./\\./g')\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$" \
    "$root/CHANGELOG.md" ||
    die "version mismatch: CHANGELOG.md has no dated section '## [$v] - YYYY-MM-DD'"
  if [ -n "$tag" ] && [ "$tag" != "v$v" ]; then
    die "version mismatch: tag '$tag' != v$v (Chart.yaml version)"
  fi
  echo "$v"
}

dry_run=0; tag=""
while [ $# -gt 0 ]; do
  case "$1" in
    --check-version) check_version "${2:-$src}" "${3:-}"; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --tag) tag="${2:?--tag needs vX.Y.Z}"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

version="$(check_version "$src" "$tag")"
registry="${REGISTRY:-ghcr.io/nccl-triage}"
registry="${registry%/}"
nccl_wheel="${NCCL_WHEEL:-nvidia-nccl-cu12==2.28.9}"
dist="${DIST:-dist}"; case "$dist" in /*) ;; *) dist="$src/$dist" ;; esac
build="${BUILD_DIR:-build-release}"; case "$build" in /*) ;; *) build="$src/$build" ;; esac
jobs="${JOBS:-$(nproc)}"
arch="$(dpkg --print-architecture)"             # amd64, arm64: the Debian name, as in the image
image="$registry/nccl-triage:$version"
tarball="nccl-triage-$version-linux-$arch.tar.gz"
chart_tgz="nccl-triage-$version.tgz"

# Inputs: the tools and files each step needs, checked before anything is built.
[[ "$nccl_wheel" =~ ^nvidia-nccl-cu1[23]==[0-9][0-9A-Za-z.]*$ ]] ||
  die "NCCL_WHEEL must be nvidia-nccl-cu12==X.Y.Z or nvidia-nccl-cu13==X.Y.Z, not '$nccl_wheel'"
[[ "$registry" =~ ^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$ ]] ||
  die "REGISTRY '$registry' is not a registry host and path (e.g. ghcr.io/my-org)"
helm="$("$src/scripts/k8s-tools.sh" --dir)/bin/helm"
for t in cmake python3 tar gzip sha256sum strip ldd dpkg-query; do
  command -v "$t" >/dev/null || die "$t not found (make deps)"
done
"$src/scripts/release_notes.py" "$src/CHANGELOG.md" "$version" >/dev/null ||
  die "no release notes for $version in CHANGELOG.md"
engine=""
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker
elif command -v podman >/dev/null && podman info >/dev/null 2>&1; then engine=podman
elif command -v buildah >/dev/null && buildah info >/dev/null 2>&1; then engine=buildah
fi

plan() {
  cat <<EOF
release $version ($arch) into ${dist#$src/}/:
  $chart_tgz      chart, image.registry=$registry image.tag=$version
  $tarball  nccl-triage, nccl-triage-server (Release, stripped), rules, config.yaml
  SHA256SUMS, nccl-triage-$version.spdx.json (SBOM; NCCL wheel $nccl_wheel), RELEASE_NOTES.md
  images: $image, $image-nccl (NCCL_WHEEL=$nccl_wheel):
    ${engine:-skipped, no container engine answers (docker, podman or buildah)}
  publish (not done here):
    docker push $image && docker push $image-nccl
    helm push ${dist#$src/}/$chart_tgz oci://$registry/charts
EOF
  if [ ! -x "$helm" ]; then
    echo "  note: helm is not built yet (make k8s-tools builds it)"
  fi
}
if [ "$dry_run" = 1 ]; then plan; exit 0; fi
[ -x "$helm" ] || die "helm not built: run make k8s-tools (scripts/k8s-tools.sh)"

start=$SECONDS
rm -rf "$dist"; mkdir -p "$dist"
stage="$dist/.stage"; mkdir -p "$stage"
trap 'rm -rf "$stage"' EXIT
commit_time="$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$commit_time}"

# ---------------------------------------------------------------------------- chart
# The packaged chart's defaults point at the published image of the same version.
cp -r "$src/helm/nccl-triage" "$stage/chart"
values="$stage/chart/values.yaml"
python3 - "$values" "$registry" "$version" <<'PY'
import re, sys
path, registry, version = sys.argv[1:]
text = open(path, encoding="utf-8").read()
block = re.search(r"^image:\n((?:[ #].*\n|\n)*)", text, re.M)
if not block:
    sys.exit("release: values.yaml has no image: block")
body = block.group(1)
new, n1 = re.subn(r'^(  registry:) ""$', rf'\1 "{registry}"', body, count=1, flags=re.M)
new, n2 = re.subn(r'^(  tag:) ""$', rf'\1 "{version}"', new, count=1, flags=re.M)
if n1 != 1 or n2 != 1:
    sys.exit('release: values.yaml image.registry or image.tag is not "" (the source default)')
open(path, "w", encoding="utf-8").write(text.replace(body, new, 1))
PY
"$helm" lint --strict "$stage/chart" >/dev/null || die "helm lint of the packaged chart failed"
"$helm" package "$stage/chart" --destination "$dist" >/dev/null
[ -f "$dist/$chart_tgz" ] || die "helm package did not write $chart_tgz"
rendered="$("$helm" template rel "$dist/$chart_tgz" --set token.value=x | grep -m1 'image: ')"
case "$rendered" in *"$image"*) ;; *) die "packaged chart renders '$rendered', not $image" ;; esac

# ---------------------------------------------------------------------------- binaries
# The Release preset (-O3, warnings as errors, no tests), installed under /usr as in the image.
echo "release: building the binaries (Release, $jobs jobs)" >&2
cmake --preset release -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" --target nccl-triage nccl-triage-server -j "$jobs" >/dev/null
root="$stage/nccl-triage-$version-linux-$arch"
mkdir -p "$root/bin"
DESTDIR="$stage/install" cmake --install "$build" --component data >/dev/null
cp -r "$stage/install/usr/share" "$root/share"
for b in nccl-triage nccl-triage-server; do
  strip --strip-all -o "$root/bin/$b" "$build/$b"
done
"$root/bin/nccl-triage" --version >/dev/null
"$root/bin/nccl-triage" check --dump-config > "$root/config.yaml"
cp "$src/LICENSE" "$src/scripts/packages-runtime.txt" "$root/"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$stage" -cf - "$(basename "$root")" | gzip -n -9 > "$dist/$tarball"

# ---------------------------------------------------------------------------- SBOM, notes
# nlohmann-json is header-only: compiled in, invisible to ldd.
"$src/scripts/sbom.py" generate --version "$version" --nccl-wheel "$nccl_wheel" \
  --compiled-in nlohmann-json3-dev --out "$dist/nccl-triage-$version.spdx.json" \
  "$root/bin/nccl-triage" "$root/bin/nccl-triage-server"
"$src/scripts/sbom.py" check "$dist/nccl-triage-$version.spdx.json"
"$src/scripts/release_notes.py" "$src/CHANGELOG.md" "$version" > "$dist/RELEASE_NOTES.md"
(cd "$dist" && sha256sum "$chart_tgz" "$tarball" "nccl-triage-$version.spdx.json" > SHA256SUMS)

# ---------------------------------------------------------------------------- images
revision="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
args=(--build-arg VERSION="$version" --build-arg REVISION="$revision")
case "$engine" in
  docker|podman)
    "$engine" build -t "$image" "${args[@]}" "$src"
    "$engine" build -t "$image-nccl" "${args[@]}" --build-arg NCCL_WHEEL="$nccl_wheel" "$src" ;;
  buildah)
    buildah bud -t "$image" "${args[@]}" "$src"
    buildah bud -t "$image-nccl" "${args[@]}" --build-arg NCCL_WHEEL="$nccl_wheel" "$src" ;;
  *) echo "release: images skipped: no container engine answers (docker, podman or buildah);" \
          "scripts/image-offline.sh builds them with buildah as root" ;;
esac

echo "release: $version built in $((SECONDS - start)) s:"
(cd "$dist" && ls -l --time-style=+ "$chart_tgz" "$tarball" SHA256SUMS \
   "nccl-triage-$version.spdx.json" RELEASE_NOTES.md | awk '{print "  " $5 "\t" $NF}')
for b in nccl-triage nccl-triage-server; do
  echo "release: $b loads $(ldd "$root/bin/$b" | grep -c '=> /') shared libraries (ldd;" \
       "docs/release.md says why they are not static)"
done
echo "release: to publish (not done here):"
echo "  docker push $image && docker push $image-nccl"
echo "  helm push ${dist#$src/}/$chart_tgz oci://$registry/charts"
