#!/usr/bin/env bash
# Splits a staged `make install` (PREFIX=/usr, LIBDIR=/usr/lib/MULTIARCH)
# into the Debian packages libloadstate0 and libloadstate-dev and builds
# them with dpkg-deb. Run from the repository root (dpkg-shlibdeps and
# dpkg-gencontrol read debian/control and debian/changelog).
#
#   debian/build-packages.sh STAGED_ROOT MULTIARCH VERSION SONAME OUT_DIR
#
# libloadstate0's Depends come from dpkg-shlibdeps (the shlibs and symbols
# files of the installed libuv1, libcurl4, libsqlite3-0, libc6, ...), its
# shlibs file tells dependent packages which version to require, and its
# ldconfig trigger replaces a postinst.
set -euo pipefail

[ $# -eq 5 ] || { echo "usage: $0 STAGED_ROOT MULTIARCH VERSION SONAME OUT_DIR" >&2; exit 2; }
root=$1 multiarch=$2 version=$3 soname=$4 out=$5
major=${soname##*.so.}
minor=$(echo "$version" | cut -d. -f1,2)
libdir=usr/lib/$multiarch
lib=libloadstate$major
dev=libloadstate-dev

for pkg in "$lib" "$dev"; do
  rm -rf "${out:?}/$pkg"
  mkdir -p "$out/$pkg/DEBIAN" "$out/$pkg/usr/share/doc/$pkg"
  cp debian/copyright "$out/$pkg/usr/share/doc/$pkg/copyright"
  # A native package's changelog, compressed the way Debian policy asks
  # (gzip -9, no name or time stamp).
  gzip -9n < debian/changelog > "$out/$pkg/usr/share/doc/$pkg/changelog.gz"
done

mkdir -p "$out/$lib/$libdir" "$out/$dev/$libdir/pkgconfig" "$out/$dev/usr/include"
cp -a "$root/$libdir/libloadstate.so.$version" "$root/$libdir/$soname" "$out/$lib/$libdir/"
cp -a "$root/$libdir/libloadstate.so" "$out/$dev/$libdir/"
cp -a "$root/$libdir/pkgconfig/loadstate.pc" "$out/$dev/$libdir/pkgconfig/"
cp -a "$root/usr/include/loadstate.h" "$out/$dev/usr/include/"

echo "libloadstate $major $lib (>= $minor.0)" > "$out/$lib/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$out/$lib/DEBIAN/triggers"

: > "$out/$lib.substvars"
: > "$out/$dev.substvars"
dpkg-shlibdeps -T"$out/$lib.substvars" "$out/$lib/$libdir/libloadstate.so.$version"
echo "$lib: $(grep '^shlibs:Depends=' "$out/$lib.substvars")"

for pkg in "$lib" "$dev"; do
  chmod -R u=rwX,go=rX "$out/$pkg"
  (cd "$out/$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0r md5sum) \
    > "$out/$pkg/DEBIAN/md5sums"
  chmod 644 "$out/$pkg/DEBIAN/md5sums"
  dpkg-gencontrol -p"$pkg" -T"$out/$pkg.substvars" -P"$out/$pkg" -f"$out/files"
  dpkg-deb --root-owner-group --build "$out/$pkg" "$out"
done
