/* test_bad_input.c — every exported function with bad arguments returns its
 * documented code, causes no callback and does not crash. */
#include <stddef.h>
#include <string.h>

#include "harness.h"

static const lds_id huge_ids[] = {UINT64_MAX, UINT64_MAX - 1, (lds_id)1 << 62, (lds_id)1 << 40};

static void nothing_start(lds_runtime *rt, lds_id job, const void *r, size_t l, void *d) {
  (void)rt, (void)job, (void)r, (void)l, (void)d;
}

static void nothing_hook(lds_id job, void *data) {
  (void)job;
  (void)data;
  check_fail(__FILE__, __LINE__, "a hook registered with a bad call ran");
}

static void ignore_event(const lds_event *e, void *data) {
  (void)e;
  (void)data;
  check_fail(__FILE__, __LINE__, "an event for a cell created by a failed call");
}

static bool snapshot_is_zero(const lds_snapshot *s) {
  lds_snapshot zero;
  memset(&zero, 0, sizeof zero);
  return memcmp(s, &zero, sizeof zero) == 0;
}

/* Every loadable-cell function refuses id with LDS_ENOENT. */
static void check_not_loadable(lds_runtime *rt, lds_id id, lds_id loader) {
  CHECK_RC(lds_loadable_free(rt, id), LDS_ENOENT);
  CHECK_RC(lds_loadable_load(rt, id, loader, "r", 1, NULL), LDS_ENOENT);
  CHECK_RC(lds_loadable_refresh(rt, id), LDS_ENOENT);
  CHECK_RC(lds_loadable_cancel(rt, id), LDS_ENOENT);
  CHECK_RC(lds_loadable_reset(rt, id), LDS_ENOENT);
  CHECK_RC(lds_loadable_set_loaded(rt, id, "v", 1), LDS_ENOENT);
  CHECK_RC(lds_loadable_set_error(rt, id, 1, "m"), LDS_ENOENT);
  lds_snapshot s;
  memset(&s, 0xab, sizeof s);
  CHECK_RC(lds_loadable_get(rt, id, &s), LDS_ENOENT);
  CHECK(snapshot_is_zero(&s));
  lds_snapshot_clear(&s);
}

static void check_not_process(lds_runtime *rt, lds_id id, lds_id loader) {
  CHECK_RC(lds_process_free(rt, id), LDS_ENOENT);
  CHECK_RC(lds_process_run(rt, id, 1, loader, "r", 1, NULL), LDS_ENOENT);
  CHECK_RC(lds_process_cancel(rt, id), LDS_ENOENT);
  CHECK_RC(lds_process_reset(rt, id), LDS_ENOENT);
}

/* Loads on live cells with `id` as the loader are refused. */
static void check_not_loader(lds_runtime *rt, lds_id id, lds_id cell, lds_id proc) {
  CHECK_RC(lds_loadable_load(rt, cell, id, "r", 1, NULL), LDS_ENOENT);
  CHECK_RC(lds_process_run(rt, proc, 1, id, "r", 1, NULL), LDS_ENOENT);
}

static void check_not_job(lds_runtime *rt, lds_id id) {
  CHECK_RC(lds_job_yield(rt, id, "v", 1), LDS_ENOENT);
  CHECK_RC(lds_job_succeed(rt, id, "v", 1), LDS_ENOENT);
  CHECK_RC(lds_job_finish(rt, id), LDS_ENOENT);
  CHECK_RC(lds_job_fail(rt, id, 1, "m"), LDS_ENOENT);
  CHECK_RC(lds_job_fail_final(rt, id, 1, "m"), LDS_ENOENT);
  CHECK_RC(lds_job_progress(rt, id, 1, 1), LDS_ENOENT);
  CHECK_RC(lds_job_cancel_self(rt, id), LDS_ENOENT);
  CHECK_RC(lds_job_reset_self(rt, id), LDS_ENOENT);
  CHECK_RC(lds_job_is_cancelled(rt, id), LDS_ENOENT);
  CHECK_RC(lds_job_on_cancel(rt, id, nothing_hook, NULL), LDS_ENOENT);
}

TEST(test_null_runtime_is_einval) {
  lds_snapshot s;
  memset(&s, 0xab, sizeof s);
  lds_id out = 5;
  CHECK_RC(lds_runtime_free(NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_fd(NULL), LDS_EINVAL);
  CHECK_RC(lds_runtime_dispatch(NULL, 0), LDS_EINVAL);
  size_t used = 9;
  CHECK_RC(lds_runtime_dispatch_records(NULL, NULL, 0, 0, &used), LDS_EINVAL);
  lds_op op = {0};
  CHECK_RC(lds_runtime_submit(NULL, &op, 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_loadable_new(NULL, ignore_event, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_loadable_free(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_loadable_load(NULL, 1, 2, "r", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_loadable_refresh(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_loadable_cancel(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_loadable_reset(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_loadable_set_loaded(NULL, 1, "v", 1), LDS_EINVAL);
  CHECK_RC(lds_loadable_set_error(NULL, 1, 1, "m"), LDS_EINVAL);
  CHECK_RC(lds_loadable_get(NULL, 1, &s), LDS_EINVAL);
  CHECK(snapshot_is_zero(&s));
  CHECK_RC(lds_loader_new(NULL, nothing_start, NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_loader_free(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_job_yield(NULL, 1, "v", 1), LDS_EINVAL);
  CHECK_RC(lds_job_succeed(NULL, 1, "v", 1), LDS_EINVAL);
  CHECK_RC(lds_job_finish(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_job_fail(NULL, 1, 1, "m"), LDS_EINVAL);
  CHECK_RC(lds_job_fail_final(NULL, 1, 1, "m"), LDS_EINVAL);
  CHECK_RC(lds_job_progress(NULL, 1, 1, 1), LDS_EINVAL);
  CHECK_RC(lds_job_cancel_self(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_job_reset_self(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_job_is_cancelled(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_job_on_cancel(NULL, 1, nothing_hook, NULL), LDS_EINVAL);
  CHECK_RC(lds_process_new(NULL, ignore_event, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_process_free(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_process_run(NULL, 1, 0, 2, "r", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_process_cancel(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_process_reset(NULL, 1), LDS_EINVAL);
  CHECK_EQ(out, 5);
  lds_snapshot_clear(NULL);
}

TEST(test_null_pointers_are_einval) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_id proc = process_new(f.rt, &f.rec);
  lds_id out = 5;
  CHECK_RC(lds_runtime_new(NULL, NULL), LDS_EINVAL);
  lds_runtime_options o = LDS_RUNTIME_OPTIONS_INIT;
  CHECK_RC(lds_runtime_new(&o, NULL), LDS_EINVAL);
  CHECK_RC(lds_loadable_new(f.rt, NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_loadable_new(f.rt, ignore_event, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_process_new(f.rt, NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_process_new(f.rt, ignore_event, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_loader_new(f.rt, NULL, NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_loader_new(f.rt, nothing_start, NULL, NULL, NULL), LDS_EINVAL);
  CHECK_EQ(out, 5);
  CHECK_RC(lds_loadable_get(f.rt, f.cell, NULL), LDS_EINVAL);
  /* A request or value pointer NULL with a length. */
  CHECK_RC(lds_loadable_load(f.rt, f.cell, f.loader, NULL, 3, NULL), LDS_EINVAL);
  CHECK_RC(lds_process_run(f.rt, proc, 1, f.loader, NULL, 3, NULL), LDS_EINVAL);
  CHECK_RC(lds_loadable_set_loaded(f.rt, f.cell, NULL, 3), LDS_EINVAL);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  CHECK_RC(lds_job_yield(f.rt, job, NULL, 3), LDS_EINVAL);
  CHECK_RC(lds_job_succeed(f.rt, job, NULL, 3), LDS_EINVAL);
  CHECK_RC(lds_job_on_cancel(f.rt, job, NULL, NULL), LDS_EINVAL);
  /* The job still runs and nothing was emitted for the refused calls. */
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  CHECK_EQ(f.h.starts, 1);
  fixture_finish(&f);
}

TEST(test_runtime_options_are_checked) {
  lds_runtime *rt = (lds_runtime *)&rt; /* sentinel: must stay unchanged */
  lds_runtime *const sentinel = rt;
  lds_runtime_options o = LDS_RUNTIME_OPTIONS_INIT;
  const uint32_t bad_sizes[] = {0, 1, 4, 7};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
    o.size = bad_sizes[i];
    CHECK_RC(lds_runtime_new(&o, &rt), LDS_EINVAL);
    CHECK(rt == sentinel);
  }
  o.size = sizeof o;
  const uint32_t bad_modes[] = {2, 3, 255, UINT32_MAX};
  for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++) {
    o.delivery = bad_modes[i];
    CHECK_RC(lds_runtime_new(&o, &rt), LDS_EINVAL);
    CHECK(rt == sentinel);
  }
  o.delivery = LDS_DELIVER_LOOP;
  o.spin_us = 100001;
  CHECK_RC(lds_runtime_new(&o, &rt), LDS_EINVAL);
  CHECK(rt == sentinel);
  /* A caller of the first version (8 bytes) never sets spin_us: ignored. */
  o.size = 8;
  REQUIRE_RC(lds_runtime_new(&o, &rt), LDS_OK);
  CHECK_RC(lds_runtime_free(rt), LDS_OK);
  rt = sentinel;
}

TEST(test_load_options_are_checked) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  lds_id proc = process_new(f.rt, &f.rec);
  /* Long enough that no interrupt falls due during the test. */
  uint32_t delays[65];
  for (size_t i = 0; i < 65; i++) delays[i] = 600000;
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  /* The first version of the struct ended before the caching fields
   * (sizeof was the offset of `cache`); a smaller size is refused. */
  const uint32_t first_version = (uint32_t)offsetof(lds_load_options, cache);
  const uint32_t bad_sizes[] = {0, 4, 8, first_version - 1};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
    o.size = bad_sizes[i];
    CHECK_RC(fx_load(&f, "r", &o), LDS_EINVAL);
    CHECK_RC(lds_process_run(f.rt, proc, 1, f.loader, "r", 1, &o), LDS_EINVAL);
  }
  o.size = sizeof o;
  /* Unknown flags. */
  const uint32_t bad_flags[] = {1u << 29, 1u << 31, UINT32_MAX};
  for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
    o.flags = bad_flags[i];
    CHECK_RC(fx_load(&f, "r", &o), LDS_EINVAL);
    CHECK_RC(lds_process_run(f.rt, proc, 1, f.loader, "r", 1, &o), LDS_EINVAL);
  }
  o.flags = 0;
  /* interrupt_count with a NULL array, or over 64. */
  o.interrupt_count = 3;
  CHECK_RC(fx_load(&f, "r", &o), LDS_EINVAL);
  CHECK_RC(lds_process_run(f.rt, proc, 1, f.loader, "r", 1, &o), LDS_EINVAL);
  o.interrupts_ms = delays;
  o.interrupt_count = 65;
  CHECK_RC(fx_load(&f, "r", &o), LDS_EINVAL);
  o.interrupt_count = 64;
  CHECK_RC(fx_load(&f, "r64", &o), LDS_OK);
  /* The refused loads caused nothing: the accepted one is event 1. */
  REQUIRE(REC_WAIT(&f.rec, 1));
  const lds_event *e = rec_at(&f.rec, 0);
  CHECK_STATE(e, 1, LDS_LOADING, 0);
  CHECK_EQ(e->cell, f.cell);
  CHECK_BYTES(e->request, e->request_len, "r64");
  REQUIRE(HOST_WAIT(&f.h, 1));
  CHECK_EQ(f.h.starts, 1);
  /* A caller built against the first version of the struct. */
  lds_load_options old = LDS_LOAD_OPTIONS_INIT;
  old.size = first_version;
  CHECK_RC(fx_load(&f, "old", &old), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_BYTES(rec_at(&f.rec, 1)->request, rec_at(&f.rec, 1)->request_len, "old");
  fixture_finish(&f);
}

TEST(test_unknown_zero_and_wrong_kind_ids_are_enoent) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder prec;
  rec_init(&prec, f.rt);
  lds_id proc = process_new(f.rt, &prec);
  REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
  REQUIRE(HOST_WAIT(&f.h, 1));
  lds_id job = host_job_at(&f.h, 0);
  lds_id max = f.cell;
  if (proc > max) max = proc;
  if (f.loader > max) max = f.loader;
  if (job > max) max = job;

  /* Id 0 and ids never issued. */
  lds_id unknown[4 + 64 + 1];
  size_t n = 0;
  unknown[n++] = 0;
  for (size_t i = 0; i < sizeof huge_ids / sizeof huge_ids[0]; i++) unknown[n++] = huge_ids[i];
  for (lds_id k = 1; k <= 64; k++) unknown[n++] = max + k;
  for (size_t i = 0; i < n; i++) {
    check_not_loadable(f.rt, unknown[i], f.loader);
    check_not_process(f.rt, unknown[i], f.loader);
    check_not_loader(f.rt, unknown[i], f.cell, proc);
    check_not_job(f.rt, unknown[i]);
    CHECK_RC(lds_loader_free(f.rt, unknown[i]), LDS_ENOENT);
  }
  /* Ids of another kind. */
  check_not_loadable(f.rt, f.loader, f.loader);
  check_not_loadable(f.rt, proc, f.loader);
  check_not_loadable(f.rt, job, f.loader);
  check_not_process(f.rt, f.loader, f.loader);
  check_not_process(f.rt, f.cell, f.loader);
  check_not_process(f.rt, job, f.loader);
  check_not_loader(f.rt, f.cell, f.cell, proc);
  check_not_loader(f.rt, proc, f.cell, proc);
  check_not_loader(f.rt, job, f.cell, proc);
  CHECK_RC(lds_loader_free(f.rt, f.cell), LDS_ENOENT);
  CHECK_RC(lds_loader_free(f.rt, proc), LDS_ENOENT);
  CHECK_RC(lds_loader_free(f.rt, job), LDS_ENOENT);
  check_not_job(f.rt, f.cell);
  check_not_job(f.rt, proc);
  check_not_job(f.rt, f.loader);
  /* The cell, process and job are untouched: the job still runs, the
   * refused calls emitted nothing. */
  CHECK_EQ(lds_job_is_cancelled(f.rt, job), 0);
  REQUIRE_RC(fx_succeed(&f, job, "v"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 2));
  CHECK_STATE(rec_at(&f.rec, 1), 2, LDS_LOADED, 0);
  REQUIRE_RC(lds_process_run(f.rt, proc, 1, f.loader, "p", 1, NULL), LDS_OK);
  REQUIRE(REC_WAIT(&prec, 1));
  CHECK_STATE(rec_at(&prec, 0), 1, LDS_RUNNING, 0);
  CHECK(HOST_WAIT(&f.h, 2));
  fixture_finish(&f);
  rec_destroy(&prec);
}

TEST(test_freed_ids_and_double_free_are_enoent) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  recorder other;
  rec_init(&other, f.rt);
  lds_id proc = process_new(f.rt, &other);
  lds_id live = cell_new(f.rt, &other);
  host h2;
  lds_id loader2 = host_new(f.rt, &h2, NULL);
  REQUIRE_RC(lds_loadable_free(f.rt, f.cell), LDS_OK);
  CHECK_RC(lds_loadable_free(f.rt, f.cell), LDS_ENOENT);
  check_not_loadable(f.rt, f.cell, f.loader);
  REQUIRE_RC(lds_process_free(f.rt, proc), LDS_OK);
  CHECK_RC(lds_process_free(f.rt, proc), LDS_ENOENT);
  check_not_process(f.rt, proc, f.loader);
  REQUIRE_RC(lds_loader_free(f.rt, loader2), LDS_OK);
  CHECK_RC(lds_loader_free(f.rt, loader2), LDS_ENOENT);
  CHECK_RC(lds_loadable_load(f.rt, live, loader2, "r", 1, NULL), LDS_ENOENT);
  REQUIRE(WAIT_FOR(h2.free_data_calls == 1));
  CHECK_RC(lds_runtime_free(f.rt), LDS_OK);
  CHECK_RC(lds_runtime_free(f.rt), LDS_ECLOSED);
  CHECK_EQ(h2.free_data_calls, 1);
  CHECK_EQ(f.h.free_data_calls, 1);
  CHECK_EQ(rec_count(&f.rec), 0);
  CHECK_EQ(rec_count(&other), 0);
  rec_destroy(&f.rec);
  rec_destroy(&other);
  host_destroy(&f.h);
  host_destroy(&h2);
}

TEST(test_job_completed_twice_is_ecanceled) {
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  for (int way = 0; way < 3; way++) {
    REQUIRE_RC(fx_load(&f, "r", NULL), LDS_OK);
    REQUIRE(HOST_WAIT(&f.h, (size_t)way + 1));
    lds_id job = host_job_at(&f.h, (size_t)way);
    if (way == 0) REQUIRE_RC(fx_succeed(&f, job, "a"), LDS_OK);
    if (way == 1) REQUIRE_RC(lds_job_finish(f.rt, job), LDS_OK);
    if (way == 2) REQUIRE_RC(lds_job_fail(f.rt, job, 2, NULL), LDS_OK);
    CHECK_RC(fx_succeed(&f, job, "b"), LDS_ECANCELED);
    CHECK_RC(lds_job_finish(f.rt, job), LDS_ECANCELED);
    CHECK_RC(lds_job_fail(f.rt, job, 3, "c"), LDS_ECANCELED);
    CHECK_RC(lds_job_fail_final(f.rt, job, 3, "c"), LDS_ECANCELED);
    CHECK_RC(lds_job_cancel_self(f.rt, job), LDS_ECANCELED);
    CHECK_RC(lds_job_reset_self(f.rt, job), LDS_ECANCELED);
    REQUIRE(REC_WAIT(&f.rec, 2 * ((size_t)way + 1)));
  }
  const lds_event *e = rec_at(&f.rec, 1);
  CHECK_STATE(e, 2, LDS_LOADED, 0);
  CHECK_BYTES(e->value, e->value_len, "a");
  CHECK_STATE(rec_at(&f.rec, 3), 4, LDS_LOADED, LDS_FLAG_NO_VALUE); /* finish without a value: "a" is back */
  e = rec_at(&f.rec, 5);
  CHECK_STATE(e, 6, LDS_ERROR, 0);
  CHECK_EQ(e->error_code, 2);
  CHECK(e->error_message == NULL);
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 7));
  CHECK_STATE(rec_at(&f.rec, 6), 7, LDS_LOADED, 0);
  fixture_finish(&f);
}

TEST(test_snapshot_clear_is_harmless_on_zero_and_twice) {
  lds_snapshot s;
  memset(&s, 0, sizeof s);
  lds_snapshot_clear(&s);
  lds_snapshot_clear(&s);
  lds_snapshot_clear(NULL);
  CHECK(snapshot_is_zero(&s));
}

/* The built-in loaders, the encoders and the caches refuse NULL pointers,
 * and ids of another kind. */
TEST(test_other_exports_refuse_null_and_wrong_kind_ids) {
  lds_id out = 5;
  void *buf = (void *)&out;
  size_t len = 9;
  CHECK_RC(lds_file_loader_new(NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_exec_loader_new(NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_http_loader_new(NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_memory_cache_new(NULL, NULL, &out), LDS_EINVAL);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  CHECK_RC(lds_persistent_cache_new(NULL, &po, &out), LDS_EINVAL);
  CHECK_RC(lds_cache_free(NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_cache_put(NULL, 1, "k", 1, "v", 1), LDS_EINVAL);
  lds_cache_value cv;
  memset(&cv, 0, sizeof cv);
  CHECK_RC(lds_cache_get(NULL, 1, "k", 1, &cv), LDS_EINVAL);
  CHECK_RC(lds_cache_remove(NULL, 1, "k", 1), LDS_EINVAL);
  CHECK_RC(lds_cache_clear(NULL, 1), LDS_EINVAL);
  lds_cache_statistics st;
  CHECK_RC(lds_cache_stats(NULL, 1, &st), LDS_EINVAL);
  CHECK_RC(lds_cache_invalidate(NULL, 1, "k", 1), LDS_EINVAL);
  CHECK_EQ(out, 5);
  /* Encoders and the decoder. */
  lds_exec_request er = LDS_EXEC_REQUEST_INIT;
  CHECK_RC(lds_exec_request_encode(NULL, &buf, &len), LDS_EINVAL);
  CHECK_RC(lds_exec_request_encode(&er, &buf, &len), LDS_EINVAL); /* no argv */
  CHECK_RC(lds_exec_request_encode(&er, NULL, &len), LDS_EINVAL);
  lds_http_request hr = LDS_HTTP_REQUEST_INIT;
  CHECK_RC(lds_http_request_encode(NULL, &buf, &len), LDS_EINVAL);
  CHECK_RC(lds_http_request_encode(&hr, &buf, &len), LDS_EINVAL); /* no url */
  hr.url = "http://example.invalid/";
  CHECK_RC(lds_http_request_encode(&hr, NULL, &len), LDS_EINVAL);
  CHECK_RC(lds_http_request_encode(&hr, &buf, NULL), LDS_EINVAL);
  lds_http_response resp;
  CHECK_RC(lds_http_response_decode(NULL, 4, &resp), LDS_EINVAL);
  CHECK_RC(lds_http_response_decode("junk", 4, &resp), LDS_EINVAL);
  CHECK_RC(lds_http_response_decode("junk", 4, NULL), LDS_EINVAL);
  CHECK(buf == (void *)&out);
  lds_free(NULL);
  lds_cache_value_clear(NULL);
  lds_cache_value_clear(&cv);

  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, NULL);
  CHECK_RC(lds_file_loader_new(f.rt, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_exec_loader_new(f.rt, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_http_loader_new(f.rt, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_memory_cache_new(f.rt, NULL, NULL), LDS_EINVAL);
  CHECK_RC(lds_persistent_cache_new(f.rt, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_persistent_cache_new(f.rt, &po, &out), LDS_EINVAL); /* no path */
  CHECK_EQ(out, 5);
  /* A cell and a loader are not caches; a cache is not a cell or a loader. */
  const lds_id not_caches[] = {0, f.cell, f.loader, UINT64_MAX};
  for (size_t i = 0; i < sizeof not_caches / sizeof not_caches[0]; i++) {
    lds_id id = not_caches[i];
    CHECK_RC(lds_cache_put(f.rt, id, "k", 1, "v", 1), LDS_ENOENT);
    CHECK_RC(lds_cache_get(f.rt, id, "k", 1, &cv), LDS_ENOENT);
    CHECK_RC(lds_cache_remove(f.rt, id, "k", 1), LDS_ENOENT);
    CHECK_RC(lds_cache_clear(f.rt, id), LDS_ENOENT);
    CHECK_RC(lds_cache_stats(f.rt, id, &st), LDS_ENOENT);
    CHECK_RC(lds_cache_invalidate(f.rt, id, "k", 1), LDS_ENOENT);
    CHECK_RC(lds_cache_free(f.rt, id), LDS_ENOENT);
  }
  lds_id cache = 0;
  REQUIRE_RC(lds_memory_cache_new(f.rt, NULL, &cache), LDS_OK);
  CHECK_RC(lds_cache_put(f.rt, cache, NULL, 1, "v", 1), LDS_EINVAL);
  CHECK_RC(lds_cache_put(f.rt, cache, "k", 1, NULL, 1), LDS_EINVAL);
  CHECK_RC(lds_cache_get(f.rt, cache, "k", 1, NULL), LDS_EINVAL);
  CHECK_RC(lds_cache_stats(f.rt, cache, NULL), LDS_EINVAL);
  check_not_loadable(f.rt, cache, f.loader);
  check_not_process(f.rt, cache, f.loader);
  check_not_job(f.rt, cache);
  CHECK_RC(lds_loader_free(f.rt, cache), LDS_ENOENT);
  CHECK_RC(lds_loadable_load(f.rt, f.cell, cache, "r", 1, NULL), LDS_ENOENT);
  CHECK_RC(lds_cache_free(f.rt, cache), LDS_OK);
  CHECK_RC(lds_cache_free(f.rt, cache), LDS_ENOENT);
  /* The refused calls caused no event. */
  REQUIRE_RC(fx_set_loaded(&f, "fence"), LDS_OK);
  REQUIRE(REC_WAIT(&f.rec, 1));
  CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADED, 0);
  fixture_finish(&f);
}
