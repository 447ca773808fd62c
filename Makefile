# The README's two commands:
#   make run    installs missing Debian packages, builds, deduplicates the sample corpus
#   make test   installs missing Debian packages, builds, runs the whole test suite, then
#               builds again with clang, AddressSanitizer and UBSan (build-san/) and runs the
#               suite there too, with a short run of every libFuzzer target, and last, side by
#               side, builds the library with ThreadSanitizer (build-tsan/) and runs the
#               concurrency tests, and the CLI for aarch64 (build-aarch64/), checked under
#               qemu-user against x86-64
BUILD ?= build
JOBS  ?= $(shell nproc)
# Tests at twice the cores: a quarter of the suite's time is spent waiting on processes, sockets
# and the disk (mpirun, the service, strace), which the next test's work fills (ctest on 2 cores:
# 117 s at -j4 against 148 s at -j2; with the sanitizers 154 s against 181 s).
TEST_JOBS ?= $(shell echo $$(( 2 * $(JOBS) )))
SAMPLE := data/sample/mmds-articles-2500.jsonl.zst

FUZZ_SECONDS ?= 10

# `make` alone builds everything (the CLI, the tests, the Python package in build/python).
.DEFAULT_GOAL := build

.PHONY: deps run-deps configure run-configure build cli run test sanitize tsan portable clean

deps:
	./scripts/install-deps.sh test

run-deps:
	./scripts/install-deps.sh run

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DNEARDUP_BUILD_TESTS=ON -DNEARDUP_BUILD_BENCH=ON -DNEARDUP_BUILD_PYTHON=ON

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# Only the command-line tool (and the library): the tests and benchmarks are for `make test`.
# Without the tests and benchmarks, whose packages `make run` does not install.
run-configure: run-deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DNEARDUP_BUILD_TESTS=OFF -DNEARDUP_BUILD_BENCH=OFF -DNEARDUP_BUILD_PYTHON=OFF

cli: run-configure
	cmake --build $(BUILD) -j $(JOBS) --target neardup_cli

run: cli
	$(BUILD)/neardup dedup $(SAMPLE) -o $(BUILD)/sample.dedup.jsonl \
	    --removed $(BUILD)/sample.removed.tsv --clusters $(BUILD)/sample.clusters.tsv
	@echo "kept records:    $(BUILD)/sample.dedup.jsonl"
	@echo "removed records: $(BUILD)/sample.removed.tsv"
	@head -5 $(BUILD)/sample.removed.tsv

# The ThreadSanitizer and aarch64 steps run side by side: the aarch64 checks run one program at a
# time under qemu, on one core; each step's output is shown whole once it is done.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS)
	$(MAKE) sanitize
	$(MAKE) -j 2 --output-sync=target tsan portable

sanitize: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD)-san -DCMAKE_BUILD_TYPE=Release \
	    -DNEARDUP_SANITIZE=ON -DNEARDUP_BUILD_FUZZ=ON -DNEARDUP_BUILD_BENCH=OFF -DNEARDUP_FUZZ_SECONDS=$(FUZZ_SECONDS)
	cmake --build $(BUILD)-san -j $(JOBS)
	cd $(BUILD)-san && ctest --output-on-failure -j $(TEST_JOBS)

# ThreadSanitizer: the library and the tests that run threads (build-tsan/).
tsan: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=Release -DNEARDUP_TSAN=ON \
	    -DNEARDUP_BUILD_CLI=OFF -DNEARDUP_BUILD_BENCH=OFF
	cmake --build $(BUILD)-tsan -j $(JOBS) --target neardup_concurrency_tests
	cd $(BUILD)-tsan && ctest --output-on-failure -j $(TEST_JOBS)

# The library and the CLI for aarch64 with Debian's cross compiler (build-aarch64/, scalar
# kernels), run under qemu-user: every method's outputs byte-identical to the x86-64 build's;
# and the Python module compiled for aarch64 (not run: Debian's arm64 interpreter would have to
# replace the host's).
portable: deps
	cmake -S . -B $(BUILD)-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
	    -DNEARDUP_BUILD_TESTS=OFF -DNEARDUP_BUILD_BENCH=OFF -DNEARDUP_BUILD_PYTHON=OFF -DNEARDUP_BUILD_MPI=OFF -DNEARDUP_BUILD_SERVE=OFF
	cmake --build $(BUILD)-aarch64 -j $(JOBS) --target neardup_cli
	tests/portable/run.sh $(BUILD)/neardup $(BUILD)-aarch64/neardup
	@# The Python module compiles for aarch64 too (its x86 kernels are left out there).
	aarch64-linux-gnu-g++ -std=c++20 -fsyntax-only -Wall -Wextra -Wno-unused-parameter -Wno-psabi -Werror -Iinclude -Isrc \
	    -I/usr/include/python3.11 -I/usr/include/aarch64-linux-gnu/python3.11 python/src/*.cpp
	@echo "portable: the Python module compiles for aarch64"

clean:
	rm -rf $(BUILD) $(BUILD)-san $(BUILD)-tsan $(BUILD)-aarch64
