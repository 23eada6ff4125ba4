# The Swift GUI example: examples/swift-gtk, a package of its own (it needs
# GTK's development files, which the library does not) that depends on this
# one by path, as an application would. A GTK 4 window whose label follows a
# LoadableCell's states on the main actor, which GLib's loop runs.
#
#   make swift-gtk-example   build it (examples/swift-gtk/.build/debug/LoadstateGTK)
#   make test-gui-swift      run it scripted under Xvfb (xvfb-run): load, supersede,
#                            cancel, an interrupt, an error, the window closed
#                            mid-load; compare the printed states with
#                            Tests/gui/swift-gtk.expected (part of `make test`)

SWIFT_GTK_DIR := examples/swift-gtk
SWIFT_GTK_DEB_PACKAGES := libgtk-4-dev xvfb xauth

.PHONY: swift-gtk-example test-gui-swift
TEST_TARGETS += test-gui-swift

swift-gtk-example:
	$(call deb_install,$(SWIFT_GTK_DEB_PACKAGES))
	@# SwiftPM warns that pkg-config's gtk4 flags include -pthread, which it
	@# leaves out (Swift links the thread library anyway): that line is dropped.
	@mkdir -p build
	@echo "$(SWIFT) build --package-path $(SWIFT_GTK_DIR) $(SWIFT_DEBUG_FLAGS)"
	@$(SWIFT) build --package-path $(SWIFT_GTK_DIR) $(SWIFT_DEBUG_FLAGS) >build/swift-gtk.log 2>&1; rc=$$?; \
	  grep -v "warning: prohibited flag(s)" build/swift-gtk.log; exit $$rc

test-gui-swift: swift-gtk-example
	Tests/gui/run-swift-gtk.sh $(SWIFT_GTK_DIR)/.build/debug/LoadstateGTK
