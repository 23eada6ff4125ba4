/* test_pages.c — pages cells: infinite loads, one job per page. */
#include <stddef.h>
#include <string.h>

#include "harness.h"

static lds_id pages_new(lds_runtime *rt, recorder *rec, uint32_t max_pages) {
  rec_init(rec, rt);
  lds_pages_options o = LDS_PAGES_OPTIONS_INIT;
  o.on_event = rec_on_event;
  o.user_data = rec;
  o.max_pages = max_pages;
  lds_id id = 0;
  CHECK_RC(lds_pages_new(rt, &o, &id), LDS_OK);
  return id;
}

/* The index of the first event at or after `from` about page `kind` with
 * `status` and every bit of `flags` (LDS_FLAG_REFRESHING: set exactly when
 * asked for); -1 if none. Harness lock held. */
static long find_event(recorder *rec, size_t from, int32_t kind, int32_t status, uint32_t flags) {
  for (size_t i = from; i < rec->count; i++) {
    const lds_event *e = &rec->events[i]->ev;
    uint32_t mask = flags | LDS_FLAG_REFRESHING;
    if (e->kind == kind && e->status == status && (e->flags & mask) == flags) return (long)i;
  }
  return -1;
}

#define WAIT_EVENT(rec, from, kind, status, flags) \
  (WAIT_FOR(find_event((rec), (from), (kind), (status), (flags)) >= 0), \
   (size_t)find_event((rec), (from), (kind), (status), (flags)))

/* The i-th job's page request, decoded (pointers into the host's copy). */
static lds_page_request job_request(host *h, size_t i) {
  lds_page_request r;
  memset(&r, 0, sizeof r);
  const host_job *j = host_job_info(h, i);
  if (j == NULL) {
    check_fail(__FILE__, __LINE__, "no job %zu", i);
    return r;
  }
  CHECK_RC(lds_page_request_decode(j->request, j->request_len, &r), LDS_OK);
  return r;
}

static void check_cursor(const lds_page_request *r, const char *cursor, int32_t direction) {
  CHECK_EQ(r->direction, direction);
  if (cursor == NULL) {
    CHECK(r->cursor == NULL);
    CHECK_EQ(r->cursor_len, 0);
  } else {
    CHECK_BYTES(r->cursor, r->cursor_len, cursor);
  }
}

static int succeed_page(lds_runtime *rt, lds_id job, const char *value, const char *next, const char *previous) {
  return lds_job_succeed_page(rt, job, value, strlen(value), next, next ? strlen(next) : 0, previous,
                              previous ? strlen(previous) : 0);
}

static size_t page_count(lds_runtime *rt, lds_id cell) {
  size_t n = 999;
  CHECK_RC(lds_pages_count(rt, cell, &n), LDS_OK);
  return n;
}

static void check_page(lds_runtime *rt, lds_id cell, size_t index, int32_t status, const char *value) {
  lds_snapshot s;
  if (!CHECK_RC(lds_pages_get(rt, cell, index, &s), LDS_OK)) return;
  CHECK_EQ(s.status, status);
  CHECK_EQ(s.kind, (int32_t)index);
  if (value) CHECK_BYTES(s.value, s.value_len, value);
  lds_snapshot_clear(&s);
}

/* Loads "q" and completes the first page with next cursor "c1" and previous "c0". */
static void load_first(fixture *f, lds_id cell, recorder *rec, const lds_load_options *o) {
  size_t starts = f->h.starts;
  CHECK_RC(lds_pages_load(f->rt, cell, f->loader, "q", 1, o), LDS_OK);
  HOST_WAIT(&f->h, starts + 1);
  lds_page_request r = job_request(&f->h, starts);
  CHECK_BYTES(r.request, r.request_len, "q");
  check_cursor(&r, NULL, 0);
  CHECK_RC(succeed_page(f->rt, host_job_at(&f->h, starts), "p0", "c1", "c0"), LDS_OK);
  WAIT_EVENT(rec, 0, 0, LDS_LOADED, 0);
}

/* Asks for the next page and completes it with value and cursors. */
static size_t next_page(fixture *f, lds_id cell, recorder *rec, const char *cursor, const char *value,
                        const char *next, const char *previous, int32_t index) {
  size_t starts = f->h.starts, events = rec_count(rec);
  CHECK_RC(lds_pages_load_next(f->rt, cell), LDS_OK);
  HOST_WAIT(&f->h, starts + 1);
  lds_page_request r = job_request(&f->h, starts);
  check_cursor(&r, cursor, 1);
  CHECK_RC(succeed_page(f->rt, host_job_at(&f->h, starts), value, next, previous), LDS_OK);
  return WAIT_EVENT(rec, events, index, LDS_LOADED, 0);
}

TEST(test_pages_three_forward_one_backward) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_ESTATE);
  CHECK_RC(lds_pages_refresh(f.rt, cell), LDS_ESTATE);
  CHECK_RC(lds_pages_has_more(f.rt, cell, 1), 0);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  HOST_WAIT(&f.h, 1);
  /* The first page loads: no cursor yet either way. */
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_ESTATE);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_ESTATE);
  size_t loading = WAIT_EVENT(&rec, 0, 0, LDS_LOADING, 0);
  CHECK_EQ(rec_at(&rec, loading)->cell, cell);
  CHECK_BYTES(rec_at(&rec, loading)->request, rec_at(&rec, loading)->request_len, "q");
  CHECK_EQ(page_count(f.rt, cell), 1);
  lds_page_request r = job_request(&f.h, 0);
  check_cursor(&r, NULL, 0);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 0), "p0", "c1", "c0"), LDS_OK);
  size_t e = WAIT_EVENT(&rec, 0, 0, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "p0");
  CHECK_BYTES(rec_at(&rec, e)->request, rec_at(&rec, e)->request_len, "q");
  CHECK_RC(lds_pages_has_more(f.rt, cell, 1), 1);

  /* Next page: asked twice while it loads, one job. */
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 2);
  WAIT_EVENT(&rec, events, 1, LDS_LOADING, 0);
  CHECK_EQ(page_count(f.rt, cell), 1);
  r = job_request(&f.h, 1);
  CHECK_BYTES(r.request, r.request_len, "q");
  check_cursor(&r, "c1", 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "p1", "c2", "c0b"), LDS_OK);
  e = WAIT_EVENT(&rec, events, 1, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "p1");
  CHECK_EQ(f.h.starts, 2);

  /* The third page is the last: no next cursor. */
  next_page(&f, cell, &rec, "c2", "p2", NULL, "c1", 2);
  CHECK_EQ(page_count(f.rt, cell), 3);
  CHECK_RC(lds_pages_has_more(f.rt, cell, 1), 0);
  CHECK_RC(lds_pages_has_more(f.rt, cell, -1), 1);
  CHECK_RC(lds_pages_has_more(f.rt, cell, 0), LDS_EINVAL);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_ESTATE);

  /* One page backward, with the first page's previous cursor, at index 0. */
  events = rec_count(&rec);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 4);
  WAIT_EVENT(&rec, events, 0, LDS_LOADING, LDS_FLAG_PAGE_PREVIOUS);
  r = job_request(&f.h, 3);
  check_cursor(&r, "c0", -1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 3), "p-1", "c0x", NULL), LDS_OK);
  e = WAIT_EVENT(&rec, events, 0, LDS_LOADED, LDS_FLAG_PAGE_PREVIOUS);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "p-1");
  CHECK_EQ(rec_at(&rec, e)->flags & LDS_FLAG_PAGES_DROPPED, 0);
  CHECK_EQ(page_count(f.rt, cell), 4);
  check_page(f.rt, cell, 0, LDS_LOADED, "p-1");
  check_page(f.rt, cell, 1, LDS_LOADED, "p0");
  check_page(f.rt, cell, 3, LDS_LOADED, "p2");
  lds_snapshot s;
  CHECK_RC(lds_pages_get(f.rt, cell, 4, &s), LDS_ENOENT);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_ESTATE);
  /* Event numbers grow one by one over every page. */
  for (size_t i = 0; i < rec_count(&rec); i++) CHECK_EQ(rec_at(&rec, i)->seq, i + 1);

  CHECK_RC(lds_pages_reset(f.rt, cell), LDS_OK);
  events = rec_count(&rec);
  WAIT_EVENT(&rec, events, 0, LDS_ABSENT, 0);
  CHECK_EQ(page_count(f.rt, cell), 0);
  CHECK_RC(lds_pages_refresh(f.rt, cell), LDS_ESTATE);
  CHECK_RC(lds_pages_free(f.rt, cell), LDS_OK);
  CHECK_RC(lds_pages_free(f.rt, cell), LDS_ENOENT);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_cap_drops_from_the_other_end) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 2);
  load_first(&f, cell, &rec, NULL);
  size_t e = next_page(&f, cell, &rec, "c1", "p1", "c2", "c0", 1);
  CHECK_EQ(rec_at(&rec, e)->flags & LDS_FLAG_PAGES_DROPPED, 0);
  /* A third page drops the first. */
  e = next_page(&f, cell, &rec, "c2", "p2", "c3", "c1", 1);
  CHECK(rec_at(&rec, e)->flags & LDS_FLAG_PAGES_DROPPED);
  CHECK_EQ(page_count(f.rt, cell), 2);
  check_page(f.rt, cell, 0, LDS_LOADED, "p1");
  check_page(f.rt, cell, 1, LDS_LOADED, "p2");
  /* Backward again: the last page goes. */
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 4);
  lds_page_request r = job_request(&f.h, 3);
  check_cursor(&r, "c0", -1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 3), "p0", "c1", NULL), LDS_OK);
  e = WAIT_EVENT(&rec, events, 0, LDS_LOADED, LDS_FLAG_PAGE_PREVIOUS | LDS_FLAG_PAGES_DROPPED);
  CHECK_EQ(page_count(f.rt, cell), 2);
  check_page(f.rt, cell, 0, LDS_LOADED, "p0");
  check_page(f.rt, cell, 1, LDS_LOADED, "p1");
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_ESTATE);

  lds_pages_options bad = LDS_PAGES_OPTIONS_INIT;
  bad.on_event = rec_on_event;
  bad.max_pages = LDS_PAGES_MAX + 1;
  lds_id other;
  CHECK_RC(lds_pages_new(f.rt, &bad, &other), LDS_EINVAL);
  bad.max_pages = LDS_PAGES_MAX;
  bad.on_event = NULL;
  CHECK_RC(lds_pages_new(f.rt, &bad, &other), LDS_EINVAL);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_refresh_in_order_stops_at_changed_cursor) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  load_first(&f, cell, &rec, NULL);
  next_page(&f, cell, &rec, "c1", "p1", "c2", "c0", 1);
  next_page(&f, cell, &rec, "c2", "p2", "c3", "c1", 2);
  next_page(&f, cell, &rec, "c3", "p3", NULL, "c2", 3);
  CHECK_EQ(f.h.starts, 4);

  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_refresh(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 5);
  /* Silent: page 0 stays visible, flagged refreshing. */
  WAIT_EVENT(&rec, events, 0, LDS_LOADED, LDS_FLAG_REFRESHING);
  lds_page_request r = job_request(&f.h, 4);
  check_cursor(&r, NULL, 0);
  /* Page 1 is not asked for while page 0 reloads (a short look: nothing may come). */
  struct timespec pause = {0, 30 * 1000 * 1000};
  nanosleep(&pause, NULL);
  CHECK_EQ(f.h.starts, 5);
  CHECK_EQ(page_count(f.rt, cell), 4);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 4), "p0 new", "c1", "c0"), LDS_OK);
  size_t page0 = WAIT_EVENT(&rec, events, 0, LDS_LOADED, 0);
  /* Only then page 1, with the cursor page 0 returned. */
  HOST_WAIT(&f.h, 6);
  harness_lock();
  long refreshing1 = find_event(&rec, page0, 1, LDS_LOADED, LDS_FLAG_REFRESHING);
  harness_unlock();
  CHECK(refreshing1 > (long)page0);
  r = job_request(&f.h, 5);
  check_cursor(&r, "c1", 1);
  /* Page 1 now returns another next cursor: pages 2 and 3 are dropped. */
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 5), "p1 new", "other", "c0"), LDS_OK);
  size_t e = WAIT_EVENT(&rec, page0, 1, LDS_LOADED, LDS_FLAG_PAGES_DROPPED);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "p1 new");
  CHECK_EQ(page_count(f.rt, cell), 2);
  check_page(f.rt, cell, 0, LDS_LOADED, "p0 new");
  check_page(f.rt, cell, 1, LDS_LOADED, "p1 new");
  nanosleep(&pause, NULL);
  CHECK_EQ(f.h.starts, 6);
  /* The list goes on from the new cursor. */
  next_page(&f, cell, &rec, "other", "p2 new", NULL, "c1", 2);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_refresh_to_the_end) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  load_first(&f, cell, &rec, NULL);
  next_page(&f, cell, &rec, "c1", "p1", NULL, "c0", 1);
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_refresh(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 3);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 2), "p0 b", "c1", "c0"), LDS_OK);
  HOST_WAIT(&f.h, 4);
  /* Page 1 reloads silently too. */
  WAIT_EVENT(&rec, events, 1, LDS_LOADED, LDS_FLAG_REFRESHING);
  lds_page_request r = job_request(&f.h, 3);
  check_cursor(&r, "c1", 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 3), "p1 b", NULL, "c0"), LDS_OK);
  size_t e = WAIT_EVENT(&rec, events, 1, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "p1 b");
  CHECK_EQ(rec_at(&rec, e)->flags & LDS_FLAG_PAGES_DROPPED, 0);
  CHECK_EQ(page_count(f.rt, cell), 2);
  /* Nothing was shown as LOADING during the refresh. */
  harness_lock();
  CHECK_EQ(find_event(&rec, events, 0, LDS_LOADING, 0), -1);
  CHECK_EQ(find_event(&rec, events, 1, LDS_LOADING, 0), -1);
  harness_unlock();
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_failed_next_page_leaves_the_others) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  load_first(&f, cell, &rec, NULL);
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 2);
  CHECK_RC(lds_job_fail_final(f.rt, host_job_at(&f.h, 1), 42, "down"), LDS_OK);
  size_t e = WAIT_EVENT(&rec, events, 1, LDS_ERROR, 0);
  CHECK_EQ(rec_at(&rec, e)->error_code, 42);
  CHECK_EQ(page_count(f.rt, cell), 1);
  check_page(f.rt, cell, 0, LDS_LOADED, "p0");
  /* It may be asked for again. */
  next_page(&f, cell, &rec, "c1", "p1", NULL, "c0", 1);
  CHECK_EQ(page_count(f.rt, cell), 2);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_cancel_running_next_page) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  load_first(&f, cell, &rec, NULL);
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 2);
  WAIT_EVENT(&rec, events, 1, LDS_LOADING, 0);
  CHECK_RC(lds_pages_cancel(f.rt, cell), LDS_OK);
  WAIT_EVENT(&rec, events, 1, LDS_ABSENT, LDS_FLAG_CANCELLED);
  CHECK_RC(lds_job_is_cancelled(f.rt, host_job_at(&f.h, 1)), 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "late", NULL, NULL), LDS_ECANCELED);
  CHECK_EQ(page_count(f.rt, cell), 1);
  check_page(f.rt, cell, 0, LDS_LOADED, "p0");
  next_page(&f, cell, &rec, "c1", "p1", NULL, "c0", 1);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_cache_per_page_with_cursors) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_id cache;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 60000;
  recorder a, b;
  lds_id first = pages_new(f.rt, &a, 0);
  load_first(&f, first, &a, &o);
  next_page(&f, first, &a, "c1", "p1", "c2", "c0", 1);
  /* Each page has its own entry: the load's key, a 0 byte, the cursor. */
  lds_cache_value v;
  REQUIRE_RC(lds_cache_get(f.rt, cache, "q\0c1", 4, &v), 1);
  lds_cache_value_clear(&v);
  REQUIRE_RC(lds_cache_get(f.rt, cache, "q\0", 2, &v), 1);
  lds_cache_value_clear(&v);

  /* A second cell gets both pages from the cache, cursors included. */
  lds_id second = pages_new(f.rt, &b, 0);
  CHECK_RC(lds_pages_load(f.rt, second, f.loader, "q", 1, &o), LDS_OK);
  size_t e = WAIT_EVENT(&b, 0, 0, LDS_LOADED, LDS_FLAG_FROM_CACHE);
  CHECK_BYTES(rec_at(&b, e)->value, rec_at(&b, e)->value_len, "p0");
  CHECK_RC(lds_pages_load_next(f.rt, second), LDS_OK);
  e = WAIT_EVENT(&b, e, 1, LDS_LOADED, LDS_FLAG_FROM_CACHE);
  CHECK_BYTES(rec_at(&b, e)->value, rec_at(&b, e)->value_len, "p1");
  CHECK_EQ(f.h.starts, 2);
  /* The third page is not cached: it loads with the cached page's cursor. */
  size_t events = rec_count(&b);
  CHECK_RC(lds_pages_load_next(f.rt, second), LDS_OK);
  HOST_WAIT(&f.h, 3);
  lds_page_request r = job_request(&f.h, 2);
  check_cursor(&r, "c2", 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 2), "p2", NULL, "c1"), LDS_OK);
  WAIT_EVENT(&b, events, 2, LDS_LOADED, 0);

  /* Invalidating the load's key reaches every page of both cells: they reload. */
  size_t starts = f.h.starts;
  CHECK_RC(lds_cache_invalidate(f.rt, cache, "q", 1), LDS_OK);
  HOST_WAIT(&f.h, starts + 5);
  fixture_finish(&f);
  rec_destroy(&a);
  rec_destroy(&b);
}

TEST(test_pages_share_one_job_per_page) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SHARE;
  recorder a, b;
  lds_id one = pages_new(f.rt, &a, 0);
  lds_id two = pages_new(f.rt, &b, 0);
  CHECK_RC(lds_pages_load(f.rt, one, f.loader, "q", 1, &o), LDS_OK);
  WAIT_EVENT(&a, 0, 0, LDS_LOADING, 0);
  CHECK_RC(lds_pages_load(f.rt, two, f.loader, "q", 1, &o), LDS_OK);
  WAIT_EVENT(&b, 0, 0, LDS_LOADING, 0);
  HOST_WAIT(&f.h, 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 0), "p0", "c1", NULL), LDS_OK);
  WAIT_EVENT(&a, 0, 0, LDS_LOADED, 0);
  WAIT_EVENT(&b, 0, 0, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 1);
  size_t ea = rec_count(&a), eb = rec_count(&b);
  CHECK_RC(lds_pages_load_next(f.rt, one), LDS_OK);
  WAIT_EVENT(&a, ea, 1, LDS_LOADING, 0);
  CHECK_RC(lds_pages_load_next(f.rt, two), LDS_OK);
  WAIT_EVENT(&b, eb, 1, LDS_LOADING, 0);
  HOST_WAIT(&f.h, 2);
  lds_page_request r = job_request(&f.h, 1);
  check_cursor(&r, "c1", 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "p1", NULL, "c0"), LDS_OK);
  WAIT_EVENT(&a, ea, 1, LDS_LOADED, 0);
  WAIT_EVENT(&b, eb, 1, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 2);
  check_page(f.rt, two, 1, LDS_LOADED, "p1");
  fixture_finish(&f);
  rec_destroy(&a);
  rec_destroy(&b);
}

TEST(test_pages_bad_values_are_errors) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  /* A truncated encoded value. */
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  HOST_WAIT(&f.h, 1);
  static const char bad[] = {0, 'L', 'P', 'V', 9, 0, 0, 0, 'x'};
  CHECK_RC(lds_job_succeed(f.rt, host_job_at(&f.h, 0), bad, sizeof bad), LDS_OK);
  size_t e = WAIT_EVENT(&rec, 0, 0, LDS_ERROR, 0);
  CHECK_EQ(rec_at(&rec, e)->error_domain, LDS_DOMAIN_LOADSTATE);
  CHECK_EQ(rec_at(&rec, e)->error_code, LDS_EINVAL);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_ESTATE);

  /* A plain value is a page without cursors. */
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  HOST_WAIT(&f.h, 2);
  CHECK_RC(lds_job_succeed(f.rt, host_job_at(&f.h, 1), "plain", 5), LDS_OK);
  e = WAIT_EVENT(&rec, events, 0, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&rec, e)->value, rec_at(&rec, e)->value_len, "plain");
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_ESTATE);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_ESTATE);

  /* A cursor past LDS_CURSOR_MAX fails the page. */
  events = rec_count(&rec);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  HOST_WAIT(&f.h, 3);
  static char big[LDS_CURSOR_MAX + 1];
  memset(big, 'c', sizeof big);
  CHECK_RC(lds_job_succeed_page(f.rt, host_job_at(&f.h, 2), "v", 1, big, sizeof big, NULL, 0), LDS_ETOOBIG);
  e = WAIT_EVENT(&rec, events, 0, LDS_ERROR, 0);
  CHECK_EQ(rec_at(&rec, e)->error_code, LDS_ETOOBIG);

  /* Requests that do not decode. */
  lds_page_request r;
  CHECK_RC(lds_page_request_decode("nope", 4, &r), LDS_EINVAL);
  CHECK_RC(lds_page_request_decode(NULL, 3, &r), LDS_EINVAL);
  CHECK_RC(lds_page_request_decode(bad, sizeof bad, &r), LDS_EINVAL);
  static const char truncated[] = {0, 'L', 'P', 'Q', 1, 5, 0, 0, 0, 'a'};
  CHECK_RC(lds_page_request_decode(truncated, sizeof truncated, &r), LDS_EINVAL);
  static const char direction[] = {0, 'L', 'P', 'Q', 7, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  CHECK_RC(lds_page_request_decode(direction, sizeof direction, &r), LDS_EINVAL);
  static const char ok[] = {0, 'L', 'P', 'Q', 1, 1, 0, 0, 0, 'a', 0, 0, 0, 0};
  CHECK_RC(lds_page_request_decode(ok, sizeof ok, &r), LDS_OK);
  CHECK_BYTES(r.request, r.request_len, "a");
  CHECK(r.cursor != NULL);
  CHECK_EQ(r.cursor_len, 0);
  CHECK_EQ(r.direction, 1);
  CHECK_RC(lds_page_request_decode(ok, sizeof ok - 1, &r), LDS_EINVAL);
  CHECK_RC(lds_job_succeed_page(f.rt, 12345, "v", 1, NULL, 3, NULL, 0), LDS_EINVAL);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_poll_delivery_carries_page_flags) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 1);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  POLL_UNTIL(f.rt, f.h.starts >= 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 0), "p0", NULL, "c0"), LDS_OK);
  POLL_UNTIL(f.rt, find_event(&rec, 0, 0, LDS_LOADED, 0) >= 0);
  CHECK_RC(lds_pages_load_previous(f.rt, cell), LDS_OK);
  POLL_UNTIL(f.rt, f.h.starts >= 2);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "p-1", "c1", NULL), LDS_OK);
  POLL_UNTIL(f.rt, find_event(&rec, 0, 0, LDS_LOADED, LDS_FLAG_PAGE_PREVIOUS | LDS_FLAG_PAGES_DROPPED) >= 0);
  CHECK_EQ(page_count(f.rt, cell), 1);
  check_page(f.rt, cell, 0, LDS_LOADED, "p-1");
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_bad_arguments) {
  fixture f;
  fixture_init_cancels(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  lds_pages_options o = LDS_PAGES_OPTIONS_INIT;
  o.on_event = rec_on_event;
  lds_id out;
  CHECK_RC(lds_pages_new(NULL, &o, &out), LDS_EINVAL);
  CHECK_RC(lds_pages_new(f.rt, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_pages_new(f.rt, &o, NULL), LDS_EINVAL);
  o.size = 8;
  CHECK_RC(lds_pages_new(f.rt, &o, &out), LDS_EINVAL);
  o.size = sizeof o;
  o.name = "bad\nname";
  CHECK_RC(lds_pages_new(f.rt, &o, &out), LDS_EINVAL);
  CHECK_RC(lds_pages_load(NULL, cell, f.loader, "q", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, NULL, 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_pages_load(f.rt, cell, 12345, "q", 1, NULL), LDS_ENOENT);
  CHECK_RC(lds_pages_load(f.rt, f.cell, f.loader, "q", 1, NULL), LDS_ENOENT); /* a loadable cell */
  CHECK_RC(lds_loadable_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_ENOENT); /* not a loadable cell */
  lds_load_options bad = LDS_LOAD_OPTIONS_INIT;
  bad.flags = 1u << 30;
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, &bad), LDS_EINVAL);
  size_t n;
  CHECK_RC(lds_pages_count(f.rt, cell, NULL), LDS_EINVAL);
  CHECK_RC(lds_pages_count(NULL, cell, &n), LDS_EINVAL);
  CHECK_RC(lds_pages_count(f.rt, 12345, &n), LDS_ENOENT);
  lds_snapshot s;
  CHECK_RC(lds_pages_get(f.rt, cell, 0, NULL), LDS_EINVAL);
  CHECK_RC(lds_pages_get(f.rt, cell, 0, &s), LDS_ENOENT);
  CHECK_RC(lds_pages_get(f.rt, cell, (size_t)-1, &s), LDS_ENOENT);
  CHECK_RC(lds_pages_load_next(f.rt, 12345), LDS_ENOENT);
  CHECK_RC(lds_pages_load_previous(NULL, cell), LDS_EINVAL);
  CHECK_RC(lds_pages_refresh(f.rt, 12345), LDS_ENOENT);
  CHECK_RC(lds_pages_cancel(f.rt, 12345), LDS_ENOENT);
  CHECK_RC(lds_pages_reset(f.rt, 12345), LDS_ENOENT);
  CHECK_RC(lds_pages_has_more(f.rt, 12345, 1), LDS_ENOENT);
  CHECK_RC(lds_page_request_decode("x", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_job_succeed_page(NULL, 1, "v", 1, NULL, 0, NULL, 0), LDS_EINVAL);
  CHECK_RC(lds_pages_free(f.rt, f.cell), LDS_ENOENT);
  /* Freed while its first page loads: the job is cancelled, no event follows. */
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, NULL), LDS_OK);
  HOST_WAIT(&f.h, 1);
  CHECK_RC(lds_pages_free(f.rt, cell), LDS_OK);
  size_t events = rec_count(&rec);
  lds_id job = host_job_at(&f.h, 0);
  WAIT_FOR(loader_cancel_count(&f.hooks, job) == 1);
  CHECK_RC(lds_job_is_cancelled(f.rt, job), 1);
  CHECK_EQ(rec_count(&rec), events);
  CHECK_RC(lds_pages_count(f.rt, cell, &n), LDS_ENOENT);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_retry_a_page_with_its_cursor) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.retries = 1;
  o.retry_base_ms = 1;
  o.retry_max_ms = 1;
  load_first(&f, cell, &rec, &o);
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 2);
  CHECK_RC(lds_job_fail(f.rt, host_job_at(&f.h, 1), 5, "once"), LDS_OK);
  /* The retry asks for the same page. */
  HOST_WAIT(&f.h, 3);
  lds_page_request r = job_request(&f.h, 2);
  check_cursor(&r, "c1", 1);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 2), "p1", NULL, "c0"), LDS_OK);
  size_t e = WAIT_EVENT(&rec, events, 1, LDS_LOADED, 0);
  CHECK_EQ(rec_at(&rec, e)->attempt, 2);
  harness_lock();
  CHECK_EQ(find_event(&rec, events, 1, LDS_ERROR, 0), -1);
  harness_unlock();
  CHECK_EQ(page_count(f.rt, cell), 2);
  fixture_finish(&f);
  rec_destroy(&rec);
}

TEST(test_pages_progress_carries_the_page_index) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  load_first(&f, cell, &rec, NULL);
  CHECK_RC(lds_pages_load_next(f.rt, cell), LDS_OK);
  HOST_WAIT(&f.h, 2);
  CHECK_RC(lds_job_progress(f.rt, host_job_at(&f.h, 1), 3, 10), LDS_OK);
  WAIT_FOR(rec_last(&rec) != NULL && rec_last(&rec)->type == LDS_EVENT_PROGRESS);
  const lds_event *e = rec_last(&rec);
  CHECK_EQ(e->kind, 1);
  CHECK_EQ(e->progress_done, 3);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "p1", NULL, NULL), LDS_OK);
  WAIT_EVENT(&rec, 0, 1, LDS_LOADED, 0);

  /* Without progress events. */
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_NO_PROGRESS;
  size_t events = rec_count(&rec);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, &o), LDS_OK);
  HOST_WAIT(&f.h, 3);
  CHECK_RC(lds_job_progress(f.rt, host_job_at(&f.h, 2), 1, 2), LDS_OK);
  CHECK_RC(succeed_page(f.rt, host_job_at(&f.h, 2), "again", NULL, NULL), LDS_OK);
  WAIT_EVENT(&rec, events, 0, LDS_LOADED, 0);
  for (size_t i = events; i < rec_count(&rec); i++) CHECK(rec_at(&rec, i)->type != LDS_EVENT_PROGRESS);
  fixture_finish(&f);
  rec_destroy(&rec);
}

/* Each lds_pages_load has exactly one event flagged LDS_FLAG_PAGES_LOAD,
 * its first page's first event, before any other of its events: a load
 * asked for before the one before it ended its first page is told apart
 * from it, and the earlier load's page shows nothing after that. */
TEST(test_pages_each_load_has_one_start_event) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  REQUIRE_RC(lds_pages_load(f.rt, cell, f.loader, "A", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(lds_pages_load(f.rt, cell, f.loader, "B", 1, NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  lds_page_request r = job_request(&f.h, 1);
  CHECK_BYTES(r.request, r.request_len, "B");
  /* A's job was cancelled with its page: what it ends with shows nothing. */
  (void)succeed_page(f.rt, host_job_at(&f.h, 0), "pA", NULL, NULL);
  REQUIRE_RC(succeed_page(f.rt, host_job_at(&f.h, 1), "pB", NULL, NULL), LDS_OK);
  size_t done = WAIT_EVENT(&rec, 0, 0, LDS_LOADED, 0);
  const lds_event *loaded = rec_at(&rec, done);
  CHECK_BYTES(loaded->value, loaded->value_len, "pB");
  CHECK_BYTES(loaded->request, loaded->request_len, "B");
  CHECK_EQ(loaded->flags & LDS_FLAG_PAGES_LOAD, 0);
  /* The events: A's start, B's start, B's page; nothing of A's page. */
  CHECK_EQ(rec_count(&rec), 3);
  size_t starts = 0;
  for (size_t i = 0; i < rec_count(&rec); i++) {
    const lds_event *e = rec_at(&rec, i);
    if (!(e->flags & LDS_FLAG_PAGES_LOAD)) continue;
    CHECK_EQ(e->status, LDS_LOADING);
    CHECK_EQ(e->kind, 0);
    CHECK_BYTES(e->request, e->request_len, starts == 0 ? "A" : "B");
    CHECK_EQ(i, starts);
    starts++;
  }
  CHECK_EQ(starts, 2);
  CHECK_RC(lds_pages_free(f.rt, cell), LDS_OK);
  fixture_finish(&f);
  rec_destroy(&rec);
}

/* lds_pages_load and lds_prefetch show no placeholder, but refuse a bad one
 * as lds_loadable_load does: NULL with a length is LDS_EINVAL, more than
 * LDS_VALUE_MAX bytes LDS_ETOOBIG; nothing starts. (lds_pages_load once
 * accepted a NULL placeholder with a length; lds_prefetch did not look at
 * the placeholder at all.) */
TEST(test_pages_load_and_prefetch_refuse_a_bad_placeholder) {
  fixture f;
  fixture_init_cancels(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec;
  lds_id cell = pages_new(f.rt, &rec, 0);
  lds_id cache;
  CHECK_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.placeholder = NULL;
  o.placeholder_len = 2;
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, &o), LDS_EINVAL);
  CHECK_RC(lds_loadable_load(f.rt, f.cell, f.loader, "q", 1, &o), LDS_EINVAL);
  o.cache = cache;
  CHECK_RC(lds_prefetch(f.rt, f.loader, "q", 1, &o), LDS_EINVAL);
  o.placeholder = "x";
  o.placeholder_len = LDS_VALUE_MAX + 1;
  CHECK_RC(lds_prefetch(f.rt, f.loader, "q", 1, &o), LDS_ETOOBIG);
  o.cache = 0;
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, &o), LDS_ETOOBIG);
  /* A caller whose size ends before the placeholder has none. */
  o.placeholder = NULL;
  o.placeholder_len = 2;
  o.size = (uint32_t)offsetof(lds_load_options, placeholder);
  CHECK_RC(lds_pages_load(f.rt, cell, f.loader, "q", 1, &o), LDS_OK);
  HOST_WAIT(&f.h, 1);
  /* Only that load started a job. */
  CHECK_EQ(f.h.starts, 1);
  CHECK_RC(lds_pages_cancel(f.rt, cell), LDS_OK);
  CHECK_RC(lds_pages_free(f.rt, cell), LDS_OK);
  fixture_finish(&f);
  rec_destroy(&rec);
}
