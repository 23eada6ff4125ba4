/* test_observe.c — lds_runtime_observe: every cell event, job start and job
 * end, in order, on the delivery thread; free_data after the last call. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { LOG_MAX = 64 };

typedef struct seen {
  uint32_t what, outcome, attempt, flags;
  int32_t status, error_code;
  lds_id job, loader, cell;
  uint64_t duration_ns, time_ns;
  char request[16];
  char value[16];
  int32_t kind;
  pthread_t thread;
} seen;

typedef struct observer_log {
  seen items[LOG_MAX];
  size_t count;
  int frees;
} observer_log;

static void observe(const lds_observation *o, void *user_data) {
  observer_log *log = user_data;
  harness_lock();
  if (log->count < LOG_MAX) {
    seen *s = &log->items[log->count++];
    memset(s, 0, sizeof *s);
    s->what = o->what;
    s->outcome = o->outcome;
    s->attempt = o->attempt;
    s->status = o->event ? o->event->status : -1;
    s->flags = o->event ? o->event->flags : 0;
    s->error_code = o->error_code;
    s->job = o->job;
    s->loader = o->loader;
    s->cell = o->event ? o->event->cell : o->cell;
    s->duration_ns = o->duration_ns;
    s->time_ns = o->time_ns;
    s->thread = pthread_self();
    if (o->request && o->request_len < sizeof s->request) memcpy(s->request, o->request, o->request_len);
    if (o->event && o->event->value && o->event->value_len < sizeof s->value) {
      memcpy(s->value, o->event->value, o->event->value_len);
    }
    s->kind = o->event ? o->event->kind : -1;
  }
  harness_notify();
  harness_unlock();
}

static void free_log(void *user_data) {
  observer_log *log = user_data;
  harness_lock();
  log->frees++;
  harness_notify();
  harness_unlock();
}

TEST(test_observe_sees_events_and_jobs_in_order) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  observer_log log = {0};
  REQUIRE_RC(lds_runtime_observe(f.rt, observe, &log, free_log), LDS_OK);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_succeed(&f, job, "A"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE(WAIT_FOR(log.count >= 4));
  CHECK_EQ(log.items[0].what, LDS_OBSERVE_EVENT);
  CHECK_EQ(log.items[0].status, LDS_LOADING);
  CHECK_EQ(log.items[0].cell, f.cell);
  CHECK_EQ(log.items[1].what, LDS_OBSERVE_JOB_START);
  CHECK_EQ(log.items[1].job, job);
  CHECK_EQ(log.items[1].loader, f.loader);
  CHECK_EQ(log.items[1].cell, f.cell);
  CHECK_EQ(log.items[1].attempt, 1);
  CHECK_STR(log.items[1].request, "a");
  CHECK_EQ(log.items[2].what, LDS_OBSERVE_JOB_END);
  CHECK_EQ(log.items[2].job, job);
  CHECK_EQ(log.items[2].outcome, LDS_JOB_SUCCEEDED);
  CHECK_STR(log.items[2].request, "a");
  CHECK_OP(log.items[2].duration_ns, >, 0);
  CHECK_OP(log.items[2].time_ns, >=, log.items[1].time_ns + log.items[2].duration_ns);
  CHECK_EQ(log.items[3].what, LDS_OBSERVE_EVENT);
  CHECK_EQ(log.items[3].status, LDS_LOADED);
  /* The loop thread, like the cell's callback. */
  CHECK(pthread_equal(log.items[0].thread, rec_thread(&f.rec, 0)));
  CHECK(pthread_equal(log.items[3].thread, rec_thread(&f.rec, 1)));

  /* A failure and a cancel. */
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 1), 42, "no"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 6));
  REQUIRE(WAIT_FOR(log.count >= 12));
  CHECK_EQ(log.items[6].what, LDS_OBSERVE_JOB_END);
  CHECK_EQ(log.items[6].outcome, LDS_JOB_FAILED);
  CHECK_EQ(log.items[6].error_code, 42);
  CHECK_EQ(log.items[7].status, LDS_ERROR);
  CHECK_EQ(log.items[10].what, LDS_OBSERVE_JOB_END);
  CHECK_EQ(log.items[10].outcome, LDS_JOB_CANCELLED);
  CHECK_EQ(log.items[11].what, LDS_OBSERVE_EVENT);
  CHECK_EQ(log.count, 12);
  CHECK_EQ(log.frees, 0);

  /* Removed: free_data once, and nothing more is seen. */
  REQUIRE_RC(lds_runtime_observe(f.rt, NULL, NULL, NULL), LDS_OK);
  REQUIRE(WAIT_FOR(log.frees == 1));
  REQUIRE_RC(fx_load(&f, "d", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 7));
  CHECK_EQ(log.count, 12);
  fixture_finish(&f);
  CHECK_EQ(log.frees, 1);
}

TEST(test_observe_free_data_runs_when_replaced_and_at_runtime_free) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  observer_log first = {0}, second = {0};
  REQUIRE_RC(lds_runtime_observe(f.rt, observe, &first, free_log), LDS_OK);
  REQUIRE_RC(lds_runtime_observe(f.rt, observe, &second, free_log), LDS_OK);
  REQUIRE(WAIT_FOR(first.frees == 1));
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(WAIT_FOR(second.count == 4));
  CHECK_EQ(first.count, 0);
  /* A job running at the free ends cancelled, seen before free_data. */
  host_set_start(&f.h, NULL);
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE(WAIT_FOR(second.count == 6));
  fixture_finish(&f);
  CHECK_EQ(second.frees, 1);
  CHECK_EQ(first.frees, 1);
  CHECK_EQ(second.count, 7);
  CHECK_EQ(second.items[6].what, LDS_OBSERVE_JOB_END);
  CHECK_EQ(second.items[6].outcome, LDS_JOB_CANCELLED);
}

TEST(test_observe_in_poll_mode_runs_in_dispatch) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, host_succeed_echo);
  observer_log log = {0};
  REQUIRE_RC(lds_runtime_observe(f.rt, observe, &log, free_log), LDS_OK);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  POLL_UNTIL(f.rt, log.count >= 4);
  harness_lock();
  size_t n = log.count;
  harness_unlock();
  REQUIRE(n == 4);
  for (size_t i = 0; i < n; i++) CHECK(pthread_equal(log.items[i].thread, pthread_self()));
  CHECK_EQ(log.items[1].what, LDS_OBSERVE_JOB_START);
  CHECK_EQ(log.items[2].outcome, LDS_JOB_SUCCEEDED);
  CHECK_EQ(log.items[3].status, LDS_LOADED);
  fixture_finish(&f);
  CHECK_EQ(log.frees, 1);
}

TEST(test_observe_bad_arguments) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  observer_log log = {0};
  CHECK_RC(lds_runtime_observe(NULL, observe, &log, NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_observe(rt, NULL, &log, NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_observe(rt, NULL, NULL, free_log), LDS_EINVAL);
  CHECK_RC(lds_runtime_observe(rt, NULL, NULL, NULL), LDS_OK);
  rt_free(rt);
  CHECK_RC(lds_runtime_observe(rt, observe, &log, NULL), LDS_ECLOSED);
}

/* A loader with max_concurrent = 1: the second job waits in its queue. */
typedef struct limited {
  lds_id jobs[4];
  int starts;
} limited;

static void limited_start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt, (void)request, (void)len;
  limited *l = data;
  harness_lock();
  if (l->starts < 4) l->jobs[l->starts] = job;
  l->starts++;
  harness_notify();
  harness_unlock();
}

TEST(test_observe_a_queued_job_starts_when_admitted) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  observer_log log = {0};
  REQUIRE_RC(lds_runtime_observe(rt, observe, &log, NULL), LDS_OK);
  limited l = {0};
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = limited_start;
  o.loader_data = &l;
  o.max_concurrent = 1;
  lds_id loader;
  REQUIRE_RC(lds_loader_new_ex(rt, &o, &loader), LDS_OK);
  recorder ra, rb;
  rec_init(&ra, rt);
  rec_init(&rb, rt);
  lds_id a = cell_new(rt, &ra), b = cell_new(rt, &rb);
  REQUIRE_RC(lds_loadable_load(rt, a, loader, "a", 1, NULL), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 1));
  REQUIRE_RC(lds_loadable_load(rt, b, loader, "b", 1, NULL), LDS_OK);
  /* b's LOADING (flagged QUEUED) is seen, its job's start is not. */
  REQUIRE(REC_WAIT(&rb, 1));
  REQUIRE(WAIT_FOR(log.count >= 3));
  harness_lock();
  size_t starts = 0;
  uint32_t b_flags = 0;
  for (size_t i = 0; i < log.count; i++) {
    starts += log.items[i].what == LDS_OBSERVE_JOB_START;
    if (log.items[i].what == LDS_OBSERVE_EVENT && log.items[i].cell == b) b_flags |= log.items[i].flags;
  }
  harness_unlock();
  CHECK_EQ(starts, 1);
  /* The observer sees the flags the cell's own callback sees. */
  CHECK(rec_at(&rb, 0)->flags & LDS_FLAG_QUEUED);
  CHECK(b_flags & LDS_FLAG_QUEUED);
  lds_runtime_statistics st = LDS_RUNTIME_STATISTICS_INIT;
  REQUIRE_RC(lds_runtime_stats(rt, &st), LDS_OK);
  CHECK_EQ(st.loads.started, 2);
  REQUIRE_RC(lds_job_succeed(rt, l.jobs[0], "A", 1), LDS_OK);
  REQUIRE(WAIT_FOR(l.starts == 2));
  /* Now b's job starts: observed with its cell. */
  REQUIRE(WAIT_FOR(log.count >= 7));
  harness_lock();
  const seen *start_b = NULL;
  for (size_t i = 0; i < log.count; i++)
    if (log.items[i].what == LDS_OBSERVE_JOB_START && log.items[i].job == l.jobs[1]) start_b = &log.items[i];
  CHECK(start_b != NULL);
  if (start_b) {
    CHECK_EQ(start_b->cell, b);
    CHECK_STR(start_b->request, "b");
  }
  harness_unlock();
  REQUIRE_RC(lds_job_succeed(rt, l.jobs[1], "B", 1), LDS_OK);
  /* LOADING flagged QUEUED, LOADING when it starts, LOADED. */
  REQUIRE(REC_WAIT(&rb, 3));
  CHECK_EQ(rec_last(&rb)->status, LDS_LOADED);
  rt_free(rt);
  REQUIRE_RC(lds_runtime_stats(rt, &st), LDS_ECLOSED);
  rec_destroy(&ra);
  rec_destroy(&rb);
}

/* A pages cell's pages are cells of their own inside it: the observer
 * sees their events as the pages cell's (its id, the page's index in kind,
 * the page's decoded value) and their jobs as the pages cell's, never the
 * pages' own ids or their encoded values. */
TEST(test_observe_sees_pages_as_the_pages_cell) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  observer_log log = {0};
  REQUIRE_RC(lds_runtime_observe(f.rt, observe, &log, free_log), LDS_OK);
  recorder rec;
  rec_init(&rec, f.rt);
  lds_pages_options po = LDS_PAGES_OPTIONS_INIT;
  po.on_event = rec_on_event;
  po.user_data = &rec;
  lds_id pages = 0;
  REQUIRE_RC(lds_pages_new(f.rt, &po, &pages), LDS_OK);
  REQUIRE_RC(lds_pages_load(f.rt, pages, f.loader, "q", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_job_succeed_page(f.rt, job, "p0", 2, "c1", 2, NULL, 0), LDS_OK);
  REQUIRE(REC_WAIT(&rec, 2));
  REQUIRE(WAIT_FOR(log.count >= 4));
  CHECK_EQ(log.count, 4);
  CHECK_EQ(log.items[0].what, LDS_OBSERVE_EVENT);
  CHECK_EQ(log.items[0].status, LDS_LOADING);
  CHECK_EQ(log.items[0].cell, pages);
  CHECK_EQ(log.items[1].what, LDS_OBSERVE_JOB_START);
  CHECK_EQ(log.items[1].job, job);
  CHECK_EQ(log.items[1].cell, pages);
  CHECK_EQ(log.items[2].what, LDS_OBSERVE_JOB_END);
  CHECK_EQ(log.items[3].what, LDS_OBSERVE_EVENT);
  CHECK_EQ(log.items[3].status, LDS_LOADED);
  CHECK_EQ(log.items[3].cell, pages);
  CHECK_EQ(log.items[3].kind, 0);
  CHECK_STR(log.items[3].value, "p0");
  CHECK_RC(lds_pages_free(f.rt, pages), LDS_OK);
  fixture_finish(&f);
  rec_destroy(&rec);
}
