# HTTP caching conformance: the public suite github.com/http-tests/cache-tests run against
# loadstate's http loader as a private cache, and against hishel (httpx's RFC 9111 cache) for
# comparison (bench/cache-tests/run.py; the current figures and the note "HTTP caching conformance"
# in bench/README.md, how it runs and every result in that section of bench/HISTORY.md).
#
#   make conformance                                   clones the suite into build/cache-tests/suite
#   make conformance CACHE_TESTS_DIR=/path/to/cache-tests    a checkout of the suite made elsewhere
#   make conformance CONFORMANCE_ARGS="--backends loadstate"
#
# Results: build/cache-tests/ (raw JSON of the suite's client, classifications, failure lists).
# Not part of `make test`: it measures, it does not pass or fail. It installs Debian's nodejs
# (the suite's server and client; node 18 or later, no npm package) when node is missing, and
# hishel and httpx from PyPI, at the versions below, when this python3 does not have them.

CACHE_TESTS_DIR   ?=
CONFORMANCE_ARGS  ?=
CONFORMANCE_PIP   := hishel==2.0.0 httpx==0.28.1

.PHONY: conformance conformance-deps

conformance-deps: deps
	@command -v node >/dev/null 2>&1 || { \
	  echo "installing: nodejs"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs >/dev/null; }
	@$(PYTHON) -c 'import sys; from importlib.metadata import version; \
	  sys.exit(not (version("hishel") == "2.0.0" and version("httpx") == "0.28.1"))' 2>/dev/null || { \
	  echo "installing: $(CONFORMANCE_PIP)"; $(PYTHON) -m pip install -q $(CONFORMANCE_PIP); }

conformance: lib conformance-deps
	LOADSTATE_LIBRARY=$(abspath $(LIB)) CACHE_TESTS_DIR=$(CACHE_TESTS_DIR) \
	  $(PYTHON) bench/cache-tests/run.py --out $(OUT)/cache-tests $(CONFORMANCE_ARGS)
