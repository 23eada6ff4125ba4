# HTTP caching and HTTP/2 against Debian's nginx (bench/http_cache.c):
#   make bench-http-cache   BENCH_HTTP_CACHE_ARGS="rounds resources concurrent h2rounds"

BENCH_HTTP_CACHE_ARGS ?= 100 100 1000 5

.PHONY: bench-http-cache

$(OUT)/bench-http-cache: bench/http_cache.c include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -D_GNU_SOURCE -pthread bench/http_cache.c -o $@ \
	  -Ldist -lloadstate -Wl,-rpath,$(abspath dist)

bench-http-cache: deps $(OUT)/bench-http-cache
	ulimit -n 65536 2>/dev/null; $(OUT)/bench-http-cache Tests/support/nginx_server.py $(BENCH_HTTP_CACHE_ARGS)
