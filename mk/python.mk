# The Python binding (bindings/python): its pytest suite, the copy of the
# library it can ship, and its benchmark.
#
#   make test-python    python3 -m pytest -q bindings/python/tests against the debug libloadstate.so
#   make python-dist    copies dist/libloadstate.so into the package (loadstate/_lib/) for pip install
#   make bench-python   bench/python_loads.py against dist/libloadstate.so; BENCH_PYTHON_ARGS="-n 100000"
#
# PYTEST_ARGS is passed to pytest, e.g. make test-python PYTEST_ARGS="-k cancel"
# The package needs nothing but the standard library; the tests need pytest
# and hypothesis, installed from PyPI for this python3 when it cannot import them.

PYTHON            ?= python3
PYTHON_DIR        := bindings/python
PYTHON_LIB_DIR    := $(PYTHON_DIR)/loadstate/_lib
PYTEST_ARGS       ?=
BENCH_PYTHON_ARGS ?=

.PHONY: test-python python-deps python-dist bench-python

python-deps: deps
	@$(PYTHON) -c 'import pytest, hypothesis' 2>/dev/null || { \
	  echo "installing: pytest hypothesis"; \
	  $(PYTHON) -m pip install -q pytest hypothesis; }

# pytest exits with 5 when it collected no test; that is a failure here.
test-python: lib python-deps
	@echo "LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q $(PYTHON_DIR)/tests $(PYTEST_ARGS)"
	@LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q $(PYTHON_DIR)/tests $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test-python: pytest collected no tests"; exit 1; fi; exit $$rc

python-dist: dist
	@mkdir -p $(PYTHON_LIB_DIR)
	cp $(DIST_LIB) $(PYTHON_LIB_DIR)/libloadstate.so

bench-python: dist
	LOADSTATE_LIBRARY=$(abspath $(DIST_LIB)) $(PYTHON) bench/python_loads.py $(BENCH_PYTHON_ARGS)

TEST_TARGETS += test-python
