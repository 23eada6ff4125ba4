/* test_submit.c — lds_runtime_submit: batches of calls, made in order, each
 * with its own result. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static lds_op op_load(lds_id cell, lds_id loader, const char *request) {
  lds_op op = {0};
  op.op = LDS_OP_LOAD;
  op.target = cell;
  op.loader = loader;
  op.data = request;
  op.data_len = strlen(request);
  return op;
}

static lds_op op_job(uint32_t kind, lds_id job, const char *data) {
  lds_op op = {0};
  op.op = kind;
  op.target = job;
  op.data = data;
  op.data_len = data != NULL ? strlen(data) : 0;
  return op;
}

static lds_op op_cancel(lds_id cell) {
  lds_op op = {0};
  op.op = LDS_OP_CANCEL;
  op.target = cell;
  return op;
}

/* The job whose request is `request` among h's starts, or 0. */
static lds_id job_for(host *h, const char *request) {
  size_t n = strlen(request);
  harness_lock();
  lds_id found = 0;
  for (size_t i = 0; i < h->starts; i++) {
    const host_job *j = &h->jobs[i];
    if (j->request_len == n && memcmp(j->request, request, n) == 0) found = j->job;
  }
  harness_unlock();
  return found;
}

/* Two more cells next to a fixture's, each reporting to a recorder of its own. */
typedef struct trio {
  recorder rec_b, rec_c;
  lds_id cell_b, cell_c;
} trio;

static void trio_init(trio *t, fixture *f) {
  rec_init(&t->rec_b, f->rt);
  rec_init(&t->rec_c, f->rt);
  t->cell_b = cell_new(f->rt, &t->rec_b);
  t->cell_c = cell_new(f->rt, &t->rec_c);
}

/* Loads "a", "b" and "c" into f's cell and t's two in one batch; lds_runtime_submit's return. */
static int trio_load(trio *t, fixture *f, int32_t *results) {
  lds_op ops[3] = {op_load(f->cell, f->loader, "a"), op_load(t->cell_b, f->loader, "b"),
                   op_load(t->cell_c, f->loader, "c")};
  return lds_runtime_submit(f->rt, ops, 3, results);
}

/* Frees f's runtime, then t's recorders. */
static void trio_finish(trio *t, fixture *f) {
  fixture_finish(f);
  rec_destroy(&t->rec_b);
  rec_destroy(&t->rec_c);
}

TEST(test_submit_loads_start_in_batch_order) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  trio t;
  trio_init(&t, &f);
  int32_t results[3] = {99, 99, 99};
  REQUIRE_RC(trio_load(&t, &f, results), 3);
  CHECK_EQ(results[0], LDS_OK);
  CHECK_EQ(results[1], LDS_OK);
  CHECK_EQ(results[2], LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 3));
  /* One work item runs the loads one after another. */
  CHECK_BYTES(host_job_info(&f.h, 0)->request, host_job_info(&f.h, 0)->request_len, "a");
  CHECK_BYTES(host_job_info(&f.h, 1)->request, host_job_info(&f.h, 1)->request_len, "b");
  CHECK_BYTES(host_job_info(&f.h, 2)->request, host_job_info(&f.h, 2)->request_len, "c");
  REQUIRE(REC_WAIT(&f.rec, 1));
  REQUIRE(REC_WAIT(&t.rec_b, 1));
  REQUIRE(REC_WAIT(&t.rec_c, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&t.rec_c, 0), 1, LDS_LOADING, 0);
  CHECK_BYTES(rec_at(&t.rec_b, 0)->request, rec_at(&t.rec_b, 0)->request_len, "b");
  /* The jobs take calls like any other. */
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "va"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  trio_finish(&t, &f);
}

/* A load of a batch takes LDS_LOAD_SHARE and LDS_LOAD_SILENT in its code:
 * three cells share one job, and a silent load keeps the shown value. */
TEST(test_submit_loads_take_the_share_and_silent_flags) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  trio t;
  trio_init(&t, &f);
  lds_op ops[3] = {op_load(f.cell, f.loader, "same"), op_load(t.cell_b, f.loader, "same"),
                   op_load(t.cell_c, f.loader, "same")};
  for (int i = 0; i < 3; i++) ops[i].code = (int32_t)LDS_LOAD_SHARE;
  int32_t results[3] = {99, 99, 99};
  REQUIRE_RC(lds_runtime_submit(f.rt, ops, 3, results), 3);
  REQUIRE(HOST_WAIT(&f.h, 1));
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 0), "shared"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  REQUIRE(REC_WAIT(&t.rec_b, 2));
  REQUIRE(REC_WAIT(&t.rec_c, 2));
  CHECK_EQ(f.h.starts, 1);
  CHECK_STATE(rec_at(&t.rec_c, 1), 2, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&t.rec_c, 1)->value, rec_at(&t.rec_c, 1)->value_len, "shared");
  /* Silent: the value stays, flagged REFRESHING, until the new one. */
  lds_op silent = op_load(f.cell, f.loader, "again");
  silent.code = (int32_t)LDS_LOAD_SILENT;
  REQUIRE_RC(lds_runtime_submit(f.rt, &silent, 1, results), 1);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, LDS_FLAG_REFRESHING);
  CHECK_BYTES(rec_at(&f.rec, 2)->value, rec_at(&f.rec, 2)->value_len, "shared");
  REQUIRE(HOST_WAIT(&f.h, 2));
  trio_finish(&t, &f);
}

TEST(test_submit_job_calls_yield_succeed_fail_finish) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  trio t;
  trio_init(&t, &f);
  REQUIRE_RC(trio_load(&t, &f, NULL), 3);
  REQUIRE(HOST_WAIT(&f.h, 3));
  lds_id a = job_for(&f.h, "a"), b = job_for(&f.h, "b"), c = job_for(&f.h, "c");
  lds_op fail = op_job(LDS_OP_FAIL, b, "boom");
  fail.code = 7;
  lds_op ops[5] = {op_job(LDS_OP_YIELD, a, "part"), op_job(LDS_OP_SUCCEED, a, "whole"), fail,
                   op_job(LDS_OP_YIELD, c, "last"), op_job(LDS_OP_FINISH, c, NULL)};
  int32_t results[5];
  memset(results, 0x7f, sizeof results);
  REQUIRE_RC(lds_runtime_submit(f.rt, ops, 5, results), 5);
  for (int i = 0; i < 5; i++) CHECK_EQ(results[i], LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "part");
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&f.rec, 2)->value, rec_at(&f.rec, 2)->value_len, "whole");
  REQUIRE(REC_WAIT(&t.rec_b, 2));
  CHECK_STATE(rec_at(&t.rec_b, 1), 2, LDS_ERROR, 0);
  CHECK_EQ(rec_at(&t.rec_b, 1)->error_domain, LDS_DOMAIN_HOST);
  CHECK_EQ(rec_at(&t.rec_b, 1)->error_code, 7);
  CHECK_STR(rec_at(&t.rec_b, 1)->error_message, "boom");
  REQUIRE(REC_WAIT(&t.rec_c, 3));
  CHECK_STATE(rec_at(&t.rec_c, 2), 3, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&t.rec_c, 2)->value, rec_at(&t.rec_c, 2)->value_len, "last");
  /* Ended jobs refuse further calls, in a batch as alone. */
  lds_op late[2] = {op_job(LDS_OP_SUCCEED, a, "again"), op_job(LDS_OP_FINISH, b, NULL)};
  REQUIRE_RC(lds_runtime_submit(f.rt, late, 2, results), 0);
  CHECK_EQ(results[0], LDS_ECANCELED);
  CHECK_EQ(results[1], LDS_ECANCELED);
  trio_finish(&t, &f);
}

TEST(test_submit_keeps_the_order_of_its_calls) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  REQUIRE_RC(fx_load(&f, "one", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  /* A succeed before a cancel wins: the cancel finds no job. */
  lds_op first[2] = {op_job(LDS_OP_SUCCEED, host_job_at(&f.h, 0), "v1"), op_cancel(f.cell)};
  int32_t results[2] = {99, 99};
  REQUIRE_RC(lds_runtime_submit(f.rt, first, 2, results), 2);
  CHECK_EQ(results[0], LDS_OK);
  CHECK_EQ(results[1], LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  /* A cancel before a succeed wins: the job counts as cancelled. */
  REQUIRE_RC(fx_load(&f, "two", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 2));
  REQUIRE(REC_WAIT(&f.rec, 3));
  lds_op second[2] = {op_cancel(f.cell), op_job(LDS_OP_SUCCEED, host_job_at(&f.h, 1), "v2")};
  REQUIRE_RC(lds_runtime_submit(f.rt, second, 2, results), 1);
  CHECK_EQ(results[0], LDS_OK);
  CHECK_EQ(results[1], LDS_ECANCELED);
  REQUIRE(REC_WAIT(&f.rec, 4));
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, LDS_FLAG_CANCELLED);
  CHECK_BYTES(rec_at(&f.rec, 3)->value, rec_at(&f.rec, 3)->value_len, "v1");
  /* Two loads of one cell: the first is superseded before it begins and
   * starts no job; both LOADING events are reported. */
  lds_op twice[2] = {op_load(f.cell, f.loader, "x"), op_load(f.cell, f.loader, "y")};
  REQUIRE_RC(lds_runtime_submit(f.rt, twice, 2, results), 2);
  REQUIRE(HOST_WAIT(&f.h, 3));
  REQUIRE(REC_WAIT(&f.rec, 6));
  CHECK_BYTES(rec_at(&f.rec, 4)->request, rec_at(&f.rec, 4)->request_len, "x");
  CHECK_BYTES(rec_at(&f.rec, 5)->request, rec_at(&f.rec, 5)->request_len, "y");
  CHECK_BYTES(host_job_info(&f.h, 2)->request, host_job_info(&f.h, 2)->request_len, "y");
  REQUIRE_RC(fx_succeed(&f, host_job_at(&f.h, 2), "vy"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 7));
  CHECK_STATE(rec_at(&f.rec, 6), 7, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 3);
  fixture_finish(&f);
}

TEST(test_submit_bad_calls_get_their_own_code_and_stop_nothing) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder rec_p;
  rec_init(&rec_p, f.rt);
  lds_id proc = process_new(f.rt, &rec_p);
  enum { N = 18 };
  lds_op ops[N];
  int32_t want[N];
  int n = 0;
  ops[n] = op_load(f.cell, f.loader, "ok"), want[n++] = LDS_OK;
  ops[n] = op_load(f.cell, f.loader, "x"), ops[n].op = 99, want[n++] = LDS_EINVAL;
  ops[n] = op_load(f.cell, f.loader, "x"), ops[n].op = 0, want[n++] = LDS_EINVAL;
  ops[n] = op_load(f.cell, f.loader, "x"), ops[n].code = 4, want[n++] = LDS_EINVAL;   /* not a load flag */
  ops[n] = op_load(12345, f.loader, "x"), want[n++] = LDS_ENOENT;
  ops[n] = op_load(f.cell, 12345, "x"), want[n++] = LDS_ENOENT;
  ops[n] = op_load(proc, f.loader, "x"), want[n++] = LDS_ENOENT;
  ops[n] = op_load(f.cell, f.loader, "x"), ops[n].data = NULL, want[n++] = LDS_EINVAL;
  ops[n] = op_load(f.cell, f.loader, "x"), ops[n].data_len = SIZE_MAX, want[n++] = LDS_ETOOBIG;
  ops[n] = op_cancel(f.cell), ops[n].loader = f.loader, want[n++] = LDS_EINVAL;
  ops[n] = op_cancel(f.cell), ops[n].data_len = 1, ops[n].data = "x", want[n++] = LDS_EINVAL;
  ops[n] = op_cancel(proc), want[n++] = LDS_ENOENT;
  ops[n] = op_job(LDS_OP_SUCCEED, 12345, "v"), want[n++] = LDS_ENOENT;
  ops[n] = op_job(LDS_OP_SUCCEED, 12345, "v"), ops[n].code = 3, want[n++] = LDS_EINVAL;
  ops[n] = op_job(LDS_OP_FINISH, 12345, "v"), want[n++] = LDS_EINVAL;
  ops[n] = op_job(LDS_OP_FAIL, 12345, "a\0b"), ops[n].data_len = 3, want[n++] = LDS_EINVAL;
  ops[n] = op_job(LDS_OP_YIELD, 12345, "v"), ops[n].data = NULL, want[n++] = LDS_EINVAL;
  ops[n] = op_load(f.cell, f.loader, "last"), want[n++] = LDS_OK;
  REQUIRE(n == N);
  int32_t results[N];
  memset(results, 0x7f, sizeof results);
  REQUIRE_RC(lds_runtime_submit(f.rt, ops, N, results), 2);
  for (int i = 0; i < N; i++) {
    if (results[i] != want[i]) check_fail(__FILE__, __LINE__, "op %d: %d, expected %d", i, results[i], want[i]);
  }
  /* The two good loads ran, around the bad calls. */
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_BYTES(rec_at(&f.rec, 0)->request, rec_at(&f.rec, 0)->request_len, "ok");
  CHECK_BYTES(rec_at(&f.rec, 1)->request, rec_at(&f.rec, 1)->request_len, "last");
  /* The batch itself. */
  CHECK_RC(lds_runtime_submit(NULL, ops, 1, results), LDS_EINVAL);
  CHECK_RC(lds_runtime_submit(f.rt, NULL, 1, results), LDS_EINVAL);
  CHECK_RC(lds_runtime_submit(f.rt, ops, SIZE_MAX, results), LDS_EINVAL);
  CHECK_RC(lds_runtime_submit(f.rt, ops, (size_t)INT32_MAX + 1, results), LDS_EINVAL);
  CHECK_RC(lds_runtime_submit(f.rt, NULL, 0, NULL), 0);
  CHECK_RC(lds_runtime_submit(f.rt, ops, 0, results), 0);
  lds_op bad = op_job(LDS_OP_FINISH, 12345, NULL);
  CHECK_RC(lds_runtime_submit(f.rt, &bad, 1, NULL), 0);
  lds_runtime *rt = f.rt;
  fixture_finish(&f);
  /* A freed runtime makes no call and leaves the results alone. */
  results[0] = 4242;
  CHECK_RC(lds_runtime_submit(rt, ops, 1, results), LDS_ECLOSED);
  CHECK_EQ(results[0], 4242);
  rec_destroy(&rec_p);
}

TEST(test_submit_from_poll_mode_records) {
  /* A host that takes starts as records answers them in one batch. */
  fixture f;
  fixture_init(&f, LDS_DELIVER_POLL, NULL);
  recorder rec_b;
  rec_init(&rec_b, f.rt);
  lds_id cell_b = cell_new(f.rt, &rec_b);
  lds_op loads[2] = {op_load(f.cell, f.loader, "a"), op_load(cell_b, f.loader, "b")};
  REQUIRE_RC(lds_runtime_submit(f.rt, loads, 2, NULL), 2);
  REQUIRE(POLL_UNTIL(f.rt, f.h.starts >= 2 && f.rec.count >= 1 && rec_b.count >= 1));
  lds_op done[2] = {op_job(LDS_OP_SUCCEED, job_for(&f.h, "a"), "va"),
                    op_job(LDS_OP_SUCCEED, job_for(&f.h, "b"), "vb")};
  REQUIRE_RC(lds_runtime_submit(f.rt, done, 2, NULL), 2);
  REQUIRE(POLL_UNTIL(f.rt, f.rec.count >= 2 && rec_b.count >= 2));
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "va");
  CHECK_BYTES(rec_at(&rec_b, 1)->value, rec_at(&rec_b, 1)->value_len, "vb");
  fixture_finish(&f);
  rec_destroy(&rec_b);
}

/* A start that ends its own job with one batch of job calls, made on the
 * loop thread inside start: a partial value, the whole one, and a call on
 * a job that does not exist, which fails alone. */
static void start_ends_with_a_batch(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  lds_op ops[3] = {op_job(LDS_OP_YIELD, job, "part"), op_job(LDS_OP_SUCCEED, 987654, "none"),
                   op_job(LDS_OP_SUCCEED, job, "whole")};
  int32_t results[3];
  CHECK_RC(lds_runtime_submit(h->rt, ops, 3, results), 2);
  CHECK_EQ(results[0], LDS_OK);
  CHECK_EQ(results[1], LDS_ENOENT);
  CHECK_EQ(results[2], LDS_OK);
}

TEST(test_submit_job_calls_from_inside_start_apply_when_start_returns) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, start_ends_with_a_batch);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 3));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, LDS_FLAG_PARTIAL);
  CHECK_BYTES(rec_at(&f.rec, 1)->value, rec_at(&f.rec, 1)->value_len, "part");
  CHECK_STATE(rec_at(&f.rec, 2), 3, LDS_LOADED, 0);
  CHECK_BYTES(rec_at(&f.rec, 2)->value, rec_at(&f.rec, 2)->value_len, "whole");
  fixture_finish(&f);
}

/* Many jobs ended by one batch from a host thread: every cell settles. */
TEST(test_submit_ends_many_jobs_in_one_batch) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  enum { N = 40 };
  recorder recs[N];
  lds_op loads[N];
  char names[N][8];
  for (int i = 0; i < N; i++) {
    rec_init(&recs[i], f.rt);
    snprintf(names[i], sizeof names[i], "k%d", i);
    loads[i] = op_load(cell_new(f.rt, &recs[i]), f.loader, names[i]);
  }
  REQUIRE_RC(lds_runtime_submit(f.rt, loads, N, NULL), N);
  REQUIRE(HOST_WAIT(&f.h, N));
  lds_op ends[N];
  for (int i = 0; i < N; i++) ends[i] = op_job(LDS_OP_SUCCEED, job_for(&f.h, names[i]), names[i]);
  int32_t results[N];
  REQUIRE_RC(lds_runtime_submit(f.rt, ends, N, results), N);
  for (int i = 0; i < N; i++) {
    CHECK_EQ(results[i], LDS_OK);
    REQUIRE(REC_WAIT(&recs[i], 2));
    CHECK_STATE(rec_at(&recs[i], 1), 2, LDS_LOADED, 0);
    CHECK_BYTES(rec_at(&recs[i], 1)->value, rec_at(&recs[i], 1)->value_len, names[i]);
  }
  fixture_finish(&f);
  for (int i = 0; i < N; i++) rec_destroy(&recs[i]);
}
