/*
 * redis.c — the Redis cache: its hits next to hiredis alone, and processes
 * sharing loads through it next to the same processes without it, in one
 * run, against a redis-server of its own (Tests/support/redis_server.c:
 * 127.0.0.1, a free port, no persistence).
 *
 *   usage: redis [keys] [value_bytes] [gets] [window] [rounds] [processes] [loads] [loader_us]
 *                [unrelated] [matching] [cluster]
 *          defaults: 1000 100 200000 256 5 4 10000 1000 4000000 100000 1
 *
 * 1. Cache hits. Every key ("key:%012u", 16 bytes) is put once through
 *    lds_cache_put; every get below is a hit.
 *    - hiredis pipelined: the baseline, redis-benchmark's way (-P): one
 *      plain hiredis connection sends `window` GETs of the cache's own Redis
 *      keys (redisAppendCommand), then reads the `window` replies, and
 *      again; each reply is freed.
 *    - lds_cache_get_many: the same keys in batches of `window` keys (at
 *      most LDS_CACHE_GET_MANY_MAX), one call per batch: one hand-off to
 *      the loop, the batch's GETs pipelined on the cache's connection.
 *    - loadstate loads: `window` cells each load one key, cache-first
 *      (LDS_POLICY_CACHE_FIRST, fresh for an hour) with the Redis cache, and
 *      the main thread waits for the `window` LOADED events (FROM_CACHE)
 *      before the next batch: the same depth of GETs in flight. The loader
 *      is never called (checked).
 *    - loads, no cache (the floor): the same loads without a cache,
 *      through a loader that ends each job in its start: what the loads
 *      cost with no Redis at all.
 *    - hiredis GET and lds_cache_get, one at a time (gets / 10 of each):
 *      a round trip each, from the main thread.
 *    Client CPU is the benchmark process's (every thread: the loop's too),
 *    server CPU redis-server's (/proc/PID/stat), per get.
 *
 * 2. Processes. `processes` processes (this program again, exec'd) each
 *    make `loads` loads over `keys` keys (key i % keys, the same order in
 *    every process), `window` cells each, started at once. The loader
 *    ends its job loader_us later (a thread of the process completes the
 *    jobs in order): an upstream call of that latency.
 *    - shared: LDS_LOAD_SHARE, cache-first with the Redis cache (a new key
 *      prefix every round, so each round starts empty): one loader call
 *      per key among all the processes, the rest Redis hits.
 *    - alone: the same loads without a cache or sharing: every load calls
 *      the loader.
 *    Reported: loader calls of all processes, wall time from the start to
 *    the last process's last load, and CPU seconds of the processes
 *    (getrusage of each, summed) and of redis-server.
 *
 * 3. Invalidation. `unrelated` keys of another application fill the
 *    database; the cache (prefix "inv:") holds `matching` entries under
 *    "item/" (put by 4 threads) and 10 under "page/". Redis's slow log
 *    keeps every command that held Redis 100 us or more
 *    (slowlog-log-slower-than 100: with 0, Redis 7 also logs each command
 *    a script runs, which lengthens the script it measures). Each round: lds_cache_invalidate of "page/" (10
 *    keys), of "item/" (`matching` keys, in batches), both heard by a
 *    second runtime's cache of the same prefix before the next step, and
 *    for comparison 0.4's way (one script scanning the database for the
 *    prefix) run with hiredis. 0 unrelated keys skips this part.
 *
 * 4. Cluster (cluster = 1). A Redis Cluster of 6 redis-servers (3 masters,
 *    3 replicas, joined by redis-cli --cluster create): the get_many and
 *    cache-first load runs of 1 and the shared processes of 2, each on the
 *    single server and on the cluster in turn (servers' CPU: every node's);
 *    then invalidation of 10 and of `matching` keys on the cluster, the
 *    slow logs of every node read as in 3.
 *
 * Every variant runs `rounds` times, interleaved; the summary gives medians.
 */
#include "bench_util.h"
#include "redis_server.h"
#include <loadstate.h>

#include <errno.h>
#include <stdarg.h>
#include <strings.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEY_LEN 16

static void die(const char *what, int rc) {
  fprintf(stderr, "redis bench: %s failed: %d (%s)\n", what, rc, rc < 0 ? lds_strerror(rc) : "");
  exit(1);
}

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
         (double)u.ru_stime.tv_usec / 1e6;
}

/* CPU seconds of a process, from /proc/PID/stat (utime + stime). */
static double process_cpu_s(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return 0;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* key:%012u (16 bytes); main keeps keys below 10^9. */
/* The Redis key of the entry of `key` under the prefix "bench:": the
 * prefix, the key's hash tag (FNV-1a of its bytes folded to 12 bits, three
 * hex digits in braces), "v:", the key (see the header's Redis section). */
static int entry_name(char *out, size_t size, const char *key, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)key[i]) * 16777619u;
  unsigned t = (h ^ (h >> 12) ^ (h >> 24)) & 0xfff;
  return snprintf(out, size, "bench:{%03x}v:%.*s", t, (int)len, key);
}

static void key_of(char out[KEY_LEN + 1], size_t i) { snprintf(out, KEY_LEN + 1, "key:%012u", (unsigned)(i % 1000000000u)); }

/* ------------------------------------------------------------------ */
/* Waiting for events                                                  */
/* ------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

/* ------------------------------------------------------------------ */
/* 1. Cache hits                                                       */
/* ------------------------------------------------------------------ */

static struct {
  size_t keys, value_len, gets, window;
  redis_server srv;
  lds_runtime *rt;
  lds_id cache, loader, inline_loader;
  bool no_cache;  /* the floor runs: loads without a cache */
  unsigned char *inline_value;
  lds_id *cells;
  redisContext *hiredis;
  char (*names)[40];  /* the Redis keys of the entries of the keys, for the hiredis runs */
  const char *url;    /* where the processes' caches connect: the server's, or the cluster's */
  pid_t servers[6];   /* whose CPU counts as the server's: the server, or the cluster's nodes */
  int server_count;
  /* Under lock. */
  size_t ended, wrong;
  atomic_ulong loader_calls;
} H;

static double process_cpu_s(pid_t pid);

/* CPU seconds of the server(s) the runs use. */
static double servers_cpu_s(void) {
  double sum = 0;
  for (int i = 0; i < H.server_count; i++) sum += process_cpu_s(H.servers[i]);
  return sum;
}

static void never_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)request;
  (void)len;
  (void)data;
  atomic_fetch_add(&H.loader_calls, 1);
  lds_job_fail(rt, job, 1, "not a hit");
}

/* The floor: a loader that ends its job in its start, with a value as large. */
static void inline_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)request;
  (void)len;
  lds_job_succeed(rt, job, data, H.value_len);
}

static void hit_event(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE || (e->status != LDS_LOADED && e->status != LDS_ERROR)) return;
  bool cached = H.no_cache ? !(e->flags & LDS_FLAG_FROM_CACHE) : (e->flags & LDS_FLAG_FROM_CACHE) != 0;
  bool right = e->status == LDS_LOADED && cached && e->value_len == H.value_len;
  pthread_mutex_lock(&lock);
  H.ended++;
  if (!right) H.wrong++;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
}

typedef struct measure {
  double per_s, client_us, server_us;
} measure;

static measure finish_measure(size_t n, uint64_t t0, double c0, double s0) {
  double secs = (double)(now_ns() - t0) / 1e9;
  measure m = {(double)n / secs, (cpu_s() - c0) * 1e6 / (double)n,
               (servers_cpu_s() - s0) * 1e6 / (double)n};
  return m;
}

static measure run_pipelined(void) {
  size_t n = 0, next = 0;
  uint64_t t0 = now_ns();
  double c0 = cpu_s(), s0 = servers_cpu_s();
  while (n < H.gets) {
    size_t batch = H.gets - n < H.window ? H.gets - n : H.window;
    for (size_t i = 0; i < batch; i++) {
      const char *name = H.names[next++ % H.keys];
      redisAppendCommand(H.hiredis, "GET %b", name, strlen(name));
    }
    for (size_t i = 0; i < batch; i++) {
      redisReply *r;
      if (redisGetReply(H.hiredis, (void **)&r) != REDIS_OK || r->type != REDIS_REPLY_STRING) die("pipelined GET", 0);
      freeReplyObject(r);
    }
    n += batch;
  }
  return finish_measure(n, t0, c0, s0);
}

/* Cache-first loads that all hit the Redis cache, or (no_cache) the same
 * loads without a cache through a loader that ends them at once. */
static measure run_loads(bool no_cache) {
  char key[KEY_LEN + 1];
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  if (!no_cache) {
    o.cache = H.cache;
    o.cache_policy = LDS_POLICY_CACHE_FIRST;
    o.fresh_ms = 3600000;
  }
  H.no_cache = no_cache;
  lds_id loader = no_cache ? H.inline_loader : H.loader;
  size_t n = 0, next = 0;
  uint64_t t0 = now_ns();
  double c0 = cpu_s(), s0 = servers_cpu_s();
  while (n < H.gets) {
    size_t batch = H.gets - n < H.window ? H.gets - n : H.window;
    pthread_mutex_lock(&lock);
    H.ended = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < batch; i++) {
      key_of(key, next++ % H.keys);
      int rc = lds_loadable_load(H.rt, H.cells[i], loader, key, KEY_LEN, &o);
      if (rc) die("lds_loadable_load", rc);
    }
    pthread_mutex_lock(&lock);
    while (H.ended < batch) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    n += batch;
  }
  measure m = finish_measure(n, t0, c0, s0);
  if (H.wrong || atomic_load(&H.loader_calls)) die("loads: not every load was a cache hit", (int)H.wrong);
  return m;
}

/* lds_cache_get_many in batches of `window` keys (at most
 * LDS_CACHE_GET_MANY_MAX): one call, one hand-off to the loop and one
 * pipeline of GETs per batch. */
static measure run_get_many(void) {
  size_t depth = H.window < LDS_CACHE_GET_MANY_MAX ? H.window : LDS_CACHE_GET_MANY_MAX;
  char(*names)[KEY_LEN + 1] = calloc(depth, sizeof *names);
  const void **keys = calloc(depth, sizeof *keys);
  size_t *lens = calloc(depth, sizeof *lens);
  lds_cache_value *out = calloc(depth, sizeof *out);
  int *results = calloc(depth, sizeof *results);
  if (!names || !keys || !lens || !out || !results) die("calloc", 0);
  size_t n = 0, next = 0;
  uint64_t t0 = now_ns();
  double c0 = cpu_s(), s0 = servers_cpu_s();
  while (n < H.gets) {
    size_t batch = H.gets - n < depth ? H.gets - n : depth;
    for (size_t i = 0; i < batch; i++) {
      key_of(names[i], next++ % H.keys);
      keys[i] = names[i];
      lens[i] = KEY_LEN;
    }
    int rc = lds_cache_get_many(H.rt, H.cache, batch, keys, lens, out, results);
    if (rc != (int)batch) die("lds_cache_get_many", rc);
    for (size_t i = 0; i < batch; i++) {
      if (out[i].value_len != H.value_len) die("lds_cache_get_many: value", results[i]);
      lds_cache_value_clear(&out[i]);
    }
    n += batch;
  }
  measure m = finish_measure(n, t0, c0, s0);
  free(names);
  free(keys);
  free(lens);
  free(out);
  free(results);
  return m;
}

static measure run_sync_hiredis(size_t gets) {
  uint64_t t0 = now_ns();
  double c0 = cpu_s(), s0 = servers_cpu_s();
  for (size_t i = 0; i < gets; i++) {
    const char *name = H.names[i % H.keys];
    redisReply *r = redisCommand(H.hiredis, "GET %b", name, strlen(name));
    if (r == NULL || r->type != REDIS_REPLY_STRING) die("GET", 0);
    freeReplyObject(r);
  }
  return finish_measure(gets, t0, c0, s0);
}

static measure run_cache_get(size_t gets) {
  char key[KEY_LEN + 1];
  uint64_t t0 = now_ns();
  double c0 = cpu_s(), s0 = servers_cpu_s();
  for (size_t i = 0; i < gets; i++) {
    key_of(key, i % H.keys);
    lds_cache_value v;
    int rc = lds_cache_get(H.rt, H.cache, key, KEY_LEN, &v);
    if (rc != 1 || v.value_len != H.value_len) die("lds_cache_get", rc);
    lds_cache_value_clear(&v);
  }
  return finish_measure(gets, t0, c0, s0);
}

static void hits_setup(void) {
  int rc = lds_runtime_new(NULL, &H.rt);
  if (rc) die("lds_runtime_new", rc);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "bench:";
  if ((rc = lds_redis_cache_new(H.rt, H.srv.url, &o, &H.cache))) die("lds_redis_cache_new", rc);
  if ((rc = lds_loader_new(H.rt, never_loader, NULL, NULL, &H.loader))) die("lds_loader_new", rc);
  H.inline_value = calloc(1, H.value_len);
  if ((rc = lds_loader_new(H.rt, inline_loader, H.inline_value, NULL, &H.inline_loader))) die("lds_loader_new", rc);
  H.cells = calloc(H.window, sizeof *H.cells);
  H.names = calloc(H.keys, sizeof *H.names);
  if (H.names == NULL) die("calloc", 0);
  for (size_t i = 0; i < H.window; i++)
    if ((rc = lds_loadable_new(H.rt, hit_event, NULL, &H.cells[i]))) die("lds_loadable_new", rc);
  unsigned char *value = malloc(H.value_len);
  char key[KEY_LEN + 1];
  for (size_t i = 0; i < H.keys; i++) {
    for (size_t j = 0; j < H.value_len; j++) value[j] = (unsigned char)(i + j);
    key_of(key, i);
    if ((rc = lds_cache_put(H.rt, H.cache, key, KEY_LEN, value, H.value_len))) die("lds_cache_put", rc);
    entry_name(H.names[i], sizeof H.names[i], key, KEY_LEN);
  }
  free(value);
  H.hiredis = redisConnect("127.0.0.1", H.srv.port);
  if (H.hiredis == NULL || H.hiredis->err) die("redisConnect", 0);
}

/* ------------------------------------------------------------------ */
/* 2. Processes: the worker (this program with --worker)               */
/* ------------------------------------------------------------------ */

static struct {
  lds_runtime *rt;
  size_t value_len, keys, loads, window;
  uint64_t loader_ns;
  /* Under lock: free cells, loads ended, wrong values. */
  lds_id *free_cells;
  size_t free_count, ended, wrong;
  atomic_ulong calls;
  /* The jobs waiting for their latency to pass, in order (under qlock). */
  pthread_mutex_t qlock;
  pthread_cond_t qcond;
  lds_id *q_job;
  uint64_t *q_due;
  size_t *q_key;
  size_t q_head, q_tail, q_cap;
  bool q_stop;
} W;

static void succeed_key(lds_id job, size_t key) {
  char *value = malloc(W.value_len);
  memset(value, 'v', W.value_len);
  int n = snprintf(value, W.value_len, "value %zu", key);
  (void)n;
  lds_job_succeed(W.rt, job, value, W.value_len);
  free(value);
}

static void *completer(void *arg) {
  (void)arg;
  pthread_mutex_lock(&W.qlock);
  for (;;) {
    while (W.q_head == W.q_tail && !W.q_stop) pthread_cond_wait(&W.qcond, &W.qlock);
    if (W.q_head == W.q_tail) break;
    size_t at = W.q_head % W.q_cap;
    lds_id job = W.q_job[at];
    uint64_t due = W.q_due[at];
    size_t key = W.q_key[at];
    W.q_head++;
    pthread_mutex_unlock(&W.qlock);
    struct timespec ts = {.tv_sec = (time_t)(due / 1000000000u), .tv_nsec = (long)(due % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
    succeed_key(job, key);
    pthread_mutex_lock(&W.qlock);
  }
  pthread_mutex_unlock(&W.qlock);
  return NULL;
}

static void worker_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt;
  (void)data;
  atomic_fetch_add(&W.calls, 1);
  char text[32];
  snprintf(text, sizeof text, "%.*s", (int)(len < 31 ? len : 31), (const char *)request);
  size_t key = (size_t)strtoull(text + 4, NULL, 10);
  if (W.loader_ns == 0) {
    succeed_key(job, key);
    return;
  }
  pthread_mutex_lock(&W.qlock);
  if (W.q_tail - W.q_head == W.q_cap) die("completer queue", 0);
  size_t at = W.q_tail % W.q_cap;
  W.q_job[at] = job;
  W.q_due[at] = now_ns() + W.loader_ns;
  W.q_key[at] = key;
  W.q_tail++;
  pthread_cond_signal(&W.qcond);
  pthread_mutex_unlock(&W.qlock);
}

static void worker_event(const lds_event *e, void *user_data) {
  if (e->type != LDS_EVENT_STATE || (e->status != LDS_LOADED && e->status != LDS_ERROR) ||
      (e->flags & LDS_FLAG_REFRESHING))
    return;
  bool right = e->status == LDS_LOADED && e->value_len == W.value_len && e->request_len == KEY_LEN;
  if (right) {
    char want[32], request[KEY_LEN + 1];
    memcpy(request, e->request, KEY_LEN);
    request[KEY_LEN] = 0;
    size_t key = (size_t)strtoull(request + 4, NULL, 10);
    int n = snprintf(want, sizeof want, "value %zu", key);
    right = memcmp(e->value, want, (size_t)n < W.value_len ? (size_t)n : W.value_len) == 0;
  }
  pthread_mutex_lock(&lock);
  W.free_cells[W.free_count++] = (lds_id)(uintptr_t)user_data;
  W.ended++;
  if (!right && W.wrong++ < 3)
    fprintf(stderr, "redis bench worker %d: wrong: status %d flags 0x%x request %.*s value %.*s (%zu bytes) error %d/%d %s\n",
            (int)getpid(), e->status, e->flags, (int)e->request_len, e->request ? (const char *)e->request : "",
            (int)(e->value_len < 40 ? e->value_len : 40), e->value ? (const char *)e->value : "", e->value_len,
            e->error_domain, e->error_code, e->error_message ? e->error_message : "");
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
}

/* argv: --worker URL PREFIX("" = no cache) keys loads window loader_us value_bytes */
static int worker_main(char **argv) {
  const char *url = argv[2], *prefix = argv[3];
  W.keys = (size_t)atol(argv[4]);
  W.loads = (size_t)atol(argv[5]);
  W.window = (size_t)atol(argv[6]);
  W.loader_ns = (uint64_t)atol(argv[7]) * 1000u;
  W.value_len = (size_t)atol(argv[8]);
  bool shared = prefix[0] != '\0';
  pthread_mutex_init(&W.qlock, NULL);
  pthread_cond_init(&W.qcond, NULL);
  W.q_cap = W.window + 1;
  W.q_job = calloc(W.q_cap, sizeof *W.q_job);
  W.q_due = calloc(W.q_cap, sizeof *W.q_due);
  W.q_key = calloc(W.q_cap, sizeof *W.q_key);
  W.free_cells = calloc(W.window, sizeof *W.free_cells);
  pthread_t thread;
  pthread_create(&thread, NULL, completer, NULL);

  int rc = lds_runtime_new(NULL, &W.rt);
  if (rc) die("lds_runtime_new", rc);
  lds_id cache = 0, loader;
  if (shared) {
    lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
    o.key_prefix = prefix;
    if ((rc = lds_redis_cache_new(W.rt, url, &o, &cache))) die("lds_redis_cache_new", rc);
    lds_cache_value v;
    if ((rc = lds_cache_get(W.rt, cache, "warm-up", 7, &v)) != 0) die("lds_cache_get (connect)", rc);
    /* Subscribed, so that results published by others reach this process. */
    for (uint64_t deadline = now_ns() + 10000000000u;;) {
      lds_redis_status st = {.size = sizeof st};
      if ((rc = lds_redis_cache_status(W.rt, cache, &st))) die("lds_redis_cache_status", rc);
      if (st.subscribed) break;
      if (now_ns() > deadline) die("subscription", 0);
      usleep(1000);
    }
  }
  if ((rc = lds_loader_new(W.rt, worker_loader, NULL, NULL, &loader))) die("lds_loader_new", rc);
  for (size_t i = 0; i < W.window; i++) {
    lds_id cell;
    if ((rc = lds_loadable_new(W.rt, worker_event, (void *)(uintptr_t)i, &cell))) die("lds_loadable_new", rc);
    W.free_cells[W.free_count++] = cell;
  }
  /* The user_data of a cell is its index; cells[index] is its id. */
  lds_id *cells = calloc(W.window, sizeof *cells);
  for (size_t i = 0; i < W.window; i++) cells[i] = W.free_cells[i];
  for (size_t i = 0; i < W.window; i++) W.free_cells[i] = (lds_id)i;

  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  if (shared) {
    o.flags = LDS_LOAD_SHARE;
    o.cache = cache;
    o.cache_policy = LDS_POLICY_CACHE_FIRST;
    o.fresh_ms = 3600000;
  }
  printf("ready\n");
  fflush(stdout);
  char go;
  if (read(0, &go, 1) != 1) return 1;

  double c0 = cpu_s();
  uint64_t t0 = now_ns();
  char key[KEY_LEN + 1];
  for (size_t i = 0; i < W.loads; i++) {
    pthread_mutex_lock(&lock);
    while (W.free_count == 0) pthread_cond_wait(&cond, &lock);
    size_t index = (size_t)W.free_cells[--W.free_count];
    pthread_mutex_unlock(&lock);
    key_of(key, i % W.keys);
    if ((rc = lds_loadable_load(W.rt, cells[index], loader, key, KEY_LEN, &o))) die("lds_loadable_load", rc);
  }
  pthread_mutex_lock(&lock);
  while (W.ended < W.loads) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  double ms = (double)(now_ns() - t0) / 1e6;
  lds_redis_status st = {.size = sizeof st};
  if (shared && (rc = lds_redis_cache_status(W.rt, cache, &st))) die("lds_redis_cache_status", rc);
  double cpu = cpu_s() - c0;
  printf("done calls=%lu wrong=%zu ms=%.1f cpu=%.3f waited=%lu received=%lu takeovers=%lu errors=%lu\n",
         (unsigned long)atomic_load(&W.calls), W.wrong, ms, cpu, (unsigned long)st.leases_waited,
         (unsigned long)st.results_received, (unsigned long)st.takeovers, (unsigned long)st.errors);
  fflush(stdout);
  pthread_mutex_lock(&W.qlock);
  W.q_stop = true;
  pthread_cond_signal(&W.qcond);
  pthread_mutex_unlock(&W.qlock);
  pthread_join(thread, NULL);
  lds_runtime_free(W.rt);
  return 0;
}

/* ------------------------------------------------------------------ */
/* 2. Processes: the parent                                            */
/* ------------------------------------------------------------------ */

typedef struct procs_result {
  unsigned long calls, wrong, waited, received, takeovers, errors;
  double wall_ms, cpu_s, server_cpu_s;
} procs_result;

static procs_result run_processes(const char *self, const char *prefix, long processes, long keys, long loads,
                                  long window, long loader_us, long value_len) {
  pid_t pids[64];
  int to[64];
  FILE *from[64];
  char a_keys[24], a_loads[24], a_window[24], a_loader[24], a_value[24];
  snprintf(a_keys, sizeof a_keys, "%ld", keys);
  snprintf(a_loads, sizeof a_loads, "%ld", loads);
  snprintf(a_window, sizeof a_window, "%ld", window);
  snprintf(a_loader, sizeof a_loader, "%ld", loader_us);
  snprintf(a_value, sizeof a_value, "%ld", value_len);
  for (long i = 0; i < processes; i++) {
    int down[2], up[2];
    if (pipe2(down, O_CLOEXEC) || pipe2(up, O_CLOEXEC)) die("pipe2", errno);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) die("fork", errno);
    if (pid == 0) {
      dup2(down[0], 0);
      dup2(up[1], 1);
      char *args[] = {(char *)self, "--worker", (char *)H.url, (char *)prefix, a_keys, a_loads, a_window, a_loader, a_value,
                      NULL};
      execv("/proc/self/exe", args);
      _exit(127);
    }
    close(down[0]);
    close(up[1]);
    pids[i] = pid;
    to[i] = down[1];
    from[i] = fdopen(up[0], "r");
  }
  char line[512];
  for (long i = 0; i < processes; i++)
    if (!fgets(line, sizeof line, from[i]) || strncmp(line, "ready", 5) != 0) die("worker start", (int)i);
  double s0 = servers_cpu_s();
  uint64_t t0 = now_ns();
  for (long i = 0; i < processes; i++)
    if (write(to[i], "g", 1) != 1) die("write", errno);
  procs_result r = {0};
  for (long i = 0; i < processes; i++) {
    if (!fgets(line, sizeof line, from[i])) die("worker report", (int)i);
    unsigned long calls, wrong, waited, received, takeovers, errors;
    double ms, cpu;
    if (sscanf(line, "done calls=%lu wrong=%lu ms=%lf cpu=%lf waited=%lu received=%lu takeovers=%lu errors=%lu", &calls,
               &wrong, &ms, &cpu, &waited, &received, &takeovers, &errors) != 8)
      die("worker report format", (int)i);
    r.calls += calls;
    r.wrong += wrong;
    r.cpu_s += cpu;
    r.waited += waited;
    r.received += received;
    r.takeovers += takeovers;
    r.errors += errors;
  }
  r.wall_ms = (double)(now_ns() - t0) / 1e6;
  r.server_cpu_s = servers_cpu_s() - s0;
  for (long i = 0; i < processes; i++) {
    int status;
    close(to[i]);
    fclose(from[i]);
    waitpid(pids[i], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("worker exit", status);
  }
  if (r.wrong) die("processes: wrong values", (int)r.wrong);
  return r;
}


/* ------------------------------------------------------------------ */
/* 3. Invalidation among many keys                                     */
/* ------------------------------------------------------------------ */

/* What Redis's slow log saw since its reset (every command: the bench sets
 * slowlog-log-slower-than 100): how many commands held Redis 100 us or
 * more, the longest, and how many of them were scripts (EVAL), in
 * microseconds. */
typedef struct {
  long long commands, scripts, longest_us;
} slow_log;

static slow_log read_slow_log_of(redisContext *c) {
  slow_log out = {0, 0, 0};
  redisReply *r = redisCommand(c, "SLOWLOG GET -1");
  if (r == NULL || r->type != REDIS_REPLY_ARRAY) die("SLOWLOG GET", 0);
  for (size_t i = 0; i < r->elements; i++) {
    redisReply *e = r->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 || e->element[3]->type != REDIS_REPLY_ARRAY ||
        e->element[3]->elements == 0)
      continue;
    redisReply *name = e->element[3]->element[0];
    if (name->type == REDIS_REPLY_STRING && strcasecmp(name->str, "SLOWLOG") == 0) continue;
    out.commands++;
    if (name->type == REDIS_REPLY_STRING && strcasecmp(name->str, "EVAL") == 0) out.scripts++;
    if (e->element[2]->integer > out.longest_us) out.longest_us = e->element[2]->integer;
  }
  freeReplyObject(r);
  return out;
}

static slow_log read_slow_log(void) { return read_slow_log_of(H.hiredis); }

static void redis_do(const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  redisReply *r = redisvCommand(H.hiredis, format, ap);
  va_end(ap);
  if (r == NULL || r->type == REDIS_REPLY_ERROR) die(format, 0);
  freeReplyObject(r);
}

typedef struct {
  lds_id cache;
  size_t from, to;
} put_range;

static void *put_items(void *arg) {
  put_range *p = arg;
  char key[32];
  for (size_t i = p->from; i < p->to; i++) {
    int len = snprintf(key, sizeof key, "item/%06zu", i);
    int rc = lds_cache_put(H.rt, p->cache, key, (size_t)len, "v", 1);
    if (rc) die("lds_cache_put", rc);
  }
  return NULL;
}

/* Puts `matching` entries under "item/" in `cache` (4 threads) and 10
 * under "page/": what parts 3 and 4 invalidate. */
static void fill_invalidation_cache(lds_id cache, long matching) {
  pthread_t t[4];
  put_range ranges[4];
  for (int i = 0; i < 4; i++) {
    ranges[i] = (put_range){cache, (size_t)matching * (size_t)i / 4, (size_t)matching * (size_t)(i + 1) / 4};
    pthread_create(&t[i], NULL, put_items, &ranges[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 10; i++) {
    char key[16];
    int len = snprintf(key, sizeof key, "page/%d", i);
    int rc = lds_cache_put(H.rt, cache, key, (size_t)len, "p", 1);
    if (rc) die("lds_cache_put", rc);
  }
}

/* Waits until the cache `c` of `rt` heard of `n` invalidations from others. */
static bool heard(lds_runtime *rt, lds_id c, uint64_t n) {
  double deadline = now_ns() / 1e9 + 30;
  for (;;) {
    lds_redis_status st = {.size = sizeof st};
    if (lds_redis_cache_status(rt, c, &st) == LDS_OK && st.invalidations >= n) return true;
    if (now_ns() / 1e9 > deadline) return false;
    usleep(1000);
  }
}

/* The 0.4 way, for comparison: one script that scans the whole database
 * for the prefix's entries and marks them (run here with hiredis). */
static const char *scan_script =
    "local cursor = '0' local n = 0 "
    "repeat local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000) cursor = r[1] "
    "for _, k in ipairs(r[2]) do if redis.call('GETRANGE', k, 0, 0) == '\\1' then "
    "redis.call('SETRANGE', k, 1, '\\1') n = n + 1 end end until cursor == '0' return n";

static void run_invalidation(long unrelated, long matching, long rounds) {
  printf("\n3. invalidation: %ld unrelated keys in the database, %ld entries of the cache under other prefixes\n",
         unrelated, matching);
  for (long i = 0; i < unrelated; i += 100000) {
    long end = i + 100000 < unrelated ? i + 100000 : unrelated;
    redis_do("EVAL %s 0 %ld %ld", "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('SET', 'other:' .. i, 'x') end",
             i + 1, end);
  }
  lds_runtime *rt2;
  lds_id mine, theirs;
  int rc = lds_runtime_new(NULL, &rt2);
  if (rc) die("lds_runtime_new", rc);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "inv:";
  if ((rc = lds_redis_cache_new(H.rt, H.srv.url, &o, &mine))) die("lds_redis_cache_new", rc);
  if ((rc = lds_redis_cache_new(rt2, H.srv.url, &o, &theirs))) die("lds_redis_cache_new", rc);
  fill_invalidation_cache(mine, matching);
  long long dbsize = redis_server_integer(&H.srv, -1, "DBSIZE");
  printf("# DBSIZE %lld; the slow log keeps the commands that held Redis 100 us or more "
         "(slowlog-log-slower-than 100); longest 0: none did\n", dbsize);
  redis_do("CONFIG SET slowlog-max-len 1000000");
  redis_do("CONFIG SET slowlog-log-slower-than 100");
  printf("%-34s %6s %10s %10s %12s %14s\n", "run", "round", "wall ms", ">= 100 us", "scripts", "longest us");
  int n = (int)rounds;
  double w_small[99], l_small[99], w_big[99], l_big[99], s_big[99], w_scan[99], l_scan[99];
  uint64_t messages = 0;
  for (int r = 0; r < n; r++) {
    redis_do("SLOWLOG RESET");
    uint64_t t0 = now_ns();
    if ((rc = lds_cache_invalidate(H.rt, mine, "page/", 5))) die("lds_cache_invalidate", rc);
    double ms = (double)(now_ns() - t0) / 1e6;
    if (!heard(rt2, theirs, ++messages)) die("the other runtime did not hear of the invalidation", 0);
    slow_log sl = read_slow_log();
    printf("%-34s %6d %10.2f %10lld %12lld %14lld\n", "10 keys (page/)", r + 1, ms, sl.commands, sl.scripts,
           sl.longest_us);
    w_small[r] = ms;
    l_small[r] = (double)sl.longest_us;

    redis_do("SLOWLOG RESET");
    t0 = now_ns();
    if ((rc = lds_cache_invalidate(H.rt, mine, "item/", 5))) die("lds_cache_invalidate", rc);
    ms = (double)(now_ns() - t0) / 1e6;
    if (!heard(rt2, theirs, ++messages)) die("the other runtime did not hear of the invalidation", 0);
    sl = read_slow_log();
    char what[40];
    snprintf(what, sizeof what, "%ld keys (item/)", matching);
    printf("%-34s %6d %10.2f %10lld %12lld %14lld\n", what, r + 1, ms, sl.commands, sl.scripts, sl.longest_us);
    w_big[r] = ms;
    l_big[r] = (double)sl.longest_us;
    s_big[r] = (double)sl.scripts;

    redis_do("SLOWLOG RESET");
    t0 = now_ns();
    redis_do("EVAL %s 0 %s", scan_script, "inv:v:page/*");
    ms = (double)(now_ns() - t0) / 1e6;
    sl = read_slow_log();
    printf("%-34s %6d %10.2f %10lld %12lld %14lld\n", "0.4's scan of the database", r + 1, ms, sl.commands,
           sl.scripts, sl.longest_us);
    w_scan[r] = ms;
    l_scan[r] = (double)sl.longest_us;
  }
  /* Every entry under item/ is stale for the other runtime too. */
  size_t stale = 0, checked = 0;
  for (long i = 0; i < matching; i += matching / 1000 > 0 ? matching / 1000 : 1) {
    char key[32];
    int len = snprintf(key, sizeof key, "item/%06ld", i);
    lds_cache_value v;
    if (lds_cache_get(rt2, theirs, key, (size_t)len, &v) == 1) {
      stale += v.stale;
      lds_cache_value_clear(&v);
    }
    checked++;
  }
  redis_do("CONFIG SET slowlog-log-slower-than 10000");
  printf("median of %d rounds:\n", n);
  char held[48];
  if (median(l_small, n) > 0) snprintf(held, sizeof held, "at most %.0f us", median(l_small, n));
  else snprintf(held, sizeof held, "under 100 us");
  printf("  10 keys among %lld: wall %.2f ms, Redis held %s per command (target <= 5000 us: %s)\n",
         dbsize, median(w_small, n), held, median(l_small, n) <= 5000 ? "met" : "missed");
  printf("  %ld keys: wall %.1f ms in %.0f scripts, Redis held at most %.0f us per command (target <= 10000 us: %s); "
         "%zu of %zu sampled entries stale in the other runtime\n",
         matching, median(w_big, n), median(s_big, n), median(l_big, n), median(l_big, n) <= 10000 ? "met" : "missed",
         stale, checked);
  printf("  0.4's scan for 10 keys: wall %.1f ms, Redis held %.0f us in one script (%s%.0fx the index's longest "
         "command)\n", median(w_scan, n), median(l_scan, n), median(l_small, n) > 0 ? "" : "over ",
         median(l_scan, n) / (median(l_small, n) > 0 ? median(l_small, n) : 100));
  lds_runtime_free(rt2);
}

/* ------------------------------------------------------------------ */
/* 4. The same on a Redis Cluster                                      */
/* ------------------------------------------------------------------ */

static struct {
  redis_server nodes[6];
  redisContext *hiredis[6];
  char url[512];
} CL;

static bool cluster_node_ok(const redis_server *node) {
  redisReply *info = redis_server_command(node, "CLUSTER INFO");
  bool ok = info && info->type == REDIS_REPLY_STRING && strstr(info->str, "cluster_state:ok");
  if (info) freeReplyObject(info);
  redisReply *repl = redis_server_command(node, "INFO replication");
  ok = ok && repl && repl->type == REDIS_REPLY_STRING &&
       (strstr(repl->str, "role:master") || strstr(repl->str, "master_link_status:up"));
  if (repl) freeReplyObject(repl);
  return ok;
}

/* 6 nodes, 3 masters with a replica each, joined by redis-cli. */
static void cluster_start(void) {
  char cmd[1024];
  int n = snprintf(cmd, sizeof cmd, "redis-cli --cluster create");
  int u = snprintf(CL.url, sizeof CL.url, "redis+cluster://");
  for (int i = 0; i < 6; i++) {
    if (!redis_server_start_cluster_node(&CL.nodes[i])) die("redis_server_start_cluster_node", i);
    n += snprintf(cmd + n, sizeof cmd - (size_t)n, " 127.0.0.1:%d", CL.nodes[i].port);
    u += snprintf(CL.url + u, sizeof CL.url - (size_t)u, "%s127.0.0.1:%d", i ? "," : "", CL.nodes[i].port);
  }
  snprintf(cmd + n, sizeof cmd - (size_t)n, " --cluster-replicas 1 --cluster-yes >/dev/null 2>&1");
  if (system(cmd) != 0) die("redis-cli --cluster create", 0);
  double deadline = now_ns() / 1e9 + 60;
  for (int i = 0; i < 6; i++) {
    while (!cluster_node_ok(&CL.nodes[i])) {
      if (now_ns() / 1e9 > deadline) die("the cluster did not reach cluster_state:ok", i);
      usleep(20000);
    }
    CL.hiredis[i] = redisConnect("127.0.0.1", CL.nodes[i].port);
    if (CL.hiredis[i] == NULL || CL.hiredis[i]->err) die("redisConnect", i);
  }
}

/* Runs `command` (no arguments) on every node of the cluster. */
static void cluster_do(const char *command) {
  for (int i = 0; i < 6; i++) {
    redisReply *r = redisCommand(CL.hiredis[i], command);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) die(command, i);
    freeReplyObject(r);
  }
}

static slow_log cluster_slow_log(void) {
  slow_log all = {0, 0, 0};
  for (int i = 0; i < 6; i++) {
    slow_log one = read_slow_log_of(CL.hiredis[i]);
    all.commands += one.commands;
    all.scripts += one.scripts;
    if (one.longest_us > all.longest_us) all.longest_us = one.longest_us;
  }
  return all;
}

static void use_single(lds_id single) {
  H.cache = single;
  H.url = H.srv.url;
  H.servers[0] = H.srv.pid;
  H.server_count = 1;
}

static void use_cluster(lds_id cluster) {
  H.cache = cluster;
  H.url = CL.url;
  for (int i = 0; i < 6; i++) H.servers[i] = CL.nodes[i].pid;
  H.server_count = 6;
}

static void run_cluster(const char *self, long rounds, long processes, long keys, long loads, long loader_us,
                        long value_len, long matching) {
  printf("\n4. a Redis Cluster of 3 masters and 3 replicas (redis-cli --cluster create, node timeout 1000 ms) "
         "beside the single server: the runs of 1 and 2, and invalidation\n");
  cluster_start();
  lds_id single = H.cache, cluster;
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "bench:";
  int rc = lds_redis_cache_new(H.rt, CL.url, &o, &cluster);
  if (rc) die("lds_redis_cache_new (cluster)", rc);
  unsigned char *value = calloc(1, H.value_len);
  char key[KEY_LEN + 1];
  for (size_t i = 0; i < H.keys; i++) {
    key_of(key, i);
    if ((rc = lds_cache_put(H.rt, cluster, key, KEY_LEN, value, H.value_len))) die("lds_cache_put", rc);
  }
  free(value);
  printf("%-34s %6s %12s %18s %18s\n", "run", "round", "per s", "client cpu us/op", "servers cpu us/op");
  int n = (int)rounds;
  double many[2][99], loads_ps[2][99], wall[2][99], calls[2][99];
  for (int r = 0; r < n; r++) {
    for (int c = 0; c < 2; c++) {
      if (c == 0) use_single(single); else use_cluster(cluster);
      const char *where = c == 0 ? "single" : "cluster";
      measure m = run_get_many();
      printf("%-34s %6d %12.0f %18.2f %18.2f\n", c == 0 ? "get_many batches, single" : "get_many batches, cluster",
             r + 1, m.per_s, m.client_us, m.server_us);
      many[c][r] = m.per_s;
      m = run_loads(false);
      printf("%-34s %6d %12.0f %18.2f %18.2f\n", c == 0 ? "cache-first loads, single" : "cache-first loads, cluster",
             r + 1, m.per_s, m.client_us, m.server_us);
      loads_ps[c][r] = m.per_s;
      char prefix[48];
      snprintf(prefix, sizeof prefix, "procs-%s-%d:", where, r);
      procs_result p = run_processes(self, prefix, processes, keys, loads, (long)H.window, loader_us, value_len);
      printf("%-34s %6d %12.0f %18s %18s   loader calls %lu, wall %.1f ms\n",
             c == 0 ? "processes shared, single" : "processes shared, cluster", r + 1,
             (double)(processes * loads) / (p.wall_ms / 1000), "-", "-", p.calls, p.wall_ms);
      wall[c][r] = p.wall_ms;
      calls[c][r] = (double)p.calls;
    }
  }
  use_single(single);
  printf("median of %d rounds (cluster/single):\n", n);
  printf("  get_many batches   single %10.0f gets/s  cluster %10.0f gets/s  %.2fx\n", median(many[0], n),
         median(many[1], n), median(many[1], n) / median(many[0], n));
  printf("  cache-first loads  single %10.0f loads/s cluster %10.0f loads/s %.2fx\n", median(loads_ps[0], n),
         median(loads_ps[1], n), median(loads_ps[1], n) / median(loads_ps[0], n));
  printf("  processes shared   single %8.1f ms, %.0f loader calls   cluster %8.1f ms, %.0f loader calls   %.2fx the "
         "wall time\n", median(wall[0], n), median(calls[0], n), median(wall[1], n), median(calls[1], n),
         median(wall[1], n) / median(wall[0], n));

  /* Invalidation on the cluster: 10 keys, then `matching` keys in batches. */
  lds_runtime *rt2;
  lds_id mine, theirs;
  if ((rc = lds_runtime_new(NULL, &rt2))) die("lds_runtime_new", rc);
  o.key_prefix = "inv:";
  if ((rc = lds_redis_cache_new(H.rt, CL.url, &o, &mine))) die("lds_redis_cache_new", rc);
  if ((rc = lds_redis_cache_new(rt2, CL.url, &o, &theirs))) die("lds_redis_cache_new", rc);
  fill_invalidation_cache(mine, matching);
  cluster_do("CONFIG SET slowlog-max-len 1000000");
  cluster_do("CONFIG SET slowlog-log-slower-than 100");
  printf("%-34s %6s %10s %10s %12s %14s\n", "run", "round", "wall ms", ">= 100 us", "scripts", "longest us");
  double w_small[99], l_small[99], w_big[99], l_big[99];
  uint64_t messages = 0;
  for (int r = 0; r < n; r++) {
    cluster_do("SLOWLOG RESET");
    uint64_t t0 = now_ns();
    if ((rc = lds_cache_invalidate(H.rt, mine, "page/", 5))) die("lds_cache_invalidate", rc);
    w_small[r] = (double)(now_ns() - t0) / 1e6;
    if (!heard(rt2, theirs, ++messages)) die("the other runtime did not hear of the invalidation", 0);
    slow_log sl = cluster_slow_log();
    l_small[r] = (double)sl.longest_us;
    printf("%-34s %6d %10.2f %10lld %12lld %14lld\n", "cluster: 10 keys (page/)", r + 1, w_small[r], sl.commands,
           sl.scripts, sl.longest_us);
    cluster_do("SLOWLOG RESET");
    t0 = now_ns();
    if ((rc = lds_cache_invalidate(H.rt, mine, "item/", 5))) die("lds_cache_invalidate", rc);
    w_big[r] = (double)(now_ns() - t0) / 1e6;
    if (!heard(rt2, theirs, ++messages)) die("the other runtime did not hear of the invalidation", 0);
    sl = cluster_slow_log();
    l_big[r] = (double)sl.longest_us;
    char what[48];
    snprintf(what, sizeof what, "cluster: %ld keys (item/)", matching);
    printf("%-34s %6d %10.2f %10lld %12lld %14lld\n", what, r + 1, w_big[r], sl.commands, sl.scripts, sl.longest_us);
  }
  cluster_do("CONFIG SET slowlog-log-slower-than 10000");
  printf("median of %d rounds:\n", n);
  printf("  cluster, 10 keys: wall %.2f ms, longest command %s%.0f us; %ld keys: wall %.1f ms, longest command %.0f us "
         "(target <= 10000 us: %s)\n", median(w_small, n), median(l_small, n) > 0 ? "" : "under ",
         median(l_small, n) > 0 ? median(l_small, n) : 100, matching, median(w_big, n),
         median(l_big, n), median(l_big, n) <= 10000 ? "met" : "missed");
  lds_runtime_free(rt2);
  for (int i = 0; i < 6; i++) {
    redisFree(CL.hiredis[i]);
    redis_server_destroy(&CL.nodes[i]);
  }
}

int main(int argc, char **argv) {
  if (argc == 9 && strcmp(argv[1], "--worker") == 0) return worker_main(argv);
  long keys = argc > 1 ? atol(argv[1]) : 1000;
  long value_len = argc > 2 ? atol(argv[2]) : 100;
  long gets = argc > 3 ? atol(argv[3]) : 200000;
  long window = argc > 4 ? atol(argv[4]) : 256;
  long rounds = argc > 5 ? atol(argv[5]) : 5;
  long processes = argc > 6 ? atol(argv[6]) : 4;
  long loads = argc > 7 ? atol(argv[7]) : 10000;
  long loader_us = argc > 8 ? atol(argv[8]) : 1000;
  long unrelated = argc > 9 ? atol(argv[9]) : 4000000;
  long matching = argc > 10 ? atol(argv[10]) : 100000;
  long cluster = argc > 11 ? atol(argv[11]) : 1;
  if (keys < 1 || keys >= 1000000000 || value_len < 16 || gets < 10 || window < 1 || window > 100000 || rounds < 1 || rounds > 99 ||
      processes < 1 || processes > 64 || loads < 1 || loader_us < 0 || unrelated < 0 || matching < 1 ||
      matching > 999999) {
    fprintf(stderr, "usage: %s [keys] [value_bytes>=16] [gets] [window] [rounds] [processes] [loads] [loader_us] "
            "[unrelated] [matching] [cluster 0|1]\n",
            argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  H.keys = (size_t)keys;
  H.value_len = (size_t)value_len;
  H.gets = (size_t)gets;
  H.window = (size_t)window;

  printf("# command: make bench-redis BENCH_REDIS_ARGS=\"%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld\"   "
         "(runs: build/bench-redis %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld)\n",
         keys, value_len, gets, window, rounds, processes, loads, loader_us, unrelated, matching, cluster, keys,
         value_len, gets, window, rounds, processes, loads, loader_us, unrelated, matching, cluster);
  char versions[64];
  snprintf(versions, sizeof versions, "%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
  print_machine("hiredis", versions);
  if (!redis_server_start(&H.srv)) die("redis_server_start", 0);
  redisReply *info = redis_server_command(&H.srv, "INFO server");
  const char *ver = info && info->type == REDIS_REPLY_STRING ? strstr(info->str, "redis_version:") : NULL;
  printf("# redis-server %.*s on 127.0.0.1:%d (no persistence), %ld keys of %d bytes, values of %ld bytes\n",
         ver ? (int)strcspn(ver + 14, "\r\n") : 1, ver ? ver + 14 : "?", H.srv.port, keys, KEY_LEN, value_len);
  if (info) freeReplyObject(info);
  hits_setup();
  use_single(H.cache);

  printf("\n1. cache hits: %ld gets per run (%ld for the one-at-a-time runs), %ld in flight\n", gets, gets / 10,
         window);
  printf("%-28s %6s %12s %18s %18s\n", "run", "round", "gets/s", "client cpu us/get", "server cpu us/get");
  measure pipe_m[99], many_m[99], loads_m[99], floor_m[99], sync_m[99], get_m[99];
  double v_many[99], c_many[99], sv_many[99];
  double v_floor[99], c_floor[99];
  double v_pipe[99], v_loads[99], v_sync[99], v_get[99], c_pipe[99], c_loads[99], c_sync[99], c_get[99];
  double sv_pipe[99], sv_loads[99];
  for (long r = 0; r < rounds; r++) {
    pipe_m[r] = run_pipelined();
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "hiredis pipelined", r + 1, pipe_m[r].per_s, pipe_m[r].client_us,
           pipe_m[r].server_us);
    many_m[r] = run_get_many();
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "lds_cache_get_many batches", r + 1, many_m[r].per_s,
           many_m[r].client_us, many_m[r].server_us);
    v_many[r] = many_m[r].per_s;
    c_many[r] = many_m[r].client_us;
    sv_many[r] = many_m[r].server_us;
    loads_m[r] = run_loads(false);
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "loadstate cache-first loads", r + 1, loads_m[r].per_s,
           loads_m[r].client_us, loads_m[r].server_us);
    floor_m[r] = run_loads(true);
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "loads, no cache (floor)", r + 1, floor_m[r].per_s,
           floor_m[r].client_us, floor_m[r].server_us);
    v_floor[r] = floor_m[r].per_s;
    c_floor[r] = floor_m[r].client_us;
    sync_m[r] = run_sync_hiredis(H.gets / 10);
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "hiredis GET, one at a time", r + 1, sync_m[r].per_s,
           sync_m[r].client_us, sync_m[r].server_us);
    get_m[r] = run_cache_get(H.gets / 10);
    printf("%-28s %6ld %12.0f %18.2f %18.2f\n", "lds_cache_get, one at a time", r + 1, get_m[r].per_s,
           get_m[r].client_us, get_m[r].server_us);
    v_pipe[r] = pipe_m[r].per_s;
    v_loads[r] = loads_m[r].per_s;
    v_sync[r] = sync_m[r].per_s;
    v_get[r] = get_m[r].per_s;
    c_pipe[r] = pipe_m[r].client_us;
    c_loads[r] = loads_m[r].client_us;
    c_sync[r] = sync_m[r].client_us;
    c_get[r] = get_m[r].client_us;
    sv_pipe[r] = pipe_m[r].server_us;
    sv_loads[r] = loads_m[r].server_us;
  }
  int n = (int)rounds;
  double mp = median(v_pipe, n), ml = median(v_loads, n), ms = median(v_sync, n), mg = median(v_get, n);
  double cp = median(c_pipe, n), cl = median(c_loads, n), cs = median(c_sync, n), cg = median(c_get, n);
  double sp = median(sv_pipe, n), sl = median(sv_loads, n);
  printf("median of %ld rounds:\n", rounds);
  printf("  hiredis pipelined             %10.0f gets/s  client cpu %6.2f us/get  server cpu %5.2f us/get\n", mp, cp,
         sp);
  double mm = median(v_many, n), cm = median(c_many, n);
  printf("  lds_cache_get_many batches    %10.0f gets/s  client cpu %6.2f us/get  server cpu %5.2f us/get\n", mm, cm,
         median(sv_many, n));
  printf("  loadstate cache-first loads   %10.0f gets/s  client cpu %6.2f us/get  server cpu %5.2f us/get\n", ml, cl,
         sl);
  double mf = median(v_floor, n), cf = median(c_floor, n);
  printf("  loads, no cache (floor)       %10.0f loads/s client cpu %6.2f us/load\n", mf, cf);
  printf("  hiredis GET, one at a time    %10.0f gets/s  client cpu %6.2f us/get\n", ms, cs);
  printf("  lds_cache_get, one at a time  %10.0f gets/s  client cpu %6.2f us/get\n", mg, cg);
  printf("  get_many/pipelined: %.2fx the throughput (target >= 0.7: %s), %.2fx the client CPU per get\n", mm / mp,
         mm / mp >= 0.7 ? "met" : "MISSED", cm / cp);
  printf("  loads/pipelined: %.2fx the throughput (target >= 0.7: %s), %.2fx the client CPU per get\n", ml / mp,
         ml / mp >= 0.7 ? "met" : "MISSED", cl / cp);
  printf("  loads without a cache/pipelined: %.2fx (what a load costs with no Redis at all)\n", mf / mp);
  printf("  lds_cache_get/hiredis GET one at a time: %.2fx the throughput, %.2fx the client CPU per get\n", mg / ms,
         cg / cs);

  printf("\n2. %ld processes x %ld loads over %ld keys, %ld cells each, loader latency %ld us\n", processes, loads,
         keys, window, loader_us);
  printf("%-8s %6s %13s %10s %12s %16s %8s %9s %9s\n", "run", "round", "loader calls", "wall ms", "procs cpu s",
         "redis-server cpu s", "waited", "received", "takeovers");
  double w_sh[99], w_al[99], c_sh[99], c_al[99], k_sh[99], k_al[99], s_sh[99];
  for (long r = 0; r < rounds; r++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "procs%ld:", r + 1);
    procs_result sh = run_processes(argv[0], prefix, processes, keys, loads, window, loader_us, value_len);
    printf("%-8s %6ld %13lu %10.1f %12.3f %16.3f %8lu %9lu %9lu\n", "shared", r + 1, sh.calls, sh.wall_ms, sh.cpu_s,
           sh.server_cpu_s, sh.waited, sh.received, sh.takeovers);
    procs_result al = run_processes(argv[0], "", processes, keys, loads, window, loader_us, value_len);
    printf("%-8s %6ld %13lu %10.1f %12.3f %16.3f %8s %9s %9s\n", "alone", r + 1, al.calls, al.wall_ms, al.cpu_s,
           al.server_cpu_s, "-", "-", "-");
    w_sh[r] = sh.wall_ms;
    w_al[r] = al.wall_ms;
    c_sh[r] = sh.cpu_s;
    c_al[r] = al.cpu_s;
    k_sh[r] = (double)sh.calls;
    k_al[r] = (double)al.calls;
    s_sh[r] = sh.server_cpu_s;
  }
  double wsh = median(w_sh, n), wal = median(w_al, n);
  printf("median of %ld rounds:\n", rounds);
  printf("  shared through Redis  loader calls %6.0f  wall %8.1f ms  processes' cpu %6.3f s  redis-server cpu %6.3f s\n",
         median(k_sh, n), wsh, median(c_sh, n), median(s_sh, n));
  printf("  alone, no cache       loader calls %6.0f  wall %8.1f ms  processes' cpu %6.3f s\n", median(k_al, n), wal,
         median(c_al, n));
  printf("  shared/alone: %.3fx the loader calls, %.2fx the wall time\n", median(k_sh, n) / median(k_al, n),
         wsh / wal);

  if (unrelated > 0) run_invalidation(unrelated, matching, rounds);
  if (cluster) run_cluster(argv[0], rounds, processes, keys, loads, loader_us, value_len, matching);

  redisFree(H.hiredis);
  lds_runtime_free(H.rt);
  redis_server_destroy(&H.srv);
  return 0;
}
