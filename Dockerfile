# nccl-triage image: `nccl-triage-server` for the agent (DaemonSet) and the coordinator
# (Deployment), and `nccl-triage` (check, classify-log, probe) beside it, which the agent runs as
# its probe child. No test code: the demo and the test harness are built only with the tests.
#
#   docker build -t nccl-triage:0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#
# Two stages. `build` has the compilers and -dev packages; `runtime` carries only the two
# executables, the shared libraries they load and a default configuration. The package lists live in
# scripts/packages-build.txt and scripts/packages-runtime.txt (the same files a developer's
# `make deps` reads) and are installed by scripts/install-deps.sh in both stages.
#
# The image runs as root by default: the agent must (privileged DaemonSet: it opens the uverbs
# devices, registers memory and reads other containers' /proc). The coordinator needs no
# privilege: the user nccl-triage (uid 65532) exists for it, and the helm chart runs the
# coordinator with runAsNonRoot / runAsUser 65532.
#
# CUDA is not in the image: the probe child loads libcuda.so.1 with dlopen from what the NVIDIA
# container runtime mounts. NCCL is not either, unless the image is built with one:
#
#   docker build --build-arg NCCL_WHEEL=nvidia-nccl-cu12==2.28.9 -t nccl-triage:0.1.0-nccl .
#
# installs NVIDIA's NCCL wheel from the Python package index (nvidia-nccl-cu12 for CUDA 12,
# nvidia-nccl-cu13 for CUDA 13; the version must be pinned with ==) and keeps only
# libnccl.so.2 and the wheel's licence, in /opt/nccl-triage/nccl. That directory is on the
# image's LD_LIBRARY_PATH, so the probe child finds it first; the helm chart mounts the NCCL of
# probe.nccl.fromImage or probe.nccl.hostPath over it, and a driver directory (probe.cuda.hostPath)
# at /opt/nccl-triage/cuda. Behind a proxy that inspects TLS, give pip the CA bundle the host
# trusts as the build secret `ca-bundle` (it is not kept in any layer):
#
#   docker build --secret id=ca-bundle,src=/etc/ssl/certs/ca-certificates.crt \
#     --build-arg NCCL_WHEEL=nvidia-nccl-cu12==2.28.9 -t nccl-triage:0.1.0-nccl .

# The base of both stages: debian:12-slim pinned by digest (the multi-arch index), so a rebuild
# gets the same base until someone moves the pin on purpose. To move it:
#   docker buildx imagetools inspect debian:12-slim   (the "Digest:" line)
# scripts/image-offline.sh passes --build-arg BASE_IMAGE=<a debootstrapped Debian 12>.
ARG BASE_IMAGE=debian:12-slim@sha256:60eac759739651111db372c07be67863818726f754804b8707c90979bda511df

# ------------------------------------------------------------------------------------- build
FROM ${BASE_IMAGE} AS build
WORKDIR /src
# Dependencies first, so that source changes do not reinstall them. The test-only tail of the
# build list (Prometheus, Go, clang...) is not needed to build the binary.
COPY scripts/install-deps.sh scripts/packages-build.txt scripts/
RUN sed '/^# test-only/,$d' scripts/packages-build.txt > /tmp/packages-build-only.txt \
    && scripts/install-deps.sh /tmp/packages-build-only.txt \
    && rm -rf /var/lib/apt/lists/*
COPY . .
# The install prefix is /usr: the programs look for their data (the classifier's rules) under
# /usr/share/nccl-triage, where `cmake --install --component data` puts it.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
          -DNCCL_TRIAGE_BUILD_TESTS=OFF -DNCCL_TRIAGE_BUILD_BENCH=OFF -DNCCL_TRIAGE_BUILD_FUZZ=OFF \
    && cmake --build /build --target nccl-triage nccl-triage-server -j"$(nproc)" \
    && DESTDIR=/stage cmake --install /build --component data \
    && strip --strip-debug /build/nccl-triage /build/nccl-triage-server \
    && /build/nccl-triage --version \
    && /build/nccl-triage check --dump-config > /build/config.yaml

# ------------------------------------------------------------------------------------- nccl
# NCCL_WHEEL empty (the default): an empty directory, nothing is downloaded.
FROM ${BASE_IMAGE} AS nccl
ARG NCCL_WHEEL=""
COPY scripts/install-deps.sh scripts/packages-nccl.txt /tmp/deps/
RUN --mount=type=secret,id=ca-bundle set -eu; mkdir -p /out; \
    if [ -z "$NCCL_WHEEL" ]; then exit 0; fi; \
    case "$NCCL_WHEEL" in \
      nvidia-nccl-cu1[23]==[0-9]*) ;; \
      *) echo "NCCL_WHEEL must be nvidia-nccl-cu12==X.Y.Z or nvidia-nccl-cu13==X.Y.Z, not '$NCCL_WHEEL'"; exit 1 ;; \
    esac; \
    /tmp/deps/install-deps.sh /tmp/deps/packages-nccl.txt >/dev/null; \
    if [ -s /run/secrets/ca-bundle ]; then export PIP_CERT=/run/secrets/ca-bundle; fi; \
    python3 -m pip download --quiet --no-deps --only-binary=:all: --dest /tmp/wheel "$NCCL_WHEEL"; \
    unzip -q /tmp/wheel/*.whl -d /tmp/unpacked; \
    cp -L /tmp/unpacked/nvidia/nccl/lib/libnccl.so.2 /out/; \
    for f in /tmp/unpacked/*.dist-info/licenses/* /tmp/unpacked/*.dist-info/License.txt; do \
      if [ -f "$f" ]; then cp "$f" /out/NCCL-LICENSE.txt; fi; \
    done; \
    echo "$NCCL_WHEEL" > /out/NCCL-WHEEL; \
    ls -l /out

# ------------------------------------------------------------------------------------- runtime
FROM ${BASE_IMAGE} AS runtime
# OCI annotations (org.opencontainers.image.*): registries and scanners show them; VERSION and
# REVISION come from the build (docker build --build-arg VERSION=0.1.0 --build-arg REVISION=$(git
# rev-parse HEAD)); .dockerignore keeps .git out of the context, so the image cannot read them.
# SOURCE_URL and DOCS_URL: where you host the repository and its README (the project states no
# public home of its own; empty by default).
ARG BASE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE_URL=""
ARG DOCS_URL=""
LABEL org.opencontainers.image.title="nccl-triage" \
      org.opencontainers.image.description="NCCL failure triage on Kubernetes GPU clusters: InfiniBand resource vs architecture faults (agent, coordinator, check, classify-log, probe)" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.documentation="${DOCS_URL}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
COPY scripts/install-deps.sh scripts/packages-runtime.txt /tmp/deps/
RUN /tmp/deps/install-deps.sh /tmp/deps/packages-runtime.txt \
    && rm -rf /var/lib/apt/lists/* /tmp/deps \
    && groupadd --system --gid 65532 nccl-triage \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
               --shell /usr/sbin/nologin nccl-triage
COPY --from=build /build/nccl-triage /usr/bin/nccl-triage
# The services (gRPC, TLS, HTTP, prometheus-cpp); the chart sets it as the containers' command.
COPY --from=build /build/nccl-triage-server /usr/bin/nccl-triage-server
# NCCL for the probes (empty unless built with NCCL_WHEEL), first on the loader's path; the
# chart's probe.cuda.hostPath mounts the driver's directory at /opt/nccl-triage/cuda.
COPY --from=nccl /out/ /opt/nccl-triage/nccl/
ENV LD_LIBRARY_PATH=/opt/nccl-triage/nccl:/opt/nccl-triage/cuda
# The effective defaults (`check --dump-config`); in Kubernetes the chart's ConfigMap replaces it.
COPY --from=build /build/config.yaml /etc/nccl-triage/config.yaml
# The log classifier's rules, loaded at start-up (users add theirs with classify.rule_files).
COPY --from=build /stage/usr/share/nccl-triage /usr/share/nccl-triage
# Fail the image build, not a node, when a shared library is missing (starting the server loads
# everything it links).
RUN nccl-triage --version && nccl-triage-server coordinator --help > /dev/null
# agent HTTP (metrics, /livez, /readyz, /status); coordinator gRPC; coordinator HTTP.
EXPOSE 9500 9501 9502
ENTRYPOINT ["/usr/bin/nccl-triage"]
CMD ["--help"]
