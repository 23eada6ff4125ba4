/* loadstate-gtk.c — a GTK 4 window driven by a POLL-mode runtime.
 *
 * The runtime delivers its callbacks through a descriptor that GLib
 * watches (g_unix_fd_add): every callback runs on the GTK main thread,
 * where widgets may be touched. "Load" starts a load that a timer answers
 * after LOAD_MS; "Cancel" cancels it; the label shows the cell's state.
 *
 * The end of the runtime follows the safe order: remove the watch
 * (g_source_remove), free the runtime, then close the descriptor, which
 * the runtime leaves open because it was made with LDS_RUNTIME_KEEP_FD.
 *
 * With LOADSTATE_GTK_SCRIPT=1 in the environment the window presses its
 * own buttons (load, wait for the value, load again and cancel, close),
 * prints each text the label shows and checks that every callback ran on
 * the main thread; it exits 0 when all went as expected. With
 * LOADSTATE_GTK_SCRIPT=forget-unwatch it does the same but frees the
 * runtime before removing its watch, and checks that the watch is then
 * not called (the descriptor stays open and quiet). */
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
#include <unistd.h>

#define LOAD_MS 150

typedef struct app {
  lds_runtime *rt;
  lds_id loader, cell;
  int fd;
  guint watch;          /* the g_unix_fd_add source; 0 once removed */
  GList *timers;        /* pending answers (struct answer *) */
  GtkWidget *window, *label, *load, *cancel;
  unsigned loads;       /* loads started, numbered in the answers */
  pthread_t main_thread;
  unsigned off_main;    /* callbacks that ran on another thread */
  unsigned callbacks;   /* callbacks that ran */
  bool scripted;
  bool forget_unwatch;  /* scripted: free before removing the watch (the mistake) */
  unsigned fd_calls;    /* calls of the watch */
  int script_step;
  bool done;
  int exit_code;
} app;

/* A load the loader answers after LOAD_MS. */
typedef struct answer {
  app *a;
  lds_id job;
  unsigned number;
  guint source;
} answer;

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

static gboolean answer_now(gpointer data) {
  answer *ans = data;
  app *a = ans->a;
  char value[64];
  int n = snprintf(value, sizeof value, "result %u", ans->number);
  /* LDS_ECANCELED when the load was cancelled or superseded meanwhile. */
  lds_job_succeed(a->rt, ans->job, value, (size_t)n);
  a->timers = g_list_remove(a->timers, ans);
  g_free(ans);
  return G_SOURCE_REMOVE;
}

/* The loader: runs on the main thread (POLL mode), answers later. */
static void start_load(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt;
  (void)request;
  (void)len;
  app *a = data;
  on_main_thread(a);
  answer *ans = g_new0(answer, 1);
  ans->a = a;
  ans->job = job;
  ans->number = ++a->loads;
  ans->source = g_timeout_add(LOAD_MS, answer_now, ans);
  a->timers = g_list_prepend(a->timers, ans);
}

static void script_next(app *a, int status);

/* The cell's callback: show its state. */
static void on_event(const lds_event *e, void *user_data) {
  app *a = user_data;
  on_main_thread(a);
  char text[256];
  switch (e->status) {
  case LDS_ABSENT: snprintf(text, sizeof text, "nothing loaded"); break;
  case LDS_LOADING: snprintf(text, sizeof text, "loading..."); break;
  case LDS_LOADED:
    snprintf(text, sizeof text, "loaded: %.*s%s", (int)e->value_len, (const char *)e->value,
             (e->flags & LDS_FLAG_CANCELLED) ? " (load cancelled)" : "");
    break;
  default:
    snprintf(text, sizeof text, "error: %s", e->error_message ? e->error_message : lds_strerror(e->error_code));
    break;
  }
  gtk_label_set_text(GTK_LABEL(a->label), text);
  gtk_widget_set_sensitive(a->cancel, e->status == LDS_LOADING);
  if (a->scripted) {
    printf("state: %s\n", text);
    fflush(stdout);
    script_next(a, e->status);
  }
}

static void on_load(GtkButton *button, gpointer data) {
  (void)button;
  app *a = data;
  int rc = lds_loadable_load(a->rt, a->cell, a->loader, "demo", 4, NULL);
  if (rc != LDS_OK) fprintf(stderr, "load: %s\n", lds_strerror(rc));
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

/* The mistake, on purpose (LOADSTATE_GTK_SCRIPT=forget-unwatch): the runtime
 * was freed with the watch still in place. Runs the main loop for 200 ms and
 * returns how often the watch was called meanwhile: with LDS_RUNTIME_KEEP_FD
 * the descriptor is open and quiet, so 0 (a closed one would be reported
 * ready on every iteration). */
static unsigned watch_calls_after_free(app *a) {
  unsigned before = a->fd_calls;
  bool elapsed = false;
  g_timeout_add(200, set_flag, &elapsed);
  while (!elapsed) g_main_context_iteration(NULL, TRUE);
  return a->fd_calls - before;
}

/* The window closes: stop watching, free the runtime, close the descriptor. */
static gboolean on_close(GtkWindow *window, gpointer data) {
  (void)window;
  app *a = data;
  if (!a->forget_unwatch) {
    g_source_remove(a->watch); /* first: nothing may watch a descriptor about to go */
    a->watch = 0;
  }
  for (GList *l = a->timers; l; l = l->next) {
    answer *ans = l->data;
    g_source_remove(ans->source);
    g_free(ans);
  }
  g_list_free(a->timers);
  a->timers = NULL;
  int rc = lds_runtime_free(a->rt);
  a->rt = NULL;
  if (a->forget_unwatch) {
    unsigned calls = watch_calls_after_free(a);
    printf("watch calls in 200 ms after the free: %u\n", calls);
    if (calls != 0) a->exit_code = 1;
    g_source_remove(a->watch);
    a->watch = 0;
  }
  /* LDS_RUNTIME_KEEP_FD: the descriptor is ours now, open and never readable. */
  bool quiet = open_and_quiet(a->fd);
  close(a->fd);
  if (a->scripted) {
    printf("closed: free %s, descriptor %s\n", rc == LDS_OK ? "ok" : lds_strerror(rc),
           quiet ? "open and quiet" : "NOT open and quiet");
    printf("callbacks off the main thread: %u\n", a->off_main);
    if (rc != LDS_OK || !quiet || a->off_main != 0 || a->callbacks == 0) a->exit_code = 1;
  }
  a->done = true;
  return FALSE; /* let the window close */
}

/* The script: each step presses a button once the state it waits for shows.
 * A press emits "clicked" as a click does (gtk_widget_activate would emit it
 * only after the button's 250 ms activation animation). */
static void press(GtkWidget *button) {
  if (gtk_widget_get_sensitive(button)) g_signal_emit_by_name(button, "clicked");
}

static gboolean press_load(gpointer data) {
  app *a = data;
  press(a->load);
  return G_SOURCE_REMOVE;
}

static gboolean press_cancel(gpointer data) {
  app *a = data;
  press(a->cancel);
  return G_SOURCE_REMOVE;
}

static gboolean press_close(gpointer data) {
  app *a = data;
  gtk_window_close(GTK_WINDOW(a->window));
  return G_SOURCE_REMOVE;
}

static void script_next(app *a, int status) {
  /* Step 0: first load under way; 1: its value shown, load again;
   * 2: second load under way, cancel it; 3: cancelled, close. */
  if (a->script_step == 0 && status == LDS_LOADING) {
    a->script_step = 1;
  } else if (a->script_step == 1 && status == LDS_LOADED) {
    a->script_step = 2;
    g_idle_add(press_load, a);
  } else if (a->script_step == 2 && status == LDS_LOADING) {
    a->script_step = 3;
    g_idle_add(press_cancel, a);
  } else if (a->script_step == 3 && status != LDS_LOADING) {
    a->script_step = 4;
    g_idle_add(press_close, a);
  }
}

static gboolean script_timeout(gpointer data) {
  app *a = data;
  fprintf(stderr, "script: stuck at step %d\n", a->script_step);
  a->exit_code = 1;
  gtk_window_close(GTK_WINDOW(a->window));
  return G_SOURCE_REMOVE;
}

int main(void) {
  app a = {.main_thread = pthread_self()};
  const char *script = getenv("LOADSTATE_GTK_SCRIPT");
  a.forget_unwatch = script && strcmp(script, "forget-unwatch") == 0;
  a.scripted = (script && strcmp(script, "1") == 0) || a.forget_unwatch;
  gtk_init();

  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.delivery = LDS_DELIVER_POLL;
  opts.flags = LDS_RUNTIME_KEEP_FD;
  int rc = lds_runtime_new(&opts, &a.rt);
  if (rc != LDS_OK) {
    fprintf(stderr, "lds_runtime_new: %s\n", lds_strerror(rc));
    return 1;
  }
  lds_loader_new(a.rt, start_load, &a, NULL, &a.loader);
  lds_loadable_new(a.rt, on_event, &a, &a.cell);
  a.fd = lds_runtime_fd(a.rt);
  a.watch = g_unix_fd_add(a.fd, G_IO_IN, on_fd, &a);

  a.window = gtk_window_new();
  gtk_window_set_title(GTK_WINDOW(a.window), "loadstate");
  gtk_window_set_default_size(GTK_WINDOW(a.window), 320, 120);
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 8);
  gtk_widget_set_margin_top(box, 12);
  gtk_widget_set_margin_bottom(box, 12);
  gtk_widget_set_margin_start(box, 12);
  gtk_widget_set_margin_end(box, 12);
  a.label = gtk_label_new("nothing loaded");
  GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
  a.load = gtk_button_new_with_label("Load");
  a.cancel = gtk_button_new_with_label("Cancel");
  gtk_widget_set_sensitive(a.cancel, FALSE);
  gtk_box_append(GTK_BOX(buttons), a.load);
  gtk_box_append(GTK_BOX(buttons), a.cancel);
  gtk_box_append(GTK_BOX(box), a.label);
  gtk_box_append(GTK_BOX(box), buttons);
  gtk_window_set_child(GTK_WINDOW(a.window), box);
  g_signal_connect(a.load, "clicked", G_CALLBACK(on_load), &a);
  g_signal_connect(a.cancel, "clicked", G_CALLBACK(on_cancel), &a);
  g_signal_connect(a.window, "close-request", G_CALLBACK(on_close), &a);
  gtk_window_present(GTK_WINDOW(a.window));

  guint stuck = 0;
  if (a.scripted) {
    printf("state: nothing loaded\n");
    g_timeout_add(100, press_load, &a);
    stuck = g_timeout_add_seconds(8, script_timeout, &a);
  }
  while (!a.done) g_main_context_iteration(NULL, TRUE);
  if (stuck && a.exit_code == 0 && a.script_step == 4) g_source_remove(stuck);
  return a.exit_code;
}
