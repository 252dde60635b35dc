#!/usr/bin/env bash
# Assembles the images of the one-node cluster's tests from this machine's files (seconds, nothing
# pulled) and writes them as OCI archives for `node.sh import`:
#   OUT/agent.tar   docker.io/library/nccl-triage:test  nccl-triage-server and nccl-triage of the
#                   build, their shared libraries, the ibverbs providers, the classifier's rules
#   OUT/shell.tar   docker.io/library/kt-shell:test     sh, cp, ls, sleep, cat (a job's stand-in)
#   OUT/training.tar docker.io/library/kt-training:test the shell image plus NCCL_LIBRARY as
#                   /usr/lib/<multiarch>/libnccl.so.2, where a training image keeps its NCCL
#                   (for probe.nccl.fromImage; only when NCCL_LIBRARY is given)
# Usage: node_images.sh SOURCE_DIR SERVER_BINARY CLI_BINARY OUT [NCCL_LIBRARY]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$1"; server="$2"; cli="$3"; out="$4"; nccl="${5:-}"
mkdir -p "$out"
extra=()
multiarch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"
for d in "/usr/lib/$multiarch/libibverbs" /etc/libibverbs.d; do
  [ -d "$d" ] && extra+=("$d")
done
rules="$src/agent/classify/rules.yaml"
# The runtime stage's environment, read from the Dockerfile so the two cannot drift: the chart
# mounts the NCCL of probe.nccl.fromImage where this LD_LIBRARY_PATH points.
ld_path="$(sed -n 's/^ENV LD_LIBRARY_PATH=//p' "$src/Dockerfile")"
[ -n "$ld_path" ] || { echo "node_images.sh: no ENV LD_LIBRARY_PATH in $src/Dockerfile" >&2; exit 1; }
python3 "$here/oci_image.py" "$out/agent.tar" docker.io/library/nccl-triage:test \
  --env "LD_LIBRARY_PATH=$ld_path" --entrypoint /usr/bin/nccl-triage \
  "$server:/usr/bin/nccl-triage-server" "$cli:/usr/bin/nccl-triage" \
  "$rules:/usr/share/nccl-triage/classify-rules.yaml" \
  "$rules:/usr/local/share/nccl-triage/classify-rules.yaml" "${extra[@]}" >/dev/null
python3 "$here/oci_image.py" "$out/shell.tar" docker.io/library/kt-shell:test \
  /bin/dash:/bin/sh /bin/cp /bin/ls /bin/sleep /bin/cat >/dev/null
if [ -n "$nccl" ]; then
  python3 "$here/oci_image.py" "$out/training.tar" docker.io/library/kt-training:test \
    /bin/dash:/bin/sh /bin/cp /bin/ls /bin/sleep /bin/cat \
    "$nccl:/usr/lib/$multiarch/libnccl.so.2" >/dev/null
fi
ls "$out"/agent.tar "$out"/shell.tar >/dev/null
