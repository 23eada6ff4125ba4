/* scheduling.c — what a loader's concurrency limit costs, and what queued
 * loads hold in memory.
 *
 *   build/scheduling [loads] [rounds] [limit] [queued]
 *   (defaults: 100000 5 64 100000)
 *
 * Throughput: `loads` cells each start one load at once through a host
 * loader, with max_concurrent = `limit` and without a limit, in two
 * scenarios. "worker": the start function hands the job to a completer
 * thread, which ends jobs 32 at a time (fewer only for the last ones)
 * with one lds_runtime_submit of LDS_OP_SUCCEED calls (a host that answers
 * in batches, the same with and without the limit); with the limit at
 * most `limit` jobs run and the others wait in the loader's queue, flagged
 * LDS_FLAG_QUEUED. "in start": the start function ends the job itself, so
 * that no more than one runs and the limit is never reached; what the
 * limited loader adds is its admission checks alone. Rounds alternate
 * which variant goes first; each run has a runtime of its own, and the
 * cells are made before the clock starts. A run ends when every cell has
 * reached LOADED; CPU time is the whole process's (every thread).
 *
 * Memory: `queued` cells each start a load through a loader with
 * max_concurrent 1 whose jobs never end, so all but one wait in its queue.
 * VmRSS is read once the cells exist and once every load has reported its
 * LOADING event; the difference is what the queued loads hold. The same is
 * then measured with no limit (every job started and running), for
 * comparison.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"

static void die(const char *what, int rc) {
  fprintf(stderr, "%s: %d (%s)\n", what, rc, lds_strerror(rc));
  exit(1);
}

/* What the callbacks of one round count. */
typedef struct round_state {
  lds_runtime *rt;
  /* Counted without a lock, so that the counting does not make the
   * threads wait for each other; the main thread is woken once, through
   * done, when a count reaches the target. */
  _Atomic uint64_t loaded;   /* LOADED events */
  _Atomic uint64_t loading;  /* first events of a load (LOADING, queued or not) */
  _Atomic uint64_t queued;   /* events flagged LDS_FLAG_QUEUED */
  uint64_t target;
  pthread_mutex_t done_mu;
  pthread_cond_t done;
  /* Jobs for the completer thread: a ring, under mu. */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lds_id *ring;
  size_t cap, head, tail;
  bool closing;
  bool complete;      /* false: jobs never end (memory runs) */
  bool in_start;      /* jobs end inside their start function */
  uint64_t running, most_running;
  uint64_t completed; /* jobs taken by the completer */
} round_state;

static void on_event(const lds_event *e, void *data) {
  round_state *r = data;
  if (e->type != LDS_EVENT_STATE) return;
  bool reached = false;
  if (e->seq == 1) reached |= atomic_fetch_add(&r->loading, 1) + 1 == r->target;
  if (e->flags & LDS_FLAG_QUEUED) atomic_fetch_add(&r->queued, 1);
  if (e->status == LDS_LOADED) reached |= atomic_fetch_add(&r->loaded, 1) + 1 == r->target;
  if (reached) {
    pthread_mutex_lock(&r->done_mu);
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->done_mu);
  }
}

/* Waits until *count reaches the target. */
static void wait_for(round_state *r, _Atomic uint64_t *count) {
  pthread_mutex_lock(&r->done_mu);
  while (atomic_load(count) < r->target) pthread_cond_wait(&r->done, &r->done_mu);
  pthread_mutex_unlock(&r->done_mu);
}

enum { BATCH = 32 };

/* How many waiting jobs make the completer start a batch. */
static size_t batch_due(const round_state *r) {
  uint64_t left = r->target - r->completed;
  return left < BATCH ? (size_t)left : BATCH;
}

static void on_start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)request;
  (void)len;
  round_state *r = data;
  pthread_mutex_lock(&r->mu);
  r->running++;
  if (r->running > r->most_running) r->most_running = r->running;
  if (r->complete && r->in_start) {
    r->running--;
  } else if (r->complete) {
    r->ring[r->tail % r->cap] = job;
    r->tail++;
    if (r->tail - r->head >= batch_due(r)) pthread_cond_broadcast(&r->cv);
  }
  pthread_mutex_unlock(&r->mu);
  if (r->complete && r->in_start) {
    int rc = lds_job_succeed(rt, job, "v", 1);
    if (rc != LDS_OK) die("lds_job_succeed", rc);
  }
}

static void *completer(void *arg) {
  round_state *r = arg;
  lds_id batch[256];
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while ((r->head == r->tail || r->tail - r->head < batch_due(r)) && !r->closing)
      pthread_cond_wait(&r->cv, &r->mu);
    size_t n = 0;
    while (r->head != r->tail && n < BATCH) batch[n++] = r->ring[r->head++ % r->cap];
    r->running -= n;
    r->completed += n;
    bool done = n == 0 && r->closing;
    pthread_mutex_unlock(&r->mu);
    if (done) return NULL;
    lds_op ops[256];
    for (size_t i = 0; i < n; i++)
      ops[i] = (lds_op){.op = LDS_OP_SUCCEED, .target = batch[i], .data = "v", .data_len = 1};
    int rc = lds_runtime_submit(r->rt, ops, n, NULL);
    if (rc != (int)n) die("lds_runtime_submit", rc);
  }
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
         ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

static double rss_mib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return (double)kb / 1024.0;
}

/* Creates a runtime, a loader with max_concurrent `limit` (0: none) and
 * `n` cells reporting to r. */
static lds_id *setup(round_state *r, uint64_t n, uint32_t limit, bool complete, lds_id *loader) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  pthread_mutex_init(&r->done_mu, NULL);
  pthread_cond_init(&r->done, NULL);
  r->target = n;
  r->complete = complete;
  r->cap = (size_t)n + 1;
  r->ring = complete ? malloc(r->cap * sizeof *r->ring) : NULL;
  int rc = lds_runtime_new(NULL, &r->rt);
  if (rc) die("lds_runtime_new", rc);
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = on_start;
  o.loader_data = r;
  o.max_concurrent = limit;
  rc = lds_loader_new_ex(r->rt, &o, loader);
  if (rc) die("lds_loader_new_ex", rc);
  lds_id *cells = malloc(n * sizeof *cells);
  if (!cells || (complete && !r->ring)) die("malloc", LDS_ENOMEM);
  for (uint64_t i = 0; i < n; i++) {
    rc = lds_loadable_new(r->rt, on_event, r, &cells[i]);
    if (rc) die("lds_loadable_new", rc);
  }
  return cells;
}

static void load_all(round_state *r, lds_id *cells, uint64_t n, lds_id loader) {
  for (uint64_t i = 0; i < n; i++) {
    int rc;
    while ((rc = lds_loadable_load(r->rt, cells[i], loader, "r", 1, NULL)) == LDS_EAGAIN) sched_yield();
    if (rc) die("lds_loadable_load", rc);
  }
}

static void teardown(round_state *r, lds_id *cells) {
  int rc = lds_runtime_free(r->rt);
  if (rc) die("lds_runtime_free", rc);
  free(cells);
  free(r->ring);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->done_mu);
  pthread_cond_destroy(&r->done);
}

typedef struct result {
  double loads_per_s, cpu_s, cpu_us_per_load;
  uint64_t queued_events, most_running;
} result;

/* in_start: the jobs end inside their start function (so never more than
 * one runs and the limit is never reached: what is measured is the cost of
 * the admission checks alone); otherwise the completer thread ends them. */
static result throughput(uint64_t n, uint32_t limit, bool in_start) {
  round_state r;
  lds_id loader;
  lds_id *cells = setup(&r, n, limit, true, &loader);
  r.in_start = in_start;
  pthread_t thread;
  pthread_create(&thread, NULL, completer, &r);
  double cpu0 = cpu_seconds();
  uint64_t t0 = now_ns();
  load_all(&r, cells, n, loader);
  wait_for(&r, &r.loaded);
  pthread_mutex_lock(&r.mu);
  r.closing = true;
  pthread_cond_broadcast(&r.cv);
  pthread_mutex_unlock(&r.mu);
  uint64_t t1 = now_ns();
  double cpu1 = cpu_seconds();
  pthread_join(thread, NULL);
  result out = {
      .loads_per_s = (double)n / ((double)(t1 - t0) / 1e9),
      .cpu_s = cpu1 - cpu0,
      .cpu_us_per_load = (cpu1 - cpu0) * 1e6 / (double)n,
      .queued_events = atomic_load(&r.queued),
      .most_running = r.most_running,
  };
  teardown(&r, cells);
  return out;
}

/* RSS of n loads in flight (limit 1: all but one queued; 0: all running). */
static double memory(uint64_t n, uint32_t limit, const char *label) {
  double before = rss_mib();
  round_state r;
  lds_id loader;
  lds_id *cells = setup(&r, n, limit, false, &loader);
  double with_cells = rss_mib();
  uint64_t t0 = now_ns();
  load_all(&r, cells, n, loader);
  wait_for(&r, &r.loading);
  pthread_mutex_lock(&r.mu);
  uint64_t queued = atomic_load(&r.queued), running = r.running;
  pthread_mutex_unlock(&r.mu);
  uint64_t t1 = now_ns();
  double loaded = rss_mib();
  uint64_t f0 = now_ns();
  teardown(&r, cells);
  uint64_t f1 = now_ns();
  double delta = loaded - with_cells;
  printf("%s: %llu cells, one load each, jobs never end; all LOADING after %.0f ms (%llu flagged QUEUED, %llu "
         "started)\n",
         label, (unsigned long long)n, (double)(t1 - t0) / 1e6, (unsigned long long)queued,
         (unsigned long long)running);
  printf("  VmRSS: before %.1f MiB | cells created %.1f MiB | all loads in flight %.1f MiB"
         " -> the loads hold %.1f MiB = %.1f MB (%.0f bytes a load); lds_runtime_free %.0f ms\n",
         before, with_cells, loaded, delta, delta * 1.048576, delta * 1048576.0 / (double)n,
         (double)(f1 - f0) / 1e6);
  return delta * 1.048576;
}

int main(int argc, char **argv) {
  uint64_t loads = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  uint32_t limit = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 64;
  uint64_t queued = argc > 4 ? strtoull(argv[4], NULL, 10) : 100000;
  if (loads == 0 || rounds <= 0 || rounds > 99 || limit == 0) {
    fprintf(stderr, "usage: %s [loads] [rounds 1-99] [limit >= 1] [queued]\n", argv[0]);
    return 2;
  }
  printf("# command: make bench-scheduling BENCH_SCHEDULING_ARGS=\"%llu %d %u %llu\"   (runs: build/scheduling %llu %d %u "
         "%llu)\n",
         (unsigned long long)loads, rounds, limit, (unsigned long long)queued, (unsigned long long)loads, rounds,
         limit, (unsigned long long)queued);
  print_machine("loads through a host loader (jobs ended by a worker thread, or in their start)", "");
  if (queued > 0) {
    double held = memory(queued, 1, "queued (max_concurrent 1)");
    memory(queued, 0, "running (no limit)     ");
    printf("target: %llu queued loads hold < 40 MB beyond the cells: %s (%.1f MB)\n", (unsigned long long)queued,
           held < 40.0 ? "met" : "MISSED", held);
  }
  /* [scenario][limited]: scenario 0 = a worker ends the jobs (64 run, the
   * rest wait), 1 = the jobs end in their start (the limit never reached). */
  double rate[2][2][99], cpu[2][2][99];
  static const char *const names[2][2] = {{"worker, unlimited", "worker, max_concurrent"},
                                          {"in start, unlimited", "in start, max_concurrent"}};
  printf("\nrun                       round    loads/s   cpu s  cpu us/load  QUEUED events  most running\n");
  for (int i = 0; i < rounds; i++) {
    for (int scenario = 0; scenario < 2; scenario++) {
      /* Alternate which goes first, so that neither always runs on a warmer machine. */
      for (int k = 0; k < 2; k++) {
        int limited = (k == 0) == (i % 2 == 0);
        result r = throughput(loads, limited ? limit : 0, scenario == 1);
        rate[scenario][limited][i] = r.loads_per_s;
        cpu[scenario][limited][i] = r.cpu_s;
        printf("%-25s %5d %10.0f %7.3f %12.2f %14llu %13llu\n", names[scenario][limited], i + 1, r.loads_per_s,
               r.cpu_s, r.cpu_us_per_load, (unsigned long long)r.queued_events, (unsigned long long)r.most_running);
        fflush(stdout);
      }
    }
  }
  printf("\nmedian of %d rounds, %llu loads each:\n", rounds, (unsigned long long)loads);
  double ratio[2];
  for (int scenario = 0; scenario < 2; scenario++) {
    double lr = median(rate[scenario][1], rounds), lc = median(cpu[scenario][1], rounds);
    double fr = median(rate[scenario][0], rounds), fc = median(cpu[scenario][0], rounds);
    printf("  %-25s %10.0f loads/s  cpu %.3f s (%.2f us/load)   [max_concurrent %u]\n", names[scenario][1], lr, lc,
           lc * 1e6 / (double)loads, limit);
    printf("  %-25s %10.0f loads/s  cpu %.3f s (%.2f us/load)\n", names[scenario][0], fr, fc,
           fc * 1e6 / (double)loads);
    printf("  %s: limited/unlimited %.3f of the throughput, %.3fx the CPU\n",
           scenario ? "jobs ended in their start (the limit never reached)" : "jobs ended by a worker (the queue used)",
           lr / fr, lc / fc);
    ratio[scenario] = lr / fr;
  }
  printf("target: the limit costs at most 10%% loads/s: jobs ended by a worker %s (%.1f%%); "
         "jobs ended in their start %s (%.1f%%)\n",
         ratio[0] >= 0.9 ? "met" : "MISSED", (1.0 - ratio[0]) * 100.0, ratio[1] >= 0.9 ? "met" : "MISSED",
         (1.0 - ratio[1]) * 100.0);
  return 0;
}
