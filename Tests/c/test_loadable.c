/* test_loadable.c — the semantics table for loadable cells. */
#include <string.h>

#include "harness.h"

static lds_load_options silent(void) {
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SILENT;
  return o;
}

/* Checks every event of the recorder ran on one thread that is not the
 * test's own (LOOP mode). */
static void check_loop_thread(recorder *rec, pthread_t loop) {
  size_t n = rec_count(rec);
  for (size_t i = 0; i < n; i++) CHECK(pthread_equal(rec_thread(rec, i), loop));
  CHECK(!pthread_equal(loop, pthread_self()));
}

/* Holds the loop thread inside a callback until the test releases it. */
typedef struct gate {
  bool blocked;
  bool released;
} gate;

static void block_loop(recorder *rec, const lds_event *e) {
  (void)e;
  gate *g = rec->data;
  harness_lock();
  g->blocked = true;
  harness_notify();
  harness_unlock();
  WAIT_FOR(g->released);
}

static void gate_release(gate *g) {
  harness_lock();
  g->released = true;
  harness_notify();
  harness_unlock();
}

TEST(test_get_before_any_event_is_seq0_absent) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_snapshot s;
  memset(&s, 0xab, sizeof s);
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.type, LDS_EVENT_STATE);
  CHECK_EQ(s.cell, f.cell);
  CHECK_EQ(s.seq, 0);
  CHECK_EQ(s.status, LDS_ABSENT);
  CHECK_EQ(s.flags, 0);
  CHECK(s.value == NULL && s.value_len == 0);
  CHECK(s.request == NULL && s.request_len == 0);
  CHECK(s.error_message == NULL);
  CHECK_EQ(s.error_domain, 0);
  CHECK_EQ(s.attempt, 0);
  lds_snapshot_clear(&s);
  fixture_finish(&f);
}

TEST(test_load_emits_loading_then_loaded) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  uint64_t before = wall_ms();
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_LOADING, 0);
  CHECK_EQ(e->cell, f.cell);
  CHECK_EQ(e->kind, 0);
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  CHECK_OP(e->updated_at_ms, >=, before);

  REQUIRE(HOST_WAIT(&f.h, 1));
  const host_job *j = host_job_info(&f.h, 0);
  CHECK_BYTES(j->request, j->request_len, "r1");
  CHECK(pthread_equal(j->thread, rec_thread(&f.rec, 0)));
  CHECK_EQ(lds_job_is_cancelled(f.rt, j->job), 0);

  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.seq, 1);
  CHECK_EQ(s.status, LDS_LOADING);
  CHECK_BYTES(s.request, s.request_len, "r1");
  lds_snapshot_clear(&s);

  REQUIRE_RC(fx_succeed(&f, j->job, "v1"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v1");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  CHECK_OP(e->updated_at_ms, >=, before);
  CHECK_OP(e->updated_at_ms, <=, wall_ms());

  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.type, LDS_EVENT_STATE);
  CHECK_EQ(s.seq, 2);
  CHECK_EQ(s.status, LDS_LOADED);
  CHECK_EQ(s.flags, 0);
  CHECK_EQ(s.attempt, 1);
  CHECK(s.updated_at_ms == e->updated_at_ms);
  CHECK_BYTES(s.value, s.value_len, "v1");
  CHECK_BYTES(s.request, s.request_len, "r1");
  /* The snapshot owns its copies: scribbling on them changes nothing. */
  if (s.value != NULL) memset(s.value, 'x', s.value_len);
  lds_snapshot t;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &t), LDS_OK);
  CHECK_BYTES(t.value, t.value_len, "v1");
  CHECK(t.value != s.value);
  lds_snapshot_clear(&t);
  lds_snapshot_clear(&s);
  CHECK(s.value == NULL && s.request == NULL && s.seq == 0);
  lds_snapshot_clear(&s);

  CHECK_EQ(lds_job_is_cancelled(f.rt, j->job), 1);
  check_loop_thread(&f.rec, rec_thread(&f.rec, 0));
  fixture_finish(&f);
}

TEST(test_load_failure_emits_error) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 42, "boom"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 42);
  CHECK_STR(e->error_message, "boom");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.status, LDS_ERROR);
  CHECK_EQ(s.error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(s.error_code, 42);
  CHECK_STR(s.error_message, "boom");
  lds_snapshot_clear(&s);
  fixture_finish(&f);
}

TEST(test_load_cancels_running_job_without_event) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job1 = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job1, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADING, 0);
  CHECK_BYTES(e->request, e->request_len, "r2");
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job2 = host_job_at(&f.h, 1);
  CHECK(job2 != job1);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job1) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job1), 1);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job2), 0);
  REQUIRE_RC(fx_succeed(&f, job2, "v2"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v2");
  CHECK_BYTES(e->request, e->request_len, "r2");
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 1);
}

TEST(test_silent_load_keeps_state_flags_refreshing) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  lds_load_options o = silent();
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, LDS_FLAG_REFRESHING);
  CHECK_BYTES(e->value, e->value_len, "old");
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.status, LDS_LOADED);
  CHECK_EQ(s.flags, LDS_FLAG_REFRESHING);
  CHECK_BYTES(s.value, s.value_len, "old");
  lds_snapshot_clear(&s);
  REQUIRE(HOST_WAIT(&f.h, 1));
  CHECK_BYTES(host_job_info(&f.h, 0)->request, host_job_info(&f.h, 0)->request_len, "r1");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "new"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "new");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  fixture_finish(&f);
}

TEST(test_silent_load_from_absent_then_failure_replaces_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = silent();
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_ABSENT, LDS_FLAG_REFRESHING);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 3, "nope"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->error_code, 3);
  CHECK_BYTES(e->request, e->request_len, "r1");
  fixture_finish(&f);
}

TEST(test_refresh_reloads_last_request) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v1"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_REFRESHING);
  CHECK_BYTES(e->value, e->value_len, "v1");
  REQUIRE(HOST_WAIT(&f.h, 2));
  const host_job *j = host_job_info(&f.h, 1);
  CHECK_BYTES(j->request, j->request_len, "r1");
  REQUIRE_RC(fx_succeed(&f, j->job, "v2"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v2");
  CHECK_BYTES(e->request, e->request_len, "r1");
  fixture_finish(&f);
}

TEST(test_refresh_after_failure) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 9, "down"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ERROR, 0);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_ERROR, LDS_FLAG_REFRESHING);
  CHECK_EQ(e->error_code, 9);
  REQUIRE(HOST_WAIT(&f.h, 2));
  CHECK_BYTES(host_job_info(&f.h, 1)->request, host_job_info(&f.h, 1)->request_len, "r1");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 1), "ok"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_refresh_after_cancel_and_reset) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ABSENT, LDS_FLAG_CANCELLED);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_ABSENT, LDS_FLAG_REFRESHING);
  REQUIRE(HOST_WAIT(&f.h, 2));
  CHECK_BYTES(host_job_info(&f.h, 1)->request, host_job_info(&f.h, 1)->request_len, "r1");
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_ABSENT, 0);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  CHECK_BYTES(host_job_info(&f.h, 2)->request, host_job_info(&f.h, 2)->request_len, "r1");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 2), "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 6));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_ABSENT, LDS_FLAG_REFRESHING);
  const lds_event *e = rec_at(&f.rec, 5);
  CHECK_STATE(e, 6, LDS_LOADED, 0);
  CHECK_BYTES(e->request, e->request_len, "r1");
  fixture_finish(&f);
}

/* A cancel restores the state before the load, and refresh then reloads
 * the request that state shows (r1), not the one backed out of (r2, r3),
 * whether the cancel came from outside or from the job itself. */
TEST(test_refresh_after_cancel_reloads_the_restored_request) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v1"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  /* A chain of superseding loads, cancelled from outside. */
  REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE_RC(fx_load(&f, "r3", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  const lds_event *e = rec_at(&f.rec, 4);
  CHECK_STATE(e, 5, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(e->request, e->request_len, "r1");
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 4));
  CHECK_BYTES(host_job_info(&f.h, 3)->request, host_job_info(&f.h, 3)->request_len, "r1");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 3), "v1b"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 7));
  e = rec_at(&f.rec, 6);
  CHECK_STATE(e, 7, LDS_LOADED, 0);
  CHECK_BYTES(e->request, e->request_len, "r1");
  /* A load cancelled by its own job. */
  REQUIRE_RC(fx_load(&f, "r4", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 5));
  REQUIRE_RC(lds_job_cancel_self(f.rt, host_job_at(&f.h, 4)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 9));
  CHECK_STATE(rec_at(&f.rec, 8), 9, LDS_LOADED, LDS_FLAG_CANCELLED);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 6));
  CHECK_BYTES(host_job_info(&f.h, 5)->request, host_job_info(&f.h, 5)->request_len, "r1");
  fixture_finish(&f);
}

TEST(test_refresh_without_request_is_estate) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  CHECK_RC(lds_loadable_refresh(f.rt, f.cell), LDS_ESTATE);
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  CHECK_RC(lds_loadable_refresh(f.rt, f.cell), LDS_ESTATE);
  /* The refused calls caused nothing: the next event is the next set. */
  REQUIRE_RC(fx_set_loaded(&f, "w"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 0);
  fixture_finish(&f);
}

TEST(test_refresh_after_loader_freed_is_enoent) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  CHECK(WAIT_FOR(f.h.free_data_calls == 1));
  CHECK_RC(lds_loadable_refresh(f.rt, f.cell), LDS_ENOENT);
  fixture_finish(&f);
}

TEST(test_yield_partial_then_finish) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_yield(&f, job, "a"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK_BYTES(e->value, e->value_len, "a");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  REQUIRE_RC(fx_yield(&f, job, "b"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK_BYTES(e->value, e->value_len, "b");
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.flags, LDS_FLAG_PARTIAL);
  CHECK_BYTES(s.value, s.value_len, "b");
  lds_snapshot_clear(&s);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(lds_job_finish(f.rt, job), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "b");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  fixture_finish(&f);
}

TEST(test_silent_yield_keeps_refreshing) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  lds_load_options o = silent();
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_yield(&f, job, "p"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_PARTIAL | LDS_FLAG_REFRESHING);
  CHECK_BYTES(e->value, e->value_len, "p");
  REQUIRE_RC(lds_job_finish(f.rt, job), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "p");
  fixture_finish(&f);
}

TEST(test_finish_without_yield_restores_previous_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 0)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_NO_VALUE);
  CHECK_BYTES(e->value, e->value_len, "old");
  CHECK(e->request == NULL);
  fixture_finish(&f);
}

TEST(test_succeed_after_yields) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_yield(&f, job, "a"), LDS_OK);
  REQUIRE_RC(fx_yield(&f, job, "b"), LDS_OK);
  REQUIRE_RC(fx_succeed(&f, job, "final"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, LDS_FLAG_PARTIAL);
  const lds_event *e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "final");
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_RC(fx_yield(&f, job, "late"), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_cancel_from_outside_restores_previous_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(e->value, e->value_len, "old");
  CHECK(e->request == NULL);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK(pthread_equal(f.hooks.entries[0].thread, rec_thread(&f.rec, 0)));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.seq, 3);
  CHECK_EQ(s.flags, LDS_FLAG_CANCELLED);
  CHECK_BYTES(s.value, s.value_len, "old");
  lds_snapshot_clear(&s);
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 1);
}

TEST(test_cancel_restores_error_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 11, "was bad"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_ERROR, LDS_FLAG_CANCELLED);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 11);
  CHECK_STR(e->error_message, "was bad");
  fixture_finish(&f);
}

TEST(test_cancel_after_superseding_loads_restores_state_before_first) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(e->value, e->value_len, "old");
  fixture_finish(&f);
}

TEST(test_cancel_without_running_job_emits_nothing) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "fence");
  fixture_finish(&f);
}

static void *cancel_self_worker(void *arg) {
  fixture *f = arg;
  CHECK_RC(lds_job_cancel_self(f->rt, host_job_at(&f->h, 0)), LDS_OK);
  return NULL;
}

TEST(test_cancel_self) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  thread_join(thread_start(cancel_self_worker, &f));
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(e->value, e->value_len, "old");
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  CHECK_RC(lds_job_cancel_self(f.rt, job), LDS_ECANCELED);
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 1);
}

TEST(test_reset_from_outside) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_ABSENT, 0);
  CHECK(e->request == NULL);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  /* Already absent with no job: no event. */
  CHECK_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, 0);
  /* A loaded cell without a job becomes absent. */
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_ABSENT, 0);
  fixture_finish(&f);
}

static void *reset_self_worker(void *arg) {
  fixture *f = arg;
  CHECK_RC(lds_job_reset_self(f->rt, host_job_at(&f->h, 0)), LDS_OK);
  return NULL;
}

TEST(test_reset_self) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  thread_join(thread_start(reset_self_worker, &f));
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_ABSENT, 0);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(lds_job_reset_self(f.rt, job), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_set_loaded_cancels_running_job) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(fx_set_loaded(&f, "manual"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "manual");
  CHECK(e->request == NULL && e->request_len == 0);
  CHECK_EQ(e->attempt, 0);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_set_error) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 7, "bad"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 7);
  CHECK_STR(e->error_message, "bad");
  CHECK(e->request == NULL);
  CHECK_EQ(e->attempt, 0);
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, -8, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->error_code, -8);
  CHECK(e->error_message == NULL);
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.error_code, -8);
  CHECK(s.error_message == NULL);
  lds_snapshot_clear(&s);
  /* With a running job: the job is cancelled. */
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 5, "manual"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 5);
  CHECK_STR(e->error_message, "manual");
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_RC(lds_job_fail(f.rt, job, 1, "late"), LDS_ECANCELED);
  fixture_finish(&f);
}

/* Every job call on a job that no longer runs returns LDS_ECANCELED. */
static void check_job_gone(lds_runtime *rt, lds_id job, hook_log *log) {
  CHECK_RC(lds_job_yield(rt, job, "y", 1), LDS_ECANCELED);
  CHECK_RC(lds_job_succeed(rt, job, "s", 1), LDS_ECANCELED);
  CHECK_RC(lds_job_succeed(rt, job, NULL, 0), LDS_ECANCELED);
  CHECK_RC(lds_job_finish(rt, job), LDS_ECANCELED);
  CHECK_RC(lds_job_fail(rt, job, 1, "f"), LDS_ECANCELED);
  CHECK_RC(lds_job_fail_final(rt, job, 1, "f"), LDS_ECANCELED);
  CHECK_RC(lds_job_progress(rt, job, 1, 2), LDS_ECANCELED);
  CHECK_RC(lds_job_cancel_self(rt, job), LDS_ECANCELED);
  CHECK_RC(lds_job_reset_self(rt, job), LDS_ECANCELED);
  CHECK_RC(hook_add(rt, job, log, 99), LDS_ECANCELED);
  CHECK_EQ(lds_job_is_cancelled(rt, job), 1);
}

TEST(test_superseded_job_completion_returns_ecanceled) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job1 = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job2 = host_job_at(&f.h, 1);
  check_job_gone(f.rt, job1, &f.hooks);
  REQUIRE_RC(fx_succeed(&f, job2, "v2"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v2");
  check_job_gone(f.rt, job1, &f.hooks);
  fixture_finish(&f);
}

TEST(test_cancelled_job_completion_returns_ecanceled) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  check_job_gone(f.rt, job, &f.hooks);
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ABSENT, LDS_FLAG_CANCELLED);
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_completed_job_calls_return_ecanceled) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  /* Completing twice fails at once, even before the first is applied. */
  check_job_gone(f.rt, job, &f.hooks);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "v");
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_free_cell_with_running_job) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder other;
  rec_init(&other, f.rt);
  lds_id fence = cell_new(f.rt, &other);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE(REC_WAIT(&f.rec, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_job_yield(f.rt, job, "before free", 11), LDS_OK);
  REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK);
  size_t seen = rec_count(&f.rec);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_ENOENT);
  CHECK_RC(lds_loadable_free(f.rt, f.cell), LDS_ENOENT);
  /* Nothing for the freed cell after free returned: a later event of
   * another cell comes first. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, fence, "x", 1), LDS_OK);
  REQUIRE(REC_WAIT(&other, 1));
  CHECK_EQ(rec_count(&f.rec), seen);
  fixture_finish(&f);
  rec_destroy(&other);
}

static void free_in_callback(recorder *rec, const lds_event *e) {
  if (e->seq != 1) return;
  CHECK_RC(lds_loadable_free(rec->rt, e->cell), LDS_OK);
  /* From the delivery thread: no further callback of the cell at all. */
  rec_close(rec);
}

TEST(test_free_cell_from_its_callback_stops_its_callbacks) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  f.rec.action = free_in_callback;
  recorder other;
  rec_init(&other, f.rt);
  gate g = {0};
  other.action = block_loop;
  other.data = &g;
  lds_id blocking_cell = cell_new(f.rt, &other);
  /* Five events of the cell are queued while the loop thread waits; the
   * first one's callback frees the cell. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, blocking_cell, "b", 1), LDS_OK);
  REQUIRE(WAIT_FOR(g.blocked));
  for (int i = 0; i < 5; i++) REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  gate_release(&g);
  REQUIRE(REC_WAIT(&f.rec, 1));
  /* The other cell's next event is the fence. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, blocking_cell, "x", 1), LDS_OK);
  REQUIRE(REC_WAIT(&other, 2));
  CHECK_EQ(rec_count(&f.rec), 1);
  fixture_finish(&f);
  rec_destroy(&other);
}

TEST(test_timeout) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_hook_start);
  f.h.data = &f.hooks;
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 50;
  uint64_t before = wall_ms();
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
  CHECK_EQ(e->error_code, LDS_ETIMEDOUT);
  CHECK_BYTES(e->request, e->request_len, "r1");
  CHECK_EQ(e->attempt, 1);
  CHECK_OP(e->updated_at_ms, >=, before + 50);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_timeout_does_not_fire_after_success) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 250;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  /* A second cell whose longer timeout fires is the clock. */
  recorder clock;
  rec_init(&clock, f.rt);
  host idle;
  lds_id idle_loader = host_new(f.rt, &idle, NULL);
  lds_id clock_cell = cell_new(f.rt, &clock);
  o.timeout_ms = 300;
  REQUIRE_RC(lds_loadable_load(f.rt, clock_cell, idle_loader, "c", 1, &o), LDS_OK);
  REQUIRE(REC_WAIT(&clock, 2));
  CHECK_EQ(rec_at(&clock, 1)->status, LDS_ERROR);
  CHECK_EQ(rec_count(&f.rec), 2);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  fixture_finish(&f);
  rec_destroy(&clock);
  host_destroy(&idle);
}

TEST(test_interrupts) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  const uint32_t delays[] = {30, 30, 30};
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.interrupts_ms = delays;
  o.interrupt_count = 3;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  uint64_t waited = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
  uint64_t last = 0;
  for (size_t i = 1; i <= 3; i++) {
    const lds_event *e = rec_at(&f.rec, i);
    CHECK_EQ(e->type, LDS_EVENT_INTERRUPT);
    CHECK_EQ(e->seq, i + 1);
    CHECK_EQ(e->status, LDS_LOADING);
    CHECK_EQ(e->cell, f.cell);
    CHECK_OP(e->elapsed_ms, >=, 30 * i);
    CHECK_OP(e->elapsed_ms, >=, last);
    CHECK_OP(e->elapsed_ms, <=, waited + 1);
    CHECK_BYTES(e->request, e->request_len, "r1");
    last = e->elapsed_ms;
  }
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, 0);
  fixture_finish(&f);
}

/* Completes the job from the callback of the first interrupt. */
static void succeed_on_interrupt(recorder *rec, const lds_event *e) {
  if (e->type != LDS_EVENT_INTERRUPT || e->seq != 2) return;
  fixture *f = rec->data;
  CHECK_RC(fx_succeed(f, host_job_at(&f->h, 0), "v"), LDS_OK);
}

TEST(test_no_interrupt_after_job_ends) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  f.rec.action = succeed_on_interrupt;
  f.rec.data = &f;
  const uint32_t delays[] = {20, 250};
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.interrupts_ms = delays;
  o.interrupt_count = 2;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(WAIT_FOR(f.rec.count > 0 && rec_last(&f.rec)->status == LDS_LOADED));
  /* On a slow host the second interrupt may fall due before the job ends;
   * what matters is that none comes after. */
  size_t ended = rec_count(&f.rec);
  CHECK_OP(ended, <=, 4);
  for (size_t i = 1; i + 1 < ended; i++) CHECK_EQ(rec_at(&f.rec, i)->type, LDS_EVENT_INTERRUPT);
  CHECK_STATE(rec_at(&f.rec, ended - 1), ended, LDS_LOADED, 0);
  /* A second cell whose interrupt is due after the first cell's second
   * one is the clock. */
  recorder clock;
  rec_init(&clock, f.rt);
  lds_id clock_cell = cell_new(f.rt, &clock);
  const uint32_t later[] = {300};
  o.interrupts_ms = later;
  o.interrupt_count = 1;
  REQUIRE_RC(lds_loadable_load(f.rt, clock_cell, f.loader, "c", 1, &o), LDS_OK);
  REQUIRE(REC_WAIT(&clock, 2));
  CHECK_EQ(rec_at(&clock, 1)->type, LDS_EVENT_INTERRUPT);
  CHECK_EQ(rec_count(&f.rec), ended);
  fixture_finish(&f);
  rec_destroy(&clock);
}

/* Answers the first interrupt by giving up: an error LDS_ETIMEDOUT. */
static void give_up_on_interrupt(recorder *rec, const lds_event *e) {
  if (e->type != LDS_EVENT_INTERRUPT || e->seq != 2) return;
  fixture *f = rec->data;
  CHECK_RC(lds_loadable_set_error(f->rt, f->cell, LDS_ETIMEDOUT, "taking too long"), LDS_OK);
}

TEST(test_interrupt_answered_with_set_error_timedout) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  f.rec.action = give_up_on_interrupt;
  f.rec.data = &f;
  const uint32_t delays[] = {20, 20, 20};
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.interrupts_ms = delays;
  o.interrupt_count = 3;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE(WAIT_FOR(f.rec.count > 0 && rec_last(&f.rec)->status == LDS_ERROR));
  /* On a slow host more interrupts may fall due before the answer is run;
   * none comes after it. */
  size_t ended = rec_count(&f.rec);
  CHECK_EQ(rec_at(&f.rec, 1)->type, LDS_EVENT_INTERRUPT);
  for (size_t i = 1; i + 1 < ended; i++) CHECK_EQ(rec_at(&f.rec, i)->type, LDS_EVENT_INTERRUPT);
  const lds_event *e = rec_at(&f.rec, ended - 1);
  CHECK_STATE(e, ended, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, LDS_ETIMEDOUT);
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  /* The remaining interrupts never come: a later timeout elsewhere is the clock. */
  recorder clock;
  rec_init(&clock, f.rt);
  lds_id clock_cell = cell_new(f.rt, &clock);
  lds_load_options c = LDS_LOAD_OPTIONS_INIT;
  c.timeout_ms = 120;
  REQUIRE_RC(lds_loadable_load(f.rt, clock_cell, f.loader, "c", 1, &c), LDS_OK);
  REQUIRE(REC_WAIT(&clock, 2));
  CHECK_EQ(rec_count(&f.rec), ended);
  fixture_finish(&f);
  rec_destroy(&clock);
}

TEST(test_interrupt_not_needed_when_the_job_ends_first) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  const uint32_t delays[] = {40};
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.interrupts_ms = delays;
  o.interrupt_count = 1;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  /* A second cell whose interrupt is due later is the clock. */
  recorder clock;
  rec_init(&clock, f.rt);
  host idle;
  lds_id idle_loader = host_new(f.rt, &idle, NULL);
  lds_id clock_cell = cell_new(f.rt, &clock);
  const uint32_t later[] = {120};
  o.interrupts_ms = later;
  REQUIRE_RC(lds_loadable_load(f.rt, clock_cell, idle_loader, "c", 1, &o), LDS_OK);
  REQUIRE(REC_WAIT(&clock, 2));
  CHECK_EQ(rec_at(&clock, 1)->type, LDS_EVENT_INTERRUPT);
  CHECK_EQ(rec_count(&f.rec), 2);
  fixture_finish(&f);
  rec_destroy(&clock);
  host_destroy(&idle);
}

TEST(test_two_interrupts_then_a_timeout) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  const uint32_t delays[] = {20, 20};
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.interrupts_ms = delays;
  o.interrupt_count = 2;
  o.timeout_ms = 150;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_EQ(rec_at(&f.rec, 1)->type, LDS_EVENT_INTERRUPT);
  CHECK_OP(rec_at(&f.rec, 1)->elapsed_ms, >=, 20);
  CHECK_EQ(rec_at(&f.rec, 2)->type, LDS_EVENT_INTERRUPT);
  CHECK_OP(rec_at(&f.rec, 2)->elapsed_ms, >=, 40);
  const lds_event *e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
  CHECK_EQ(e->error_code, LDS_ETIMEDOUT);
  fixture_finish(&f);
}

TEST(test_retries) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_fail);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 2;
  o.retry_base_ms = 1;
  o.retry_max_ms = 5;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  for (uint32_t i = 0; i < 3; i++) {
    const lds_event *e = rec_at(&f.rec, i);
    CHECK_STATE(e, i + 1, LDS_LOADING, 0);
    CHECK_EQ(e->attempt, i + 1);
    CHECK_BYTES(e->request, e->request_len, "r1");
  }
  const lds_event *e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_ERROR, 0);
  CHECK_EQ(e->attempt, 3);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 1);
  CHECK_STR(e->error_message, "failed");
  CHECK_EQ(f.h.starts, 3);
  for (size_t i = 0; i < 3; i++) {
    const host_job *j = host_job_info(&f.h, i);
    CHECK_BYTES(j->request, j->request_len, "r1");
  }
  CHECK(host_job_at(&f.h, 0) != host_job_at(&f.h, 1));
  fixture_finish(&f);
}

static void fail_final(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(lds_job_fail_final(h->rt, job, 21, "final"), LDS_OK);
}

TEST(test_fail_final_skips_retries) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, fail_final);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 3;
  o.retry_base_ms = 1;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->attempt, 1);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 21);
  CHECK_STR(e->error_message, "final");
  /* No retry follows: the next event is the fence's. */
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 1);
  fixture_finish(&f);
}

static void fail_first_attempt(host *h, lds_id job, const void *request, size_t len) {
  if (h->starts == 1) host_fail(h, job, request, len);
  else host_succeed_echo(h, job, request, len);
}

TEST(test_retry_then_success) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, fail_first_attempt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 3;
  o.retry_base_ms = 1;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  CHECK_EQ(rec_at(&f.rec, 1)->attempt, 2);
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, 0);
  CHECK_EQ(e->attempt, 2);
  CHECK_BYTES(e->value, e->value_len, "r1");
  CHECK_EQ(f.h.starts, 2);
  fixture_finish(&f);
}

TEST(test_cancel_during_retry_backoff) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 1;
  o.retry_base_ms = 60000;
  o.retry_max_ms = 60000;
  REQUIRE_RC(fx_load(&f, "r1", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 1, "once"), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  /* The back-off is random up to its bound, so the retry may have begun. */
  REQUIRE(WAIT_FOR(f.rec.count >= 2 && rec_last(&f.rec)->flags == LDS_FLAG_CANCELLED));
  const lds_event *e = rec_last(&f.rec);
  CHECK_STATE(e, rec_count(&f.rec), LDS_ABSENT, LDS_FLAG_CANCELLED);
  if (rec_count(&f.rec) == 3) CHECK_EQ(rec_at(&f.rec, 1)->attempt, 2);
  CHECK_OP(rec_count(&f.rec), <=, 3);
  fixture_finish(&f);
}

/* A job counts as cancelled from the moment the call on its cell is made,
 * before the loop has acted on it. */
static void check_cancelled_by(int which) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE(lds_job_is_cancelled(f.rt, job) == 0);
  switch (which) {
  case 0: REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK); break;
  case 1: REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK); break;
  case 2: REQUIRE_RC(fx_load(&f, "r2", NULL), LDS_OK); break;
  case 3: REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK); break;
  case 4: REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK); break;
  case 5: REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 1, NULL), LDS_OK); break;
  default: REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK); break;
  }
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_RC(fx_succeed(&f, job, "late"), LDS_ECANCELED);
  fixture_finish(&f);
}

TEST(test_job_counts_as_cancelled_from_the_call_on_its_cell) {
  for (int which = 0; which <= 6; which++) check_cancelled_by(which);
}

TEST(test_load_then_loader_freed_at_once) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  /* Either the load began first and its job runs, or it found the loader
   * gone: then no job starts and the cell becomes an ENOENT error. */
  REQUIRE(WAIT_FOR(f.h.starts == 1 || (f.rec.count > 0 && rec_last(&f.rec)->status == LDS_ERROR)));
  if (host_job_at(&f.h, 0) != 0) {
    REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v"), LDS_OK);
    REQUIRE(WAIT_FOR(rec_last(&f.rec) != NULL && rec_last(&f.rec)->status == LDS_LOADED));
  } else {
    const lds_event *e = rec_last(&f.rec);
    CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
    CHECK_EQ(e->error_code, LDS_ENOENT);
    CHECK_EQ(f.h.starts, 0);
  }
  CHECK(WAIT_FOR(f.h.free_data_calls == 1));
  fixture_finish(&f);
}

/* A load superseded before it began on the loop starts no job, but its
 * LOADING event is still reported, then the next operation's. */
TEST(test_load_superseded_before_it_began_starts_no_job) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  gate g = {0};
  recorder blocker;
  rec_init(&blocker, f.rt);
  blocker.action = block_loop;
  blocker.data = &g;
  lds_id blocking_cell = cell_new(f.rt, &blocker);
  /* The loop thread waits in the other cell's callback while both loads
   * are called, so the first is superseded before it begins. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, blocking_cell, "b", 1), LDS_OK);
  REQUIRE(WAIT_FOR(g.blocked));
  CHECK_RC(fx_load(&f, "r1", NULL), LDS_OK);
  CHECK_RC(fx_load(&f, "r2", NULL), LDS_OK);
  gate_release(&g);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE(HOST_WAIT(&f.h, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_BYTES(rec_at(&f.rec, 0)->request, rec_at(&f.rec, 0)->request_len, "r1");
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  CHECK_BYTES(rec_at(&f.rec, 1)->request, rec_at(&f.rec, 1)->request_len, "r2");
  const host_job *j = host_job_info(&f.h, 0);
  CHECK_BYTES(j->request, j->request_len, "r2");
  REQUIRE_RC(fx_succeed(&f, j->job, "v2"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 1);
  fixture_finish(&f);
  rec_destroy(&blocker);
}
