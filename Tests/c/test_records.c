/* test_records.c — LDS_DELIVER_POLL through lds_runtime_dispatch_records:
 * cell events and loader starts handed over as data. */
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

#define BUF_WORDS 4096
static uint64_t buf[BUF_WORDS]; /* 32 KiB, 8-byte aligned */

static bool inside(const void *p, const lds_record *r) {
  return (const char *)p >= (const char *)r && (const char *)p <= (const char *)r + r->size;
}

/* Handles records as the callbacks would have; returns how many. */
static int handle_records(lds_runtime *rt, const void *records, size_t used) {
  size_t off = 0;
  int n = 0;
  while (off < used) {
    const lds_record *r = (const lds_record *)((const char *)records + off);
    CHECK(r->size >= sizeof(lds_record));
    CHECK_EQ(r->size % 8, 0);
    if (r->size < sizeof(lds_record) || off + r->size > used) return -1;
    const lds_event *e = &r->event;
    if (e->value) CHECK(inside(e->value, r) && inside((const char *)e->value + e->value_len, r));
    if (e->request) CHECK(inside(e->request, r) && inside((const char *)e->request + e->request_len, r));
    if (e->error_message) CHECK(inside(e->error_message + strlen(e->error_message), r));
    if (r->what == LDS_RECORD_EVENT) {
      CHECK_EQ(r->job, 0);
      rec_on_event(e, r->user_data);
    } else if (r->what == LDS_RECORD_START) {
      CHECK(r->job != 0);
      CHECK(e->request != NULL);
      CHECK_EQ(e->cell, 0);
      host_loader_start(rt, r->job, e->request, e->request_len, r->user_data);
    } else {
      check_fail(__FILE__, __LINE__, "record of unknown kind %u", r->what);
    }
    off += r->size;
    n++;
  }
  return n;
}

/* One call of lds_runtime_dispatch_records into buf, its records handled. */
static int take(lds_runtime *rt, int max, size_t *used_out) {
  size_t used = 0;
  int rc = lds_runtime_dispatch_records(rt, buf, sizeof buf, max, &used);
  if (used_out) *used_out = used;
  if (rc < 0) return rc;
  handle_records(rt, buf, used);
  return rc;
}

/* Waits for the runtime's fd, then takes every pending record; false once
 * the deadline passed or the call failed. */
static bool records_step(lds_runtime *rt, const struct timespec *deadline) {
  if (harness_past(deadline)) return false;
  struct pollfd p = {.fd = lds_runtime_fd(rt), .events = POLLIN};
  poll(&p, 1, 1000);
  int rc = take(rt, 0, NULL);
  if (rc < 0) {
    check_fail(__FILE__, __LINE__, "lds_runtime_dispatch_records returned %d", rc);
    return false;
  }
  return true;
}

/* POLL_UNTIL with records instead of callbacks. */
#define RECORDS_UNTIL(rt, cond) STEP_UNTIL(records_step, rt, cond)

TEST(test_records_carry_events_and_loader_starts) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(RECORDS_UNTIL(f.rt, f.rec.count >= 1 && f.h.starts >= 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_BYTES(rec_at(&f.rec, 0)->request, rec_at(&f.rec, 0)->request_len, "r1");
  CHECK(pthread_equal(rec_thread(&f.rec, 0), pthread_self()));
  const host_job *j = host_job_info(&f.h, 0);
  CHECK_BYTES(j->request, j->request_len, "r1");
  CHECK(pthread_equal(j->thread, pthread_self()));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v1"), LDS_OK);
  REQUIRE(RECORDS_UNTIL(f.rt, f.rec.count >= 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v1");
  CHECK_BYTES(e->request, e->request_len, "r1");
  /* Nothing else is pending, and the fd is no longer readable. */
  size_t used = 1;
  CHECK_EQ(lds_runtime_dispatch_records(f.rt, buf, sizeof buf, 0, &used), 0);
  CHECK_EQ(used, 0);
  struct pollfd p = {.fd = lds_runtime_fd(f.rt), .events = POLLIN};
  CHECK_EQ(poll(&p, 1, 0), 0);
  fixture_finish(&f);
}

TEST(test_records_carry_messages_and_empty_values) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 42, "broken pipe"), LDS_OK);
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, f.cell, "", 0), LDS_OK);
  REQUIRE(RECORDS_UNTIL(f.rt, f.rec.count >= 2));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_ERROR, 0);
  CHECK_EQ(e->error_code, 42);
  CHECK_STR(e->error_message, "broken pipe");
  e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK(e->value != NULL);
  CHECK_EQ(e->value_len, 0);
  CHECK(e->error_message == NULL);
  fixture_finish(&f);
}

TEST(test_records_a_record_larger_than_the_buffer_is_etoobig_and_stays) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  char value[1000];
  memset(value, 'x', sizeof value);
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, f.cell, value, sizeof value), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 1));
  size_t used = 0;
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, 256, 0, &used), LDS_ETOOBIG);
  CHECK(used >= sizeof(lds_record) + sizeof value);
  CHECK_EQ(used % 8, 0);
  size_t needed = used;
  CHECK_RC(lds_runtime_dispatch_records(f.rt, NULL, 0, 0, &used), LDS_ETOOBIG);
  CHECK_EQ(used, needed);
  CHECK_EQ(rec_count(&f.rec), 0);
  /* Exactly the size asked for is enough. */
  CHECK_EQ(lds_runtime_dispatch_records(f.rt, buf, needed, 0, &used), 1);
  CHECK_EQ(used, needed);
  CHECK_EQ(handle_records(f.rt, buf, used), 1);
  CHECK_EQ(rec_count(&f.rec), 1);
  CHECK_EQ(rec_at(&f.rec, 0)->value_len, sizeof value);
  fixture_finish(&f);
}

TEST(test_records_fill_the_buffer_then_stop) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE(fx_publish(&f, 10, "0123456789"));
  size_t used = 0;
  /* Room for three records of this size. */
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, 0, 0, &used), LDS_ETOOBIG);
  size_t one = used;
  int rc = lds_runtime_dispatch_records(f.rt, buf, 3 * one + one / 2, 0, &used);
  CHECK_EQ(rc, 3);
  CHECK_EQ(used, 3 * one);
  CHECK_EQ(handle_records(f.rt, buf, used), 3);
  CHECK_EQ(take(f.rt, 0, NULL), 7);
  CHECK_EQ(rec_count(&f.rec), 10);
  fixture_finish(&f);
}

TEST(test_records_max_records) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE(fx_publish(&f, 4, "v"));
  CHECK_EQ(take(f.rt, 1, NULL), 1);
  CHECK_EQ(rec_count(&f.rec), 1);
  CHECK_EQ(take(f.rt, 2, NULL), 2);
  CHECK_EQ(rec_count(&f.rec), 3);
  CHECK_EQ(take(f.rt, -1, NULL), 1);
  CHECK_EQ(take(f.rt, 5, NULL), 0);
  CHECK_EQ(rec_count(&f.rec), 4);
  fixture_finish(&f);
}

TEST(test_records_stop_before_a_callback_queued_after_them) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  host other;
  lds_id loader = host_new(f.rt, &other, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "a"), LDS_OK);
  /* free_data of a loader with no job is queued after the event... */
  REQUIRE_RC(lds_loader_free(f.rt, loader), LDS_OK);
  /* ...and this event after it (published in order by the loop). */
  REQUIRE_RC(fx_set_loaded(&f, "b"), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 2));
  size_t used = 0;
  CHECK_EQ(take(f.rt, 0, &used), 1);
  CHECK(used > 0);
  CHECK_EQ(rec_count(&f.rec), 1);
  harness_lock();
  int calls = other.free_data_calls;
  harness_unlock();
  CHECK_EQ(calls, 0);
  /* The callback runs at the start of the next call, then the record after it. */
  CHECK_EQ(take(f.rt, 0, &used), 2);
  harness_lock();
  calls = other.free_data_calls;
  harness_unlock();
  CHECK_EQ(calls, 1);
  CHECK_EQ(rec_count(&f.rec), 2);
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "b");
  fixture_finish(&f);
  host_destroy(&other);
}

TEST(test_records_of_a_freed_cell_are_dropped) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE_RC(fx_set_loaded(&f, "w"), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 2));
  REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK);
  size_t used = 1;
  CHECK_EQ(lds_runtime_dispatch_records(f.rt, buf, sizeof buf, 0, &used), 2);
  CHECK_EQ(used, 0);
  CHECK_EQ(rec_count(&f.rec), 0);
  fixture_finish(&f);
}

TEST(test_records_of_a_job_cancelled_before_its_start_are_dropped) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 1));
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 2));
  REQUIRE(RECORDS_UNTIL(f.rt, f.rec.count >= 2));
  CHECK_EQ(f.h.starts, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ABSENT, LDS_FLAG_CANCELLED);
  fixture_finish(&f);
}

static int nested_records_rc = 1, nested_dispatch_rc = 1;

static void nested_in_free_data(lds_runtime *rt) {
  size_t used = 0;
  nested_records_rc = lds_runtime_dispatch_records(rt, buf, sizeof buf, 0, &used);
  nested_dispatch_rc = lds_runtime_dispatch(rt, 0);
}

static lds_runtime *nested_rt;
static void nested_free_data(void *data) {
  (void)data;
  nested_in_free_data(nested_rt);
}
static void nothing_start(lds_runtime *rt, lds_id job, const void *r, size_t n, void *d) {
  (void)rt, (void)job, (void)r, (void)n, (void)d;
}

TEST(test_records_bad_input_and_nested_calls) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  size_t used = 7;
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, sizeof buf, 0, NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_dispatch_records(NULL, buf, sizeof buf, 0, &used), LDS_EINVAL);
  CHECK_EQ(used, 0);
  CHECK_RC(lds_runtime_dispatch_records(f.rt, NULL, 64, 0, &used), LDS_EINVAL);
  CHECK_RC(lds_runtime_dispatch_records(f.rt, (char *)buf + 4, 64, 0, &used), LDS_EINVAL);
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, SIZE_MAX, 0, &used), LDS_EINVAL);
  CHECK_EQ(lds_runtime_dispatch_records(f.rt, NULL, 0, 0, &used), 0);
  /* From inside a callback run by the call: LDS_ESTATE, like lds_runtime_dispatch. */
  nested_rt = f.rt;
  lds_id loader = 0;
  REQUIRE_RC(lds_loader_new(f.rt, nothing_start, NULL, nested_free_data, &loader), LDS_OK);
  REQUIRE_RC(lds_loader_free(f.rt, loader), LDS_OK);
  REQUIRE(RECORDS_UNTIL(f.rt, nested_records_rc != 1));
  CHECK_RC(nested_records_rc, LDS_ESTATE);
  CHECK_RC(nested_dispatch_rc, LDS_ESTATE);
  fixture_finish(&f);
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, sizeof buf, 0, &used), LDS_ECLOSED);

  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  CHECK_RC(lds_runtime_dispatch_records(f.rt, buf, sizeof buf, 0, &used), LDS_ESTATE);
  fixture_finish(&f);
}
