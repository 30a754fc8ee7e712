# Convenience targets; everything goes through CMake and ctest.
BUILD ?= build
WERROR ?= OFF
JOBS ?= $(shell nproc)

.PHONY: deps deps-build configure build test check-style check-format check-layers check-tidy \
  check-deps fuzz-short demo bench clean test-sanitize

# The Debian packages of .ci/packages.txt: `deps-build` what building (and so `make demo`) needs,
# `deps` all of them, for the tests and style checks.
deps-build:
	@bash .ci/install-deps.sh build

deps: deps-build
	@bash .ci/install-deps.sh test

configure: deps-build
	@cmake -S . -B $(BUILD) -G Ninja -DARBITER_WERROR=$(WERROR) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The style checks (CONTRIBUTING.md): clang-format over every tracked C++ file, the include
# layering and the package sets (seconds, no build needed, so `make test` fails fast on them),
# then clang-tidy with .clang-tidy over arbiter's own
# sources (a few minutes; it needs the build's compile_commands.json and generated headers).
check-style: check-format check-layers check-deps check-tidy

check-format: deps
	@bash tests/style/check-format.sh

# Every include points down: core's models never include core/api/ or each other, edge/ and
# clients/ never include server/ (tests/style/check-layers.sh).
check-layers:
	@bash tests/style/check-layers.sh

# `make demo` installs only the build set of .ci/packages.txt, and each of its packages is needed
# (tests/style/check-deps.sh).
check-deps:
	@bash tests/style/check-deps.sh

check-tidy: deps build
	@bash tests/style/check-tidy.sh $(BUILD)

# Every test, after the style checks: the Go modules (vet, go test -race, the cross-language
# end-to-end test against the server just built, and arbiter-k8s, arbiter-extender and arbiter-kueue against a real Kubernetes
# control plane and Kueue's controller manager that tests/k8s/control-plane/build.sh and
# tests/k8s/kueue/build.sh build from the module proxy into a cache), the Python package (mypy --strict, pytest against the server just built and
# against a real Slurm cluster on loopback for arbiter-slurm), the differential test against KAI's and Kueue's own code
# (docs/conformance.md), then every C++ test through ctest (the golden corpus among them).
test: deps check-style
	ARBITER_REQUIRE_K8S=1 bash clients/go/hack/test.sh $(BUILD)/bin/arbiter-server
	ARBITER_SERVER_BIN=$(BUILD)/bin/arbiter-server bash tests/k8s/local-cluster.sh \
	  --dir $(BUILD)/local-cluster --check examples/k8s/two-teams.yaml
	ARBITER_REQUIRE_SLURM=1 bash clients/python/hack/test.sh $(BUILD)/bin/arbiter-server
	bash tests/differential/run.sh $(BUILD)/bin/arbiter 300
	ctest --test-dir $(BUILD) --no-tests=error --output-on-failure -j $(JOBS) --timeout 600
	@$(MAKE) --no-print-directory fuzz-short

# A short bounded libFuzzer run (clang, ASan + UBSan) of bytes -> request -> decision, from the
# seed corpus in tests/fuzz/corpus/; `tests/fuzz/run.sh SECONDS` runs it for longer.
FUZZ_BUILD ?= build-fuzz
ARBITER_FUZZ_SECONDS ?= 30
fuzz-short: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DARBITER_WERROR=$(WERROR) \
	  -DARBITER_BENCHMARKS=OFF -DARBITER_FUZZ=ON -DARBITER_FUZZ_SECONDS=$(ARBITER_FUZZ_SECONDS) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target request_fuzzer
	ctest --test-dir $(FUZZ_BUILD) --no-tests=error --output-on-failure -L '^fuzz$$'

demo: build
	@bash examples/demo.sh $(BUILD)/bin

# Google Benchmark harnesses in a Release build (figures go to docs/benchmarks.md).
RELEASE_BUILD ?= build-release
bench: deps
	cmake -S . -B $(RELEASE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null
	cmake --build $(RELEASE_BUILD) -j $(JOBS) --target fair_share_bench schedule_bench kueue_bench simulate_bench
	$(RELEASE_BUILD)/bin/fair_share_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	$(RELEASE_BUILD)/bin/schedule_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	$(RELEASE_BUILD)/bin/kueue_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	$(RELEASE_BUILD)/bin/simulate_bench

clean:
	rm -rf $(BUILD)

# Sanitizer runs, each in its own build without benchmarks (the fuzz run is in `make test`):
# - ASan + UBSan over the unit and integration tests;
# - ThreadSanitizer over the concurrent-calls integration test.
# Debian's gRPC, Abseil and protobuf are not instrumented: tests/sanitizers/ holds the
# suppressions limited to their frames.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
SANITIZER_DIR := $(CURDIR)/tests/sanitizers
# Protobuf's and Abseil's headers change class layouts when they see __SANITIZE_THREAD__ (e.g.
# protobuf's MapFieldBase grows two counters), which no longer matches Debian's libraries built
# without it. Compile arbiter against the headers as the libraries saw them; the instrumentation
# comes from -fsanitize=thread alone.
TSAN_ABI_FLAGS := -U__SANITIZE_THREAD__
# Sanitizer builds at -O1 with line tables only: quicker to build, still fast enough to run, and
# reports keep file and line.
SANITIZE_OPT := -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"

test-sanitize: export ASAN_OPTIONS = detect_leaks=1:strict_init_order=1
test-sanitize: export LSAN_OPTIONS = suppressions=$(SANITIZER_DIR)/lsan.supp:print_suppressions=0
test-sanitize: export UBSAN_OPTIONS = print_stacktrace=1:halt_on_error=1:suppressions=$(SANITIZER_DIR)/ubsan.supp
test-sanitize: export TSAN_OPTIONS = suppressions=$(SANITIZER_DIR)/tsan.supp:ignore_noninstrumented_modules=1:halt_on_error=1:second_deadlock_stack=1:print_suppressions=0
test-sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DARBITER_WERROR=$(WERROR) -DARBITER_BENCHMARKS=OFF \
	  -DARBITER_SANITIZE=address,undefined $(SANITIZE_OPT) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --no-tests=error --output-on-failure -j $(JOBS) --timeout 900 -L 'unit|integration'
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DARBITER_WERROR=$(WERROR) -DARBITER_BENCHMARKS=OFF \
	  -DARBITER_SANITIZE=thread -DCMAKE_CXX_FLAGS=$(TSAN_ABI_FLAGS) $(SANITIZE_OPT) >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target concurrent_calls_test
	$(TSAN_BUILD)/bin/concurrent_calls_test
