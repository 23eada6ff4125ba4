# The C demo, the distribution build and the benchmark.
#
#   make demo        build the library and run examples/demo.c (live view on a terminal);
#                    make demo INSPECT=1 also starts the web inspector and prints its URL
#   make demo-check  the same demo without a terminal (and once with the inspector); part of `make test`
#   make dist        self-contained release libloadstate.so (static Swift stdlib, SONAME
#                    libloadstate.so.MAJOR, with that name as a link beside it) in dist/
#   make test-dist   the C tests against dist/libloadstate.so; part of `make test`
#   make bench       bench/loads.c against the dist library; BENCH_ARGS="loads cells rounds"

DIST         := dist
DIST_BUILD   := .build-dist
DIST_LIB     := $(DIST)/libloadstate.so
# -static-stdlib links the Swift runtime into the library. The core exports
# its byte-string specializations and needs no dynamic exclusivity checks
# on its hot state, so a plain release build (what a package depending on
# loadstate gets, see bench/swiftpm.sh) runs the same specialized code;
# what is left to the options below is measured with callgrind
# (bench/load_instructions.sh), in instructions a load on both threads
# (library built with all of them: 8,315).
# Cross-module optimization inlines the small calls between the C layer
# and the core: without it 8,669 (+4 %). -enforce-exclusivity=unchecked no
# longer changes a load's count (8,333 without it), but the caches' state
# still has dynamic checks: without it bench/cache.c's memory cache hits
# drop to about half (3.6-4.4 M against 6.0-8.8 M hits/s, 3 interleaved
# rounds of `cache 10000 100 1000000 1`).
DIST_SWIFTFLAGS := -Xswiftc -static-stdlib -Xswiftc -cross-module-optimization -Xswiftc -enforce-exclusivity=unchecked
# The SONAME: programs linked against the release library (make install, the
# Debian packages) record libloadstate.so.MAJOR, not the file's own name.
DIST_SWIFTFLAGS += -Xlinker -soname=$(SONAME)
# The classic lowering of value operations instead of the type-layout one:
# with it, copies and destroys of the cells' generic state structs (specs,
# states, events, job operations) call the generic value witnesses through
# runtime metadata; without it they are plain retains and releases.
# Without this option 10,246 (+23 %), the largest gap between dist and a
# plain release build (10,939). A hidden compiler option: used only when
# this compiler lists it.
DIST_NO_TYPE_LAYOUT := $(shell $(SWIFT)c -frontend -help-hidden 2>/dev/null | grep -q -- '-disable-type-layout' && echo yes)
ifeq ($(DIST_NO_TYPE_LAYOUT),yes)
DIST_SWIFTFLAGS += -Xswiftc -Xfrontend -Xswiftc -disable-type-layout
endif
# Export lds_* and nothing else. Given here, not in Package.swift: SwiftPM
# refuses unsafe flags in a package used as a dependency, so a plain
# SwiftPM build of the product exports the Swift symbols too.
DIST_SWIFTFLAGS += -Xlinker --version-script=$(abspath Sources/LoadstateC/exports.map)
BENCH_ARGS   ?=
BENCH_CFLAGS := -std=c11 -Wall -Wextra -Werror -O2 -g -Iinclude -D_GNU_SOURCE -pthread

.PHONY: demo demo-check dist bench test-dist

$(OUT)/demo: examples/demo.c include/loadstate.h | lib
	@mkdir -p $(OUT)
	$(CC) $(CFLAGS) examples/demo.c -o $@ $(LDLIBS_C)

INSPECT ?=
demo: $(OUT)/demo
	$(OUT)/demo $(if $(INSPECT),--inspect)

demo-check: $(OUT)/demo
	$(OUT)/demo --plain
	$(OUT)/demo --plain --inspect 2>&1 | grep -E '^(inspector: http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}|demo: every expected state reached)' | wc -l | grep -qx 2

TEST_TARGETS += demo-check

# The C tests once more, against the distribution library: the release
# build, with compiler options the other suites' debug library does not use.
test-dist: dist $(C_TEST_BIN)
	@LD_LIBRARY_PATH=$(abspath $(DIST)) ldd $(C_TEST_BIN) | grep -q '$(abspath $(DIST_LIB))' || \
	  { echo "test-dist: the tests do not load $(DIST_LIB)"; exit 1; }
	LD_LIBRARY_PATH=$(abspath $(DIST)) $(C_TEST_BIN) $(C_TEST_ARGS)

TEST_TARGETS += test-dist

# The release library with the Swift standard library linked in, stripped.
# Checks that it needs no Swift runtime, exports exactly the functions
# declared in include/loadstate.h, and prints its size.
# DIST_DEPS: what dist installs first; make python-wheel sets it to
# build-deps, so that building the wheel installs no test server.
DIST_DEPS ?= deps
dist: $(DIST_DEPS) $(OUT)/.header-stamp
	$(SWIFT) build -c release --product loadstate $(DIST_SWIFTFLAGS) --scratch-path $(DIST_BUILD)
	@mkdir -p $(DIST)
	# A new file renamed into place: a process that has the old one mapped keeps it.
	cp $(DIST_BUILD)/release/libloadstate.so $(DIST_LIB).new
	strip --strip-unneeded $(DIST_LIB).new
	mv -f $(DIST_LIB).new $(DIST_LIB)
	ln -sfn libloadstate.so $(DIST)/$(SONAME)
	cp include/loadstate.h $(DIST)/loadstate.h
	@set -eo pipefail; fail=0; \
	echo "dist: ldd $(DIST_LIB)"; ldd $(DIST_LIB) | sed 's/^/  /'; \
	if ldd $(DIST_LIB) | grep -Eq 'libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime'; then \
	  echo "dist: FAIL: a Swift runtime library is still needed"; fail=1; \
	else echo "dist: ok: no Swift runtime library needed"; fi; \
	if ldd $(DIST_LIB) | grep -q 'not found'; then echo "dist: FAIL: a dependency is missing"; fail=1; fi; \
	soname=$$(readelf -d $(DIST_LIB) | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'); \
	if [ "$$soname" = "$(SONAME)" ]; then echo "dist: ok: SONAME $$soname"; \
	else echo "dist: FAIL: SONAME '$$soname', expected $(SONAME)"; fail=1; fi; \
	readelf --dyn-syms -W $(DIST_LIB) | awk '$$7 != "UND" && ($$5 == "GLOBAL" || $$5 == "WEAK" || $$5 == "UNIQUE") \
	  { sub(/@.*/, "", $$8); print $$8 }' | sort > $(DIST)/.exported; \
	grep -oE '^[A-Za-z_][A-Za-z0-9_ ]*[ *]lds_[a-z0-9_]+\(' include/loadstate.h | grep -oE 'lds_[a-z0-9_]+' \
	  | sort -u > $(DIST)/.declared; \
	if diff $(DIST)/.declared $(DIST)/.exported > $(DIST)/.symdiff; then \
	  echo "dist: ok: exports exactly the $$(wc -l < $(DIST)/.declared) lds_* functions of loadstate.h"; \
	else \
	  echo "dist: FAIL: exported symbols differ from loadstate.h (< declared only, > exported only):"; \
	  sed 's/^/  /' $(DIST)/.symdiff; fail=1; \
	fi; \
	rm -f $(DIST)/.exported $(DIST)/.declared $(DIST)/.symdiff; \
	undefined=$$(ldd -r $(DIST_LIB) 2>&1 | grep -c 'undefined symbol' || true); \
	if [ "$$undefined" = 0 ]; then echo "dist: ok: every symbol it uses resolves (ldd -r)"; \
	else echo "dist: FAIL: $$undefined undefined symbols:"; ldd -r $(DIST_LIB) 2>&1 | grep 'undefined symbol' | head -5; fail=1; fi; \
	size=$$(stat -c %s $(DIST_LIB)); \
	echo "dist: $(DIST_LIB) $$size bytes ($$(awk -v s=$$size 'BEGIN { printf "%.1f", s / 1048576 }') MiB, stripped)"; \
	exit $$fail

$(OUT)/loads: bench/loads.c include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) $(BENCH_CFLAGS) bench/loads.c -o $@ -L$(DIST) -lloadstate -Wl,-rpath,$(abspath $(DIST)) -luv -lpthread

# Not part of `make test`: timing claims live here only.
bench: $(OUT)/loads
	$(OUT)/loads $(BENCH_ARGS)

# How long lds_runtime_free takes while host threads keep calling in (not
# part of `make test`): POLL with 4 producers and 3 dispatchers, LOOP with 12.
$(OUT)/runtime-free: bench/runtime_free.c include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -D_GNU_SOURCE -pthread bench/runtime_free.c -o $@ \
	  -Ldist -lloadstate -Wl,-rpath,$(abspath dist)

.PHONY: bench-free
bench-free: $(OUT)/runtime-free
	@for round in 1 2 3; do \
	  $(OUT)/runtime-free POLL 4 3 keep fast; $(OUT)/runtime-free POLL 4 3 keep slow; \
	  $(OUT)/runtime-free POLL 4 3 free fast; $(OUT)/runtime-free LOOP 12 0 keep fast; done
