/* test_loader_cancel.c — lds_loader_new_ex and its loader-level cancel
 * function: called once for every cancelled job whose start the host
 * received, before the job's own cancel hooks, never for a job that ended
 * by succeed, finish or fail. */
#include <poll.h>
#include <string.h>

#include "harness.h"

TEST(test_loader_cancel_runs_for_cancelled_jobs_only_and_before_their_hooks) {
  fixture f;
  fixture_init_cancels(&f, LDS_DELIVER_LOOP, NULL);
  /* Cancelled from outside, with a hook of its own. */
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id a = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, a, &f.hooks, 7), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(WAIT_FOR(f.hooks.count >= 2));
  CHECK_EQ(f.hooks.entries[0].job, a);
  CHECK_EQ(f.hooks.entries[0].tag, LOADER_CANCEL_TAG);
  CHECK_EQ(f.hooks.entries[1].tag, 7);
  /* Succeeded, failed, finished: never. */
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_id b = host_job_at(&f.h, 1);
  REQUIRE_RC(fx_succeed(&f, b, "v"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  lds_id c = host_job_at(&f.h, 2);
  REQUIRE_RC(lds_job_fail(f.rt, c, 1, "no"), LDS_OK);
  REQUIRE_RC(fx_load(&f, "d", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 4));
  lds_id d = host_job_at(&f.h, 3);
  REQUIRE_RC(lds_job_finish(f.rt, d), LDS_OK);
  /* Superseded by a load, then cancelled from inside. */
  REQUIRE_RC(fx_load(&f, "e", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 5));
  lds_id e = host_job_at(&f.h, 4);
  REQUIRE_RC(fx_load(&f, "g", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 6));
  lds_id g = host_job_at(&f.h, 5);
  REQUIRE(WAIT_FOR(f.hooks.count >= 3));
  REQUIRE_RC(lds_job_cancel_self(f.rt, g), LDS_OK);
  REQUIRE(WAIT_FOR(f.hooks.count >= 4));
  /* A timeout, then the runtime freed with a job running. */
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 1;
  REQUIRE_RC(fx_load(&f, "t", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 7));
  lds_id t = host_job_at(&f.h, 6);
  REQUIRE(WAIT_FOR(f.hooks.count >= 5));
  REQUIRE_RC(fx_load(&f, "last", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 8));
  lds_id last = host_job_at(&f.h, 7);
  fixture_finish(&f);
  CHECK_EQ(loader_cancel_count(&f.hooks, a), 1);
  CHECK_EQ(loader_cancel_count(&f.hooks, b), 0);
  CHECK_EQ(loader_cancel_count(&f.hooks, c), 0);
  CHECK_EQ(loader_cancel_count(&f.hooks, d), 0);
  CHECK_EQ(loader_cancel_count(&f.hooks, e), 1);
  CHECK_EQ(loader_cancel_count(&f.hooks, g), 1);
  CHECK_EQ(loader_cancel_count(&f.hooks, t), 1);
  CHECK_EQ(loader_cancel_count(&f.hooks, last), 1); /* before lds_runtime_free returned */
  CHECK_EQ(f.hooks.count, 6);                  /* five loader cancels and the hook of a */
}

/* A STEP_UNTIL step: waits for the fd, then runs at most one pending callback. */
static bool dispatch_one(lds_runtime *rt, const struct timespec *deadline) {
  if (harness_past(deadline)) return false;
  struct pollfd p = {.fd = lds_runtime_fd(rt), .events = POLLIN};
  poll(&p, 1, 100);
  return lds_runtime_dispatch(rt, 1) >= 0;
}

TEST(test_loader_cancel_in_poll_mode_runs_on_the_dispatching_thread) {
  fixture f;
  fixture_init_cancels(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.h.starts >= 1));
  lds_id a = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.hooks.count >= 1));
  CHECK_EQ(f.hooks.entries[0].job, a);
  CHECK(pthread_equal(f.hooks.entries[0].thread, pthread_self()));
  /* A job cancelled before its start was dispatched: no start, no cancel.
   * b's LOADING event is taken alone; then the fd shows b's start queued
   * behind it (its job exists), and a new load cancels that job. */
  REQUIRE_RC(fx_load(&f, "b", NULL), LDS_OK);
  REQUIRE(STEP_UNTIL(dispatch_one, f.rt, f.rec.count >= 3));
  struct pollfd p = {.fd = lds_runtime_fd(f.rt), .events = POLLIN};
  REQUIRE(poll(&p, 1, 10000) == 1);
  REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.h.starts >= 2));
  CHECK_BYTES(host_job_info(&f.h, 1)->request, host_job_info(&f.h, 1)->request_len, "c");
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.hooks.count >= 2));
  CHECK_EQ(f.hooks.entries[1].job, host_job_at(&f.h, 1));
  CHECK_EQ(f.h.starts, 2);
  fixture_finish(&f);
  CHECK_EQ(f.hooks.count, 2);
}

/* What the records test has seen (harness lock). */
static struct {
  host *h;
  lds_id cancelled[8];
  size_t cancels;
} R;

/* A STEP_UNTIL step: waits for the runtime's fd (until the deadline), then
 * takes one batch of records, starting jobs as host_loader_start would and
 * logging CANCEL records in R. */
static bool take_records(lds_runtime *rt, const struct timespec *deadline) {
  if (harness_past(deadline)) return false;
  struct pollfd p = {.fd = lds_runtime_fd(rt), .events = POLLIN};
  poll(&p, 1, 100);
  static uint64_t buf[4096];
  size_t used = 0;
  int rc = lds_runtime_dispatch_records(rt, buf, sizeof buf, 0, &used);
  if (rc < 0) {
    check_fail(__FILE__, __LINE__, "lds_runtime_dispatch_records returned %d", rc);
    return false;
  }
  for (size_t off = 0; rc > 0 && off < used;) {
    const lds_record *r = (const lds_record *)((const char *)buf + off);
    if (r->what == LDS_RECORD_START) {
      host_loader_start(rt, r->job, r->event.request, r->event.request_len, r->user_data);
    } else if (r->what == LDS_RECORD_CANCEL) {
      if (r->user_data != R.h) check_fail(__FILE__, __LINE__, "a cancel record for another loader");
      if (r->event.request != NULL || r->event.seq != 0) check_fail(__FILE__, __LINE__, "a cancel record's event");
      harness_lock();
      if (R.cancels < 8) R.cancelled[R.cancels++] = r->job;
      harness_notify();
      harness_unlock();
    }
    off += r->size;
  }
  return true;
}

TEST(test_loader_cancel_as_records) {
  fixture f;
  fixture_init_cancels(&f, LDS_DELIVER_POLL, NULL);
  memset(&R, 0, sizeof R);
  R.h = &f.h;
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(STEP_UNTIL(take_records, f.rt, f.h.starts >= 1));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(STEP_UNTIL(take_records, f.rt, R.cancels >= 1));
  CHECK_EQ(R.cancelled[0], host_job_at(&f.h, 0));
  CHECK_EQ(f.hooks.count, 0); /* handed over as a record, not called */
  fixture_finish(&f);
  CHECK_EQ(R.cancels, 1);
}

TEST(test_loader_new_ex_bad_input) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  lds_id out = 5;
  CHECK_RC(lds_loader_new_ex(rt, &o, &out), LDS_EINVAL); /* no start */
  o.start = host_loader_start;
  CHECK_RC(lds_loader_new_ex(NULL, &o, &out), LDS_EINVAL);
  CHECK_RC(lds_loader_new_ex(rt, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_loader_new_ex(rt, &o, NULL), LDS_EINVAL);
  o.size = (uint32_t)offsetof(lds_loader_options, max_concurrent) - 1; /* ends inside loader_data */
  CHECK_RC(lds_loader_new_ex(rt, &o, &out), LDS_EINVAL);
  o.size = 0;
  CHECK_RC(lds_loader_new_ex(rt, &o, &out), LDS_EINVAL);
  CHECK_EQ(out, 5);
  /* Without a cancel function it is lds_loader_new. */
  host h;
  memset(&h, 0, sizeof h);
  h.rt = rt;
  o = (lds_loader_options)LDS_LOADER_OPTIONS_INIT;
  o.start = host_loader_start;
  o.loader_data = &h;
  CHECK_RC(lds_loader_new_ex(rt, &o, &out), LDS_OK);
  CHECK(out != 5 && out != 0);
  CHECK_RC(lds_loader_free(rt, out), LDS_OK);
  CHECK_RC(lds_loader_free(rt, out), LDS_ENOENT);
  rt_free(rt);
  CHECK_RC(lds_loader_new_ex(rt, &o, &out), LDS_ECLOSED);
  host_destroy(&h);
}
