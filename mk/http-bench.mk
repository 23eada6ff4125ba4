# The HTTP benchmark: loadstate's http loader against plain libcurl multi,
# both against bench/http_server.c on 127.0.0.1. Not part of `make test`.
#
#   make bench-http BENCH_HTTP_ARGS="concurrent rounds pairs"

BENCH_HTTP_ARGS ?= 1000 5 9

.PHONY: bench-http

$(OUT)/bench-http-server: bench/http_server.c
	@mkdir -p $(OUT)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<

$(OUT)/bench-http: bench/http.c include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -Iinclude -D_GNU_SOURCE -pthread bench/http.c -o $@ \
	  -Ldist -lloadstate -Wl,-rpath,$(abspath dist) -lcurl

bench-http: $(OUT)/bench-http $(OUT)/bench-http-server
	ulimit -n 65536 2>/dev/null; $(OUT)/bench-http $(BENCH_HTTP_ARGS) $(OUT)/bench-http-server
