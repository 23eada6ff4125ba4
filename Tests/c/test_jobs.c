/* test_jobs.c — job calls, cancel hooks, loader free_data, completion from other threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

TEST(test_progress_events) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_job_progress(f.rt, job, 3, 10), LDS_OK);
  REQUIRE_RC(lds_job_progress(f.rt, job, 5, 0), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
  CHECK_EQ(e->seq, 2);
  CHECK_EQ(e->status, LDS_LOADING);
  CHECK_EQ(e->progress_done, 3);
  CHECK_EQ(e->progress_total, 10);
  CHECK_BYTES(e->request, e->request_len, "r1");
  e = rec_at(&f.rec, 2);
  CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
  CHECK_EQ(e->seq, 3);
  CHECK_EQ(e->progress_done, 5);
  CHECK_EQ(e->progress_total, 0);
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.seq, 3);
  CHECK_EQ(s.type, LDS_EVENT_PROGRESS);
  CHECK_EQ(s.status, LDS_LOADING);
  CHECK_EQ(s.progress_done, 5);
  lds_snapshot_clear(&s);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, 0);
  CHECK_RC(lds_job_progress(f.rt, job, 6, 10), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_progress_events_can_be_turned_off_and_on) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_loadable_set_progress(f.rt, f.cell, 0), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_job_progress(f.rt, job, 3, 10), LDS_OK);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  REQUIRE_RC(lds_loadable_set_progress(f.rt, f.cell, 1), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  job = host_job_at(&f.h, 1);
  REQUIRE_RC(lds_job_progress(f.rt, job, 5, 10), LDS_OK);
  REQUIRE_RC(fx_succeed(&f, job, "w"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 3);
  CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
  CHECK_EQ(e->seq, 4);
  CHECK_EQ(e->progress_done, 5);
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, 0);
  CHECK_RC(lds_loadable_set_progress(f.rt, f.cell + 1000, 0), LDS_ENOENT);
  CHECK_RC(lds_process_set_progress(f.rt, f.cell, 0), LDS_ENOENT);
  CHECK_RC(lds_loadable_set_progress(NULL, f.cell, 0), LDS_EINVAL);
  fixture_finish(&f);
}

/* LDS_LOAD_NO_PROGRESS turns the cell's PROGRESS events off as the load is
 * asked for, through lds_loadable_load and through lds_runtime_submit. */
TEST(test_load_flag_no_progress_turns_progress_events_off) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_NO_PROGRESS;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_job_progress(f.rt, job, 3, 10), LDS_OK);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  /* On again; then off by a submitted load. */
  REQUIRE_RC(lds_loadable_set_progress(f.rt, f.cell, 1), LDS_OK);
  lds_op op = {LDS_OP_LOAD, (int32_t)LDS_LOAD_NO_PROGRESS, f.cell, f.loader, "r2", 2};
  int32_t result = 1;
  REQUIRE_RC(lds_runtime_submit(f.rt, &op, 1, &result), 1);
  CHECK_RC(result, LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  job = host_job_at(&f.h, 1);
  REQUIRE_RC(lds_job_progress(f.rt, job, 5, 10), LDS_OK);
  REQUIRE_RC(fx_succeed(&f, job, "w"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_on_cancel_runs_on_cancel_in_order_not_on_succeed) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec_b;
  rec_init(&rec_b, f.rt);
  lds_id cell_b = cell_new(f.rt, &rec_b);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_load(f.rt, cell_b, f.loader, "b", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job_a = host_job_at(&f.h, 0), job_b = host_job_at(&f.h, 1);
  if (strncmp(host_job_info(&f.h, 0)->request, "a", 1) != 0) {
    lds_id t = job_a;
    job_a = job_b;
    job_b = t;
  }
  REQUIRE_RC(hook_add(f.rt, job_a, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(hook_add(f.rt, job_a, &f.hooks, 2), LDS_OK);
  REQUIRE_RC(hook_add(f.rt, job_a, &f.hooks, 3), LDS_OK);
  REQUIRE_RC(hook_add(f.rt, job_b, &f.hooks, 10), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(WAIT_FOR(f.hooks.count >= 3));
  CHECK_EQ(f.hooks.entries[0].tag, 1);
  CHECK_EQ(f.hooks.entries[1].tag, 2);
  CHECK_EQ(f.hooks.entries[2].tag, 3);
  CHECK_EQ(f.hooks.entries[0].job, job_a);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK(pthread_equal(f.hooks.entries[0].thread, rec_thread(&f.rec, 0)));
  REQUIRE_RC(lds_job_succeed(f.rt, job_b, "vb", 2), LDS_OK);
  REQUIRE(REC_WAIT(&rec_b, 2));
  CHECK_RC(hook_add(f.rt, job_b, &f.hooks, 11), LDS_ECANCELED);
  /* Not even the runtime's end runs the hook of a job that succeeded. */
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 3);
  rec_destroy(&rec_b);
}

TEST(test_on_cancel_not_run_on_finish_or_fail) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job1 = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job1, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_job_finish(f.rt, job1), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job2 = host_job_at(&f.h, 1);
  REQUIRE_RC(hook_add(f.rt, job2, &f.hooks, 2), LDS_OK);
  REQUIRE_RC(lds_job_fail(f.rt, job2, 1, "x"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  /* A third job that is cancelled is the fence for the first two. */
  REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  lds_id job3 = host_job_at(&f.h, 2);
  REQUIRE_RC(hook_add(f.rt, job3, &f.hooks, 3), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(WAIT_FOR(f.hooks.count >= 1));
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 1);
  CHECK_EQ(f.hooks.entries[0].tag, 3);
}

TEST(test_on_cancel_runs_on_timeout_supersede_and_runtime_free) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_hook_start);
  f.h.data = &f.hooks;
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 20;
  REQUIRE_RC(fx_load(&f, "t", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_EQ(rec_at(&f.rec, 1)->error_code, LDS_ETIMEDOUT);
  lds_id timed_out = host_job_at(&f.h, 0);
  CHECK(WAIT_FOR(hook_count(&f.hooks, timed_out) == 1));
  REQUIRE_RC(fx_load(&f, "s", NULL), LDS_OK);
  REQUIRE(HOST_WAIT_DONE(&f.h, 2));
  REQUIRE_RC(fx_load(&f, "last", NULL), LDS_OK);
  REQUIRE(HOST_WAIT_DONE(&f.h, 3));
  lds_id superseded = host_job_at(&f.h, 1);
  lds_id at_free = host_job_at(&f.h, 2);
  CHECK(WAIT_FOR(hook_count(&f.hooks, superseded) == 1));
  CHECK_EQ(hook_count(&f.hooks, at_free), 0);
  fixture_finish(&f);
  CHECK_EQ(hook_count(&f.hooks, timed_out), 1);
  CHECK_EQ(hook_count(&f.hooks, superseded), 1);
  /* lds_runtime_free ran it before returning. */
  CHECK_EQ(hook_count(&f.hooks, at_free), 1);
  CHECK_EQ(f.hooks.count, 3);
}

TEST(test_is_cancelled) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(lds_job_progress(f.rt, job, 1, 2), LDS_OK);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  job = host_job_at(&f.h, 1);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_EQ(lds_job_is_cancelled(f.rt, f.cell), LDS_ENOENT);
  CHECK_EQ(lds_job_is_cancelled(f.rt, f.loader), LDS_ENOENT);
  CHECK_EQ(lds_job_is_cancelled(f.rt, 0), LDS_ENOENT);
  CHECK_EQ(lds_job_is_cancelled(NULL, job), LDS_EINVAL);
  fixture_finish(&f);
}

TEST(test_free_data_called_once_after_last_job) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec_b;
  rec_init(&rec_b, f.rt);
  lds_id cell_b = cell_new(f.rt, &rec_b);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_load(f.rt, cell_b, f.loader, "b", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job1 = host_job_at(&f.h, 0), job2 = host_job_at(&f.h, 1);
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  CHECK_RC(lds_loader_free(f.rt, f.loader), LDS_ENOENT);
  CHECK_RC(fx_load(&f, "c", NULL), LDS_ENOENT);
  CHECK_RC(lds_process_run(f.rt, cell_b, 0, f.loader, NULL, 0, NULL), LDS_ENOENT);
  /* The jobs go on. */
  REQUIRE_RC(lds_job_progress(f.rt, job1, 1, 2), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_EQ(f.h.free_data_calls, 0);
  REQUIRE_RC(fx_succeed(&f, job1, "v1"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  CHECK_EQ(f.h.free_data_calls, 0);
  REQUIRE_RC(lds_job_succeed(f.rt, job2, "v2", 2), LDS_OK);
  REQUIRE(WAIT_FOR(f.h.free_data_calls == 1));
  REQUIRE(REC_WAIT(&rec_b, 2));
  CHECK(pthread_equal(f.h.free_data_thread, rec_thread(&rec_b, 1)));
  /* No call made on the other cell adds a second call. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, cell_b, "x", 1), LDS_OK);
  REQUIRE(REC_WAIT(&rec_b, 3));
  fixture_finish(&f);
  rec_destroy(&rec_b);
}

TEST(test_free_data_called_at_loader_free_when_idle) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  CHECK(WAIT_FOR(f.h.free_data_calls == 1));
  CHECK(!pthread_equal(f.h.free_data_thread, pthread_self()));
  fixture_finish(&f);
}

TEST(test_free_data_called_at_runtime_free) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(hook_add(f.rt, host_job_at(&f.h, 0), &f.hooks, 1), LDS_OK);
  CHECK_EQ(f.h.free_data_calls, 0);
  fixture_finish(&f); /* checks free_data ran exactly once */
  CHECK_EQ(f.hooks.count, 1);
}

static void echo_start(lds_runtime *rt, lds_id job, const void *request, size_t len,
                       void *data) {
  CHECK(data == (void *)&echo_start);
  CHECK_RC(lds_job_succeed(rt, job, request, len), LDS_OK);
}

TEST(test_loader_without_free_data) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  lds_id loader = 0;
  REQUIRE_RC(lds_loader_new(rt, echo_start, (void *)&echo_start, NULL, &loader), LDS_OK);
  REQUIRE_RC(lds_loadable_load(rt, cell, loader, "q", 1, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&rec, 2));
  CHECK_BYTES(rec_at(&rec, 1)->value, rec_at(&rec, 1)->value_len, "q");
  CHECK_RC(lds_loader_free(rt, loader), LDS_OK);
  lds_id second = 0;
  REQUIRE_RC(lds_loader_new(rt, echo_start, (void *)&echo_start, NULL, &second), LDS_OK);
  CHECK(second != loader);
  rt_free(rt);
  rec_destroy(&rec);
}

/* A loader whose jobs are done by a new thread each. */
typedef struct worker_job {
  lds_runtime *rt;
  lds_id job;
  char request[32];
} worker_job;

static pthread_t worker_threads[64];
static size_t worker_count;

static void *worker_main(void *arg) {
  worker_job *w = arg;
  char value[64];
  snprintf(value, sizeof value, "partial-%s", w->request);
  CHECK_RC(lds_job_yield(w->rt, w->job, value, strlen(value)), LDS_OK);
  CHECK_RC(lds_job_progress(w->rt, w->job, 1, 2), LDS_OK);
  snprintf(value, sizeof value, "done-%s", w->request);
  CHECK_RC(lds_job_succeed(w->rt, w->job, value, strlen(value)), LDS_OK);
  free(w);
  return NULL;
}

static void start_worker(host *h, lds_id job, const void *request, size_t len) {
  worker_job *w = calloc(1, sizeof *w);
  w->rt = h->rt;
  w->job = job;
  memcpy(w->request, request, len < sizeof w->request - 1 ? len : sizeof w->request - 1);
  harness_lock();
  worker_threads[worker_count++] = thread_start(worker_main, w);
  harness_notify();
  harness_unlock();
}

TEST(test_jobs_completed_from_worker_threads) {
  enum { CELLS = 16 };
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, start_worker);
  recorder recs[CELLS];
  lds_id cells[CELLS];
  for (int i = 0; i < CELLS; i++) {
    rec_init(&recs[i], rt);
    cells[i] = cell_new(rt, &recs[i]);
    char request[16];
    snprintf(request, sizeof request, "c%d", i);
    REQUIRE_RC(lds_loadable_load(rt, cells[i], loader, request, strlen(request), NULL), LDS_OK);
  }
  for (int i = 0; i < CELLS; i++) {
    REQUIRE(REC_WAIT(&recs[i], 4));
    char want[32];
    snprintf(want, sizeof want, "c%d", i);
    CHECK_STATE(rec_at(&recs[i], 0), 1, LDS_LOADING, 0);
    const lds_event *e = rec_at(&recs[i], 1);
    CHECK_STATE(e, 2, LDS_LOADED, LDS_FLAG_PARTIAL);
    snprintf(want, sizeof want, "partial-c%d", i);
    CHECK_BYTES(e->value, e->value_len, want);
    e = rec_at(&recs[i], 2);
    CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
    e = rec_at(&recs[i], 3);
    CHECK_STATE(e, 4, LDS_LOADED, 0);
    snprintf(want, sizeof want, "done-c%d", i);
    CHECK_BYTES(e->value, e->value_len, want);
  }
  REQUIRE(WAIT_FOR(worker_count == CELLS));
  for (size_t i = 0; i < CELLS; i++) thread_join(worker_threads[i]);
  rt_free(rt);
  CHECK_EQ(h.free_data_calls, 1);
  for (int i = 0; i < CELLS; i++) {
    CHECK_EQ(rec_count(&recs[i]), 4);
    rec_destroy(&recs[i]);
  }
  host_destroy(&h);
}
