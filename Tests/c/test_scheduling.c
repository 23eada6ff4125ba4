/* test_scheduling.c — loader limits (max_concurrent, rate_per_s, burst),
 * priorities, LDS_FLAG_QUEUED, polling (refresh_interval_ms) and
 * lds_prefetch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { KEPT_JOBS = 512 };

/* A host loader with limits that records its starts. Guarded by the
 * harness lock. */
typedef struct sched_loader {
  lds_runtime *rt;
  lds_id id;
  /* What a start does: 0 keeps the job for the test, 1 succeeds at once
   * with the request as value (fails instead while fail_now is set), 2
   * hands it to the worker thread. */
  int mode;
  bool fail_now;
  size_t starts;
  /* Starts of the request "load-once", counted past KEPT_JOBS too (a
   * slow test thread may let polls fill the kept ones first). */
  size_t once_starts;
  size_t cancels;
  int running;
  int max_running;
  lds_id jobs[KEPT_JOBS];
  char requests[KEPT_JOBS][32];
  uint64_t start_ms[KEPT_JOBS];
  /* mode 2: jobs for the worker, a ring. */
  lds_id *ring;
  size_t ring_cap, head, tail;
  bool closing;
} sched_loader;

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void sched_start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  sched_loader *l = data;
  callback_enter("loader start");
  harness_lock();
  size_t n = l->starts++;
  if (len == 9 && memcmp(request, "load-once", 9) == 0) l->once_starts++;
  if (n < KEPT_JOBS) {
    l->jobs[n] = job;
    size_t c = len < 31 ? len : 31;
    memcpy(l->requests[n], request, c);
    l->requests[n][c] = 0;
    l->start_ms[n] = now_ms();
  }
  l->running++;
  if (l->running > l->max_running) l->max_running = l->running;
  int mode = l->mode;
  bool fail = l->fail_now;
  if (mode == 1) l->running--;
  if (mode == 2) {
    l->ring[l->tail % l->ring_cap] = job;
    l->tail++;
  }
  harness_notify();
  harness_unlock();
  if (mode == 1) {
    int rc = fail ? lds_job_fail(rt, job, 1, "failed") : lds_job_succeed(rt, job, request, len);
    /* A poll may start while the runtime is being freed. */
    if (rc != LDS_OK && rc != LDS_ECLOSED) check_fail(__FILE__, __LINE__, "completing a job returned %d", rc);
  }
}

static void sched_cancel(lds_runtime *rt, lds_id job, void *data) {
  (void)rt;
  (void)job;
  sched_loader *l = data;
  harness_lock();
  l->cancels++;
  harness_notify();
  harness_unlock();
}

static lds_id sched_new(lds_runtime *rt, sched_loader *l, int mode, uint32_t max_concurrent,
                        uint32_t rate, uint32_t burst) {
  memset(l, 0, sizeof *l);
  l->rt = rt;
  l->mode = mode;
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = sched_start;
  o.cancel = sched_cancel;
  o.loader_data = l;
  o.max_concurrent = max_concurrent;
  o.rate_per_s = rate;
  o.burst = burst;
  CHECK_RC(lds_loader_new_ex(rt, &o, &l->id), LDS_OK);
  return l->id;
}

/* Ends the i-th started job (running one less first). */
static int sched_succeed(sched_loader *l, size_t i) {
  harness_lock();
  lds_id job = l->jobs[i];
  l->running--;
  harness_unlock();
  return lds_job_succeed(l->rt, job, "v", 1);
}

static const char *sched_request(sched_loader *l, size_t i) {
  harness_lock();
  const char *r = i < l->starts && i < KEPT_JOBS ? l->requests[i] : "";
  harness_unlock();
  return r;
}

static int load_text(lds_runtime *rt, lds_id cell, lds_id loader, const char *request,
                     const lds_load_options *o) {
  return lds_loadable_load(rt, cell, loader, request, strlen(request), o);
}

/* Waits, on events, until ms milliseconds have passed: a load with that
 * timeout on a loader that never answers. */
static sched_loader clock_loaders[8];
static recorder clock_recorders[8];
static size_t clocks;

static void wait_ms(lds_runtime *rt, uint32_t ms) {
  if (clocks == 8) abort();
  sched_loader *never = &clock_loaders[clocks];
  recorder *rec = &clock_recorders[clocks];
  clocks++;
  lds_id loader = sched_new(rt, never, 0, 0, 0, 0);
  rec_init(rec, rt);
  lds_id cell = cell_new(rt, rec);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = ms;
  CHECK_RC(load_text(rt, cell, loader, "clock", &o), LDS_OK);
  WAIT_FOR(rec->count >= 2 && rec->events[rec->count - 1]->ev.status == LDS_ERROR);
  CHECK_RC(lds_loadable_free(rt, cell), LDS_OK);
  CHECK_RC(lds_loader_free(rt, loader), LDS_OK);
  /* Both stay: a late callback must find them (the test ends soon). */
}

/* ------------------------------------------------------------------ */
/* The limit under load                                                */
/* ------------------------------------------------------------------ */

enum { THREADS = 8, LIMIT = 4 };

static struct {
  lds_runtime *rt;
  lds_id loader;
  size_t per_thread;
  size_t loaded;  /* LOADED events; guarded by the harness lock */
} many;

static void count_loaded(const lds_event *e, void *data) {
  (void)data;
  if (e->type != LDS_EVENT_STATE || e->status != LDS_LOADED) return;
  harness_lock();
  many.loaded++;
  harness_notify();
  harness_unlock();
}

static void *producer(void *arg) {
  size_t index = (size_t)(uintptr_t)arg;
  for (size_t i = 0; i < many.per_thread; i++) {
    lds_id cell = 0;
    if (lds_loadable_new(many.rt, count_loaded, NULL, &cell) != LDS_OK) {
      check_fail(__FILE__, __LINE__, "lds_loadable_new failed");
      return NULL;
    }
    char request[32];
    int len = snprintf(request, sizeof request, "%zu:%zu", index, i);
    int rc;
    while ((rc = lds_loadable_load(many.rt, cell, many.loader, request, (size_t)len, NULL)) == LDS_EAGAIN) {
    }
    if (rc != LDS_OK) check_fail(__FILE__, __LINE__, "lds_loadable_load returned %d", rc);
  }
  return NULL;
}

/* Ends the jobs in the order they started, but only once LIMIT of them
 * run (or every load has started): the limit is then reached for sure,
 * however the threads are scheduled, and the test checks that it is
 * never passed. */
static void *completer(void *arg) {
  sched_loader *l = arg;
  size_t total = THREADS * many.per_thread;
  for (;;) {
    harness_lock();
    while ((l->head == l->tail || (l->running < LIMIT && l->starts < total)) && !l->closing) {
      struct timespec dl = harness_deadline();
      harness_wait(&dl);
    }
    if (l->head == l->tail) {
      harness_unlock();
      return NULL;
    }
    lds_id job = l->ring[l->head % l->ring_cap];
    l->head++;
    /* The job stops counting before the library learns that it ended. */
    l->running--;
    harness_unlock();
    int rc = lds_job_succeed(l->rt, job, "v", 1);
    if (rc != LDS_OK) check_fail(__FILE__, __LINE__, "lds_job_succeed returned %d", rc);
  }
}

TEST(test_sched_limit_holds_exactly_under_10000_loads_from_8_threads) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader *l = calloc(1, sizeof *l);
  REQUIRE(l != NULL);
  many.rt = rt;
  many.loader = sched_new(rt, l, 2, LIMIT, 0, 0);
  many.per_thread = test_slow() ? 125 : 1250;
  l->ring_cap = 64;
  l->ring = calloc(l->ring_cap, sizeof *l->ring);
  REQUIRE(l->ring != NULL);
  pthread_t done = thread_start(completer, l);
  pthread_t threads[THREADS];
  for (size_t i = 0; i < THREADS; i++) threads[i] = thread_start(producer, (void *)(uintptr_t)i);
  for (size_t i = 0; i < THREADS; i++) thread_join(threads[i]);
  size_t total = THREADS * many.per_thread;
  WAIT_FOR(many.loaded >= total);
  harness_lock();
  l->closing = true;
  harness_notify();
  harness_unlock();
  thread_join(done);
  CHECK_EQ(l->starts, total);
  CHECK_EQ(l->max_running, LIMIT);
  CHECK_EQ(l->cancels, 0);
  rt_free(rt);
  free(l->ring);
  free(l);
}

/* ------------------------------------------------------------------ */
/* Queued jobs                                                         */
/* ------------------------------------------------------------------ */

TEST(test_sched_queued_load_is_flagged_then_started_without_the_flag) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_id ca = cell_new(rt, &a), cb = cell_new(rt, &b);
  REQUIRE_RC(load_text(rt, ca, loader, "a", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  CHECK_STATE(rec_at(&a, 0), 1, LDS_LOADING, 0);
  REQUIRE_RC(load_text(rt, cb, loader, "b", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&b, 1));
  CHECK_STATE(rec_at(&b, 0), 1, LDS_LOADING, LDS_FLAG_QUEUED);
  CHECK_BYTES(rec_at(&b, 0)->request, rec_at(&b, 0)->request_len, "b");
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  REQUIRE(REC_WAIT(&b, 2));
  /* The start is announced before the loader is called. */
  CHECK_STATE(rec_at(&b, 1), 2, LDS_LOADING, 0);
  CHECK_STR(sched_request(&l, 1), "b");
  REQUIRE_RC(sched_succeed(&l, 1), LDS_OK);
  REQUIRE(REC_WAIT(&b, 3));
  CHECK_STATE(rec_at(&b, 2), 3, LDS_LOADED, 0);
  rt_free(rt);
  rec_destroy(&a);
  rec_destroy(&b);
}

/* The queued load of each cell is ended by another operation; none may
 * reach the loader. */
TEST(test_sched_cancelled_queued_job_never_calls_the_loader) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  enum { CELLS = 7 };
  recorder rec[CELLS];
  lds_id cell[CELLS];
  for (int i = 0; i < CELLS; i++) {
    rec_init(&rec[i], rt);
    cell[i] = cell_new(rt, &rec[i]);
  }
  REQUIRE_RC(load_text(rt, cell[0], loader, "running", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  REQUIRE_RC(lds_loadable_set_loaded(rt, cell[1], "old", 3), LDS_OK);
  lds_load_options timed = LDS_LOAD_OPTIONS_INIT;
  timed.timeout_ms = 20;
  REQUIRE_RC(load_text(rt, cell[1], loader, "cancelled", NULL), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[2], loader, "reset", NULL), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[3], loader, "superseded", NULL), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[4], loader, "freed", NULL), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[5], loader, "timed out", &timed), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[6], loader, "set", NULL), LDS_OK);
  for (int i = 1; i < CELLS; i++) REQUIRE(WAIT_FOR(rec_last(&rec[i]) != NULL &&
                                                   (rec_last(&rec[i])->flags & LDS_FLAG_QUEUED)));
  REQUIRE_RC(lds_loadable_cancel(rt, cell[1]), LDS_OK);
  REQUIRE_RC(lds_loadable_reset(rt, cell[2]), LDS_OK);
  REQUIRE_RC(lds_loadable_set_error(rt, cell[6], 5, "manual"), LDS_OK);
  REQUIRE_RC(lds_loadable_free(rt, cell[4]), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&rec[1])->flags & LDS_FLAG_CANCELLED));
  CHECK_EQ(rec_last(&rec[1])->status, LDS_LOADED);
  CHECK_BYTES(rec_last(&rec[1])->value, rec_last(&rec[1])->value_len, "old");
  REQUIRE(WAIT_FOR(rec_last(&rec[2])->status == LDS_ABSENT));
  REQUIRE(WAIT_FOR(rec_last(&rec[5])->status == LDS_ERROR));
  CHECK_EQ(rec_last(&rec[5])->error_code, LDS_ETIMEDOUT);
  REQUIRE(WAIT_FOR(rec_last(&rec[6])->status == LDS_ERROR));
  /* The superseding load queues behind the others. */
  REQUIRE_RC(load_text(rt, cell[3], loader, "after", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&rec[3], 2));
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_STR(sched_request(&l, 1), "after");
  REQUIRE_RC(sched_succeed(&l, 1), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&rec[3])->status == LDS_LOADED));
  CHECK_EQ(l.starts, 2);
  CHECK_EQ(l.cancels, 0);
  rt_free(rt);
  CHECK_EQ(l.starts, 2);
  for (int i = 0; i < CELLS; i++) rec_destroy(&rec[i]);
}

static void count_free(void *data) {
  sched_loader *l = data;
  harness_lock();
  l->closing = true; /* here: free_data ran */
  harness_notify();
  harness_unlock();
}

/* A freed loader's queued jobs still start in turn; free_data runs once
 * the last of them has ended. */
TEST(test_sched_freed_loader_still_starts_its_queued_jobs_then_frees_its_data) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  memset(&l, 0, sizeof l);
  l.rt = rt;
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = sched_start;
  o.free_data = count_free;
  o.loader_data = &l;
  o.max_concurrent = 1;
  lds_id loader = 0;
  REQUIRE_RC(lds_loader_new_ex(rt, &o, &loader), LDS_OK);
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_id ca = cell_new(rt, &a), cb = cell_new(rt, &b);
  REQUIRE_RC(load_text(rt, ca, loader, "a", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  REQUIRE_RC(load_text(rt, cb, loader, "b", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&b, 1));
  REQUIRE_RC(lds_loader_free(rt, loader), LDS_OK);
  CHECK_RC(load_text(rt, ca, loader, "c", NULL), LDS_ENOENT);
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_STR(sched_request(&l, 1), "b");
  harness_lock();
  bool freed_early = l.closing;
  harness_unlock();
  CHECK(!freed_early);
  REQUIRE_RC(sched_succeed(&l, 1), LDS_OK);
  REQUIRE(WAIT_FOR(l.closing));
  REQUIRE(WAIT_FOR(rec_last(&b)->status == LDS_LOADED));
  rt_free(rt);
  rec_destroy(&a);
  rec_destroy(&b);
}

/* ------------------------------------------------------------------ */
/* Priorities                                                          */
/* ------------------------------------------------------------------ */

TEST(test_sched_priority_order_with_a_changed_priority) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  const char *names[] = {"first", "b0", "c5", "d0", "e1", "f0"};
  int32_t priorities[] = {0, 0, 5, 0, 1, 0};
  enum { N = 6 };
  recorder rec[N];
  lds_id cell[N];
  for (int i = 0; i < N; i++) {
    rec_init(&rec[i], rt);
    cell[i] = cell_new(rt, &rec[i]);
    lds_load_options o = LDS_LOAD_OPTIONS_INIT;
    o.priority = priorities[i];
    REQUIRE_RC(load_text(rt, cell[i], loader, names[i], &o), LDS_OK);
    if (i == 0) REQUIRE(WAIT_FOR(l.starts == 1));
  }
  for (int i = 1; i < N; i++) REQUIRE(REC_WAIT(&rec[i], 1));
  /* d0 goes first of all; f0 goes behind e1 (and stays behind b0). */
  REQUIRE_RC(lds_loadable_set_priority(rt, cell[3], 10), LDS_OK);
  REQUIRE_RC(lds_loadable_set_priority(rt, cell[5], 0), LDS_OK);
  const char *expected[] = {"first", "d0", "c5", "e1", "b0", "f0"};
  for (size_t i = 0; i < N; i++) {
    REQUIRE(WAIT_FOR(l.starts == i + 1));
    CHECK_STR(sched_request(&l, i), expected[i]);
    REQUIRE_RC(sched_succeed(&l, i), LDS_OK);
  }
  for (int i = 0; i < N; i++) REQUIRE(WAIT_FOR(rec_last(&rec[i])->status == LDS_LOADED));
  CHECK_EQ(l.max_running, 1);
  rt_free(rt);
  for (int i = 0; i < N; i++) rec_destroy(&rec[i]);
}

TEST(test_sched_shared_job_counts_once_and_takes_its_highest_priority) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  recorder rec[4];
  lds_id cell[4];
  for (int i = 0; i < 4; i++) {
    rec_init(&rec[i], rt);
    cell[i] = cell_new(rt, &rec[i]);
  }
  REQUIRE_RC(load_text(rt, cell[0], loader, "first", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.priority = 1;
  REQUIRE_RC(load_text(rt, cell[1], loader, "other", &o), LDS_OK);
  lds_load_options shared = LDS_LOAD_OPTIONS_INIT;
  shared.flags = LDS_LOAD_SHARE;
  REQUIRE_RC(load_text(rt, cell[2], loader, "shared", &shared), LDS_OK);
  shared.priority = 3;
  REQUIRE_RC(load_text(rt, cell[3], loader, "shared", &shared), LDS_OK);
  for (int i = 1; i < 4; i++) REQUIRE(REC_WAIT(&rec[i], 1));
  CHECK(rec_at(&rec[3], 0)->flags & LDS_FLAG_QUEUED);
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_STR(sched_request(&l, 1), "shared");
  /* Both cells were told that the job starts. */
  REQUIRE(REC_WAIT(&rec[2], 2));
  REQUIRE(REC_WAIT(&rec[3], 2));
  CHECK_STATE(rec_at(&rec[2], 1), 2, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&rec[3], 1), 2, LDS_LOADING, 0);
  REQUIRE_RC(sched_succeed(&l, 1), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 3));
  CHECK_STR(sched_request(&l, 2), "other");
  REQUIRE_RC(sched_succeed(&l, 2), LDS_OK);
  for (int i = 0; i < 4; i++) REQUIRE(WAIT_FOR(rec_last(&rec[i])->status == LDS_LOADED));
  CHECK_EQ(l.starts, 3);
  CHECK_EQ(l.max_running, 1);
  rt_free(rt);
  for (int i = 0; i < 4; i++) rec_destroy(&rec[i]);
}

TEST(test_sched_process_run_waits_and_changes_priority) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  recorder ra, rb, rc;
  rec_init(&ra, rt);
  rec_init(&rb, rt);
  rec_init(&rc, rt);
  lds_id a = process_new(rt, &ra), b = process_new(rt, &rb), c = process_new(rt, &rc);
  REQUIRE_RC(lds_process_run(rt, a, 1, loader, "a", 1, NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  REQUIRE_RC(lds_process_run(rt, b, 2, loader, "b", 1, NULL), LDS_OK);
  REQUIRE_RC(lds_process_run(rt, c, 3, loader, "c", 1, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&rc, 1));
  CHECK_STATE(rec_at(&rc, 0), 1, LDS_RUNNING, LDS_FLAG_QUEUED);
  REQUIRE_RC(lds_process_set_priority(rt, c, 2), LDS_OK);
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_STR(sched_request(&l, 1), "c");
  CHECK_RC(lds_process_set_priority(rt, b, 1), LDS_OK);
  CHECK_RC(lds_loadable_set_priority(rt, b, 1), LDS_ENOENT);
  CHECK_RC(lds_process_set_priority(rt, 999999, 1), LDS_ENOENT);
  CHECK_RC(lds_process_set_priority(NULL, b, 1), LDS_EINVAL);
  rt_free(rt);
  rec_destroy(&ra);
  rec_destroy(&rb);
  rec_destroy(&rc);
}

/* ------------------------------------------------------------------ */
/* Rate limit                                                          */
/* ------------------------------------------------------------------ */

TEST(test_sched_rate_limit_spaces_starts_over_a_window) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  enum { RATE = 20, BURST = 5, LOADS = 35 };
  lds_id loader = sched_new(rt, &l, 1, 0, RATE, BURST);
  recorder rec[LOADS];
  lds_id cell[LOADS];
  uint64_t begun = now_ms();
  for (int i = 0; i < LOADS; i++) {
    rec_init(&rec[i], rt);
    cell[i] = cell_new(rt, &rec[i]);
    REQUIRE_RC(load_text(rt, cell[i], loader, "r", NULL), LDS_OK);
  }
  for (int i = 0; i < LOADS; i++) REQUIRE(WAIT_FOR(rec_last(&rec[i]) != NULL &&
                                                   rec_last(&rec[i])->status == LDS_LOADED));
  CHECK_EQ(l.starts, LOADS);
  /* The first BURST start at once; the rest come RATE per second: 1.5 s
   * at least for 30 (with a generous tolerance below, none above). */
  uint64_t span = l.start_ms[LOADS - 1] - l.start_ms[0];
  CHECK_OP(span, >=, (LOADS - BURST) * 1000 / RATE * 8 / 10);
  CHECK_OP(l.start_ms[BURST - 1] - begun, <, 1000);
  /* No second holds more than a full bucket and one second's tokens. */
  for (int i = 0; i < LOADS; i++) {
    int in_window = 0;
    for (int j = i; j < LOADS && l.start_ms[j] < l.start_ms[i] + 1000; j++) in_window++;
    CHECK_OP(in_window, <=, BURST + RATE + 1);
  }
  /* Later cells waited for a token: their first event said so. */
  CHECK(rec_at(&rec[LOADS - 1], 0)->flags & LDS_FLAG_QUEUED);
  rt_free(rt);
  for (int i = 0; i < LOADS; i++) rec_destroy(&rec[i]);
}

/* ------------------------------------------------------------------ */
/* Polling                                                             */
/* ------------------------------------------------------------------ */

static size_t starts_of(sched_loader *l, const char *request) {
  size_t n = 0;
  harness_lock();
  for (size_t i = 0; i < l->starts && i < KEPT_JOBS; i++) {
    if (strcmp(l->requests[i], request) == 0) n++;
  }
  harness_unlock();
  return n;
}

/* Counted under the harness lock (WAIT_FOR). */
static size_t starts_locked(sched_loader *l, const char *request) {
  size_t n = 0;
  for (size_t i = 0; i < l->starts && i < KEPT_JOBS; i++) {
    if (strcmp(l->requests[i], request) == 0) n++;
  }
  return n;
}

TEST(test_sched_polling_refreshes_silently_and_stops_on_every_stop_condition) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 1, 0, 0, 0);
  const char *names[] = {"cancel", "reset", "load", "free", "set_loaded", "set_error", "error"};
  enum { N = 7 };
  recorder rec[N];
  lds_id cell[N];
  lds_load_options poll = LDS_LOAD_OPTIONS_INIT;
  poll.refresh_interval_ms = 10;
  for (int i = 0; i < N; i++) {
    rec_init(&rec[i], rt);
    cell[i] = cell_new(rt, &rec[i]);
    REQUIRE_RC(load_text(rt, cell[i], loader, names[i], &poll), LDS_OK);
  }
  for (int i = 0; i < N; i++) REQUIRE(WAIT_FOR(starts_locked(&l, names[i]) >= 3));
  /* A poll is a silent refresh: REFRESHING over the loaded value. */
  REQUIRE(WAIT_FOR(rec[0].count >= 4));
  CHECK_STATE(rec_at(&rec[0], 2), 3, LDS_LOADED, LDS_FLAG_REFRESHING);
  REQUIRE_RC(lds_loadable_cancel(rt, cell[0]), LDS_OK);
  REQUIRE_RC(lds_loadable_reset(rt, cell[1]), LDS_OK);
  REQUIRE_RC(load_text(rt, cell[2], loader, "load-once", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_free(rt, cell[3]), LDS_OK);
  REQUIRE_RC(lds_loadable_set_loaded(rt, cell[4], "x", 1), LDS_OK);
  REQUIRE_RC(lds_loadable_set_error(rt, cell[5], 1, "x"), LDS_OK);
  /* The stop operations have run once a later one has. */
  wait_ms(rt, 1);
  harness_lock();
  l.fail_now = true;
  harness_unlock();
  REQUIRE(WAIT_FOR(rec_last(&rec[6])->status == LDS_ERROR));
  size_t before[N];
  for (int i = 0; i < N; i++) before[i] = starts_of(&l, names[i]);
  harness_lock();
  size_t once = l.once_starts;
  harness_unlock();
  wait_ms(rt, 100);
  for (int i = 0; i < N; i++) CHECK_EQ(starts_of(&l, names[i]), before[i]);
  harness_lock();
  size_t once_after = l.once_starts;
  harness_unlock();
  CHECK_EQ(once_after, once);
  CHECK_EQ(once, 1);
  CHECK_EQ(rec_last(&rec[6])->status, LDS_ERROR);
  rt_free(rt);
  for (int i = 0; i < N; i++) rec_destroy(&rec[i]);
}

TEST(test_sched_polling_goes_on_after_errors_when_asked) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 1, 0, 0, 0);
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  lds_load_options poll = LDS_LOAD_OPTIONS_INIT;
  poll.refresh_interval_ms = 5;
  poll.flags = LDS_LOAD_POLL_ON_ERROR;
  poll.retry_base_ms = 1;
  poll.retry_max_ms = 10;
  REQUIRE_RC(load_text(rt, cell, loader, "keep", &poll), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts >= 2));
  harness_lock();
  l.fail_now = true;
  size_t failing_from = l.starts;
  harness_unlock();
  REQUIRE(WAIT_FOR(l.starts >= failing_from + 4));
  REQUIRE(WAIT_FOR(rec_last(&rec)->status == LDS_ERROR));
  harness_lock();
  l.fail_now = false;
  harness_unlock();
  REQUIRE(WAIT_FOR(rec_last(&rec)->status == LDS_LOADED));
  rt_free(rt);
  rec_destroy(&rec);
}

TEST(test_sched_pause_and_resume_polling_of_the_runtime) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 1, 0, 0, 0);
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  lds_load_options poll = LDS_LOAD_OPTIONS_INIT;
  poll.refresh_interval_ms = 10;
  REQUIRE_RC(load_text(rt, cell, loader, "p", &poll), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts >= 2));
  REQUIRE_RC(lds_runtime_pause_polling(rt), LDS_OK);
  REQUIRE_RC(lds_runtime_pause_polling(rt), LDS_OK);
  wait_ms(rt, 30);
  size_t paused = starts_of(&l, "p");
  wait_ms(rt, 80);
  CHECK_EQ(starts_of(&l, "p"), paused);
  /* A load asked for by the host still runs while polling is paused. */
  REQUIRE_RC(lds_loadable_refresh(rt, cell), LDS_OK);
  REQUIRE(WAIT_FOR(starts_locked(&l, "p") == paused + 1));
  REQUIRE_RC(lds_runtime_resume_polling(rt), LDS_OK);
  REQUIRE(WAIT_FOR(starts_locked(&l, "p") >= paused + 3));
  CHECK_RC(lds_runtime_pause_polling(NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_resume_polling(NULL), LDS_EINVAL);
  rt_free(rt);
  rec_destroy(&rec);
}

/* ------------------------------------------------------------------ */
/* Prefetch                                                            */
/* ------------------------------------------------------------------ */

TEST(test_sched_prefetch_then_load_calls_the_loader_once) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 0, 0, 0);
  lds_id cache = 0;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &cache), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  REQUIRE_RC(lds_prefetch(rt, loader, "k", 1, &o), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_id ca = cell_new(rt, &a), cb = cell_new(rt, &b);
  /* Loaded while the prefetch runs: waits for its job (no LDS_LOAD_SHARE). */
  REQUIRE_RC(lds_loadable_load(rt, ca, loader, "k", 1, &o), LDS_OK);
  REQUIRE(REC_WAIT(&a, 1));
  CHECK_STATE(rec_at(&a, 0), 1, LDS_LOADING, 0);
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(REC_WAIT(&a, 2));
  CHECK_STATE(rec_at(&a, 1), 2, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&a, 1)->value, rec_at(&a, 1)->value_len, "v");
  /* Loaded after it: from the cache. */
  REQUIRE_RC(lds_loadable_load(rt, cb, loader, "k", 1, &o), LDS_OK);
  REQUIRE(REC_WAIT(&b, 1));
  CHECK_STATE(rec_at(&b, 0), 1, LDS_LOADED, LDS_FLAG_FROM_CACHE);
  CHECK_EQ(l.starts, 1);
  lds_cache_value v;
  REQUIRE_RC(lds_cache_get(rt, cache, "k", 1, &v), 1);
  CHECK_BYTES(v.value, v.value_len, "v");
  lds_cache_value_clear(&v);
  /* Arguments. */
  lds_load_options none = LDS_LOAD_OPTIONS_INIT;
  CHECK_RC(lds_prefetch(rt, loader, "k", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_prefetch(rt, loader, "k", 1, &none), LDS_EINVAL);
  CHECK_RC(lds_prefetch(rt, loader, NULL, 1, &o), LDS_EINVAL);
  CHECK_RC(lds_prefetch(NULL, loader, "k", 1, &o), LDS_EINVAL);
  CHECK_RC(lds_prefetch(rt, 424242, "k", 1, &o), LDS_ENOENT);
  o.cache = 424242;
  CHECK_RC(lds_prefetch(rt, loader, "k", 1, &o), LDS_ENOENT);
  rt_free(rt);
  CHECK_EQ(l.starts, 1);
  rec_destroy(&a);
  rec_destroy(&b);
}

TEST(test_sched_prefetch_waits_behind_loads_at_its_low_priority) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  lds_id loader = sched_new(rt, &l, 0, 1, 0, 0);
  lds_id cache = 0;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &cache), LDS_OK);
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_id ca = cell_new(rt, &a), cb = cell_new(rt, &b);
  REQUIRE_RC(load_text(rt, ca, loader, "first", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  REQUIRE_RC(lds_prefetch(rt, loader, "pre", 3, &o), LDS_OK);
  REQUIRE_RC(load_text(rt, cb, loader, "user", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&b, 1));
  REQUIRE_RC(sched_succeed(&l, 0), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_STR(sched_request(&l, 1), "user");
  REQUIRE_RC(sched_succeed(&l, 1), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 3));
  CHECK_STR(sched_request(&l, 2), "pre");
  REQUIRE_RC(sched_succeed(&l, 2), LDS_OK);
  /* The prefetch's value lands in the cache: a cache-first load finds it. */
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  REQUIRE_RC(lds_loadable_load(rt, ca, loader, "pre", 3, &o), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&a)->flags & LDS_FLAG_FROM_CACHE));
  CHECK_EQ(rec_last(&a)->status, LDS_LOADED);
  CHECK_EQ(l.starts, 3);
  rt_free(rt);
  rec_destroy(&a);
  rec_destroy(&b);
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

TEST(test_sched_options_of_older_sizes_and_bad_arguments) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  sched_loader l;
  memset(&l, 0, sizeof l);
  l.rt = rt;
  /* A loader options struct from before the limits: no limit. */
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.size = (uint32_t)offsetof(lds_loader_options, max_concurrent);
  o.start = sched_start;
  o.loader_data = &l;
  o.max_concurrent = 1; /* past size: not read */
  lds_id loader = 0;
  REQUIRE_RC(lds_loader_new_ex(rt, &o, &loader), LDS_OK);
  o.size = (uint32_t)offsetof(lds_loader_options, loader_data);
  CHECK_RC(lds_loader_new_ex(rt, &o, &loader), LDS_EINVAL);
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_id ca = cell_new(rt, &a), cb = cell_new(rt, &b);
  /* Load options from before the scheduling fields. */
  lds_load_options lo = LDS_LOAD_OPTIONS_INIT;
  lo.size = (uint32_t)offsetof(lds_load_options, priority);
  REQUIRE_RC(load_text(rt, ca, loader, "a", &lo), LDS_OK);
  REQUIRE_RC(load_text(rt, cb, loader, "b", &lo), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  CHECK_EQ(l.max_running, 2);
  lo.size = sizeof lo;
  lo.flags = 1u << 30;
  CHECK_RC(load_text(rt, ca, loader, "a", &lo), LDS_EINVAL);
  CHECK_RC(lds_loadable_set_priority(rt, 999999, 1), LDS_ENOENT);
  CHECK_RC(lds_loadable_set_priority(NULL, ca, 1), LDS_EINVAL);
  /* Built-in loaders take the limits too, and accept their older sizes. */
  lds_file_options fo = LDS_FILE_OPTIONS_INIT;
  fo.max_concurrent = 2;
  lds_id file = 0;
  CHECK_RC(lds_file_loader_new(rt, &fo, &file), LDS_OK);
  fo.size = (uint32_t)offsetof(lds_file_options, max_concurrent);
  CHECK_RC(lds_file_loader_new(rt, &fo, &file), LDS_OK);
  fo.size = 4;
  CHECK_RC(lds_file_loader_new(rt, &fo, &file), LDS_EINVAL);
  lds_exec_options eo = LDS_EXEC_OPTIONS_INIT;
  eo.rate_per_s = 10;
  CHECK_RC(lds_exec_loader_new(rt, &eo, &file), LDS_OK);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.max_per_host = 2;
  ho.max_concurrent = 8;
  CHECK_RC(lds_http_loader_new(rt, &ho, &file), LDS_OK);
  rt_free(rt);
  rec_destroy(&a);
  rec_destroy(&b);
}
