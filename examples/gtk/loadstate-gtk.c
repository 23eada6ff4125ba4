/* loadstate-gtk.c — a GTK 4 window driven by a POLL-mode runtime.
 *
 * The runtime delivers its callbacks through a descriptor that GLib
 * watches (g_unix_fd_add): every callback runs on the GTK main thread,
 * where widgets may be touched. The buttons run commands through an exec
 * loader, whose standard output is the value:
 *
 *   Load       a quick command
 *   Load slow  a command that takes seconds: after INTERRUPT_MS the load's
 *              interrupt (lds_load_options.interrupts_ms) says it takes
 *              longer than expected
 *   Fail       a command that exits non-zero: the label shows its error
 *   Cancel     cancels the running load; the value before it comes back
 *
 * The label shows the cell's state; the line under it the command of the
 * load the state belongs to, read back from the event's request with
 * lds_exec_request_decode.
 *
 * The end of the runtime follows the safe order: remove the watch
 * (g_source_remove), free the runtime, then close the descriptor, which
 * the runtime leaves open because it was made with LDS_RUNTIME_KEEP_FD.
 *
 * LOADSTATE_GTK_SCRIPT in the environment makes the window press its own
 * buttons (see script_next) and print each state it shows:
 *   1               every state, then 10 s idle with the runtime alive,
 *                   measuring the process's CPU time (getrusage), then a
 *                   slow load and closing the window while it runs (the
 *                   free must end and reap the command); checks that every
 *                   callback ran on the main thread; exits 0 when all went
 *                   as expected
 *   forget-unwatch  the same without the idle time, but the runtime is
 *                   freed before its watch is removed (the mistake): the
 *                   watch must then not be called (the descriptor stays
 *                   open and quiet)
 *   screenshots     the same as forget-unwatch in the safe order, saving a
 *                   PNG of the window in each state into the folder
 *                   LOADSTATE_GTK_SHOTS (gtk-<state>.png) */
#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <gtk/gtk.h>
#include <loadstate.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define INTERRUPT_MS 1000   /* a load running this long says so */
#define IDLE_S 10           /* scripted: seconds of idle time measured */
#define IDLE_CPU_MAX_S 0.05 /* scripted: the most CPU time those may take */

/* The commands the buttons run. */
static const char *const quick_cmd[] = {"echo", "3 new messages", NULL};
static const char *const slow_cmd[] = {"sh", "-c", "sleep 5; echo 5 new messages", NULL};
static const char *const fail_cmd[] = {"sh", "-c", "echo 'mail server unreachable' >&2; exit 2", NULL};

typedef struct app {
  lds_runtime *rt;
  lds_id exec, cell;
  int fd;
  guint watch; /* the g_unix_fd_add source; 0 once removed */
  GtkWidget *window, *label, *command, *cancel;
  GtkWidget *load, *load_slow, *fail;
  pthread_t main_thread;
  unsigned off_main;  /* callbacks that ran on another thread */
  unsigned callbacks; /* callbacks that ran */
  /* The script (LOADSTATE_GTK_SCRIPT). */
  bool scripted, forget_unwatch, idle, screenshots;
  const char *shots_dir;
  const char *shot;      /* the picture to take once the window has painted */
  GSourceFunc after;     /* the script's next press, once that picture is taken */
  unsigned fd_calls;     /* calls of the watch */
  int step;
  bool done;
  int exit_code;
} app;

static void on_main_thread(app *a) {
  a->callbacks++;
  if (!pthread_equal(pthread_self(), a->main_thread)) a->off_main++;
}

/* The runtime's descriptor is readable: run the pending callbacks here. */
static gboolean on_fd(gint fd, GIOCondition condition, gpointer data) {
  (void)fd;
  (void)condition;
  app *a = data;
  on_main_thread(a);
  a->fd_calls++;
  if (a->rt) lds_runtime_dispatch(a->rt, 0);
  return G_SOURCE_CONTINUE;
}

/* The command of an exec request, as a shell would show it: "" when the
 * event carries none. */
static void describe_request(const lds_event *e, char *out, size_t size) {
  out[0] = '\0';
  lds_exec_request req;
  if (!e->request || lds_exec_request_decode(e->request, e->request_len, &req) != LDS_OK) return;
  size_t used = 0;
  for (size_t i = 0; req.argv[i] && used < size; i++) {
    const char *arg = req.argv[i];
    const char *quote = !strpbrk(arg, " ;'>&$") ? "" : strchr(arg, '\'') ? "\"" : "'";
    int n = snprintf(out + used, size - used, "%s%s%s%s", i ? " " : "", quote, arg, quote);
    if (n > 0) used += (size_t)n;
  }
  lds_exec_request_clear(&req);
}

static void script_next(app *a, const lds_event *e);

/* The cell's callback: show its state and the command it belongs to. */
static void on_event(const lds_event *e, void *user_data) {
  app *a = user_data;
  on_main_thread(a);
  char text[300], command[300];
  if (e->type == LDS_EVENT_INTERRUPT) {
    snprintf(text, sizeof text, "loading... this takes longer than expected");
  } else if (e->type != LDS_EVENT_STATE) {
    return;
  } else if (e->status == LDS_ABSENT) {
    snprintf(text, sizeof text, "nothing loaded%s", (e->flags & LDS_FLAG_CANCELLED) ? " (load cancelled)" : "");
  } else if (e->status == LDS_LOADING) {
    snprintf(text, sizeof text, "loading...");
  } else if (e->status == LDS_LOADED) {
    int len = (int)e->value_len;
    if (len > 0 && ((const char *)e->value)[len - 1] == '\n') len--; /* echo's newline */
    snprintf(text, sizeof text, "loaded: %.*s%s", len, (const char *)e->value,
             (e->flags & LDS_FLAG_CANCELLED) ? " (load cancelled)" : "");
  } else {
    const char *message = e->error_message ? e->error_message : lds_strerror(e->error_code);
    int len = (int)strcspn(message, "\n");
    if (e->error_domain == LDS_DOMAIN_EXIT)
      snprintf(text, sizeof text, "error: %.*s (exit status %d)", len, message, e->error_code);
    else
      snprintf(text, sizeof text, "error: %.*s", len, message);
  }
  describe_request(e, command, sizeof command);
  gtk_label_set_text(GTK_LABEL(a->label), text);
  gtk_label_set_text(GTK_LABEL(a->command), command);
  gtk_widget_set_sensitive(a->cancel, e->status == LDS_LOADING);
  if (a->scripted) {
    printf("state: %s%s%s\n", text, command[0] ? " | " : "", command);
    fflush(stdout);
    script_next(a, e);
  }
}

/* Runs argv in the cell; a load still running is superseded. */
static void load(app *a, const char *const *argv) {
  lds_exec_request req = LDS_EXEC_REQUEST_INIT;
  req.argv = argv;
  void *encoded;
  size_t len;
  int rc = lds_exec_request_encode(&req, &encoded, &len);
  if (rc == LDS_OK) {
    static const uint32_t interrupts[] = {INTERRUPT_MS};
    lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
    opts.interrupts_ms = interrupts;
    opts.interrupt_count = 1;
    rc = lds_loadable_load(a->rt, a->cell, a->exec, encoded, len, &opts);
    lds_free(encoded); /* the load copied it */
  }
  if (rc != LDS_OK) fprintf(stderr, "load: %s\n", lds_strerror(rc));
}

static void on_load(GtkButton *button, gpointer data) {
  (void)button;
  load(data, quick_cmd);
}

static void on_load_slow(GtkButton *button, gpointer data) {
  (void)button;
  load(data, slow_cmd);
}

static void on_fail(GtkButton *button, gpointer data) {
  (void)button;
  load(data, fail_cmd);
}

static void on_cancel(GtkButton *button, gpointer data) {
  (void)button;
  app *a = data;
  int rc = lds_loadable_cancel(a->rt, a->cell);
  if (rc != LDS_OK) fprintf(stderr, "cancel: %s\n", lds_strerror(rc));
}

/* Whether a descriptor is still open and has nothing to read. */
static bool open_and_quiet(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return fcntl(fd, F_GETFD) >= 0 && poll(&p, 1, 50) == 0;
}

static gboolean set_flag(gpointer data) {
  *(bool *)data = true;
  return G_SOURCE_REMOVE;
}

/* Runs the main loop for ms milliseconds. */
static void run_main_loop_for(unsigned ms) {
  bool elapsed = false;
  g_timeout_add(ms, set_flag, &elapsed);
  while (!elapsed) g_main_context_iteration(NULL, TRUE);
}

/* The mistake, on purpose (LOADSTATE_GTK_SCRIPT=forget-unwatch): the
 * runtime was freed with the watch still there. With LDS_RUNTIME_KEEP_FD
 * the descriptor is open and quiet, so the watch is not called (a closed
 * one would be reported ready on every iteration). */
static void check_forgotten_watch(app *a) {
  unsigned before = a->fd_calls;
  run_main_loop_for(200);
  printf("watch calls in 200 ms after the free: %u\n", a->fd_calls - before);
  if (a->fd_calls != before) a->exit_code = 1;
  g_source_remove(a->watch);
  a->watch = 0;
}

/* The window closed while a command ran: the free must have ended and
 * reaped it (no child of this process is left), left the descriptor open
 * and quiet, and every callback must have run on the main thread. */
static void report_close(app *a, int free_rc, bool quiet, gint64 free_us) {
  bool no_child = waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD;
  fprintf(stderr, "lds_runtime_free with a command running: %.1f ms\n", free_us / 1000.0);
  printf("closed: free %s, descriptor %s, %s\n", free_rc == LDS_OK ? "ok" : lds_strerror(free_rc),
         quiet ? "open and quiet" : "NOT open and quiet", no_child ? "no child left" : "a child LEFT");
  printf("callbacks off the main thread: %u\n", a->off_main);
  if (free_rc != LDS_OK || !quiet || !no_child || a->off_main != 0 || a->callbacks == 0) a->exit_code = 1;
}

/* The window closes: stop watching, free the runtime, close the descriptor. */
static gboolean on_close(GtkWindow *window, gpointer data) {
  (void)window;
  app *a = data;
  if (!a->forget_unwatch) {
    g_source_remove(a->watch); /* first: nothing may watch a descriptor about to go */
    a->watch = 0;
  }
  gint64 start = g_get_monotonic_time();
  int rc = lds_runtime_free(a->rt); /* a running command is killed and reaped */
  gint64 free_us = g_get_monotonic_time() - start;
  a->rt = NULL;
  if (a->forget_unwatch) check_forgotten_watch(a);
  /* LDS_RUNTIME_KEEP_FD: the descriptor is ours now, open and never readable. */
  bool quiet = open_and_quiet(a->fd);
  close(a->fd);
  if (a->scripted) report_close(a, rc, quiet, free_us);
  a->done = true;
  return FALSE; /* let the window close */
}

/* ---- The script (LOADSTATE_GTK_SCRIPT) ---- */

/* A press emits "clicked" as a click does (gtk_widget_activate would emit
 * it only after the button's 250 ms activation animation). */
static void press(GtkWidget *button) {
  if (gtk_widget_get_sensitive(button)) g_signal_emit_by_name(button, "clicked");
}

static gboolean press_load(gpointer data) {
  press(((app *)data)->load);
  return G_SOURCE_REMOVE;
}

static gboolean press_load_slow(gpointer data) {
  press(((app *)data)->load_slow);
  return G_SOURCE_REMOVE;
}

static gboolean press_fail(gpointer data) {
  press(((app *)data)->fail);
  return G_SOURCE_REMOVE;
}

static gboolean press_cancel(gpointer data) {
  press(((app *)data)->cancel);
  return G_SOURCE_REMOVE;
}

static gboolean press_close(gpointer data) {
  gtk_window_close(GTK_WINDOW(((app *)data)->window));
  return G_SOURCE_REMOVE;
}

/* Idle time with the runtime alive: the process's CPU time over IDLE_S
 * seconds of the main loop, then the next step. */
static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static gboolean idle_then_load_slow(gpointer data) {
  app *a = data;
  double before = cpu_seconds();
  run_main_loop_for(IDLE_S * 1000);
  double used = cpu_seconds() - before;
  fprintf(stderr, "idle CPU time over %d s: %.3f s\n", IDLE_S, used);
  if (used <= IDLE_CPU_MAX_S) {
    printf("idle %d s: CPU time under %.2f s\n", IDLE_S, IDLE_CPU_MAX_S);
  } else {
    printf("idle %d s: CPU time %.3f s, over %.2f s\n", IDLE_S, used, IDLE_CPU_MAX_S);
    a->exit_code = 1;
  }
  return press_load_slow(a);
}

/* Saves the window as it is painted into shots_dir/gtk-<name>.png. */
static void save_window(app *a, const char *name) {
  int w = gtk_widget_get_width(a->window), h = gtk_widget_get_height(a->window);
  GdkPaintable *paintable = gtk_widget_paintable_new(a->window);
  GtkSnapshot *snapshot = gtk_snapshot_new();
  gdk_paintable_snapshot(paintable, snapshot, w, h);
  GskRenderNode *node = gtk_snapshot_free_to_node(snapshot);
  GskRenderer *renderer = gtk_native_get_renderer(GTK_NATIVE(a->window));
  GdkTexture *texture = gsk_renderer_render_texture(renderer, node, &GRAPHENE_RECT_INIT(0, 0, w, h));
  char *path = g_strdup_printf("%s/gtk-%s.png", a->shots_dir, name);
  if (!gdk_texture_save_to_png(texture, path)) {
    fprintf(stderr, "could not save %s\n", path);
    a->exit_code = 1;
  }
  g_free(path);
  g_object_unref(texture);
  gsk_render_node_unref(node);
  g_object_unref(paintable);
}

static void after_paint(GdkFrameClock *clock, gpointer data) {
  app *a = data;
  g_signal_handlers_disconnect_by_func(clock, after_paint, a);
  save_window(a, a->shot);
  a->shot = NULL;
  if (a->after) g_idle_add(a->after, a);
  a->after = NULL;
}

/* Takes the picture named shot (screenshots mode) once the window shows
 * the new state, then does the script's next press; without screenshots,
 * the press alone. */
static void then(app *a, const char *shot, GSourceFunc next) {
  if (a->screenshots && shot) {
    a->shot = shot;
    a->after = next;
    g_signal_connect(gtk_widget_get_frame_clock(a->window), "after-paint", G_CALLBACK(after_paint), a);
    gtk_widget_queue_draw(a->window);
  } else if (next) {
    g_idle_add(next, a);
  }
}

/* Each step presses a button once the state it waits for shows:
 *  0  (nothing loaded) Load                  -> loading, loaded
 *  2  Load slow, and Load while it runs      -> loading, loading, loaded (superseded)
 *  4  Load slow, Cancel after its interrupt  -> loading, interrupt, loaded (cancelled)
 *  7  Fail                                   -> loading, error
 *  9  (idle 10 s, mode 1) Load slow, close the window while it runs */
static void script_next(app *a, const lds_event *e) {
  bool state = e->type == LDS_EVENT_STATE;
  bool loading = state && e->status == LDS_LOADING, settled = state && !loading;
  bool interrupt = e->type == LDS_EVENT_INTERRUPT;
  switch (a->step) {
  case 0: if (loading) a->step = 1; break;
  case 1: if (settled) { a->step = 2; then(a, "loaded", press_load_slow); } break;
  case 2: if (loading) { a->step = 3; then(a, NULL, press_load); } break;
  case 3: if (settled) { a->step = 4; then(a, NULL, press_load_slow); } break;
  case 4: if (loading) { a->step = 5; then(a, "loading", NULL); } break;
  case 5: if (interrupt) { a->step = 6; then(a, "interrupt", press_cancel); } break;
  case 6: if (settled) { a->step = 7; then(a, "cancelled", press_fail); } break;
  case 7: if (settled) { a->step = 8; then(a, "error", a->idle ? idle_then_load_slow : press_load_slow); } break;
  case 8: if (loading) { a->step = 9; then(a, NULL, press_close); } break;
  }
}

static gboolean script_timeout(gpointer data) {
  app *a = data;
  fprintf(stderr, "script: stuck at step %d\n", a->step);
  a->exit_code = 1;
  gtk_window_close(GTK_WINDOW(a->window));
  return G_SOURCE_REMOVE;
}

static gboolean script_start(gpointer data) {
  app *a = data;
  printf("state: nothing loaded\n");
  then(a, "nothing-loaded", press_load);
  return G_SOURCE_REMOVE;
}

static GtkWidget *button(app *a, const char *label, GCallback on_clicked, GtkWidget *row) {
  GtkWidget *b = gtk_button_new_with_label(label);
  g_signal_connect(b, "clicked", on_clicked, a);
  gtk_box_append(GTK_BOX(row), b);
  return b;
}

int main(void) {
  app a = {.main_thread = pthread_self()};
  const char *script = getenv("LOADSTATE_GTK_SCRIPT");
  if (script) {
    a.idle = strcmp(script, "1") == 0;
    a.forget_unwatch = strcmp(script, "forget-unwatch") == 0;
    a.screenshots = strcmp(script, "screenshots") == 0;
    a.scripted = a.idle || a.forget_unwatch || a.screenshots;
    a.shots_dir = getenv("LOADSTATE_GTK_SHOTS") ? getenv("LOADSTATE_GTK_SHOTS") : ".";
  }
  gtk_init();

  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.delivery = LDS_DELIVER_POLL;
  opts.flags = LDS_RUNTIME_KEEP_FD;
  int rc = lds_runtime_new(&opts, &a.rt);
  if (rc != LDS_OK) {
    fprintf(stderr, "lds_runtime_new: %s\n", lds_strerror(rc));
    return 1;
  }
  lds_exec_loader_new(a.rt, NULL, &a.exec);
  lds_loadable_new(a.rt, on_event, &a, &a.cell);
  a.fd = lds_runtime_fd(a.rt);
  a.watch = g_unix_fd_add(a.fd, G_IO_IN, on_fd, &a);

  a.window = gtk_window_new();
  gtk_window_set_title(GTK_WINDOW(a.window), "loadstate");
  gtk_window_set_titlebar(GTK_WINDOW(a.window), gtk_header_bar_new());
  gtk_window_set_default_size(GTK_WINDOW(a.window), 460, -1);
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_top(box, 12);
  gtk_widget_set_margin_bottom(box, 12);
  gtk_widget_set_margin_start(box, 12);
  gtk_widget_set_margin_end(box, 12);
  a.label = gtk_label_new("nothing loaded");
  gtk_label_set_xalign(GTK_LABEL(a.label), 0);
  a.command = gtk_label_new("");
  gtk_label_set_xalign(GTK_LABEL(a.command), 0);
  gtk_widget_add_css_class(a.command, "dim-label");
  gtk_widget_add_css_class(a.command, "monospace");
  GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
  a.load = button(&a, "Load", G_CALLBACK(on_load), row);
  a.load_slow = button(&a, "Load slow", G_CALLBACK(on_load_slow), row);
  a.fail = button(&a, "Fail", G_CALLBACK(on_fail), row);
  a.cancel = button(&a, "Cancel", G_CALLBACK(on_cancel), row);
  gtk_widget_set_sensitive(a.cancel, FALSE);
  gtk_box_append(GTK_BOX(box), a.label);
  gtk_box_append(GTK_BOX(box), a.command);
  gtk_box_append(GTK_BOX(box), row);
  gtk_window_set_child(GTK_WINDOW(a.window), box);
  g_signal_connect(a.window, "close-request", G_CALLBACK(on_close), &a);
  gtk_window_present(GTK_WINDOW(a.window));

  guint stuck = 0;
  if (a.scripted) {
    g_timeout_add(100, script_start, &a);
    stuck = g_timeout_add_seconds(30 + (a.idle ? IDLE_S : 0), script_timeout, &a);
  }
  while (!a.done) g_main_context_iteration(NULL, TRUE);
  if (stuck && a.step == 9 && a.exit_code == 0) g_source_remove(stuck);
  return a.exit_code;
}
