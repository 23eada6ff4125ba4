/* test_redis.c — the Redis cache (lds_redis_cache_new) against a real
 * redis-server of the test's own (Tests/support/redis_server.c).
 *
 * test_redis_cache_*      one process: the cache calls, key prefixes, time
 *                         to live, the value bound, URLs, threads, a server
 *                         that is down, stopped and restarted.
 * test_redis_processes_*  several processes, forked before any of them
 *                         makes a runtime: single flight across processes,
 *                         a lease holder killed with SIGKILL, invalidation
 *                         seen by every process.
 *
 * Nothing sleeps to wait for the library: cells and loaders are waited for
 * with the harness's WAIT_FOR; what only the cache's counters or Redis
 * show (lds_redis_cache_status: connected, subscribed, waits; a key's
 * expiry) is polled every 10 or 20 ms until the harness's deadline;
 * workers answer on pipes, read with poll until a deadline. (One test
 * sleeps 5 ms to age an entry past a fresh time of 1 ms.)
 *
 * Two runtimes in one process stand for two processes where that is
 * enough (each Redis cache has its own connections and identity); the
 * test_redis_processes_* tests fork real ones. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "redis_server.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

#define START_SERVER(s)                                                     \
  do {                                                                      \
    if (!redis_server_start(s)) {                                           \
      check_fail(__FILE__, __LINE__, "redis-server did not start");         \
      return;                                                               \
    }                                                                       \
  } while (0)

/* The Redis key under which a cache with `prefix` keeps `key`'s entry
 * (mark "v:"), lease ("l:") or its tag's fencing counter ("f", the key
 * itself not appended): prefix, "{ttt}" (a hash tag of the key: FNV-1a
 * folded to 12 bits, three hex digits), mark, key. Rotates over 8 buffers
 * so that a few may be used in one expression. */
static const char *redis_name(const char *prefix, const char *mark, const char *key) {
  static char bufs[8][256];
  static int next;
  char *out = bufs[next++ % 8];
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 16777619u;
  unsigned t = (h ^ (h >> 12) ^ (h >> 24)) & 0xfff;
  snprintf(out, 256, "%s{%03x}%s%s", prefix, t, mark, strcmp(mark, "f") == 0 ? "" : key);
  return out;
}

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Milliseconds, longer on a slow host (valgrind). */
static long slow_ms(long ms, long slow) { return test_slow() ? slow : ms; }

static lds_id redis_cache(lds_runtime *rt, const char *url, const lds_redis_cache_options *o) {
  lds_id cache = 0;
  CHECK_RC(lds_redis_cache_new(rt, url, o, &cache), LDS_OK);
  return cache;
}

static lds_redis_status status_of(lds_runtime *rt, lds_id cache) {
  lds_redis_status st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  CHECK_RC(lds_redis_cache_status(rt, cache, &st), LDS_OK);
  return st;
}

/* Polls the cache's status every 10 ms until cond (on st) holds; fails
 * the test at the harness's deadline. */
#define STATUS_UNTIL(rt, cache, st, cond)                                   \
  ({                                                                        \
    struct timespec dl_ = harness_deadline();                               \
    bool ok_;                                                               \
    for (;;) {                                                              \
      st = status_of((rt), (cache));                                        \
      if ((ok_ = (cond)) || harness_past(&dl_)) break;                      \
      nap_ms(10);                                                           \
    }                                                                       \
    if (!ok_)                                                               \
      check_fail(__FILE__, __LINE__, "timed out waiting for %s (last error %d: %s)", #cond, \
                 st.last_error_code, st.last_error);                        \
    ok_;                                                                    \
  })

static lds_load_options cache_first(lds_id cache) {
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = LDS_LOAD_SHARE;
  o.cache = cache;
  o.cache_policy = LDS_POLICY_CACHE_FIRST;
  o.fresh_ms = 600000;
  return o;
}

static void check_get(lds_runtime *rt, lds_id cache, const char *key, const char *want) {
  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(rt, cache, key, strlen(key), &v), 1)) {
    CHECK_BYTES(v.value, v.value_len, want);
    lds_cache_value_clear(&v);
  }
}

static void check_miss(lds_runtime *rt, lds_id cache, const char *key) {
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, cache, key, strlen(key), &v), 0);
  CHECK(v.value == NULL);
}

/* The last STATE event of a recorder that ended a load (LOADED or ERROR,
 * not refreshing), or NULL. */
static const lds_event *settled(recorder *rec) {
  const lds_event *e = rec_last(rec);
  if (e == NULL || e->type != LDS_EVENT_STATE || (e->flags & LDS_FLAG_REFRESHING)) return NULL;
  return e->status == LDS_LOADED || e->status == LDS_ERROR ? e : NULL;
}

/* ------------------------------------------------------------------ */
/* Worker processes                                                    */
/* ------------------------------------------------------------------ */

/* What a worker tells the test: one fixed-size message per step. */
typedef struct report {
  char what;                /* 'R' ready, 'S' loader started, 'L' loaded, 'D' done, 'F' final */
  uint64_t loader_calls;
  uint64_t loaded;          /* cells that ended LOADED with the expected value */
  uint64_t wrong;           /* cells that ended otherwise */
  uint64_t elapsed_ms;
  uint32_t saw_refresh;     /* an event flagged STALE | REFRESHING came */
  uint32_t other_events;    /* events of a cell that should have had none */
  char value[64];
  lds_redis_status status;
  char problem[200];        /* "" when all went well */
} report;

typedef struct worker {
  pid_t pid;
  int to;    /* commands: the test writes, the worker reads */
  int from;  /* reports: the worker writes, the test reads */
} worker;

typedef void (*worker_body)(int in, int out, const void *arg);

/* Forks a worker that runs body then exits. Call it before this process
 * makes a runtime (a forked child has only the thread that forked). */
static bool worker_start(worker *w, worker_body body, const void *arg) {
  int down[2], up[2];
  if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) {
    check_fail(__FILE__, __LINE__, "pipe2: %s", strerror(errno));
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    check_fail(__FILE__, __LINE__, "fork: %s", strerror(errno));
    return false;
  }
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    alarm(test_slow() ? 600 : 90);
    body(down[0], up[1], arg);
    _exit(0);
  }
  close(down[0]);
  close(up[1]);
  w->pid = pid;
  w->to = down[1];
  w->from = up[0];
  return true;
}

/* Reads one report, waiting at most ms; false (and a failure) when none came. */
static bool worker_read(worker *w, report *r, long ms, char want) {
  long long deadline = mono_ms() + ms;
  size_t got = 0;
  while (got < sizeof *r) {
    long long left = deadline - mono_ms();
    struct pollfd p = {.fd = w->from, .events = POLLIN};
    int n = left > 0 ? poll(&p, 1, (int)left) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      check_fail(__FILE__, __LINE__, "worker %d: no report '%c' within %ld ms", (int)w->pid, want, ms);
      return false;
    }
    ssize_t k = read(w->from, (char *)r + got, sizeof *r - got);
    if (k <= 0) {
      check_fail(__FILE__, __LINE__, "worker %d ended before its report '%c'", (int)w->pid, want);
      return false;
    }
    got += (size_t)k;
  }
  if (r->what != want) check_fail(__FILE__, __LINE__, "worker %d: report '%c', expected '%c'", (int)w->pid, r->what, want);
  if (r->problem[0] != '\0') check_fail(__FILE__, __LINE__, "worker %d: %s", (int)w->pid, r->problem);
  return r->what == want;
}

static void worker_send(worker *w, char c) {
  if (write(w->to, &c, 1) != 1) check_fail(__FILE__, __LINE__, "worker %d: write: %s", (int)w->pid, strerror(errno));
}

/* Waits for the worker's exit (SIGKILL after ms); its exit status. */
static int worker_finish(worker *w, long ms) {
  long long deadline = mono_ms() + ms;
  int status = 0;
  pid_t r;
  while ((r = waitpid(w->pid, &status, WNOHANG)) == 0 && mono_ms() < deadline) nap_ms(5);
  if (r == 0) {
    kill(w->pid, SIGKILL);
    waitpid(w->pid, &status, 0);
    check_fail(__FILE__, __LINE__, "worker %d did not exit; killed", (int)w->pid);
  }
  close(w->to);
  close(w->from);
  return status;
}

/* Waits for a worker that should end on its own, and checks that it
 * exited with status 0 (not a crash, nor valgrind's error status). */
static void worker_end(worker *w, long ms) {
  int status = worker_finish(w, ms);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    check_fail(__FILE__, __LINE__, "worker %d ended with wait status 0x%x", (int)w->pid, status);
}

/* Worker side. */
static void report_send(int out, const report *r) {
  if (write(out, r, sizeof *r) != (ssize_t)sizeof *r) _exit(5);
}

static char worker_wait_command(int in) {
  char c = 0;
  ssize_t n;
  while ((n = read(in, &c, 1)) < 0 && errno == EINTR) {
  }
  return n == 1 ? c : 0;
}

#define PROBLEM(r, ...)                                                     \
  do {                                                                      \
    if ((r)->problem[0] == '\0') snprintf((r)->problem, sizeof (r)->problem, __VA_ARGS__); \
  } while (0)

/* A runtime and a Redis cache in a worker, connected and subscribed. */
static bool worker_open(report *r, const char *url, const lds_redis_cache_options *o, lds_runtime **rt,
                        lds_id *cache) {
  int rc = lds_runtime_new(NULL, rt);
  if (rc != LDS_OK) {
    PROBLEM(r, "lds_runtime_new: %d", rc);
    return false;
  }
  rc = lds_redis_cache_new(*rt, url, o, cache);
  if (rc != LDS_OK) {
    PROBLEM(r, "lds_redis_cache_new: %d", rc);
    return false;
  }
  /* The first command waits for the connection. */
  lds_cache_value v;
  rc = lds_cache_get(*rt, *cache, "warm-up", 7, &v);
  if (rc != 0) {
    PROBLEM(r, "lds_cache_get of a missing key: %d, expected 0", rc);
    return false;
  }
  long long deadline = mono_ms() + 1000LL * redis_server_deadline_s();
  for (;;) {
    lds_redis_status st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    rc = lds_redis_cache_status(*rt, *cache, &st);
    if (rc == LDS_OK && st.connected && st.subscribed) return true;
    if (rc != LDS_OK || mono_ms() > deadline) {
      PROBLEM(r, "not connected and subscribed (status %d, connected %u, subscribed %u, last error %d %.80s)", rc,
              st.connected, st.subscribed, st.last_error_code, st.last_error);
      return false;
    }
    nap_ms(10);
  }
}

static void worker_status(report *r, lds_runtime *rt, lds_id cache) {
  memset(&r->status, 0, sizeof r->status);
  r->status.size = sizeof r->status;
  int rc = lds_redis_cache_status(rt, cache, &r->status);
  if (rc != LDS_OK) PROBLEM(r, "lds_redis_cache_status: %d", rc);
}

/* ------------------------------------------------------------------ */
/* One process                                                         */
/* ------------------------------------------------------------------ */

TEST(test_redis_cache_put_get_read_remove_keys_clear_stats) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "t1:";
  lds_id c = redis_cache(rt, srv.url, &o);
  uint64_t before = wall_ms();
  CHECK_RC(lds_cache_put(rt, c, "a", 1, "one", 3), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c, "b", 1, "two", 3), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c, "empty", 5, NULL, 0), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c, "b", 1, "TWO", 3), LDS_OK);
  uint64_t after = wall_ms();

  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(rt, c, "a", 1, &v), 1)) {
    CHECK_BYTES(v.value, v.value_len, "one");
    CHECK_OP(v.stored_at_ms, >=, before);
    CHECK_OP(v.stored_at_ms, <=, after);
    CHECK_EQ(v.stale, 0);
    lds_cache_value_clear(&v);
  }
  if (CHECK_RC(lds_cache_get(rt, c, "empty", 5, &v), 1)) {
    CHECK(v.value != NULL);
    CHECK_EQ(v.value_len, 0);
    lds_cache_value_clear(&v);
  }
  check_get(rt, c, "b", "TWO");
  check_miss(rt, c, "none");
  /* The entries are in Redis, under the prefix, their hash tag and "v:". */
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("t1:", "v:", "a")), 1);
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("t1:", "v:", "b")), 1);

  char buf[8];
  size_t len = 99;
  if (CHECK_RC(lds_cache_read(rt, c, "b", 1, buf, sizeof buf, &len), 1)) CHECK_BYTES(buf, len, "TWO");
  CHECK_RC(lds_cache_read(rt, c, "b", 1, buf, 1, &len), 1);
  CHECK_EQ(len, 3);
  CHECK_RC(lds_cache_read(rt, c, "none", 4, buf, sizeof buf, &len), 0);
  CHECK_EQ(len, 0);

  lds_cache_key_list list;
  if (CHECK_RC(lds_cache_keys(rt, c, NULL, 0, &list), LDS_OK)) {
    CHECK_EQ(list.count, 3);
    int seen = 0;
    for (size_t i = 0; i < list.count; i++) {
      if (list.lengths[i] == 1 && memcmp(list.keys[i], "a", 1) == 0) seen |= 1;
      if (list.lengths[i] == 1 && memcmp(list.keys[i], "b", 1) == 0) seen |= 2;
      if (list.lengths[i] == 5 && memcmp(list.keys[i], "empty", 5) == 0) seen |= 4;
    }
    CHECK_EQ(seen, 7);
    lds_cache_key_list_clear(&list);
  }
  if (CHECK_RC(lds_cache_keys(rt, c, "e", 1, &list), LDS_OK)) {
    CHECK_EQ(list.count, 1);
    if (list.count == 1) CHECK_BYTES(list.keys[0], list.lengths[0], "empty");
    lds_cache_key_list_clear(&list);
  }

  CHECK_RC(lds_cache_remove(rt, c, "a", 1), 1);
  CHECK_RC(lds_cache_remove(rt, c, "a", 1), 0);
  check_miss(rt, c, "a");
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("t1:", "v:", "a")), 0);

  lds_cache_statistics stats;
  if (CHECK_RC(lds_cache_stats(rt, c, &stats), LDS_OK)) {
    CHECK_OP(stats.hits, >=, 4);
    CHECK_OP(stats.misses, >=, 2);
  }

  CHECK_RC(lds_cache_clear(rt, c), LDS_OK);
  check_miss(rt, c, "b");
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("t1:", "v:", "b")), 0);
  if (CHECK_RC(lds_cache_keys(rt, c, NULL, 0, &list), LDS_OK)) {
    CHECK_EQ(list.count, 0);
    lds_cache_key_list_clear(&list);
  }
  CHECK_RC(lds_cache_put(rt, c, "after", 5, "clear", 5), LDS_OK);
  check_get(rt, c, "after", "clear");

  lds_redis_status st = status_of(rt, c);
  CHECK_EQ(st.connected, 1);
  CHECK_OP(st.connects, >=, 1);
  CHECK_EQ(st.errors, 0);
  CHECK_EQ(st.last_error_code, 0);
  CHECK_STR(st.last_error, "");
  CHECK_RC(lds_cache_free(rt, c), LDS_OK);
  CHECK_RC(lds_cache_get(rt, c, "after", 5, &v), LDS_ENOENT);
  rt_free(rt);
  redis_server_destroy(&srv);
}

TEST(test_redis_cache_key_prefixes_keep_applications_apart) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o1 = LDS_REDIS_CACHE_OPTIONS_INIT, o2 = LDS_REDIS_CACHE_OPTIONS_INIT;
  o1.key_prefix = "app1:";
  o2.key_prefix = "app2:";
  lds_id c1 = redis_cache(rt, srv.url, &o1), c2 = redis_cache(rt, srv.url, &o2);
  lds_id c3 = redis_cache(rt, srv.url, NULL);
  CHECK_RC(lds_cache_put(rt, c1, "k", 1, "one", 3), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c2, "k", 1, "two", 3), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c1, "only1", 5, "x", 1), LDS_OK);
  CHECK_RC(lds_cache_put(rt, c3, "d", 1, "default", 7), LDS_OK);
  check_get(rt, c1, "k", "one");
  check_get(rt, c2, "k", "two");
  check_miss(rt, c2, "only1");
  check_miss(rt, c3, "k");
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("app1:", "v:", "k")), 1);
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("app2:", "v:", "k")), 1);
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("lds:", "v:", "d")), 1);
  lds_cache_key_list list;
  if (CHECK_RC(lds_cache_keys(rt, c2, NULL, 0, &list), LDS_OK)) {
    CHECK_EQ(list.count, 1);
    if (list.count == 1) CHECK_BYTES(list.keys[0], list.lengths[0], "k");
    lds_cache_key_list_clear(&list);
  }
  /* Clearing, removing and invalidating one application leaves the other alone. */
  CHECK_RC(lds_cache_remove(rt, c2, "only1", 5), 0);
  check_get(rt, c1, "only1", "x");
  CHECK_RC(lds_cache_invalidate(rt, c1, "", 0), LDS_OK);
  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(rt, c2, "k", 1, &v), 1)) {
    CHECK_EQ(v.stale, 0);
    lds_cache_value_clear(&v);
  }
  if (CHECK_RC(lds_cache_get(rt, c1, "k", 1, &v), 1)) {
    CHECK_EQ(v.stale, 1);
    lds_cache_value_clear(&v);
  }
  CHECK_RC(lds_cache_clear(rt, c1), LDS_OK);
  check_miss(rt, c1, "k");
  check_get(rt, c2, "k", "two");
  check_get(rt, c3, "d", "default");
  rt_free(rt);
  redis_server_destroy(&srv);
}

TEST(test_redis_cache_entries_live_ttl_ms_capped_by_max_ttl_ms) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "ttl:";
  o.ttl_ms = 60000;
  lds_id minute = redis_cache(rt, srv.url, &o);
  o.key_prefix = "cap:";
  o.ttl_ms = 10ull * 86400000;
  o.max_ttl_ms = 5000;
  lds_id capped = redis_cache(rt, srv.url, &o);
  o.key_prefix = "day:";
  o.ttl_ms = 0;
  o.max_ttl_ms = 0;
  lds_id day = redis_cache(rt, srv.url, &o);
  CHECK_RC(lds_cache_put(rt, minute, "k", 1, "v", 1), LDS_OK);
  CHECK_RC(lds_cache_put(rt, capped, "k", 1, "v", 1), LDS_OK);
  CHECK_RC(lds_cache_put(rt, day, "k", 1, "v", 1), LDS_OK);
  long long pttl = redis_server_integer(&srv, -100, "PTTL %s", redis_name("ttl:", "v:", "k"));
  CHECK_OP(pttl, >, 60000 - slow_ms(10000, 60000));
  CHECK_OP(pttl, <=, 60000);
  pttl = redis_server_integer(&srv, -100, "PTTL %s", redis_name("cap:", "v:", "k"));
  CHECK_OP(pttl, >, 0);
  CHECK_OP(pttl, <=, 5000);
  pttl = redis_server_integer(&srv, -100, "PTTL %s", redis_name("day:", "v:", "k"));
  CHECK_OP(pttl, >, 86400000 - slow_ms(10000, 60000));
  CHECK_OP(pttl, <=, 86400000);
  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(rt, minute, "k", 1, &v), 1)) {
    CHECK_OP(v.expires_at_ms, >=, v.stored_at_ms + 59000);
    CHECK_OP(v.expires_at_ms, <=, v.stored_at_ms + 61000);
    lds_cache_value_clear(&v);
  }

  /* A short time to live: the entry is gone from Redis, and a miss, once it passed. */
  o.key_prefix = "short:";
  o.ttl_ms = (uint64_t)slow_ms(300, 3000);
  lds_id brief = redis_cache(rt, srv.url, &o);
  long long put_at = mono_ms();
  CHECK_RC(lds_cache_put(rt, brief, "k", 1, "v", 1), LDS_OK);
  long long deadline = put_at + 1000LL * redis_server_deadline_s();
  while (redis_server_integer(&srv, -1, "EXISTS %s", redis_name("short:", "v:", "k")) == 1 && mono_ms() < deadline) nap_ms(20);
  CHECK_OP(mono_ms() - put_at, >=, (long long)o.ttl_ms - 50);
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("short:", "v:", "k")), 0);
  check_miss(rt, brief, "k");
  rt_free(rt);
  redis_server_destroy(&srv);
}

static void succeed_big(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  char big[2000];
  memset(big, 'b', sizeof big);
  CHECK_RC(lds_job_succeed(h->rt, job, big, sizeof big), LDS_OK);
}

TEST(test_redis_cache_value_over_max_value_bytes_is_not_stored) {
  redis_server srv;
  START_SERVER(&srv);
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, succeed_big);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "big:";
  o.max_value_bytes = 1000;
  lds_id c = redis_cache(f.rt, srv.url, &o);
  char value[1001];
  memset(value, 'v', sizeof value);
  CHECK_RC(lds_cache_put(f.rt, c, "fits", 4, value, 1000), LDS_OK);
  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(f.rt, c, "fits", 4, &v), 1)) {
    CHECK_EQ(v.value_len, 1000);
    lds_cache_value_clear(&v);
  }
  CHECK_RC(lds_cache_put(f.rt, c, "over", 4, value, 1001), LDS_EREDIS);
  lds_redis_status st = status_of(f.rt, c);
  CHECK_EQ(st.last_error_code, LDS_REDIS_ETOOBIG);
  CHECK(st.last_error[0] != '\0');
  check_miss(f.rt, c, "over");
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("big:", "v:", "over")), 0);
  /* The cache still works. */
  CHECK_RC(lds_cache_put(f.rt, c, "small", 5, "s", 1), LDS_OK);
  check_get(f.rt, c, "small", "s");

  /* A load whose value is over the bound succeeds; the value is not stored. */
  lds_load_options lo = cache_first(c);
  REQUIRE_RC(fx_load(&f, "loaded", &lo), LDS_OK);
  if (WAIT_FOR(settled(&f.rec) != NULL)) {
    const lds_event *e = settled(&f.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK_EQ(e->value_len, 2000);
  }
  check_miss(f.rt, c, "loaded");
  CHECK_EQ(redis_server_integer(&srv, -1, "EXISTS %s", redis_name("big:", "v:", "loaded")), 0);

  /* The bound itself is bounded. */
  o.max_value_bytes = (uint64_t)LDS_VALUE_MAX + 1;
  lds_id out = 77;
  CHECK_RC(lds_redis_cache_new(f.rt, srv.url, &o, &out), LDS_EINVAL);
  CHECK_EQ(out, 77);
  fixture_finish(&f);
  redis_server_destroy(&srv);
}

TEST(test_redis_cache_bad_urls_and_options_are_einval) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  static const char *const bad[] = {
      "garbage",
      "",
      "http://127.0.0.1:6379",
      "redis://127.0.0.1:notaport",
      "redis://127.0.0.1:70000",
      "redis://127.0.0.1:6379/notadb",
      "unix://",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lds_id out = 77;
    int rc = lds_redis_cache_new(rt, bad[i], NULL, &out);
    if (rc != LDS_EINVAL) check_fail(__FILE__, __LINE__, "URL \"%s\": %d (%s), expected LDS_EINVAL", bad[i], rc, lds_strerror(rc));
    CHECK_EQ(out, 77);
  }
  lds_id out = 77;
  /* TLS: a code of its own, as hiredis 0.14 has none (in any case of the scheme). */
  CHECK_RC(lds_redis_cache_new(rt, "rediss://127.0.0.1:6379", NULL, &out), LDS_ENOTSUP);
  CHECK_RC(lds_redis_cache_new(rt, "REDISS://127.0.0.1:6379", NULL, &out), LDS_ENOTSUP);
  CHECK_EQ(out, 77);
  CHECK_RC(lds_redis_cache_new(NULL, "redis://127.0.0.1:6379", NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_redis_cache_new(rt, NULL, NULL, &out), LDS_EINVAL);
  CHECK_RC(lds_redis_cache_new(rt, "redis://127.0.0.1:6379", NULL, NULL), LDS_EINVAL);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.size = 8;
  CHECK_RC(lds_redis_cache_new(rt, "redis://127.0.0.1:6379", &o, &out), LDS_EINVAL);
  o = (lds_redis_cache_options)LDS_REDIS_CACHE_OPTIONS_INIT;
  o.flags = 1;
  CHECK_RC(lds_redis_cache_new(rt, "redis://127.0.0.1:6379", &o, &out), LDS_EINVAL);
  CHECK_EQ(out, 77);

  /* Status: only of a Redis cache, with a size that covers the struct. */
  lds_id memory;
  REQUIRE_RC(lds_memory_cache_new(rt, NULL, &memory), LDS_OK);
  lds_redis_status st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  CHECK_RC(lds_redis_cache_status(rt, memory, &st), LDS_ENOENT);
  CHECK_RC(lds_redis_cache_status(NULL, memory, &st), LDS_EINVAL);
  CHECK_RC(lds_redis_cache_status(rt, memory, NULL), LDS_EINVAL);
  /* A server that is down is no error at creation. */
  lds_id down;
  REQUIRE_RC(lds_redis_cache_new(rt, "redis://127.0.0.1:1", NULL, &down), LDS_OK);
  st.size = 4;
  CHECK_RC(lds_redis_cache_status(rt, down, &st), LDS_EINVAL);
  rt_free(rt);
}

/* Evaluates a script that selects database db and answers EXISTS key. */
static long long exists_in_db(redis_server *srv, int db, const char *key) {
  char script[160];
  snprintf(script, sizeof script, "redis.call('SELECT', %d) return redis.call('EXISTS', KEYS[1])", db);
  return redis_server_integer(srv, -1, "EVAL %s 1 %s", script, key);
}

TEST(test_redis_cache_urls_select_socket_host_database_and_password) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char url[200];
  snprintf(url, sizeof url, "unix://%s?db=3", srv.socket);
  lds_id unix_db3 = redis_cache(rt, url, NULL);
  CHECK_RC(lds_cache_put(rt, unix_db3, "u", 1, "unix", 4), LDS_OK);
  CHECK_EQ(exists_in_db(&srv, 3, redis_name("lds:", "v:", "u")), 1);
  CHECK_EQ(exists_in_db(&srv, 0, redis_name("lds:", "v:", "u")), 0);
  snprintf(url, sizeof url, "%s/5", srv.url);
  lds_id tcp_db5 = redis_cache(rt, url, NULL);
  CHECK_RC(lds_cache_put(rt, tcp_db5, "t", 1, "tcp", 3), LDS_OK);
  CHECK_EQ(exists_in_db(&srv, 5, redis_name("lds:", "v:", "t")), 1);
  check_miss(rt, tcp_db5, "u");
  check_get(rt, unix_db3, "u", "unix");

  /* A host name, resolved off the loop thread. */
  snprintf(url, sizeof url, "redis://localhost:%d/4", srv.port);
  lds_id named = redis_cache(rt, url, NULL);
  CHECK_RC(lds_cache_put(rt, named, "h", 1, "host", 4), LDS_OK);
  CHECK_EQ(exists_in_db(&srv, 4, redis_name("lds:", "v:", "h")), 1);

  /* With a password: the right one (percent-escaped) works, a wrong one is EAUTH. */
  redisReply *r = redis_server_command(&srv, "CONFIG SET requirepass %s", "p@ss word");
  CHECK(r != NULL && r->type == REDIS_REPLY_STATUS);
  if (r) freeReplyObject(r);
  snprintf(url, sizeof url, "redis://:p%%40ss%%20word@127.0.0.1:%d", srv.port);
  lds_id good = redis_cache(rt, url, NULL);
  CHECK_RC(lds_cache_put(rt, good, "p", 1, "pw", 2), LDS_OK);
  check_get(rt, good, "p", "pw");
  snprintf(url, sizeof url, "redis://default:p%%40ss%%20word@127.0.0.1:%d/2", srv.port);
  lds_id user = redis_cache(rt, url, NULL);
  CHECK_RC(lds_cache_put(rt, user, "p", 1, "user", 4), LDS_OK);
  check_get(rt, user, "p", "user");
  snprintf(url, sizeof url, "redis://:wrong@127.0.0.1:%d", srv.port);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.reconnect_max_ms = 200;
  lds_id bad = redis_cache(rt, url, &o);
  CHECK_RC(lds_cache_put(rt, bad, "p", 1, "no", 2), LDS_EREDIS);
  lds_redis_status st = status_of(rt, bad);
  CHECK_EQ(st.last_error_code, LDS_REDIS_EAUTH);
  CHECK_RC(lds_cache_get(rt, bad, "p", 1, &(lds_cache_value){0}), LDS_EREDIS);
  rt_free(rt);
  redis_server_destroy(&srv);
}

/* lds_cache_get_many: N keys named "key:%d" with their values ("value:%d"
 * for the even ones, which are put; the odd ones are missing). */
#define MANY 1000

typedef struct many_batch {
  char names[MANY][16];
  const void *keys[MANY];
  size_t lens[MANY];
  lds_cache_value out[MANY];
  int results[MANY];
} many_batch;

static void many_init(many_batch *b, int n) {
  for (int i = 0; i < n; i++) {
    b->lens[i] = (size_t)snprintf(b->names[i], sizeof b->names[i], "key:%d", i);
    b->keys[i] = b->names[i];
  }
}

static void many_clear(many_batch *b, int n) {
  for (int i = 0; i < n; i++) lds_cache_value_clear(&b->out[i]);
}

/* A batch of 1,000 keys, half of them stored, in one call: every hit has
 * its own value, every miss is 0, and a bad key fails alone. */
TEST(test_redis_cache_get_many_batch_of_a_thousand_keys) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "many:";
  o.command_timeout_ms = (uint32_t)slow_ms(2000, 20000);
  lds_id c = redis_cache(rt, srv.url, &o);
  static many_batch b;
  many_init(&b, MANY);
  for (int i = 0; i < MANY; i += 2) {
    char value[32];
    int len = snprintf(value, sizeof value, "value:%d", i);
    REQUIRE_RC(lds_cache_put(rt, c, b.keys[i], b.lens[i], value, (size_t)len), LDS_OK);
  }
  /* Two keys of the batch are bad: they fail alone and are not sent. */
  b.keys[1] = NULL;
  b.lens[3] = (size_t)LDS_VALUE_MAX + 1;
  CHECK_RC(lds_cache_get_many(rt, c, MANY, b.keys, b.lens, b.out, b.results), MANY / 2);
  for (int i = 0; i < MANY; i++) {
    int want = i == 1 ? LDS_EINVAL : i == 3 ? LDS_ETOOBIG : i % 2 == 0;
    if (b.results[i] != want) {
      check_fail(__FILE__, __LINE__, "results[%d] = %d, expected %d", i, b.results[i], want);
      break;
    }
    char value[32];
    int len = snprintf(value, sizeof value, "value:%d", i);
    if (want == 1 && (b.out[i].value_len != (size_t)len || memcmp(b.out[i].value, value, (size_t)len) != 0)) {
      check_fail(__FILE__, __LINE__, "out[%d] is not value:%d", i, i);
      break;
    }
    if (want != 1 && b.out[i].value != NULL) check_fail(__FILE__, __LINE__, "out[%d] is not zeroed", i);
  }
  many_clear(&b, MANY);
  lds_cache_statistics st;
  if (CHECK_RC(lds_cache_stats(rt, c, &st), LDS_OK)) {
    CHECK_EQ(st.hits, MANY / 2);
    CHECK_EQ(st.misses, MANY / 2 - 2);
  }
  /* Over the bound: the whole call, before any command. */
  CHECK_RC(lds_cache_get_many(rt, c, LDS_CACHE_GET_MANY_MAX + 1, b.keys, b.lens, b.out, b.results), LDS_ETOOBIG);
  CHECK_RC(lds_cache_get_many(rt, c, 0, NULL, NULL, NULL, NULL), 0);
  rt_free(rt);
  redis_server_destroy(&srv);
}

/* While redis-server is stopped a batch fails key by key with LDS_EREDIS,
 * within the command timeout; the front tier still answers the keys it
 * holds. After a restart the same batch is served again. */
TEST(test_redis_cache_get_many_while_the_server_is_stopped) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "stopped:";
  o.command_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.connect_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.reconnect_max_ms = 200;
  o.memory_max_entries = 10;
  lds_id c = redis_cache(rt, srv.url, &o);
  lds_redis_status st;
  STATUS_UNTIL(rt, c, st, st.subscribed == 1);
  enum { N = 20 };
  static many_batch b;
  many_init(&b, N);
  /* key:0 is put through this cache: its front tier holds it. The
   * others are missing: misses while the server runs. */
  REQUIRE_RC(lds_cache_put(rt, c, b.keys[0], b.lens[0], "front", 5), LDS_OK);
  CHECK_RC(lds_cache_get_many(rt, c, N, b.keys, b.lens, b.out, b.results), 1);
  CHECK_EQ(b.results[0], 1);
  for (int i = 1; i < N; i++) CHECK_EQ(b.results[i], 0);
  CHECK_BYTES(b.out[0].value, b.out[0].value_len, "front");
  many_clear(&b, N);

  REQUIRE(redis_server_stop(&srv));
  long long t0 = mono_ms();
  CHECK_RC(lds_cache_get_many(rt, c, N, b.keys, b.lens, b.out, b.results), 1);
  long long took = mono_ms() - t0;
  /* "at most about twice command_timeout_ms" */
  CHECK_OP(took, <, 2LL * o.command_timeout_ms + slow_ms(1000, 10000));
  CHECK_EQ(b.results[0], 1);
  CHECK_BYTES(b.out[0].value, b.out[0].value_len, "front");
  for (int i = 1; i < N; i++) {
    if (b.results[i] != LDS_EREDIS)
      check_fail(__FILE__, __LINE__, "results[%d] = %d (%s), expected LDS_EREDIS", i, b.results[i],
                 lds_strerror(b.results[i]));
    CHECK(b.out[i].value == NULL);
  }
  many_clear(&b, N);
  st = status_of(rt, c);
  CHECK(st.last_error_code == LDS_REDIS_ECONNECT || st.last_error_code == LDS_REDIS_EDOWN ||
        st.last_error_code == LDS_REDIS_ETIMEDOUT || st.last_error_code == LDS_REDIS_EREFUSED);

  REQUIRE(redis_server_restart(&srv));
  STATUS_UNTIL(rt, c, st, st.connected == 1);
  REQUIRE_RC(lds_cache_put(rt, c, b.keys[1], b.lens[1], "back", 4), LDS_OK);
  if (CHECK_RC(lds_cache_get_many(rt, c, 2, b.keys + 1, b.lens + 1, b.out, b.results), 1)) {
    CHECK_BYTES(b.out[0].value, b.out[0].value_len, "back");
    CHECK_EQ(b.results[1], 0);
  }
  many_clear(&b, 2);
  rt_free(rt);
  redis_server_destroy(&srv);
}

/* Calls of a cell callback on the loop thread, and what they returned. */
static lds_id loop_cache;
static int loop_rc[7];
static bool loop_done;

static void call_cache_on_loop(recorder *rec, const lds_event *event) {
  (void)event;
  lds_cache_value v;
  size_t len;
  lds_cache_key_list list;
  lds_redis_status st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  const void *keys[] = {"k"};
  size_t lens[] = {1};
  int results[1];
  int rc[7] = {
      lds_cache_get(rec->rt, loop_cache, "k", 1, &v),
      lds_cache_put(rec->rt, loop_cache, "k", 1, "v", 1),
      lds_cache_remove(rec->rt, loop_cache, "k", 1),
      lds_cache_keys(rec->rt, loop_cache, NULL, 0, &list),
      lds_cache_read(rec->rt, loop_cache, "k", 1, NULL, 0, &len),
      lds_cache_get_many(rec->rt, loop_cache, 1, keys, lens, &v, results),
      lds_redis_cache_status(rec->rt, loop_cache, &st),
  };
  harness_lock();
  memcpy(loop_rc, rc, sizeof rc);
  loop_done = true;
  harness_notify();
  harness_unlock();
}

TEST(test_redis_cache_call_on_the_loop_thread_is_estate) {
  redis_server srv;
  START_SERVER(&srv);
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  loop_cache = redis_cache(f.rt, srv.url, NULL);
  CHECK_RC(lds_cache_put(f.rt, loop_cache, "k", 1, "v", 1), LDS_OK);
  f.rec.action = call_cache_on_loop;
  REQUIRE_RC(fx_set_loaded(&f, "go"), LDS_OK);
  if (WAIT_FOR(loop_done)) {
    for (int i = 0; i < 6; i++) {
      if (loop_rc[i] != LDS_ESTATE)
        check_fail(__FILE__, __LINE__, "cache call %d on the loop thread returned %d (%s), expected LDS_ESTATE", i,
                   loop_rc[i], lds_strerror(loop_rc[i]));
    }
    CHECK_EQ(loop_rc[6], LDS_OK);
  }
  f.rec.action = NULL;
  check_get(f.rt, loop_cache, "k", "v");
  fixture_finish(&f);
  redis_server_destroy(&srv);
}

/* A port of 127.0.0.1 bound but not listening: connections are refused. */
static int refusing_port(int *fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(*fd, (struct sockaddr *)&a, &len) != 0)
    return -1;
  return ntohs(a.sin_port);
}

TEST(test_redis_cache_unreachable_server_fails_cache_calls_not_loads) {
  int fd;
  int port = refusing_port(&fd);
  REQUIRE(port > 0);
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  char url[64];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.connect_timeout_ms = 500;
  o.command_timeout_ms = 500;
  o.reconnect_max_ms = 200;
  lds_id c = redis_cache(f.rt, url, &o);
  long long t0 = mono_ms();
  lds_cache_value v;
  CHECK_RC(lds_cache_get(f.rt, c, "k", 1, &v), LDS_EREDIS);
  CHECK_RC(lds_cache_put(f.rt, c, "k", 1, "v", 1), LDS_EREDIS);
  /* "at most about twice command_timeout_ms" each */
  CHECK_OP(mono_ms() - t0, <, slow_ms(4000, 60000));
  lds_redis_status st = status_of(f.rt, c);
  CHECK_EQ(st.connected, 0);
  CHECK(st.last_error_code == LDS_REDIS_ECONNECT || st.last_error_code == LDS_REDIS_EDOWN ||
        st.last_error_code == LDS_REDIS_EREFUSED);
  CHECK_OP(st.errors, >=, 2);

  /* A cache-first shared load completes through its loader. */
  lds_load_options lo = cache_first(c);
  REQUIRE_RC(fx_load(&f, "through the loader", &lo), LDS_OK);
  if (WAIT_FOR(settled(&f.rec) != NULL)) {
    const lds_event *e = settled(&f.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK_BYTES(e->value, e->value_len, "through the loader");
  }
  CHECK_EQ(f.h.starts, 1);
  /* A cache-only load fails in the Redis domain instead of LDS_ENOENT. */
  lds_load_options only = lo;
  only.cache_policy = LDS_POLICY_CACHE_ONLY;
  only.flags = 0;
  size_t before = rec_count(&f.rec);
  REQUIRE_RC(fx_load(&f, "cache only", &only), LDS_OK);
  if (WAIT_FOR(f.rec.count > before && settled(&f.rec) != NULL)) {
    const lds_event *e = settled(&f.rec);
    CHECK_EQ(e->status, LDS_ERROR);
    CHECK_EQ(e->error_domain, LDS_DOMAIN_REDIS);
    CHECK(e->error_code == LDS_REDIS_ECONNECT || e->error_code == LDS_REDIS_EDOWN ||
          e->error_code == LDS_REDIS_ETIMEDOUT || e->error_code == LDS_REDIS_EREFUSED);
  }
  CHECK_EQ(f.h.starts, 1);
  fixture_finish(&f);
  close(fd);
}

/* A server that speaks RESP oddly: every read on a connection is answered
 * with `subscribe` when it holds a SUBSCRIBE, else with `command`, after
 * `delay_ms`. */
typedef struct odd_server {
  int listener, port;
  const char *subscribe, *command;
  long delay_ms;
  atomic_bool stop;
  pthread_t thread;
} odd_server;

static void *odd_server_loop(void *arg) {
  odd_server *s = arg;
  struct pollfd fds[9] = {{.fd = s->listener, .events = POLLIN}};
  nfds_t n = 1;
  while (!atomic_load(&s->stop)) {
    if (poll(fds, n, 20) <= 0) continue;
    if (fds[0].revents && n < 9) {
      int c = accept(s->listener, NULL, NULL);
      if (c >= 0) fds[n++] = (struct pollfd){.fd = c, .events = POLLIN};
    }
    for (nfds_t i = 1; i < n; i++) {
      if (!fds[i].revents) continue;
      char b[4096];
      ssize_t got = read(fds[i].fd, b, sizeof b - 1);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i] = fds[--n];
        fds[i].revents = 0;
        continue;
      }
      b[got] = 0;
      const char *answer = strstr(b, "SUBSCRIBE") ? s->subscribe : s->command;
      nap_ms(s->delay_ms);
      if (send(fds[i].fd, answer, strlen(answer), MSG_NOSIGNAL) < 0) continue;
    }
  }
  for (nfds_t i = 1; i < n; i++) close(fds[i].fd);
  return NULL;
}

static bool odd_server_start(odd_server *s) {
  s->port = refusing_port(&s->listener);
  return s->port > 0 && listen(s->listener, 8) == 0 && pthread_create(&s->thread, NULL, odd_server_loop, s) == 0;
}

static void odd_server_stop(odd_server *s) {
  atomic_store(&s->stop, true);
  pthread_join(s->thread, NULL);
  close(s->listener);
}

/* A Redis cache of rt on the odd server: the URL's userinfo ("" or
 * "user:password@"), the command timeout. */
static lds_id odd_cache(lds_runtime *rt, const odd_server *s, const char *userinfo, uint32_t command_timeout_ms) {
  char url[64];
  snprintf(url, sizeof url, "redis://%s127.0.0.1:%d", userinfo, s->port);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.command_timeout_ms = command_timeout_ms;
  o.reconnect_max_ms = 50;
  return redis_cache(rt, url, &o);
}

/* hiredis 0.14 aborts the process (assert) on a reply that answers no
 * command, and on a subscription message of another shape; such replies
 * now drop the connection, with LDS_REDIS_EREPLY. On a subscribed
 * connection, a reply hiredis finds no callback for goes to the last
 * callback it ran again (there AUTH's): that call is ignored. */
TEST(test_redis_cache_replies_that_answer_no_command_drop_the_connection_not_the_process) {
  static const char *const cases[][3] = {
      {"*1\r\n:1\r\n", "$-1\r\n", ""},                                               /* one element */
      {"*2\r\n:1\r\n:2\r\n", "$-1\r\n", ""},                                         /* not strings */
      {"*2\r\n$11\r\nunsubscribe\r\n$10\r\nlds:events\r\n", "$-1\r\n", ""},           /* no count */
      {"*3\r\n$9\r\nsubscribe\r\n$10\r\nlds:events\r\n:1\r\n", "$-1\r\n+OK\r\n", ""}, /* two replies to GET */
      {"+OK\r\n:1\r\n", "+OK\r\n+OK\r\n", ":pw@"},                         /* AUTH's callback again */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    odd_server s = {.subscribe = cases[i][0], .command = cases[i][1]};
    REQUIRE(odd_server_start(&s));
    lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
    lds_id c = odd_cache(rt, &s, cases[i][2], 1000);
    lds_cache_value v;
    int rc = lds_cache_get(rt, c, "k", 1, &v);
    CHECK(rc == 0 || rc == LDS_EREDIS);
    lds_redis_status st;
    STATUS_UNTIL(rt, c, st, st.last_error_code == LDS_REDIS_EREPLY);
    if (i < 3) CHECK_EQ(st.subscribed, 0);
    rt_free(rt);
    odd_server_stop(&s);
  }
}

/* A load cancelled while its cell waits for Redis's answer is the cell's
 * last request all the same: a refresh reloads it (it did nothing). */
TEST(test_redis_cache_refresh_after_a_cancel_during_the_lookup_reloads) {
  odd_server s = {.subscribe = "", .command = ""};  /* answers nothing */
  REQUIRE(odd_server_start(&s));
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_load_options lo = cache_first(odd_cache(f.rt, &s, "", 60000));
  lo.flags = 0;  /* no lease: the server never answers */
  REQUIRE_RC(fx_load(&f, "asked", &lo), LDS_OK);
  CHECK_RC(lds_loadable_cancel(f.rt, f.cell), LDS_OK);
  CHECK_RC(lds_loadable_refresh(f.rt, f.cell), LDS_OK);
  /* A refresh asks the loader, not the cache. */
  if (WAIT_FOR(settled(&f.rec) != NULL)) {
    const lds_event *e = settled(&f.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK_BYTES(e->value, e->value_len, "asked");
  }
  fixture_finish(&f);
  odd_server_stop(&s);
}

/* A lease request that Redis answers "wait" while the runtime is being
 * freed (its connection closes gracefully, letting the reply in): the
 * load is not made to wait then, and no timer is left open (valgrind's
 * leak check saw one from every such reply). */
TEST(test_redis_cache_lease_wait_answered_while_the_runtime_is_freed) {
  odd_server s = {.subscribe = "*3\r\n$9\r\nsubscribe\r\n$10\r\nlds:events\r\n:1\r\n",
                  .command = "*2\r\n:3\r\n:50\r\n", .delay_ms = 100};
  REQUIRE(odd_server_start(&s));
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_load_options lo = LDS_LOAD_OPTIONS_INIT;
  lo.flags = LDS_LOAD_SHARE;
  lo.cache = odd_cache(f.rt, &s, "", 900);
  REQUIRE_RC(fx_load(&f, "k", &lo), LDS_OK);
  nap_ms(slow_ms(30, 300));  /* the lease request is sent, not answered */
  fixture_finish(&f);
  odd_server_stop(&s);
}

TEST(test_redis_cache_first_load_finds_the_entry_another_runtime_stored) {
  redis_server srv;
  START_SERVER(&srv);
  fixture a, b;
  fixture_init(&a, LDS_DELIVER_LOOP, host_succeed_echo);
  fixture_init(&b, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_id ca = redis_cache(a.rt, srv.url, NULL), cb = redis_cache(b.rt, srv.url, NULL);
  lds_load_options oa = cache_first(ca), ob = cache_first(cb);
  REQUIRE_RC(fx_load(&a, "shared value", &oa), LDS_OK);
  if (WAIT_FOR(settled(&a.rec) != NULL)) CHECK_STATE(settled(&a.rec), 2, LDS_LOADED, 0);
  CHECK_EQ(a.h.starts, 1);
  /* The result is written to Redis after A's cells showed it (the header's
   * "Order"): B loads once it is there. */
  lds_redis_status st;
  STATUS_UNTIL(a.rt, ca, st, st.published >= 1);
  REQUIRE_RC(fx_load(&b, "shared value", &ob), LDS_OK);
  if (WAIT_FOR(settled(&b.rec) != NULL)) {
    const lds_event *e = settled(&b.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK(e->flags & LDS_FLAG_FROM_CACHE);
    CHECK_BYTES(e->value, e->value_len, "shared value");
  }
  CHECK_EQ(b.h.starts, 0);
  /* And once stale (fresh_ms 1), the entry is loaded again. */
  nap_ms(5);
  ob.fresh_ms = 1;
  size_t before = rec_count(&b.rec);
  REQUIRE_RC(fx_load(&b, "shared value", &ob), LDS_OK);
  if (WAIT_FOR(b.rec.count > before && settled(&b.rec) != NULL)) {
    const lds_event *e = settled(&b.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    CHECK_EQ(e->flags & LDS_FLAG_FROM_CACHE, 0);
  }
  CHECK_EQ(b.h.starts, 1);
  fixture_finish(&a);
  fixture_finish(&b);
  redis_server_destroy(&srv);
}

/* Two runtimes stand for two processes: each cache has its connections. */
TEST(test_redis_cache_front_tier_is_dropped_by_an_invalidation_elsewhere) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *a = rt_new(LDS_DELIVER_LOOP), *b = rt_new(LDS_DELIVER_LOOP);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "front:";
  o.memory_max_entries = 100;
  lds_id ca = redis_cache(a, srv.url, &o);
  o.memory_max_entries = 0;
  lds_id cb = redis_cache(b, srv.url, &o);
  lds_redis_status st;
  STATUS_UNTIL(a, ca, st, st.subscribed == 1);
  /* Written by A itself: a write of another process would drop it from
   * A's front tier when its message arrives, at a time the test cannot see. */
  CHECK_RC(lds_cache_put(a, ca, "k", 1, "v1", 2), LDS_OK);
  check_get(a, ca, "k", "v1");
  lds_cache_statistics stats;
  if (CHECK_RC(lds_cache_stats(a, ca, &stats), LDS_OK)) CHECK_EQ(stats.entries, 1);
  /* Entries the front tier holds are served from memory: Redis is not asked. */
  CHECK_EQ(redis_server_integer(&srv, -1, "DEL %s", redis_name("front:", "v:", "k")), 1);
  check_get(a, ca, "k", "v1");
  CHECK_RC(lds_cache_put(b, cb, "k", 1, "v2", 2), LDS_OK);
  CHECK_RC(lds_cache_invalidate(b, cb, "k", 1), LDS_OK);
  STATUS_UNTIL(a, ca, st, st.invalidations >= 1);
  lds_cache_value v;
  if (CHECK_RC(lds_cache_get(a, ca, "k", 1, &v), 1)) {
    CHECK_BYTES(v.value, v.value_len, "v2");
    CHECK_EQ(v.stale, 1);
    lds_cache_value_clear(&v);
  }
  rt_free(a);
  rt_free(b);
  redis_server_destroy(&srv);
}

/* A holder whose load fails or is cancelled gives its lease back: the
 * waiting load (another runtime, standing for another process) takes it
 * over at once, not lease_ms later. */
static void lease_given_back(bool cancel) {
  redis_server srv;
  START_SERVER(&srv);
  fixture a, b;
  fixture_init(&a, LDS_DELIVER_LOOP, NULL);
  fixture_init(&b, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "back:";
  o.lease_ms = (uint32_t)slow_ms(10000, 60000);
  lds_id ca = redis_cache(a.rt, srv.url, &o), cb = redis_cache(b.rt, srv.url, &o);
  lds_redis_status st;
  STATUS_UNTIL(b.rt, cb, st, st.subscribed == 1);
  lds_load_options la = cache_first(ca), lb = cache_first(cb);
  REQUIRE_RC(fx_load(&a, "k", &la), LDS_OK);
  if (!HOST_WAIT(&a.h, 1)) return;
  REQUIRE_RC(fx_load(&b, "k", &lb), LDS_OK);
  STATUS_UNTIL(b.rt, cb, st, st.leases_waited >= 1);
  CHECK_EQ(b.h.starts, 0);
  long long t0 = mono_ms();
  if (cancel) CHECK_RC(lds_loadable_cancel(a.rt, a.cell), LDS_OK);
  else CHECK_RC(lds_job_fail_final(a.rt, host_job_at(&a.h, 0), 7, "upstream failed"), LDS_OK);
  if (HOST_WAIT(&b.h, 1)) {
    long long took = mono_ms() - t0;
    if (took >= (long long)o.lease_ms / 2)
      check_fail(__FILE__, __LINE__, "the waiting load took the lease over %lld ms after the holder's %s (lease_ms %u)",
                 took, cancel ? "cancel" : "failure", o.lease_ms);
  }
  if (WAIT_FOR(settled(&b.rec) != NULL)) {
    CHECK_EQ(settled(&b.rec)->status, LDS_LOADED);
    CHECK_BYTES(settled(&b.rec)->value, settled(&b.rec)->value_len, "k");
  }
  st = status_of(b.rt, cb);
  CHECK_EQ(st.takeovers, 1);
  fixture_finish(&a);
  fixture_finish(&b);
  redis_server_destroy(&srv);
}

TEST(test_redis_cache_failed_holder_gives_its_lease_back) { lease_given_back(false); }

TEST(test_redis_cache_cancelled_holder_gives_its_lease_back) { lease_given_back(true); }

/* A holder whose lease expired and passed to another process does not
 * store its late result over the newer one (the fencing token). */
TEST(test_redis_cache_late_result_of_an_expired_lease_is_fenced) {
  redis_server srv;
  START_SERVER(&srv);
  fixture a, b;
  fixture_init(&a, LDS_DELIVER_LOOP, NULL);
  fixture_init(&b, LDS_DELIVER_LOOP, NULL);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "fence:";
  o.lease_ms = (uint32_t)slow_ms(300, 3000);
  lds_id ca = redis_cache(a.rt, srv.url, &o), cb = redis_cache(b.rt, srv.url, &o);
  lds_redis_status st;
  STATUS_UNTIL(b.rt, cb, st, st.subscribed == 1);
  lds_load_options la = cache_first(ca), lb = cache_first(cb);
  REQUIRE_RC(fx_load(&a, "k", &la), LDS_OK);
  if (!HOST_WAIT(&a.h, 1)) return;
  REQUIRE_RC(fx_load(&b, "k", &lb), LDS_OK);
  /* A's lease expires; B takes it over and stores its result. */
  if (!HOST_WAIT(&b.h, 1)) return;
  CHECK_RC(lds_job_succeed(b.rt, host_job_at(&b.h, 0), "new", 3), LDS_OK);
  if (WAIT_FOR(settled(&b.rec) != NULL)) CHECK_BYTES(settled(&b.rec)->value, settled(&b.rec)->value_len, "new");
  check_get(b.rt, cb, "k", "new");
  /* A's result comes late: its cell shows it, Redis keeps B's. */
  CHECK_RC(lds_job_succeed(a.rt, host_job_at(&a.h, 0), "old", 3), LDS_OK);
  if (WAIT_FOR(settled(&a.rec) != NULL)) CHECK_BYTES(settled(&a.rec)->value, settled(&a.rec)->value_len, "old");
  STATUS_UNTIL(a.rt, ca, st, st.fenced >= 1);
  CHECK_EQ(st.published, 0);
  check_get(b.rt, cb, "k", "new");
  st = status_of(b.rt, cb);
  CHECK_EQ(st.takeovers, 1);
  CHECK_EQ(st.published, 1);
  fixture_finish(&a);
  fixture_finish(&b);
  redis_server_destroy(&srv);
}

/* A load waiting for another process's result when Redis goes away loads
 * for itself: Redis unreachable, it does not wait out the lease. */
TEST(test_redis_cache_waiting_load_loads_itself_when_the_server_stops) {
  redis_server srv;
  START_SERVER(&srv);
  fixture a, b;
  fixture_init(&a, LDS_DELIVER_LOOP, NULL);
  fixture_init(&b, LDS_DELIVER_LOOP, host_succeed_echo);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "gone:";
  o.lease_ms = (uint32_t)slow_ms(20000, 120000);
  o.command_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.connect_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.reconnect_max_ms = 200;
  lds_id ca = redis_cache(a.rt, srv.url, &o), cb = redis_cache(b.rt, srv.url, &o);
  lds_redis_status st;
  STATUS_UNTIL(b.rt, cb, st, st.subscribed == 1);
  lds_load_options la = cache_first(ca), lb = cache_first(cb);
  REQUIRE_RC(fx_load(&a, "k", &la), LDS_OK);
  if (!HOST_WAIT(&a.h, 1)) return;
  REQUIRE_RC(fx_load(&b, "k", &lb), LDS_OK);
  STATUS_UNTIL(b.rt, cb, st, st.leases_waited >= 1);
  long long t0 = mono_ms();
  REQUIRE(redis_server_stop(&srv));
  if (HOST_WAIT(&b.h, 1)) {
    long long took = mono_ms() - t0;
    if (took >= (long long)o.lease_ms / 2)
      check_fail(__FILE__, __LINE__, "the waiting load called its loader %lld ms after Redis stopped (lease_ms %u)", took,
                 o.lease_ms);
  }
  if (WAIT_FOR(settled(&b.rec) != NULL)) CHECK_EQ(settled(&b.rec)->status, LDS_LOADED);
  CHECK_RC(lds_job_succeed(a.rt, host_job_at(&a.h, 0), "a", 1), LDS_OK);
  if (WAIT_FOR(settled(&a.rec) != NULL)) CHECK_EQ(settled(&a.rec)->status, LDS_LOADED);
  fixture_finish(&a);
  fixture_finish(&b);
  redis_server_destroy(&srv);
}

#define RESTART_CELLS 20

TEST(test_redis_cache_server_stopped_and_restarted_while_loads_run) {
  redis_server srv;
  START_SERVER(&srv);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, NULL);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "restart:";
  o.command_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.connect_timeout_ms = (uint32_t)slow_ms(500, 5000);
  o.reconnect_max_ms = 200;
  o.lease_ms = 2000;
  lds_id c = redis_cache(rt, srv.url, &o);
  CHECK_RC(lds_cache_put(rt, c, "before", 6, "up", 2), LDS_OK);
  lds_redis_status st;
  STATUS_UNTIL(rt, c, st, st.subscribed == 1);

  recorder recs[3 * RESTART_CELLS];
  lds_id cells[3 * RESTART_CELLS];
  for (int i = 0; i < 3 * RESTART_CELLS; i++) {
    rec_init(&recs[i], rt);
    cells[i] = cell_new(rt, &recs[i]);
  }
  lds_load_options lo = cache_first(c);
  char key[32];
  /* Loads whose loader runs when the server stops. */
  for (int i = 0; i < RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "running %d", i);
    REQUIRE_RC(lds_loadable_load(rt, cells[i], loader, key, strlen(key), &lo), LDS_OK);
  }
  if (!HOST_WAIT(&h, RESTART_CELLS)) goto out;
  REQUIRE(redis_server_stop(&srv));
  for (int i = 0; i < RESTART_CELLS; i++) {
    const host_job *j = host_job_info(&h, (size_t)i);
    CHECK_RC(lds_job_succeed(rt, j->job, j->request, j->request_len), LDS_OK);
  }
  for (int i = 0; i < RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "running %d", i);
    if (WAIT_FOR(settled(&recs[i]) != NULL)) {
      CHECK_EQ(settled(&recs[i])->status, LDS_LOADED);
      CHECK_BYTES(settled(&recs[i])->value, settled(&recs[i])->value_len, key);
    }
  }
  /* While it is down: cache calls fail, new loads complete through their loader. */
  lds_cache_value v;
  CHECK_RC(lds_cache_get(rt, c, "before", 6, &v), LDS_EREDIS);
  STATUS_UNTIL(rt, c, st, st.connected == 0);
  CHECK(st.last_error_code == LDS_REDIS_ECONNECT || st.last_error_code == LDS_REDIS_EDOWN ||
        st.last_error_code == LDS_REDIS_ETIMEDOUT || st.last_error_code == LDS_REDIS_EREFUSED);
  host_set_start(&h, host_succeed_echo);
  for (int i = RESTART_CELLS; i < 2 * RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "down %d", i);
    REQUIRE_RC(lds_loadable_load(rt, cells[i], loader, key, strlen(key), &lo), LDS_OK);
  }
  for (int i = RESTART_CELLS; i < 2 * RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "down %d", i);
    if (WAIT_FOR(settled(&recs[i]) != NULL)) {
      CHECK_EQ(settled(&recs[i])->status, LDS_LOADED);
      CHECK_BYTES(settled(&recs[i])->value, settled(&recs[i])->value_len, key);
    }
  }
  CHECK_EQ(h.starts, 2 * RESTART_CELLS);

  /* Back on the same port: the cache reconnects and works again. */
  uint64_t connects = st.connects;
  REQUIRE(redis_server_restart(&srv));
  STATUS_UNTIL(rt, c, st, st.connected == 1 && st.subscribed == 1);
  CHECK_OP(st.connects, >, connects);
  CHECK_RC(lds_cache_put(rt, c, "after", 5, "again", 5), LDS_OK);
  check_get(rt, c, "after", "again");
  for (int i = 2 * RESTART_CELLS; i < 3 * RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "after %d", i);
    REQUIRE_RC(lds_loadable_load(rt, cells[i], loader, key, strlen(key), &lo), LDS_OK);
  }
  for (int i = 2 * RESTART_CELLS; i < 3 * RESTART_CELLS; i++) {
    snprintf(key, sizeof key, "after %d", i);
    if (WAIT_FOR(settled(&recs[i]) != NULL)) CHECK_EQ(settled(&recs[i])->status, LDS_LOADED);
    check_get(rt, c, key, key);
  }
out:
  rt_free(rt);
  for (int i = 0; i < 3 * RESTART_CELLS; i++) rec_destroy(&recs[i]);
  host_destroy(&h);
  redis_server_destroy(&srv);
}

/* ------------------------------------------------------------------ */
/* Several processes                                                   */
/* ------------------------------------------------------------------ */

#define SF_PROCESSES 4
#define SF_KEYS 1000

typedef struct sf_args {
  const char *url;
} sf_args;

/* A worker's own state (each worker is a process of its own). */
static atomic_ulong sf_calls;
static uint64_t sf_ended, sf_loaded, sf_wrong;
static bool sf_done[SF_KEYS];

static void sf_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  atomic_fetch_add(&sf_calls, 1);
  char value[64];
  int n = snprintf(value, sizeof value, "value of %.*s", (int)len, (const char *)request);
  lds_job_succeed(rt, job, value, (size_t)n);
}

static void sf_event(const lds_event *e, void *user_data) {
  size_t i = (size_t)(uintptr_t)user_data;
  if (e->type != LDS_EVENT_STATE || (e->status != LDS_LOADED && e->status != LDS_ERROR)) return;
  char want[64];
  int n = snprintf(want, sizeof want, "value of key %zu", i);
  bool right = e->status == LDS_LOADED && e->value_len == (size_t)n && memcmp(e->value, want, (size_t)n) == 0;
  harness_lock();
  if (!sf_done[i]) {
    sf_done[i] = true;
    sf_ended++;
    if (right) sf_loaded++;
    else sf_wrong++;
  } else {
    sf_wrong++;
  }
  harness_notify();
  harness_unlock();
}

static void sf_body(int in, int out, const void *arg) {
  const sf_args *a = arg;
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'R';
  lds_runtime *rt = NULL;
  lds_id cache = 0, loader = 0;
  static lds_id cells[SF_KEYS];
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "sf:";
  /* Under valgrind a worker's loop takes more than the default 2 s to get
   * through the replies of a burst of 1,000 commands (Redis itself is not
   * slowed): the timeout drops the connection, the commands fail and the
   * loads load without a lease. Longer there, like every deadline of a
   * slow host. */
  o.command_timeout_ms = (uint32_t)slow_ms(0, 60000);
  bool ok = worker_open(&r, a->url, &o, &rt, &cache) && lds_loader_new(rt, sf_loader, NULL, NULL, &loader) == LDS_OK;
  for (size_t i = 0; ok && i < SF_KEYS; i++) ok = lds_loadable_new(rt, sf_event, (void *)(uintptr_t)i, &cells[i]) == LDS_OK;
  if (!ok) PROBLEM(&r, "setup failed");
  report_send(out, &r);
  if (!ok || worker_wait_command(in) != 'g') _exit(1);
  lds_load_options lo = cache_first(cache);
  long long t0 = mono_ms();
  char key[32];
  for (size_t i = 0; i < SF_KEYS; i++) {
    int n = snprintf(key, sizeof key, "key %zu", i);
    int rc = lds_loadable_load(rt, cells[i], loader, key, (size_t)n, &lo);
    if (rc != LDS_OK) PROBLEM(&r, "lds_loadable_load: %d", rc);
  }
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += test_slow() ? 300 : 60;
  harness_lock();
  while (sf_ended < SF_KEYS && harness_wait(&deadline)) {
  }
  r.loaded = sf_loaded;
  r.wrong = sf_wrong;
  harness_unlock();
  r.elapsed_ms = (uint64_t)(mono_ms() - t0);
  r.loader_calls = atomic_load(&sf_calls);
  if (r.loaded + r.wrong < SF_KEYS) PROBLEM(&r, "%llu of %d loads ended within the deadline",
                                            (unsigned long long)(r.loaded + r.wrong), SF_KEYS);
  worker_status(&r, rt, cache);
  r.what = 'D';
  report_send(out, &r);
  /* The runtime stays until every process is done: a lease holder's
   * results are for the others. */
  if (worker_wait_command(in) != 'q') _exit(1);
  worker_status(&r, rt, cache);
  r.what = 'F';
  report_send(out, &r);
  lds_runtime_free(rt);
}

TEST(test_redis_processes_share_one_loader_call_per_key) {
  redis_server srv;
  START_SERVER(&srv);
  sf_args a = {.url = srv.url};
  worker w[SF_PROCESSES];
  int started = 0;
  for (; started < SF_PROCESSES; started++)
    if (!worker_start(&w[started], sf_body, &a)) break;
  report r[SF_PROCESSES];
  bool ready = started == SF_PROCESSES;
  for (int i = 0; i < started; i++) ready = worker_read(&w[i], &r[i], 1000L * redis_server_deadline_s(), 'R') && ready;
  if (ready) {
    for (int i = 0; i < started; i++) worker_send(&w[i], 'g');
    uint64_t calls = 0, taken = 0, waited = 0, received = 0, takeovers = 0, published = 0;
    bool all = true;
    for (int i = 0; i < started; i++) all = worker_read(&w[i], &r[i], slow_ms(90000, 400000), 'D') && all;
    for (int i = 0; i < started; i++) worker_send(&w[i], 'q');
    for (int i = 0; i < started && all; i++) {
      uint64_t elapsed = r[i].elapsed_ms;
      if (!worker_read(&w[i], &r[i], 1000L * redis_server_deadline_s(), 'F')) {
        all = false;
        continue;
      }
      r[i].elapsed_ms = elapsed;
      CHECK_EQ(r[i].loaded, SF_KEYS);
      CHECK_EQ(r[i].wrong, 0);
      calls += r[i].loader_calls;
      taken += r[i].status.leases_taken;
      waited += r[i].status.leases_waited;
      received += r[i].status.results_received;
      takeovers += r[i].status.takeovers;
      published += r[i].status.published;
    }
    if (all) {
      printf("  %d processes x %d keys: loader calls %llu; leases taken %llu, waited %llu, results received %llu, "
             "takeovers %llu, published %llu\n", SF_PROCESSES, SF_KEYS, (unsigned long long)calls,
             (unsigned long long)taken, (unsigned long long)waited, (unsigned long long)received,
             (unsigned long long)takeovers, (unsigned long long)published);
      for (int i = 0; i < started; i++)
        printf("    process %d: %llu loader calls, done in %llu ms; leases taken %llu, waited %llu, received %llu, "
               "takeovers %llu, published %llu, fenced %llu, errors %llu\n", i + 1,
               (unsigned long long)r[i].loader_calls, (unsigned long long)r[i].elapsed_ms,
               (unsigned long long)r[i].status.leases_taken, (unsigned long long)r[i].status.leases_waited,
               (unsigned long long)r[i].status.results_received, (unsigned long long)r[i].status.takeovers,
               (unsigned long long)r[i].status.published, (unsigned long long)r[i].status.fenced,
               (unsigned long long)r[i].status.errors);
      CHECK_EQ(calls, SF_KEYS);
      CHECK_EQ(taken, calls);
      CHECK_EQ(published, calls);
    }
  }
  for (int i = 0; i < started; i++) worker_end(&w[i], 1000L * redis_server_deadline_s());
  redis_server_destroy(&srv);
}

/* The lease holder: its loader tells the test it started, and never ends. */
typedef struct holder_args {
  const char *url;
  uint32_t lease_ms;
} holder_args;

static int holder_out = -1;

static void holder_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt;
  (void)job;
  (void)request;
  (void)len;
  (void)data;
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'S';
  report_send(holder_out, &r);
}

static void holder_ignore(const lds_event *e, void *user_data) {
  (void)e;
  (void)user_data;
}

static void holder_body(int in, int out, const void *arg) {
  const holder_args *a = arg;
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'S';
  holder_out = out;
  lds_runtime *rt = NULL;
  lds_id cache = 0, loader = 0, cell = 0;
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "hold:";
  o.lease_ms = a->lease_ms;
  bool ok = worker_open(&r, a->url, &o, &rt, &cache) && lds_loader_new(rt, holder_loader, NULL, NULL, &loader) == LDS_OK &&
            lds_loadable_new(rt, holder_ignore, NULL, &cell) == LDS_OK;
  lds_load_options lo = cache_first(cache);
  if (ok) ok = lds_loadable_load(rt, cell, loader, "held", 4, &lo) == LDS_OK;
  if (!ok) {
    PROBLEM(&r, "setup failed");
    report_send(out, &r);
    _exit(1);
  }
  /* Until the test kills this process. */
  worker_wait_command(in);
  lds_runtime_free(rt);
}

static void succeed_from_b(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(lds_job_succeed(h->rt, job, "from B", 6), LDS_OK);
}

/* Starts the holder worker (`body`), waits until it holds its lease, then
 * makes this process's fixture and Redis cache under `prefix` and starts a
 * shared cache-first load of `key` that waits for the holder's result.
 * False (the server destroyed) when the holder did not get that far. */
static bool wait_behind_holder(redis_server *srv, worker_body body, holder_args *a, const char *prefix,
                               const char *key, worker *holder, report *r, fixture *f, lds_id *c) {
  if (!worker_start(holder, body, a)) return false;
  if (!worker_read(holder, r, 1000L * redis_server_deadline_s(), 'S')) {
    worker_finish(holder, 0);
    redis_server_destroy(srv);
    return false;
  }
  fixture_init(f, LDS_DELIVER_LOOP, succeed_from_b);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = prefix;
  o.lease_ms = a->lease_ms;
  *c = redis_cache(f->rt, srv->url, &o);
  lds_redis_status st;
  STATUS_UNTIL(f->rt, *c, st, st.connected == 1 && st.subscribed == 1);
  lds_load_options lo = cache_first(*c);
  CHECK_RC(fx_load(f, key, &lo), LDS_OK);
  STATUS_UNTIL(f->rt, *c, st, st.leases_waited >= 1);
  return true;
}

TEST(test_redis_processes_take_over_the_lease_of_a_killed_holder) {
  redis_server srv;
  START_SERVER(&srv);
  holder_args a = {.url = srv.url, .lease_ms = (uint32_t)slow_ms(2000, 20000)};
  long margin = slow_ms(1500, 30000);
  worker holder;
  report r;
  fixture f;
  lds_id c;
  if (!wait_behind_holder(&srv, holder_body, &a, "hold:", "held", &holder, &r, &f, &c)) return;
  lds_redis_status st;
  if (REC_WAIT(&f.rec, 1)) CHECK_STATE(rec_at(&f.rec, 0), 1, LDS_LOADING, 0);
  CHECK_EQ(f.h.starts, 0);
  kill(holder.pid, SIGKILL);
  long long killed_at = mono_ms();
  int status = worker_finish(&holder, 1000L * redis_server_deadline_s());
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  if (HOST_WAIT(&f.h, 1)) {
    long long took = mono_ms() - killed_at;
    if (took > (long long)a.lease_ms + margin)
      check_fail(__FILE__, __LINE__, "took the lease over %lld ms after the kill (lease_ms %u + margin %ld)", took,
                 a.lease_ms, margin);
  }
  if (WAIT_FOR(settled(&f.rec) != NULL)) {
    CHECK_EQ(settled(&f.rec)->status, LDS_LOADED);
    CHECK_BYTES(settled(&f.rec)->value, settled(&f.rec)->value_len, "from B");
  }
  CHECK_EQ(f.h.starts, 1);
  /* The result is stored by a command that follows the cell's event; a get
   * on the same connection comes after it. */
  check_get(f.rt, c, "held", "from B");
  st = status_of(f.rt, c);
  CHECK_OP(st.takeovers, >=, 1);
  CHECK_EQ(st.published, 1);
  fixture_finish(&f);
  redis_server_destroy(&srv);
}

/* A holder that frees its runtime as soon as its load ended. */
static lds_id freed_job;

static void freed_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt;
  (void)request;
  (void)len;
  (void)data;
  harness_lock();
  freed_job = job;
  harness_notify();
  harness_unlock();
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'S';
  report_send(holder_out, &r);
}

static void freed_body(int in, int out, const void *arg) {
  const holder_args *a = arg;
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'S';
  holder_out = out;
  lds_runtime *rt = NULL;
  lds_id cache = 0, loader = 0, cell = 0;
  recorder rec;
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "freed:";
  o.lease_ms = a->lease_ms;
  bool ok = worker_open(&r, a->url, &o, &rt, &cache) && lds_loader_new(rt, freed_loader, NULL, NULL, &loader) == LDS_OK;
  rec_init(&rec, rt);
  ok = ok && lds_loadable_new(rt, rec_on_event, &rec, &cell) == LDS_OK;
  lds_load_options lo = cache_first(cache);
  if (ok) ok = lds_loadable_load(rt, cell, loader, "k", 1, &lo) == LDS_OK;
  if (!ok) {
    PROBLEM(&r, "setup failed");
    report_send(out, &r);
    _exit(1);
  }
  if (worker_wait_command(in) != 'g') _exit(1);
  memset(&r, 0, sizeof r);
  r.what = 'D';
  if (lds_job_succeed(rt, freed_job, "from the holder", 15) != LDS_OK) PROBLEM(&r, "lds_job_succeed failed");
  struct timespec deadline = harness_deadline();
  harness_lock();
  while (settled(&rec) == NULL && harness_wait(&deadline)) {
  }
  if (settled(&rec) == NULL || settled(&rec)->status != LDS_LOADED) PROBLEM(&r, "the holder's cell did not load");
  harness_unlock();
  /* At once, as a short-lived process does when its work is done. */
  lds_runtime_free(rt);
  rec_destroy(&rec);
  report_send(out, &r);
}

TEST(test_redis_processes_holder_that_frees_its_runtime_at_once_still_hands_over) {
  redis_server srv;
  START_SERVER(&srv);
  holder_args a = {.url = srv.url, .lease_ms = (uint32_t)slow_ms(5000, 30000)};
  worker holder;
  report r;
  fixture f;
  lds_id c;
  if (!wait_behind_holder(&srv, freed_body, &a, "freed:", "k", &holder, &r, &f, &c)) return;
  lds_redis_status st;
  worker_send(&holder, 'g');
  long long freed_at = 0;
  if (worker_read(&holder, &r, 1000L * redis_server_deadline_s(), 'D')) freed_at = mono_ms();
  worker_end(&holder, 1000L * redis_server_deadline_s());
  /* The holder's result, or at least its lease back: not lease_ms of waiting. */
  if (WAIT_FOR(settled(&f.rec) != NULL)) {
    long long took = mono_ms() - freed_at;
    const lds_event *e = settled(&f.rec);
    CHECK_EQ(e->status, LDS_LOADED);
    if (f.h.starts == 0) CHECK_BYTES(e->value, e->value_len, "from the holder");
    if (freed_at != 0 && took >= (long long)a.lease_ms - 500)
      check_fail(__FILE__, __LINE__, "the waiting load ended %lld ms after the holder's runtime was freed "
                 "(lease_ms %u): its result was neither published nor its lease released", took, a.lease_ms);
  }
  st = status_of(f.rt, c);
  if (f.h.starts != 0)
    fprintf(stderr, "  note: the waiting process called its loader (takeovers %llu, results received %llu)\n",
            (unsigned long long)st.takeovers, (unsigned long long)st.results_received);
  fixture_finish(&f);
  redis_server_destroy(&srv);
}

/* Invalidation: every process shows page:1 (and other:1); one invalidates "page:". */
#define INV_WORKERS 3

typedef struct inv_args {
  const char *url;
  const char *generation;  /* a file: the loaders' values are "gen-" and its contents */
} inv_args;

static const char *inv_generation;
static recorder inv_page, inv_other;
static atomic_ulong inv_calls;

static void inv_loader(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)request;
  (void)len;
  (void)data;
  atomic_fetch_add(&inv_calls, 1);
  char value[64] = "gen-";
  FILE *f = fopen(inv_generation, "re");
  size_t n = f ? fread(value + 4, 1, sizeof value - 5, f) : 0;
  if (f) fclose(f);
  lds_job_succeed(rt, job, value, 4 + n);
}

static void inv_host_start(host *h, lds_id job, const void *request, size_t len) {
  inv_loader(h->rt, job, request, len, NULL);
}

static bool inv_saw_refresh(recorder *rec, size_t from) {
  for (size_t i = from; i < rec->count; i++)
    if ((rec->events[i]->ev.flags & (LDS_FLAG_STALE | LDS_FLAG_REFRESHING)) == (LDS_FLAG_STALE | LDS_FLAG_REFRESHING))
      return true;
  return false;
}

static void inv_body(int in, int out, const void *arg) {
  const inv_args *a = arg;
  inv_generation = a->generation;
  report r;
  memset(&r, 0, sizeof r);
  r.what = 'L';
  lds_runtime *rt = NULL;
  lds_id cache = 0, loader = 0, page = 0, other = 0;
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "inv:";
  o.lease_ms = 30000; /* longer than the waits: a lease left behind shows in Redis */
  bool ok = worker_open(&r, a->url, &o, &rt, &cache) && lds_loader_new(rt, inv_loader, NULL, NULL, &loader) == LDS_OK;
  rec_init(&inv_page, rt);
  rec_init(&inv_other, rt);
  ok = ok && lds_loadable_new(rt, rec_on_event, &inv_page, &page) == LDS_OK &&
       lds_loadable_new(rt, rec_on_event, &inv_other, &other) == LDS_OK;
  lds_load_options lo = cache_first(cache);
  ok = ok && lds_loadable_load(rt, page, loader, "page:1", 6, &lo) == LDS_OK &&
       lds_loadable_load(rt, other, loader, "other:1", 7, &lo) == LDS_OK;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += redis_server_deadline_s();
  harness_lock();
  while (ok && (settled(&inv_page) == NULL || settled(&inv_other) == NULL) && harness_wait(&deadline)) {
  }
  const lds_event *e = settled(&inv_page);
  if (e != NULL && e->status == LDS_LOADED) snprintf(r.value, sizeof r.value, "%.*s", (int)e->value_len, (const char *)e->value);
  else PROBLEM(&r, "page:1 did not load");
  size_t page_events = inv_page.count, other_events = inv_other.count;
  harness_unlock();
  report_send(out, &r);
  if (!ok || worker_wait_command(in) != 'w') _exit(1);
  /* The test invalidates now: a refresh flagged STALE | REFRESHING, then a new value. */
  memset(&r, 0, sizeof r);
  r.what = 'D';
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += redis_server_deadline_s();
  harness_lock();
  while (!(inv_saw_refresh(&inv_page, page_events) && settled(&inv_page) != NULL &&
           inv_page.count > page_events + 1) && harness_wait(&deadline)) {
  }
  r.saw_refresh = inv_saw_refresh(&inv_page, page_events);
  e = settled(&inv_page);
  if (e != NULL && e->status == LDS_LOADED) snprintf(r.value, sizeof r.value, "%.*s", (int)e->value_len, (const char *)e->value);
  r.other_events = (uint32_t)(inv_other.count - other_events);
  harness_unlock();
  r.loader_calls = atomic_load(&inv_calls);
  worker_status(&r, rt, cache);
  report_send(out, &r);
  lds_runtime_free(rt);
  rec_destroy(&inv_page);
  rec_destroy(&inv_other);
}

TEST(test_redis_processes_all_refresh_after_an_invalidation_in_one) {
  redis_server srv;
  START_SERVER(&srv);
  char generation[128];
  snprintf(generation, sizeof generation, "%s/generation", srv.dir);
  FILE *g = fopen(generation, "we");
  REQUIRE(g != NULL);
  fputs("1", g);
  fclose(g);
  inv_args a = {.url = srv.url, .generation = generation};
  worker w[INV_WORKERS];
  int started = 0;
  for (; started < INV_WORKERS; started++)
    if (!worker_start(&w[started], inv_body, &a)) break;
  report r[INV_WORKERS];
  bool ready = started == INV_WORKERS;
  for (int i = 0; i < started; i++) {
    if (worker_read(&w[i], &r[i], 1000L * redis_server_deadline_s(), 'L')) CHECK_STR(r[i].value, "gen-1");
    else ready = false;
  }
  fixture f;
  fixture_init(&f, LDS_DELIVER_LOOP, inv_host_start);
  inv_generation = generation;
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.key_prefix = "inv:";
  o.lease_ms = 30000; /* longer than the waits: a lease left behind shows in Redis */
  lds_id c = redis_cache(f.rt, srv.url, &o);
  lds_redis_status st;
  lds_load_options lo = cache_first(c);
  if (ready && STATUS_UNTIL(f.rt, c, st, st.connected == 1 && st.subscribed == 1)) {
    REQUIRE_RC(fx_load(&f, "page:1", &lo), LDS_OK);
    if (WAIT_FOR(settled(&f.rec) != NULL)) {
      const lds_event *e = settled(&f.rec);
      CHECK_EQ(e->status, LDS_LOADED);
      CHECK(e->flags & LDS_FLAG_FROM_CACHE);
      CHECK_BYTES(e->value, e->value_len, "gen-1");
    }
    CHECK_EQ(f.h.starts, 0);
    g = fopen(generation, "we");
    REQUIRE(g != NULL);
    fputs("2", g);
    fclose(g);
    for (int i = 0; i < started; i++) worker_send(&w[i], 'w');
    size_t before = rec_count(&f.rec);
    CHECK_RC(lds_cache_invalidate(f.rt, c, "page:", 5), LDS_OK);
    /* This process's cell refreshes too. */
    bool bad = true;
    if (WAIT_FOR(inv_saw_refresh(&f.rec, before) && settled(&f.rec) != NULL && f.rec.count > before + 1)) {
      CHECK_BYTES(settled(&f.rec)->value, settled(&f.rec)->value_len, "gen-2");
      bad = false;
    }
    for (int i = 0; i < started; i++) {
      if (!worker_read(&w[i], &r[i], slow_ms(30000, 300000), 'D')) continue;
      if (!r[i].saw_refresh) check_fail(__FILE__, __LINE__, "worker %d: no event flagged STALE | REFRESHING", i);
      CHECK_STR(r[i].value, "gen-2");
      bad = bad || strcmp(r[i].value, "gen-2") != 0;
      CHECK_EQ(r[i].other_events, 0);
      CHECK_OP(r[i].status.invalidations, >=, 1);
    }
    check_get(f.rt, c, "page:1", "gen-2");
    st = status_of(f.rt, c);
    for (int i = 0; bad && i < started; i++)
      fprintf(stderr, "  worker %d after %ld ms: \"%s\", loader calls %llu; leases taken %llu, waited %llu, received %llu, "
              "takeovers %llu, published %llu, fenced %llu, invalidations %llu, errors %llu\n", i,
              redis_server_deadline_s() * 1000L, r[i].value, (unsigned long long)r[i].loader_calls,
              (unsigned long long)r[i].status.leases_taken, (unsigned long long)r[i].status.leases_waited,
              (unsigned long long)r[i].status.results_received, (unsigned long long)r[i].status.takeovers,
              (unsigned long long)r[i].status.published, (unsigned long long)r[i].status.fenced,
              (unsigned long long)r[i].status.invalidations, (unsigned long long)r[i].status.errors);
    if (bad) {
      redisReply *lease = redis_server_command(&srv, "GET %s", redis_name("inv:", "l:", "page:1"));
      fprintf(stderr, "  in Redis: lease of page:1 %s, its PTTL %lld ms, fence counter %lld\n",
              lease && lease->type == REDIS_REPLY_STRING ? lease->str : "(none)",
              redis_server_integer(&srv, -3, "PTTL %s", redis_name("inv:", "l:", "page:1")),
              redis_server_integer(&srv, -3, "INCRBY %s 0", redis_name("inv:", "f", "page:1")));
      if (lease) freeReplyObject(lease);
    }
    if (bad)
      fprintf(stderr, "  this process: loader calls %zu; leases taken %llu, waited %llu, received %llu, takeovers %llu, "
              "published %llu, fenced %llu, errors %llu\n", f.h.starts, (unsigned long long)st.leases_taken,
              (unsigned long long)st.leases_waited, (unsigned long long)st.results_received,
              (unsigned long long)st.takeovers, (unsigned long long)st.published, (unsigned long long)st.fenced,
              (unsigned long long)st.errors);
  }
  fixture_finish(&f);
  for (int i = 0; i < started; i++) worker_end(&w[i], 1000L * redis_server_deadline_s());
  unlink(generation);
  redis_server_destroy(&srv);
}
