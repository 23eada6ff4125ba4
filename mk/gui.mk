# GUI examples: the GTK 4 example in C (examples/gtk), built only where
# GTK's development files are (pkg-config gtk4; Debian libgtk-4-dev).
#
#   make gtk-example    build build/gtk/loadstate-gtk (against the debug library)
#   make test-gui-gtk   run it scripted under Xvfb (xvfb-run, Debian xvfb): load,
#                       load again and cancel, close; once in the safe order and
#                       once freeing the runtime before removing the watch; compare
#                       the printed states with Tests/gui/gtk*.expected
#
# Not part of `make test` yet (see TEST_TARGETS).

GTK_EXAMPLE := build/gtk/loadstate-gtk
HAVE_GTK4   := $(shell pkg-config --exists gtk4 2>/dev/null && echo yes)

.PHONY: gtk-example test-gui-gtk

ifeq ($(HAVE_GTK4),yes)
gtk-example: $(GTK_EXAMPLE)

$(GTK_EXAMPLE): examples/gtk/loadstate-gtk.c include/loadstate.h lib
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(shell pkg-config --cflags gtk4) -o $@ $< $(LDLIBS_C) $(shell pkg-config --libs gtk4)

test-gui-gtk: $(GTK_EXAMPLE)
	@command -v xvfb-run >/dev/null || { echo "test-gui-gtk: xvfb-run not found (Debian xvfb)"; exit 1; }
	Tests/gui/run-gtk.sh $(GTK_EXAMPLE)
else
gtk-example test-gui-gtk:
	@echo "$@: GTK 4 development files not found (pkg-config gtk4; Debian libgtk-4-dev)"; exit 1
endif
