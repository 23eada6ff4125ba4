/* GTK 4 and GLib's Unix descriptor sources, for Swift. */
#include <gtk/gtk.h>
#include <glib-unix.h>
