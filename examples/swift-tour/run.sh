#!/usr/bin/env bash
# run.sh — runs the README's Swift tour against the local test server
# (Tests/support/http_server.py) and compares its output with expected.txt.
#
#   usage: examples/swift-tour/run.sh   (from the repository root; SWIFT names the toolchain's swift)
set -euo pipefail

swift=${SWIFT:-swift}
# SWIFT_BUILD_FLAGS: the flags of the other debug builds (make passes them),
# so that this build reuses their modules.
# shellcheck disable=SC2086
"$swift" build $SWIFT_BUILD_FLAGS --product LoadstateTour >/dev/null
# shellcheck disable=SC2086
bin=$("$swift" build $SWIFT_BUILD_FLAGS --show-bin-path)/LoadstateTour

# The server prints its port, then serves until its standard input closes.
coproc SERVER { exec python3 Tests/support/http_server.py; }
read -r -t 30 port <&"${SERVER[0]}"
actual=$(timeout 60 "$bin" "http://127.0.0.1:$port")
exec {SERVER[1]}>&-
wait "$SERVER_PID" || true

echo "$actual"
diff -u examples/swift-tour/expected.txt <(echo "$actual") \
  || { echo "run.sh: the tour's output differs from examples/swift-tour/expected.txt"; exit 1; }
echo "run.sh: the tour ran as expected"
