# libFuzzer harnesses (Tests/fuzz): C API call sequences and the byte
# formats the library encodes and decodes. See Tests/fuzz/README.md.
#
#   make fuzz        each harness for FUZZ_SECONDS (default 300), starting from
#                    its checked-in corpus; new inputs go to a fresh
#                    build/fuzz/work-<harness>, crashes to build/fuzz/
#   make test-fuzz   each harness over its checked-in corpus, then fuzzing for
#                    FUZZ_TEST_SECONDS (default 10) each; fails on any crash,
#                    leak or broken invariant. Part of `make test`.
#   make fuzz-merge  minimises build/fuzz/work-<harness> into the checked-in
#                    corpus Tests/fuzz/corpus/<harness> (-merge=1)
#
# FUZZ_HARNESSES selects harnesses, e.g. make fuzz FUZZ_HARNESSES=parsers.
#
# The harnesses are built with the Swift toolchain's clang (-fsanitize=
# fuzzer,address; it carries libFuzzer) against a libloadstate.so built
# with AddressSanitizer and sanitizer coverage in its own scratch path:
# the library's Swift code is then both checked (memory errors and leaks
# in the library, not only in the harness) and measured (libFuzzer
# follows the library's branches, not just the harness's). Leaks: the
# runs over a corpus check after each input whose allocations and frees do
# not balance (libFuzzer gives up on that once the Swift runtime's caches
# make it useless); timed runs leave that out (-detect_leaks=0: it costs
# about 15x the executions a second in fuzz_parsers) and LeakSanitizer
# checks the whole process when it exits, with the leaking allocations'
# stacks. The toolchain's lld links the harnesses (the system's gold warns
# about every ASan symbol it cannot export).

# libFuzzer, linked by -fsanitize=fuzzer, is C++: the driver adds -lstdc++.
DEB_PACKAGES += libstdc++-12-dev

FUZZ_SCRATCH      := .build-fuzz
FUZZ_LIB_DIR      := $(FUZZ_SCRATCH)/debug
FUZZ_DIR          := Tests/fuzz
FUZZ_OUT          := $(OUT)/fuzz
FUZZ_HARNESSES    ?= api parsers redis
FUZZ_SECONDS      ?= 300
FUZZ_TEST_SECONDS ?= 10
# The longest input: API call sequences need a few hundred bytes; the
# parser harness also takes whole (small) SQLite files, the Redis harness
# the replies it queues besides its calls.
FUZZ_MAX_LEN      = $$(case $$h in parsers) echo 8192;; redis) echo 2048;; *) echo 512;; esac)
FUZZ_COVERAGE     := edge,inline-8bit-counters,pc-table,trace-cmp
FUZZ_CFLAGS       := -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude -D_GNU_SOURCE -pthread \
                     -fsanitize=fuzzer,address -fuse-ld=lld
FUZZ_LDLIBS       := -L$(FUZZ_LIB_DIR) -lloadstate -Wl,-rpath,$(abspath $(FUZZ_LIB_DIR)) \
                     -Wl,-rpath,$(SWIFT_RUNTIME_DIR) -lpthread
# The Swift runtime's own crash reporter would take over a trap in the
# library (and wait for a symbolicator); libFuzzer reports it instead.
FUZZ_ENV          := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1
# -timeout: an input that runs this long is a hang, reported as a crash.
# Each harness's dictionary, Tests/fuzz/<harness>.dict, is used when present.
FUZZ_FLAGS        = -max_len=$(FUZZ_MAX_LEN) -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
                     -artifact_prefix=$(abspath $(FUZZ_OUT))/
FUZZ_DICT         = $$([ -f $(FUZZ_DIR)/$$h.dict ] && echo -dict=$(FUZZ_DIR)/$$h.dict)
# Timed runs: no leak check after each input (see above).
FUZZ_TIMED        := -detect_leaks=0
# libFuzzer's progress lines, left out of the logs shown.
FUZZ_QUIET        := grep -Ev '^\#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD)|NEW_FUNC'

.PHONY: fuzz fuzz-lib fuzz-bins fuzz-merge test-fuzz

fuzz-lib: deps $(OUT)/.header-stamp
	$(SWIFT) build --sanitize=address --scratch-path $(FUZZ_SCRATCH) --product loadstate \
	  -Xswiftc -sanitize-coverage=$(FUZZ_COVERAGE)

$(FUZZ_OUT)/fuzz_%: $(FUZZ_DIR)/fuzz_%.c $(FUZZ_DIR)/fuzz_input.h include/loadstate.h fuzz-lib
	@mkdir -p $(FUZZ_OUT)
	$(TOOLCHAIN_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LDLIBS)

fuzz-bins: $(foreach h,$(FUZZ_HARNESSES),$(FUZZ_OUT)/fuzz_$(h))

fuzz: fuzz-bins
	@set -e; for h in $(FUZZ_HARNESSES); do \
	  rm -rf $(FUZZ_OUT)/work-$$h && mkdir -p $(FUZZ_OUT)/work-$$h; \
	  echo "fuzz_$$h for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_ENV) $(FUZZ_OUT)/fuzz_$$h $(FUZZ_FLAGS) $(FUZZ_DICT) $(FUZZ_TIMED) -max_total_time=$(FUZZ_SECONDS) \
	    $(FUZZ_OUT)/work-$$h $(FUZZ_DIR)/corpus/$$h 2>&1 | $(FUZZ_QUIET) | tee $(FUZZ_OUT)/fuzz_$$h.log; \
	  test $${PIPESTATUS[0]} -eq 0; \
	done

fuzz-merge: fuzz-bins
	@set -e; for h in $(FUZZ_HARNESSES); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$h; \
	  $(FUZZ_ENV) $(FUZZ_OUT)/fuzz_$$h $(FUZZ_FLAGS) $(FUZZ_DICT) -merge=1 \
	    $(FUZZ_DIR)/corpus/$$h $(FUZZ_OUT)/work-$$h 2>&1 | tail -n 3; \
	done

# One run of a harness for test-fuzz: its log is shown in full (less the
# progress lines) when it fails, its final statistics otherwise.
FUZZ_TEST_RUN = $(FUZZ_ENV) $(FUZZ_OUT)/fuzz_$$h $(FUZZ_FLAGS) $(FUZZ_DICT) $(1) > $(FUZZ_OUT)/test-$$h.log 2>&1 \
	  || { $(FUZZ_QUIET) $(FUZZ_OUT)/test-$$h.log | tail -n 100; \
	       echo "test-fuzz: fuzz_$$h failed; the input is in $(FUZZ_OUT)/ (crash-*, leak-*, timeout-*)"; exit 1; }; \
	  grep -E 'DONE|stat::(number_of_executed_units|average_exec_per_sec)' $(FUZZ_OUT)/test-$$h.log

# -runs=0 runs every input of the corpus once and stops; the short run
# after it writes its new inputs into a scratch directory only.
test-fuzz: fuzz-bins
	@set -e; for h in $(FUZZ_HARNESSES); do \
	  rm -rf $(FUZZ_OUT)/test-$$h && mkdir -p $(FUZZ_OUT)/test-$$h; \
	  echo "fuzz_$$h: the checked-in corpus"; \
	  $(call FUZZ_TEST_RUN,-runs=0 $(FUZZ_DIR)/corpus/$$h); \
	  echo "fuzz_$$h: $(FUZZ_TEST_SECONDS) s of fuzzing"; \
	  $(call FUZZ_TEST_RUN,$(FUZZ_TIMED) -max_total_time=$(FUZZ_TEST_SECONDS) $(FUZZ_OUT)/test-$$h $(FUZZ_DIR)/corpus/$$h); \
	done

TEST_TARGETS += test-fuzz
