# The documentation site: docs/ (MyST Markdown, Sphinx, the furo theme) in
# build/site/html, with the references made from the sources.
#
#   make docs        the site: the guide and language pages, the C reference
#                    read from include/loadstate.h (docs/_ext/c_header.py), the
#                    Python reference from the docstrings (autodoc), rustdoc of
#                    bindings/rust in api/rust and DocC of the Swift module in
#                    api/swift (make docs-swift, mk/api.mk); any warning fails
#   make test-docs   make docs, then: every code example the guide shows runs
#                    (Tests/docs/run_examples.py), every internal link of the
#                    site resolves, the C and Python references are complete,
#                    and headless Chromium renders and searches the site
#
# Sphinx, MyST and furo are Debian's packages, run by Debian's python3
# (/usr/bin/python3); the python3 on PATH may be another one.

SITE             := $(OUT)/site/html
SPHINX_BUILD     ?= /usr/bin/sphinx-build
DOCS_DEB_PACKAGES := python3-sphinx python3-myst-parser furo graphviz
# test-docs opens the site in headless Chromium.
DOCS_TEST_DEB_PACKAGES := chromium
# Importing the Python package (for its reference) loads the library.
DOCS_ENV         := LOADSTATE_LIBRARY=$(abspath $(LIB))
DOCS_TEST_ARGS   ?=

.PHONY: docs docs-deps docs-site docs-rust test-docs

docs-deps:
	$(call deb_install,$(DOCS_DEB_PACKAGES))

# -E: every page is read again, so that every warning is seen on every build.
# The site's folder is emptied first, but for the API archives beside it.
docs-site: docs-deps lib
	@mkdir -p $(SITE) && find $(SITE) -mindepth 1 -maxdepth 1 ! -name api -exec rm -rf {} +
	$(DOCS_ENV) $(SPHINX_BUILD) -E -W --keep-going -n -q -b html -d $(OUT)/site/doctrees docs $(SITE)

docs-rust: lib
	@command -v $(CARGO) >/dev/null || { echo "docs-rust: cargo not found (Rust 1.85 or newer is needed)"; exit 1; }
	cd $(RUST_DIR) && $(RUST_ENV) RUSTDOCFLAGS="-D warnings" $(CARGO) doc --offline --no-deps --quiet \
	  --target-dir $(abspath $(OUT))/rustdoc
	@rm -rf $(SITE)/api/rust && mkdir -p $(SITE)/api && cp -r $(OUT)/rustdoc/doc $(SITE)/api/rust

docs: docs-site docs-rust docs-swift
	@echo "docs: $(abspath $(SITE))/index.html (serve the folder, e.g. python3 -m http.server -d $(SITE))"

test-docs: docs
	$(call deb_install,$(DOCS_TEST_DEB_PACKAGES))
	python3 Tests/docs/run_examples.py
	$(DOCS_ENV) python3 -m pytest -q -p no:cacheprovider Tests/docs $(DOCS_TEST_ARGS)

TEST_TARGETS += test-docs
