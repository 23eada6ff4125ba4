# The public API of the Swift module Loadstate, checked in as
# Tests/api/Loadstate.api: one line per public declaration, from the symbol
# graph the compiler emits for the built module. A change of public API is
# a visible diff of that file.
#
#   make api        regenerate Tests/api/Loadstate.api after a deliberate API change
#   make test-api   fail when the module's public API differs from the listing,
#                   or when a public declaration has no documentation comment
#   make docs       the DocC documentation of Loadstate in build/docs, built by the
#                   toolchain's docc from the same symbol graph; any warning fails
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

.PHONY: api test-api api-symbols docs docs-only

api-symbols:
	$(SWIFT) build --target Loadstate
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
	$(MAKE) --no-print-directory docs-only

docs: api-symbols docs-only

docs-only:
	@rm -rf $(OUT)/docs
	$(DOCC) convert --additional-symbol-graph-dir $(API_SYMBOLS) --fallback-display-name Loadstate \
	  --fallback-bundle-identifier org.loadstate.Loadstate --output-path $(OUT)/docs --analyze --warnings-as-errors
	@echo "docs: $(OUT)/docs, no warning"

TEST_TARGETS += test-api
