# GUI examples: the GTK 4 example in C (examples/gtk), a window whose
# buttons run commands through an exec loader in a POLL-mode runtime.
#
#   make gtk-example          build build/gtk/loadstate-gtk (against the debug library)
#   make test-gui-gtk         run it scripted under Xvfb (Tests/gui/run-gtk.sh): load, load
#                             again while loading, an interrupt then cancel, an error, 10 s
#                             idle whose CPU time must stay under 0.05 s, closing the window
#                             mid-load (the command killed and reaped), every callback on the
#                             main thread; once in the safe order and once freeing the
#                             runtime before removing the watch (which must then not be
#                             called); the printed states must be Tests/gui/gtk*.expected.
#                             About 16 s, 10 of them the idle time.
#   make gui-screenshots-gtk  save a PNG of the window in each state into docs/images/gui
#                             (gtk-<state>.png, committed; make test does not make them again)
#
# Each installs what it needs when missing (Debian: GTK 4's development
# files, Xvfb and xauth for xvfb-run). test-gui-gtk is part of make test.

GTK_EXAMPLE      := build/gtk/loadstate-gtk
GTK_DEB_PACKAGES := libgtk-4-dev pkg-config xvfb xauth
GTK_SHOTS_DIR    := docs/images/gui

TEST_TARGETS += test-gui-gtk

.PHONY: gtk-deps gtk-example test-gui-gtk gui-screenshots-gtk

gtk-deps:
	$(call deb_install,$(GTK_DEB_PACKAGES))

gtk-example: gtk-deps lib
	@mkdir -p $(dir $(GTK_EXAMPLE))
	$(CC) $(CFLAGS) $$(pkg-config --cflags gtk4) -o $(GTK_EXAMPLE) examples/gtk/loadstate-gtk.c \
	  $(LDLIBS_C) $$(pkg-config --libs gtk4)

test-gui-gtk: gtk-example
	Tests/gui/run-gtk.sh $(GTK_EXAMPLE)

# GTK renders the window itself (gtk_widget_paintable_new, then the
# window's renderer into a texture saved as PNG); the cairo renderer draws
# the same pixels on every machine with the same fonts, where GL under Xvfb
# would go through software GL.
gui-screenshots-gtk: gtk-example
	@mkdir -p $(GTK_SHOTS_DIR)
	LOADSTATE_GTK_SCRIPT=screenshots LOADSTATE_GTK_SHOTS=$(GTK_SHOTS_DIR) GSK_RENDERER=cairo \
	  xvfb-run -a $(GTK_EXAMPLE) >/dev/null 2>$(OUT)/gtk-screenshots.log || { cat $(OUT)/gtk-screenshots.log; exit 1; }
	@ls -l $(GTK_SHOTS_DIR)/gtk-*.png
