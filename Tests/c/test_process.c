/* test_process.c — process cells: idle -> running(kind) -> finished(kind) | failed(kind). */
#include <string.h>

#include "harness.h"

/* A fixture whose cell is a process cell. */
static void process_fixture(fixture *f) {
  fixture_init(f, LDS_DELIVER_LOOP, NULL);
  CHECK_RC(lds_loadable_free(f->rt, f->cell), LDS_OK);
  f->cell = process_new(f->rt, &f->rec);
}

static int run(fixture *f, int32_t kind, const char *request, const lds_load_options *o) {
  return lds_process_run(f->rt, f->cell, kind, f->loader, request, strlen(request), o);
}

TEST(test_process_run_emits_running_then_finished) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 7, "p1", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_RUNNING, 0);
  CHECK_EQ(e->kind, 7);
  CHECK_EQ(e->cell, f.cell);
  CHECK_EQ(e->attempt, 1);
  CHECK_BYTES(e->request, e->request_len, "p1");
  REQUIRE(HOST_WAIT(&f.h, 1));
  const host_job *j = host_job_info(&f.h, 0);
  CHECK_BYTES(j->request, j->request_len, "p1");
  REQUIRE_RC(lds_job_succeed(f.rt, j->job, "ignored", 7), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_FINISHED, 0);
  CHECK_EQ(e->kind, 7);
  CHECK(e->value == NULL && e->value_len == 0);
  CHECK_BYTES(e->request, e->request_len, "p1");
  fixture_finish(&f);
}

TEST(test_process_finish_emits_finished) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 2, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 0)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_FINISHED, 0);
  CHECK_EQ(rec_at(&f.rec, 1)->kind, 2);
  fixture_finish(&f);
}

TEST(test_process_run_failed_with_kind) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 3, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 5, "crashed"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_FAILED, 0);
  CHECK_EQ(e->kind, 3);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(e->error_code, 5);
  CHECK_STR(e->error_message, "crashed");
  fixture_finish(&f);
}

TEST(test_process_yield_is_ignored_and_progress_reported) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  CHECK_RC(lds_job_yield(f.rt, job, "v", 1), LDS_OK);
  CHECK_RC(lds_job_progress(f.rt, job, 4, 8), LDS_OK);
  CHECK_RC(lds_job_finish(f.rt, job), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_EQ(e->type, LDS_EVENT_PROGRESS);
  CHECK_EQ(e->seq, 2);
  CHECK_EQ(e->status, LDS_RUNNING);
  CHECK_EQ(e->kind, 1);
  CHECK_EQ(e->progress_done, 4);
  CHECK_EQ(e->progress_total, 8);
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_FINISHED, 0);
  fixture_finish(&f);
}

TEST(test_process_cancel_restores_previous_state) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "first", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 0)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(run(&f, 2, "second", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id job = host_job_at(&f.h, 1);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_process_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_RUNNING, 0);
  CHECK_EQ(e->kind, 2);
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_FINISHED, LDS_FLAG_CANCELLED);
  CHECK_EQ(e->kind, 1);
  CHECK_BYTES(e->request, e->request_len, "first");
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_RC(lds_job_finish(f.rt, job), LDS_ECANCELED);
  /* No job: nothing happens. */
  CHECK_RC(lds_process_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(run(&f, 3, "fence", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_RUNNING, 0);
  fixture_finish(&f);
}

static void cancel_self_in_start(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(lds_job_cancel_self(h->rt, job), LDS_OK);
}

TEST(test_process_cancel_self) {
  fixture f;
  process_fixture(&f);
  host_set_start(&f.h, cancel_self_in_start);
  REQUIRE_RC(run(&f, 4, "p", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_IDLE, LDS_FLAG_CANCELLED);
  fixture_finish(&f);
}

TEST(test_process_reset) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_process_reset(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_IDLE, 0);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  /* Already idle: no event. */
  CHECK_RC(lds_process_reset(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(run(&f, 5, "fence", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_RUNNING, 0);
  CHECK_EQ(rec_at(&f.rec, 2)->kind, 5);
  fixture_finish(&f);
}

static void reset_self_in_start(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(lds_job_reset_self(h->rt, job), LDS_OK);
}

TEST(test_process_reset_self) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 0)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  host_set_start(&f.h, reset_self_in_start);
  REQUIRE_RC(run(&f, 2, "p", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_FINISHED, 0);
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_RUNNING, 0);
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_IDLE, 0);
  fixture_finish(&f);
}

TEST(test_process_silent_run_flags_refreshing) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 0)), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SILENT;
  REQUIRE_RC(run(&f, 2, "q", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_FINISHED, LDS_FLAG_REFRESHING);
  CHECK_EQ(e->kind, 1);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 1)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_FINISHED, 0);
  CHECK_EQ(e->kind, 2);
  fixture_finish(&f);
}

TEST(test_process_run_supersedes_running_job) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job1 = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job1, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(run(&f, 2, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  CHECK(WAIT_FOR(hook_count(&f.hooks, job1) == 1));
  CHECK_RC(lds_job_finish(f.rt, job1), LDS_ECANCELED);
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 1)), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_RUNNING, 0);
  CHECK_EQ(rec_at(&f.rec, 1)->kind, 2);
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_FINISHED, 0);
  CHECK_EQ(rec_at(&f.rec, 2)->kind, 2);
  fixture_finish(&f);
}

TEST(test_process_timeout) {
  fixture f;
  process_fixture(&f);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 30;
  REQUIRE_RC(run(&f, 6, "p", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_FAILED, 0);
  CHECK_EQ(e->kind, 6);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
  CHECK_EQ(e->error_code, LDS_ETIMEDOUT);
  fixture_finish(&f);
}

TEST(test_process_free_with_running_job) {
  fixture f;
  process_fixture(&f);
  REQUIRE_RC(run(&f, 1, "p", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE(REC_WAIT(&f.rec, 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  REQUIRE_RC(lds_process_free(f.rt, f.cell), LDS_OK);
  CHECK(WAIT_FOR(hook_count(&f.hooks, job) == 1));
  CHECK_RC(lds_job_finish(f.rt, job), LDS_ECANCELED);
  CHECK_RC(lds_process_free(f.rt, f.cell), LDS_ENOENT);
  CHECK_RC(lds_process_cancel(f.rt, f.cell), LDS_ENOENT);
  CHECK_EQ(rec_count(&f.rec), 1);
  fixture_finish(&f);
}
