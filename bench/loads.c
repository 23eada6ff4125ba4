/*
 * loads.c — throughput and latency of loads through a host loader, next to
 * a raw libuv baseline, and the memory held by loads in flight.
 *
 *   usage: loads [loads] [cells] [rounds] [in_flight]
 *          defaults: 200000 1024 5 100000
 *
 * 1. In flight: `in_flight` cells each start one load whose loader never
 *    completes; VmRSS is read before the cells are created and once every
 *    load has reached LOADING and its loader start has run.
 *
 * 2. Throughput, LDS_DELIVER_LOOP mode. The main thread issues `loads`
 *    lds_loadable_load calls over `cells` cells used round-robin; a cell is
 *    reused only after its previous load reached LOADED, so at most `cells`
 *    loads are in flight. The loader's start function calls lds_job_succeed
 *    inside the callback. Each load yields two cell events (LOADING,
 *    LOADED) and one loader start callback. Latency is the time from the
 *    lds_loadable_load call to the cell's LOADING event (the request
 *    carries the load's index).
 *
 *    "timeout" repeats the run with lds_load_options.timeout_ms = 60000,
 *    which never fires.
 *
 * 3. Baseline: the same number of messages through a mutex-protected queue,
 *    woken with uv_async_send (only when the consumer is not already woken;
 *    each wake-up drains the whole queue) and handed to a callback on a
 *    libuv loop thread, with the same window of `cells` slots. One message
 *    stands for one load.
 *
 * 4. C floor (a diagnostic): the same loads through a minimal runtime
 *    written in this file in plain C, on the baseline's queue: the work a
 *    load needs at least (copies, lookups under a lock, a job, three
 *    callbacks), without anything a runtime adds for generality. What the
 *    ratio to the baseline could be for an implementation with no overhead.
 *
 * Every variant runs `rounds` times, interleaved; the summary gives medians.
 */
#include "bench_util.h"
#include <loadstate.h>
#include <uv.h>

#include <malloc.h>
#include <sys/resource.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, int rc) {
  fprintf(stderr, "loads: %s failed: %d (%s)\n", what, rc, rc < 0 ? lds_strerror(rc) : "");
  exit(1);
}

#define CHECK(call)                   \
  do {                                \
    int rc_ = (call);                 \
    if (rc_ != LDS_OK) die(#call, rc_); \
  } while (0)

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

/* ------------------------------------------------------------------ */
/* Shared by every run: load indices, start times, latencies, window   */
/* ------------------------------------------------------------------ */

typedef struct slot {
  lds_id cell;
  uint64_t seq;       /* last event seq seen (delivery thread only) */
  atomic_int busy;    /* a load on this slot has not reached LOADED yet */
  char pad[64 - sizeof(lds_id) - sizeof(uint64_t) - sizeof(atomic_int)];
} slot;

static struct {
  size_t loads, cells;
  slot *slots;
  uint64_t *started;  /* lds_loadable_load time per load */
  uint64_t *latency;  /* LOADING time - started */
  /* Delivery-thread counters. */
  uint64_t events, starts, done, bad;
  /* Completion and window hand-off. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  _Atomic(slot *) producer_waiting; /* the slot the producer sleeps on, or NULL */
  atomic_bool finished;
} B = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Producer: waits until slot s is free, then marks it busy. */
static void acquire_slot(slot *s) {
  if (atomic_load(&s->busy)) {
    for (int spin = 0; spin < 200 && atomic_load(&s->busy); spin++) __builtin_ia32_pause();
    if (atomic_load(&s->busy)) {
      pthread_mutex_lock(&B.mu);
      atomic_store(&B.producer_waiting, s);
      while (atomic_load(&s->busy)) pthread_cond_wait(&B.cv, &B.mu);
      atomic_store(&B.producer_waiting, NULL);
      pthread_mutex_unlock(&B.mu);
    }
  }
  atomic_store(&s->busy, 1);
}

/* Consumer: frees slot s; counts the load; wakes the producer or main when needed. */
static void release_slot(slot *s) {
  atomic_store(&s->busy, 0);
  bool last = ++B.done == B.loads;
  if (last) atomic_store(&B.finished, true);
  if (last || atomic_load(&B.producer_waiting) == s) {
    pthread_mutex_lock(&B.mu);
    pthread_cond_broadcast(&B.cv);
    pthread_mutex_unlock(&B.mu);
  }
}

static void wait_finished(void) {
  pthread_mutex_lock(&B.mu);
  while (!atomic_load(&B.finished)) pthread_cond_wait(&B.cv, &B.mu);
  pthread_mutex_unlock(&B.mu);
}

static void reset_run(void) {
  B.events = B.starts = B.done = B.bad = 0;
  atomic_store(&B.finished, false);
  for (size_t i = 0; i < B.cells; i++) {
    atomic_store(&B.slots[i].busy, 0);
    B.slots[i].seq = 0;
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

typedef struct result {
  double seconds;
  double p50_us, p99_us;
  double cpu_us; /* CPU time of the whole process (every thread) per load */
} result;

static double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static result finish_result(uint64_t t0, uint64_t t1, double cpu0) {
  result r = {.seconds = (double)(t1 - t0) / 1e9, .cpu_us = (cpu_seconds() - cpu0) * 1e6 / (double)B.loads};
  qsort(B.latency, B.loads, sizeof *B.latency, cmp_u64);
  r.p50_us = (double)B.latency[B.loads / 2] / 1e3;
  r.p99_us = (double)B.latency[(B.loads * 99) / 100] / 1e3;
  return r;
}

/* Times B.loads loads made by `issue` (load i on slot s, with `context`):
 * each waits for its slot to be free and is stamped first; returns once
 * every load has reached LOADED. Every variant's producer; inlined into
 * each, so that `issue` is a direct call there, as the loop was written
 * out before. */
static inline __attribute__((always_inline)) result timed_loads(void (*issue)(uint64_t i, slot *s, void *context), void *context) {
  double cpu0 = cpu_seconds();
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < B.loads; i++) {
    slot *s = &B.slots[i % B.cells];
    acquire_slot(s);
    B.started[i] = now_ns();
    issue(i, s, context);
  }
  wait_finished();
  uint64_t t1 = now_ns();
  return finish_result(t0, t1, cpu0);
}

/* ------------------------------------------------------------------ */
/* loadstate                                                           */
/* ------------------------------------------------------------------ */

static void start_succeed(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  B.starts++;
  int rc = lds_job_succeed(rt, job, request, len);
  if (rc != LDS_OK) die("lds_job_succeed", rc);
}

static void on_event(const lds_event *e, void *user_data) {
  slot *s = user_data;
  B.events++;
  if (e->seq != s->seq + 1 || e->request_len != sizeof(uint64_t)) B.bad++;
  s->seq = e->seq;
  uint64_t index;
  memcpy(&index, e->request, sizeof index);
  if (e->type != LDS_EVENT_STATE || index >= B.loads) {
    B.bad++;
    return;
  }
  if (e->status == LDS_LOADING) {
    B.latency[index] = now_ns() - B.started[index];
  } else if (e->status == LDS_LOADED) {
    release_slot(s);
  } else {
    B.bad++;
  }
}

/* A runtime with the loader that succeeds at once and a cell per slot, for a run. */
static lds_runtime *open_run(lds_id *loader, uint32_t flags) {
  lds_runtime *rt;
  lds_runtime_options ro = LDS_RUNTIME_OPTIONS_INIT;
  ro.flags = flags;
  CHECK(lds_runtime_new(&ro, &rt));
  CHECK(lds_loader_new(rt, start_succeed, NULL, NULL, loader));
  for (size_t i = 0; i < B.cells; i++) CHECK(lds_loadable_new(rt, on_event, &B.slots[i], &B.slots[i].cell));
  reset_run();
  return rt;
}

/* Frees the run's runtime and checks that every load gave exactly its events and start. */
static void close_run(lds_runtime *rt, const char *name) {
  CHECK(lds_runtime_free(rt));
  if (B.events != 2 * B.loads || B.starts != B.loads || B.bad) {
    fprintf(stderr, "loads: %s: wrong events: %llu events, %llu starts, %llu bad for %zu loads\n", name,
            (unsigned long long)B.events, (unsigned long long)B.starts, (unsigned long long)B.bad, B.loads);
    exit(1);
  }
}

typedef struct single_run {
  lds_runtime *rt;
  lds_id loader;
  const lds_load_options *opts;
} single_run;

static void issue_load(uint64_t i, slot *s, void *context) {
  single_run *run = context;
  int rc = lds_loadable_load(run->rt, s->cell, run->loader, &i, sizeof i, run->opts);
  if (rc != LDS_OK) die("lds_loadable_load", rc);
}

/* Checks that the runtime counted every load once, or nothing with metrics off. */
static void check_metrics(lds_runtime *rt, uint32_t flags) {
  lds_runtime_statistics st = LDS_RUNTIME_STATISTICS_INIT;
  CHECK(lds_runtime_stats(rt, &st));
  uint64_t want = flags & LDS_RUNTIME_NO_METRICS ? 0 : B.loads;
  if (st.loads.started != want || st.loads.succeeded != want || st.loads.latency_count != want ||
      st.events_delivered != 2 * want)
    die("metrics count", 0);
}

static result run_loadstate(uint32_t timeout_ms, uint32_t flags) {
  single_run run;
  run.rt = open_run(&run.loader, flags);
  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.timeout_ms = timeout_ms;
  run.opts = timeout_ms ? &opts : NULL;

  result res = timed_loads(issue_load, &run);
  check_metrics(run.rt, flags);

  close_run(run.rt, "loadstate");
  return res;
}

/* The same loads handed over BATCH at a time with lds_runtime_submit (a
 * load's latency counts from when it joined its batch). */
enum { BATCH = 64 };

typedef struct batched_run {
  lds_runtime *rt;
  lds_id loader;
  size_t batch, n; /* loads a call; loads gathered */
  lds_op ops[BATCH];
  uint64_t indices[BATCH];
} batched_run;

static void issue_batched(uint64_t i, slot *s, void *context) {
  batched_run *run = context;
  size_t n = run->n;
  run->indices[n] = i;
  run->ops[n] = (lds_op){.op = LDS_OP_LOAD, .target = s->cell, .loader = run->loader, .data = &run->indices[n],
                         .data_len = sizeof run->indices[n]};
  if (++n == run->batch || i + 1 == B.loads) {
    int rc = lds_runtime_submit(run->rt, run->ops, n, NULL);
    if (rc != (int)n) die("lds_runtime_submit", rc);
    n = 0;
  }
  run->n = n;
}

static result run_loadstate_batched(void) {
  static batched_run run;
  memset(&run, 0, sizeof run);
  run.rt = open_run(&run.loader, 0);
  /* Fewer than `cells`, so that every slot a batch waits for was submitted. */
  run.batch = B.cells < BATCH ? B.cells : BATCH;

  result res = timed_loads(issue_batched, &run);

  close_run(run.rt, "batched");
  return res;
}

/* ------------------------------------------------------------------ */
/* Baseline: mutex-protected queue + uv_async_send + callback          */
/* ------------------------------------------------------------------ */

static struct {
  uv_loop_t loop;
  uv_async_t async;
  pthread_mutex_t mu;
  uint64_t *items, *spare;
  size_t count, cap, spare_cap;
  bool wake_pending, stop;
  void (*deliver)(uint64_t); /* the consumer's callback for one message */
} Q = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The consumer's callback for one message: the counterpart of a cell event. */
static void deliver(uint64_t index) {
  B.events++;
  B.latency[index] = now_ns() - B.started[index];
  release_slot(&B.slots[index % B.cells]);
}

static void on_async(uv_async_t *handle) {
  for (;;) {
    pthread_mutex_lock(&Q.mu);
    if (Q.count == 0) {
      Q.wake_pending = false;
      bool stop = Q.stop;
      pthread_mutex_unlock(&Q.mu);
      if (stop) uv_close((uv_handle_t *)handle, NULL);
      return;
    }
    uint64_t *batch = Q.items;
    size_t n = Q.count, cap = Q.cap;
    Q.items = Q.spare;
    Q.cap = Q.spare_cap;
    Q.count = 0;
    pthread_mutex_unlock(&Q.mu);
    for (size_t i = 0; i < n; i++) Q.deliver(batch[i]);
    Q.spare = batch; /* only this thread swaps the spare back in, under the next lock */
    Q.spare_cap = cap;
  }
}

static void push(uint64_t value) {
  pthread_mutex_lock(&Q.mu);
  if (Q.count == Q.cap) {
    Q.cap = Q.cap ? Q.cap * 2 : 1024;
    Q.items = realloc(Q.items, Q.cap * sizeof *Q.items);
    if (!Q.items) die("realloc", 0);
  }
  Q.items[Q.count++] = value;
  bool wake = !Q.wake_pending;
  Q.wake_pending = true;
  pthread_mutex_unlock(&Q.mu);
  if (wake) uv_async_send(&Q.async);
}

static void *loop_thread(void *arg) {
  (void)arg;
  uv_run(&Q.loop, UV_RUN_DEFAULT);
  return NULL;
}

/* Starts the queue's consumer: a libuv loop on its own thread calling `deliver`. */
static pthread_t open_queue(void (*deliver)(uint64_t)) {
  pthread_t thread;
  if (uv_loop_init(&Q.loop) != 0 || uv_async_init(&Q.loop, &Q.async, on_async) != 0) die("libuv init", 0);
  Q.stop = false;
  Q.deliver = deliver;
  if (pthread_create(&thread, NULL, loop_thread, NULL) != 0) die("pthread_create", 0);
  return thread;
}

/* Stops the consumer once the queue is empty and joins its thread. */
static void close_queue(pthread_t thread) {
  pthread_mutex_lock(&Q.mu);
  Q.stop = true;
  Q.wake_pending = true;
  pthread_mutex_unlock(&Q.mu);
  uv_async_send(&Q.async);
  pthread_join(thread, NULL);
  uv_loop_close(&Q.loop);
}

static void issue_message(uint64_t i, slot *s, void *context) {
  (void)s;
  (void)context;
  push(i);
}

static result run_baseline(void) {
  pthread_t thread = open_queue(deliver);
  reset_run();

  result res = timed_loads(issue_message, NULL);

  close_queue(thread);
  if (B.events != B.loads) die("baseline message count", 0);
  return res;
}

/* ------------------------------------------------------------------ */
/* C floor: the same loads through a minimal runtime written here      */
/* ------------------------------------------------------------------ */

/* One load's path, as loadstate's: the calling thread copies the request,
 * finds the cell under the table lock and queues a command; the loop thread
 * moves the cell to LOADING and reports it, makes a job, enters it in the job
 * table under the lock and calls the start function, whose succeed copies the
 * value, hands it to the job and takes the job out of the table under the
 * lock; when the start function has returned, the loop moves the cell to
 * LOADED with the value, reports it and frees the job. One load at a time per cell,
 * no options, no cancel, no sharing, no cache, LOOP delivery only. */

typedef struct fcell {
  uint64_t id, seq;
  int32_t status;
  void *request, *value;
  size_t request_len, value_len;
  uint32_t tickets; /* loads asked for (written under the table lock) */
  lds_event_fn on_event;
  void *user_data;
} fcell;

typedef struct fjob {
  uint64_t id;
  fcell *cell;
  void *value;
  size_t value_len;
  bool done; /* succeeded: out of the table, its value handed over */
} fjob;

typedef struct fcommand {
  fcell *cell;
  void *request;
  size_t len;
} fcommand;

static struct {
  pthread_mutex_t mu; /* the table lock: cells and jobs */
  fcell *cells;
  fjob **jobs;        /* open addressing by id, linear probing */
  size_t mask;
  uint64_t next_job;
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t floor_slot_of(uint64_t id) {
  size_t i = (size_t)(id * 0x9E3779B97F4A7C15ull) & F.mask;
  while (F.jobs[i] && F.jobs[i]->id != id) i = (i + 1) & F.mask;
  return i;
}

/* With F.mu held: takes job `id` out of the table (backward-shift deletion). */
static void floor_remove_locked(uint64_t id) {
  size_t i = floor_slot_of(id);
  if (!F.jobs[i]) return;
  F.jobs[i] = NULL;
  for (size_t j = (i + 1) & F.mask; F.jobs[j]; j = (j + 1) & F.mask) {
    size_t home = (size_t)(F.jobs[j]->id * 0x9E3779B97F4A7C15ull) & F.mask;
    if (((j - home) & F.mask) >= ((j - i) & F.mask)) {
      F.jobs[i] = F.jobs[j];
      F.jobs[j] = NULL;
      i = j;
    }
  }
}

static void floor_emit(fcell *c) {
  lds_event e = {.type = LDS_EVENT_STATE, .cell = c->id, .seq = ++c->seq, .status = c->status,
                 .value = c->value, .value_len = c->value_len, .request = c->request,
                 .request_len = c->request_len, .attempt = 1, .updated_at_ms = (uint64_t)time(NULL) * 1000};
  c->on_event(&e, c->user_data);
}

/* Any thread: the job's result. */
static int floor_job_succeed(uint64_t id, const void *value, size_t len) {
  void *copy = malloc(len ? len : 1);
  if (!copy) die("malloc", 0);
  memcpy(copy, value, len);
  pthread_mutex_lock(&F.mu);
  fjob *job = F.jobs[floor_slot_of(id)];
  if (!job) { /* never a job, or already ended */
    pthread_mutex_unlock(&F.mu);
    free(copy);
    return LDS_ECANCELED;
  }
  job->value = copy;
  job->value_len = len;
  job->done = true;
  floor_remove_locked(id);
  pthread_mutex_unlock(&F.mu);
  return LDS_OK;
}

/* The loader's start function, as start_succeed. */
static void floor_start(uint64_t job, const void *request, size_t len) {
  B.starts++;
  int rc = floor_job_succeed(job, request, len);
  if (rc != LDS_OK) die("floor_job_succeed", rc);
}

/* Loop thread: one queued load. */
static void floor_run(uint64_t message) {
  fcommand *cmd = (fcommand *)(uintptr_t)message;
  fcell *c = cmd->cell;
  free(c->request);
  free(c->value);
  c->request = cmd->request;
  c->request_len = cmd->len;
  c->value = NULL;
  c->value_len = 0;
  c->status = LDS_LOADING;
  free(cmd);
  floor_emit(c);

  fjob *job = malloc(sizeof *job);
  if (!job) die("malloc", 0);
  *job = (fjob){.cell = c};
  pthread_mutex_lock(&F.mu);
  job->id = ++F.next_job;
  F.jobs[floor_slot_of(job->id)] = job;
  pthread_mutex_unlock(&F.mu);
  floor_start(job->id, c->request, c->request_len);
  /* Ended inside the start function (the only case here): settled now. */
  if (job->done) {
    c->value = job->value;
    c->value_len = job->value_len;
    c->status = LDS_LOADED;
    floor_emit(c);
    free(job);
  }
}

/* Any thread: a load of cell `index`. */
static int floor_load(size_t index, const void *request, size_t len) {
  void *copy = malloc(len ? len : 1);
  fcommand *cmd = malloc(sizeof *cmd);
  if (!copy || !cmd) die("malloc", 0);
  memcpy(copy, request, len);
  pthread_mutex_lock(&F.mu);
  fcell *c = &F.cells[index];
  c->tickets++;
  pthread_mutex_unlock(&F.mu);
  *cmd = (fcommand){.cell = c, .request = copy, .len = len};
  push((uint64_t)(uintptr_t)cmd);
  return LDS_OK;
}

static void issue_floor_load(uint64_t i, slot *s, void *context) {
  (void)s;
  (void)context;
  floor_load(i % B.cells, &i, sizeof i);
}

static result run_floor(void) {
  size_t cap = 1;
  while (cap < 4 * B.cells) cap <<= 1;
  F.mask = cap - 1;
  F.jobs = calloc(cap, sizeof *F.jobs);
  F.cells = calloc(B.cells, sizeof *F.cells);
  if (!F.jobs || !F.cells) die("calloc", 0);
  for (size_t i = 0; i < B.cells; i++)
    F.cells[i] = (fcell){.id = i + 1, .on_event = on_event, .user_data = &B.slots[i]};
  pthread_t thread = open_queue(floor_run);
  reset_run();

  result res = timed_loads(issue_floor_load, NULL);

  close_queue(thread);
  if (B.events != 2 * B.loads || B.starts != B.loads || B.bad) die("C floor event count", 0);
  for (size_t i = 0; i < B.cells; i++) {
    free(F.cells[i].request);
    free(F.cells[i].value);
  }
  free(F.cells);
  free(F.jobs);
  return res;
}

/* ------------------------------------------------------------------ */
/* Loads in flight                                                     */
/* ------------------------------------------------------------------ */

/* Delivery thread: every load reached LOADING and every loader start ran. */
static void check_all_started(void) {
  if (B.starts == B.loads && B.events == B.loads) {
    pthread_mutex_lock(&B.mu);
    atomic_store(&B.finished, true);
    pthread_cond_broadcast(&B.cv);
    pthread_mutex_unlock(&B.mu);
  }
}

static void start_never(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt, (void)job, (void)request, (void)len, (void)data;
  B.starts++;
  check_all_started();
}

static void on_loading(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->status != LDS_LOADING) B.bad++;
  B.events++;
  check_all_started();
}

static void in_flight(size_t n) {
  long before = rss_kib();
  lds_runtime *rt;
  lds_id loader;
  lds_id *cells = malloc(n * sizeof *cells);
  if (!cells) die("malloc", 0);
  CHECK(lds_runtime_new(NULL, &rt));
  CHECK(lds_loader_new(rt, start_never, NULL, NULL, &loader));
  size_t saved = B.loads;
  B.loads = n; /* read by check_all_started */
  reset_run();
  for (size_t i = 0; i < n; i++) CHECK(lds_loadable_new(rt, on_loading, NULL, &cells[i]));
  long with_cells = rss_kib();
  uint64_t t0 = now_ns();
  for (size_t i = 0; i < n; i++) CHECK(lds_loadable_load(rt, cells[i], loader, "x", 1, NULL));
  wait_finished();
  uint64_t t1 = now_ns();
  long after = rss_kib();
  uint64_t t2 = now_ns();
  CHECK(lds_runtime_free(rt));
  uint64_t t3 = now_ns();
  long freed = rss_kib();
  malloc_trim(0);
  long trimmed = rss_kib();
  if (B.bad) die("in-flight events", 0);
  B.loads = saved;
  free(cells);

  double bytes = (double)after * 1024.0;
  printf("in flight: %zu cells, one load each whose loader never completes; all LOADING after %.0f ms\n", n,
         (double)(t1 - t0) / 1e6);
  printf("  VmRSS: before %.1f MiB | %zu cells created %.1f MiB | all loads in flight %.1f MiB = %.1f MB\n",
         (double)before / 1024.0, n, (double)with_cells / 1024.0, (double)after / 1024.0, bytes / 1e6);
  printf("  per cell %.0f bytes, per load in flight %.0f bytes\n", (double)(with_cells - before) * 1024.0 / (double)n,
         (double)(after - with_cells) * 1024.0 / (double)n);
  printf("  lds_runtime_free with %zu jobs running: %.0f ms; VmRSS after it %.1f MiB, after malloc_trim %.1f MiB\n", n,
         (double)(t3 - t2) / 1e6, (double)freed / 1024.0, (double)trimmed / 1024.0);
  printf("  target < 100 MB RSS with 100k in flight: %s (%.1f MB, %.1f MiB)\n", bytes < 100e6 ? "met" : "MISSED",
         bytes / 1e6, (double)after / 1024.0);
}

/* ------------------------------------------------------------------ */


int main(int argc, char **argv) {
  long loads = argc > 1 ? atol(argv[1]) : 200000;
  long cells = argc > 2 ? atol(argv[2]) : 1024;
  long rounds = argc > 3 ? atol(argv[3]) : 5;
  long flight = argc > 4 ? atol(argv[4]) : 100000;
  if (loads < 1 || cells < 1 || rounds < 1 || rounds > 99 || flight < 1) {
    fprintf(stderr, "usage: %s [loads] [cells] [rounds] [in_flight]\n", argv[0]);
    return 2;
  }
  if (cells > loads) cells = loads;
  B.loads = (size_t)loads;
  B.cells = (size_t)cells;
  B.slots = aligned_alloc(64, B.cells * sizeof *B.slots);
  B.started = calloc(B.loads, sizeof *B.started);
  B.latency = calloc(B.loads, sizeof *B.latency);
  if (!B.slots || !B.started || !B.latency) die("malloc", 0);
  memset(B.slots, 0, B.cells * sizeof *B.slots);

  printf("# command: make bench BENCH_ARGS=\"%ld %ld %ld %ld\"   (runs: build/loads %ld %ld %ld %ld)\n", loads, cells,
         rounds, flight, loads, cells, rounds, flight);
  print_machine("libuv", uv_version_string());
  printf("# loads through a host loader that succeeds inside its start callback, LOOP delivery;\n"
         "# %ld cells round-robin (at most %ld loads in flight); events = cell events "
         "(LOADING + LOADED, 2 per load);\n# callbacks = events + loader starts (3 per load); "
         "latency = lds_loadable_load -> LOADING event.\n\n",
         cells, cells);

  in_flight((size_t)flight);
  printf("\n");

  enum { BASE, PLAIN, NO_METRICS, TIMEOUT, BATCHED, FLOOR, KINDS };
  static const char *const names[KINDS] = {"libuv baseline", "loadstate",         "loadstate -metrics",
                                           "loadstate+timeout", "loadstate batched", "C floor"};
  double rate[KINDS][100], p50[KINDS][100], p99[KINDS][100], cpu[KINDS][100];
  printf("%-18s %5s %10s %10s %11s %8s %8s %11s\n", "run", "round", "loads/s", "events/s", "callbacks/s", "p50 us",
         "p99 us", "cpu us/load");
  for (int r = 0; r < rounds; r++) {
    for (int slot = 0; slot < KINDS; slot++) {
      /* Metrics on and off run back to back, in turns first: neither gains from its place. */
      int k = r % 2 == 1 && slot == PLAIN ? NO_METRICS : r % 2 == 1 && slot == NO_METRICS ? PLAIN : slot;
      result res = k == BASE      ? run_baseline()
                   : k == BATCHED ? run_loadstate_batched()
                   : k == FLOOR   ? run_floor()
                   : k == NO_METRICS ? run_loadstate(0, LDS_RUNTIME_NO_METRICS)
                                  : run_loadstate(k == TIMEOUT ? 60000 : 0, 0);
      double lps = (double)loads / res.seconds;
      rate[k][r] = lps;
      p50[k][r] = res.p50_us;
      p99[k][r] = res.p99_us;
      cpu[k][r] = res.cpu_us;
      /* The baseline's message is its one event and one callback. */
      printf("%-18s %5d %10.0f %10.0f %11.0f %8.0f %8.0f %11.2f\n", names[k], r + 1, lps, k == BASE ? lps : 2 * lps,
             k == BASE ? lps : 3 * lps, res.p50_us, res.p99_us, res.cpu_us);
      fflush(stdout);
    }
  }

  double m[KINDS], m50[KINDS], m99[KINDS], mcpu[KINDS];
  for (int k = 0; k < KINDS; k++) {
    m[k] = median(rate[k], (int)rounds);
    m50[k] = median(p50[k], (int)rounds);
    m99[k] = median(p99[k], (int)rounds);
    mcpu[k] = median(cpu[k], (int)rounds);
  }
  printf("\nmedian of %ld rounds, %ld loads each:\n", rounds, loads);
  for (int k = 0; k < KINDS; k++)
    printf("  %-18s %9.0f loads/s %9.0f events/s  p50 %6.0f us  p99 %6.0f us  cpu %5.2f us/load\n", names[k], m[k],
           k == BASE ? m[k] : 2 * m[k], m50[k], m99[k], mcpu[k]);
  double ratio = m[BASE] / m[PLAIN];
  printf("  baseline/loadstate: %.1fx the throughput, %.1fx less CPU per load\n", ratio, mcpu[PLAIN] / mcpu[BASE]);
  printf("  metrics on/off: %.3f of the throughput, %.3fx the CPU per load (the same loads, metrics counted\n"
         "    or not: LDS_RUNTIME_NO_METRICS)\n", m[PLAIN] / m[NO_METRICS], mcpu[PLAIN] / mcpu[NO_METRICS]);
  printf("  timeout/plain: %.2f of the throughput, %.2fx the CPU per load\n", m[TIMEOUT] / m[PLAIN],
         mcpu[TIMEOUT] / mcpu[PLAIN]);
  printf("  batched/plain: %.2fx the throughput, %.2fx the CPU per load (loads given %d at a time to "
         "lds_runtime_submit);\n  baseline/batched: %.1fx the throughput\n",
         m[BATCHED] / m[PLAIN], mcpu[BATCHED] / mcpu[PLAIN], BATCH, m[BASE] / m[BATCHED]);
  printf("  baseline/C floor: %.1fx the throughput, %.1fx less CPU per load (the same loads through a minimal\n"
         "    runtime in plain C, no library); loadstate/C floor: %.2f of the throughput\n",
         m[BASE] / m[FLOOR], mcpu[FLOOR] / mcpu[BASE], m[PLAIN] / m[FLOOR]);
  /* Latency without queueing: one load in flight at a time. */
  size_t saved_loads = B.loads, saved_cells = B.cells;
  B.loads = B.loads < 20000 ? B.loads : 20000;
  B.cells = 1;
  result lone_base = run_baseline(), lone = run_loadstate(0, 0);
  B.loads = saved_loads;
  B.cells = saved_cells;
  printf("\none load in flight at a time (%zu loads, 1 cell): load -> LOADING latency\n",
         saved_loads < 20000 ? saved_loads : (size_t)20000);
  printf("  %-18s p50 %6.1f us  p99 %6.1f us\n", names[BASE], lone_base.p50_us, lone_base.p99_us);
  printf("  %-18s p50 %6.1f us  p99 %6.1f us\n", names[PLAIN], lone.p50_us, lone.p99_us);

  printf("targets:\n");
  printf("  >= 300000 loads/s:                  %s (%.0f)\n", m[PLAIN] >= 300000 ? "met" : "MISSED", m[PLAIN]);
  printf("  >= 900000 events/s (cell events):   %s (%.0f; %.0f callbacks/s with loader starts)\n",
         2 * m[PLAIN] >= 900000 ? "met" : "MISSED", 2 * m[PLAIN], 3 * m[PLAIN]);
  printf("  within 3x of the libuv baseline:    %s (%.1fx)\n", ratio <= 3 ? "met" : "MISSED", ratio);
  printf("  metrics cost <= 5%% of loads/s:      %s (%.1f%%)\n", m[PLAIN] >= 0.95 * m[NO_METRICS] ? "met" : "MISSED",
         100.0 * (1.0 - m[PLAIN] / m[NO_METRICS]));

  free(B.slots);
  free(B.started);
  free(B.latency);
  free(Q.items);
  free(Q.spare);
  return 0;
}
