/* test_runtime.c — the library and runtime lifecycle, delivery threads,
 * and the rule that no callback runs inside the call that caused it. */
#include <limits.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TEST(test_version_matches_header) {
  CHECK_EQ(lds_version(), LDS_VERSION);
  CHECK_EQ(LDS_VERSION, (LDS_VERSION_MAJOR << 16) | (LDS_VERSION_MINOR << 8) | LDS_VERSION_PATCH);
}

TEST(test_strerror_messages) {
  const int codes[] = {LDS_OK,       LDS_EINVAL, LDS_ENOENT,  LDS_ESTATE, LDS_ECANCELED,
                       LDS_ETIMEDOUT, LDS_ENOMEM, LDS_ECLOSED, LDS_ETOOBIG, LDS_EIO,
                       LDS_EAGAIN, LDS_EREDIS, LDS_ENOTSUP, LDS_EOFFLINE};
  const size_t n = sizeof codes / sizeof codes[0];
  for (size_t i = 0; i < n; i++) {
    const char *m = lds_strerror(codes[i]);
    REQUIRE(m != NULL);
    CHECK(m[0] != '\0');
    CHECK(strcmp(m, "unknown error") != 0);
    for (size_t j = 0; j < i; j++) CHECK(strcmp(m, lds_strerror(codes[j])) != 0);
  }
  const int unknown[] = {1, 7, -14, -100, INT_MIN, INT_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    CHECK_STR(lds_strerror(unknown[i]), "unknown error");
  /* Static: the same pointer every time. */
  CHECK(lds_strerror(LDS_ENOENT) == lds_strerror(LDS_ENOENT));
}

TEST(test_runtime_new_options) {
  lds_runtime *rt = NULL;
  REQUIRE_RC(lds_runtime_new(NULL, &rt), LDS_OK);
  REQUIRE(rt != NULL);
  CHECK_RC(lds_runtime_fd(rt), LDS_ESTATE);
  rt_free(rt);
  lds_runtime_options o = LDS_RUNTIME_OPTIONS_INIT;
  CHECK_EQ(o.size, sizeof(lds_runtime_options));
  CHECK_EQ(o.delivery, LDS_DELIVER_LOOP);
  rt = NULL;
  REQUIRE_RC(lds_runtime_new(&o, &rt), LDS_OK);
  rt_free(rt);
  /* The first version of the struct is 8 bytes. */
  o.size = 8;
  o.delivery = LDS_DELIVER_POLL;
  rt = NULL;
  REQUIRE_RC(lds_runtime_new(&o, &rt), LDS_OK);
  CHECK(lds_runtime_fd(rt) >= 0);
  rt_free(rt);
}

TEST(test_ids_are_unique_and_never_zero) {
  enum { N = 50 };
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  lds_id ids[6 * N];
  size_t n = 0;
  ids[n++] = loader;
  for (int round = 0; round < 2; round++) {
    for (int i = 0; i < N; i++) {
      lds_id c = cell_new(rt, &rec), p = process_new(rt, &rec);
      ids[n++] = c;
      ids[n++] = p;
      CHECK_RC(lds_loadable_free(rt, c), LDS_OK);
      CHECK_RC(lds_process_free(rt, p), LDS_OK);
    }
  }
  /* Jobs get ids of their own: one load on each of N - 1 cells. */
  recorder jobs_rec[N - 1];
  for (int i = 0; i < N - 1; i++) {
    rec_init(&jobs_rec[i], rt);
    lds_id cell = cell_new(rt, &jobs_rec[i]);
    ids[n++] = cell;
    REQUIRE_RC(lds_loadable_load(rt, cell, loader, "x", 1, NULL), LDS_OK);
  }
  REQUIRE(HOST_WAIT(&h, N - 1));
  for (size_t i = 0; i < (size_t)N - 1; i++) ids[n++] = host_job_at(&h, i);
  for (size_t i = 0; i < n; i++) {
    CHECK(ids[i] != 0);
    for (size_t j = 0; j < i; j++)
      if (ids[i] == ids[j]) check_fail(__FILE__, __LINE__, "id %llu issued twice", (unsigned long long)ids[i]);
  }
  rt_free(rt);
  rec_destroy(&rec);
  for (int i = 0; i < N - 1; i++) rec_destroy(&jobs_rec[i]);
  host_destroy(&h);
}

TEST(test_callbacks_run_on_the_loop_thread) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(hook_add(f.rt, host_job_at(&f.h, 0), &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE(WAIT_FOR(f.hooks.count == 1));
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  REQUIRE(WAIT_FOR(f.h.free_data_calls == 1));
  pthread_t loop = rec_thread(&f.rec, 0);
  CHECK(!pthread_equal(loop, pthread_self()));
  CHECK(pthread_equal(rec_thread(&f.rec, 1), loop));
  CHECK(pthread_equal(host_job_info(&f.h, 0)->thread, loop));
  CHECK(pthread_equal(f.hooks.entries[0].thread, loop));
  CHECK(pthread_equal(f.h.free_data_thread, loop));
  fixture_finish(&f);
}

/* ------------------------------------------------------------------ */
/* No callback inside the call that caused it                          */
/* ------------------------------------------------------------------ */

/* Every call below runs through CHECK_RC, which marks the thread as inside
 * a library call; every fixture callback fails the test if it runs while
 * the mark is set (harness.h). The chain runs inside callbacks, on the
 * delivery thread, where a synchronous callback would be caught. */
typedef struct chain {
  fixture f;
  host canceller;   /* starts: registers a hook, then cancels itself */
  host holder;      /* starts: registers a hook, yields, leaves the job running */
  lds_id canceller_id;
  lds_id holder_id;
  int holder_hooks; /* hooks the holder's starts registered */
  bool done;
} chain;

static void yield_progress_succeed(host *h, lds_id job, const void *request, size_t len) {
  chain *c = h->data;
  CHECK_RC(hook_add(h->rt, job, &c->f.hooks, 1), LDS_OK);
  CHECK_RC(lds_job_yield(h->rt, job, "y", 1), LDS_OK);
  CHECK_RC(lds_job_progress(h->rt, job, 1, 1), LDS_OK);
  CHECK_RC(lds_job_succeed(h->rt, job, request, len), LDS_OK);
  CHECK_RC(lds_job_succeed(h->rt, job, request, len), LDS_ECANCELED);
}

static void hook_then_cancel_self(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  chain *c = h->data;
  CHECK_RC(hook_add(h->rt, job, &c->f.hooks, 2), LDS_OK);
  CHECK_RC(lds_job_cancel_self(h->rt, job), LDS_OK);
}

/* The refresh made from the LOADING callback may supersede the job
 * before its start registers the hook: the hook is then refused. */
static void hook_then_hold(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  chain *c = h->data;
  harness_in_call++;
  int rc = hook_add(h->rt, job, &c->f.hooks, 3);
  harness_in_call--;
  if (rc != LDS_OK && rc != LDS_ECANCELED) check_fail(__FILE__, __LINE__, "hook_add returned %d", rc);
  harness_lock();
  if (rc == LDS_OK) c->holder_hooks++;
  harness_notify();
  harness_unlock();
}

static void chain_step(recorder *rec, const lds_event *e) {
  chain *c = rec->data;
  lds_runtime *rt = c->f.rt;
  lds_id cell = c->f.cell;
  switch (e->seq) {
  case 4: /* LOADED by the first loader */
    CHECK_RC(lds_loadable_set_loaded(rt, cell, "s", 1), LDS_OK);
    break;
  case 5:
    CHECK_RC(lds_loadable_set_error(rt, cell, 1, "e"), LDS_OK);
    break;
  case 6:
    CHECK_RC(lds_loadable_load(rt, cell, c->canceller_id, "b", 1, NULL), LDS_OK);
    break;
  case 8: /* the canceller cancelled itself */
    CHECK_RC(lds_loadable_reset(rt, cell), LDS_OK);
    break;
  case 9:
    CHECK_RC(lds_loadable_load(rt, cell, c->holder_id, "c", 1, NULL), LDS_OK);
    break;
  case 10:
    CHECK_RC(lds_loader_free(rt, c->canceller_id), LDS_OK);
    CHECK_RC(lds_loadable_refresh(rt, cell), LDS_OK);
    break;
  case 11: /* the refresh superseded the holder's job */
    CHECK_RC(lds_loadable_cancel(rt, cell), LDS_OK);
    break;
  case 12:
    CHECK_RC(lds_loadable_free(rt, cell), LDS_OK);
    harness_lock();
    rec->closed = true;
    c->done = true;
    harness_notify();
    harness_unlock();
    break;
  default:
    break;
  }
}

static void run_chain(uint32_t delivery) {
  chain *c = calloc(1, sizeof *c);
  fixture_init(&c->f, delivery, yield_progress_succeed);
  c->f.h.data = c;
  c->f.rec.action = chain_step;
  c->f.rec.data = c;
  c->canceller_id = host_new(c->f.rt, &c->canceller, hook_then_cancel_self);
  c->canceller.data = c;
  c->holder_id = host_new(c->f.rt, &c->holder, hook_then_hold);
  c->holder.data = c;
  CHECK_RC(fx_load(&c->f, "a", NULL), LDS_OK);
#define CHAIN_DONE                                                          \
  (c->done && c->canceller.free_data_calls == 1 && c->f.hooks.count == 1 + (size_t)c->holder_hooks)
  if (delivery == LDS_DELIVER_POLL) {
    CHECK(POLL_UNTIL(c->f.rt, CHAIN_DONE));
  } else {
    CHECK(WAIT_FOR(CHAIN_DONE));
  }
#undef CHAIN_DONE
  CHECK_EQ(rec_count(&c->f.rec), 12);
  const int32_t statuses[12] = {LDS_LOADING, LDS_LOADED, 0,           LDS_LOADED,
                                LDS_LOADED,  LDS_ERROR,  LDS_LOADING, LDS_ERROR,
                                LDS_ABSENT,  LDS_LOADING, LDS_LOADING, LDS_ABSENT};
  for (size_t i = 0; i < 12 && i < rec_count(&c->f.rec); i++) {
    const lds_event *e = rec_at(&c->f.rec, i);
    if (i == 2) CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
    else CHECK_EQ(e->status, statuses[i]);
  }
  CHECK_EQ(rec_at(&c->f.rec, 7)->flags, LDS_FLAG_CANCELLED);
  CHECK_EQ(rec_at(&c->f.rec, 10)->flags, LDS_FLAG_REFRESHING);
  CHECK_EQ(rec_at(&c->f.rec, 11)->flags, LDS_FLAG_CANCELLED);
  /* Hooks ran for the canceller's job and for each holder job that got
   * one (superseded by the refresh, then cancelled). The first loader's
   * job succeeded: its hook never runs. */
  CHECK_EQ(hook_count(&c->f.hooks, host_job_at(&c->f.h, 0)), 0);
  fixture_finish(&c->f);
  CHECK_EQ(c->canceller.free_data_calls, 1);
  CHECK_EQ(c->holder.free_data_calls, 1);
  host_destroy(&c->canceller);
  host_destroy(&c->holder);
  free(c);
}

TEST(test_no_callback_runs_inside_the_call_that_caused_it) { run_chain(LDS_DELIVER_LOOP); }

TEST(test_poll_no_callback_runs_inside_the_call_that_caused_it) { run_chain(LDS_DELIVER_POLL); }

/* ------------------------------------------------------------------ */
/* lds_runtime_free                                                    */
/* ------------------------------------------------------------------ */

static int free_rc_event = 1, free_rc_start = 1, free_rc_hook = 1, free_rc_data = 1;

static void free_from_event(recorder *rec, const lds_event *e) {
  if (e->seq != 1) return;
  int rc = lds_runtime_free(rec->rt);
  harness_lock();
  free_rc_event = rc;
  harness_notify();
  harness_unlock();
}

static void free_from_start(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  int rc = lds_runtime_free(h->rt);
  harness_lock();
  free_rc_start = rc;
  harness_unlock();
  CHECK_RC(lds_job_succeed(h->rt, job, "after", 5), LDS_OK);
}

static void free_from_hook(lds_id job, void *data) {
  (void)job;
  int rc = lds_runtime_free(data);
  harness_lock();
  free_rc_hook = rc;
  harness_notify();
  harness_unlock();
}

static void free_from_free_data(void *data) {
  int rc = lds_runtime_free(data);
  harness_lock();
  free_rc_data = rc;
  harness_notify();
  harness_unlock();
}

static void nothing_start(lds_runtime *rt, lds_id job, const void *r, size_t l, void *d) {
  (void)rt, (void)job, (void)r, (void)l, (void)d;
}

TEST(test_runtime_free_from_callback_returns_estate) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, free_from_start);
  f.rec.action = free_from_event;
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK(WAIT_FOR(free_rc_event == LDS_ESTATE));
  CHECK_EQ(free_rc_start, LDS_ESTATE);
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "after");
  /* From a cancel hook and from free_data. */
  lds_id loader = 0;
  REQUIRE_RC(lds_loader_new(f.rt, nothing_start, f.rt, free_from_free_data, &loader), LDS_OK);
  host_set_start(&f.h, NULL);
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE_RC(lds_job_on_cancel(f.rt, host_job_at(&f.h, 1), free_from_hook, f.rt), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(lds_loader_free(f.rt, loader), LDS_OK);
  CHECK(WAIT_FOR(free_rc_hook != 1 && free_rc_data != 1));
  CHECK_EQ(free_rc_hook, LDS_ESTATE);
  CHECK_EQ(free_rc_data, LDS_ESTATE);
  /* The runtime still works. */
  REQUIRE_RC(fx_set_loaded(&f, "alive"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, 0);
  fixture_finish(&f);
}

/* Workers that keep a job busy until the runtime is freed under them. */
typedef struct busy {
  lds_runtime *rt;
  recorder *rec;
  lds_id job;
  lds_id cell;
  int last_rc;
  long calls_ok;
  atomic_bool *freed;
} busy;

static void *busy_main(void *arg) {
  busy *b = arg;
  for (;;) {
    int rc = lds_job_progress(b->rt, b->job, (uint64_t)b->calls_ok, 0);
    if (rc != LDS_OK) {
      b->last_rc = rc;
      break;
    }
    b->calls_ok++;
    /* Pace on delivered events, until the runtime is gone. */
    harness_lock();
    struct timespec dl = harness_deadline();
    while (b->rec->count + 64 < (size_t)b->calls_ok && !atomic_load(b->freed) && harness_wait(&dl)) {
    }
    harness_unlock();
  }
  /* Every later call is refused the same way. */
  CHECK_EQ(lds_job_succeed(b->rt, b->job, "x", 1), LDS_ECLOSED);
  CHECK_EQ(lds_loadable_set_loaded(b->rt, b->cell, "x", 1), LDS_ECLOSED);
  CHECK_EQ(lds_runtime_set_online(b->rt, 0), LDS_ECLOSED);
  CHECK_EQ(lds_runtime_set_foreground(b->rt, 0), LDS_ECLOSED);
  return NULL;
}

TEST(test_no_callback_after_runtime_free_returns) {
  enum { N = 4 };
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  recorder recs[N];
  busy workers[N];
  pthread_t threads[N];
  hook_log *hooks = calloc(1, sizeof *hooks);
  atomic_bool freed = false;
  for (int i = 0; i < N; i++) {
    rec_init(&recs[i], rt);
    lds_id cell = cell_new(rt, &recs[i]);
    REQUIRE_RC(lds_loadable_load(rt, cell, loader, "w", 1, NULL), LDS_OK);
    REQUIRE(HOST_WAIT(&h, (size_t)i + 1));
    workers[i] = (busy){.rt = rt, .rec = &recs[i], .job = host_job_at(&h, (size_t)i), .cell = cell, .freed = &freed};
    REQUIRE_RC(hook_add(rt, workers[i].job, hooks, i), LDS_OK);
  }
  for (int i = 0; i < N; i++) threads[i] = thread_start(busy_main, &workers[i]);
  for (int i = 0; i < N; i++) REQUIRE(REC_WAIT(&recs[i], 20));
  rt_free(rt);
  harness_lock();
  atomic_store(&freed, true);
  size_t counts[N];
  for (int i = 0; i < N; i++) {
    counts[i] = recs[i].count;
    recs[i].closed = true; /* a later callback fails the test */
  }
  size_t hooks_at_free = hooks->count;
  int free_data_at_free = h.free_data_calls;
  h.closed = true;
  harness_notify();
  harness_unlock();
  CHECK_EQ(hooks_at_free, N);
  CHECK_EQ(free_data_at_free, 1);
  for (int i = 0; i < N; i++) {
    thread_join(threads[i]);
    CHECK_EQ(workers[i].last_rc, LDS_ECLOSED);
    CHECK_EQ(rec_count(&recs[i]), counts[i]);
  }
  CHECK_EQ(hooks->count, hooks_at_free);
  CHECK_EQ(h.free_data_calls, 1);
  for (int i = 0; i < N; i++) rec_destroy(&recs[i]);
  host_destroy(&h);
  free(hooks);
}

TEST(test_calls_after_runtime_free_return_eclosed) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  lds_id cell = cell_new(rt, &rec);
  lds_id proc = process_new(rt, &rec);
  REQUIRE_RC(lds_loadable_load(rt, cell, loader, "a", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&h, 1));
  lds_id job = host_job_at(&h, 0);
  rt_free(rt);
  rec_close(&rec);
  CHECK_RC(lds_runtime_free(rt), LDS_ECLOSED);
  CHECK_RC(lds_runtime_fd(rt), LDS_ECLOSED);
  CHECK_RC(lds_runtime_dispatch(rt, 0), LDS_ECLOSED);
  lds_id out = 77;
  CHECK_RC(lds_loadable_new(rt, rec_on_event, &rec, &out), LDS_ECLOSED);
  CHECK_EQ(out, 77);
  CHECK_RC(lds_process_new(rt, rec_on_event, &rec, &out), LDS_ECLOSED);
  CHECK_EQ(out, 77);
  CHECK_RC(lds_loader_new(rt, nothing_start, NULL, NULL, &out), LDS_ECLOSED);
  CHECK_EQ(out, 77);
  CHECK_RC(lds_loadable_free(rt, cell), LDS_ECLOSED);
  CHECK_RC(lds_loadable_load(rt, cell, loader, "a", 1, NULL), LDS_ECLOSED);
  CHECK_RC(lds_loadable_refresh(rt, cell), LDS_ECLOSED);
  CHECK_RC(lds_loadable_cancel(rt, cell), LDS_ECLOSED);
  CHECK_RC(lds_loadable_reset(rt, cell), LDS_ECLOSED);
  CHECK_RC(lds_loadable_set_loaded(rt, cell, "v", 1), LDS_ECLOSED);
  CHECK_RC(lds_loadable_set_error(rt, cell, 1, "m"), LDS_ECLOSED);
  lds_snapshot s;
  memset(&s, 0xab, sizeof s);
  CHECK_RC(lds_loadable_get(rt, cell, &s), LDS_ECLOSED);
  lds_snapshot zero;
  memset(&zero, 0, sizeof zero);
  CHECK(memcmp(&s, &zero, sizeof s) == 0);
  lds_snapshot_clear(&s);
  CHECK_RC(lds_loader_free(rt, loader), LDS_ECLOSED);
  CHECK_RC(lds_job_yield(rt, job, "v", 1), LDS_ECLOSED);
  CHECK_RC(lds_job_succeed(rt, job, "v", 1), LDS_ECLOSED);
  CHECK_RC(lds_job_finish(rt, job), LDS_ECLOSED);
  CHECK_RC(lds_job_fail(rt, job, 1, "m"), LDS_ECLOSED);
  CHECK_RC(lds_job_fail_final(rt, job, 1, "m"), LDS_ECLOSED);
  CHECK_RC(lds_job_progress(rt, job, 1, 1), LDS_ECLOSED);
  CHECK_RC(lds_job_cancel_self(rt, job), LDS_ECLOSED);
  CHECK_RC(lds_job_reset_self(rt, job), LDS_ECLOSED);
  CHECK_RC(lds_job_is_cancelled(rt, job), LDS_ECLOSED);
  hook_log *hooks = calloc(1, sizeof *hooks);
  CHECK_RC(hook_add(rt, job, hooks, 1), LDS_ECLOSED);
  CHECK_RC(lds_process_free(rt, proc), LDS_ECLOSED);
  CHECK_RC(lds_process_run(rt, proc, 1, loader, "a", 1, NULL), LDS_ECLOSED);
  CHECK_RC(lds_process_cancel(rt, proc), LDS_ECLOSED);
  CHECK_RC(lds_process_reset(rt, proc), LDS_ECLOSED);
  CHECK_EQ(hooks->count, 0);
  free(hooks);
  rec_destroy(&rec);
  host_destroy(&h);
}

TEST(test_runtime_free_with_idle_objects_and_twice) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  host h;
  host_new(rt, &h, NULL);
  cell_new(rt, &rec);
  process_new(rt, &rec);
  rt_free(rt);
  CHECK_EQ(h.free_data_calls, 1);
  CHECK_RC(lds_runtime_free(rt), LDS_ECLOSED);
  CHECK_EQ(rec_count(&rec), 0);
  rec_destroy(&rec);
  host_destroy(&h);
}

TEST(test_many_runtimes) {
  enum { N = 8 };
  lds_runtime *rts[N];
  recorder recs[N];
  host hosts[N];
  for (int i = 0; i < N; i++) {
    rts[i] = rt_new(i % 2 ? LDS_DELIVER_POLL : LDS_DELIVER_LOOP);
    rec_init(&recs[i], rts[i]);
    lds_id loader = host_new(rts[i], &hosts[i], host_succeed_echo);
    lds_id cell = cell_new(rts[i], &recs[i]);
    REQUIRE_RC(lds_loadable_load(rts[i], cell, loader, "m", 1, NULL), LDS_OK);
    /* Ids of one runtime mean nothing to another. */
    if (i > 0) CHECK_RC(lds_loadable_cancel(rts[i - 1], cell + 1000000), LDS_ENOENT);
  }
  for (int i = 0; i < N; i++) {
    if (i % 2) CHECK(POLL_UNTIL(rts[i], recs[i].count >= 2));
    else CHECK(REC_WAIT(&recs[i], 2));
  }
  for (int i = 0; i < N; i++) {
    rt_free(rts[i]);
    CHECK_EQ(hosts[i].free_data_calls, 1);
    rec_destroy(&recs[i]);
    host_destroy(&hosts[i]);
  }
}

/* A program that creates and frees runtimes in a loop does not grow: a
 * freed runtime's handle is kept (calls on it return LDS_ECLOSED) among
 * the last 1,024 freed ones, then serves a new runtime. */
static size_t heap_in_use(void) { return mallinfo2().uordblks; }

TEST(test_runtimes_created_and_freed_in_a_loop_hold_no_memory) {
  enum { WARM_UP = 1100, MEASURED = 1000 };
  lds_runtime *first = rt_new(LDS_DELIVER_LOOP);
  rt_free(first);
  for (int i = 0; i < WARM_UP; i++) rt_free(rt_new(i % 2 ? LDS_DELIVER_POLL : LDS_DELIVER_LOOP));
  size_t before = heap_in_use();
  for (int i = 0; i < MEASURED; i++) rt_free(rt_new(i % 2 ? LDS_DELIVER_POLL : LDS_DELIVER_LOOP));
  size_t after = heap_in_use();
  long long grown = (long long)after - (long long)before;
  /* Under valgrind mallinfo2 reports nothing; the loop still runs. */
  CHECK_OP(grown / MEASURED, <, 8);
  (void)first;
}

/* A loop thread that polls for work before sleeping: loads from a host
 * thread and from the loop's own callbacks complete as without it, and
 * the runtime frees while it polls. */
TEST(test_runtime_spin_us_runs_loads_like_the_default) {
  for (int delivery = LDS_DELIVER_LOOP; delivery <= LDS_DELIVER_POLL; delivery++) {
    lds_runtime_options o = LDS_RUNTIME_OPTIONS_INIT;
    o.delivery = (uint32_t)delivery;
    o.spin_us = 2000;
    lds_runtime *rt = NULL;
    REQUIRE_RC(lds_runtime_new(&o, &rt), LDS_OK);
    recorder rec;
    rec_init(&rec, rt);
    host h;
    lds_id loader = host_new(rt, &h, host_succeed_echo);
    lds_id cell = cell_new(rt, &rec);
    for (int i = 0; i < 50; i++) {
      REQUIRE_RC(lds_loadable_load(rt, cell, loader, "r", 1, NULL), LDS_OK);
      size_t want = 2 * (size_t)(i + 1);
      if (delivery == LDS_DELIVER_POLL) {
        REQUIRE(POLL_UNTIL(rt, rec.count >= want));
      } else {
        REQUIRE(REC_WAIT(&rec, want));
      }
    }
    CHECK_STATE(rec_at(&rec, 99), 100, LDS_LOADED, 0);
    rt_free(rt);
    harness_lock();
    rec.closed = true;
    h.closed = true;
    harness_unlock();
    rec_destroy(&rec);
    host_destroy(&h);
  }
}
