# Convenience targets; everything goes through CMake and ctest.
BUILD ?= build
WERROR ?= OFF
JOBS ?= $(shell nproc)

.PHONY: deps configure build test demo bench clean

deps:
	@bash .ci/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DARBITER_WERROR=$(WERROR) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --timeout 600

demo: build
	@bash examples/demo.sh $(BUILD)/bin

clean:
	rm -rf $(BUILD)
