/* test_poll.c — LDS_DELIVER_POLL: lds_runtime_fd and lds_runtime_dispatch. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <sched.h>
#include <string.h>

#include "harness.h"

/* Waits (poll, no dispatch) until the runtime's fd is readable. */
static bool wait_readable(lds_runtime *rt) {
  struct pollfd p = {.fd = lds_runtime_fd(rt), .events = POLLIN};
  int n = poll(&p, 1, test_slow() ? 120000 : 10000);
  return n == 1 && (p.revents & POLLIN);
}

static bool readable_now(lds_runtime *rt) {
  struct pollfd p = {.fd = lds_runtime_fd(rt), .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

TEST(test_poll_callbacks_run_on_the_dispatching_thread) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  int fd = lds_runtime_fd(f.rt);
  CHECK(fd >= 0);
  CHECK_EQ(lds_runtime_fd(f.rt), fd);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(wait_readable(f.rt));
  /* Nothing runs until the host dispatches. */
  CHECK_EQ(rec_count(&f.rec), 0);
  CHECK_EQ(f.h.starts, 0);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 1 && f.h.starts >= 1));
  CHECK(pthread_equal(rec_thread(&f.rec, 0), pthread_self()));
  CHECK(pthread_equal(host_job_info(&f.h, 0)->thread, pthread_self()));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "v1"), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 2));
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "v1");
  CHECK(pthread_equal(rec_thread(&f.rec, 1), pthread_self()));
  fixture_finish(&f);
}

TEST(test_poll_fd_readable_only_while_callbacks_pending) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, host_succeed_echo);
  CHECK(!readable_now(f.rt));
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 2));
  CHECK(!readable_now(f.rt));
  CHECK_EQ(lds_runtime_dispatch(f.rt, 0), 0);
  REQUIRE_RC(fx_set_loaded(&f, "again"), LDS_OK);
  REQUIRE(wait_readable(f.rt));
  CHECK_EQ(lds_runtime_dispatch(f.rt, 0), 1);
  CHECK(!readable_now(f.rt));
  CHECK_EQ(rec_count(&f.rec), 3);
  fixture_finish(&f);
}

TEST(test_poll_dispatch_max_events) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE(fx_publish(&f, 4, "v"));
  REQUIRE(wait_readable(f.rt));
  CHECK_EQ(lds_runtime_dispatch(f.rt, 1), 1);
  CHECK_EQ(rec_count(&f.rec), 1);
  CHECK(readable_now(f.rt));
  CHECK_EQ(lds_runtime_dispatch(f.rt, 2), 2);
  CHECK_EQ(rec_count(&f.rec), 3);
  CHECK_EQ(lds_runtime_dispatch(f.rt, -1), 1);
  CHECK_EQ(rec_count(&f.rec), 4);
  CHECK_EQ(lds_runtime_dispatch(f.rt, 5), 0);
  CHECK(!readable_now(f.rt));
  fixture_finish(&f);
}

static int nested_rc = 1, free_rc = 1;

static void nested_dispatch(recorder *rec, const lds_event *e) {
  (void)e;
  int n = lds_runtime_dispatch(rec->rt, 0);
  int f = lds_runtime_free(rec->rt);
  harness_lock();
  nested_rc = n;
  free_rc = f;
  harness_unlock();
}

TEST(test_poll_nested_dispatch_and_free_return_estate) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  f.rec.action = nested_dispatch;
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 1));
  CHECK_EQ(nested_rc, LDS_ESTATE);
  CHECK_EQ(free_rc, LDS_ESTATE);
  fixture_finish(&f);
}

typedef struct concurrent {
  lds_runtime *rt;
  bool go;
  int rc;
  bool done;
} concurrent;

static void *dispatch_elsewhere(void *arg) {
  concurrent *c = arg;
  WAIT_FOR(c->go);
  int rc = lds_runtime_dispatch(c->rt, 0);
  harness_lock();
  c->rc = rc;
  c->done = true;
  harness_notify();
  harness_unlock();
  return NULL;
}

static void block_until_other_dispatched(recorder *rec, const lds_event *e) {
  (void)e;
  concurrent *c = rec->data;
  harness_lock();
  c->go = true;
  harness_notify();
  harness_unlock();
  WAIT_FOR(c->done);
}

TEST(test_poll_concurrent_dispatch_returns_estate) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  concurrent c = {.rt = f.rt, .rc = 1};
  f.rec.action = block_until_other_dispatched;
  f.rec.data = &c;
  pthread_t other = thread_start(dispatch_elsewhere, &c);
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 1));
  thread_join(other);
  CHECK_EQ(c.rc, LDS_ESTATE);
  fixture_finish(&f);
}

TEST(test_poll_dispatch_and_fd_in_loop_mode_are_estate) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  CHECK_RC(lds_runtime_fd(rt), LDS_ESTATE);
  CHECK_RC(lds_runtime_dispatch(rt, 0), LDS_ESTATE);
  CHECK_RC(lds_runtime_dispatch(rt, 1), LDS_ESTATE);
  rt_free(rt);
}

TEST(test_poll_runtime_free_runs_hooks_and_free_data_on_calling_thread) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_load(&f, "r1", NULL), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.h.starts >= 1));
  lds_id job = host_job_at(&f.h, 0);
  REQUIRE_RC(hook_add(f.rt, job, &f.hooks, 1), LDS_OK);
  /* An event left undelivered is dropped. */
  REQUIRE_RC(fx_yield(&f, job, "p"), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 2));
  rt_free(f.rt);
  CHECK_EQ(rec_count(&f.rec), 1);
  CHECK_EQ(f.h.free_data_calls, 1);
  CHECK_EQ(f.hooks.count, 1);
  CHECK(pthread_equal(f.hooks.entries[0].thread, pthread_self()));
  CHECK(pthread_equal(f.h.free_data_thread, pthread_self()));
  rec_destroy(&f.rec);
  host_destroy(&f.h);
}

static void free_cell_in_callback(recorder *rec, const lds_event *e) {
  CHECK_RC(lds_loadable_free(rec->rt, e->cell), LDS_OK);
  rec_close(rec);
}

TEST(test_poll_free_cell_from_callback_drops_its_queued_events) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  f.rec.action = free_cell_in_callback;
  recorder other;
  rec_init(&other, f.rt);
  lds_id fence = cell_new(f.rt, &other);
  REQUIRE(fx_publish(&f, 3, "v"));
  REQUIRE_RC(lds_loadable_set_loaded(f.rt, fence, "x", 1), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, other.count >= 1));
  CHECK_EQ(rec_count(&f.rec), 1);
  fixture_finish(&f);
  rec_destroy(&other);
}

TEST(test_poll_free_cell_from_another_thread_stops_later_events) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 1));
  REQUIRE_RC(fx_set_loaded(&f, "w"), LDS_OK);
  REQUIRE(wait_published(f.rt, f.cell, 2));
  REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK);
  /* Not the delivery thread here, but no dispatch is running: nothing of
   * the cell starts after free returned. */
  CHECK_EQ(lds_runtime_dispatch(f.rt, 0) >= 0, 1);
  CHECK_EQ(rec_count(&f.rec), 1);
  fixture_finish(&f);
}

/* A callback that counts its calls, for the descriptor lifecycle tests. */
static void count_event(const lds_event *e, void *user_data) {
  (void)e;
  (*(int *)user_data)++;
}

/* A POLL-mode runtime with `flags` whose descriptor is readable (one event
 * pending, not dispatched). Returns the descriptor. */
static int new_pending_runtime(uint32_t flags, int *events, lds_runtime **out) {
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.delivery = LDS_DELIVER_POLL;
  opts.flags = flags;
  *out = NULL;
  if (lds_runtime_new(&opts, out) != LDS_OK) return -1;
  lds_id cell = 0;
  if (lds_loadable_new(*out, count_event, events, &cell) != LDS_OK) return -1;
  if (lds_loadable_set_loaded(*out, cell, "v", 1) != LDS_OK) return -1;
  return lds_runtime_fd(*out);
}

TEST(test_poll_keep_fd_leaves_a_valid_quiet_descriptor_after_free) {
  int events = 0;
  lds_runtime *rt = NULL;
  int fd = new_pending_runtime(LDS_RUNTIME_KEEP_FD, &events, &rt);
  REQUIRE(fd >= 0);
  /* Readable before the free: the test below would pass for a descriptor
   * that never became readable otherwise. */
  REQUIRE(wait_readable(rt));
  REQUIRE_RC(lds_runtime_free(rt), LDS_OK);
  CHECK_EQ(events, 0);
  /* Still open, close-on-exec as made. */
  int fdflags = fcntl(fd, F_GETFD);
  CHECK(fdflags >= 0);
  CHECK(fdflags & FD_CLOEXEC);
  /* Drained at the free, and nothing writes to it any more. */
  struct pollfd p = {.fd = fd, .events = POLLIN};
  CHECK_EQ(poll(&p, 1, 200), 0);
  CHECK_EQ(p.revents, 0);
  /* The host closes it, once. */
  CHECK_EQ(close(fd), 0);
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
}

TEST(test_poll_without_keep_fd_free_closes_the_descriptor) {
  int events = 0;
  lds_runtime *rt = NULL;
  int fd = new_pending_runtime(0, &events, &rt);
  REQUIRE(fd >= 0);
  REQUIRE(wait_readable(rt));
  CHECK(fcntl(fd, F_GETFD) >= 0);
  REQUIRE_RC(lds_runtime_free(rt), LDS_OK);
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
}

TEST(test_poll_keep_fd_runtime_works_until_free) {
  int events = 0;
  lds_runtime *rt = NULL;
  int fd = new_pending_runtime(LDS_RUNTIME_KEEP_FD, &events, &rt);
  REQUIRE(fd >= 0);
  REQUIRE(POLL_UNTIL(rt, events >= 1));
  CHECK(!readable_now(rt));
  REQUIRE_RC(lds_runtime_free(rt), LDS_OK);
  CHECK_EQ(close(fd), 0);
}

TEST(test_poll_keep_fd_in_loop_mode_is_einval) {
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.flags = LDS_RUNTIME_KEEP_FD;
  lds_runtime *rt = NULL;
  CHECK_RC(lds_runtime_new(&opts, &rt), LDS_EINVAL);
  CHECK(rt == NULL);
  opts.flags = 1u << 2;  /* not a flag */
  opts.delivery = LDS_DELIVER_POLL;
  CHECK_RC(lds_runtime_new(&opts, &rt), LDS_EINVAL);
}
