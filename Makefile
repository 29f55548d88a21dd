# SPDX-License-Identifier: Apache-2.0
# The two commands a new user types (see README.md):
#   make demo   - install the build dependencies of the binary, build only the binary (in
#                 build-demo, tests off), run stand-in engines and the server, show /metrics
#   make test   - install the whole toolchain, build everything, run every test
BUILD ?= build
DEMO_BUILD ?= build-demo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup setup-runtime build test demo asan tsan fuzz load bench format regen package clean

setup:
	@./tools/setup.sh

# Only what building the vmetrics binary needs (no clang, GoogleTest, Prometheus, Python peers).
setup-runtime:
	@./tools/setup.sh --runtime

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The binary alone, with tests off, in a build directory of its own: a first look should not
# wait for the test suite.
demo: setup-runtime
	cmake -S . -B $(DEMO_BUILD) -DCMAKE_BUILD_TYPE=Release -DVMETRICS_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(DEMO_BUILD) -j $(JOBS) --target vmetrics_cli
	$(DEMO_BUILD)/src/cli/vmetrics demo $(DEMO_ARGS)

# Every test that runs vmetrics code under ASan+UBSan (label `static`, checks of files and
# compile checks, is left out), built at -O1 with line tables only (-g1), as ASan's authors
# advise: reports keep file and line, and the build takes about half the CPU of RelWithDebInfo.
asan: setup
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DVMETRICS_SANITIZE=ON -DVMETRICS_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS) -LE static

# The concurrency tests (tests/CMakeLists.txt: vmetrics_concurrency_tests) under TSan; only their
# binaries are built, at -O1 with line tables only (-g1): TSan's reports keep file and line,
# and the build takes about half the CPU time of RelWithDebInfo.
TSAN_TARGETS = metrics_test server_test transport_test simulate_test accounting_test \
               frontend_test loadgen_test
tsan: setup
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DVMETRICS_TSAN=ON -DVMETRICS_WERROR=ON >/dev/null
	cmake --build build-tsan -j $(JOBS) --target $(TSAN_TARGETS)
	ctest --test-dir build-tsan --output-on-failure -j $(JOBS) -L concurrency --no-tests=error

FUZZ_SECONDS ?= 600
fuzz: setup
	./tools/run_fuzzers.sh $(FUZZ_SECONDS)

# wrk on /metrics (64 connections, LOAD_SECONDS) while 8 simulated engines push at 1 kHz:
# every response 200, totals exact, resident memory flat (tests/load/wrk_load.py).
LOAD_SECONDS ?= 60
load: build
	/usr/bin/python3 tests/load/wrk_load.py $(BUILD)/src/cli/vmetrics --duration $(LOAD_SECONDS)

bench: setup
	./bench/compare

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

regen: setup
	./tools/regen.sh

package: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf build build-demo build-asan build-tsan build-fuzz
