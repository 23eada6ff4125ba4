# loadstate — build, test, demo, dist, bench.
# `make demo` and `make test` install what they need on a fresh Debian machine.

SWIFT      ?= swift
CC         ?= cc
BUILD      := .build/debug
LIB        := $(BUILD)/libloadstate.so
CFLAGS     += -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude -D_GNU_SOURCE
LDLIBS_C   := -L$(BUILD) -lloadstate -Wl,-rpath,$(abspath $(BUILD)) -lpthread
OUT        := build

.PHONY: all deps lib release dist demo test test-swift test-c test-valgrind test-tsan \
        test-python test-rust bench clean

all: lib

# Debian packages the build needs; installed only when missing.
DEB_PACKAGES := libuv1-dev valgrind
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

lib: deps
	$(SWIFT) build --product loadstate

clean:
	rm -rf .build $(OUT)
