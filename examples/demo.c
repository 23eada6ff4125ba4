/*
 * demo.c — loadstate driven from C.
 *
 * Five cells load through one host loader whose work runs on a small pool
 * of worker threads, the way a C program would wrap its own I/O:
 *
 *   catalog  a load that reports progress, then succeeds
 *   feed     a load that streams partial values (lds_job_yield), then finishes
 *   report   a load cancelled halfway: the value it replaced comes back,
 *            flagged CANCELLED
 *   profile  a load that fails with a host error and a message
 *   weather  a load, then a refresh: the old value stays visible, flagged
 *            REFRESHING, until the new one replaces it
 *
 * Two more cells use the built-in loaders, which need no host thread:
 *
 *   download the http loader fetches a few hundred KB from a server the
 *            demo runs itself on 127.0.0.1 (an ephemeral port); the server
 *            sends the body in chunks with short pauses, so the PROGRESS
 *            events (bytes of a known Content-Length) move a bar
 *   command  the exec loader runs a shell loop that prints a line every
 *            0.1 s; with LDS_EXEC_STREAM_LINES each line shows up as a
 *            partial value before the final one
 *
 * On a terminal the cells are redrawn in place; otherwise (pipes, CI) every
 * event is printed on its own line. Pass --plain to force the latter.
 *
 * --inspect starts the runtime's web inspector (lds_inspector_start) on
 * 127.0.0.1 with a free port, values and actions allowed, and prints its
 * URL; on a terminal the demo then waits for Enter before it frees the
 * runtime, so the page can be looked at (--inspect=127.0.0.1:PORT picks
 * the port).
 *
 * The demo doubles as a check: it exits 1 if a cell did not reach every
 * state it should have, if events arrived out of order, or if a call
 * returned an unexpected code.
 *
 * Synchronisation uses one mutex and condition variable; the workers and
 * the HTTP server pause only to pretend they are doing work.
 */
#include <loadstate.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define DEADLINE_SECONDS 20

/* ------------------------------------------------------------------ */
/* What the screen shows                                               */
/* ------------------------------------------------------------------ */

enum { CATALOG, FEED, REPORT, PROFILE, WEATHER, DOWNLOAD, COMMAND, CELLS };

/* The cells before DOWNLOAD load through the host loader. */
#define HOST_CELLS DOWNLOAD

static const char *const cell_names[CELLS] = {"catalog", "feed",     "report", "profile",
                                              "weather", "download", "command"};

/* Milestones: the states each cell must reach. */
enum {
  SEEN_PRESET = 1 << 0,     /* report: the value set before its load */
  SEEN_LOADING = 1 << 1,    /* LOADING carrying the request */
  SEEN_PROGRESS = 1 << 2,   /* at least one PROGRESS event */
  SEEN_PARTIAL = 1 << 3,    /* feed: several partial values, each longer; command: at least one */
  SEEN_LOADED = 1 << 4,     /* the final value, no flags (download: status 200, the whole body) */
  SEEN_CANCELLED = 1 << 5,  /* report: the earlier value back, flagged CANCELLED */
  SEEN_ERROR = 1 << 6,      /* profile: host error 503 with its message */
  SEEN_REFRESHING = 1 << 7, /* weather: old value flagged REFRESHING */
  SEEN_REFRESHED = 1 << 8,  /* weather: the new value after the refresh */
  SEEN_FULL = 1 << 9,       /* catalog/report/download: progress reached a given point */
};

static const unsigned expected[CELLS] = {
    [CATALOG] = SEEN_LOADING | SEEN_PROGRESS | SEEN_FULL | SEEN_LOADED,
    [FEED] = SEEN_LOADING | SEEN_PARTIAL | SEEN_LOADED,
    [REPORT] = SEEN_PRESET | SEEN_LOADING | SEEN_PROGRESS | SEEN_FULL | SEEN_CANCELLED,
    [PROFILE] = SEEN_LOADING | SEEN_PROGRESS | SEEN_ERROR,
    [WEATHER] = SEEN_LOADING | SEEN_LOADED | SEEN_REFRESHING | SEEN_PROGRESS | SEEN_REFRESHED,
    [DOWNLOAD] = SEEN_LOADING | SEEN_PROGRESS | SEEN_FULL | SEEN_LOADED,
    [COMMAND] = SEEN_LOADING | SEEN_PARTIAL | SEEN_LOADED,
};

static const char *const milestone_names[] = {
    "preset value", "LOADING", "PROGRESS", "partial values", "LOADED",
    "CANCELLED restore", "ERROR", "REFRESHING", "refreshed value", "progress checkpoint",
};

/* The values the loads produce (the worker and the checks share them). */
#define REPORT_CACHED "Q3 report (cached yesterday)"
#define CATALOG_VALUE "1284 titles in 37 categories"
#define WEATHER_FIRST "Oslo 12 C, cloudy"
#define WEATHER_SECOND "Oslo 14 C, sunny"
#define PROFILE_CODE 503
#define PROFILE_MESSAGE "profile service unavailable (HTTP 503)"
#define FEED_ITEMS 6
#define CATALOG_STEPS 20
#define REPORT_STEPS 60
#define REPORT_CANCEL_AT 6
#define PROFILE_STEPS 8
#define WEATHER_STEPS 10

/* The download: a body of HTTP_BODY_SIZE bytes sent in HTTP_CHUNK-byte
   pieces, HTTP_PAUSE_MS apart. */
#define HTTP_PATH "/payload"
#define HTTP_BODY_SIZE ((size_t)384 * 1024)
#define HTTP_CHUNK ((size_t)24 * 1024)
#define HTTP_PAUSE_MS 60

/* The command and the output it must produce. */
#define EXEC_SCRIPT "for i in 1 2 3 4 5; do echo step $i; sleep 0.1; done"
#define EXEC_OUTPUT "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n"

typedef struct view {
  int index;
  lds_id id;
  uint64_t seq;          /* seq of the latest event */
  int32_t status;
  uint32_t flags;
  bool running;          /* a load runs: LOADING, or REFRESHING over a value */
  uint64_t done, total;  /* progress of the running load */
  char value[80];
  char error[80];
  int32_t error_code;
  unsigned seen;         /* SEEN_* bits */
  int partials;          /* partial values seen */
  size_t last_partial_len;
} view;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  view views[CELLS];
  unsigned changes;      /* bumped on every event; the redraw loop compares it */
  int problems;          /* unexpected codes, out-of-order events, bad values */
  bool loader_released;  /* the loader's free_data ran */
  bool report_worker_stopped; /* the report's worker noticed the cancel */
  bool tty;
  struct timespec t0;
  char last_action[96];
} app = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static double elapsed_s(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - app.t0.tv_sec) + (double)(now.tv_nsec - app.t0.tv_nsec) / 1e9;
}

/* Reports a problem; the caller holds app.mu. */
static void problem_locked(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "demo: problem: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  app.problems++;
}

static void problem(const char *fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&app.mu);
  problem_locked("%s", text);
  pthread_cond_broadcast(&app.cv);
  pthread_mutex_unlock(&app.mu);
}

/* Checks a return code against the one expected. */
static int check_rc(const char *what, int rc, int want) {
  if (rc != want) problem("%s returned %d (%s), expected %d", what, rc, lds_strerror(rc), want);
  return rc;
}

static const char *status_name(int32_t status) {
  switch (status) {
  case LDS_ABSENT: return "ABSENT";
  case LDS_LOADING: return "LOADING";
  case LDS_LOADED: return "LOADED";
  case LDS_ERROR: return "ERROR";
  default: return "?";
  }
}

static void copy_text(char *dst, size_t cap, const void *src, size_t len) {
  if (!src) {
    dst[0] = 0;
    return;
  }
  if (len >= cap) len = cap - 1;
  memcpy(dst, src, len);
  dst[len] = 0;
}

/* Byte i of the download's body (the server and the check share it). */
static unsigned char body_byte(size_t i) { return (unsigned char)('a' + (i + i / 1024) % 26); }

/* Whether a decoded download is the one the server sent. */
static bool body_is_whole(const lds_http_response *r) {
  if (r->status != 200 || r->body_len != HTTP_BODY_SIZE) return false;
  const unsigned char *b = r->body;
  for (size_t i = 0; i < r->body_len; i++)
    if (b[i] != body_byte(i)) return false;
  return true;
}

/* The text shown for a cell's value. */
static void value_text(const view *v, const lds_event *e, char *out, size_t cap) {
  if (!e->value) {
    out[0] = 0;
  } else if (v->index == DOWNLOAD) {
    lds_http_response r;
    if (lds_http_response_decode(e->value, e->value_len, &r) == LDS_OK)
      snprintf(out, cap, "HTTP %d, %zu-byte body", (int)r.status, r.body_len);
    else
      snprintf(out, cap, "(%zu bytes, not an HTTP response)", e->value_len);
  } else if (v->index == COMMAND) {
    /* Lines joined with " | ", without the last newline. */
    const char *p = e->value;
    size_t len = e->value_len, n = 0;
    if (len && p[len - 1] == '\n') len--;
    for (size_t i = 0; i < len && n + 4 < cap; i++) {
      if (p[i] == '\n') {
        memcpy(out + n, " | ", 3);
        n += 3;
      } else {
        out[n++] = p[i];
      }
    }
    out[n] = 0;
  } else {
    copy_text(out, cap, e->value, e->value_len);
  }
}

static void flags_text(uint32_t flags, char *out, size_t cap) {
  out[0] = 0;
  if (flags & LDS_FLAG_REFRESHING) strncat(out, " +REFRESHING", cap - strlen(out) - 1);
  if (flags & LDS_FLAG_PARTIAL) strncat(out, " +PARTIAL", cap - strlen(out) - 1);
  if (flags & LDS_FLAG_CANCELLED) strncat(out, " +CANCELLED", cap - strlen(out) - 1);
}

static void bar_text(uint64_t done, uint64_t total, char *out, size_t width) {
  size_t filled = total ? (size_t)(done * width / total) : 0;
  if (filled > width) filled = width;
  out[0] = '[';
  for (size_t i = 0; i < width; i++) out[1 + i] = i < filled ? '#' : '.';
  out[width + 1] = ']';
  out[width + 2] = 0;
}

/* ------------------------------------------------------------------ */
/* Cell events (loop thread)                                           */
/* ------------------------------------------------------------------ */

/* Updates the milestones of a cell from a state event; app.mu held. */
static void note_state(view *v, const lds_event *e) {
  bool refreshing = e->flags & LDS_FLAG_REFRESHING;
  bool partial = e->flags & LDS_FLAG_PARTIAL;
  bool cancelled = e->flags & LDS_FLAG_CANCELLED;

  if (e->status == LDS_LOADING) {
    if (e->request_len == 0 || !e->request || e->attempt != 1)
      problem_locked("%s: LOADING without its request or with attempt %u", cell_names[v->index], e->attempt);
    else
      v->seen |= SEEN_LOADING;
  }
  switch (v->index) {
  case REPORT:
    if (e->status == LDS_LOADED && e->flags == 0 && strcmp(v->value, REPORT_CACHED) == 0)
      v->seen |= SEEN_PRESET;
    if (e->status == LDS_LOADED && cancelled && strcmp(v->value, REPORT_CACHED) == 0)
      v->seen |= SEEN_CANCELLED;
    break;
  case FEED:
    if (e->status == LDS_LOADED && partial) {
      if (e->value_len <= v->last_partial_len)
        problem_locked("feed: a partial value did not grow");
      v->last_partial_len = e->value_len;
      if (++v->partials >= FEED_ITEMS - 1) v->seen |= SEEN_PARTIAL;
    }
    if (e->status == LDS_LOADED && e->flags == 0) {
      if (v->partials == FEED_ITEMS && e->value_len == v->last_partial_len)
        v->seen |= SEEN_LOADED;
      else
        problem_locked("feed: finished with %d partial values and a value of %zu bytes", v->partials, e->value_len);
    }
    break;
  case CATALOG:
    if (e->status == LDS_LOADED && e->flags == 0 && strcmp(v->value, CATALOG_VALUE) == 0)
      v->seen |= SEEN_LOADED;
    break;
  case PROFILE:
    if (e->status == LDS_ERROR) {
      if (e->error_domain == LDS_DOMAIN_HOST && e->error_code == PROFILE_CODE && e->error_message &&
          strcmp(e->error_message, PROFILE_MESSAGE) == 0)
        v->seen |= SEEN_ERROR;
      else
        problem_locked("profile: error domain %d code %d message %s", e->error_domain, e->error_code,
                       e->error_message ? e->error_message : "(null)");
    }
    break;
  case WEATHER:
    if (e->status == LDS_LOADED && e->flags == 0 && strcmp(v->value, WEATHER_FIRST) == 0)
      v->seen |= SEEN_LOADED;
    if (e->status == LDS_LOADED && refreshing && strcmp(v->value, WEATHER_FIRST) == 0)
      v->seen |= SEEN_REFRESHING;
    if (e->status == LDS_LOADED && e->flags == 0 && strcmp(v->value, WEATHER_SECOND) == 0) {
      if (v->seen & SEEN_REFRESHING)
        v->seen |= SEEN_REFRESHED;
      else
        problem_locked("weather: new value without REFRESHING first");
    }
    break;
  case DOWNLOAD:
    if (e->status == LDS_LOADED) {
      lds_http_response r = {0};
      int rc = lds_http_response_decode(e->value, e->value_len, &r);
      if (rc == LDS_OK && e->flags == 0 && body_is_whole(&r))
        v->seen |= SEEN_LOADED;
      else
        problem_locked("download: decode %d, flags %#x, status %d, %zu-byte body (want 200, %zu bytes)", rc,
                       e->flags, (int)r.status, r.body_len, HTTP_BODY_SIZE);
    } else if (e->status == LDS_ERROR) {
      problem_locked("download: error domain %d code %d: %s", e->error_domain, e->error_code,
                     e->error_message ? e->error_message : "(null)");
    }
    break;
  case COMMAND:
    if (e->status == LDS_LOADED && partial) {
      /* Whole lines so far: a longer prefix of the output each time. */
      if (e->value_len <= v->last_partial_len || e->value_len > strlen(EXEC_OUTPUT) ||
          memcmp(e->value, EXEC_OUTPUT, e->value_len) != 0 || ((const char *)e->value)[e->value_len - 1] != '\n')
        problem_locked("command: unexpected partial value \"%s\"", v->value);
      v->last_partial_len = e->value_len;
      v->partials++;
      v->seen |= SEEN_PARTIAL;
    }
    if (e->status == LDS_LOADED && e->flags == 0) {
      if (e->value_len == strlen(EXEC_OUTPUT) && memcmp(e->value, EXEC_OUTPUT, e->value_len) == 0)
        v->seen |= SEEN_LOADED;
      else
        problem_locked("command: final value \"%s\"", v->value);
    }
    if (e->status == LDS_ERROR)
      problem_locked("command: error domain %d code %d: %s", e->error_domain, e->error_code,
                     e->error_message ? e->error_message : "(null)");
    break;
  }
}

static void on_event(const lds_event *e, void *user_data) {
  view *v = user_data;
  pthread_mutex_lock(&app.mu);
  if (e->cell != v->id || e->seq != v->seq + 1)
    problem_locked("%s: event seq %llu after %llu", cell_names[v->index], (unsigned long long)e->seq,
                   (unsigned long long)v->seq);
  v->seq = e->seq;
  v->status = e->status;

  if (e->type == LDS_EVENT_PROGRESS) {
    v->done = e->progress_done;
    v->total = e->progress_total;
    v->seen |= SEEN_PROGRESS;
    if ((v->index == CATALOG && e->progress_done == CATALOG_STEPS) ||
        (v->index == REPORT && e->progress_done >= REPORT_CANCEL_AT))
      v->seen |= SEEN_FULL;
    if (v->index == DOWNLOAD) {
      /* Bytes of the body, out of the Content-Length once it is known. */
      if ((e->progress_total && e->progress_total != HTTP_BODY_SIZE) || e->progress_done > HTTP_BODY_SIZE)
        problem_locked("download: progress %llu/%llu, body is %zu bytes", (unsigned long long)e->progress_done,
                       (unsigned long long)e->progress_total, HTTP_BODY_SIZE);
      if (e->progress_done == HTTP_BODY_SIZE && e->progress_total == HTTP_BODY_SIZE) v->seen |= SEEN_FULL;
    }
  } else if (e->type == LDS_EVENT_STATE) {
    v->flags = e->flags;
    value_text(v, e, v->value, sizeof v->value);
    v->error_code = e->error_code;
    copy_text(v->error, sizeof v->error, e->error_message, e->error_message ? strlen(e->error_message) : 0);
    bool starts = e->status == LDS_LOADING || ((e->flags & LDS_FLAG_REFRESHING) && !(e->flags & LDS_FLAG_PARTIAL));
    if (starts && !v->running) v->done = v->total = 0;
    v->running = e->status == LDS_LOADING || (e->flags & (LDS_FLAG_REFRESHING | LDS_FLAG_PARTIAL));
    note_state(v, e);
  } else {
    problem_locked("%s: unexpected event type %u", cell_names[v->index], e->type);
  }

  if (!app.tty) {
    char line[200], flags[64];
    if (e->type == LDS_EVENT_PROGRESS) {
      char bar[32];
      bar_text(e->progress_done, e->progress_total, bar, 20);
      snprintf(line, sizeof line, "PROGRESS %s %llu/%llu", bar, (unsigned long long)e->progress_done,
               (unsigned long long)e->progress_total);
    } else {
      flags_text(e->flags, flags, sizeof flags);
      if (e->status == LDS_ERROR)
        snprintf(line, sizeof line, "%s%s  error %d: %s", status_name(e->status), flags, e->error_code, v->error);
      else if (e->status == LDS_LOADED)
        snprintf(line, sizeof line, "%s%s  \"%s\"", status_name(e->status), flags, v->value);
      else
        snprintf(line, sizeof line, "%s%s", status_name(e->status), flags);
    }
    printf("%6.3fs  %-8s #%-3llu %s\n", elapsed_s(), cell_names[v->index], (unsigned long long)e->seq, line);
    fflush(stdout);
  }
  app.changes++;
  pthread_cond_broadcast(&app.cv);
  pthread_mutex_unlock(&app.mu);
}

/* ------------------------------------------------------------------ */
/* Screen                                                              */
/* ------------------------------------------------------------------ */

#define SCREEN_LINES (CELLS + 2)
static bool drawn;

/* Redraws the cells in place (terminal mode); app.mu held. */
static void redraw_locked(void) {
  if (!app.tty) return;
  if (drawn) printf("\033[%dA", SCREEN_LINES);
  drawn = true;
  struct winsize ws;
  size_t columns = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 40 ? ws.ws_col : 80;
  size_t room = columns - 19; /* after "  name     STATUS " */
  printf("\033[2K\033[1mloadstate demo\033[0m  %.2fs\n", elapsed_s());
  for (int i = 0; i < CELLS; i++) {
    view *v = &app.views[i];
    const char *color = v->status == LDS_LOADED ? "\033[32m" : v->status == LDS_ERROR ? "\033[31m"
                        : v->status == LDS_LOADING ? "\033[33m" : "\033[2m";
    char flags[64], bar[40] = "", rest[256];
    flags_text(v->flags, flags, sizeof flags);
    if (v->running && v->total) {
      char b[32];
      bar_text(v->done, v->total, b, 20);
      snprintf(bar, sizeof bar, "%s %3llu%%", b, (unsigned long long)(v->done * 100 / v->total));
    }
    int n = snprintf(rest, sizeof rest, "%-13s%s%s", flags, bar, bar[0] ? " " : "");
    if (v->status == LDS_LOADED) snprintf(rest + n, sizeof rest - (size_t)n, "\"%s\"", v->value);
    if (v->status == LDS_ERROR) snprintf(rest + n, sizeof rest - (size_t)n, "error %d: %s", v->error_code, v->error);
    /* A wrapped line would break the redraw: clip to the terminal's width. */
    if (strlen(rest) > room) rest[room] = 0;
    printf("\033[2K  %-8s %s%-7s\033[0m%s\n", cell_names[i], color, status_name(v->status), rest);
  }
  printf("\033[2K  > %.*s\n", (int)(columns - 5), app.last_action);
  fflush(stdout);
}

/* Records something the demo does, as a line or in the status line; app.mu not held. */
static void action(const char *fmt, ...) {
  va_list ap;
  pthread_mutex_lock(&app.mu);
  va_start(ap, fmt);
  vsnprintf(app.last_action, sizeof app.last_action, fmt, ap);
  va_end(ap);
  if (app.tty) {
    redraw_locked();
  } else {
    printf("%6.3fs  -> %s\n", elapsed_s(), app.last_action);
    fflush(stdout);
  }
  pthread_mutex_unlock(&app.mu);
}

static bool has(int cell, unsigned bits) { return (app.views[cell].seen & bits) == bits; }

/* Waits until ready() holds, redrawing on every change. Returns false at the deadline. */
static bool wait_until(bool (*ready)(void), const char *what) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += DEADLINE_SECONDS;
  pthread_mutex_lock(&app.mu);
  unsigned shown = app.changes - 1;
  bool ok = true;
  while (!ready()) {
    if (shown != app.changes) {
      shown = app.changes;
      redraw_locked();
    }
    if (pthread_cond_timedwait(&app.cv, &app.mu, &deadline) == ETIMEDOUT && !ready()) {
      problem_locked("timed out waiting for %s", what);
      ok = false;
      break;
    }
  }
  redraw_locked();
  pthread_mutex_unlock(&app.mu);
  return ok;
}

static bool report_preset(void) { return has(REPORT, SEEN_PRESET); }
static bool report_halfway(void) { return has(REPORT, SEEN_FULL); }
static bool weather_loaded(void) { return has(WEATHER, SEEN_LOADED); }
static bool all_done(void) {
  for (int i = 0; i < CELLS; i++)
    if (!has(i, expected[i])) return false;
  return app.report_worker_stopped;
}
static bool loader_released(void) { return app.loader_released; }

/* ------------------------------------------------------------------ */
/* The host loader: a queue of tasks served by worker threads          */
/* ------------------------------------------------------------------ */

typedef struct task {
  lds_id job;
  char request[32];
  bool cancelled; /* set by the job's cancel callback */
  struct task *next;
} task;

typedef struct pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  task *queued;          /* waiting for a worker, oldest first */
  task **queued_end;
  task *active;          /* being worked on */
  bool quit;
  int weather_loads;
  lds_runtime *rt;
  pthread_t threads[WORKERS];
} pool;

/* A job's cancel callback (loop thread): flags its task so the worker stops early. */
static void on_job_cancel(lds_id job, void *data) {
  pool *p = data;
  pthread_mutex_lock(&p->mu);
  for (task *lists[2] = {p->queued, p->active}, **l = lists; l < lists + 2; l++)
    for (task *t = *l; t; t = t->next)
      if (t->job == job) t->cancelled = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

/* The loader's start function (loop thread): queue the work and return. */
static void start_job(lds_runtime *rt, lds_id job, const void *request, size_t request_len, void *data) {
  pool *p = data;
  task *t = calloc(1, sizeof *t);
  if (!t) {
    check_rc("lds_job_fail", lds_job_fail(rt, job, 12, "out of memory"), LDS_OK);
    return;
  }
  t->job = job;
  copy_text(t->request, sizeof t->request, request, request_len);
  check_rc("lds_job_on_cancel", lds_job_on_cancel(rt, job, on_job_cancel, p), LDS_OK);
  pthread_mutex_lock(&p->mu);
  *p->queued_end = t;
  p->queued_end = &t->next;
  pthread_cond_broadcast(&p->cv); /* workers in work() share the variable */
  pthread_mutex_unlock(&p->mu);
}

/* The loader's free_data (loop thread). */
static void release_loader(void *data) {
  (void)data;
  pthread_mutex_lock(&app.mu);
  app.loader_released = true;
  pthread_cond_broadcast(&app.cv);
  pthread_mutex_unlock(&app.mu);
}

/* Pretends to work for ms milliseconds; returns false if the job was cancelled meanwhile. */
static bool work(pool *p, task *t, int ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += (long)ms * 1000000L;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  pthread_mutex_lock(&p->mu);
  while (!t->cancelled && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT) {
  }
  bool alive = !t->cancelled;
  pthread_mutex_unlock(&p->mu);
  return alive;
}

static void run_task(pool *p, task *t) {
  lds_runtime *rt = p->rt;
  lds_id job = t->job;
  char value[96];

  if (strcmp(t->request, "catalog") == 0) {
    for (uint64_t i = 1; i <= CATALOG_STEPS; i++) {
      work(p, t, 45);
      check_rc("lds_job_progress", lds_job_progress(rt, job, i, CATALOG_STEPS), LDS_OK);
    }
    check_rc("lds_job_succeed", lds_job_succeed(rt, job, CATALOG_VALUE, strlen(CATALOG_VALUE)), LDS_OK);
  } else if (strcmp(t->request, "feed") == 0) {
    size_t len = 0;
    for (int i = 1; i <= FEED_ITEMS; i++) {
      work(p, t, 140);
      len += (size_t)snprintf(value + len, sizeof value - len, "%sheadline %d", i > 1 ? ", " : "", i);
      check_rc("lds_job_yield", lds_job_yield(rt, job, value, len), LDS_OK);
    }
    check_rc("lds_job_finish", lds_job_finish(rt, job), LDS_OK);
  } else if (strcmp(t->request, "report") == 0) {
    /* Cancelled from outside halfway; the worker notices and stops. */
    int rc = LDS_OK;
    for (uint64_t i = 1; i <= REPORT_STEPS && rc == LDS_OK; i++) {
      if (!work(p, t, 50)) break;
      rc = lds_job_progress(rt, job, i, REPORT_STEPS);
    }
    if (rc != LDS_OK && rc != LDS_ECANCELED) check_rc("lds_job_progress", rc, LDS_OK);
    /* Whatever the worker would still write is refused. */
    rc = lds_job_succeed(rt, job, "too late", 8);
    check_rc("lds_job_succeed after cancel", rc, LDS_ECANCELED);
    check_rc("lds_job_is_cancelled", lds_job_is_cancelled(rt, job), 1);
    pthread_mutex_lock(&app.mu);
    app.report_worker_stopped = true;
    pthread_cond_broadcast(&app.cv);
    pthread_mutex_unlock(&app.mu);
  } else if (strcmp(t->request, "profile") == 0) {
    for (uint64_t i = 1; i <= PROFILE_STEPS; i++) {
      work(p, t, 60);
      check_rc("lds_job_progress", lds_job_progress(rt, job, i, 2 * PROFILE_STEPS), LDS_OK);
    }
    check_rc("lds_job_fail", lds_job_fail(rt, job, PROFILE_CODE, PROFILE_MESSAGE), LDS_OK);
  } else if (strcmp(t->request, "weather") == 0) {
    pthread_mutex_lock(&p->mu);
    int n = ++p->weather_loads;
    pthread_mutex_unlock(&p->mu);
    for (uint64_t i = 1; i <= WEATHER_STEPS; i++) {
      work(p, t, n == 1 ? 30 : 70);
      check_rc("lds_job_progress", lds_job_progress(rt, job, i, WEATHER_STEPS), LDS_OK);
    }
    const char *v = n == 1 ? WEATHER_FIRST : WEATHER_SECOND;
    check_rc("lds_job_succeed", lds_job_succeed(rt, job, v, strlen(v)), LDS_OK);
  } else {
    problem("unknown request \"%s\"", t->request);
    lds_job_fail(rt, job, 400, "unknown request");
  }
}

static void *worker_main(void *arg) {
  pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->queued && !p->quit) pthread_cond_wait(&p->cv, &p->mu);
    if (!p->queued) break;
    task *t = p->queued;
    p->queued = t->next;
    if (!p->queued) p->queued_end = &p->queued;
    t->next = p->active;
    p->active = t;
    pthread_mutex_unlock(&p->mu);

    run_task(p, t);

    pthread_mutex_lock(&p->mu);
    for (task **l = &p->active; *l; l = &(*l)->next)
      if (*l == t) {
        *l = t->next;
        break;
      }
    free(t);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* A small HTTP server on 127.0.0.1 for the download                   */
/* ------------------------------------------------------------------ */

typedef struct server {
  int fd;          /* listening socket */
  int stop[2];     /* a pipe: writing to stop[1] makes the thread return */
  uint16_t port;
  unsigned served; /* bodies sent in full */
  pthread_t thread;
} server;

/* Waits until fd is readable or the server is told to stop; ms < 0: no limit.
   Returns 1 readable, 0 time out, -1 stop (or a poll failure). */
static int server_wait(server *s, int fd, int ms) {
  struct pollfd fds[2] = {{.fd = s->stop[0], .events = POLLIN}, {.fd = fd, .events = POLLIN}};
  int n;
  do n = poll(fds, fd >= 0 ? 2 : 1, ms);
  while (n < 0 && errno == EINTR);
  if (n < 0 || fds[0].revents) return -1;
  return n > 0 ? 1 : 0;
}

static bool send_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

/* Answers one request on conn: the body for GET HTTP_PATH, 404 otherwise. */
static void serve(server *s, int conn) {
  char req[2048] = "";
  size_t len = 0;
  while (len < sizeof req - 1 && !strstr(req, "\r\n\r\n")) {
    if (server_wait(s, conn, 5000) != 1) return;
    ssize_t n = recv(conn, req + len, sizeof req - 1 - len, 0);
    if (n <= 0) return;
    len += (size_t)n;
    req[len] = 0;
  }
  char head[160];
  if (strncmp(req, "GET " HTTP_PATH " ", strlen("GET " HTTP_PATH " ")) != 0) {
    problem("server: unexpected request \"%.40s\"", req);
    snprintf(head, sizeof head, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    send_all(conn, head, strlen(head));
    return;
  }
  snprintf(head, sizeof head,
           "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
           HTTP_BODY_SIZE);
  if (!send_all(conn, head, strlen(head))) return;
  static unsigned char chunk[HTTP_CHUNK]; /* only the server thread uses it */
  for (size_t at = 0; at < HTTP_BODY_SIZE; at += HTTP_CHUNK) {
    if (at && server_wait(s, -1, HTTP_PAUSE_MS) < 0) return;
    size_t n = HTTP_BODY_SIZE - at < HTTP_CHUNK ? HTTP_BODY_SIZE - at : HTTP_CHUNK;
    for (size_t i = 0; i < n; i++) chunk[i] = body_byte(at + i);
    if (!send_all(conn, chunk, n)) return;
  }
  pthread_mutex_lock(&app.mu);
  s->served++;
  pthread_mutex_unlock(&app.mu);
}

static void *server_main(void *arg) {
  server *s = arg;
  while (server_wait(s, s->fd, -1) == 1) {
    int conn = accept(s->fd, NULL, NULL);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      problem("server: accept: %s", strerror(errno));
      break;
    }
    serve(s, conn);
    close(conn);
  }
  return NULL;
}

/* Listens on 127.0.0.1 with a port the system picks and starts the thread. */
static bool server_start(server *s) {
  s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return false;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t addr_len = sizeof addr;
  if (bind(s->fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s->fd, 4) != 0 ||
      getsockname(s->fd, (struct sockaddr *)&addr, &addr_len) != 0 || pipe2(s->stop, O_CLOEXEC) != 0) {
    close(s->fd);
    return false;
  }
  s->port = ntohs(addr.sin_port);
  if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
    close(s->fd);
    close(s->stop[0]);
    close(s->stop[1]);
    return false;
  }
  return true;
}

/* Stops the thread, joins it and closes the sockets. */
static void server_stop(server *s) {
  char byte = 0;
  while (write(s->stop[1], &byte, 1) < 0 && errno == EINTR) {
  }
  pthread_join(s->thread, NULL);
  close(s->fd);
  close(s->stop[0]);
  close(s->stop[1]);
}

/* ------------------------------------------------------------------ */
/* Main                                                                */
/* ------------------------------------------------------------------ */

int main(int argc, char **argv) {
  bool plain = false;
  const char *inspect = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--plain") == 0) {
      plain = true;
    } else if (strcmp(argv[i], "--inspect") == 0) {
      inspect = "127.0.0.1:0";
    } else if (strncmp(argv[i], "--inspect=", 10) == 0) {
      inspect = argv[i] + 10;
    } else {
      fprintf(stderr, "usage: %s [--plain] [--inspect[=127.0.0.1:PORT]]\n", argv[0]);
      return 2;
    }
  }
  app.tty = !plain && isatty(STDOUT_FILENO) && getenv("TERM") && strcmp(getenv("TERM"), "dumb") != 0;
  clock_gettime(CLOCK_MONOTONIC, &app.t0);
  if (lds_version() != LDS_VERSION) {
    fprintf(stderr, "demo: library version %#x, header %#x\n", lds_version(), LDS_VERSION);
    return 1;
  }

  lds_runtime *rt = NULL;
  if (check_rc("lds_runtime_new", lds_runtime_new(NULL, &rt), LDS_OK) != LDS_OK) return 1;
  char inspector_url[128] = "";
  if (inspect) {
    lds_inspector_options io = LDS_INSPECTOR_OPTIONS_INIT;
    io.flags = LDS_INSPECTOR_SHOW_VALUES | LDS_INSPECTOR_ACTIONS;
    size_t url_len = 0;
    if (check_rc("lds_inspector_start", lds_inspector_start(rt, inspect, &io), LDS_OK) != LDS_OK ||
        check_rc("lds_inspector_url", lds_inspector_url(rt, inspector_url, sizeof inspector_url, &url_len),
                 LDS_OK) != LDS_OK)
      return 1;
    fprintf(stderr, "inspector: %s\n", inspector_url);
  }

  pool p = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .rt = rt};
  p.queued_end = &p.queued;
  for (int i = 0; i < WORKERS; i++)
    if (pthread_create(&p.threads[i], NULL, worker_main, &p) != 0) {
      fprintf(stderr, "demo: cannot start a worker thread\n");
      return 1;
    }

  lds_id loader = 0;
  check_rc("lds_loader_new", lds_loader_new(rt, start_job, &p, release_loader, &loader), LDS_OK);
  for (int i = 0; i < CELLS; i++) {
    app.views[i].index = i;
    pthread_mutex_lock(&app.mu);
    check_rc("lds_loadable_new", lds_loadable_new(rt, on_event, &app.views[i], &app.views[i].id), LDS_OK);
    pthread_mutex_unlock(&app.mu);
  }

  /* The built-in loaders and what they load. */
  server srv = {0};
  if (!server_start(&srv)) {
    fprintf(stderr, "demo: cannot start the HTTP server on 127.0.0.1: %s\n", strerror(errno));
    return 1;
  }
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u" HTTP_PATH, (unsigned)srv.port);
  lds_id http_loader = 0, exec_loader = 0;
  /* The server is local: no proxy from the environment may stand in between. */
  lds_http_options http_options = LDS_HTTP_OPTIONS_INIT;
  http_options.proxy = "";
  check_rc("lds_http_loader_new", lds_http_loader_new(rt, &http_options, &http_loader), LDS_OK);
  lds_exec_options exec_opts = LDS_EXEC_OPTIONS_INIT;
  exec_opts.flags = LDS_EXEC_STREAM_LINES;
  check_rc("lds_exec_loader_new", lds_exec_loader_new(rt, &exec_opts, &exec_loader), LDS_OK);

  void *http_req = NULL, *exec_req = NULL;
  size_t http_req_len = 0, exec_req_len = 0;
  lds_http_request hr = LDS_HTTP_REQUEST_INIT;
  hr.url = url;
  hr.timeout_ms = 10000;
  check_rc("lds_http_request_encode", lds_http_request_encode(&hr, &http_req, &http_req_len), LDS_OK);
  static const char *const exec_argv[] = {"sh", "-c", EXEC_SCRIPT, NULL};
  lds_exec_request er = LDS_EXEC_REQUEST_INIT;
  er.argv = exec_argv;
  check_rc("lds_exec_request_encode", lds_exec_request_encode(&er, &exec_req, &exec_req_len), LDS_OK);

  if (!app.tty)
    printf("loadstate demo: %d cells, %d worker threads, HTTP server on 127.0.0.1:%u\n", CELLS, WORKERS,
           (unsigned)srv.port);

  /* The report already shows a value, which a cancelled reload must bring back. */
  action("set report to an earlier value");
  check_rc("lds_loadable_set_loaded",
           lds_loadable_set_loaded(rt, app.views[REPORT].id, REPORT_CACHED, strlen(REPORT_CACHED)), LDS_OK);
  wait_until(report_preset, "the report's earlier value");

  action("load catalog, feed, report, profile, weather");
  for (int i = 0; i < HOST_CELLS; i++) {
    const char *request = cell_names[i];
    check_rc("lds_loadable_load", lds_loadable_load(rt, app.views[i].id, loader, request, strlen(request), NULL),
             LDS_OK);
  }
  action("download GET %s", url);
  check_rc("lds_loadable_load (http)",
           lds_loadable_load(rt, app.views[DOWNLOAD].id, http_loader, http_req, http_req_len, NULL), LDS_OK);
  action("command sh -c '%s'", EXEC_SCRIPT);
  check_rc("lds_loadable_load (exec)",
           lds_loadable_load(rt, app.views[COMMAND].id, exec_loader, exec_req, exec_req_len, NULL), LDS_OK);
  /* The loads copied their requests. */
  lds_free(http_req);
  lds_free(exec_req);

  if (wait_until(report_halfway, "the report's progress")) {
    action("cancel report");
    check_rc("lds_loadable_cancel", lds_loadable_cancel(rt, app.views[REPORT].id), LDS_OK);
  }
  if (wait_until(weather_loaded, "the first weather value")) {
    action("refresh weather");
    check_rc("lds_loadable_refresh", lds_loadable_refresh(rt, app.views[WEATHER].id), LDS_OK);
  }
  if (wait_until(all_done, "every expected state")) action("all loads settled; freeing");
  if (inspect && isatty(STDIN_FILENO)) {
    fprintf(stderr, "inspector: %s\n(press Enter to quit)\n", inspector_url);
    while (getchar() != '\n' && !feof(stdin)) {
    }
  }

  /* Free the loader; its free_data runs once its last job has ended. */
  check_rc("lds_loader_free", lds_loader_free(rt, loader), LDS_OK);
  check_rc("lds_loader_free (http)", lds_loader_free(rt, http_loader), LDS_OK);
  check_rc("lds_loader_free (exec)", lds_loader_free(rt, exec_loader), LDS_OK);
  wait_until(loader_released, "the loader's free_data");
  server_stop(&srv);

  pthread_mutex_lock(&p.mu);
  p.quit = true;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  for (int i = 0; i < WORKERS; i++) pthread_join(p.threads[i], NULL);

  for (int i = 0; i < CELLS; i++) check_rc("lds_loadable_free", lds_loadable_free(rt, app.views[i].id), LDS_OK);
  check_rc("lds_runtime_free", lds_runtime_free(rt), LDS_OK);

  /* No callback runs after lds_runtime_free; the views are final. */
  int missing = 0;
  for (int i = 0; i < CELLS; i++) {
    unsigned lacking = expected[i] & ~app.views[i].seen;
    for (unsigned b = 0; lacking; b++, lacking >>= 1)
      if (lacking & 1) {
        fprintf(stderr, "demo: %s never reached: %s\n", cell_names[i], milestone_names[b]);
        missing++;
      }
  }
  if (!app.report_worker_stopped) {
    fprintf(stderr, "demo: the report's worker never noticed its cancel\n");
    missing++;
  }
  if (srv.served != 1) {
    fprintf(stderr, "demo: the HTTP server sent the body %u times, expected once\n", srv.served);
    missing++;
  }
  if (missing || app.problems) {
    printf("demo: FAILED (%d states not reached, %d problems)\n", missing, app.problems);
    return 1;
  }
  printf("demo: every expected state reached in %.2fs\n", elapsed_s());
  return 0;
}
