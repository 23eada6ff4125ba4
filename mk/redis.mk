# The Redis cache's tests and benchmark, against Debian's redis-server
# started on a free port of 127.0.0.1 by Tests/support/redis_server.c
# (the Python, Rust and Swift tests start theirs the same way); never
# against a server the tests did not start.
#
#   make test-redis            Tests/redis/*.c with the C harness, in a binary of its own
#   make test-redis-valgrind   the same tests under valgrind (the workers they fork too)
#   make bench-redis           bench/redis.c: cache hits against hiredis alone, and
#                              processes sharing loads through Redis against no sharing
#
# REDIS_TEST_ARGS selects tests by substring: make test-redis REDIS_TEST_ARGS=processes
# Only these programs link hiredis themselves (to look into Redis, or as
# the benchmark's baseline); a program that uses the library links
# -lloadstate alone.

DEB_PACKAGES += libhiredis-dev redis-server

REDIS_TEST_DIR  := Tests/redis
REDIS_TEST_OUT  := $(OUT)/redis
REDIS_TEST_BIN  := $(REDIS_TEST_OUT)/loadstate-redis-tests
REDIS_TEST_SRCS := $(sort $(wildcard $(REDIS_TEST_DIR)/*.c)) $(C_TEST_DIR)/harness.c Tests/support/redis_server.c
REDIS_TEST_DEPS := $(REDIS_TEST_SRCS) $(C_TEST_DIR)/harness.h Tests/support/redis_server.h include/loadstate.h
REDIS_TEST_ARGS ?=
BENCH_REDIS_ARGS ?=

.PHONY: test-redis test-redis-valgrind bench-redis

$(REDIS_TEST_BIN): $(REDIS_TEST_DEPS) | lib
	@mkdir -p $(REDIS_TEST_OUT)
	$(CC) $(CFLAGS) -I$(C_TEST_DIR) -ITests/support -o $@ $(REDIS_TEST_SRCS) $(LDLIBS_C) -lhiredis

test-redis: deps $(REDIS_TEST_BIN)
	$(REDIS_TEST_BIN) $(REDIS_TEST_ARGS)

test-redis-valgrind: deps $(REDIS_TEST_BIN)
	LDS_TEST_SLOW=1 valgrind $(VALGRIND_FLAGS) $(REDIS_TEST_BIN) $(REDIS_TEST_ARGS)

TEST_TARGETS += test-redis test-redis-valgrind

$(OUT)/bench-redis: bench/redis.c bench/bench_util.h Tests/support/redis_server.c Tests/support/redis_server.h \
                    include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) $(BENCH_CFLAGS) -ITests/support bench/redis.c Tests/support/redis_server.c -o $@ \
	  -L$(DIST) -lloadstate -Wl,-rpath,$(abspath $(DIST)) -lhiredis -lpthread

# Not part of `make test`: timing claims live here only.
bench-redis: deps $(OUT)/bench-redis
	$(OUT)/bench-redis $(BENCH_REDIS_ARGS)
