#!/usr/bin/env bash
# The Debian packages of build/deb, used as a user would: installed with
# apt-get, examples/hello.c built with nothing but `pkg-config --cflags
# --libs loadstate` and run, then purged, and every file they installed
# checked gone.
#
# The machine is left as it was: the test refuses to start when either
# package is already installed, and purges exactly what apt-get installed
# (the two packages, and any dependency that was missing), also when a
# step fails. Needs root or sudo. Run from the repository root by `make
# test-deb`, which passes VERSION and DEB_DIR.
set -euo pipefail

: "${VERSION:?}" "${DEB_DIR:?}"
packages=(libloadstate0 libloadstate-dev)
debs=()
for pkg in "${packages[@]}"; do
  debs+=("$(realpath "$DEB_DIR")/${pkg}_${VERSION}_$(dpkg --print-architecture).deb")
done
if [ "$(id -u)" = 0 ]; then SUDO=(); else SUDO=(sudo); fi
export DEBIAN_FRONTEND=noninteractive

fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

for pkg in "${packages[@]}"; do
  ! installed "$pkg" || fail "$pkg is installed already; remove it first (the test installs and purges it)"
done

# What apt-get would install: the two packages and any missing dependency.
mapfile -t new < <("${SUDO[@]}" apt-get install -s -y "${debs[@]}" 2>/dev/null | awk '$1 == "Inst" { print $2 }')
[ "${#new[@]}" -ge 2 ] || fail "apt-get would not install ${debs[*]}"
echo "test-deb: apt-get install ${debs[*]}"
echo "  installs: ${new[*]}"

work=$(mktemp -d "${TMPDIR:-/tmp}/loadstate-deb.XXXXXX")
purge() {
  "${SUDO[@]}" apt-get purge -y -qq "${new[@]}" >/dev/null
}
trap 'purge || true; rm -rf "$work"' EXIT

"${SUDO[@]}" apt-get install -y -qq "${debs[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install failed"; }
echo "  libloadstate0 Depends: $(dpkg-query -W -f='${Depends}' libloadstate0)"
echo "  libloadstate-dev Depends: $(dpkg-query -W -f='${Depends}' libloadstate-dev)"
# The files and links the packages own (their folders may be shared).
mapfile -t owned < <(dpkg-query -L "${packages[@]}" | while read -r f; do [ -z "$f" ] || { [ -d "$f" ] && [ ! -L "$f" ]; } || echo "$f"; done)
printf '  %s\n' "${owned[@]}"

[ "$(pkg-config --modversion loadstate)" = "$VERSION" ] || fail "pkg-config does not find loadstate $VERSION"
flags=$(pkg-config --cflags --libs loadstate)
echo "  cc examples/hello.c $flags"
cc examples/hello.c $flags -o "$work/hello"
ldd "$work/hello" | grep -E "libloadstate\.so\.${VERSION%%.*} => (/usr)?/lib/" >/dev/null || { ldd "$work/hello"; fail "hello does not load the packaged library"; }
timeout 60 "$work/hello" | tee "$work/hello.out" | sed 's/^/  | /'
grep -q 'loaded: hello' "$work/hello.out" || fail "hello did not print its loaded state"
echo "  ok: hello built with pkg-config only, and ran against the packaged library"

echo "test-deb: apt-get purge ${new[*]}"
purge
trap 'rm -rf "$work"' EXIT
for pkg in "${packages[@]}"; do
  ! installed "$pkg" || fail "$pkg is still installed"
done
for f in "${owned[@]}"; do
  [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is still there"
done
echo "  ok: both packages purged, their ${#owned[@]} files and links gone"
echo "test-deb: passed"
