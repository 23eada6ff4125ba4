#!/bin/sh
# Instructions a load on the Python thread, for one variant of
# bench/python_loads.py: a figure that does not depend on the machine's
# load, unlike the rates. Runs the variant under callgrind with 10,000 and
# with 30,000 loads and divides the difference by 20,000, so that start-up
# and imports cancel out. Two runs of one build differ by up to ~2 %.
#
# usage: bench/python_instructions.sh [VARIANT] [LIBRARY]
#   VARIANT: inline (default), async, bare, bare-batched, floor, plain
#   LIBRARY: default dist/libloadstate.so
set -eu
variant=${1:-inline}
here=$(cd "$(dirname "$0")" && pwd)
library=${2:-$here/../dist/libloadstate.so}
# The interpreter itself, not a wrapper script (valgrind would count the wrapper).
python=$(python3 -c 'import sys; print(sys.executable)')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() {
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg-$1" \
    "$python" "$here/python_loads.py" --once "$variant" -n "$1" -c 1000 --library "$library" >/dev/null 2>&1
  # Thread 1 is the Python thread.
  awk '/^(summary|totals):/ {print $2; exit}' "$out/cg-$1-01"
}
small=$(count 10000)
large=$(count 30000)
echo "# $0 $variant $library"
echo "$variant: $(( (large - small) / 20000 )) instructions a load on the Python thread"
