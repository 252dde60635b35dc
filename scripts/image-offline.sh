#!/usr/bin/env bash
# Builds the nccl-triage image from the Dockerfile without a Docker engine and without Docker Hub:
# the Debian 12 base comes from debootstrap (Debian's archive only) and replaces the Dockerfile's
# pinned debian:12-slim through --build-arg BASE_IMAGE; the Dockerfile is built with buildah
# (Debian 12 package), then the image is started to prove it works: `check` on a
# bundled fixture root, `coordinator --help` (the serving module and every library it needs), one
# `agent --standalone --once` cycle and `check --workloads` on the gpu-pods fixture.
#
#   scripts/image-offline.sh [TAG]          default tag nccl-triage:<version from CMakeLists.txt>
#   scripts/image-offline.sh --save FILE    also write the image as a docker-archive tarball
#                                           (`docker load -i FILE` / `ctr images import FILE`)
#   scripts/image-offline.sh --nccl-wheel nvidia-nccl-cu12==2.28.9
#                                           the image with NCCL for the probes (Dockerfile
#                                           NCCL_WHEEL, from the Python package index); the smoke
#                                           test then loads it and checks its version
#
# Needs root (debootstrap, buildah's chroot isolation); installs buildah and debootstrap when
# missing. Work files live in ${WORK:-/var/tmp/nccl-triage-image}; the base image is kept in
# buildah's storage between runs. Storage driver vfs, so it works where overlay mounts do not.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="$(sed -n 's/^project(nccl_triage VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")"
tag="nccl-triage:$version"
save=""
nccl_wheel=""
while [ $# -gt 0 ]; do
  case "$1" in
    --save) save="${2:?--save needs a file}"; shift 2 ;;
    --nccl-wheel) nccl_wheel="${2:?--nccl-wheel needs nvidia-nccl-cuNN==X.Y.Z}"; tag="$tag-nccl"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) tag="$1"; shift ;;
  esac
done
work="${WORK:-/var/tmp/nccl-triage-image}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
bah=(buildah --storage-driver vfs)

[ "$(id -u)" -eq 0 ] || { echo "image-offline: needs root (debootstrap, buildah chroot)"; exit 2; }
for tool in buildah debootstrap; do
  command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$tool" >/dev/null; }
done

# The base image, once: a minimal Debian 12 tree (debootstrap minbase, close to debian:12-slim),
# given to the Dockerfile as BASE_IMAGE instead of the pinned digest it cannot pull offline.
base="localhost/nccl-triage-base:bookworm-debootstrap"
if ! "${bah[@]}" inspect --type image "$base" >/dev/null 2>&1; then
  echo "image-offline: debootstrap bookworm from $mirror"
  rm -rf "$work/rootfs"; mkdir -p "$work"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { echo "image-offline: debootstrap failed, see $work/debootstrap.log"; exit 1; }
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  ctr="$("${bah[@]}" from scratch)"
  "${bah[@]}" copy "$ctr" "$work/rootfs/" / >/dev/null
  "${bah[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash "$ctr"
  "${bah[@]}" commit -q "$ctr" "$base" >/dev/null
  "${bah[@]}" rm "$ctr" >/dev/null
  rm -rf "$work/rootfs"
fi

echo "image-offline: building $tag"
start=$(date +%s)
revision="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
"${bah[@]}" bud --isolation chroot --pull=false --build-arg BASE_IMAGE="$base" \
  --build-arg VERSION="$version" --build-arg REVISION="$revision" \
  --build-arg NCCL_WHEEL="$nccl_wheel" -t "$tag" "$src"
echo "image-offline: built $tag in $(( $(date +%s) - start )) s"

# Smoke test in the runtime image, on fixture roots copied in: check, the module's libraries, one
# agent cycle, the workload view.
ctr="$("${bah[@]}" from --pull=false "$tag")"
trap '"${bah[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
"${bah[@]}" copy "$ctr" "$src/tests/fixtures/port-down" /tmp/port-down >/dev/null
"${bah[@]}" copy "$ctr" "$src/tests/fixtures/gpu-pods" /tmp/gpu-pods >/dev/null
run() { "${bah[@]}" run --isolation chroot "$ctr" -- "$@"; }
expect_exit() {  # code, command...
  local want="$1" rc=0; shift
  run "$@" >/dev/null || rc=$?
  [ "$rc" -eq "$want" ] || { echo "image-offline: '$*' exited $rc, want $want"; exit 1; }
}
run nccl-triage --version
expect_exit 1 nccl-triage check --root /tmp/port-down
expect_exit 0 nccl-triage-server coordinator --help
# One agent cycle (the server: HTTP server, metrics) and the workload view on three pods.
expect_exit 0 nccl-triage-server agent --standalone --once --root /tmp/gpu-pods --listen 127.0.0.1:0
expect_exit 1 nccl-triage check --root /tmp/gpu-pods --workloads
# The probes' library check (`probe --child --check`): with NCCL in the image it loads and gives
# its version (no driver here: the check then stops at libcuda, probe.no_cuda); without, no_nccl.
check="$(run nccl-triage probe --child --mode socket --rank 0 --nranks 1 --check || true)"
if [ -n "$nccl_wheel" ]; then
  want="${nccl_wheel##*==}"
  printf '%s\n' "$check" | grep -q "\"nccl_version\":\"${want%%.post*}\"" \
    || { echo "image-offline: the image's NCCL did not load as $want: $check"; exit 1; }
  echo "image-offline: NCCL $want loads from /opt/nccl-triage/nccl"
else
  printf '%s\n' "$check" | grep -q '"unavailable_cause":"probe.no_nccl"' \
    || { echo "image-offline: the library check did not say no_nccl: $check"; exit 1; }
fi
run sh -c '! command -v g++ && ! command -v cmake' >/dev/null \
  || { echo "image-offline: the runtime image has a compiler"; exit 1; }
run sh -c '! command -v nccl-triage-demo && ! command -v fixture-gen' >/dev/null \
  || { echo "image-offline: the runtime image has test code"; exit 1; }
# The size the README quotes: the runtime image as stored (uncompressed layers).
"${bah[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -F "${tag%%:*}" || true
"${bah[@]}" inspect --type image --format '{{range $k, $v := .OCIv1.Config.Labels}}{{$k}}={{$v}}{{"\n"}}{{end}}' "$tag" \
  | grep '^org.opencontainers.image.' || { echo "image-offline: no OCI labels on $tag"; exit 1; }
echo "image-offline: $tag runs check, the agent and the workload view on fixture roots"

if [ -n "$save" ]; then
  "${bah[@]}" push "$tag" "docker-archive:$save:$tag"
  echo "image-offline: wrote $save"
fi
