#!/bin/sh
# Runs the GTK example scripted under Xvfb, once per mode, and compares what
# it printed with Tests/gui/gtk*.expected: every state (load, load again
# while loading, an interrupt then cancel, an error), then, in mode 1, 10 s
# of idle time whose CPU time must stay under the example's bound
# (IDLE_CPU_MAX_S), then closing the window mid-load. Usage: run-gtk.sh BINARY
set -eu
bin=$1
dir=$(dirname "$0")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for mode in 1 forget-unwatch; do
  case $mode in 1) expected=$dir/gtk.expected ;; *) expected=$dir/gtk-$mode.expected ;; esac
  failed=0
  # GTK warns on stderr that it has no session bus: kept apart from the states.
  if ! LOADSTATE_GTK_SCRIPT=$mode timeout 90 xvfb-run -a "$bin" >"$out/stdout" 2>"$out/stderr"; then
    echo "test-gui-gtk: $mode: the example failed"; failed=1
  fi
  if ! diff -u "$expected" "$out/stdout"; then
    echo "test-gui-gtk: $mode: printed states differ from $expected"; failed=1
  fi
  grep -E '^(idle CPU time|lds_runtime_free)' "$out/stderr" | sed "s/^/test-gui-gtk: $mode: /" || true
  if [ $failed -eq 0 ]; then
    echo "test-gui-gtk: $mode: ok"
  else
    sed 's/^/  stderr: /' "$out/stderr"; status=1
  fi
done
exit $status
