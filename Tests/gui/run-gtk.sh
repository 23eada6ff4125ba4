#!/bin/sh
# Runs the GTK example scripted under Xvfb, once per mode, and compares what
# it printed with Tests/gui/gtk*.expected. Usage: run-gtk.sh BINARY
set -eu
bin=$1
dir=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for mode in 1 forget-unwatch; do
  case $mode in 1) expected=$dir/gtk.expected ;; *) expected=$dir/gtk-$mode.expected ;; esac
  # GTK warns on stderr that it has no session bus: kept apart from the states.
  if ! LOADSTATE_GTK_SCRIPT=$mode timeout 60 xvfb-run -a "$bin" >"$out/stdout" 2>"$out/stderr"; then
    echo "test-gui-gtk: $mode: the example failed"; status=1
  fi
  if ! diff -u "$expected" "$out/stdout"; then
    echo "test-gui-gtk: $mode: printed states differ from $expected"; status=1
  fi
  [ $status -eq 0 ] || sed 's/^/  stderr: /' "$out/stderr"
  [ $status -eq 0 ] && echo "test-gui-gtk: $mode: ok"
done
exit $status
