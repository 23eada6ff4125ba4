#!/usr/bin/env bash
# check-header.sh — keeps include/loadstate.h, libloadstate.so and the Swift
# exports from drifting apart.
#
#   1. The set of lds_* functions declared in include/loadstate.h, the set
#      exported by libloadstate.so and the set of @_cdecl exports in the C
#      header the Swift compiler emits for Sources/LoadstateC are equal.
#   2. Each function's declaration in include/loadstate.h is compatible with
#      the emitted one, parameter by parameter (signatures.cpp).
#   3. The check itself is checked: deliberate mutations of copies of both
#      headers and of the export list must each make it fail.
#
# Environment: SWIFTC, CXX (a clang++), CC, BUILD (.build/debug), OUT (a
# scratch directory). Run from the repository root after `make lib`.
set -euo pipefail

: "${SWIFTC:=swiftc}" "${CXX:=clang++}" "${CC:=cc}" "${BUILD:=.build/debug}" "${OUT:=build/c/header-check}"
HERE="$(cd "$(dirname "$0")" && pwd)"
HEADER=include/loadstate.h
LIB="$BUILD/libloadstate.so"

mkdir -p "$OUT"

# The header the Swift compiler emits for the export target. SwiftPM writes
# it while compiling LoadstateC (-emit-objc-header-path), with the build's
# own flags; without it, type-check the target here and emit one.
emitted_header() {
  local built="$BUILD/LoadstateC.build/include/LoadstateC-Swift.h"
  if [ -f "$built" ]; then
    echo "$built"
    return
  fi
  local out="$OUT/LoadstateC-Swift.h" maps=()
  for m in Sources/*/module.modulemap; do maps+=(-Xcc "-fmodule-map-file=$PWD/$m"); done
  "$SWIFTC" -typecheck -parse-as-library -swift-version 6 -module-name LoadstateC \
    -I "$BUILD/Modules" "${maps[@]}" -module-cache-path "$OUT/module-cache" \
    -suppress-warnings Sources/LoadstateC/*.swift -emit-clang-header-path "$out" >&2
  echo "$out"
}

# Names of the lds_* functions declared in a C header.
header_names() {
  "$CC" -E -P -x c "$1" | tr '\n' ' ' | grep -oE '\blds_[a-z0-9_]+[[:space:]]*\(' |
    sed -E 's/[[:space:]]*\($//' | sort -u
}

# The emitted header's lds_* declarations, one per line.
emitted_decls() {
  grep -E '^SWIFT_EXTERN .*\blds_[a-z0-9_]+\(' "$1"
}

emitted_names() {
  emitted_decls "$1" | sed -E 's/^[^(]*\b(lds_[a-z0-9_]+)\(.*/\1/' | sort -u
}

exported_names() {
  nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ && $3 ~ /^lds_/ { print $3 }' | sort -u
}

# Compares two name lists; prints what is missing on each side.
compare_sets() { # left-file right-file left-label right-label
  local status=0 name
  for name in $(comm -23 "$1" "$2"); do
    echo "  $name: in $3 but not in $4"
    status=1
  done
  for name in $(comm -13 "$1" "$2"); do
    echo "  $name: in $4 but not in $3"
    status=1
  done
  return $status
}

# check <header> <emitted header> <exported names file> <work dir>
check() {
  local header="$1" emitted="$2" exports="$3" work="$4" status=0
  rm -rf "$work"
  mkdir -p "$work/include"
  cp "$header" "$work/include/loadstate.h"
  header_names "$header" >"$work/header.names"
  emitted_names "$emitted" >"$work/emitted.names"
  compare_sets "$work/header.names" "$exports" "include/loadstate.h" "libloadstate.so's exports" || status=1
  compare_sets "$work/header.names" "$work/emitted.names" "include/loadstate.h" "the Swift exports" || status=1
  # The emitted declarations, renamed so both sides can be compared.
  emitted_decls "$emitted" | sed -E 's/\b(lds_[a-z0-9_]+)\(/swift_\1(/' >"$work/swift_exports.h"
  comm -12 "$work/header.names" "$work/emitted.names" |
    sed 's/.*/LDS_CHECK_SIGNATURE(&)/' >"$work/checks.inc"
  if ! "$CXX" -std=c++17 -fsyntax-only -Wno-nullability-completeness \
       -I "$work/include" -I "$work" "$HERE/signatures.cpp" >"$work/compile.log" 2>&1; then
    grep -E 'static assertion failed|error:' "$work/compile.log" | sed 's/^/  /' | head -20
    status=1
  fi
  return $status
}

EMITTED="$(emitted_header)"
exported_names "$LIB" >"$OUT/exports.names"
if [ ! -s "$OUT/exports.names" ]; then
  echo "header check: $LIB exports no lds_* function" >&2
  exit 1
fi

if ! check "$HEADER" "$EMITTED" "$OUT/exports.names" "$OUT/real"; then
  echo "header check: include/loadstate.h has drifted from the library (see above)" >&2
  exit 1
fi
count=$(wc -l <"$OUT/real/checks.inc")

# The check must catch each of these changes made to throwaway copies.
mutate() { # name file sed-script
  local name="$1" file="$2" script="$3" copy="$OUT/mutant-$1.h"
  sed -E "$script" "$file" >"$copy"
  if cmp -s "$file" "$copy"; then
    echo "header check: mutation '$name' no longer applies; update check-header.sh" >&2
    exit 1
  fi
  echo "$copy"
}

expect_failure() { # name header emitted exports
  if check "$2" "$3" "$4" "$OUT/mutant-$1" >"$OUT/mutant-$1.log" 2>&1; then
    echo "header check: the mutation '$1' went unnoticed" >&2
    exit 1
  fi
}

expect_failure param-type \
  "$(mutate param-type "$HEADER" '/lds_job_fail\(/ s/int32_t code/int64_t code/')" "$EMITTED" "$OUT/exports.names"
expect_failure param-count \
  "$(mutate param-count "$HEADER" 's/lds_loadable_cancel\(lds_runtime \*rt, lds_id cell\)/lds_loadable_cancel(lds_runtime *rt)/')" \
  "$EMITTED" "$OUT/exports.names"
expect_failure length-type \
  "$(mutate length-type "$HEADER" '/lds_loadable_set_loaded\(/ s/size_t len/uint32_t len/')" "$EMITTED" "$OUT/exports.names"
expect_failure missing-declaration \
  "$(mutate missing-declaration "$HEADER" '/^uint32_t lds_version\(void\);/d')" "$EMITTED" "$OUT/exports.names"
expect_failure swift-param-type \
  "$HEADER" "$(mutate swift-param-type "$EMITTED" '/ lds_job_finish\(/ s/uint64_t job/uint32_t job/')" "$OUT/exports.names"
expect_failure swift-pointer-depth \
  "$HEADER" "$(mutate swift-pointer-depth "$EMITTED" '/ lds_runtime_new\(/ s/void \* _Nullable \* _Nullable/void * _Nullable/')" \
  "$OUT/exports.names"
expect_failure swift-return-type \
  "$HEADER" "$(mutate swift-return-type "$EMITTED" '/ lds_strerror\(/ s/char const \*/char */')" "$OUT/exports.names"
expect_failure swift-missing-export \
  "$HEADER" "$(mutate swift-missing-export "$EMITTED" '/ lds_job_progress\(/d')" "$OUT/exports.names"
printf 'lds_not_declared\n' | sort -m - "$OUT/exports.names" >"$OUT/exports-extra.names"
expect_failure extra-export "$HEADER" "$EMITTED" "$OUT/exports-extra.names"

echo "header check: $count functions agree (include/loadstate.h, $LIB, Swift exports); 9 deliberate mutations caught"
