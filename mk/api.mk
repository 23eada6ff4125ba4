# The public API of the Swift module Loadstate, checked in as
# Tests/api/Loadstate.api: one line per public declaration, from the symbol
# graph the compiler emits for the built module. A change of public API is
# a visible diff of that file.
#
#   make api        regenerate Tests/api/Loadstate.api after a deliberate API change
#   make test-api   fail when the module's public API differs from the listing,
#                   or when a public declaration has no documentation comment
#   make docs-swift the DocC documentation of Loadstate, built by the toolchain's
#                   docc from the same symbol graph (any warning fails), for the
#                   documentation site: build/site/html/api/swift (mk/docs.mk);
#                   make test-docs builds it, so that check runs once per make test
#
# The symbol graph holds public declarations only; those under
# @_spi(LoadstateC), what the C export module reaches, are left out with
# the package ones. (The swift-docc-plugin package, for `swift package
# generate-documentation`, is not a dependency: docc itself is in the
# toolchain.)

API_LISTING := Tests/api/Loadstate.api
API_SYMBOLS := $(OUT)/api
SYMBOLGRAPH ?= $(SWIFT)-symbolgraph-extract
DOCC        ?= $(dir $(shell command -v $(SWIFT)))docc

.PHONY: api test-api api-symbols docs-swift

api-symbols:
	$(SWIFT) build --target Loadstate $(SWIFT_DEBUG_FLAGS)
	@rm -rf $(API_SYMBOLS) && mkdir -p $(API_SYMBOLS)
	$(SYMBOLGRAPH) -module-name Loadstate -I $(BUILD)/Modules -I Sources/CLibUV -I Sources/CCurl \
	  -I Sources/CSQLite -I Sources/CHiredis -target $$($(SWIFT) -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["target"]["triple"])') \
	  -minimum-access-level public -output-dir $(API_SYMBOLS)

api: api-symbols
	python3 Tests/api/api_listing.py $(API_SYMBOLS)/Loadstate.symbols.json > $(API_LISTING)
	@echo "wrote $(API_LISTING)"

test-api: api-symbols
	@python3 Tests/api/api_listing.py $(API_SYMBOLS)/Loadstate.symbols.json | diff -u $(API_LISTING) - \
	  || { echo "test-api: the public API differs from $(API_LISTING) (make api to accept it)"; exit 1; }
	@python3 Tests/api/api_listing.py $(API_SYMBOLS)/Loadstate.symbols.json --undocumented \
	  || { echo "test-api: public declarations without a documentation comment (above)"; exit 1; }
	@echo "test-api: the public API matches $(API_LISTING), every declaration documented"

# A static-hosting archive whose pages expect to be served at
# $(DOCS_BASE_PATH)api/swift/ (DOCS_BASE_PATH: where the site is hosted,
# empty for the root of a server, "loadstate/" under a sub-path).
DOCS_BASE_PATH ?=
docs-swift: api-symbols
	@rm -rf $(OUT)/docs-swift
	$(DOCC) convert --additional-symbol-graph-dir $(API_SYMBOLS) --fallback-display-name Loadstate \
	  --fallback-bundle-identifier org.loadstate.Loadstate --output-path $(OUT)/docs-swift --analyze --warnings-as-errors \
	  --transform-for-static-hosting --hosting-base-path $(DOCS_BASE_PATH)api/swift
	@rm -rf $(SITE)/api/swift && mkdir -p $(SITE)/api && cp -r $(OUT)/docs-swift $(SITE)/api/swift
	@echo "docs-swift: $(SITE)/api/swift, no warning"

TEST_TARGETS += test-api
