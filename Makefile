# The two commands of the README:
#   make demo   install what is missing, build, run the embedded demo
#   make test   install what is missing, build, run every test
# The build is Release (-O3, as the image ships it) with g++, warnings as errors, the tests' own
# code at -O0 -g1 (tests/CMakeLists.txt); `make test` also compiles the executables (and the fake
# NCCL/CUDA) with clang-14, so that the other compiler's diagnostics do not break a packager.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_OPTIONS ?= -DCMAKE_BUILD_TYPE=Release -DNCCL_TRIAGE_WERROR=ON

.PHONY: all deps build test test-node demo bench fuzz variants k8s-tools kubelet-tools generate \
	clean release

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_OPTIONS)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build variants k8s-tools
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The tests on a one-node cluster with a real kubelet and containerd (root; not part of `make
# test`: the cold build of their tools takes ~45 min on 2 loaded cores). docs/development.md.
test-node: build k8s-tools kubelet-tools
	cmake -S . -B $(BUILD_DIR) -DNCCL_TRIAGE_NODE_TESTS=ON >/dev/null
	cd $(BUILD_DIR) && ctest --output-on-failure -R '^node\.' --timeout 600

# clang-14 without optimisation or debug information (it checks the other compiler's
# diagnostics, not its code; -O0 keeps the extra build short): the shipped targets and the fakes,
# not the tests. The Release build with g++ is the main build itself.
variants: deps
	cmake --preset clang >/dev/null && cmake --build --preset clang -j $(JOBS)

# helm, kube-apiserver, kubectl, etcd and kwok at the pins of tools/k8s/go.mod, built once with
# Go >= 1.25 and cached outside the clone (~/.cache/nccl-triage/k8s-tools).
# Also actionlint at the pin of tools/actionlint/go.mod (~30 s cold, cached the same way), for the
# test release.actionlint.
k8s-tools:
	@scripts/k8s-tools.sh >/dev/null
	@scripts/actionlint.sh >/dev/null

# kubelet, kube-scheduler, kube-controller-manager, crictl, containerd, runc and the CNI plugins
# at the pins of tools/kubelet and tools/containerd (~/.cache/nccl-triage/kubelet-tools).
kubelet-tools:
	@scripts/kubelet-tools.sh >/dev/null

# The generated blocks of docs/ and helm/nccl-triage/ (config keys, metrics, host checks) from
# what the code declares (`nccl-triage-server dump-schema`, tools/gen-docs); the test
# docs.generated fails until they are regenerated and committed.
generate: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS) --target nccl-triage-server
	$(BUILD_DIR)/nccl-triage-server dump-schema > $(BUILD_DIR)/schema.json
	python3 tools/gen-docs/gen_docs.py --schema $(BUILD_DIR)/schema.json --source .

demo: build
	@scripts/demo.sh $(BUILD_DIR)

bench: build
	@scripts/bench.sh $(BUILD_DIR)

# Builds the libFuzzer targets (clang-14, ASan) and runs each for FUZZ_SECONDS, one at a time.
FUZZ_SECONDS ?= 60
fuzz: deps
	cmake --preset fuzz && cmake --build build-fuzz -j $(JOBS)
	fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# What a release publishes, built into dist/ (docs/release.md): the chart for an OCI registry,
# the binaries' tarball with SHA256SUMS, the SBOM, the notes, and the images where a container
# engine answers; nothing is pushed. DRY_RUN=1 checks the inputs and prints the plan. REGISTRY:
# where the image and the chart will be published (image REGISTRY/nccl-triage:VERSION, chart
# oci://REGISTRY/charts). Not part of `make test` (a second, Release build).
REGISTRY ?= ghcr.io/nccl-triage
NCCL_WHEEL ?= nvidia-nccl-cu12==2.28.9
DIST ?= dist
release: deps
	@REGISTRY='$(REGISTRY)' NCCL_WHEEL='$(NCCL_WHEEL)' DIST='$(DIST)' JOBS='$(JOBS)' \
	  scripts/release.sh $(if $(filter 1,$(DRY_RUN)),--dry-run) $(if $(TAG),--tag $(TAG))

clean:
	rm -rf $(BUILD_DIR) build-fuzz build-asan build-release build-clang dist
