/* test_values.c — empty values, large values and values over LDS_VALUE_MAX. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"

TEST(test_zero_length_values) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  /* NULL with length 0 is an empty value; a loaded empty value has a
   * non-NULL pointer. */
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, f.cell, NULL, 0), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_LOADED, 0);
  CHECK(e->value != NULL);
  CHECK_EQ(e->value_len, 0);
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(f.rt, f.cell, &s), LDS_OK);
  CHECK_EQ(s.status, LDS_LOADED);
  CHECK(s.value != NULL);
  CHECK_EQ(s.value_len, 0);
  lds_snapshot_clear(&s);
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, f.cell, "ignored", 0), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  e = rec_at(&f.rec, 1);
  CHECK(e->value != NULL);
  CHECK_EQ(e->value_len, 0);

  /* An empty request. */
  REQUIRE_RC(lds_loadable_load(f.rt, f.cell, f.loader, NULL, 0, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  CHECK_EQ(host_job_info(&f.h, 0)->request_len, 0);
  REQUIRE(REC_WAIT(&f.rec, 3));
  e = rec_at(&f.rec, 2);
  CHECK_STATE(e, 3, LDS_LOADING, 0);
  CHECK_EQ(e->request_len, 0);
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(lds_job_yield(f.rt, job, NULL, 0), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 4));
  e = rec_at(&f.rec, 3);
  CHECK_STATE(e, 4, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK(e->value != NULL);
  CHECK_EQ(e->value_len, 0);
  REQUIRE_RC(lds_job_succeed(f.rt, job, NULL, 0), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 5));
  e = rec_at(&f.rec, 4);
  CHECK_STATE(e, 5, LDS_LOADED, 0);
  CHECK(e->value != NULL);
  CHECK_EQ(e->value_len, 0);

  /* Empty and NULL messages. */
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 1, ""), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 6));
  CHECK_STR(rec_at(&f.rec, 5)->error_message, "");
  REQUIRE_RC(lds_loadable_load(f.rt, f.cell, f.loader, "", 0, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE_RC(lds_job_fail(f.rt, host_job_at(&f.h, 1), 4, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 8));
  e = rec_at(&f.rec, 7);
  CHECK_STATE(e, 8, LDS_ERROR, 0);
  CHECK(e->error_message == NULL);
  fixture_finish(&f);
}

/* 64 MiB values are checked in place by the callback, not copied. */
#define BIG ((size_t)64 * 1024 * 1024)

typedef struct big_seen {
  size_t count;
  size_t ok;      /* events whose value equals the pattern */
  size_t request_ok;
} big_seen;

static unsigned char *big_pattern(void) {
  unsigned char *p = malloc(BIG);
  if (p == NULL) return NULL;
  for (size_t i = 0; i < BIG; i++) p[i] = (unsigned char)(i * 131 + (i >> 16));
  return p;
}

static const unsigned char *pattern;

static void on_big_event(const lds_event *e, void *data) {
  big_seen *seen = data;
  bool value_ok = e->value != NULL && e->value_len == BIG && memcmp(e->value, pattern, BIG) == 0;
  bool request_ok = e->request != NULL && e->request_len == BIG && memcmp(e->request, pattern, BIG) == 0;
  harness_lock();
  seen->count++;
  if (value_ok) seen->ok++;
  if (request_ok) seen->request_ok++;
  harness_notify();
  harness_unlock();
}

static void check_big_snapshot(lds_runtime *rt, lds_id cell) {
  lds_snapshot s;
  CHECK_RC(lds_loadable_get(rt, cell, &s), LDS_OK);
  CHECK_EQ(s.value_len, BIG);
  CHECK(s.value != NULL && memcmp(s.value, pattern, BIG) == 0);
  lds_snapshot_clear(&s);
}

TEST(test_64_mib_value_round_trips) {
  unsigned char *p = big_pattern();
  REQUIRE(p != NULL);
  pattern = p;
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  big_seen seen = {0};
  lds_id cell = 0;
  REQUIRE_RC(lds_loadable_new(rt, on_big_event, &seen, &cell), LDS_OK);
  /* set_loaded and get. */
  REQUIRE_RC(lds_loadable_set_loaded(rt, cell, p, BIG), LDS_OK);
  REQUIRE(WAIT_FOR(seen.count == 1));
  CHECK_EQ(seen.ok, 1);
  check_big_snapshot(rt, cell);
  /* A 64 MiB request, and a job that succeeds with 64 MiB. */
  REQUIRE_RC(lds_loadable_load(rt, cell, loader, p, BIG, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&h, 1));
  const host_job *j = host_job_info(&h, 0);
  CHECK_EQ(j->request_len, BIG);
  CHECK(j->request != NULL && memcmp(j->request, p, BIG) == 0);
  REQUIRE_RC(lds_job_succeed(rt, j->job, p, BIG), LDS_OK);
  REQUIRE(WAIT_FOR(seen.count == 3));
  CHECK_EQ(seen.ok, 2);
  CHECK_EQ(seen.request_ok, 2);
  check_big_snapshot(rt, cell);
  rt_free(rt);
  host_destroy(&h);
  free(p);
}

/* A pointer whose memory faults on any access: a library that reads it
 * crashes the test. */
static void *unreadable_page(void) {
  void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

static void check_too_big(size_t len) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder prec;
  rec_init(&prec, f.rt);
  lds_id proc = process_new(f.rt, &prec);
  void *bad = unreadable_page();
  REQUIRE(bad != NULL);
  CHECK_RC(lds_loadable_set_loaded(f.rt, f.cell, bad, len), LDS_ETOOBIG);
  CHECK_RC(lds_loadable_load(f.rt, f.cell, f.loader, bad, len, NULL), LDS_ETOOBIG);
  CHECK_RC(lds_process_run(f.rt, proc, 1, f.loader, bad, len, NULL), LDS_ETOOBIG);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  CHECK_RC(lds_job_yield(f.rt, job, bad, len), LDS_ETOOBIG);
  CHECK_RC(lds_job_succeed(f.rt, job, bad, len), LDS_ETOOBIG);
  /* Nothing happened: the job still runs, one start, one event. */
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 1);
  CHECK_EQ(rec_count(&prec), 0);
  fixture_finish(&f);
  rec_destroy(&prec);
  munmap(bad, (size_t)sysconf(_SC_PAGESIZE));
}

TEST(test_value_over_max_is_etoobig) { check_too_big(LDS_VALUE_MAX + 1); }

TEST(test_value_of_twice_max_is_etoobig) { check_too_big(LDS_VALUE_MAX * 2); }

TEST(test_value_length_with_top_bit_is_etoobig) { check_too_big((size_t)1 << 63); }

TEST(test_value_length_size_max_is_etoobig) { check_too_big(SIZE_MAX); }
