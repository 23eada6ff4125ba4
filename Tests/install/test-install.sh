#!/usr/bin/env bash
# make install and make uninstall, used as a user would, in a temporary
# folder (nothing outside it changes; it is removed at the end):
#
# 1. DESTDIR=STAGE/destdir PREFIX=/usr/local: exactly the expected files
#    and links, the SONAME, loadstate.pc's folders; uninstall leaves no file.
# 2. PREFIX=STAGE/prefix: examples/hello.c built with nothing but
#    `pkg-config --cflags --libs loadstate` and run; a Rust crate made in
#    STAGE (outside the repository) that depends on bindings/rust by path,
#    built offline with PKG_CONFIG_PATH and without LOADSTATE_LIB_DIR, must
#    link against the installed library (NEEDED libloadstate.so.MAJOR, an
#    rpath to PREFIX/lib) and run; uninstall leaves no file.
#
# Run from the repository root by `make test-install`, which passes
# VERSION, SONAME, CARGO and MAKE.
set -euo pipefail

: "${VERSION:?}" "${SONAME:?}"
MAKE=${MAKE:-make}
# Only the folders given below: none from the environment or the calling make.
unset LIBDIR INCLUDEDIR PKGCONFIGDIR MAKEFLAGS MFLAGS
CARGO=${CARGO:-cargo}
repo=$(pwd)
stage=$(mktemp -d "${TMPDIR:-/tmp}/loadstate-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT

fail() { echo "test-install: FAIL: $*" >&2; exit 1; }
# Every file and link under a folder, with where each link points.
listing() { (cd "$1" && find . ! -type d -printf '%P %y %l\n' | sed 's/ $//' | sort); }

echo "test-install: 1. make install DESTDIR=$stage/destdir PREFIX=/usr/local"
$MAKE --no-print-directory install-files DESTDIR="$stage/destdir" PREFIX=/usr/local >/dev/null
expected="usr/local/include/loadstate.h f
usr/local/lib/libloadstate.so l $SONAME
usr/local/lib/libloadstate.so.$VERSION f
usr/local/lib/$SONAME l libloadstate.so.$VERSION
usr/local/lib/pkgconfig/loadstate.pc f"
diff -u <(echo "$expected" | sort) <(listing "$stage/destdir") || fail "the installed files differ (- expected, + installed)"
soname=$(readelf -d "$stage/destdir/usr/local/lib/libloadstate.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "$SONAME" ] || fail "SONAME '$soname', expected $SONAME"
pc=$stage/destdir/usr/local/lib/pkgconfig/loadstate.pc
grep -qx 'prefix=/usr/local' "$pc" && grep -qx 'libdir=${exec_prefix}/lib' "$pc" \
  && grep -qx 'includedir=${prefix}/include' "$pc" && grep -qx "Version: $VERSION" "$pc" \
  || { cat "$pc"; fail "loadstate.pc does not name PREFIX's folders and version $VERSION"; }
echo "  ok: $(echo "$expected" | wc -l) files and links, SONAME $soname, loadstate.pc"
$MAKE --no-print-directory uninstall DESTDIR="$stage/destdir" PREFIX=/usr/local >/dev/null
left=$(listing "$stage/destdir")
[ -z "$left" ] || fail "uninstall left: $left"
echo "  ok: make uninstall removed every file"

prefix=$stage/prefix
echo "test-install: 2. make install PREFIX=$prefix"
$MAKE --no-print-directory install-files PREFIX="$prefix" LDCONFIG=: >/dev/null
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
unset LOADSTATE_LIB_DIR
[ "$(pkg-config --modversion loadstate)" = "$VERSION" ] || fail "pkg-config does not find loadstate $VERSION"

flags=$(pkg-config --cflags --libs loadstate)
echo "  cc examples/hello.c $flags"
cc examples/hello.c $flags -o "$stage/hello"
readelf -d "$stage/hello" | grep "(NEEDED).*\[$SONAME\]" >/dev/null || fail "hello was not linked against a library with SONAME $SONAME"
LD_LIBRARY_PATH=$prefix/lib ldd "$stage/hello" | grep "$SONAME => $prefix/lib/$SONAME" >/dev/null \
  || fail "hello does not load $prefix/lib/$SONAME"
LD_LIBRARY_PATH=$prefix/lib timeout 60 "$stage/hello" | tee "$stage/hello.out" | sed 's/^/  | /'
grep -q 'loaded: hello' "$stage/hello.out" || fail "hello did not print its loaded state"
echo "  ok: hello built with pkg-config only, and ran against the installed library"

crate=$stage/crate
mkdir -p "$crate/src"
cat > "$crate/Cargo.toml" <<EOF
[package]
name = "loadstate-install-check"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
loadstate = { path = "$repo/bindings/rust" }
EOF
# A dependent crate's binaries get no rpath from the loadstate crate's
# build script; it reads the folder the library was found in from
# DEP_LOADSTATE_LIB_DIR, as bindings/rust/README.md shows.
cat > "$crate/build.rs" <<'EOF'
fn main() {
    let dir = std::env::var("DEP_LOADSTATE_LIB_DIR").expect("the loadstate crate sets DEP_LOADSTATE_LIB_DIR");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}
EOF
cat > "$crate/src/main.rs" <<'EOF'
use std::time::Duration;

fn main() -> Result<(), loadstate::Error> {
    assert_eq!(loadstate::version(), loadstate::sys::LDS_VERSION, "the library's version is the crate's");
    let runtime = loadstate::Runtime::new()?;
    let loader = runtime.loader(|job| {
        let request = job.request().to_vec();
        job.succeed(&request.to_ascii_uppercase()).unwrap();
    })?;
    let (cell, events) = runtime.loadable()?;
    cell.load(&loader, b"installed")?;
    let loaded = events.wait_until(|e| e.is_settled(), Duration::from_secs(30)).expect("the load settles");
    let value = loaded.value.expect("a value");
    assert_eq!(value, b"INSTALLED");
    println!("loaded: {}", String::from_utf8_lossy(&value));
    Ok(())
}
EOF
echo "  cargo build --offline (a crate in $crate; PKG_CONFIG_PATH=$PKG_CONFIG_PATH, no LOADSTATE_LIB_DIR)"
(cd "$crate" && CARGO_TARGET_DIR="$stage/target" "$CARGO" build --offline --quiet)
bin=$stage/target/debug/loadstate-install-check
# The installed library has a SONAME, the repository's debug build none:
# NEEDED libloadstate.so.MAJOR says which one the linker used.
readelf -d "$bin" | grep "(NEEDED).*\[$SONAME\]" >/dev/null || fail "the crate's binary was not linked against a library with SONAME $SONAME"
readelf -d "$bin" | grep -E 'R(UN)?PATH' | grep "$prefix/lib" >/dev/null || fail "the crate's binary has no rpath to $prefix/lib"
ldd "$bin" | grep "$SONAME => $prefix/lib/$SONAME" >/dev/null || { ldd "$bin"; fail "the crate's binary does not load $prefix/lib/$SONAME"; }
timeout 60 "$bin" | sed 's/^/  | /'
echo "  ok: the Rust crate linked the installed library through pkg-config and ran"

$MAKE --no-print-directory uninstall PREFIX="$prefix" LDCONFIG=: >/dev/null
left=$(listing "$prefix")
[ -z "$left" ] || fail "uninstall left: $left"
echo "  ok: make uninstall removed every file"
echo "test-install: passed"
