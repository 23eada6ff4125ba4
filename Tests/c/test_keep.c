/* test_keep.c — keeping the previous value while another request loads
 * (LDS_LOAD_KEEP_PREVIOUS), load placeholders, and the grace of memory
 * cache entries no cell observes (unobserved_ms). */
#include <string.h>
#include <time.h>

#include "harness.h"

#define KEEP_FLAGS (LDS_FLAG_PREVIOUS | LDS_FLAG_REFRESHING)
#define PLACEHOLDER_FLAGS (LDS_FLAG_PLACEHOLDER | LDS_FLAG_REFRESHING)

static const lds_event *at(fixture *f, size_t i) { return rec_at(&f->rec, i); }

/* Loads "a" and succeeds with "A": events 1 (LOADING) and 2 (LOADED). */
static bool load_a(fixture *f) {
  if (!CHECK_RC(fx_load(f, "a", NULL), LDS_OK) || !HOST_WAIT(&f->h, 1)) return false;
  if (!CHECK_RC(fx_succeed(f, host_job_at(&f->h, 0), "A"), LDS_OK) || !REC_WAIT(&f->rec, 2)) return false;
  CHECK_STATE(at(f, 1), 2, LDS_LOADED, 0);
  return true;
}

static lds_load_options keep_options(void) {
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_KEEP_PREVIOUS;
  return o;
}

/* The previous value stays, with its own request, flagged PREVIOUS |
 * REFRESHING, until the new request's value replaces it. */
TEST(test_keep_previous_across_a_request_change) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  if (!load_a(&f)) return;
  lds_load_options o = keep_options();
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 3) || !HOST_WAIT(&f.h, 2)) return;
  const lds_event *kept = at(&f, 2);
  CHECK_STATE(kept, 3, LDS_LOADED, KEEP_FLAGS);
  CHECK_BYTES(kept->value, kept->value_len, "A");
  CHECK_BYTES(kept->request, kept->request_len, "a");
  lds_snapshot snap;
  REQUIRE_RC(lds_loadable_get(f.rt, f.cell, &snap), LDS_OK);
  CHECK_EQ(snap.flags, KEEP_FLAGS);
  CHECK_BYTES(snap.request, snap.request_len, "a");
  lds_snapshot_clear(&snap);
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 1), "B"), LDS_OK);
  if (REC_WAIT(&f.rec, 4)) {
    const lds_event *done = at(&f, 3);
    CHECK_STATE(done, 4, LDS_LOADED, 0);
    CHECK_BYTES(done->value, done->value_len, "B");
    CHECK_BYTES(done->request, done->request_len, "b");
  }
  /* The same request again: nothing answers another request, LOADING as usual. */
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (REC_WAIT(&f.rec, 5)) CHECK_STATE(at(&f, 4), 5, LDS_LOADING, 0);
  fixture_finish(&f);
}

TEST(test_keep_previous_failure_shows_the_error) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  if (!load_a(&f)) return;
  lds_load_options o = keep_options();
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 3) || !HOST_WAIT(&f.h, 2)) return;
  CHECK_STATE(at(&f, 2), 3, LDS_LOADED, KEEP_FLAGS);
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 1), 7, "no"), LDS_OK);
  if (REC_WAIT(&f.rec, 4)) {
    const lds_event *failed = at(&f, 3);
    CHECK_STATE(failed, 4, LDS_ERROR, 0);
    CHECK(failed->value == NULL);
    CHECK_EQ(failed->error_code, 7);
    CHECK_BYTES(failed->request, failed->request_len, "b");
  }
  fixture_finish(&f);
}

TEST(test_keep_previous_cancel_restores_the_previous_state) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  if (!load_a(&f)) return;
  lds_load_options o = keep_options();
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 3)) return;
  /* A superseding load keeps the value shown before the chain of loads. */
  REQUIRE_RC(fx_load(&f, "c", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 4)) return;
  CHECK_STATE(at(&f, 3), 4, LDS_LOADED, KEEP_FLAGS);
  CHECK_BYTES(at(&f, 3)->request, at(&f, 3)->request_len, "a");
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  if (REC_WAIT(&f.rec, 5)) {
    const lds_event *restored = at(&f, 4);
    CHECK_STATE(restored, 5, LDS_LOADED, LDS_FLAG_CANCELLED);
    CHECK_BYTES(restored->value, restored->value_len, "A");
    CHECK_BYTES(restored->request, restored->request_len, "a");
  }
  fixture_finish(&f);
}

/* A cached value shown by the load's policy takes precedence. */
TEST(test_keep_previous_yields_to_a_cached_value) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  if (!load_a(&f)) return;
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(f.rt, cache, "b", 1, "cached b", 8), LDS_OK);
  lds_load_options o = keep_options();
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_THEN_LOAD;
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (REC_WAIT(&f.rec, 3)) {
    const lds_event *shown = at(&f, 2);
    CHECK_EQ(shown->flags & (LDS_FLAG_PREVIOUS | LDS_FLAG_FROM_CACHE), LDS_FLAG_FROM_CACHE);
    CHECK_BYTES(shown->value, shown->value_len, "cached b");
  }
  fixture_finish(&f);
}

/* The placeholder is shown with the load's request, then replaced; a
 * previous value wins over it. */
TEST(test_keep_placeholder_shown_then_replaced) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_KEEP_PREVIOUS;
  o.placeholder = "ph";
  o.placeholder_len = 2;
  REQUIRE_RC(fx_load(&f, "a", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 1) || !HOST_WAIT(&f.h, 1)) return;
  const lds_event *shown = at(&f, 0);
  CHECK_STATE(shown, 1, LDS_LOADED, PLACEHOLDER_FLAGS);
  CHECK_BYTES(shown->value, shown->value_len, "ph");
  CHECK_BYTES(shown->request, shown->request_len, "a");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "A"), LDS_OK);
  if (!REC_WAIT(&f.rec, 2)) return;
  CHECK_STATE(at(&f, 1), 2, LDS_LOADED, 0);
  CHECK_BYTES(at(&f, 1)->value, at(&f, 1)->value_len, "A");
  /* Another request: the previous value, not the placeholder. */
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (REC_WAIT(&f.rec, 3)) {
    CHECK_STATE(at(&f, 2), 3, LDS_LOADED, KEEP_FLAGS);
    CHECK_BYTES(at(&f, 2)->value, at(&f, 2)->value_len, "A");
  }
  /* An empty placeholder is a loaded empty value; a cancel restores the state before. */
  lds_load_options e = LDS_LOAD_OPTIONS_INIT;
  e.placeholder = "";
  REQUIRE_RC(fx_load(&f, "c", &e), LDS_OK);
  if (REC_WAIT(&f.rec, 4)) {
    CHECK_STATE(at(&f, 3), 4, LDS_LOADED, PLACEHOLDER_FLAGS);
    CHECK(at(&f, 3)->value != NULL);
    CHECK_EQ(at(&f, 3)->value_len, 0);
  }
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  if (REC_WAIT(&f.rec, 5)) {
    CHECK_STATE(at(&f, 4), 5, LDS_LOADED, LDS_FLAG_CANCELLED);
    CHECK_BYTES(at(&f, 4)->value, at(&f, 4)->value_len, "A");
  }
  /* A silent load shows its current state, not the placeholder. */
  o.flags = LDS_LOAD_SILENT;
  REQUIRE_RC(fx_load(&f, "d", &o), LDS_OK);
  if (REC_WAIT(&f.rec, 6)) CHECK_STATE(at(&f, 5), 6, LDS_LOADED, LDS_FLAG_REFRESHING);
  fixture_finish(&f);
}

TEST(test_keep_placeholder_bad_sizes) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.placeholder = "x";
  o.placeholder_len = (size_t)LDS_VALUE_MAX + 1;
  CHECK_RC(fx_load(&f, "a", &o), LDS_ETOOBIG);
  o.placeholder = NULL;
  o.placeholder_len = 1;
  CHECK_RC(fx_load(&f, "a", &o), LDS_EINVAL);
  /* A caller built before the field has no placeholder. */
  o.size = (uint32_t)offsetof(lds_load_options, placeholder);
  o.placeholder = "x";
  REQUIRE_RC(fx_load(&f, "a", &o), LDS_OK);
  if (REC_WAIT(&f.rec, 1)) CHECK_STATE(at(&f, 0), 1, LDS_LOADING, 0);
  CHECK_EQ(rec_count(&f.rec), 1);
  fixture_finish(&f);
}

/* The placeholder is never stored, and a second cell sharing the job does
 * not see it. */
TEST(test_keep_placeholder_not_cached_nor_shared) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SHARE;
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  o.placeholder = "ph";
  o.placeholder_len = 2;
  REQUIRE_RC(fx_load(&f, "k", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 1) || !HOST_WAIT(&f.h, 1)) return;
  CHECK_STATE(at(&f, 0), 1, LDS_LOADED, PLACEHOLDER_FLAGS);
  recorder other;
  rec_init(&other, f.rt);
  lds_id second = cell_new(f.rt, &other);
  lds_load_options plain = o;
  plain.placeholder = NULL;
  plain.placeholder_len = 0;
  REQUIRE_RC(lds_loadable_load(f.rt, second, f.loader, "k", 1, &plain), LDS_OK);
  if (REC_WAIT(&other, 1)) CHECK_STATE(rec_at(&other, 0), 1, LDS_LOADING, 0);
  lds_cache_value v;
  CHECK_RC(lds_cache_get(f.rt, cache, "k", 1, &v), 0);
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 0), 3, "down"), LDS_OK);
  if (REC_WAIT(&f.rec, 2)) CHECK_STATE(at(&f, 1), 2, LDS_ERROR, 0);
  if (REC_WAIT(&other, 2)) CHECK_STATE(rec_at(&other, 1), 2, LDS_ERROR, 0);
  CHECK_EQ(f.h.starts, 1);
  CHECK_RC(lds_cache_get(f.rt, cache, "k", 1, &v), 0);
  fixture_finish(&f);
  rec_close(&other);
  rec_destroy(&other);
}

/* ------------------------------------------------------------------ */
/* Unobserved grace                                                    */
/* ------------------------------------------------------------------ */

#define GRACE_MS 150

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int cache_has(lds_runtime *rt, lds_id cache, const char *key) {
  lds_cache_value v;
  int rc = lds_cache_get(rt, cache, key, strlen(key), &v);
  if (rc == 1) lds_cache_value_clear(&v);
  return rc;
}

/* Waits until the entry is gone (no event says so: the cache is asked
 * every few ms); returns the wall time it was first found missing, or 0. */
static uint64_t wait_gone(lds_runtime *rt, lds_id cache, const char *key) {
  struct timespec deadline = harness_deadline();
  for (;;) {
    int rc = cache_has(rt, cache, key);
    if (rc == 0) return wall_ms();
    if (rc != 1 || harness_past(&deadline)) {
      check_fail(__FILE__, __LINE__, "entry %s still there (rc %d)", key, rc);
      return 0;
    }
    sleep_ms(5);
  }
}

static lds_id grace_cache(lds_runtime *rt) {
  lds_memory_cache_options co = LDS_MEMORY_CACHE_OPTIONS_INIT;
  co.unobserved_ms = GRACE_MS;
  lds_id cache = 0;
  CHECK_RC(lds_memory_cache_new(rt, &co, &cache), LDS_OK);
  return cache;
}

TEST(test_keep_unwatched_entry_dropped_after_its_grace) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id cache = grace_cache(rt);
  uint64_t put_at = wall_ms();
  REQUIRE_RC(lds_cache_put(rt, cache, "k", 1, "v", 1), LDS_OK);
  uint64_t gone_at = wait_gone(rt, cache, "k");
  CHECK_OP(gone_at, >=, put_at + GRACE_MS);
  lds_cache_statistics st;
  REQUIRE_RC(lds_cache_stats(rt, cache, &st), LDS_OK);
  CHECK_EQ(st.expirations, 1);
  CHECK_EQ(st.entries, 0);
  /* Dropped by a sweep without a get of its own key. */
  REQUIRE_RC(lds_cache_put(rt, cache, "j", 1, "v", 1), LDS_OK);
  sleep_ms(GRACE_MS + 50);
  REQUIRE_RC(lds_cache_stats(rt, cache, &st), LDS_OK);
  CHECK_EQ(st.expirations, 2);
  CHECK_EQ(st.entries, 0);
  CHECK_EQ(st.bytes, 0);
  /* A cache without the option keeps its entries. */
  lds_id plain;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &plain), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, plain, "k", 1, "v", 1), LDS_OK);
  sleep_ms(GRACE_MS + 50);
  CHECK_EQ(cache_has(rt, plain, "k"), 1);
  rt_free(rt);
}

TEST(test_keep_watched_entry_stays_until_its_cell_is_freed) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_id cache = grace_cache(f.rt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 1;
  REQUIRE_RC(fx_load(&f, "w", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 2)) return;
  CHECK_STATE(at(&f, 1), 2, LDS_LOADED, 0);
  /* Watched: past its grace (and its fresh time), still there. */
  sleep_ms(2 * GRACE_MS);
  CHECK_EQ(cache_has(f.rt, cache, "w"), 1);
  /* A second cell watches it too; freeing the first keeps it. */
  recorder other;
  rec_init(&other, f.rt);
  lds_id second = cell_new(f.rt, &other);
  REQUIRE_RC(lds_loadable_load(f.rt, second, f.loader, "w", 1, &o), LDS_OK);
  if (!REC_WAIT(&other, 2)) return;
  REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK);
  sleep_ms(2 * GRACE_MS);
  CHECK_EQ(cache_has(f.rt, cache, "w"), 1);
  /* Loading another key stops watching it: the grace starts then. */
  uint64_t left_at = wall_ms();
  REQUIRE_RC(lds_loadable_load(f.rt, second, f.loader, "x", 1, &o), LDS_OK);
  uint64_t gone_at = wait_gone(f.rt, cache, "w");
  CHECK_OP(gone_at, >=, left_at + GRACE_MS);
  CHECK_EQ(cache_has(f.rt, cache, "x"), 1);
  /* Freed: the grace of "x" starts. */
  if (!REC_WAIT(&other, 4)) return;
  uint64_t freed_at = wall_ms();
  REQUIRE_RC(lds_loadable_free(f.rt, second), LDS_OK);
  gone_at = wait_gone(f.rt, cache, "x");
  CHECK_OP(gone_at, >=, freed_at + GRACE_MS);
  lds_cache_statistics st;
  REQUIRE_RC(lds_cache_stats(f.rt, cache, &st), LDS_OK);
  CHECK_EQ(st.expirations, 2);
  fixture_finish(&f);
  rec_close(&other);
  rec_destroy(&other);
}

TEST(test_keep_reset_stops_watching) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_id cache = grace_cache(f.rt);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  REQUIRE_RC(fx_load(&f, "r", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 2)) return;
  sleep_ms(2 * GRACE_MS);
  CHECK_EQ(cache_has(f.rt, cache, "r"), 1);
  uint64_t reset_at = wall_ms();
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  uint64_t gone_at = wait_gone(f.rt, cache, "r");
  CHECK_OP(gone_at, >=, reset_at + GRACE_MS);
  fixture_finish(&f);
}

TEST(test_keep_memory_cache_options_of_an_older_caller) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_memory_cache_options co = LDS_MEMORY_CACHE_OPTIONS_INIT;
  co.size = (uint32_t)offsetof(lds_memory_cache_options, unobserved_ms);
  co.unobserved_ms = 1;  /* past the caller's size: not read */
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(rt, &co, &cache), LDS_OK);
  REQUIRE_RC(lds_cache_put(rt, cache, "k", 1, "v", 1), LDS_OK);
  sleep_ms(20);
  CHECK_EQ(cache_has(rt, cache, "k"), 1);
  co.size = (uint32_t)offsetof(lds_memory_cache_options, ttl_ms);
  CHECK_RC(lds_memory_cache_new(rt, &co, &cache), LDS_EINVAL);
  rt_free(rt);
}

/* A job that finishes without a value brings back the state from before
 * the load, flagged LDS_FLAG_NO_VALUE (not CANCELLED), with its own
 * request: plain, keeping the previous value, or with a placeholder; for
 * another request and for the same one. The snapshot, the latest event's,
 * carries it too, until the next event. */
TEST(test_keep_finish_without_a_value_is_flagged_no_value) {
  for (int how = 0; how < 3; how++) {
    for (int same = 0; same < 2; same++) {
      fixture f;
      fixture_init(&f, LDS_DELIVER_LOOP, NULL);
      if (!load_a(&f)) return;
      lds_load_options o = LDS_LOAD_OPTIONS_INIT;
      if (how == 1) o.flags = LDS_LOAD_KEEP_PREVIOUS;
      if (how == 2) {
        o.placeholder = "ph";
        o.placeholder_len = 2;
      }
      REQUIRE_RC(fx_load(&f, same ? "a" : "b", &o), LDS_OK);
      if (!REC_WAIT(&f.rec, 3) || !HOST_WAIT(&f.h, 2)) return;
      REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 1)), LDS_OK);
      if (REC_WAIT(&f.rec, 4)) {
        const lds_event *back = at(&f, 3);
        CHECK_STATE(back, 4, LDS_LOADED, LDS_FLAG_NO_VALUE);
        CHECK_BYTES(back->value, back->value_len, "A");
        CHECK_BYTES(back->request, back->request_len, "a");
      }
      lds_snapshot snap;
      REQUIRE_RC(lds_loadable_get(f.rt, f.cell, &snap), LDS_OK);
      CHECK_EQ(snap.flags, LDS_FLAG_NO_VALUE);
      CHECK_BYTES(snap.value, snap.value_len, "A");
      lds_snapshot_clear(&snap);
      /* The next load's events do not carry it. */
      REQUIRE_RC(fx_load(&f, "c", NULL), LDS_OK);
      if (REC_WAIT(&f.rec, 5)) CHECK_STATE(at(&f, 4), 5, LDS_LOADING, 0);
      fixture_finish(&f);
    }
  }
}

/* A yield before the finish makes the value the load's own: no flag. */
TEST(test_keep_finish_after_a_yield_is_not_no_value) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  if (!load_a(&f)) return;
  lds_load_options o = keep_options();
  REQUIRE_RC(fx_load(&f, "b", &o), LDS_OK);
  if (!REC_WAIT(&f.rec, 3) || !HOST_WAIT(&f.h, 2)) return;
  REQUIRE_RC(fx_yield(&f, host_job_at(&f.h, 1), "B1"), LDS_OK);
  REQUIRE_RC(lds_job_finish(f.rt, host_job_at(&f.h, 1)), LDS_OK);
  if (REC_WAIT(&f.rec, 5)) {
    CHECK_STATE(at(&f, 4), 5, LDS_LOADED, 0);
    CHECK_BYTES(at(&f, 4)->value, at(&f, 4)->value_len, "B1");
    CHECK_BYTES(at(&f, 4)->request, at(&f, 4)->request_len, "b");
  }
  fixture_finish(&f);
}
