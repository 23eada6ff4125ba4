# The scheduling benchmark: loads through a loader with max_concurrent
# against the same loads unlimited, in one run, and the memory of queued
# loads. Not part of `make test`: timing claims live here only.
#
#   make bench-scheduling BENCH_SCHEDULING_ARGS="loads rounds limit queued"

BENCH_SCHEDULING_ARGS ?= 100000 9 64 100000

.PHONY: bench-scheduling

$(OUT)/scheduling: bench/scheduling.c bench/bench_util.h include/loadstate.h | dist
	@mkdir -p $(OUT)
	$(CC) -std=c11 -O2 -g -Wall -Wextra -Werror -Iinclude -D_GNU_SOURCE -pthread bench/scheduling.c -o $@ \
	  -L$(DIST) -lloadstate -Wl,-rpath,$(abspath $(DIST)) -lpthread

bench-scheduling: $(OUT)/scheduling
	$(OUT)/scheduling $(BENCH_SCHEDULING_ARGS)
