/* test_signals.c — host signals: lds_runtime_set_online and lds_runtime_set_foreground. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

/* A short sleep, only to show that something does NOT happen meanwhile. */
static void quiet_ms(long ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static size_t starts(host *h) {
  harness_lock();
  size_t n = h->starts;
  harness_unlock();
  return n;
}

static lds_runtime_statistics stats_of(lds_runtime *rt) {
  lds_runtime_statistics s = LDS_RUNTIME_STATISTICS_INIT;
  CHECK_RC(lds_runtime_stats(rt, &s), LDS_OK);
  return s;
}

static lds_id load_in(lds_runtime *rt, recorder *rec, lds_id loader, const char *request,
                      const lds_load_options *o) {
  lds_id cell = cell_new(rt, rec);
  CHECK_RC(lds_loadable_load(rt, cell, loader, request, strlen(request), o), LDS_OK);
  return cell;
}

TEST(test_signals_calls_return_codes_and_statistics) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  CHECK_RC(lds_runtime_set_online(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_runtime_set_foreground(NULL, 1), LDS_EINVAL);
  lds_runtime_statistics s = stats_of(rt);
  CHECK_EQ(s.online, 1);
  CHECK_EQ(s.foreground, 1);
  CHECK_EQ(s.loads_paused, 0);
  CHECK_RC(lds_runtime_set_online(rt, 0), LDS_OK);
  CHECK_RC(lds_runtime_set_online(rt, 0), LDS_OK);
  CHECK_RC(lds_runtime_set_foreground(rt, 0), LDS_OK);
  s = stats_of(rt);
  CHECK_EQ(s.online, 0);
  CHECK_EQ(s.foreground, 0);
  /* Any non-zero is 1. */
  CHECK_RC(lds_runtime_set_online(rt, 7), LDS_OK);
  CHECK_RC(lds_runtime_set_foreground(rt, -1), LDS_OK);
  s = stats_of(rt);
  CHECK_EQ(s.online, 1);
  CHECK_EQ(s.foreground, 1);
  /* A caller of the second version of the struct gets no signal fields written. */
  lds_runtime_statistics old = LDS_RUNTIME_STATISTICS_INIT;
  old.size = (uint32_t)offsetof(lds_runtime_statistics, online);
  old.online = 42;
  CHECK_RC(lds_runtime_stats(rt, &old), LDS_OK);
  CHECK_EQ(old.online, 42);
  /* Both offline flags at once are refused. */
  lds_load_options both = LDS_LOAD_OPTIONS_INIT;
  both.flags = LDS_LOAD_OFFLINE_FAIL | LDS_LOAD_OFFLINE_RUN;
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  CHECK_RC(lds_loadable_load(rt, cell, loader, "x", 1, &both), LDS_EINVAL);
  CHECK_STR(lds_strerror(LDS_EOFFLINE), "the runtime is offline");
  rt_free(rt);
  rec_destroy(&rec);
  host_destroy(&h);
}

TEST(test_signals_load_offline_waits_paused_and_runs_on_reconnect) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, LDS_FLAG_PAUSED);
  quiet_ms(30);
  CHECK_EQ(starts(&f.h), 0);
  CHECK_EQ(rec_count(&f.rec), 1);
  lds_runtime_statistics s = stats_of(f.rt);
  CHECK_EQ(s.loads_paused, 1);
  CHECK_EQ(s.loads_paused_total, 1);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 1), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, 0);
  CHECK_EQ(stats_of(f.rt).loads_paused, 0);
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_signals_silent_refresh_offline_shows_refreshing_paused) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, LDS_FLAG_REFRESHING | LDS_FLAG_PAUSED);
  CHECK_EQ(starts(&f.h), 1);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 1), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, LDS_FLAG_REFRESHING);
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, 0);
  CHECK_EQ(starts(&f.h), 2);
  fixture_finish(&f);
}

TEST(test_signals_offline_fail_fails_at_once_and_offline_run_runs) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_OFFLINE_FAIL;
  REQUIRE_RC(fx_load(&f, "fail", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_ERROR, 0);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_LOADSTATE);
  CHECK_EQ(e->error_code, LDS_EOFFLINE);
  CHECK_EQ(starts(&f.h), 0);
  CHECK_EQ(stats_of(f.rt).loads_paused_total, 0);
  o.flags = LDS_LOAD_OFFLINE_RUN;
  REQUIRE_RC(fx_load(&f, "run", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, 0);
  CHECK_EQ(starts(&f.h), 1);
  fixture_finish(&f);
}

TEST(test_signals_offline_pauses_a_retry_until_online) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 1;
  o.retry_base_ms = 1;
  o.retry_max_ms = 1;
  REQUIRE_RC(fx_load(&f, "r", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  /* The running job goes on: its failure is taken, its retry waits. */
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 1, "down"), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&f.rec)->flags & LDS_FLAG_PAUSED));
  const lds_event *e = rec_last(&f.rec);
  CHECK_EQ(e->status, LDS_LOADING);
  CHECK_EQ(e->attempt, 2);
  quiet_ms(30);
  CHECK_EQ(starts(&f.h), 1);
  CHECK_EQ(stats_of(f.rt).loads_paused, 1);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 1), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE(WAIT_FOR(!(rec_last(&f.rec)->flags & LDS_FLAG_PAUSED)));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 1), "v"), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&f.rec)->status == LDS_LOADED));
  CHECK_EQ(rec_last(&f.rec)->attempt, 2);
  fixture_finish(&f);
}

TEST(test_signals_offline_fail_fails_a_retry_falling_due) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_OFFLINE_FAIL;
  o.retries = 3;
  o.retry_base_ms = 1;
  o.retry_max_ms = 1;
  REQUIRE_RC(fx_load(&f, "r", &o), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 1, "down"), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&f.rec)->status == LDS_ERROR));
  CHECK_EQ(rec_last(&f.rec)->error_code, LDS_EOFFLINE);
  CHECK_EQ(starts(&f.h), 1);
  fixture_finish(&f);
}

TEST(test_signals_cancel_of_a_paused_load_restores_the_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "old"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADING, LDS_FLAG_PAUSED);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  const lds_event *e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(e->value, e->value_len, "old");
  CHECK_EQ(stats_of(f.rt).loads_paused, 0);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 1), LDS_OK);
  quiet_ms(30);
  CHECK_EQ(starts(&f.h), 0);
  CHECK_EQ(rec_count(&f.rec), 3);
  fixture_finish(&f);
}

TEST(test_signals_shared_paused_loads_start_one_job) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  recorder a, b;
  rec_init(&a, rt);
  rec_init(&b, rt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SHARE;
  REQUIRE_RC(lds_runtime_set_online(rt, 0), LDS_OK);
  load_in(rt, &a, loader, "k", &o);
  load_in(rt, &b, loader, "k", &o);
  REQUIRE(REC_WAIT(&a, 1));
  REQUIRE(REC_WAIT(&b, 1));
  CHECK_EQ(stats_of(rt).loads_paused, 2);
  REQUIRE_RC(lds_runtime_set_online(rt, 1), LDS_OK);
  REQUIRE(HOST_WAIT(&h, 1));
  REQUIRE_RC(lds_job_succeed(rt, host_job_at(&h, 0), "v", 1), LDS_OK);
  REQUIRE(WAIT_FOR(rec_last(&a)->status == LDS_LOADED && rec_last(&b)->status == LDS_LOADED));
  CHECK_EQ(starts(&h), 1);
  rt_free(rt);
  rec_destroy(&a);
  rec_destroy(&b);
  host_destroy(&h);
}

/* Answers at once; a poll that starts while the test frees the runtime may be refused (closed or
 * cancelled), which is no failure here. */
static void echo_while_polling(host *h, lds_id job, const void *request, size_t len) {
  (void)lds_job_succeed(h->rt, job, request, len);
}

/* Polls with refresh_interval_ms, held by one signal, resumed by setting it back. */
static void check_poll_held(int (*set)(lds_runtime *, int), uint32_t flags, bool held) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, echo_while_polling);
  recorder rec;
  rec_init(&rec, rt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.refresh_interval_ms = 5;
  o.flags = flags;
  lds_id cell = load_in(rt, &rec, loader, "p", &o);
  REQUIRE(HOST_WAIT(&h, 2));
  REQUIRE_RC(set(rt, 0), LDS_OK);
  size_t before = starts(&h);
  if (held) {
    /* At most the poll that was already running when the signal came. */
    quiet_ms(60);
    size_t during = starts(&h);
    CHECK(during <= before + 1);
    quiet_ms(30);
    CHECK_EQ(starts(&h), during);
    REQUIRE_RC(set(rt, 1), LDS_OK);
    REQUIRE(WAIT_FOR(h.starts >= during + 2));
  } else {
    REQUIRE(WAIT_FOR(h.starts >= before + 3));
  }
  CHECK_RC(lds_loadable_free(rt, cell), LDS_OK);
  rt_free(rt);
  rec_destroy(&rec);
  host_destroy(&h);
}

TEST(test_signals_poll_waits_while_offline_and_fires_on_return) {
  check_poll_held(lds_runtime_set_online, 0, true);
}

TEST(test_signals_poll_waits_in_background_and_fires_on_return) {
  check_poll_held(lds_runtime_set_foreground, 0, true);
}

TEST(test_signals_poll_in_background_and_offline_run_go_on) {
  check_poll_held(lds_runtime_set_foreground, LDS_LOAD_POLL_IN_BACKGROUND, false);
  check_poll_held(lds_runtime_set_online, LDS_LOAD_OFFLINE_RUN, false);
}

/* How many jobs the host started for request. */
static size_t starts_of(host *h, const char *request) {
  size_t n = 0;
  harness_lock();
  for (size_t i = 0; i < h->starts; i++) {
    const host_job *j = &h->jobs[i];
    if (j->request_len == strlen(request) && memcmp(j->request, request, j->request_len) == 0) n++;
  }
  harness_unlock();
  return n;
}

TEST(test_signals_foreground_refreshes_stale_flagged_cells_once_per_throttle) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, host_succeed_echo);
  recorder stale, fresh, plain;
  rec_init(&stale, rt);
  rec_init(&fresh, rt);
  rec_init(&plain, rt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_REFRESH_ON_FOREGROUND;
  load_in(rt, &stale, loader, "stale", &o);
  o.fresh_ms = 600000;
  load_in(rt, &fresh, loader, "fresh", &o);
  load_in(rt, &plain, loader, "plain", NULL);
  REQUIRE(REC_WAIT(&stale, 2));
  REQUIRE(REC_WAIT(&fresh, 2));
  REQUIRE(REC_WAIT(&plain, 2));
  REQUIRE_RC(lds_runtime_set_foreground(rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(rt, 1), LDS_OK);
  REQUIRE(REC_WAIT(&stale, 4));
  CHECK_STATE(rec_at(&stale, 2), 3, LDS_LOADED, LDS_FLAG_REFRESHING);
  CHECK_STATE(rec_at(&stale, 3), 4, LDS_LOADED, 0);
  /* Within the throttle (5000 ms by default): no second refresh. */
  REQUIRE_RC(lds_runtime_set_foreground(rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(rt, 1), LDS_OK);
  quiet_ms(40);
  CHECK_EQ(starts_of(&h, "stale"), 2);
  CHECK_EQ(starts_of(&h, "fresh"), 1);
  CHECK_EQ(starts_of(&h, "plain"), 1);
  CHECK_EQ(rec_count(&stale), 4);
  rt_free(rt);
  rec_destroy(&stale);
  rec_destroy(&fresh);
  rec_destroy(&plain);
  host_destroy(&h);
}

TEST(test_signals_foreground_throttle_and_offline_refresh_waits) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_REFRESH_ON_FOREGROUND;
  o.foreground_throttle_ms = 1;
  REQUIRE_RC(fx_load(&f, "r", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(lds_runtime_set_foreground(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(f.rt, 1), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  quiet_ms(5);
  /* Offline: the refresh waits, paused, and runs on reconnect. */
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(f.rt, 1), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, LDS_FLAG_REFRESHING | LDS_FLAG_PAUSED);
  CHECK_EQ(starts(&f.h), 2);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 1), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  REQUIRE(REC_WAIT(&f.rec, 7));
  CHECK_STATE(rec_at(&f.rec, 6), 7, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_signals_metrics_text_shows_the_signals) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(lds_runtime_set_online(f.rt, 0), LDS_OK);
  REQUIRE_RC(lds_runtime_set_foreground(f.rt, 0), LDS_OK);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  size_t len = 0;
  CHECK_RC(lds_runtime_metrics_text(f.rt, NULL, 0, &len), LDS_ETOOBIG);
  char *buf = malloc(len + 1);
  REQUIRE(buf != NULL);
  REQUIRE_RC(lds_runtime_metrics_text(f.rt, buf, len + 1, &len), LDS_OK);
  CHECK(strstr(buf, "\nloadstate_online 0\n") != NULL);
  CHECK(strstr(buf, "\nloadstate_foreground 0\n") != NULL);
  CHECK(strstr(buf, "\nloadstate_loads_paused 1\n") != NULL);
  CHECK(strstr(buf, "\nloadstate_loads_paused_total 1\n") != NULL);
  free(buf);
  fixture_finish(&f);
}

/* Loads paused offline start when the runtime is online again in the order
 * they began to wait; one cancelled meanwhile has left the list and never
 * starts, and the paused count follows. */
TEST(test_signals_paused_loads_resume_in_order_without_the_cancelled) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  REQUIRE_RC(lds_runtime_set_online(rt, 0), LDS_OK);
  const char *requests[] = {"a", "b", "c", "d"};
  recorder recs[4];
  lds_id cells[4];
  for (int i = 0; i < 4; i++) {
    rec_init(&recs[i], rt);
    cells[i] = load_in(rt, &recs[i], loader, requests[i], NULL);
    REQUIRE(REC_WAIT(&recs[i], 1));
  }
  CHECK_EQ(stats_of(rt).loads_paused, 4);
  REQUIRE_RC(lds_loadable_cancel(rt, cells[1]), LDS_OK);
  REQUIRE(REC_WAIT(&recs[1], 2));
  CHECK_EQ(stats_of(rt).loads_paused, 3);
  REQUIRE_RC(lds_runtime_set_online(rt, 1), LDS_OK);
  REQUIRE(HOST_WAIT(&h, 3));
  quiet_ms(30);
  harness_lock();
  size_t n = h.starts;
  const char *seen[3] = {NULL, NULL, NULL};
  for (size_t i = 0; i < n && i < 3; i++) seen[i] = h.jobs[i].request_len == 1 ? h.jobs[i].request : NULL;
  harness_unlock();
  CHECK_EQ(n, 3);
  CHECK(seen[0] != NULL && seen[0][0] == 'a');
  CHECK(seen[1] != NULL && seen[1][0] == 'c');
  CHECK(seen[2] != NULL && seen[2][0] == 'd');
  CHECK_EQ(stats_of(rt).loads_paused, 0);
  rt_free(rt);
  for (int i = 0; i < 4; i++) rec_destroy(&recs[i]);
  host_destroy(&h);
}
