# The library a Swift package gets when it depends on loadstate, next to the
# distribution library: bench/swiftpm.sh builds a consumer package with a
# plain `swift build -c release` and runs bench/loads.c against both.
# Not part of `make test`: timing claims live here only.
#
#   make bench-swiftpm                                   5 rounds of `loads 100000 1024 1 1000`
#   make bench-swiftpm BENCH_SWIFTPM_ARGS="7 200000 1024 1 1000"   rounds, then the loads arguments

BENCH_SWIFTPM_ARGS ?=

.PHONY: bench-swiftpm

bench-swiftpm: dist
	SWIFT="$(SWIFT)" CC="$(CC)" bench/swiftpm.sh $(BENCH_SWIFTPM_ARGS)
