# The cache benchmark: memory and persistent cache hits through the C API,
# next to a plain C hash map and a plain prepared SQLite SELECT.
# Not part of `make test`: timing claims live here only.
#
#   make bench-cache BENCH_CACHE_ARGS="keys value_bytes gets rounds"

# The persistent cache is built on SQLite.
DEB_PACKAGES += libsqlite3-dev

BENCH_CACHE_ARGS ?= 100000 100 2000000 3

.PHONY: bench-cache

$(OUT)/cache: bench/cache.c include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -Iinclude -D_GNU_SOURCE bench/cache.c -o $@ \
	  -L$(DIST) -lloadstate -Wl,-rpath,$(abspath $(DIST)) -lsqlite3

bench-cache: $(OUT)/cache
	$(OUT)/cache $(BENCH_CACHE_ARGS)
