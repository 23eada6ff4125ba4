/* test_backpressure.c — what host threads can queue for a busy loop thread:
 * calls that change nothing are coalesced, and past LDS_QUEUE_MAX waiting
 * operations a call returns LDS_EAGAIN instead of growing the queue. The
 * loop thread is held busy by a loader whose start function waits for the
 * test to open a gate. */
#include <string.h>

#include "harness.h"

/* Guarded by the harness lock. */
static bool gate_open;
static bool loop_blocked;

/* A start function that keeps the loop thread until the gate opens. */
static void block_loop(host *h, lds_id job, const void *request, size_t len) {
  (void)h; (void)job; (void)request; (void)len;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 120;
  harness_lock();
  loop_blocked = true;
  harness_notify();
  while (!gate_open && harness_wait(&deadline)) {
  }
  harness_unlock();
}

static void open_gate(void) {
  harness_lock();
  gate_open = true;
  harness_notify();
  harness_unlock();
}

/* A fixture on a runtime with the given queue limit (0: the default)
 * whose loop thread is inside block_loop when it returns. */
static bool block(fixture *f, uint32_t queue_max) {
  gate_open = false;
  loop_blocked = false;
  memset(f, 0, sizeof *f);
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.queue_max = queue_max;
  if (!CHECK_RC(lds_runtime_new(&opts, &f->rt), LDS_OK)) return false;
  rec_init(&f->rec, f->rt);
  f->cell = cell_new(f->rt, &f->rec);
  f->loader = host_new(f->rt, &f->h, block_loop);
  if (!CHECK_RC(fx_load(f, "block", NULL), LDS_OK)) return false;
  return WAIT_FOR(loop_blocked);
}

/* The limit the tests below set: small, so that they run fast anywhere. */
enum { SMALL_QUEUE = 1000 };

typedef struct canceller {
  lds_runtime *rt;
  lds_id cells[2];
  size_t calls;
  size_t refused;  /* calls that did not return LDS_OK */
} canceller;

static void *cancel_many(void *arg) {
  canceller *c = arg;
  for (size_t i = 0; i < c->calls; i++)
    for (int k = 0; k < 2; k++)
      if (lds_loadable_cancel(c->rt, c->cells[k]) != LDS_OK) c->refused++;
  return NULL;
}

TEST(test_repeated_cancels_of_a_cell_queue_one_operation) {
  fixture f;
  if (!block(&f, SMALL_QUEUE)) return;
  /* The fixture's cell has a load that waits (its job's start is running);
   * idle was never asked to load. */
  recorder idle_rec;
  rec_init(&idle_rec, f.rt);
  lds_id idle = cell_new(f.rt, &idle_rec);
  /* Together more cancels than the queue holds: each would be refused
   * once the queue is full, were they queued one by one. */
  size_t calls = 20 * SMALL_QUEUE;
  canceller c[2] = {{f.rt, {f.cell, idle}, calls, 0}, {f.rt, {idle, f.cell}, calls, 0}};
  pthread_t threads[2] = {thread_start(cancel_many, &c[0]), thread_start(cancel_many, &c[1])};
  thread_join(threads[0]);
  thread_join(threads[1]);
  CHECK_EQ(c[0].refused, 0);
  CHECK_EQ(c[1].refused, 0);
  open_gate();
  /* LOADING, then the one cancel: the state before the load, flagged. */
  if (REC_WAIT(&f.rec, 2)) CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ABSENT, LDS_FLAG_CANCELLED);
  /* A load and a cancel after the flood still take effect, in order. */
  host_set_start(&f.h, NULL);
  REQUIRE_RC(fx_load(&f, "again", NULL), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  /* A last call: once its event arrives, everything queued before ran. */
  REQUIRE_RC(fx_set_loaded(&f, "last"), LDS_OK);
  if (REC_WAIT(&f.rec, 5)) {
    CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADING, 0);
    CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_ABSENT, LDS_FLAG_CANCELLED);
    CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_LOADED, 0);
  }
  CHECK_EQ(rec_count(&idle_rec), 0);
  fixture_finish(&f);
  rec_destroy(&idle_rec);
}

TEST(test_a_cancel_after_a_queued_reset_changes_nothing_but_a_reset_after_a_cancel_does) {
  fixture f;
  if (!block(&f, 0)) return;
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(fx_set_loaded(&f, "v"), LDS_OK);
  REQUIRE_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  REQUIRE_RC(lds_loadable_reset(f.rt, f.cell), LDS_OK);
  open_gate();
  REQUIRE_RC(lds_loadable_set_error(f.rt, f.cell, 1, "last"), LDS_OK);
  /* LOADING, the reset (ABSENT), loaded "v", the last reset, the error. */
  if (REC_WAIT(&f.rec, 5)) {
    CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_ABSENT, 0);
    CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
    CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_ABSENT, 0);
    CHECK_STATE(rec_at(&f.rec, 4), 5, LDS_ERROR, 0);
  }
  fixture_finish(&f);
}

/* Sets values on cell until a call returns LDS_EAGAIN (set_loaded changes
 * the state every time: nothing to coalesce), at most limit + 8 times;
 * checks that the refusal came and returns how many were accepted. */
static size_t fill_with_values(lds_runtime *rt, lds_id cell, size_t limit) {
  size_t accepted = 0;
  int rc = LDS_OK;
  while (accepted <= limit + 8 && (rc = lds_loadable_set_loaded(rt, cell, "v", 1)) == LDS_OK) accepted++;
  CHECK_EQ(rc, LDS_EAGAIN);
  return accepted;
}

/* Fills the queue of a runtime limited to `limit` waiting operations
 * (queue_max: 0 for the default) and checks what is refused. */
static void fill_queue(uint32_t queue_max, size_t limit) {
  fixture f;
  if (!block(&f, queue_max)) return;
  lds_id job = host_job_at(&f.h, 0);
  recorder other_rec;
  rec_init(&other_rec, f.rt);
  lds_id other = cell_new(f.rt, &other_rec);
  size_t accepted = fill_with_values(f.rt, other, limit);
  CHECK_EQ(accepted, limit);
  /* Every call that queues work is refused alike, and causes nothing. */
  CHECK_RC(lds_loadable_load(f.rt, other, f.loader, "x", 1, NULL), LDS_EAGAIN);
  CHECK_RC(lds_loadable_set_error(f.rt, other, 1, "e"), LDS_EAGAIN);
  CHECK_RC(lds_loadable_refresh(f.rt, f.cell), LDS_EAGAIN);
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_EAGAIN);
  CHECK_RC(lds_loadable_reset(f.rt, f.cell), LDS_EAGAIN);
  lds_op ops[2] = {{.op = LDS_OP_LOAD, .target = other, .loader = f.loader, .data = "x", .data_len = 1},
                   {.op = LDS_OP_CANCEL, .target = f.cell}};
  int results[2] = {0, 0};
  CHECK_EQ(lds_runtime_submit(f.rt, ops, 2, results), 0);
  CHECK_EQ(results[0], LDS_EAGAIN);
  CHECK_EQ(results[1], LDS_EAGAIN);
  /* A job's own queue has the same bound. */
  size_t yields = 0;
  int rc = LDS_OK;
  while (yields <= limit + 8 && (rc = lds_job_yield(f.rt, job, "p", 1)) == LDS_OK) yields++;
  CHECK_EQ(rc, LDS_EAGAIN);
  CHECK_EQ(yields, limit);
  /* Freeing is never refused, and the runtime is freed with all of it queued. */
  open_gate();
  fixture_finish(&f);
  harness_lock();
  other_rec.closed = true;
  harness_unlock();
  /* What ran before the free returned ran in order, each event once. */
  size_t seen = rec_count(&other_rec);
  CHECK_OP(seen, <=, limit);
  for (size_t i = 0; i < seen; i++) CHECK_EQ(rec_at(&other_rec, i)->seq, i + 1);
  rec_destroy(&other_rec);
}

TEST(test_a_full_queue_refuses_calls_with_eagain_and_free_stays_prompt) { fill_queue(SMALL_QUEUE, SMALL_QUEUE); }

/* The default limit, LDS_QUEUE_MAX (not on a slow host: a quarter of a
 * million calls of each kind). */
TEST(test_the_default_queue_limit_is_lds_queue_max) {
  if (test_slow()) return;
  fill_queue(0, LDS_QUEUE_MAX);
}

TEST(test_queue_max_over_its_limit_is_invalid) {
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.queue_max = LDS_QUEUE_MAX_LIMIT + 1;
  lds_runtime *rt = NULL;
  CHECK_RC(lds_runtime_new(&opts, &rt), LDS_EINVAL);
  CHECK(rt == NULL);
  opts.queue_max = LDS_QUEUE_MAX_LIMIT;
  if (CHECK_RC(lds_runtime_new(&opts, &rt), LDS_OK)) rt_free(rt);
}

TEST(test_calls_succeed_again_once_the_loop_catches_up) {
  fixture f;
  if (!block(&f, SMALL_QUEUE)) return;
  recorder other_rec;
  rec_init(&other_rec, f.rt);
  lds_id other = cell_new(f.rt, &other_rec);
  size_t accepted = fill_with_values(f.rt, other, SMALL_QUEUE);
  CHECK_EQ(accepted, SMALL_QUEUE);
  open_gate();
  REC_WAIT(&other_rec, accepted);
  REQUIRE_RC(lds_loadable_set_error(f.rt, other, 7, "after"), LDS_OK);
  if (REC_WAIT(&other_rec, accepted + 1)) CHECK_STATE(rec_last(&other_rec), accepted + 1, LDS_ERROR, 0);
  fixture_finish(&f);
  rec_destroy(&other_rec);
}
