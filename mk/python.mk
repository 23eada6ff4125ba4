# The Python binding (bindings/python): its pytest suite, its wheel, the
# install test, and its benchmark.
#
#   make test-python          python3 -m pytest -q bindings/python/tests against the debug libloadstate.so
#   make python-wheel         build/python/loadstate-VERSION-py3-none-PLATFORM.whl, carrying dist/libloadstate.so
#   make test-python-install  the README's install commands and the wheel, each in a fresh venv
#   make bench-python         bench/python_loads.py against dist/libloadstate.so; BENCH_PYTHON_ARGS="-n 100000"
#   make bench-python-peers   bench/python_peers.py: against pycurl, aiohttp, httpx, cachetools and
#                             diskcache (installed from PyPI, nginx from Debian, when missing);
#                             BENCH_PEERS_ARGS="--only http1k,flight -r 5"
#
# PYTEST_ARGS is passed to pytest, e.g. make test-python PYTEST_ARGS="-k cancel"
# The package needs nothing but the standard library. The tests need pytest
# and hypothesis (and prometheus-client, whose parser reads the metrics text back), trio and anyio
# (tests/test_trio.py, tests/test_anyio.py; installed as anyio[trio], a trio that anyio's trio
# backend supports), the wheel setuptools and wheel: they are installed from
# PyPI for this python3 when it cannot import them. The wheel is then built
# offline (no build isolation).

PYTHON            ?= python3
PYTHON_DIR        := bindings/python
PYTHON_WHEEL_DIR  := $(OUT)/python
PYTEST_ARGS       ?=
BENCH_PYTHON_ARGS ?=
BENCH_PEERS_ARGS  ?=

.PHONY: test-python python-deps python-build-deps browser-deps python-wheel test-python-install bench-python bench-python-peers

# Debian's python3 makes venvs only with python3-venv.
DEB_PACKAGES += python3-venv
# The Redis cache's tests start Debian's redis-server (tests/redis_server.py
# installs it too when the tests run without make).
DEB_PACKAGES += redis-server

# What building the wheel needs (pyproject.toml's build-system requires).
python-build-deps: deps
	@$(PYTHON) -c 'import setuptools, sys, wheel; sys.exit(int(setuptools.__version__.split(".")[0]) < 64)' \
	  2>/dev/null || { echo "installing: setuptools>=64 wheel"; $(PYTHON) -m pip install -q "setuptools>=64" wheel; }

# The tests build wheels too.
python-deps: python-build-deps
	@$(PYTHON) -c 'import pytest, hypothesis, prometheus_client' 2>/dev/null || { \
	  echo "installing: pytest hypothesis prometheus-client"; \
	  $(PYTHON) -m pip install -q pytest hypothesis prometheus-client; }
	@$(PYTHON) -c 'import anyio, trio' 2>/dev/null || { \
	  echo "installing: anyio[trio] (anyio and trio)"; $(PYTHON) -m pip install -q "anyio[trio]"; }

# The inspector's browser test drives Debian's chromium (headless, over its
# DevTools protocol); installed when missing.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing: chromium"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# pytest exits with 5 when it collected no test; that is a failure here.
test-python: lib python-deps browser-deps
	@echo "LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q $(PYTHON_DIR)/tests $(PYTEST_ARGS)"
	@LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q $(PYTHON_DIR)/tests $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test-python: pytest collected no tests"; exit 1; fi; exit $$rc

# setup.py copies dist/libloadstate.so into the wheel and fails without it.
# The previous wheel and setuptools' build folder go first, so that the
# wheel holds only what this build made.
python-wheel: dist python-build-deps
	rm -rf $(PYTHON_WHEEL_DIR) $(PYTHON_DIR)/build
	$(PYTHON) -m pip wheel -q --no-build-isolation --no-index --no-deps -w $(PYTHON_WHEEL_DIR) $(PYTHON_DIR)
	@ls $(PYTHON_WHEEL_DIR)/*.whl

# Fresh venvs; the README's checkout installs fetch setuptools from PyPI
# (pip's build isolation), as a user's would.
test-python-install: lib python-wheel python-deps
	$(PYTHON) -m pytest -q $(PYTHON_DIR)/install_tests $(PYTEST_ARGS)

bench-python: dist
	LOADSTATE_LIBRARY=$(abspath $(DIST_LIB)) $(PYTHON) bench/python_loads.py $(BENCH_PYTHON_ARGS)

bench-python-peers: dist
	LOADSTATE_LIBRARY=$(abspath $(DIST_LIB)) $(PYTHON) bench/python_peers.py --setup $(BENCH_PEERS_ARGS)

TEST_TARGETS += test-python test-python-install
