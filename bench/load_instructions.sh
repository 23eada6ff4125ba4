#!/bin/sh
# Instructions a load, per thread, for one libloadstate.so: a figure that
# does not depend on the machine's load, unlike the rates. Runs
# bench/load_instructions.c under callgrind with 10,000 and with 30,000
# loads and divides the difference by 20,000, so that start-up cancels out.
# Thread 1 is the calling thread (lds_loadable_load), thread 2 the loop.
#
# usage: bench/load_instructions.sh [LIBRARY_DIR]   default: dist
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=$(cd "${1:-$here/../dist}" && pwd)
swift_libs=$(dirname "$(readlink -f "$(command -v "${SWIFT:-swift}")")")/../lib/swift/linux
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${CC:-cc}" -std=c11 -Wall -Wextra -Werror -O2 -I"$here/../include" -D_GNU_SOURCE -pthread \
  "$here/load_instructions.c" -o "$out/load_instructions" -L"$dir" -lloadstate -lpthread
echo "# $0 $dir"
for variant in metrics no-metrics; do
  for n in 10000 30000; do
    LD_LIBRARY_PATH=$dir:$swift_libs valgrind --tool=callgrind --separate-threads=yes \
      --callgrind-out-file="$out/cg-$variant-$n" "$out/load_instructions" "$n" "$variant" >/dev/null 2>&1
  done
  count() { awk '/^(summary|totals):/ {print $2; exit}' "$out/cg-$variant-$1-$2"; }
  caller=$(( ($(count 30000 01) - $(count 10000 01)) / 20000 ))
  loop=$(( ($(count 30000 02) - $(count 10000 02)) / 20000 ))
  echo "instructions a load ($variant): calling thread $caller, loop thread $loop, both $((caller + loop))"
done
