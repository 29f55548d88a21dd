# The two commands a new user types (see README.md):
#   make demo   - set up, build, run a stand-in engine and the server, show /metrics
#   make test   - set up, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup build test demo asan tsan fuzz load bench format regen package clean

setup:
	@./tools/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/src/cli/vmetrics demo $(DEMO_ARGS)

# Every test under ASan+UBSan, built at -O1 with line tables only (-g1), as ASan's authors
# advise: reports keep file and line, and the build takes about half the CPU of RelWithDebInfo.
asan: setup
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DVMETRICS_SANITIZE=ON -DVMETRICS_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)

# The concurrency tests (tests/CMakeLists.txt: vmetrics_concurrency_tests) under TSan; only their
# binaries are built, at -O1 with line tables only (-g1): TSan's reports keep file and line,
# and the build takes about half the CPU time of RelWithDebInfo.
TSAN_TARGETS = metrics_test server_test transport_test simulate_test accounting_test \
               completions_test
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
	rm -rf build build-asan build-tsan build-fuzz
