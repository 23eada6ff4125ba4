/* test_metrics.c — lds_runtime_stats: every outcome of a load counted
 * exactly in a scripted scenario, per runtime, per loader and per cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void stats(lds_runtime *rt, lds_runtime_statistics *st, lds_loader_metrics *loaders, uint32_t nl,
                  lds_cache_metrics *caches, uint32_t nc) {
  lds_runtime_statistics init = LDS_RUNTIME_STATISTICS_INIT;
  *st = init;
  st->loaders = loaders;
  st->loaders_cap = nl;
  st->caches = caches;
  st->caches_cap = nc;
  CHECK_RC(lds_runtime_stats(rt, st), LDS_OK);
}

static uint64_t bucket_total(const lds_load_metrics *m) {
  uint64_t n = 0;
  for (int i = 0; i < LDS_LATENCY_BUCKETS; i++) n += m->latency_buckets[i];
  return n;
}

TEST(test_metrics_count_every_outcome_of_a_load) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec_b;
  rec_init(&rec_b, f.rt);
  lds_id cell_b = cell_new(f.rt, &rec_b);
  size_t jobs = 0;

  /* Succeeded. */
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, jobs - 1), "A"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));

  /* Failed after one retry. */
  lds_load_options retry = LDS_LOAD_OPTIONS_INIT;
  retry.retries = 1;
  retry.retry_base_ms = 1;
  retry.retry_max_ms = 1;
  REQUIRE_RC(fx_load(&f, "b", &retry), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, jobs - 1), 7, "first"), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, jobs - 1), 7, "second"), LDS_OK);
  REQUIRE(WAIT_FOR(f.rec.count >= 3 && f.rec.events[f.rec.count - 1]->ev.status == LDS_ERROR));

  /* Cancelled. */
  size_t before = rec_count(&f.rec);
  REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, before + 2));

  /* Timed out. */
  lds_load_options timeout = LDS_LOAD_OPTIONS_INIT;
  timeout.timeout_ms = 1;
  before = rec_count(&f.rec);
  REQUIRE_RC(fx_load(&f, "d", &timeout), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE(REC_WAIT(&f.rec, before + 2));
  CHECK_EQ(rec_last(&f.rec)->error_code, LDS_ETIMEDOUT);

  /* Two loads sharing one job: both succeed, the second is shared. */
  lds_load_options share = LDS_LOAD_OPTIONS_INIT;
  share.flags = LDS_LOAD_SHARE;
  before = rec_count(&f.rec);
  REQUIRE_RC(fx_load(&f, "e", &share), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  REQUIRE_RC(lds_loadable_load(f.rt, cell_b, f.loader, "e", 1, &share), LDS_OK);
  REQUIRE(REC_WAIT(&rec_b, 1));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, jobs - 1), "E"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, before + 2));
  REQUIRE(REC_WAIT(&rec_b, 2));
  CHECK_EQ(f.h.starts, jobs);

  lds_runtime_statistics st;
  lds_loader_metrics loaders[4];
  stats(f.rt, &st, loaders, 4, NULL, 0);
  CHECK_EQ(st.enabled, 1);
  CHECK_EQ(st.cells_alive, 2);
  CHECK_EQ(st.events_delivered, rec_count(&f.rec) + rec_count(&rec_b));
  const lds_load_metrics *m = &st.loads;
  CHECK_EQ(m->started, 6);
  CHECK_EQ(m->succeeded, 3);
  CHECK_EQ(m->failed, 1);
  CHECK_EQ(m->cancelled, 1);
  CHECK_EQ(m->timed_out, 1);
  CHECK_EQ(m->retried, 1);
  CHECK_EQ(m->shared, 1);
  CHECK_EQ(m->jobs_started, 6);
  CHECK_EQ(m->jobs_in_flight, 0);
  CHECK_EQ(m->latency_count, 6);
  CHECK_EQ(bucket_total(m), 6);
  /* The timed-out load took at least its millisecond. */
  CHECK_OP(m->latency_max_us, >=, 1000);
  CHECK_OP(m->latency_sum_us, >=, m->latency_max_us);
  CHECK_OP(m->latency_p50_us, <=, m->latency_p90_us);
  CHECK_OP(m->latency_p90_us, <=, m->latency_p99_us);
  CHECK_OP(m->latency_p99_us, <=, m->latency_max_us);

  /* The only loader has the runtime's counts. */
  CHECK_EQ(st.loader_count, 1);
  CHECK_EQ(loaders[0].loader, f.loader);
  CHECK(memcmp(&loaders[0].loads, m, sizeof *m) == 0);
  CHECK_EQ(st.cache_count, 0);

  /* A load in flight. */
  REQUIRE_RC(fx_load(&f, "f", NULL), LDS_OK);
  jobs++;
  REQUIRE(HOST_WAIT(&f.h, jobs));
  stats(f.rt, &st, NULL, 0, NULL, 0);
  CHECK_EQ(st.loads.started, 7);
  CHECK_EQ(st.loads.jobs_in_flight, 1);
  CHECK_EQ(st.loads.latency_count, 6);
  CHECK_EQ(st.loader_count, 1);
  REQUIRE_RC(lds_loadable_free(f.rt, cell_b), LDS_OK);
  stats(f.rt, &st, NULL, 0, NULL, 0);
  CHECK_EQ(st.cells_alive, 1);

  fixture_finish(&f);
  rec_destroy(&rec_b);
}

TEST(test_metrics_of_a_freed_loader_stay_in_the_runtime_totals) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE_RC(lds_loader_free(f.rt, f.loader), LDS_OK);
  REQUIRE(WAIT_FOR(f.h.free_data_calls == 1));
  lds_runtime_statistics st;
  stats(f.rt, &st, NULL, 0, NULL, 0);
  CHECK_EQ(st.loader_count, 0);
  CHECK_EQ(st.loads.started, 1);
  CHECK_EQ(st.loads.succeeded, 1);
  fixture_finish(&f);
}

TEST(test_metrics_list_caches_with_their_counters) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id a, b;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &a), LDS_OK);
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &b), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, b, "k", 1, "v", 1), LDS_OK);
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, b, "k", 1, &v), 1);
  lds_cache_value_clear(&v);
  CHECK_RC(lds_cache_get(rt, b, "x", 1, &v), 0);
  CHECK_RC(lds_cache_get(rt, b, "y", 1, &v), 0);
  lds_runtime_statistics st;
  lds_cache_metrics caches[1];
  /* Room for one: the first by id is written, both are counted. */
  stats(rt, &st, NULL, 0, caches, 1);
  CHECK_EQ(st.cache_count, 2);
  CHECK_EQ(caches[0].cache, a < b ? a : b);
  lds_cache_metrics both[2];
  stats(rt, &st, NULL, 0, both, 2);
  const lds_cache_metrics *mb = both[0].cache == b ? &both[0] : &both[1];
  CHECK_EQ(mb->cache, b);
  CHECK_EQ(mb->persistent, 0);
  CHECK_EQ(mb->stats.hits, 1);
  CHECK_EQ(mb->stats.misses, 2);
  CHECK_EQ(mb->stats.entries, 1);
  REQUIRE_RC(lds_cache_free(rt, a), LDS_OK);
  stats(rt, &st, NULL, 0, both, 2);
  CHECK_EQ(st.cache_count, 1);
  CHECK_EQ(both[0].cache, b);
  rt_free(rt);
}

TEST(test_metrics_off_count_nothing) {
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.flags = LDS_RUNTIME_NO_METRICS;
  lds_runtime *rt = NULL;
  REQUIRE_RC(lds_runtime_new(&opts, &rt), LDS_OK);
  recorder rec;
  rec_init(&rec, rt);
  host h;
  lds_id loader = host_new(rt, &h, host_succeed_echo);
  lds_id cell = cell_new(rt, &rec);
  REQUIRE_RC(lds_loadable_load(rt, cell, loader, "a", 1, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&rec, 2));
  lds_runtime_statistics st;
  lds_loader_metrics loaders[1];
  stats(rt, &st, loaders, 1, NULL, 0);
  CHECK_EQ(st.enabled, 0);
  CHECK_EQ(st.cells_alive, 1);
  CHECK_EQ(st.events_delivered, 0);
  CHECK_EQ(st.loads.started, 0);
  CHECK_EQ(st.loads.succeeded, 0);
  CHECK_EQ(st.loads.latency_count, 0);
  CHECK_EQ(st.loader_count, 1);
  CHECK_EQ(loaders[0].loads.started, 0);
  rt_free(rt);
  rec_destroy(&rec);
  host_destroy(&h);
  /* Unknown flags are refused. */
  opts.flags = 1u << 7;
  CHECK_RC(lds_runtime_new(&opts, &rt), LDS_EINVAL);
}

TEST(test_metrics_bad_arguments) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_runtime_statistics st = LDS_RUNTIME_STATISTICS_INIT;
  CHECK_RC(lds_runtime_stats(NULL, &st), LDS_EINVAL);
  CHECK_RC(lds_runtime_stats(rt, NULL), LDS_EINVAL);
  st.size = 8;
  CHECK_RC(lds_runtime_stats(rt, &st), LDS_EINVAL);
  st.size = sizeof st;
  st.loaders_cap = 3;
  CHECK_RC(lds_runtime_stats(rt, &st), LDS_EINVAL);
  st.loaders_cap = 0;
  st.caches_cap = 1;
  CHECK_RC(lds_runtime_stats(rt, &st), LDS_EINVAL);
  st.caches_cap = 0;
  CHECK_RC(lds_runtime_stats(rt, &st), LDS_OK);
  rt_free(rt);
  CHECK_RC(lds_runtime_stats(rt, &st), LDS_ECLOSED);
}

TEST(test_metrics_text_is_bounded_by_the_callers_buffer) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  REQUIRE_RC(fx_load(&f, "a", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  size_t len = 99;
  CHECK_RC(lds_runtime_metrics_text(f.rt, NULL, 0, &len), LDS_ETOOBIG);
  REQUIRE(len > 100);
  char small[16];
  memset(small, 'x', sizeof small);
  CHECK_RC(lds_runtime_metrics_text(f.rt, small, sizeof small, &len), LDS_ETOOBIG);
  CHECK_EQ(small[0], 0);
  CHECK_EQ(small[1], 'x');
  char *text = malloc(len + 1);
  REQUIRE(text != NULL);
  size_t again = 0;
  /* Exactly the text and its NUL. */
  CHECK_RC(lds_runtime_metrics_text(f.rt, text, len + 1, &again), LDS_OK);
  CHECK_EQ(again, len);
  CHECK_EQ(strlen(text), len);
  CHECK_EQ(text[len - 1], '\n');
  char want[128];
  snprintf(want, sizeof want, "\nloadstate_loads_started_total{loader=\"%llu\"} 1\n", (unsigned long long)f.loader);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "\nloadstate_loads_ended_total{loader=\"%llu\",outcome=\"succeeded\"} 1\n",
           (unsigned long long)f.loader);
  CHECK(strstr(text, want) != NULL);
  CHECK(strstr(text, "\nloadstate_loads_started_total{loader=\"freed\"} 0\n") != NULL);
  CHECK(strstr(text, "\n# TYPE loadstate_load_duration_seconds histogram\n") != NULL);
  /* One byte short: refused. */
  CHECK_RC(lds_runtime_metrics_text(f.rt, text, len, &again), LDS_ETOOBIG);
  CHECK_EQ(text[0], 0);
  CHECK_RC(lds_runtime_metrics_text(f.rt, NULL, 4, &again), LDS_EINVAL);
  CHECK_RC(lds_runtime_metrics_text(f.rt, text, len + 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_metrics_text(NULL, text, len + 1, &again), LDS_EINVAL);
  free(text);
  fixture_finish(&f);
}

/* A loader with max_concurrent = 1: its second job waits in the queue. */
static lds_id queued_jobs[4];
static int queued_starts;

static void queued_start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt, (void)request, (void)len, (void)data;
  harness_lock();
  if (queued_starts < 4) queued_jobs[queued_starts] = job;
  queued_starts++;
  harness_notify();
  harness_unlock();
}

TEST(test_metrics_count_queued_jobs_and_their_wait) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = queued_start;
  o.max_concurrent = 1;
  lds_id loader;
  REQUIRE_RC(lds_loader_new_ex(rt, &o, &loader), LDS_OK);
  recorder ra, rb, rc;
  rec_init(&ra, rt);
  rec_init(&rb, rt);
  rec_init(&rc, rt);
  lds_id a = cell_new(rt, &ra), b = cell_new(rt, &rb), c = cell_new(rt, &rc);
  REQUIRE_RC(lds_loadable_load(rt, a, loader, "a", 1, NULL), LDS_OK);
  REQUIRE(WAIT_FOR(queued_starts == 1));
  REQUIRE_RC(lds_loadable_load(rt, b, loader, "b", 1, NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_load(rt, c, loader, "c", 1, NULL), LDS_OK);
  lds_runtime_statistics st;
  lds_loader_metrics loaders[1];
  /* b and c wait behind a (the commands run in order: both are queued
   * before a's success is applied); each is measured when admitted. */
  REQUIRE_RC(lds_job_succeed(rt, queued_jobs[0], "A", 1), LDS_OK);
  REQUIRE(WAIT_FOR(queued_starts == 2));
  stats(rt, &st, loaders, 1, NULL, 0);
  CHECK_EQ(st.loads.jobs_queued, 2);
  CHECK_EQ(st.loads.queue_wait_count, 1);
  REQUIRE_RC(lds_job_succeed(rt, queued_jobs[1], "B", 1), LDS_OK);
  REQUIRE(WAIT_FOR(queued_starts == 3));
  stats(rt, &st, loaders, 1, NULL, 0);
  CHECK_EQ(st.loads.jobs_queued, 2);
  CHECK_EQ(st.loads.queue_wait_count, 2);
  uint64_t n = 0;
  for (int i = 0; i < LDS_LATENCY_BUCKETS; i++) n += st.loads.queue_wait_buckets[i];
  CHECK_EQ(n, 2);
  CHECK_OP(st.loads.queue_wait_p50_us, <=, st.loads.queue_wait_max_us);
  CHECK_OP(st.loads.queue_wait_sum_us, >=, st.loads.queue_wait_max_us);
  CHECK_EQ(loaders[0].loads.jobs_queued, 2);
  CHECK_EQ(loaders[0].loads.queue_wait_count, 2);
  size_t len = 0;
  CHECK_RC(lds_runtime_metrics_text(rt, NULL, 0, &len), LDS_ETOOBIG);
  char *text = malloc(len + 1);
  REQUIRE(text != NULL);
  REQUIRE_RC(lds_runtime_metrics_text(rt, text, len + 1, &len), LDS_OK);
  char want[128];
  snprintf(want, sizeof want, "\nloadstate_jobs_queued_total{loader=\"%llu\"} 2\n", (unsigned long long)loader);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "\nloadstate_job_queue_wait_seconds_count{loader=\"%llu\"} 2\n",
           (unsigned long long)loader);
  CHECK(strstr(text, want) != NULL);
  free(text);
  REQUIRE_RC(lds_job_succeed(rt, queued_jobs[2], "C", 1), LDS_OK);
  REQUIRE(REC_WAIT(&rc, 3));
  rt_free(rt);
  rec_destroy(&ra);
  rec_destroy(&rb);
  rec_destroy(&rc);
}

/* Loads a cache answers alone (a cache-first hit, cache-only reads, a
 * miss too) start and end at once as from_cache: in started, untimed,
 * reported per runtime and per loader; a caller of the first version of
 * the struct is written no further than its size. */
TEST(test_metrics_count_loads_a_cache_answers_alone) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(f.rt, cache, "k", 1, "cached", 6), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_key = "k";
  o.cache_key_len = 1;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  /* A cache-first hit. */
  REQUIRE_RC(fx_load(&f, "a", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADED, LDS_FLAG_FROM_CACHE);
  /* A cache-only hit and a cache-only miss. */
  o.cache_policy = LDS_POLICY_CACHE_ONLY;
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  o.cache_key = "absent";
  o.cache_key_len = 6;
  REQUIRE_RC(fx_load(&f, "c", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_EQ(rec_last(&f.rec)->status, LDS_ERROR);
  CHECK_EQ(f.h.starts, 0);
  /* A cache-first miss runs a job: a load like any other. */
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  REQUIRE_RC(fx_load(&f, "d", &o), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  CHECK_EQ(f.h.starts, 1);

  lds_runtime_statistics st = LDS_RUNTIME_STATISTICS_INIT;
  lds_loader_metrics loaders[2];
  uint64_t from_cache[2] = { 99, 99 };
  st.loaders = loaders;
  st.loaders_cap = 2;
  st.loaders_from_cache = from_cache;
  REQUIRE_RC(lds_runtime_stats(f.rt, &st), LDS_OK);
  CHECK_EQ(st.loads.started, 4);
  CHECK_EQ(st.loads.succeeded, 1);
  CHECK_EQ(st.loads.failed, 0);
  CHECK_EQ(st.loads_from_cache, 3);
  CHECK_EQ(st.loads.latency_count, 1);
  CHECK_EQ(st.loads.jobs_started, 1);
  CHECK_EQ(st.loader_count, 1);
  CHECK_EQ(from_cache[0], 3);
  CHECK_EQ(from_cache[1], 99); /* only the entries written in loaders */
  CHECK(st.loaders_from_cache == from_cache);

  /* In the text, an outcome of its own. */
  char text[32768];
  size_t len = 0;
  REQUIRE_RC(lds_runtime_metrics_text(f.rt, text, sizeof text, &len), LDS_OK);
  char want[128];
  snprintf(want, sizeof want, "loadstate_loads_ended_total{loader=\"%llu\",outcome=\"from_cache\"} 3\n",
           (unsigned long long)f.loader);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "loadstate_loads_started_total{loader=\"%llu\"} 4\n", (unsigned long long)f.loader);
  CHECK(strstr(text, want) != NULL);

  /* A caller of the first version: its size ends at cache_count. */
  unsigned char raw[sizeof(lds_runtime_statistics)];
  memset(raw, 0xAB, sizeof raw);
  lds_runtime_statistics *old = (lds_runtime_statistics *)raw;
  old->size = (uint32_t)offsetof(lds_runtime_statistics, loads_from_cache);
  old->loaders = NULL;
  old->loaders_cap = 0;
  old->caches = NULL;
  old->caches_cap = 0;
  REQUIRE_RC(lds_runtime_stats(f.rt, old), LDS_OK);
  CHECK_EQ(old->loads.started, 4);
  for (size_t i = offsetof(lds_runtime_statistics, loads_from_cache); i < sizeof raw; i++) CHECK_EQ(raw[i], 0xAB);
  /* Shorter still: refused. */
  old->size = (uint32_t)offsetof(lds_runtime_statistics, cache_count);
  CHECK_RC(lds_runtime_stats(f.rt, old), LDS_EINVAL);

  fixture_finish(&f);
}
