# The Rust binding (bindings/rust): cargo test and the example, run against
# the debug libloadstate.so. LOADSTATE_LIB_DIR wins over pkg-config in
# build.rs, so this is the library tested even where loadstate is installed
# system-wide; the example's binary is checked to load it.
#
#   make test-rust        cargo test (unit, integration and README doc tests), examples/tour.rs, then
#                         cargo clippy --all-targets with clippy::pedantic, warnings as errors (when the
#                         toolchain has clippy; each lint the crate allows says why where it is allowed)
#
# RUST_TEST_ARGS is passed to cargo test, e.g. make test-rust RUST_TEST_ARGS=drop_order
# The crate has no dependencies, so cargo runs offline. cargo (Rust 1.85 or
# newer) comes with the machine; Debian's own cargo package is too old for
# the crate (edition 2024).

RUST_DIR       := bindings/rust
CARGO          ?= $(shell command -v cargo 2>/dev/null || echo $(HOME)/.cargo/bin/cargo)
RUST_ENV       := LOADSTATE_LIB_DIR=$(abspath $(BUILD))
RUST_TEST_ARGS ?=
# The Redis cache's tests start Debian's redis-server (tests/common/redis_server.rs
# installs it too when cargo test runs without make).
DEB_PACKAGES += redis-server

.PHONY: test-rust

test-rust: lib
	@command -v $(CARGO) >/dev/null || { echo "test-rust: cargo not found (Rust 1.85 or newer is needed)"; exit 1; }
	cd $(RUST_DIR) && $(RUST_ENV) $(CARGO) test --offline $(RUST_TEST_ARGS)
	cd $(RUST_DIR) && $(RUST_ENV) $(CARGO) build --offline --quiet --example tour
	@ldd $(RUST_DIR)/target/debug/examples/tour | grep -q ' => $(abspath $(LIB)) ' || \
	  { echo "test-rust: the crate does not load $(abspath $(LIB))"; exit 1; }
	cd $(RUST_DIR) && $(RUST_ENV) $(CARGO) run --offline --quiet --example tour
	@if $(CARGO) clippy --version >/dev/null 2>&1; then \
	  cd $(RUST_DIR) && $(RUST_ENV) $(CARGO) clippy --offline --quiet --all-targets -- -D warnings -W clippy::pedantic \
	  && echo "test-rust: clippy::pedantic: no warning"; \
	else echo "test-rust: clippy is not installed: clippy::pedantic not checked"; fi

TEST_TARGETS += test-rust
