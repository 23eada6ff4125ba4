/* test_mutations.c — writes (lds_process_mutate): optimistic values shown
 * by cells and memory caches before the loader runs, exact rollbacks,
 * overlapping writes in every order, newer data, populate, invalidation. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>

#include "harness.h"

typedef struct world {
  lds_runtime *rt;
  recorder view_rec;   /* the loadable cell that shows the key */
  recorder proc_rec;   /* the process cell that runs the writes */
  host reads;          /* loads of the viewing cell: completed by the test */
  host writes;         /* write jobs: completed by the test */
  lds_id view;
  lds_id proc;
  lds_id memory;
} world;

static void world_init(world *w, host_start_fn on_write) {
  w->rt = rt_new(LDS_DELIVER_LOOP);
  rec_init(&w->view_rec, w->rt);
  rec_init(&w->proc_rec, w->rt);
  host_new(w->rt, &w->reads, NULL);
  host_new(w->rt, &w->writes, on_write);
  w->view = cell_new(w->rt, &w->view_rec);
  w->proc = process_new(w->rt, &w->proc_rec);
  CHECK_RC(lds_memory_cache_new(w->rt, NULL, &w->memory), LDS_OK);
}

static void world_finish(world *w) {
  rt_free(w->rt);
  rec_destroy(&w->view_rec);
  rec_destroy(&w->proc_rec);
  host_destroy(&w->reads);
  host_destroy(&w->writes);
}

/* Loads request `value` into the viewing cell with `cache` under `key`,
 * completed with the same bytes; waits for the LOADED event. */
static bool view_load(world *w, lds_id cache, const char *key, const char *value) {
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_key = key;
  o.cache_key_len = strlen(key);
  o.cache_policy = LDS_POLICY_LOAD_ONLY;
  size_t before = w->reads.starts;
  size_t events = rec_count(&w->view_rec);
  if (!CHECK_RC(lds_loadable_load(w->rt, w->view, w->reads.id, value, strlen(value), &o), LDS_OK)) return false;
  if (!HOST_WAIT(&w->reads, before + 1)) return false;
  if (!CHECK_RC(lds_job_succeed(w->rt, host_job_at(&w->reads, before), value, strlen(value)), LDS_OK)) return false;
  return REC_WAIT(&w->view_rec, events + 2);
}

/* Starts a write of `value` under `key` of `cache`; returns its job once
 * the loader was called (0 on failure). */
static lds_id mutate(world *w, lds_id cache, const char *key, const char *value, uint32_t flags,
                     const lds_cache_prefix *invalidate, size_t invalidate_count) {
  lds_cache_update u = {cache, key, strlen(key), value, strlen(value)};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.flags = flags;
  m.optimistic = &u;
  m.optimistic_count = 1;
  m.invalidate = invalidate;
  m.invalidate_count = invalidate_count;
  size_t before = w->writes.starts;
  if (!CHECK_RC(lds_process_mutate(w->rt, w->proc, 0, w->writes.id, "w", 1, NULL, &m), LDS_OK)) return 0;
  if (!HOST_WAIT(&w->writes, before + 1)) return 0;
  return host_job_at(&w->writes, before);
}

/* Waits until the viewing cell's latest event shows `value` with `flags`. */
static bool view_shows(world *w, const char *value, uint32_t flags) {
  return WAIT_FOR(w->view_rec.count > 0 &&
                  w->view_rec.events[w->view_rec.count - 1]->ev.status == LDS_LOADED &&
                  w->view_rec.events[w->view_rec.count - 1]->ev.flags == flags &&
                  w->view_rec.events[w->view_rec.count - 1]->ev.value_len == strlen(value) &&
                  memcmp(w->view_rec.events[w->view_rec.count - 1]->ev.value, value, strlen(value)) == 0);
}

/* Waits until the process cell's latest event has `status`. */
static bool proc_is(world *w, int32_t status) {
  return WAIT_FOR(w->proc_rec.count > 0 && w->proc_rec.events[w->proc_rec.count - 1]->ev.status == status);
}

static void check_cached(world *w, lds_id cache, const char *key, const char *want) {
  lds_cache_value v;
  if (want == NULL) {
    CHECK_RC(lds_cache_get(w->rt, cache, key, strlen(key), &v), 0);
    return;
  }
  if (CHECK_RC(lds_cache_get(w->rt, cache, key, strlen(key), &v), 1)) {
    CHECK_BYTES(v.value, v.value_len, want);
    lds_cache_value_clear(&v);
  }
}

/* What the write's loader saw when it was called (under the harness lock). */
static char seen_cached[32];
static uint32_t seen_view_flags;
static char seen_view_value[32];
static world *seen_world;

static void write_start_looks(host *h, lds_id job, const void *request, size_t len) {
  (void)job;
  (void)request;
  (void)len;
  world *w = seen_world;
  lds_cache_value v;
  char cached[32] = "(none)";
  if (lds_cache_get(h->rt, w->memory, "k", 1, &v) == 1) {
    snprintf(cached, sizeof cached, "%.*s", (int)v.value_len, (const char *)v.value);
    lds_cache_value_clear(&v);
  }
  harness_lock();
  snprintf(seen_cached, sizeof seen_cached, "%s", cached);
  const lds_event *e = &w->view_rec.events[w->view_rec.count - 1]->ev;
  seen_view_flags = e->flags;
  snprintf(seen_view_value, sizeof seen_view_value, "%.*s", (int)e->value_len, (const char *)e->value);
  harness_notify();
  harness_unlock();
}

TEST(test_mutate_shows_the_value_before_the_loader_and_a_failure_rolls_back_exactly) {
  world w;
  seen_world = &w;
  world_init(&w, write_start_looks);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  const lds_event *loaded = rec_last(&w.view_rec);
  uint64_t loaded_updated = loaded->updated_at_ms;
  lds_cache_value before;
  REQUIRE_RC(lds_cache_get(w.rt, w.memory, "k", 1, &before), 1);
  size_t events = rec_count(&w.view_rec);
  lds_id job = mutate(&w, w.memory, "k", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  REQUIRE(HOST_WAIT_DONE(&w.writes, 1));
  /* Seen by the cell and by lds_cache_get when the loader was called. */
  CHECK_STR(seen_cached, "opt");
  CHECK_STR(seen_view_value, "opt");
  CHECK_EQ(seen_view_flags, LDS_FLAG_OPTIMISTIC);
  const lds_event *shown = rec_at(&w.view_rec, events);
  CHECK_EQ(shown->status, LDS_LOADED);
  CHECK_BYTES(shown->request, shown->request_len, "v0");
  CHECK(proc_is(&w, LDS_RUNNING));
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  /* The rollback came before FAILED: the cell shows exactly its earlier state. */
  const lds_event *back = rec_last(&w.view_rec);
  CHECK_EQ(back->status, LDS_LOADED);
  CHECK_EQ(back->flags, LDS_FLAG_ROLLED_BACK);
  CHECK_BYTES(back->value, back->value_len, "v0");
  CHECK_BYTES(back->request, back->request_len, "v0");
  CHECK_EQ(back->updated_at_ms, loaded_updated);
  lds_cache_value after;
  REQUIRE_RC(lds_cache_get(w.rt, w.memory, "k", 1, &after), 1);
  CHECK_BYTES(after.value, after.value_len, "v0");
  CHECK_EQ(after.stored_at_ms, before.stored_at_ms);
  CHECK_EQ(after.expires_at_ms, before.expires_at_ms);
  CHECK_EQ(after.stale, before.stale);
  lds_cache_value_clear(&before);
  lds_cache_value_clear(&after);
  world_finish(&w);
}

TEST(test_mutate_rollback_of_an_absent_entry_leaves_none) {
  world w;
  world_init(&w, NULL);
  lds_id job = mutate(&w, w.memory, "n", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  check_cached(&w, w.memory, "n", "opt");
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  check_cached(&w, w.memory, "n", NULL);
  world_finish(&w);
}

/* A stale entry comes back stale, with its times. */
TEST(test_mutate_rollback_restores_the_stale_mark) {
  world w;
  world_init(&w, NULL);
  REQUIRE_RC(lds_cache_put(w.rt, w.memory, "s", 1, "old", 3), LDS_OK);
  REQUIRE_RC(lds_cache_invalidate(w.rt, w.memory, "s", 1), LDS_OK);
  lds_cache_value before;
  REQUIRE_RC(lds_cache_get(w.rt, w.memory, "s", 1, &before), 1);
  CHECK_EQ(before.stale, 1);
  lds_id job = mutate(&w, w.memory, "s", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  lds_cache_value after;
  REQUIRE_RC(lds_cache_get(w.rt, w.memory, "s", 1, &after), 1);
  CHECK_BYTES(after.value, after.value_len, "old");
  CHECK_EQ(after.stale, 1);
  CHECK_EQ(after.stored_at_ms, before.stored_at_ms);
  lds_cache_value_clear(&before);
  lds_cache_value_clear(&after);
  world_finish(&w);
}

/* Two writes of one key on two process cells; each ends as `outcomes`
 * says ('f' fails, 's' succeeds), the second one first when
 * `second_first`. Returns after both ended. */
static void overlapping(world *w, lds_id proc2, recorder *rec2, bool second_first, char first_outcome,
                        char second_outcome) {
  lds_id job1 = mutate(w, w->memory, "k", "opt1", 0, NULL, 0);
  if (!view_shows(w, "opt1", LDS_FLAG_OPTIMISTIC)) return;
  lds_cache_update u = {w->memory, "k", 1, "opt2", 4};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.optimistic = &u;
  m.optimistic_count = 1;
  size_t before = w->writes.starts;
  if (!CHECK_RC(lds_process_mutate(w->rt, proc2, 0, w->writes.id, "w", 1, NULL, &m), LDS_OK)) return;
  if (!HOST_WAIT(&w->writes, before + 1)) return;
  lds_id job2 = host_job_at(&w->writes, before);
  if (!view_shows(w, "opt2", LDS_FLAG_OPTIMISTIC)) return;
  lds_id order[2] = {second_first ? job2 : job1, second_first ? job1 : job2};
  char outcomes[2] = {second_first ? second_outcome : first_outcome, second_first ? first_outcome : second_outcome};
  const char *values[2] = {second_first ? "opt2" : "opt1", second_first ? "opt1" : "opt2"};
  for (int i = 0; i < 2; i++) {
    if (outcomes[i] == 'f') {
      CHECK_RC(lds_job_fail(w->rt, order[i], 7, "refused"), LDS_OK);
    } else {
      CHECK_RC(lds_job_succeed(w->rt, order[i], values[i], 4), LDS_OK);
    }
    bool proc1_done = order[i] == job1;
    if (proc1_done) {
      proc_is(w, outcomes[i] == 'f' ? LDS_FAILED : LDS_FINISHED);
    } else {
      int32_t want = outcomes[i] == 'f' ? LDS_FAILED : LDS_FINISHED;
      WAIT_FOR(rec2->count > 0 && rec2->events[rec2->count - 1]->ev.status == want);
    }
  }
}

static void run_overlapping(bool second_first, char first, char second, const char *want, uint32_t flags) {
  world w;
  world_init(&w, NULL);
  recorder rec2;
  rec_init(&rec2, w.rt);
  lds_id proc2 = process_new(w.rt, &rec2);
  if (view_load(&w, w.memory, "k", "v0")) {
    overlapping(&w, proc2, &rec2, second_first, first, second);
    CHECK(view_shows(&w, want, flags));
    check_cached(&w, w.memory, "k", want);
  }
  rt_free(w.rt);
  rec_destroy(&rec2);
  rec_destroy(&w.view_rec);
  rec_destroy(&w.proc_rec);
  host_destroy(&w.reads);
  host_destroy(&w.writes);
}

TEST(test_mutate_two_failing_writes_older_first_leave_the_confirmed_value) {
  run_overlapping(false, 'f', 'f', "v0", LDS_FLAG_ROLLED_BACK);
}

TEST(test_mutate_two_failing_writes_newer_first_leave_the_confirmed_value) {
  run_overlapping(true, 'f', 'f', "v0", LDS_FLAG_ROLLED_BACK);
}

TEST(test_mutate_older_fails_then_newer_succeeds) {
  run_overlapping(false, 'f', 's', "opt2", 0);
}

TEST(test_mutate_newer_fails_then_older_succeeds) {
  run_overlapping(true, 's', 'f', "opt1", 0);
}

TEST(test_mutate_older_succeeds_then_newer_fails_returns_to_the_older) {
  run_overlapping(false, 's', 'f', "opt1", LDS_FLAG_ROLLED_BACK);
}

TEST(test_mutate_newer_succeeds_then_older_fails_keeps_the_newer) {
  run_overlapping(true, 'f', 's', "opt2", 0);
}

/* A load of the key that finishes during the write is newer data: the
 * write's failure leaves it. */
TEST(test_mutate_a_load_finishing_during_the_write_stays_after_its_failure) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = w.memory;
  o.cache_key = "k";
  o.cache_key_len = 1;
  REQUIRE_RC(lds_loadable_load(w.rt, w.view, w.reads.id, "r", 1, &o), LDS_OK);
  REQUIRE(HOST_WAIT(&w.reads, 2));
  lds_id job = mutate(&w, w.memory, "k", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  /* The cell's own load keeps its job while it shows the optimistic value. */
  REQUIRE(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC | LDS_FLAG_REFRESHING));
  REQUIRE_RC(lds_job_succeed(w.rt, host_job_at(&w.reads, 1), "newer", 5), LDS_OK);
  REQUIRE(view_shows(&w, "newer", 0));
  check_cached(&w, w.memory, "k", "newer");
  size_t events = rec_count(&w.view_rec);
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  CHECK_EQ(rec_count(&w.view_rec), events);
  check_cached(&w, w.memory, "k", "newer");
  world_finish(&w);
}

/* A put of the key during the write is newer data too. */
TEST(test_mutate_a_put_during_the_write_stays_after_its_failure) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  lds_id job = mutate(&w, w.memory, "k", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  REQUIRE_RC(lds_cache_put(w.rt, w.memory, "k", 1, "put", 3), LDS_OK);
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  check_cached(&w, w.memory, "k", "put");
  /* The cell leaves the optimistic value for the put's. */
  CHECK(view_shows(&w, "put", LDS_FLAG_ROLLED_BACK));
  world_finish(&w);
}

static void cancel_or_reset(bool reset) {
  world w;
  world_init(&w, NULL);
  if (view_load(&w, w.memory, "k", "v0")) {
    lds_id job = mutate(&w, w.memory, "k", "opt", 0, NULL, 0);
    if (job != 0 && view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC)) {
      CHECK_RC(reset ? lds_process_reset(w.rt, w.proc) : lds_process_cancel(w.rt, w.proc), LDS_OK);
      CHECK(proc_is(&w, LDS_IDLE));
      CHECK(view_shows(&w, "v0", LDS_FLAG_ROLLED_BACK));
      check_cached(&w, w.memory, "k", "v0");
    }
  }
  world_finish(&w);
}

TEST(test_mutate_cancel_of_the_process_cell_rolls_back) { cancel_or_reset(false); }

TEST(test_mutate_reset_of_the_process_cell_rolls_back) { cancel_or_reset(true); }

TEST(test_mutate_free_of_the_process_cell_rolls_back) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  lds_id job = mutate(&w, w.memory, "k", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  REQUIRE(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC));
  REQUIRE_RC(lds_process_free(w.rt, w.proc), LDS_OK);
  CHECK(view_shows(&w, "v0", LDS_FLAG_ROLLED_BACK));
  check_cached(&w, w.memory, "k", "v0");
  world_finish(&w);
}

static lds_id persistent_new(lds_runtime *rt, char *path) {
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  close(fd);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = path;
  po.flags = LDS_CACHE_REPLACE_DAMAGED;
  lds_id id = 0;
  CHECK_RC(lds_persistent_cache_new(rt, &po, &id), LDS_OK);
  return id;
}

/* A persistent cache never holds an optimistic value (read from another
 * runtime too); its cells still show it. */
TEST(test_mutate_a_persistent_cache_never_holds_an_optimistic_value) {
  world w;
  world_init(&w, NULL);
  char path[] = "/tmp/lds-mutate-XXXXXX";
  lds_id disk = persistent_new(w.rt, path);
  REQUIRE(disk != 0);
  REQUIRE(view_load(&w, disk, "k", "v0"));
  lds_id job = mutate(&w, disk, "k", "opt", 0, NULL, 0);
  REQUIRE(job != 0);
  REQUIRE(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC));
  check_cached(&w, disk, "k", "v0");
  lds_runtime *other = rt_new(LDS_DELIVER_LOOP);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = path;
  lds_id other_disk;
  if (CHECK_RC(lds_persistent_cache_new(other, &po, &other_disk), LDS_OK)) {
    lds_cache_value v;
    if (CHECK_RC(lds_cache_get(other, other_disk, "k", 1, &v), 1)) {
      CHECK_BYTES(v.value, v.value_len, "v0");
      lds_cache_value_clear(&v);
    }
  }
  rt_free(other);
  /* Success without POPULATE: the cell shows the value confirmed, the file keeps v0. */
  REQUIRE_RC(lds_job_succeed(w.rt, job, "server", 6), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FINISHED));
  CHECK(view_shows(&w, "opt", 0));
  check_cached(&w, disk, "k", "v0");
  world_finish(&w);
  unlink(path);
}

TEST(test_mutate_populate_stores_the_result_in_persistent_and_memory_caches) {
  world w;
  world_init(&w, NULL);
  char path[] = "/tmp/lds-mutate-XXXXXX";
  lds_id disk = persistent_new(w.rt, path);
  REQUIRE(disk != 0);
  REQUIRE(view_load(&w, disk, "k", "v0"));
  lds_cache_update u[2] = {{disk, "k", 1, "opt", 3}, {w.memory, "m", 1, "opt", 3}};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.flags = LDS_MUTATE_POPULATE;
  m.optimistic = u;
  m.optimistic_count = 2;
  REQUIRE_RC(lds_process_mutate(w.rt, w.proc, 3, w.writes.id, "w", 1, NULL, &m), LDS_OK);
  REQUIRE(HOST_WAIT(&w.writes, 1));
  REQUIRE(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC));
  check_cached(&w, disk, "k", "v0");
  check_cached(&w, w.memory, "m", "opt");
  REQUIRE_RC(lds_job_succeed(w.rt, host_job_at(&w.writes, 0), "server", 6), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FINISHED));
  CHECK_EQ(rec_last(&w.proc_rec)->kind, 3);
  CHECK(view_shows(&w, "server", 0));
  check_cached(&w, disk, "k", "server");
  check_cached(&w, w.memory, "m", "server");
  world_finish(&w);
  unlink(path);
}

/* After a success, each prefix is invalidated: the cells that show it reload. */
TEST(test_mutate_success_invalidates_prefixes_and_refreshes_their_cells) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "list/1", "v0"));
  lds_cache_prefix p = {w.memory, "list/", 5};
  lds_id job = mutate(&w, w.memory, "item", "opt", 0, &p, 1);
  REQUIRE(job != 0);
  CHECK_EQ(w.reads.starts, 1);
  REQUIRE_RC(lds_job_succeed(w.rt, job, "", 0), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FINISHED));
  REQUIRE(HOST_WAIT(&w.reads, 2));
  REQUIRE(view_shows(&w, "v0", LDS_FLAG_STALE | LDS_FLAG_REFRESHING));
  REQUIRE_RC(lds_job_succeed(w.rt, host_job_at(&w.reads, 1), "v1", 2), LDS_OK);
  CHECK(view_shows(&w, "v1", 0));
  world_finish(&w);
}

/* A write's invalidations reach the cells before its FINISHED event: the
 * reload of a cell showing an invalidated key has begun by then, so a host
 * call made after FINISHED (a cancel here) finds it under way. (The reloads
 * once began on a later turn of the loop, after host calls made meanwhile.) */
TEST(test_mutate_success_begins_the_reloads_before_finished) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "list/1", "v0"));
  lds_cache_prefix p = {w.memory, "list/", 5};
  lds_id job = mutate(&w, w.memory, "item", "opt", 0, &p, 1);
  REQUIRE(job != 0);
  size_t before = rec_count(&w.view_rec);
  REQUIRE_RC(lds_job_succeed(w.rt, job, "", 0), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FINISHED));
  /* Both cells' events come from the loop thread in order. */
  size_t after = rec_count(&w.view_rec);
  bool stale = false;
  for (size_t i = before; i < after; i++)
    stale |= rec_at(&w.view_rec, i)->flags == (LDS_FLAG_STALE | LDS_FLAG_REFRESHING);
  CHECK(stale);
  CHECK_EQ(w.reads.starts, 2);
  REQUIRE_RC(lds_loadable_cancel(w.rt, w.view), LDS_OK);
  /* The cancel found the reload: the cell shows v0 again, flagged CANCELLED. */
  REQUIRE(WAIT_FOR(rec_count(&w.view_rec) > after && (rec_at(&w.view_rec, rec_count(&w.view_rec) - 1)->flags &
                                                       LDS_FLAG_CANCELLED)));
  CHECK_BYTES(rec_at(&w.view_rec, rec_count(&w.view_rec) - 1)->value,
              rec_at(&w.view_rec, rec_count(&w.view_rec) - 1)->value_len, "v0");
  CHECK_RC(lds_job_is_cancelled(w.rt, host_job_at(&w.reads, 1)), 1);
  world_finish(&w);
}

/* A failed write invalidates nothing. */
TEST(test_mutate_failure_invalidates_nothing) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "list/1", "v0"));
  lds_cache_prefix p = {w.memory, "list/", 5};
  lds_id job = mutate(&w, w.memory, "item", "opt", 0, &p, 1);
  REQUIRE(job != 0);
  REQUIRE_RC(lds_job_fail(w.rt, job, 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  lds_cache_value v;
  REQUIRE_RC(lds_cache_get(w.rt, w.memory, "list/1", 6, &v), 1);
  CHECK_EQ(v.stale, 0);
  lds_cache_value_clear(&v);
  CHECK_EQ(w.reads.starts, 1);
  world_finish(&w);
}

TEST(test_mutate_rejects_bad_options_with_nothing_applied) {
  world w;
  world_init(&w, NULL);
  lds_cache_update many[LDS_MUTATION_KEYS_MAX + 1];
  for (int i = 0; i <= LDS_MUTATION_KEYS_MAX; i++) many[i] = (lds_cache_update){w.memory, "k", 1, "v", 1};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.optimistic = many;
  m.optimistic_count = LDS_MUTATION_KEYS_MAX + 1;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  m.optimistic_count = 0;
  m.invalidate_count = 1;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  m.invalidate_count = 0;
  m.optimistic = NULL;
  m.optimistic_count = 1;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  lds_cache_update unknown = {w.memory + 1000, "k", 1, "v", 1};
  m.optimistic = &unknown;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_ENOENT);
  lds_cache_update huge = {w.memory, "k", 1, "v", LDS_VALUE_MAX + 1};
  m.optimistic = &huge;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_ETOOBIG);
  lds_cache_update nullkey = {w.memory, NULL, 1, "v", 1};
  m.optimistic = &nullkey;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  lds_cache_prefix bigprefix = {w.memory, "p", LDS_VALUE_MAX + 1};
  m.optimistic_count = 0;
  m.optimistic = NULL;
  m.invalidate = &bigprefix;
  m.invalidate_count = 1;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_ETOOBIG);
  m.invalidate_count = 0;
  m.flags = 1u << 5;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  m.flags = 0;
  m.size = 4;
  CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  CHECK_RC(lds_process_mutate(NULL, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_EINVAL);
  check_cached(&w, w.memory, "k", NULL);
  /* `mutation` NULL: a plain run. */
  REQUIRE_RC(lds_process_mutate(w.rt, w.proc, 2, w.writes.id, "w", 1, NULL, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&w.writes, 1));
  CHECK_EQ(rec_count(&w.view_rec), 0);
  REQUIRE_RC(lds_job_succeed(w.rt, host_job_at(&w.writes, 0), "x", 1), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FINISHED));
  CHECK_EQ(rec_count(&w.proc_rec), 2);
  world_finish(&w);
}

/* Starts a write of `value` under "k" of the memory cache with load options. */
static bool mutate_with(world *w, lds_id proc, const char *value, const lds_load_options *o) {
  lds_cache_update u = {w->memory, "k", 1, value, strlen(value)};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.optimistic = &u;
  m.optimistic_count = 1;
  return CHECK_RC(lds_process_mutate(w->rt, proc, 0, w->writes.id, "w", 1, o, &m), LDS_OK);
}

/* A failed attempt that is retried keeps the value; the last failure rolls back. */
TEST(test_mutate_rolls_back_after_the_last_retry_only) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 1;
  o.retry_base_ms = 1;
  o.retry_max_ms = 1;
  REQUIRE(mutate_with(&w, w.proc, "opt", &o));
  REQUIRE(HOST_WAIT(&w.writes, 1));
  REQUIRE_RC(lds_job_fail(w.rt, host_job_at(&w.writes, 0), 7, "refused"), LDS_OK);
  REQUIRE(HOST_WAIT(&w.writes, 2));
  CHECK(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC));
  check_cached(&w, w.memory, "k", "opt");
  REQUIRE_RC(lds_job_fail(w.rt, host_job_at(&w.writes, 1), 7, "refused"), LDS_OK);
  REQUIRE(proc_is(&w, LDS_FAILED));
  CHECK(view_shows(&w, "v0", LDS_FLAG_ROLLED_BACK));
  check_cached(&w, w.memory, "k", "v0");
  world_finish(&w);
}

TEST(test_mutate_timeout_rolls_back) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.timeout_ms = 20;
  REQUIRE(mutate_with(&w, w.proc, "opt", &o));
  REQUIRE(proc_is(&w, LDS_FAILED));
  CHECK_EQ(rec_last(&w.proc_rec)->error_code, LDS_ETIMEDOUT);
  CHECK(view_shows(&w, "v0", LDS_FLAG_ROLLED_BACK));
  check_cached(&w, w.memory, "k", "v0");
  world_finish(&w);
}

/* After newer data, a later write rolls back to that data, never to an
 * older write's optimistic value; the older write's failure changes nothing. */
TEST(test_mutate_a_write_after_newer_data_rolls_back_to_it) {
  world w;
  world_init(&w, NULL);
  recorder rec2;
  rec_init(&rec2, w.rt);
  lds_id proc2 = process_new(w.rt, &rec2);
  if (view_load(&w, w.memory, "k", "v0") && mutate_with(&w, w.proc, "opt1", NULL) && HOST_WAIT(&w.writes, 1) &&
      view_shows(&w, "opt1", LDS_FLAG_OPTIMISTIC) && view_load(&w, w.memory, "k", "newer") &&
      mutate_with(&w, proc2, "opt2", NULL) && HOST_WAIT(&w.writes, 2) &&
      view_shows(&w, "opt2", LDS_FLAG_OPTIMISTIC)) {
    check_cached(&w, w.memory, "k", "opt2");
    CHECK_RC(lds_job_fail(w.rt, host_job_at(&w.writes, 1), 7, "refused"), LDS_OK);
    CHECK(WAIT_FOR(rec2.count > 0 && rec2.events[rec2.count - 1]->ev.status == LDS_FAILED));
    CHECK(view_shows(&w, "newer", LDS_FLAG_ROLLED_BACK));
    check_cached(&w, w.memory, "k", "newer");
    size_t events = rec_count(&w.view_rec);
    CHECK_RC(lds_job_fail(w.rt, host_job_at(&w.writes, 0), 7, "refused"), LDS_OK);
    CHECK(proc_is(&w, LDS_FAILED));
    CHECK_EQ(rec_count(&w.view_rec), events);
    check_cached(&w, w.memory, "k", "newer");
  }
  rt_free(w.rt);
  rec_destroy(&rec2);
  rec_destroy(&w.view_rec);
  rec_destroy(&w.proc_rec);
  host_destroy(&w.reads);
  host_destroy(&w.writes);
}

/* A write that succeeds with POPULATE while a newer one is pending keeps
 * the newer value shown (and in the memory cache); the newer one's failure
 * brings the populated value. */
TEST(test_mutate_populate_under_a_newer_pending_write_is_what_its_rollback_brings) {
  world w;
  world_init(&w, NULL);
  recorder rec2;
  rec_init(&rec2, w.rt);
  lds_id proc2 = process_new(w.rt, &rec2);
  lds_cache_update u = {w.memory, "k", 1, "opt1", 4};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.flags = LDS_MUTATE_POPULATE;
  m.optimistic = &u;
  m.optimistic_count = 1;
  if (view_load(&w, w.memory, "k", "v0") &&
      CHECK_RC(lds_process_mutate(w.rt, w.proc, 0, w.writes.id, "w", 1, NULL, &m), LDS_OK) &&
      HOST_WAIT(&w.writes, 1) && mutate_with(&w, proc2, "opt2", NULL) && HOST_WAIT(&w.writes, 2) &&
      view_shows(&w, "opt2", LDS_FLAG_OPTIMISTIC)) {
    CHECK_RC(lds_job_succeed(w.rt, host_job_at(&w.writes, 0), "server1", 7), LDS_OK);
    CHECK(proc_is(&w, LDS_FINISHED));
    CHECK(view_shows(&w, "opt2", LDS_FLAG_OPTIMISTIC));
    check_cached(&w, w.memory, "k", "opt2");
    CHECK_RC(lds_job_fail(w.rt, host_job_at(&w.writes, 1), 7, "refused"), LDS_OK);
    CHECK(view_shows(&w, "server1", LDS_FLAG_ROLLED_BACK));
    check_cached(&w, w.memory, "k", "server1");
  }
  rt_free(w.rt);
  rec_destroy(&rec2);
  rec_destroy(&w.view_rec);
  rec_destroy(&w.proc_rec);
  host_destroy(&w.reads);
  host_destroy(&w.writes);
}

/* Freeing the runtime while a write is pending ends it without a hang or
 * an event after the free. */
TEST(test_mutate_runtime_freed_during_a_write) {
  world w;
  world_init(&w, NULL);
  REQUIRE(view_load(&w, w.memory, "k", "v0"));
  REQUIRE(mutate(&w, w.memory, "k", "opt", 0, NULL, 0) != 0);
  REQUIRE(view_shows(&w, "opt", LDS_FLAG_OPTIMISTIC));
  world_finish(&w);
}
