# The two commands of the README:
#   make demo   install what is missing, build, run the embedded demo
#   make test   install what is missing, build, run every test
# The build is RelWithDebInfo with g++, warnings as errors; `make test` also compiles the
# executables (and the fake NCCL/CUDA) as a Release build (-O3) and with clang-14, so that neither
# the optimiser nor the other compiler breaks a packager.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_OPTIONS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCCL_TRIAGE_WERROR=ON

.PHONY: all deps build test demo bench fuzz variants clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD_DIR)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_OPTIONS)

build: deps $(BUILD_DIR)/CMakeCache.txt
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build variants
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Release (-O3) with g++, and clang-14 without optimisation or debug information (it checks the
# other compiler's diagnostics, not its code; -O0 keeps the extra build short). Both build the
# shipped targets and the fakes, not the tests.
variants: deps
	cmake --preset release >/dev/null && cmake --build --preset release -j $(JOBS)
	cmake --preset clang >/dev/null && cmake --build --preset clang -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD_DIR)

bench: build
	@scripts/bench.sh $(BUILD_DIR)

# Builds the libFuzzer targets (clang-14, ASan) and runs each for FUZZ_SECONDS, one at a time.
FUZZ_SECONDS ?= 60
fuzz: deps
	cmake --preset fuzz && cmake --build build-fuzz -j $(JOBS)
	fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR) build-fuzz build-asan build-release build-clang
