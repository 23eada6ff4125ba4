# The C test suite: Tests/c/*.c linked against libloadstate.so, the header
# drift check, and the same tests under valgrind and ThreadSanitizer.
#
#   make test-c           header check, C tests, examples/hello.c (when present)
#   make test-valgrind    C tests under valgrind: no memory error, no definite leak
#                         (VALGRIND_JOBS tests at once: the machine's cores by default)
#   make test-tsan        library and C tests with -fsanitize=thread, then
#                         swift test --sanitize=thread
#   make test-asan        swift test --sanitize=address (LeakSanitizer on)
#
# C_TEST_ARGS selects tests by substring: make test-c C_TEST_ARGS=poll

C_TEST_DIR   := Tests/c
C_TEST_OUT   := $(OUT)/c
C_TEST_SRCS  := $(sort $(wildcard $(C_TEST_DIR)/*.c))
C_TEST_DEPS  := $(C_TEST_SRCS) $(C_TEST_DIR)/harness.h include/loadstate.h
C_TEST_BIN   := $(C_TEST_OUT)/loadstate-tests
C_TEST_ARGS  ?=
C_HELLO      := examples/hello.c
# The small C examples test-c builds and runs: the README's, and batch.c.
C_EXAMPLES   := $(C_HELLO) examples/batch.c

# The Swift toolchain's own clang: its TSan runtime is the one Swift uses.
SWIFT_TOOLCHAIN_BIN := $(patsubst %/,%,$(dir $(realpath $(shell command -v $(SWIFT)))))
SWIFT_RUNTIME_DIR   := $(abspath $(SWIFT_TOOLCHAIN_BIN)/../lib/swift/linux)
TOOLCHAIN_CC        := $(SWIFT_TOOLCHAIN_BIN)/clang
TOOLCHAIN_CXX       := $(SWIFT_TOOLCHAIN_BIN)/clang++

TSAN_SCRATCH := .build-tsan
TSAN_BUILD   := $(TSAN_SCRATCH)/debug
TSAN_BIN     := $(C_TEST_OUT)/loadstate-tests-tsan
ASAN_SCRATCH := .build-asan
# A report fails the run at once.
TSAN_RUN_OPTIONS := halt_on_error=1 exitcode=66 second_deadlock_stack=1

# Swift's runtime keeps some memory reachable or "possibly lost" on
# purpose; only definite leaks count.
VALGRIND_FLAGS := --quiet --leak-check=full --show-leak-kinds=definite \
                  --errors-for-leak-kinds=definite --error-exitcode=99 --fair-sched=yes

.PHONY: test-c test-valgrind test-tsan c-header-check c-hello c-trace c-tsan-lib

$(C_TEST_BIN): $(C_TEST_DEPS) | lib
	@mkdir -p $(C_TEST_OUT)
	$(CC) $(CFLAGS) -o $@ $(C_TEST_SRCS) $(LDLIBS_C)

# include/loadstate.h against the library's exports and the header the
# Swift compiler emits for the @_cdecl functions of Sources/LoadstateC.
c-header-check: lib
	SWIFTC="$(SWIFT_TOOLCHAIN_BIN)/swiftc" CXX="$(TOOLCHAIN_CXX)" CC="$(CC)" \
	  BUILD="$(BUILD)" OUT="$(C_TEST_OUT)/header-check" \
	  $(C_TEST_DIR)/abi/check-header.sh

# The small C examples, each built against the debug library and run.
c-hello: lib
	@mkdir -p $(C_TEST_OUT)
	@for src in $(C_EXAMPLES); do \
	  bin=$(C_TEST_OUT)/$$(basename $$src .c); \
	  echo "$(CC) $(CFLAGS) -o $$bin $$src $(LDLIBS_C)" && \
	  $(CC) $(CFLAGS) -o $$bin $$src $(LDLIBS_C) && \
	  echo "$$bin" && timeout 120 $$bin || exit 1; \
	done

# examples/trace.c writes spans as JSON lines; Tests/c/check_trace.py checks them.
c-trace: lib
	@mkdir -p $(C_TEST_OUT)
	$(CC) $(CFLAGS) -o $(C_TEST_OUT)/trace examples/trace.c $(LDLIBS_C)
	set -o pipefail; timeout 120 $(C_TEST_OUT)/trace | tee $(C_TEST_OUT)/trace.jsonl | python3 $(C_TEST_DIR)/check_trace.py

test-c: c-header-check $(C_TEST_BIN)
	$(C_TEST_BIN) $(C_TEST_ARGS)
	@$(MAKE) --no-print-directory c-hello
	@$(MAKE) --no-print-directory c-trace

# LDS_TEST_SLOW: longer deadlines and a smaller stress run. Valgrind runs a
# process on one core; VALGRIND_JOBS tests run at once (LDS_TEST_JOBS), one
# per core of this machine by default.
VALGRIND_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
test-valgrind: deps $(C_TEST_BIN)
	LDS_TEST_SLOW=1 LDS_TEST_JOBS=$(VALGRIND_JOBS) valgrind $(VALGRIND_FLAGS) $(C_TEST_BIN) $(C_TEST_ARGS)

c-tsan-lib: deps $(OUT)/.header-stamp
	$(SWIFT) build --sanitize=thread --scratch-path $(TSAN_SCRATCH) --product loadstate

# The toolchain's static TSan runtime carries libdispatch interceptors, so
# the test binary links the toolchain's libdispatch and BlocksRuntime too.
$(TSAN_BIN): $(C_TEST_DEPS) c-tsan-lib
	@mkdir -p $(C_TEST_OUT)
	$(TOOLCHAIN_CC) $(CFLAGS) -fsanitize=thread -o $@ $(C_TEST_SRCS) \
	  -L$(TSAN_BUILD) -lloadstate -Wl,-rpath,$(abspath $(TSAN_BUILD)) \
	  -L$(SWIFT_RUNTIME_DIR) -ldispatch -lBlocksRuntime -Wl,-rpath,$(SWIFT_RUNTIME_DIR) -lpthread

# Each C test runs in a freshly executed process (LDS_TEST_EXEC): forked
# children of a TSan process can hang in the Swift runtime. Both suites
# run; the target fails if either does.
test-tsan: $(TSAN_BIN)
	@status=0; \
	echo "LDS_TEST_EXEC=1 TSAN_OPTIONS=\"$(TSAN_RUN_OPTIONS)\" $(TSAN_BIN) $(C_TEST_ARGS)"; \
	LDS_TEST_EXEC=1 TSAN_OPTIONS="$(TSAN_RUN_OPTIONS)" $(TSAN_BIN) $(C_TEST_ARGS) || status=1; \
	echo "TSAN_OPTIONS=\"$(TSAN_RUN_OPTIONS)\" LOADSTATE_SANITIZED=thread $(SWIFT) test --sanitize=thread --scratch-path $(TSAN_SCRATCH)"; \
	TSAN_OPTIONS="$(TSAN_RUN_OPTIONS)" LOADSTATE_SANITIZED=thread $(SWIFT) test --disable-xctest --sanitize=thread --scratch-path $(TSAN_SCRATCH) || status=1; \
	exit $$status

# The Swift tests under AddressSanitizer, leaks included (the C tests run
# under valgrind above). LOADSTATE_SANITIZED skips the tests that build C
# programs against the instrumented library and shortens one stress test.
test-asan: deps $(OUT)/.header-stamp
	@echo "ASAN_OPTIONS=detect_leaks=1 LOADSTATE_SANITIZED=address $(SWIFT) test --sanitize=address --scratch-path $(ASAN_SCRATCH)"
	ASAN_OPTIONS=detect_leaks=1 LOADSTATE_SANITIZED=address $(SWIFT) test --disable-xctest --sanitize=address \
	  --scratch-path $(ASAN_SCRATCH)

TEST_TARGETS += test-c test-valgrind test-tsan test-asan
