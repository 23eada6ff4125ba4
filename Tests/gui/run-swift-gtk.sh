#!/bin/sh
# Runs the Swift GTK example (examples/swift-gtk) scripted under Xvfb and
# compares what it printed with Tests/gui/swift-gtk.expected.
# Usage: run-swift-gtk.sh BINARY
set -eu
bin=$1
expected=$(dirname "$0")/swift-gtk.expected
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
# GTK warns on stderr that it has no session bus: kept apart from the states.
if ! LOADSTATE_GTK_SCRIPT=1 timeout 30 xvfb-run -a "$bin" >"$out/stdout" 2>"$out/stderr"; then
  echo "test-gui-swift: the example failed"; status=1
fi
if ! diff -u "$expected" "$out/stdout"; then
  echo "test-gui-swift: printed states differ from $expected"; status=1
fi
if [ $status -ne 0 ]; then sed 's/^/  stderr: /' "$out/stderr"; exit 1; fi
echo "test-gui-swift: ok (every state shown on the GTK thread, closed mid-load cleanly)"
