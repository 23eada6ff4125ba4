/*
 * fuzz_api.c — libFuzzer harness: the input bytes become a short sequence
 * of C API calls against one runtime, and the header's promises are
 * checked as the calls and callbacks happen.
 *
 * The first byte picks the delivery mode (LOOP or POLL); every following
 * step reads one opcode byte and the arguments it needs (bytes past the
 * end read as 0). At most MAX_STEPS steps run (one of them may hand a
 * slice of the input to a second host thread that makes calls meanwhile),
 * then every cell is cancelled, an error probe runs, and the runtime is
 * freed.
 *
 * Checked (abort() with a message, which libFuzzer reports as a crash):
 *   - every return code is one the header lists for that function, and a
 *     call with a NULL runtime, a NULL out pointer or a bad size returns
 *     LDS_EINVAL;
 *   - events: seq is 1, then +1 per event of the cell; the event names its
 *     cell; type, status (by cell kind) and the value's presence agree;
 *   - no callback runs inside the call that caused it;
 *   - no event for a cell starts after its free returned: a free on the
 *     delivery thread stops every callback of the cell at once; a free from
 *     another thread (LOOP mode) stops every callback that begins after a
 *     callback has observed that the free returned;
 *   - a call that returns an error causes no callback (the probe: failing
 *     calls on quiet cells between two marker events), and once every cell
 *     is quiet every job that started has ended (LDS_ECANCELED);
 *   - a snapshot is never behind the events dispatched (POLL mode), and
 *     once every cell is quiet it is the cell's last event;
 *   - records fit the buffer, or LDS_ETOOBIG reports a larger size;
 *   - each loader's free_data runs exactly once, only after lds_loader_free
 *     or during lds_runtime_free; each job's cancel function and each
 *     lds_job_on_cancel registration run at most once;
 *   - no callback after lds_runtime_free returns (the context the callbacks
 *     receive is freed right after it: a late one is a use after free).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loadstate.h"

#define FUZZ_NAME "fuzz_api"
#include "fuzz_input.h"

#define MAX_STEPS 64
#define MAX_CELLS 8
#define MAX_LOADERS 4
#define MAX_JOBS 64
#define MAX_CACHES 2
#define MAX_HOOKS 64
#define RECORD_BUF 16384

/* ------------------------------------------------------------------ */
/* Return codes                                                        */
/* ------------------------------------------------------------------ */

/* Return-code sets, one bit per code: bit 0 is LDS_OK, bit k is -k. */
#define RC(code) (1u << (unsigned)(-(code)))
#undef R_OK /* unistd.h's access() mode, unused here */
#define R_OK RC(LDS_OK)
#define R_INVAL RC(LDS_EINVAL)
#define R_NOENT RC(LDS_ENOENT)
#define R_STATE RC(LDS_ESTATE)
#define R_CANCELED RC(LDS_ECANCELED)
#define R_NOMEM RC(LDS_ENOMEM)
#define R_CLOSED RC(LDS_ECLOSED)
#define R_TOOBIG RC(LDS_ETOOBIG)
#define R_IO RC(LDS_EIO)

static _Thread_local int in_call;
/* Set on the second host thread (step_helper). */
static _Thread_local bool on_helper;

static int check_rc(const char *what, int rc, unsigned allowed) {
  if (rc > 0 || rc < LDS_EIO || !(allowed & RC(rc))) fail("%s returned %d (%s)", what, rc, lds_strerror(rc));
  return rc;
}

/* A call of the library from the host: callbacks may not run inside it. */
#define CALL(what, allowed, expr)                                           \
  ({                                                                        \
    in_call++;                                                              \
    int rc_ = (expr);                                                       \
    in_call--;                                                              \
    check_rc(what, rc_, allowed);                                           \
  })

/* ------------------------------------------------------------------ */
/* The context of one input                                            */
/* ------------------------------------------------------------------ */

struct ctx;

typedef struct cell {
  struct ctx *ctx;
  lds_id id;
  bool process;
  bool pages;            /* a pages cell (lds_pages_new) */
  atomic_bool live;      /* created and not freed */
  atomic_int free_oks;   /* frees that returned LDS_OK */
  atomic_bool free_returned;
  bool closed;           /* delivery thread: no callback may begin any more */
  uint64_t last_seq;     /* delivery thread */
  int32_t last_status;   /* delivery thread */
  uint32_t last_type;    /* delivery thread */
  atomic_uint action;    /* what the next event's callback does */
  atomic_bool probed;    /* an error probe runs: no event expected */
} cell;

typedef struct loader {
  struct ctx *ctx;
  lds_id id;
  unsigned mode;
  bool live;
  atomic_bool free_allowed;
  atomic_int free_calls;
} loader;

typedef struct job_rec {
  lds_id id;
  int cancel_calls;
} job_rec;

typedef struct hook {
  struct ctx *ctx;
  atomic_int calls;
} hook;

typedef struct ctx {
  lds_runtime *rt;
  bool poll;
  cell cells[MAX_CELLS];
  _Atomic int ncells;    /* a cell is written before it is counted */
  cell marker;           /* a loadable cell for ordering: see probe() */
  uint64_t marker_sent;  /* host thread: marker events asked for */
  uint64_t marker_seen;  /* under mu: marker events delivered */
  loader loaders[MAX_LOADERS];
  _Atomic int nloaders;
  lds_id caches[MAX_CACHES];
  int ncaches;
  lds_id pcache;         /* a persistent cache (scratch file), or 0 */
  char pcache_path[64];
  atomic_uint cursor_plan; /* the cursors a page loader's start answers with */
  pthread_mutex_t mu;    /* jobs, hooks, callbacks counter */
  pthread_cond_t cv;
  job_rec jobs[MAX_JOBS];
  int njobs;
  hook hooks[MAX_HOOKS];
  int nhooks;
  uint64_t callbacks;
  atomic_bool freeing;   /* lds_runtime_free was called */
  _Alignas(8) uint8_t records[RECORD_BUF];
} ctx;

static void on_event(const lds_event *ev, void *user_data);

/* ------------------------------------------------------------------ */
/* Callbacks                                                           */
/* ------------------------------------------------------------------ */

static void callback_begin(ctx *c, const char *what) {
  if (in_call) fail("%s callback runs inside the call that caused it", what);
  pthread_mutex_lock(&c->mu);
  c->callbacks++;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

/* Delivery thread: a cell whose free has returned, as seen by a callback
 * now running, may get no callback that begins later. */
static void close_freed_cells(ctx *c) {
  for (int i = 0; i < c->ncells; i++)
    if (atomic_load(&c->cells[i].free_returned)) c->cells[i].closed = true;
}

static int cell_free(ctx *c, cell *cl, bool on_delivery_thread);

static void run_action(cell *cl) {
  ctx *c = cl->ctx;
  unsigned a = atomic_exchange(&cl->action, 0);
  if (!a || !cl->live) return;
  if (cl->pages) {
    if (a == 1) cell_free(c, cl, true);
    else if (a == 2) CALL("lds_pages_cancel", R_OK | R_NOENT, lds_pages_cancel(c->rt, cl->id));
    else if (a == 3) CALL("lds_pages_load_next", R_OK | R_NOENT | R_STATE, lds_pages_load_next(c->rt, cl->id));
    else CALL("lds_pages_load_previous", R_OK | R_NOENT | R_STATE, lds_pages_load_previous(c->rt, cl->id));
    return;
  }
  switch (a) {
  case 1:
    cell_free(c, cl, true);
    break;
  case 2:
    if (cl->process) CALL("lds_process_cancel", R_OK, lds_process_cancel(c->rt, cl->id));
    else CALL("lds_loadable_cancel", R_OK, lds_loadable_cancel(c->rt, cl->id));
    break;
  case 3:
    if (!cl->process) CALL("lds_loadable_set_loaded", R_OK, lds_loadable_set_loaded(c->rt, cl->id, "cb", 2));
    break;
  default:
    if (c->nloaders) {
      loader *ld = &c->loaders[0];
      if (cl->process)
        CALL("lds_process_run", R_OK | R_NOENT, lds_process_run(c->rt, cl->id, 7, ld->id, "cb", 2, NULL));
      else
        CALL("lds_loadable_load", R_OK | R_NOENT, lds_loadable_load(c->rt, cl->id, ld->id, "cb", 2, NULL));
    }
    break;
  }
}

static void check_event(const lds_event *ev, cell *cl) {
  if (ev->cell != cl->id) fail("event for cell %llu delivered to cell %llu", (unsigned long long)ev->cell,
                               (unsigned long long)cl->id);
  if (cl->closed) fail("event seq %llu for cell %llu after its free returned", (unsigned long long)ev->seq,
                       (unsigned long long)cl->id);
  if (ev->seq != cl->last_seq + 1)
    fail("cell %llu: seq %llu after %llu", (unsigned long long)cl->id, (unsigned long long)ev->seq,
         (unsigned long long)cl->last_seq);
  cl->last_seq = ev->seq;
  cl->last_status = ev->status;
  cl->last_type = ev->type;
  if (ev->type < LDS_EVENT_STATE || ev->type > LDS_EVENT_INTERRUPT) fail("event type %u", ev->type);
  int lo = cl->process ? LDS_IDLE : LDS_ABSENT, hi = cl->process ? LDS_FAILED : LDS_ERROR;
  if (ev->type == LDS_EVENT_STATE && (ev->flags & LDS_FLAG_OPTIMISTIC) && ev->status != LDS_LOADED)
    fail("cell %llu: an optimistic state with status %d", (unsigned long long)cl->id, ev->status);
  if (ev->type == LDS_EVENT_STATE && (ev->flags & LDS_FLAG_PLACEHOLDER) && ev->status != LDS_LOADED)
    fail("cell %llu: a placeholder with status %d", (unsigned long long)cl->id, ev->status);
  if (ev->status < lo || ev->status > hi)
    fail("cell %llu (%s): status %d", (unsigned long long)cl->id, cl->process ? "process" : "loadable", ev->status);
  if (ev->status == LDS_LOADED ? ev->value == NULL : (ev->value != NULL || ev->value_len != 0))
    fail("cell %llu: status %d with value %p length %zu", (unsigned long long)cl->id, ev->status, ev->value,
         ev->value_len);
  if (atomic_load(&cl->probed)) fail("cell %llu: event seq %llu after failing calls only",
                                     (unsigned long long)cl->id, (unsigned long long)ev->seq);
}

static void handle_event(const lds_event *ev, cell *cl, bool from_record) {
  ctx *c = cl->ctx;
  if (from_record && atomic_load(&cl->free_returned)) return;
  check_event(ev, cl);
  if (cl == &c->marker) {
    pthread_mutex_lock(&c->mu);
    c->marker_seen = ev->seq;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
  close_freed_cells(c);
  run_action(cl);
}

static void on_event(const lds_event *ev, void *user_data) {
  cell *cl = user_data;
  callback_begin(cl->ctx, "event");
  handle_event(ev, cl, false);
}

static job_rec *find_job(ctx *c, lds_id job) {
  for (int i = 0; i < c->njobs; i++)
    if (c->jobs[i].id == job) return &c->jobs[i];
  return NULL;
}

static void on_hook(lds_id job, void *data) {
  hook *h = data;
  callback_begin(h->ctx, "on_cancel");
  (void)job;
  if (atomic_fetch_add(&h->calls, 1) != 0) fail("an lds_job_on_cancel callback ran twice (job %llu)",
                                                (unsigned long long)job);
}

static void add_hook(ctx *c, lds_id job) {
  pthread_mutex_lock(&c->mu);
  hook *h = c->nhooks < MAX_HOOKS ? &c->hooks[c->nhooks++] : NULL;
  pthread_mutex_unlock(&c->mu);
  if (!h) return;
  h->ctx = c;
  CALL("lds_job_on_cancel", R_OK | R_CANCELED | R_NOENT | R_CLOSED, lds_job_on_cancel(c->rt, job, on_hook, h));
}

/* A cursor of more than LDS_CURSOR_MAX bytes. */
static const uint8_t long_cursor[LDS_CURSOR_MAX + 1];

/* Checks what lds_page_request_decode read from `req`. */
static int decode_page_request(const uint8_t *req, size_t len, lds_page_request *pr) {
  memset(pr, 0x5a, sizeof *pr);
  int rc = CALL("lds_page_request_decode", R_OK | R_INVAL | R_TOOBIG, lds_page_request_decode(req, len, pr));
  if (rc != LDS_OK) {
    if (rc == LDS_EINVAL && (pr->request || pr->request_len || pr->cursor || pr->cursor_len || pr->direction))
      fail("lds_page_request_decode: out not zeroed on LDS_EINVAL");
    return rc;
  }
  const uint8_t *end = req + len;
  if (pr->direction != 0 && pr->direction != 1 && pr->direction != -1) fail("page request direction %d", pr->direction);
  if (pr->request_len > len || (pr->request_len && ((const uint8_t *)pr->request < req ||
                                                    (const uint8_t *)pr->request + pr->request_len > end)))
    fail("page request: the request (%zu bytes) is not inside the %zu bytes decoded", pr->request_len, len);
  if (pr->cursor_len > LDS_CURSOR_MAX) fail("page request: a cursor of %zu bytes", pr->cursor_len);
  if (pr->cursor && ((const uint8_t *)pr->cursor < req || (const uint8_t *)pr->cursor + pr->cursor_len > end))
    fail("page request: the cursor is not inside the bytes decoded");
  if (!pr->cursor && pr->cursor_len) fail("page request: a NULL cursor of %zu bytes", pr->cursor_len);
  return rc;
}

/* One cursor of a page loader's answer, by a 2-bit plan: none, the page's
 * own cursor and one more byte (none past 3 bytes, so that lists end), an
 * empty one, or one over LDS_CURSOR_MAX. */
static const uint8_t *plan_cursor(unsigned plan, const lds_page_request *pr, uint8_t *tmp, size_t *len) {
  *len = 0;
  switch (plan & 3) {
  case 1:
    if (pr->cursor_len >= 3) return NULL;
    if (pr->cursor_len) memcpy(tmp, pr->cursor, pr->cursor_len);
    tmp[pr->cursor_len] = (uint8_t)('a' + (plan >> 2));
    *len = pr->cursor_len + 1;
    return tmp;
  case 2: return tmp;
  case 3: *len = sizeof long_cursor; return long_cursor;
  default: return NULL;
  }
}

/* A page's job (its request decodes): answered with lds_job_succeed_page
 * and the cursors of the plan the input set. */
static bool page_answer(ctx *c, lds_id job, const void *req, size_t len) {
  lds_page_request pr;
  if (len < 4 || memcmp(req, "\0LPQ", 4) != 0) return false;
  int rc = decode_page_request(req, len, &pr);
  if (rc != LDS_OK) fail("the library sent a page request that does not decode (%d)", rc);
  unsigned plan = atomic_load(&c->cursor_plan);
  uint8_t next_buf[4], prev_buf[4];
  size_t nl, pl;
  const uint8_t *next = plan_cursor(plan, &pr, next_buf, &nl);
  const uint8_t *prev = plan_cursor(plan >> 4, &pr, prev_buf, &pl);
  bool toobig = nl > LDS_CURSOR_MAX || pl > LDS_CURSOR_MAX;
  rc = CALL("lds_job_succeed_page", R_OK | R_CANCELED | (toobig ? R_TOOBIG : 0),
            lds_job_succeed_page(c->rt, job, pr.cursor, pr.cursor_len, next, nl, prev, pl));
  if (toobig && rc == LDS_OK) fail("lds_job_succeed_page took a cursor over LDS_CURSOR_MAX");
  return true;
}

static void job_start(ctx *c, loader *ld, lds_id job, const void *req, size_t len) {
  if (len && !req) fail("start with a NULL request of %zu bytes", len);
  pthread_mutex_lock(&c->mu);
  if (find_job(c, job)) fail("job %llu started twice", (unsigned long long)job);
  if (c->njobs < MAX_JOBS) c->jobs[c->njobs++] = (job_rec){.id = job};
  pthread_mutex_unlock(&c->mu);
  const unsigned ok = R_OK | R_CANCELED;
  switch (ld->mode % 8) {
  case 1:
    if (!page_answer(c, job, req, len)) CALL("lds_job_succeed", ok, lds_job_succeed(c->rt, job, req, len));
    break;
  case 2: CALL("lds_job_fail", ok, lds_job_fail(c->rt, job, 5, "start failed")); break;
  case 3: CALL("lds_job_yield", ok, lds_job_yield(c->rt, job, req, len)); break;
  case 4: add_hook(c, job); break;
  case 5: CALL("lds_job_cancel_self", ok, lds_job_cancel_self(c->rt, job)); break;
  case 6: CALL("lds_job_reset_self", ok, lds_job_reset_self(c->rt, job)); break;
  case 7:
    CALL("lds_job_progress", ok, lds_job_progress(c->rt, job, 1, 2));
    CALL("lds_job_finish", ok, lds_job_finish(c->rt, job));
    break;
  default: break;
  }
}

static void on_start(lds_runtime *rt, lds_id job, const void *req, size_t len, void *data) {
  loader *ld = data;
  callback_begin(ld->ctx, "start");
  if (rt != ld->ctx->rt) fail("start with another runtime");
  job_start(ld->ctx, ld, job, req, len);
}

static void job_cancelled(ctx *c, lds_id job) {
  pthread_mutex_lock(&c->mu);
  job_rec *j = find_job(c, job);
  if (j && ++j->cancel_calls > 1) fail("cancel function ran twice for job %llu", (unsigned long long)job);
  pthread_mutex_unlock(&c->mu);
}

static void on_cancel(lds_runtime *rt, lds_id job, void *data) {
  loader *ld = data;
  callback_begin(ld->ctx, "cancel");
  if (rt != ld->ctx->rt) fail("cancel with another runtime");
  job_cancelled(ld->ctx, job);
}

static void on_free_data(void *data) {
  loader *ld = data;
  callback_begin(ld->ctx, "free_data");
  if (!atomic_load(&ld->free_allowed) && !atomic_load(&ld->ctx->freeing))
    fail("free_data of loader %llu before it was freed", (unsigned long long)ld->id);
  if (atomic_fetch_add(&ld->free_calls, 1) != 0) fail("free_data of loader %llu ran twice", (unsigned long long)ld->id);
}

/* ------------------------------------------------------------------ */
/* Delivery                                                            */
/* ------------------------------------------------------------------ */

static cell *cell_of(ctx *c, void *user_data) {
  if (user_data == &c->marker) return &c->marker;
  for (int i = 0; i < c->ncells; i++)
    if (user_data == &c->cells[i]) return &c->cells[i];
  fail("record with unknown user_data %p", user_data);
}

static loader *loader_of(ctx *c, void *user_data) {
  for (int i = 0; i < c->nloaders; i++)
    if (user_data == &c->loaders[i]) return &c->loaders[i];
  fail("record with unknown loader_data %p", user_data);
}

/* POLL mode: one round of deliveries, by callbacks or as records into
 * cap bytes (0: the whole buffer). */
static void deliver(ctx *c, bool records, int max, size_t cap) {
  if (!records) {
    int rc = lds_runtime_dispatch(c->rt, max);
    if (rc < 0) fail("lds_runtime_dispatch returned %d", rc);
    return;
  }
  if (cap == 0 || cap > sizeof c->records) cap = sizeof c->records;
  size_t used = 0;
  int rc = lds_runtime_dispatch_records(c->rt, c->records, cap, max, &used);
  if (rc < 0) {
    check_rc("lds_runtime_dispatch_records", rc, R_TOOBIG);
    if (used <= cap) fail("lds_runtime_dispatch_records: LDS_ETOOBIG for %zu bytes in %zu", used, cap);
    return;
  }
  if (used > cap) fail("lds_runtime_dispatch_records wrote %zu bytes into %zu", used, cap);
  for (size_t off = 0; off < used;) {
    lds_record *r = (lds_record *)(c->records + off);
    if (r->size < sizeof *r || r->size % 8 || off + r->size > used) fail("record of %u bytes at %zu", r->size, off);
    if (r->what == LDS_RECORD_EVENT) {
      handle_event(&r->event, cell_of(c, r->user_data), true);
    } else if (r->what == LDS_RECORD_START) {
      loader *ld = loader_of(c, r->user_data);
      if (!r->event.request) fail("start record without a request");
      job_start(c, ld, r->job, r->event.request, r->event.request_len);
    } else if (r->what == LDS_RECORD_CANCEL) {
      loader_of(c, r->user_data);
      job_cancelled(c, r->job);
    } else {
      fail("record kind %u", r->what);
    }
    off += r->size;
  }
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Lets the runtime work for about ms milliseconds. */
static void run_for(ctx *c, unsigned ms) {
  uint64_t end = now_ms() + ms;
  if (!c->poll) {
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
    return;
  }
  do {
    struct pollfd pfd = {.fd = lds_runtime_fd(c->rt), .events = POLLIN};
    poll(&pfd, 1, 1);
    deliver(c, false, 0, 0);
  } while (now_ms() < end);
}

/* Waits, with a deadline, until the marker cell has had `seq` events. In
 * POLL mode deliveries run meanwhile. */
static void wait_marker(ctx *c, uint64_t seq) {
  uint64_t deadline = now_ms() + 5000;
  for (;;) {
    if (c->poll) deliver(c, false, 0, 0);
    pthread_mutex_lock(&c->mu);
    bool seen = c->marker_seen >= seq;
    if (!seen && !c->poll) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 5000000;
      if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
      pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    if (seen) return;
    if (c->poll) {
      struct pollfd pfd = {.fd = lds_runtime_fd(c->rt), .events = POLLIN};
      poll(&pfd, 1, 5);
    }
    if (now_ms() > deadline) fail("the marker cell's event %llu never came", (unsigned long long)seq);
  }
}

/* ------------------------------------------------------------------ */
/* Picking ids and options                                             */
/* ------------------------------------------------------------------ */

/* An id that names nothing of the kind asked for: 0, one never made, or a
 * loader's (a cell's id when the caller wants a loader is avoided by
 * callers that could be given one of their own). */
static lds_id stray_id(ctx *c, uint8_t b) {
  int nl = c->nloaders;
  switch (b % 4) {
  case 0: return 0;
  case 1: return UINT64_MAX;
  case 2: return nl ? c->loaders[b % nl].id : UINT64_MAX - 1;
  default: return UINT64_MAX - 1000 + b;
  }
}

static cell *pick_cell(ctx *c, input *in) {
  uint8_t b = u8(in);
  return c->ncells ? &c->cells[b % c->ncells] : NULL;
}

/* A cell id: mostly a created cell (perhaps freed), sometimes a stray one. */
static lds_id pick_cell_id(ctx *c, input *in, cell **out) {
  uint8_t b = u8(in);
  *out = NULL;
  if (b >= 0xF0 || !c->ncells) return stray_id(c, b);
  *out = &c->cells[b % c->ncells];
  return (*out)->id;
}

static lds_id pick_loader_id(ctx *c, input *in) {
  uint8_t b = u8(in);
  if (b >= 0xF0 || !c->nloaders) return stray_id(c, b);
  return c->loaders[b % c->nloaders].id;
}

static lds_id pick_job_id(ctx *c, input *in) {
  uint8_t b = u8(in);
  pthread_mutex_lock(&c->mu);
  lds_id id = (b < 0xE0 && c->njobs) ? c->jobs[c->njobs - 1 - b % c->njobs].id : 0;
  pthread_mutex_unlock(&c->mu);
  return (b < 0xE0 && id) ? id : stray_id(c, b);
}

static lds_id pick_cache_id(ctx *c, input *in) {
  uint8_t b = u8(in);
  if (b >= 0xF0 || !c->ncaches) return stray_id(c, b);
  return c->caches[b % c->ncaches];
}

typedef struct opts_buf {
  lds_load_options o;
  uint32_t interrupts[4];
  uint8_t key[4];
  uint8_t placeholder[4];
} opts_buf;

/* Load options from the input, or NULL. *bad: the options are invalid on
 * purpose (the call must return LDS_EINVAL). */
static const lds_load_options *pick_options(ctx *c, input *in, opts_buf *ob, bool process, bool *bad,
                                            bool *cached) {
  uint8_t f = u8(in);
  *bad = false;
  *cached = false;
  if (f % 4 == 0) return NULL;
  lds_load_options init = LDS_LOAD_OPTIONS_INIT;
  ob->o = init;
  ob->o.flags = (f >> 2) & 3;
  /* Since 0.5: keeping the previous value, a placeholder, host signals. */
  uint8_t g = u8(in);
  if (g & 1) ob->o.flags |= LDS_LOAD_KEEP_PREVIOUS;
  if (g & 2) ob->o.flags |= LDS_LOAD_REFRESH_ON_FOREGROUND;
  if (g & 4) ob->o.flags |= LDS_LOAD_OFFLINE_FAIL;
  if (g & 8) ob->o.flags |= LDS_LOAD_OFFLINE_RUN;
  if (g & 0x10) ob->o.flags |= LDS_LOAD_POLL_IN_BACKGROUND;
  /* Both offline flags: refused. */
  if ((g & 0xC) == 0xC) *bad = true;
  if (g & 0x20) {
    size_t n = (g >> 6) % 4;
    for (size_t i = 0; i < n; i++) ob->placeholder[i] = u8(in);
    ob->o.placeholder = ob->placeholder;
    ob->o.placeholder_len = n;
  }
  ob->o.foreground_throttle_ms = (g & 0x40) ? u8(in) % 3 : 0;
  if ((g & 0xE0) == 0x80) {
    ob->o.placeholder = NULL;
    ob->o.placeholder_len = 2;
    *bad = true;
  }
  ob->o.timeout_ms = u8(in) % 3;
  ob->o.retries = u8(in) % 3;
  ob->o.retry_base_ms = 1;
  ob->o.retry_max_ms = 2;
  size_t ni = u8(in) % 5;
  for (size_t i = 0; i < ni && i < 4; i++) ob->interrupts[i] = 1 + u8(in) % 2;
  ob->o.interrupt_count = ni;
  ob->o.interrupts_ms = ni ? ob->interrupts : NULL;
  if (f & 0x10) {
    ob->o.cache = pick_cache_id(c, in);
    ob->o.cache_policy = u8(in) % 4;
    ob->o.fresh_ms = u8(in) % 4;
    ob->o.max_age_ms = u8(in) % 8;
    if (f & 0x20) {
      ob->key[0] = u8(in);
      ob->o.cache_key = ob->key;
      ob->o.cache_key_len = 1;
    }
    /* Cache 0 means none. */
    *cached = ob->o.cache != 0;
    if (process && *cached) *bad = true;
  }
  switch ((f >> 6) & 3) {
  case 1:
    ob->o.size = (g & 0x80) ? (uint32_t)offsetof(lds_load_options, placeholder)
                            : (uint32_t)offsetof(lds_load_options, cache);
    ob->o.cache = 0;
    *bad = (g & 0xC) == 0xC;
    *cached = false;
    break;
  case 2:
    ob->o.size = 8;
    *bad = true;
    break;
  case 3:
    if (ni == 4) {
      ob->o.interrupt_count = 65;
      *bad = true;
    }
    break;
  default:
    break;
  }
  return &ob->o;
}

/* ------------------------------------------------------------------ */
/* Steps                                                               */
/* ------------------------------------------------------------------ */

/* In LOOP mode a callback may free its cell while the host thread does
 * too: exactly one of the frees returns LDS_OK. In POLL mode every call is
 * on one thread and the outcome is known in advance. */
static int cell_free(ctx *c, cell *cl, bool on_delivery_thread) {
  bool was_live = atomic_load(&cl->live);
  int rc = cl->pages     ? CALL("lds_pages_free", R_OK | R_NOENT, lds_pages_free(c->rt, cl->id))
           : cl->process ? CALL("lds_process_free", R_OK | R_NOENT, lds_process_free(c->rt, cl->id))
                         : CALL("lds_loadable_free", R_OK | R_NOENT, lds_loadable_free(c->rt, cl->id));
  if (rc == LDS_OK) {
    if (atomic_fetch_add(&cl->free_oks, 1) != 0) fail("a second free of cell %llu returned LDS_OK", (unsigned long long)cl->id);
    atomic_store(&cl->live, false);
    atomic_store(&cl->free_returned, true);
    if (on_delivery_thread || c->poll) cl->closed = true;
  } else if (c->poll && was_live) {
    fail("free of live cell %llu returned %d", (unsigned long long)cl->id, rc);
  }
  return rc;
}

static void step_new_cell(ctx *c, input *in) {
  if (c->ncells >= MAX_CELLS) return;
  cell *cl = &c->cells[c->ncells];
  memset(cl, 0, sizeof *cl);
  cl->ctx = c;
  cl->process = u8(in) & 1;
  lds_id id = 0;
  int rc = cl->process ? CALL("lds_process_new", R_OK, lds_process_new(c->rt, on_event, cl, &id))
                       : CALL("lds_loadable_new", R_OK, lds_loadable_new(c->rt, on_event, cl, &id));
  (void)rc;
  if (id == 0) fail("a new cell with id 0");
  cl->id = id;
  cl->live = true;
  c->ncells++;
}

static void step_load(ctx *c, input *in) {
  cell *cl;
  lds_id id = pick_cell_id(c, in, &cl);
  lds_id ld = pick_loader_id(c, in);
  size_t len;
  const uint8_t *req = bytes(in, 6, &len);
  bool process = u8(in) & 1;
  opts_buf ob;
  bool bad, cached;
  const lds_load_options *o = pick_options(c, in, &ob, process, &bad, &cached);
  /* Which of a bad option and an unknown id is reported first is not
   * specified; a stray cache id may be either. */
  unsigned allowed = bad ? R_INVAL | R_NOENT : R_OK | R_NOENT | (cached ? R_INVAL : 0);
  if (process)
    CALL("lds_process_run", allowed, lds_process_run(c->rt, id, (int32_t)u8(in), ld, req, len, o));
  else
    CALL("lds_loadable_load", allowed, lds_loadable_load(c->rt, id, ld, req, len, o));
  (void)cl;
}

static void step_cell_call(ctx *c, input *in) {
  cell *cl;
  lds_id id = pick_cell_id(c, in, &cl);
  uint8_t what = u8(in);
  const unsigned ok = R_OK | R_NOENT;
  switch (what % 8) {
  case 0: CALL("lds_loadable_refresh", ok | R_STATE, lds_loadable_refresh(c->rt, id)); break;
  case 1: CALL("lds_loadable_cancel", ok, lds_loadable_cancel(c->rt, id)); break;
  case 2: CALL("lds_loadable_reset", ok, lds_loadable_reset(c->rt, id)); break;
  case 3: {
    size_t len;
    const uint8_t *v = bytes(in, 8, &len);
    CALL("lds_loadable_set_loaded", ok, lds_loadable_set_loaded(c->rt, id, v, len));
    break;
  }
  case 4: CALL("lds_loadable_set_error", ok, lds_loadable_set_error(c->rt, id, (int32_t)u8(in) - 3, what & 8 ? NULL : "e"));
    break;
  case 5: {
    lds_snapshot s;
    int rc = CALL("lds_loadable_get", ok, lds_loadable_get(c->rt, id, &s));
    if (rc == LDS_OK && s.cell != id) fail("snapshot of cell %llu names %llu", (unsigned long long)id,
                                           (unsigned long long)s.cell);
    /* POLL mode: the snapshot may be ahead of the events dispatched, never
     * behind (checked on the delivery thread, where dispatches happen). */
    if (rc == LDS_OK && c->poll && !on_helper && cl && s.seq < cl->last_seq)
      fail("snapshot of cell %llu at seq %llu after event %llu was dispatched", (unsigned long long)id,
           (unsigned long long)s.seq, (unsigned long long)cl->last_seq);
    lds_snapshot_clear(&s);
    lds_snapshot_clear(&s);
    break;
  }
  case 6: CALL("lds_process_cancel", ok, lds_process_cancel(c->rt, id)); break;
  default: CALL("lds_process_reset", ok, lds_process_reset(c->rt, id)); break;
  }
}

static void step_free_cell(ctx *c, input *in) {
  cell *cl;
  lds_id id = pick_cell_id(c, in, &cl);
  if (cl) {
    cell_free(c, cl, false);
  } else {
    CALL("lds_loadable_free", R_NOENT, lds_loadable_free(c->rt, id));
    CALL("lds_process_free", R_NOENT, lds_process_free(c->rt, id));
  }
}

static void step_new_loader(ctx *c, input *in) {
  if (c->nloaders >= MAX_LOADERS) return;
  loader *ld = &c->loaders[c->nloaders];
  memset(ld, 0, sizeof *ld);
  ld->ctx = c;
  uint8_t b = u8(in);
  ld->mode = b;
  lds_id id = 0;
  if (b & 0x80) {
    lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
    o.start = on_start;
    o.cancel = (b & 0x40) ? on_cancel : NULL;
    o.free_data = on_free_data;
    o.loader_data = ld;
    /* Limits: at most one or two jobs at once, a fast token bucket. */
    if (b & 0x10) o.max_concurrent = 1 + (b & 1);
    if (b & 0x08) {
      o.rate_per_s = 1000;
      o.burst = b & 2;
    }
    if (b & 0x20) {
      o.size = 8;
      CALL("lds_loader_new_ex", R_INVAL, lds_loader_new_ex(c->rt, &o, &id));
      return;
    }
    CALL("lds_loader_new_ex", R_OK, lds_loader_new_ex(c->rt, &o, &id));
  } else {
    CALL("lds_loader_new", R_OK, lds_loader_new(c->rt, on_start, ld, on_free_data, &id));
  }
  if (id == 0) fail("a new loader with id 0");
  ld->id = id;
  ld->live = true;
  c->nloaders++;
}

static void step_free_loader(ctx *c, input *in) {
  uint8_t b = u8(in);
  if (b >= 0xF0 || !c->nloaders) {
    lds_id id = stray_id(c, b);
    bool known = false;
    for (int i = 0; i < c->nloaders; i++) known |= c->loaders[i].id == id;
    if (!known) CALL("lds_loader_free", R_NOENT, lds_loader_free(c->rt, id));
    return;
  }
  loader *ld = &c->loaders[b % c->nloaders];
  bool was_live = ld->live;
  if (was_live) atomic_store(&ld->free_allowed, true);
  int rc = CALL("lds_loader_free", was_live ? R_OK : R_NOENT, lds_loader_free(c->rt, ld->id));
  if (rc == LDS_OK) ld->live = false;
}

static void step_job(ctx *c, input *in) {
  lds_id job = pick_job_id(c, in);
  uint8_t what = u8(in);
  const unsigned ok = R_OK | R_NOENT | R_CANCELED;
  size_t len;
  const uint8_t *v;
  switch (what % 10) {
  case 0:
    v = bytes(in, 8, &len);
    CALL("lds_job_yield", ok, lds_job_yield(c->rt, job, v, len));
    break;
  case 1:
    v = bytes(in, 8, &len);
    CALL("lds_job_succeed", ok, lds_job_succeed(c->rt, job, v, len));
    break;
  case 2: CALL("lds_job_finish", ok, lds_job_finish(c->rt, job)); break;
  case 3: CALL("lds_job_fail", ok, lds_job_fail(c->rt, job, (int32_t)u8(in), what & 0x10 ? NULL : "f")); break;
  case 4: CALL("lds_job_fail_final", ok, lds_job_fail_final(c->rt, job, 9, "final")); break;
  case 5: CALL("lds_job_progress", ok, lds_job_progress(c->rt, job, u8(in), u8(in))); break;
  case 6: CALL("lds_job_cancel_self", ok, lds_job_cancel_self(c->rt, job)); break;
  case 7: CALL("lds_job_reset_self", ok, lds_job_reset_self(c->rt, job)); break;
  case 8: {
    int rc = lds_job_is_cancelled(c->rt, job);
    if (rc != 0 && rc != 1) check_rc("lds_job_is_cancelled", rc, R_NOENT);
    break;
  }
  default: add_hook(c, job); break;
  }
}

static void step_submit(ctx *c, input *in) {
  lds_op ops[4];
  int32_t results[4];
  size_t n = u8(in) % 5;
  memset(ops, 0, sizeof ops);
  for (size_t i = 0; i < n; i++) {
    uint8_t k = u8(in);
    lds_op *op = &ops[i];
    op->op = k % 8;
    cell *cl;
    if (op->op == LDS_OP_LOAD || op->op == LDS_OP_CANCEL) op->target = pick_cell_id(c, in, &cl);
    else op->target = pick_job_id(c, in);
    if (op->op == LDS_OP_LOAD) op->loader = pick_loader_id(c, in);
    if (op->op == LDS_OP_FAIL) op->code = (int32_t)u8(in);
    op->data = bytes(in, 6, &op->data_len);
    if (k & 0x80) op->code = 1;
  }
  for (size_t i = 0; i < 4; i++) results[i] = 77;
  in_call++;
  int rc = lds_runtime_submit(c->rt, ops, n, results);
  int empty = lds_runtime_submit(c->rt, NULL, 0, NULL);
  in_call--;
  if (empty != 0) fail("an empty lds_runtime_submit returned %d", empty);
  int count = 0;
  for (size_t i = 0; i < n; i++) {
    check_rc("lds_runtime_submit result", results[i], R_OK | R_INVAL | R_NOENT | R_CANCELED | R_STATE);
    count += results[i] == LDS_OK;
  }
  if (rc != count) fail("lds_runtime_submit returned %d with %d calls that returned LDS_OK", rc, count);
}

static void step_cache(ctx *c, input *in) {
  uint8_t what = u8(in);
  if (what % 8 == 0) {
    if (c->ncaches >= MAX_CACHES) return;
    lds_memory_cache_options o = LDS_MEMORY_CACHE_OPTIONS_INIT;
    o.max_entries = u8(in) % 4;
    o.max_bytes = u8(in) % 32;
    o.ttl_ms = u8(in) % 3;
    if (what & 0x10) o.unobserved_ms = 1 + u8(in) % 3;
    lds_id id = 0;
    CALL("lds_memory_cache_new", R_OK, lds_memory_cache_new(c->rt, (what & 8) ? NULL : &o, &id));
    c->caches[c->ncaches++] = id;
    return;
  }
  lds_id cache = pick_cache_id(c, in);
  size_t klen, vlen;
  const uint8_t *key = bytes(in, 4, &klen);
  const unsigned ok = R_OK | R_NOENT;
  switch (what % 8) {
  case 1:
  case 2: {
    const uint8_t *v = bytes(in, 16, &vlen);
    CALL("lds_cache_put", ok, lds_cache_put(c->rt, cache, key, klen, v, vlen));
    break;
  }
  case 3: {
    lds_cache_value v;
    in_call++;
    int rc = lds_cache_get(c->rt, cache, key, klen, &v);
    in_call--;
    if (rc != 1) check_rc("lds_cache_get", rc, ok);
    if (rc == 1 && !v.value) fail("a cache hit without a value");
    lds_cache_value_clear(&v);
    break;
  }
  case 4: {
    in_call++;
    int rc = lds_cache_remove(c->rt, cache, key, klen);
    in_call--;
    if (rc != 1) check_rc("lds_cache_remove", rc, ok);
    break;
  }
  case 5: CALL("lds_cache_invalidate", ok, lds_cache_invalidate(c->rt, cache, key, klen)); break;
  case 6: {
    lds_cache_statistics s;
    CALL("lds_cache_stats", ok, lds_cache_stats(c->rt, cache, &s));
    lds_cache_key_list keys;
    if (CALL("lds_cache_keys", ok, lds_cache_keys(c->rt, cache, key, klen, &keys)) == LDS_OK) {
      for (size_t i = 0; i < keys.count; i++)
        if (keys.lengths[i] < klen || (klen && memcmp(keys.keys[i], key, klen) != 0)) fail("a listed key without the prefix");
    }
    lds_cache_key_list_clear(&keys);
    uint64_t limit = u8(in) % 4, count = 99;
    if (CALL("lds_cache_count", ok, lds_cache_count(c->rt, cache, key, klen, limit, &count)) != LDS_OK) {
      if (count != 0) fail("lds_cache_count: a count of %llu on failure", (unsigned long long)count);
    } else if (limit && count > limit) {
      fail("lds_cache_count: %llu entries past the limit %llu", (unsigned long long)count, (unsigned long long)limit);
    }
    CALL("lds_cache_clear", ok, lds_cache_clear(c->rt, cache));
    break;
  }
  default: {
    int rc = CALL("lds_cache_free", ok, lds_cache_free(c->rt, cache));
    if (rc == LDS_OK)
      for (int i = 0; i < c->ncaches; i++)
        if (c->caches[i] == cache) c->caches[i] = c->caches[--c->ncaches];
    break;
  }
  }
}

/* Calls that must fail with LDS_EINVAL whatever the state. */
static void step_bad_args(ctx *c, input *in) {
  lds_id out = 0;
  cell *cl = pick_cell(c, in);
  lds_id cid = cl ? cl->id : 1;
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  switch (u8(in) % 12) {
  case 0: CALL("lds_loadable_new", R_INVAL, lds_loadable_new(NULL, on_event, NULL, &out)); break;
  case 1: CALL("lds_loadable_new", R_INVAL, lds_loadable_new(c->rt, NULL, NULL, &out)); break;
  case 2: CALL("lds_process_new", R_INVAL, lds_process_new(c->rt, on_event, NULL, NULL)); break;
  case 3: CALL("lds_loader_new", R_INVAL, lds_loader_new(c->rt, NULL, NULL, NULL, &out)); break;
  case 4: CALL("lds_loader_new_ex", R_INVAL, lds_loader_new_ex(c->rt, NULL, &out)); break;
  case 5: CALL("lds_memory_cache_new", R_INVAL, lds_memory_cache_new(c->rt, NULL, NULL)); break;
  case 6: {
    lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
    mo.size = 4;
    CALL("lds_memory_cache_new", R_INVAL, lds_memory_cache_new(c->rt, &mo, &out));
    break;
  }
  case 7: CALL("lds_loadable_get", R_INVAL, lds_loadable_get(c->rt, cid, NULL)); break;
  case 8: CALL("lds_runtime_submit", R_INVAL, lds_runtime_submit(c->rt, NULL, 3, NULL)); break;
  case 9:
    o.size = 4;
    CALL("lds_loadable_load", R_INVAL | R_NOENT, lds_loadable_load(c->rt, cid, 1, NULL, 0, &o));
    break;
  case 10: {
    lds_runtime_options ro = LDS_RUNTIME_OPTIONS_INIT;
    lds_runtime *rt = NULL;
    ro.delivery = 2 + u8(in);
    CALL("lds_runtime_new", R_INVAL, lds_runtime_new(&ro, &rt));
    if (rt) fail("lds_runtime_new set *out on failure");
    break;
  }
  default: CALL("lds_job_on_cancel", R_INVAL, lds_job_on_cancel(c->rt, 1, NULL, NULL)); break;
  }
  size_t used;
  if (c->poll) {
    CALL("lds_runtime_dispatch_records", R_INVAL, lds_runtime_dispatch_records(c->rt, c->records + 4, 64, 0, &used));
    CALL("lds_runtime_dispatch_records", R_INVAL, lds_runtime_dispatch_records(c->rt, c->records, 64, 0, NULL));
    CALL("lds_runtime_dispatch_records", R_INVAL, lds_runtime_dispatch_records(c->rt, NULL, 64, 0, &used));
    return;
  }
  CALL("lds_runtime_dispatch_records", R_STATE, lds_runtime_dispatch_records(c->rt, c->records, 64, 0, &used));
  CALL("lds_runtime_fd", R_STATE, lds_runtime_fd(c->rt));
  CALL("lds_runtime_dispatch", R_STATE, lds_runtime_dispatch(c->rt, 0));
}

/* Whether every job of the loader ends inside its start. */
static bool ends_at_start(const loader *ld) {
  unsigned m = ld->mode % 8;
  return m == 1 || m == 2 || m == 5 || m == 6 || m == 7;
}

/* Scheduling: priorities, polling, its pause and resume, prefetches. */
static void step_schedule(ctx *c, input *in) {
  uint8_t what = u8(in);
  cell *cl;
  /* The low three bits pick the call, the next two are its flags. */
  switch (what & 7) {
  case 0: {
    lds_id id = pick_cell_id(c, in, &cl);
    int32_t priority = (int8_t)u8(in);
    if (what & 8) CALL("lds_process_set_priority", R_OK | R_NOENT, lds_process_set_priority(c->rt, id, priority));
    else CALL("lds_loadable_set_priority", R_OK | R_NOENT, lds_loadable_set_priority(c->rt, id, priority));
    break;
  }
  case 1: CALL("lds_runtime_pause_polling", R_OK, lds_runtime_pause_polling(c->rt)); break;
  case 2: CALL("lds_runtime_resume_polling", R_OK, lds_runtime_resume_polling(c->rt)); break;
  case 3: {
    /* Only with loaders whose jobs end in their start: a prefetch has no
     * cell the end of the input could cancel. */
    int nl = c->nloaders;
    loader *ld = nl ? &c->loaders[u8(in) % nl] : NULL;
    if (!ld || !ends_at_start(ld)) break;
    lds_load_options o = LDS_LOAD_OPTIONS_INIT;
    o.cache = pick_cache_id(c, in);
    o.cache_policy = u8(in) % 4;
    o.fresh_ms = u8(in) % 4;
    o.priority = (int8_t)u8(in);
    size_t len;
    const uint8_t *req = bytes(in, 4, &len);
    CALL("lds_prefetch", R_OK | R_NOENT | R_INVAL, lds_prefetch(c->rt, ld->id, req, len, &o));
    break;
  }
  case 4: {
    lds_load_options o = LDS_LOAD_OPTIONS_INIT;
    lds_id ld = pick_loader_id(c, in);
    CALL("lds_prefetch", R_INVAL, lds_prefetch(c->rt, ld, "k", 1, NULL));
    CALL("lds_prefetch", R_INVAL | R_NOENT, lds_prefetch(c->rt, ld, "k", 1, &o));
    CALL("lds_prefetch", R_INVAL, lds_prefetch(NULL, ld, "k", 1, &o));
    CALL("lds_loadable_set_priority", R_INVAL, lds_loadable_set_priority(NULL, 1, 0));
    CALL("lds_runtime_pause_polling", R_INVAL, lds_runtime_pause_polling(NULL));
    CALL("lds_runtime_resume_polling", R_INVAL, lds_runtime_resume_polling(NULL));
    break;
  }
  default: {
    /* A load that polls, at a priority. */
    lds_id id = pick_cell_id(c, in, &cl);
    lds_id ld = pick_loader_id(c, in);
    lds_load_options o = LDS_LOAD_OPTIONS_INIT;
    o.priority = (int8_t)u8(in);
    o.refresh_interval_ms = 1 + u8(in) % 3;
    o.flags = (what & 8) ? LDS_LOAD_POLL_ON_ERROR : 0;
    o.retry_base_ms = 1;
    o.retry_max_ms = 2;
    if (what & 0x10) CALL("lds_process_run", R_OK | R_NOENT, lds_process_run(c->rt, id, 3, ld, "p", 1, &o));
    else CALL("lds_loadable_load", R_OK | R_NOENT, lds_loadable_load(c->rt, id, ld, "p", 1, &o));
    break;
  }
  }
}

/* ------------------------------------------------------------------ */
/* Since 0.5: pages, writes, host signals                              */
/* ------------------------------------------------------------------ */

static void step_new_pages(ctx *c, input *in) {
  if (c->ncells >= MAX_CELLS) return;
  cell *cl = &c->cells[c->ncells];
  memset(cl, 0, sizeof *cl);
  cl->ctx = c;
  cl->pages = true;
  uint8_t b = u8(in);
  lds_pages_options o = LDS_PAGES_OPTIONS_INIT;
  o.on_event = on_event;
  o.user_data = cl;
  o.max_pages = b % 4;
  if (b & 0x10) o.name = "pages";
  lds_id id = 0;
  if (b & 0x80) {
    /* Bad options: each must fail, and make nothing. */
    o.max_pages = LDS_PAGES_MAX + 1;
    CALL("lds_pages_new", R_INVAL, lds_pages_new(c->rt, &o, &id));
    o.max_pages = 0;
    o.size = 4;
    CALL("lds_pages_new", R_INVAL, lds_pages_new(c->rt, &o, &id));
    o.size = sizeof o;
    o.on_event = NULL;
    CALL("lds_pages_new", R_INVAL, lds_pages_new(c->rt, &o, &id));
    o.on_event = on_event;
    CALL("lds_pages_new", R_INVAL, lds_pages_new(c->rt, &o, NULL));
    CALL("lds_pages_new", R_INVAL, lds_pages_new(NULL, &o, &id));
    if (id != 0) fail("lds_pages_new set *out on failure");
    return;
  }
  CALL("lds_pages_new", R_OK, lds_pages_new(c->rt, &o, &id));
  if (id == 0) fail("a new pages cell with id 0");
  cl->id = id;
  cl->live = true;
  c->ncells++;
}

/* The calls on a pages cell. */
static void step_pages(ctx *c, input *in) {
  cell *cl;
  lds_id id = pick_cell_id(c, in, &cl);
  uint8_t what = u8(in);
  const unsigned ok = R_OK | R_NOENT;
  switch (what % 10) {
  case 0:
  case 1: {
    lds_id ld = pick_loader_id(c, in);
    size_t len;
    const uint8_t *req = bytes(in, 6, &len);
    opts_buf ob;
    bool bad, cached;
    const lds_load_options *o = pick_options(c, in, &ob, false, &bad, &cached);
    if (o && (what & 0x10) && c->pcache) {
      ob.o.cache = c->pcache;
      cached = true;
    }
    unsigned allowed = bad ? R_INVAL | R_NOENT : ok | (cached ? R_INVAL : 0);
    CALL("lds_pages_load", allowed, lds_pages_load(c->rt, id, ld, req, len, o));
    break;
  }
  case 2: CALL("lds_pages_load_next", ok | R_STATE, lds_pages_load_next(c->rt, id)); break;
  case 3: CALL("lds_pages_load_previous", ok | R_STATE, lds_pages_load_previous(c->rt, id)); break;
  case 4: CALL("lds_pages_refresh", ok | R_STATE, lds_pages_refresh(c->rt, id)); break;
  case 5: CALL("lds_pages_cancel", ok, lds_pages_cancel(c->rt, id)); break;
  case 6: CALL("lds_pages_reset", ok, lds_pages_reset(c->rt, id)); break;
  case 7: {
    size_t n = 77;
    int rc = CALL("lds_pages_count", ok, lds_pages_count(c->rt, id, &n));
    if (rc == LDS_OK && n > LDS_PAGES_MAX) fail("lds_pages_count: %zu pages", n);
    lds_snapshot s;
    size_t index = (what & 0x80) ? (size_t)u8(in) : (rc == LDS_OK && n ? n - 1 : 0);
    if (what & 0x40) index = SIZE_MAX - index;
    rc = CALL("lds_pages_get", ok, lds_pages_get(c->rt, id, index, &s));
    if (rc == LDS_OK) {
      if (s.cell != id) fail("page snapshot of cell %llu names %llu", (unsigned long long)id, (unsigned long long)s.cell);
      if ((size_t)s.kind != index) fail("page snapshot at index %zu has kind %d", index, s.kind);
      if (s.status < LDS_ABSENT || s.status > LDS_ERROR) fail("page snapshot with status %d", s.status);
    }
    lds_snapshot_clear(&s);
    break;
  }
  case 8: {
    int32_t dir = (what & 0x10) ? 1 : -1;
    if ((what & 0x60) == 0x60) dir = (int32_t)(int8_t)u8(in);
    in_call++;
    int rc = lds_pages_has_more(c->rt, id, dir);
    in_call--;
    if (rc != 0 && rc != 1) check_rc("lds_pages_has_more", rc, (dir == 1 || dir == -1) ? R_NOENT : R_INVAL | R_NOENT);
    if ((rc == 0 || rc == 1) && dir != 1 && dir != -1) fail("lds_pages_has_more(direction %d) returned %d", dir, rc);
    break;
  }
  default: {
    lds_snapshot s;
    CALL("lds_pages_count", R_INVAL, lds_pages_count(c->rt, id, NULL));
    CALL("lds_pages_count", R_INVAL, lds_pages_count(NULL, id, NULL));
    CALL("lds_pages_get", R_INVAL, lds_pages_get(c->rt, id, 0, NULL));
    CALL("lds_pages_get", R_INVAL, lds_pages_get(NULL, id, 0, &s));
    CALL("lds_pages_load_next", R_INVAL, lds_pages_load_next(NULL, id));
    CALL("lds_pages_refresh", R_INVAL, lds_pages_refresh(NULL, id));
    CALL("lds_pages_free", R_INVAL, lds_pages_free(NULL, id));
    CALL("lds_pages_load", R_INVAL | R_NOENT, lds_pages_load(c->rt, id, 1, NULL, 2, NULL));
    break;
  }
  }
}

/* A page's job completed from the input: a value and cursors (none, from
 * the input, empty, over LDS_CURSOR_MAX, NULL with a length), or a plain
 * value that may or may not be a page value's encoding. */
static void step_page_job(ctx *c, input *in) {
  lds_id job = pick_job_id(c, in);
  uint8_t what = u8(in);
  size_t vlen;
  const uint8_t *v = bytes(in, 16, &vlen);
  if (what & 0x80) {
    /* "\0LPV" and fuzz bytes: the cell decodes them. */
    uint8_t enc[68] = {0, 'L', 'P', 'V'};
    size_t n;
    const uint8_t *p = bytes(in, 64, &n);
    memcpy(enc + 4, p, n);
    bool raw = what & 0x40;
    CALL("lds_job_succeed", R_OK | R_NOENT | R_CANCELED,
         lds_job_succeed(c->rt, job, raw ? p : enc, raw ? n : n + 4));
    return;
  }
  const uint8_t *cur[2];
  size_t len[2];
  bool null_len = false, toobig = false;
  for (int i = 0; i < 2; i++) {
    switch ((what >> (2 * i)) & 3) {
    case 0: cur[i] = NULL; len[i] = 0; break;
    case 1: cur[i] = bytes(in, 8, &len[i]); break;
    case 2:
      cur[i] = long_cursor;
      len[i] = sizeof long_cursor - (u8(in) & 1);
      toobig |= len[i] > LDS_CURSOR_MAX;
      break;
    default: cur[i] = NULL; len[i] = 1 + u8(in) % 4; null_len = true; break;
    }
  }
  unsigned allowed = R_OK | R_NOENT | R_CANCELED | (null_len ? R_INVAL : 0) | (toobig ? R_TOOBIG : 0);
  if (what & 0x10) {
    v = NULL;
    if (vlen) allowed = R_INVAL | R_NOENT | R_CANCELED;
  }
  int rc = CALL("lds_job_succeed_page", allowed, lds_job_succeed_page(c->rt, job, v, vlen, cur[0], len[0], cur[1], len[1]));
  if (rc == LDS_OK && (null_len || toobig || (!v && vlen))) fail("lds_job_succeed_page accepted a bad cursor or value");
  if (what & 0x20) atomic_store(&c->cursor_plan, u8(in));
}

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* lds_page_request_decode over fuzz bytes, and over an encoding the
 * harness writes (the fields must come back). */
static void step_page_decode(ctx *c, input *in) {
  (void)c;
  uint8_t what = u8(in);
  lds_page_request pr;
  size_t n;
  const uint8_t *p = bytes(in, 48, &n);
  if (what & 1) {
    uint8_t enc[64] = {0, 'L', 'P', 'Q'};
    memcpy(enc + 4, p, n);
    decode_page_request(enc, n + 4, &pr);
  } else if (what & 2) {
    decode_page_request(p, n, &pr);
  } else {
    size_t rl, cl;
    const uint8_t *req = bytes(in, 8, &rl);
    const uint8_t *cur = bytes(in, 8, &cl);
    int32_t dir = (int32_t)(what >> 2) % 3 - 1;
    bool absent = dir == 0 || (what & 0x80);
    uint8_t enc[40] = {0, 'L', 'P', 'Q', (uint8_t)dir};
    size_t off = 5;
    put_u32(enc + off, (uint32_t)rl);
    memcpy(enc + off + 4, req, rl);
    off += 4 + rl;
    put_u32(enc + off, absent ? 0xFFFFFFFFu : (uint32_t)cl);
    off += 4;
    if (!absent) {
      memcpy(enc + off, cur, cl);
      off += cl;
    }
    int rc = decode_page_request(enc, off, &pr);
    if (rc != LDS_OK) fail("lds_page_request_decode: a valid encoding gives %d", rc);
    if (pr.direction != dir || pr.request_len != rl || (rl && memcmp(pr.request, req, rl) != 0))
      fail("lds_page_request_decode: fields do not come back");
    if (absent ? pr.cursor != NULL || pr.cursor_len : !pr.cursor || pr.cursor_len != cl ||
                                                          (cl && memcmp(pr.cursor, cur, cl) != 0))
      fail("lds_page_request_decode: the cursor does not come back");
    /* One byte short: must not decode. */
    rc = decode_page_request(enc, off - 1, &pr);
    if (rc == LDS_OK) fail("lds_page_request_decode: a truncated encoding decodes");
  }
  CALL("lds_page_request_decode", R_INVAL, lds_page_request_decode(p, n, NULL));
  CALL("lds_page_request_decode", R_INVAL, lds_page_request_decode(NULL, 1 + n, &pr));
}

static void step_signal(ctx *c, input *in) {
  uint8_t what = u8(in);
  int v = (what >> 2) % 3 == 2 ? 7 : (int)((what >> 2) % 3);
  switch (what % 4) {
  case 0: CALL("lds_runtime_set_online", R_OK, lds_runtime_set_online(c->rt, v)); break;
  case 1: CALL("lds_runtime_set_foreground", R_OK, lds_runtime_set_foreground(c->rt, v)); break;
  case 2: {
    lds_runtime_statistics st = LDS_RUNTIME_STATISTICS_INIT;
    CALL("lds_runtime_stats", R_OK, lds_runtime_stats(c->rt, &st));
    if (st.online > 1 || st.foreground > 1) fail("lds_runtime_stats: online %u foreground %u", st.online, st.foreground);
    break;
  }
  default:
    CALL("lds_runtime_set_online", R_INVAL, lds_runtime_set_online(NULL, v));
    CALL("lds_runtime_set_foreground", R_INVAL, lds_runtime_set_foreground(NULL, v));
    break;
  }
}

/* A cache id for a write: a memory cache, the persistent one, or a stray id. */
static lds_id pick_write_cache(ctx *c, input *in, bool *stray) {
  uint8_t b = u8(in);
  *stray = false;
  if ((b & 0xC0) == 0x40 && c->pcache) return c->pcache;
  if (b < 0xF0 && c->ncaches) return c->caches[b % c->ncaches];
  *stray = true;
  return stray_id(c, b);
}

static void make_pcache(ctx *c) {
  if (c->pcache) return;
  snprintf(c->pcache_path, sizeof c->pcache_path, "/dev/shm/lds-fuzz-api-%d.db", (int)getpid());
  unlink(c->pcache_path);
  lds_persistent_cache_options o = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  o.path = c->pcache_path;
  lds_id id = 0;
  int rc = CALL("lds_persistent_cache_new", R_OK | R_IO, lds_persistent_cache_new(c->rt, &o, &id));
  if (rc == LDS_OK) c->pcache = id;
}

/* lds_process_mutate: optimistic values over memory and persistent caches,
 * prefixes to invalidate, populate, and bad counts and sizes. */
static void step_mutate(ctx *c, input *in) {
  cell *cl;
  lds_id id = pick_cell_id(c, in, &cl);
  lds_id ld = pick_loader_id(c, in);
  uint8_t what = u8(in);
  if ((what & 7) == 7) make_pcache(c);
  size_t len;
  const uint8_t *req = bytes(in, 6, &len);
  opts_buf ob;
  bool bad, cached;
  const lds_load_options *o = pick_options(c, in, &ob, true, &bad, &cached);
  lds_cache_update up[3];
  lds_cache_prefix pre[2];
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  bool stray = false, s1;
  size_t nu = u8(in) % 4, np = u8(in) % 3;
  for (size_t i = 0; i < nu; i++) {
    up[i].cache = pick_write_cache(c, in, &s1);
    stray |= s1;
    up[i].key = bytes(in, 4, &up[i].key_len);
    up[i].value = bytes(in, 8, &up[i].value_len);
  }
  for (size_t i = 0; i < np; i++) {
    pre[i].cache = pick_write_cache(c, in, &s1);
    stray |= s1;
    pre[i].prefix = bytes(in, 3, &pre[i].prefix_len);
  }
  m.flags = (what & 8) ? LDS_MUTATE_POPULATE : 0;
  m.optimistic = nu ? up : NULL;
  m.optimistic_count = nu;
  m.invalidate = np ? pre : NULL;
  m.invalidate_count = np;
  switch ((what >> 4) % 8) {
  case 1: m.size = 4; bad = true; break;
  case 2: m.flags |= 1u << 7; bad = true; break;
  case 3: m.optimistic_count = LDS_MUTATION_KEYS_MAX + 1; bad = true; break;
  case 4: m.optimistic = NULL; m.optimistic_count = 1 + nu; bad = true; break;
  case 5:
    if (nu) {
      up[0].key = NULL;
      up[0].key_len = 1;
      bad = true;
    } else if (np) {
      pre[0].prefix = NULL;
      pre[0].prefix_len = 2;
      bad = true;
    }
    break;
  case 6: m.invalidate = NULL; m.invalidate_count = 1; bad = true; break;
  default: break;
  }
  bool null_mutation = (what & 0x80) && !bad;
  unsigned allowed = bad ? R_INVAL | R_NOENT : R_OK | R_NOENT | (cached ? R_INVAL : 0);
  if (!null_mutation && stray) allowed |= R_INVAL | R_NOENT;
  int rc = CALL("lds_process_mutate", allowed,
                lds_process_mutate(c->rt, id, (int32_t)u8(in), ld, req, len, o, null_mutation ? NULL : &m));
  if (bad && rc == LDS_OK) fail("lds_process_mutate accepted bad options");
  (void)cl;
}

static void step_action(ctx *c, input *in) {
  cell *cl = pick_cell(c, in);
  if (cl) atomic_store(&cl->action, u8(in) % 5);
}

/* A second host thread: runs calls (loads, cell calls, job calls,
 * batches) from its own slice of the input while the main thread goes on,
 * until the main thread joins it. It makes and frees nothing, so the
 * bookkeeping of cells, loaders and caches stays with the main thread. */
typedef struct helper {
  ctx *c;
  pthread_t thread;
  bool running;
  uint8_t bytes[32];
  input in;
} helper;

static void *helper_main(void *arg) {
  helper *h = arg;
  on_helper = true;
  while (h->in.n > 0) {
    uint8_t op = u8(&h->in);
    switch (op % 4) {
    case 0: step_load(h->c, &h->in); break;
    case 1:
      if (op & 0x80) step_pages(h->c, &h->in);
      else if (op & 0x40) step_signal(h->c, &h->in);
      else step_cell_call(h->c, &h->in);
      break;
    case 2: step_job(h->c, &h->in); break;
    default: step_submit(h->c, &h->in); break;
    }
  }
  return NULL;
}

static void helper_join(helper *h) {
  if (!h->running) return;
  pthread_join(h->thread, NULL);
  h->running = false;
}

static void step_helper(ctx *c, input *in, helper *h) {
  helper_join(h);
  size_t len;
  const uint8_t *p = bytes(in, sizeof h->bytes, &len);
  memcpy(h->bytes, p, len);
  h->c = c;
  h->in = (input){h->bytes, len};
  h->running = pthread_create(&h->thread, NULL, helper_main, h) == 0;
}

/* ------------------------------------------------------------------ */
/* The end of an input: quiet every cell, probe, free                  */
/* ------------------------------------------------------------------ */

/* An event on the marker cell, and the wait for it. Deliveries are
 * ordered: once it has arrived, every earlier call has had its events. */
static void marker_mark(ctx *c) {
  CALL("lds_loadable_set_loaded", R_OK, lds_loadable_set_loaded(c->rt, c->marker.id, "m", 1));
  wait_marker(c, ++c->marker_sent);
}

/* Failing calls on every live cell; none may cause an event. The cells
 * are made quiet first: callbacks stop acting (a marker shows that the
 * last acting callback has returned), every running job is cancelled,
 * then a marker shows that the cancels' events have arrived. */
static void probe(ctx *c) {
  for (int i = 0; i < c->ncells; i++) atomic_store(&c->cells[i].action, 0);
  marker_mark(c);
  for (int i = 0; i < c->ncells; i++) {
    cell *cl = &c->cells[i];
    if (!cl->live) continue;
    if (cl->pages) CALL("lds_pages_cancel", R_OK, lds_pages_cancel(c->rt, cl->id));
    else if (cl->process) CALL("lds_process_cancel", R_OK, lds_process_cancel(c->rt, cl->id));
    else CALL("lds_loadable_cancel", R_OK, lds_loadable_cancel(c->rt, cl->id));
  }
  marker_mark(c);
  lds_load_options small = LDS_LOAD_OPTIONS_INIT;
  small.size = 4;
  lds_load_options cached = LDS_LOAD_OPTIONS_INIT;
  cached.cache = c->ncaches ? c->caches[0] : 1;
  lds_id ld = c->nloaders ? c->loaders[0].id : UINT64_MAX - 1;
  const unsigned inval = R_INVAL | R_NOENT;
  for (int i = 0; i < c->ncells; i++) {
    cell *cl = &c->cells[i];
    if (!cl->live) continue;
    atomic_store(&cl->probed, true);
    if (cl->pages) {
      CALL("lds_pages_load", inval, lds_pages_load(c->rt, cl->id, ld, "x", 1, &small));
      CALL("lds_pages_load", inval, lds_pages_load(c->rt, cl->id, ld, NULL, 3, NULL));
      CALL("lds_pages_load", R_NOENT, lds_pages_load(c->rt, cl->id, UINT64_MAX - 1, "x", 1, NULL));
    } else if (cl->process) {
      lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
      m.optimistic_count = 1;
      CALL("lds_process_mutate", inval, lds_process_mutate(c->rt, cl->id, 1, ld, "x", 1, NULL, &m));
      m.optimistic_count = 0;
      m.size = 4;
      CALL("lds_process_mutate", inval, lds_process_mutate(c->rt, cl->id, 1, ld, "x", 1, NULL, &m));
      CALL("lds_process_run", inval, lds_process_run(c->rt, cl->id, 1, ld, "x", 1, &small));
      CALL("lds_process_run", inval, lds_process_run(c->rt, cl->id, 1, ld, "x", 1, &cached));
      CALL("lds_process_run", inval, lds_process_run(c->rt, cl->id, 1, ld, NULL, 3, NULL));
      CALL("lds_process_run", R_NOENT, lds_process_run(c->rt, cl->id, 1, UINT64_MAX - 1, "x", 1, NULL));
    } else {
      CALL("lds_loadable_load", inval, lds_loadable_load(c->rt, cl->id, ld, "x", 1, &small));
      CALL("lds_loadable_load", inval, lds_loadable_load(c->rt, cl->id, ld, NULL, 3, NULL));
      CALL("lds_loadable_set_loaded", R_INVAL, lds_loadable_set_loaded(c->rt, cl->id, NULL, 2));
      CALL("lds_loadable_load", R_NOENT, lds_loadable_load(c->rt, cl->id, UINT64_MAX - 1, "x", 1, NULL));
    }
  }
  /* Every job that started has ended: its cell was cancelled, reset, set,
   * freed or the job completed. */
  pthread_mutex_lock(&c->mu);
  int njobs = c->njobs;
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < njobs; i++) {
    lds_id job = c->jobs[i].id;
    int rc = lds_job_is_cancelled(c->rt, job);
    if (rc != 1) fail("job %llu still runs once every cell is quiet (lds_job_is_cancelled: %d)",
                      (unsigned long long)job, rc);
    CALL("lds_job_succeed", R_CANCELED, lds_job_succeed(c->rt, job, "late", 4));
    CALL("lds_job_progress", R_CANCELED, lds_job_progress(c->rt, job, 1, 1));
  }
  marker_mark(c);
  for (int i = 0; i < c->ncells; i++) atomic_store(&c->cells[i].probed, false);
  /* Every cell is quiet and its events have arrived: its snapshot is its
   * last event. */
  for (int i = 0; i < c->ncells; i++) {
    cell *cl = &c->cells[i];
    if (!cl->live || cl->pages) continue;
    lds_snapshot s;
    int rc = CALL("lds_loadable_get", cl->process ? R_OK | R_NOENT : R_OK, lds_loadable_get(c->rt, cl->id, &s));
    uint64_t seq = s.seq;
    int32_t status = s.status;
    uint32_t type = s.type;
    lds_snapshot_clear(&s);
    if (rc == LDS_OK && (seq != cl->last_seq || (seq != 0 && (status != cl->last_status || type != cl->last_type))))
      fail("cell %llu: snapshot seq %llu status %d type %u, last event seq %llu status %d type %u",
           (unsigned long long)cl->id, (unsigned long long)seq, status, type, (unsigned long long)cl->last_seq,
           cl->last_status, cl->last_type);
  }
}

static void finish(ctx *c) {
  atomic_store(&c->freeing, true);
  int rc = lds_runtime_free(c->rt);
  if (rc != LDS_OK) fail("lds_runtime_free returned %d", rc);
  if (c->pcache_path[0]) unlink(c->pcache_path);
  for (int i = 0; i < c->nloaders; i++)
    if (atomic_load(&c->loaders[i].free_calls) != 1)
      fail("loader %llu: free_data ran %d times", (unsigned long long)c->loaders[i].id,
           atomic_load(&c->loaders[i].free_calls));
  lds_id id;
  if (lds_loadable_new(c->rt, on_event, NULL, &id) != LDS_ECLOSED) fail("a call after lds_runtime_free did not return LDS_ECLOSED");
  if (lds_runtime_free(c->rt) != LDS_ECLOSED) fail("a second lds_runtime_free did not return LDS_ECLOSED");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  helper h = {0};
  ctx *c = calloc(1, sizeof *c);
  if (!c) return 0;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  uint8_t mode = u8(&in);
  c->poll = mode & 1;
  lds_runtime_options ro = LDS_RUNTIME_OPTIONS_INIT;
  ro.delivery = c->poll ? LDS_DELIVER_POLL : LDS_DELIVER_LOOP;
  if (lds_runtime_new(&ro, &c->rt) != LDS_OK) fail("lds_runtime_new failed");
  c->marker.ctx = c;
  CALL("lds_loadable_new", R_OK, lds_loadable_new(c->rt, on_event, &c->marker, &c->marker.id));
  c->marker.live = true;

  for (int step = 0; step < MAX_STEPS && in.n > 0; step++) {
    uint8_t op = u8(&in);
    switch (op % 16) {
    case 0:
      if (op & 0x80) step_new_pages(c, &in);
      else step_new_cell(c, &in);
      break;
    case 1: step_free_cell(c, &in); break;
    case 2:
    case 3: step_load(c, &in); break;
    case 4:
    case 5: step_cell_call(c, &in); break;
    case 6: step_new_loader(c, &in); break;
    case 7: step_free_loader(c, &in); break;
    case 8:
      if (op & 0x80) step_page_job(c, &in);
      else step_job(c, &in);
      break;
    case 9:
      if (op & 0x80) step_helper(c, &in, &h);
      else step_job(c, &in);
      break;
    case 10:
      if (op & 0x80) step_mutate(c, &in);
      else step_submit(c, &in);
      break;
    case 11:
      if ((op & 0xC0) == 0x80) step_signal(c, &in);
      else if ((op & 0xC0) == 0xC0) step_page_decode(c, &in);
      else step_cache(c, &in);
      break;
    case 12: step_bad_args(c, &in); break;
    case 13: step_action(c, &in); break;
    case 14:
      if (op & 0x80) step_schedule(c, &in);
      else if (c->poll) deliver(c, op & 0x10, (op >> 5) % 4, (op & 0x10) ? (size_t)u8(&in) * 4 : 0);
      break;
    default:
      if (op & 0x80) step_pages(c, &in);
      else run_for(c, (op >> 4) % 3);
      break;
    }
  }
  helper_join(&h);
  probe(c);
  finish(c);
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c);
  return 0;
}
