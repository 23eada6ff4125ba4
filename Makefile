# loadstate — build, test, demo, dist, bench.
SHELL := /bin/bash
# `make demo` and `make test` install what they need on a fresh Debian machine.
#
# Each area keeps its rules in mk/<area>.mk; this file holds the shared
# variables and the top-level targets.

SWIFT      ?= swift
CC         ?= cc
BUILD      := .build/debug
LIB        := $(BUILD)/libloadstate.so
OUT        := build
# Every debug build of .build (the library, the tests, the examples, the
# API listing) passes the same flags, so that none of them recompiles the
# modules another built with other flags. A warning is an error.
SWIFT_DEBUG_FLAGS := -Xswiftc -warnings-as-errors
CFLAGS     += -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude -D_GNU_SOURCE -pthread
LDLIBS_C   := -L$(BUILD) -lloadstate -Wl,-rpath,$(abspath $(BUILD)) -lpthread

# The version has one source: the LDS_VERSION_* macros of include/loadstate.h,
# which the library itself is compiled from (lds_version). The SONAME, the
# pkg-config file and the Debian packages take it from here; `make
# version-check` compares the bindings' own copies with it.
VERSION_MAJOR := $(shell awk '/^.define LDS_VERSION_MAJOR / { print $$3 }' include/loadstate.h)
VERSION_MINOR := $(shell awk '/^.define LDS_VERSION_MINOR / { print $$3 }' include/loadstate.h)
VERSION_PATCH := $(shell awk '/^.define LDS_VERSION_PATCH / { print $$3 }' include/loadstate.h)
VERSION    := $(VERSION_MAJOR).$(VERSION_MINOR).$(VERSION_PATCH)
# The SONAME changes only with the ABI: with the major version. 0.x minor
# releases only add to the ABI, so every 0.x library is libloadstate.so.0.
SONAME     := libloadstate.so.$(VERSION_MAJOR)

.PHONY: all deps build-deps lib test test-swift readme-check readme-swift-check demo dist bench clean

all: lib

# Debian packages, installed only when missing. BUILD_DEB_PACKAGES are what
# building the libraries needs (make lib, make dist, make python-wheel);
# DEB_PACKAGES are what the tests and tools add (servers, valgrind, ...).
# `make build-deps` installs the first, `make deps` both.
BUILD_DEB_PACKAGES := libuv1-dev libcurl4-openssl-dev libsqlite3-dev libhiredis-dev python3
DEB_PACKAGES := valgrind prometheus
define deb_install
	@missing=""; for p in $(1); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef
build-deps:
	$(call deb_install,$(BUILD_DEB_PACKAGES))
deps: build-deps
	$(call deb_install,$(DEB_PACKAGES))

# The debug libloadstate.so used by the tests. A warning in Sources/ is an
# error here, so that the package builds without one as a dependency.
lib: deps $(OUT)/.header-stamp
	$(SWIFT) build --product loadstate $(SWIFT_DEBUG_FLAGS)

# SwiftPM does not see a change of include/loadstate.h alone (the C ABI
# module's map points outside the package's targets), so the export module
# kept what it had compiled from the old header (lds_version's numbers,
# struct layouts) until its sources changed. Touching them after every
# change of the header makes every build (debug, dist, sanitizers) compile
# the module against the new one.
$(OUT)/.header-stamp: include/loadstate.h
	@mkdir -p $(OUT)
	touch Sources/LoadstateC/*.swift
	@touch $@

# lib first: some Swift tests compile C clients against the built library.
test-swift: lib readme-check readme-swift-check
	@mkdir -p $(OUT)
	$(SWIFT) test --disable-xctest $(SWIFT_DEBUG_FLAGS) > $(OUT)/swift-test.log 2>&1; rc=$$?; \
	  grep -vE '^(✔|◇) Test [^ ]+\(\)' $(OUT)/swift-test.log | tail -n 30; \
	  if [ $$rc -ne 0 ]; then echo "test-swift: failed ($$rc); the failures, from $(OUT)/swift-test.log:"; \
	    grep -E '✘|Fatal error|fatal error|error:|Crash|signal' $(OUT)/swift-test.log | head -n 60; fi; exit $$rc
	$(SWIFT) run $(SWIFT_DEBUG_FLAGS) LoadstateExample

# readme_block LANGUAGE FILE: the README's first ```LANGUAGE block must be
# FILE, word for word.
define readme_block
	@awk '/^```$(1)$$/{on=1;next} /^```$$/{if(on){exit}} on' README.md | diff -u $(2) - \
	  && echo "README $(1) example matches $(2)"
endef

# The README's C example is examples/hello.c, word for word; its Python and
# Rust examples are docs/examples/hello.py and hello.rs, which make test-docs
# runs (Tests/docs/run_examples.py).
readme-check:
	$(call readme_block,c,examples/hello.c)
	$(call readme_block,python,docs/examples/hello.py)
	$(call readme_block,rust,docs/examples/hello.rs)

# The README's Swift example is examples/swift/Example.swift, word for word,
# and runs; the tour of the Swift page (docs/languages/swift.md),
# examples/swift-tour/Tour.swift, runs against the local test server with
# the output it shows (examples/swift-tour/expected.txt).
readme-swift-check:
	$(call readme_block,swift,examples/swift/Example.swift)
	$(SWIFT) run $(SWIFT_DEBUG_FLAGS) LoadstateExample
	SWIFT="$(SWIFT)" SWIFT_BUILD_FLAGS="$(SWIFT_DEBUG_FLAGS)" examples/swift-tour/run.sh

# Every test suite; each area's rules add themselves to TEST_TARGETS.
TEST_TARGETS := test-swift
include $(wildcard mk/*.mk)

# Each suite in turn, in the order above, with the time it took; the first
# failure stops the run.
test:
	@start=$$(date +%s); times=""; \
	for target in $(TEST_TARGETS); do \
	  t0=$$(date +%s); \
	  $(MAKE) --no-print-directory $$target || { echo "make test: $$target failed"; exit 1; }; \
	  times="$$times $$target:$$(( $$(date +%s) - t0 ))"; \
	done; \
	echo "make test: seconds per suite:$$times"; \
	echo "make test: all suites passed in $$(( $$(date +%s) - start )) s"

clean:
	rm -rf .build .build-* $(OUT) dist
