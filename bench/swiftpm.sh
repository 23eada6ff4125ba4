#!/usr/bin/env bash
# swiftpm.sh — the library a Swift package gets when it depends on loadstate,
# next to the `make dist` library.
#
#   usage: bench/swiftpm.sh [rounds] [loads cells rounds in_flight]
#          defaults: 5 rounds of `loads 100000 1024 1 1000`
#
# Builds, in a temporary directory, a consumer package that depends on this
# checkout with `.package(path:)` and links the `loadstate` product, with a
# plain `swift build -c release` (no flags: a package cannot pass flags to
# its dependencies). Then runs bench/loads.c against that libloadstate.so
# and against dist/libloadstate.so (built beforehand by `make dist`),
# alternating, and prints the loads/s and CPU per load of the `loadstate`
# variant, their medians and the ratio plain/dist.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
shift || true
loads_args=${*:-100000 1024 1 1000}
swift=${SWIFT:-swift}
cc=${CC:-cc}

[[ -f $root/dist/libloadstate.so ]] || { echo "swiftpm.sh: run make dist first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/loadstate-swiftpm.XXXXXX")
trap 'rm -rf "$work"' EXIT

# SwiftPM names a path dependency after its directory.
identity=$(basename "$root" | tr '[:upper:]' '[:lower:]')
mkdir -p "$work/consumer/Sources/Consumer"
cat > "$work/consumer/Package.swift" <<EOF
// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "consumer",
    dependencies: [.package(path: "$root")],
    targets: [
        .executableTarget(
            name: "Consumer",
            dependencies: [
                .product(name: "loadstate", package: "$identity"),
                .product(name: "LoadstateSwift", package: "$identity"),
            ]
        ),
    ]
)
EOF
cat > "$work/consumer/Sources/Consumer/main.swift" <<'EOF'
import Loadstate

print(LoadableState<[UInt8]>.absent.isAbsent)
EOF

echo "swiftpm.sh: building the consumer package (swift build -c release) in $work/consumer"
(cd "$work/consumer" && "$swift" build -c release 2>&1 | tail -n 3)
plain=$work/consumer/.build/release
[[ -f $plain/libloadstate.so ]] || { echo "swiftpm.sh: no $plain/libloadstate.so" >&2; exit 1; }
# bench/loads is linked against dist/, whose SONAME is libloadstate.so.0;
# SwiftPM's library has no SONAME, so give it that name too.
ln -sf libloadstate.so "$plain/libloadstate.so.0"

"$cc" -std=c11 -O2 -I"$root/include" -D_GNU_SOURCE -pthread "$root/bench/loads.c" -o "$work/loads" \
  -L"$root/dist" -lloadstate -luv -lpthread

# The Swift runtime libraries the plain build links to dynamically.
swift_libs=$(dirname "$(readlink -f "$(command -v "$swift")")")/../lib/swift/linux
swift_libs=$(cd "$swift_libs" && pwd)

run() { # run <label> <library path>
  local out
  out=$(LD_LIBRARY_PATH=$2 "$work/loads" $loads_args)
  awk -v label="$1" '$1 == "loadstate" && $2 ~ /^[0-9]+$/ { print label, $3, $8; exit }' <<< "$out"
}

for lib in "$root/dist" "$plain:$swift_libs"; do
  # Through a file: with pipefail, grep -q closing the pipe early could fail ldd.
  LD_LIBRARY_PATH=$lib ldd "$work/loads" > "$work/ldd.txt"
  grep -q "${lib%%:*}/libloadstate.so" "$work/ldd.txt" \
    || { echo "swiftpm.sh: loads does not load the library in ${lib%%:*}" >&2; exit 1; }
done

echo "# command: bench/swiftpm.sh $rounds $loads_args   (make bench-swiftpm builds dist/ first)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cpus, $("$swift" --version 2>/dev/null | head -n 1)"
echo "# loads/s and cpu us/load of the loadstate variant of: loads $loads_args"
exported() { nm -D --defined-only "$1" | awk '$2 ~ /^[A-Z]$/' | wc -l; }
echo "# plain: $plain/libloadstate.so exports $(exported "$plain/libloadstate.so") symbols" \
  "(dist: $(exported "$root/dist/libloadstate.so"), the lds_* functions)"
printf '%-6s %-6s %10s %12s\n' round build loads/s 'cpu us/load'
results=$work/results
: > "$results"
for ((r = 1; r <= rounds; r++)); do
  # Alternate which build runs first, so neither always runs on a warmer machine.
  if ((r % 2)); then order="dist plain"; else order="plain dist"; fi
  for build in $order; do
    if [[ $build == dist ]]; then line=$(run dist "$root/dist"); else line=$(run plain "$plain:$swift_libs"); fi
    echo "$line" >> "$results"
    read -r label rate cpu <<< "$line"
    printf '%-6s %-6s %10s %12s\n' "$r" "$label" "$rate" "$cpu"
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
dist_rate=$(awk '$1 == "dist" { print $2 }' "$results" | median)
plain_rate=$(awk '$1 == "plain" { print $2 }' "$results" | median)
dist_cpu=$(awk '$1 == "dist" { print $3 }' "$results" | median)
plain_cpu=$(awk '$1 == "plain" { print $3 }' "$results" | median)
echo
echo "median of $rounds rounds:"
printf '  make dist              %10.0f loads/s  cpu %5.2f us/load\n' "$dist_rate" "$dist_cpu"
printf '  swift build -c release %10.0f loads/s  cpu %5.2f us/load\n' "$plain_rate" "$plain_cpu"
awk -v p="$plain_rate" -v d="$dist_rate" -v pc="$plain_cpu" -v dc="$dist_cpu" 'BEGIN {
  printf "  plain/dist: %.2f of the throughput, %.2fx the CPU per load (target: at least 0.8 of the throughput)\n", p / d, pc / dc }'
