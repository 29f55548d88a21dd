# The two commands a new user types (see README.md):
#   make demo   - set up, build, run a stand-in engine and the server, show /metrics
#   make test   - set up, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: setup build test demo asan tsan fuzz bench format regen package clean

setup:
	@./tools/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	$(BUILD)/src/cli/vmetrics demo $(DEMO_ARGS)

asan: setup
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVMETRICS_SANITIZE=ON -DVMETRICS_WERROR=ON >/dev/null
	cmake --build build-asan -j $(JOBS)
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)

tsan: setup
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVMETRICS_TSAN=ON -DVMETRICS_WERROR=ON >/dev/null
	cmake --build build-tsan -j $(JOBS)
	ctest --test-dir build-tsan --output-on-failure -j $(JOBS) -L concurrency

fuzz: setup
	./tools/run_fuzzers.sh $(FUZZ_SECONDS)

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
