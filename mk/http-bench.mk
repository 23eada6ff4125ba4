# The HTTP benchmark: loadstate's http loader against plain libcurl multi,
# both against bench/http_server.c on 127.0.0.1. Not part of `make test`.
# It runs twice: with the system's libcurl (Debian 12: 7.88.1), then with
# libcurl 8 from bookworm-backports (`make curl8`, build-local), both sides
# on the same libcurl each time.
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

bench-http: $(OUT)/bench-http $(OUT)/bench-http-server curl8
	@echo "== the system's libcurl"
	ulimit -n 65536 2>/dev/null; $(OUT)/bench-http $(BENCH_HTTP_ARGS) $(OUT)/bench-http-server
	@echo "== libcurl 8 (build-local, LD_LIBRARY_PATH=$(CURL8_LIB))"
	ulimit -n 65536 2>/dev/null; LD_LIBRARY_PATH=$(abspath $(CURL8_LIB)) $(OUT)/bench-http $(BENCH_HTTP_ARGS) \
	  $(OUT)/bench-http-server
