/* http_cache.c — what HTTP caching and HTTP/2 buy, measured against
 * Debian's nginx on 127.0.0.1 (Tests/support/nginx_server.py, started
 * here with its access log of bytes sent):
 *
 *  1. revalidation: ROUNDS rounds of RESOURCES concurrent GETs of
 *     unchanged 100 KiB resources (ROUNDS x RESOURCES requests), first as
 *     full reloads (no cache), then through a memory cache that holds
 *     them: each request carries If-None-Match and nginx answers 304.
 *     Prints the time and the bytes nginx sent for each, and the ratios;
 *     over loopback as it is, then from nginx's "slow" and "slower"
 *     servers, which send bodies at 10 MB/s and 1 MB/s a connection (links
 *     of 80 and 8 Mbit/s).
 *  2. HTTP/2 against HTTP/1.1: CONCURRENT GETs at once over TLS, through
 *     a new loader each round (so each round opens its connections),
 *     with LDS_HTTP_HTTP2 and with LDS_HTTP_HTTP1, alternating; prints
 *     the median time and the connections used (nginx's X-Connection).
 *
 *   make bench-http-cache   (BENCH_HTTP_CACHE_ARGS="rounds resources concurrent h2rounds")
 */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- nginx ---- */

typedef struct server {
  pid_t pid;
  int stdin_fd;
  int tls, plain, slow, slower;
  char ca[512], log[512];
} server;

/* The value of "name": in a one-line JSON object, copied into out. */
static void json_field(const char *json, const char *name, char *out, size_t cap) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\": ", name);
  const char *at = strstr(json, key);
  out[0] = 0;
  if (!at) return;
  at += strlen(key);
  if (*at == '"') at++;
  size_t n = strcspn(at, "\",}");
  if (n >= cap) n = cap - 1;
  memcpy(out, at, n);
  out[n] = 0;
}

static int start_nginx(const char *script, server *s) {
  int to[2], from[2];
  if (pipe(to) || pipe(from)) return -1;
  s->pid = fork();
  if (s->pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execlp("python3", "python3", script, "--access-log", (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  char line[2048];
  size_t got = 0;
  while (got < sizeof line - 1) {
    ssize_t n = read(from[0], line + got, 1);
    if (n <= 0 || line[got] == '\n') break;
    got++;
  }
  line[got] = 0;
  close(from[0]);
  s->stdin_fd = to[1];
  char number[32];
  json_field(line, "tls", number, sizeof number);
  s->tls = atoi(number);
  json_field(line, "plain", number, sizeof number);
  s->plain = atoi(number);
  json_field(line, "slow", number, sizeof number);
  s->slow = atoi(number);
  json_field(line, "slower", number, sizeof number);
  s->slower = atoi(number);
  json_field(line, "ca", s->ca, sizeof s->ca);
  json_field(line, "log", s->log, sizeof s->log);
  return s->tls > 0 && s->plain > 0 ? 0 : -1;
}

static void stop_nginx(server *s) {
  close(s->stdin_fd);
  waitpid(s->pid, NULL, 0);
}

/* The lines and bytes of the access log from byte `from` on; waits (up
 * to 5 s) for `lines` lines, as nginx writes a line once an answer is out. */
static long long log_bytes(const char *path, long from, long lines, long *end) {
  long long bytes = 0;
  for (int tries = 0; tries < 500; tries++) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    fseek(f, from, SEEK_SET);
    long seen = 0;
    long long sum = 0, n;
    while (fscanf(f, "%lld", &n) == 1) {
      seen++;
      sum += n;
    }
    *end = ftell(f);
    fclose(f);
    bytes = sum;
    if (seen >= lines) break;
    usleep(10000);
  }
  return bytes;
}

/* ---- loads ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int settled, failed, revalidated;
/* Connection serial numbers seen (X-Connection), for part 2. */
static char seen_connection[1 << 16];
static int connections;

static void count_connection(const lds_event *e) {
  lds_http_response r;
  if (lds_http_response_decode(e->value, e->value_len, &r) != LDS_OK) return;
  const char *at = memmem(r.headers, r.headers_len, "x-connection: ", 14);
  if (!at) at = memmem(r.headers, r.headers_len, "X-Connection: ", 14);
  if (!at) return;
  unsigned serial = (unsigned)atoi(at + 14) % sizeof seen_connection;
  if (!seen_connection[serial]) {
    seen_connection[serial] = 1;
    connections++;
  }
}

static void on_event(const lds_event *e, void *user_data) {
  int track_connections = user_data != NULL;
  if (e->type != LDS_EVENT_STATE || (e->flags & LDS_FLAG_REFRESHING)) return;
  if (e->status != LDS_LOADED && e->status != LDS_ERROR) return;
  pthread_mutex_lock(&lock);
  settled++;
  if (e->status == LDS_ERROR) failed++;
  if (e->flags & LDS_FLAG_REVALIDATED) revalidated++;
  if (track_connections && e->status == LDS_LOADED) count_connection(e);
  pthread_cond_signal(&changed);
  pthread_mutex_unlock(&lock);
}

static void wait_settled(int n) {
  pthread_mutex_lock(&lock);
  while (settled < n) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

static void reset_counts(void) {
  pthread_mutex_lock(&lock);
  settled = failed = revalidated = 0;
  memset(seen_connection, 0, sizeof seen_connection);
  connections = 0;
  pthread_mutex_unlock(&lock);
}

static void *encode_get(const char *url, uint32_t flags, const char *ca, size_t *len) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  req.flags = flags;
  req.ca_file = ca;
  void *buf = NULL;
  if (lds_http_request_encode(&req, &buf, len) != LDS_OK) {
    fprintf(stderr, "encode failed\n");
    exit(1);
  }
  return buf;
}

/* Part 1: ROUNDS rounds of RESOURCES loads at once; through `cache` when
 * it is not 0. Returns the seconds taken. */
static double revalidation_rounds(lds_runtime *rt, lds_id loader, lds_id cache, lds_id *cells, void **requests,
                                  size_t *lengths, int resources, int rounds) {
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  double start = now_s();
  for (int round = 0; round < rounds; round++) {
    reset_counts();
    for (int i = 0; i < resources; i++) {
      if (lds_loadable_load(rt, cells[i], loader, requests[i], lengths[i], cache ? &o : NULL) != LDS_OK) exit(1);
    }
    wait_settled(resources);
    if (failed) {
      fprintf(stderr, "%d loads failed\n", failed);
      exit(1);
    }
    if (cache && revalidated != resources) {
      fprintf(stderr, "only %d of %d loads were revalidated\n", revalidated, resources);
      exit(1);
    }
  }
  return now_s() - start;
}

/* Part 1 against the server on `port`: full reloads, then revalidations
 * of what a memory cache holds. `offset`: where the access log's lines of
 * this part begin (moved past them). */
static void revalidation(lds_runtime *rt, const server *s, int port, const char *how, lds_id *cells, int resources,
                         int rounds, long *offset) {
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = "";
  lds_id loader;
  lds_http_loader_new(rt, &ho, &loader);
  void **requests = calloc((size_t)resources, sizeof *requests);
  size_t *lengths = calloc((size_t)resources, sizeof *lengths);
  for (int i = 0; i < resources; i++) {
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/100k?r=%d", port, i);
    requests[i] = encode_get(url, LDS_HTTP_HTTP1, NULL, &lengths[i]);
  }
  lds_memory_cache_options mo = LDS_MEMORY_CACHE_OPTIONS_INIT;
  mo.max_bytes = 256u << 20;
  lds_id cache;
  lds_memory_cache_new(rt, &mo, &cache);
  long end = 0;
  int total = rounds * resources;
  /* Warm up the connections, and fill the cache (not measured). */
  revalidation_rounds(rt, loader, 0, cells, requests, lengths, resources, 1);
  lds_load_options fill = LDS_LOAD_OPTIONS_INIT;
  fill.cache = cache;
  reset_counts();
  for (int i = 0; i < resources; i++) lds_loadable_load(rt, cells[i], loader, requests[i], lengths[i], &fill);
  wait_settled(resources);
  log_bytes(s->log, *offset, 2L * resources, offset);

  double full_s = revalidation_rounds(rt, loader, 0, cells, requests, lengths, resources, rounds);
  long long full_bytes = log_bytes(s->log, *offset, total, &end);
  *offset = end;
  double reval_s = revalidation_rounds(rt, loader, cache, cells, requests, lengths, resources, rounds);
  long long reval_bytes = log_bytes(s->log, *offset, total, &end);
  *offset = end;
  printf("revalidation %s: %d GETs of unchanged 100 KiB resources (%d at once, %d rounds)\n", how, total,
         resources, rounds);
  printf("  full reloads   %8.3f s  %10.1f req/s  %12lld bytes sent\n", full_s, total / full_s, full_bytes);
  printf("  revalidations  %8.3f s  %10.1f req/s  %12lld bytes sent (all %d answered 304)\n", reval_s,
         total / reval_s, reval_bytes, total);
  printf("  revalidation is %.1fx faster and transfers %.2f%% of the bytes\n", full_s / reval_s,
         100.0 * (double)reval_bytes / (double)full_bytes);
  for (int i = 0; i < resources; i++) lds_free(requests[i]);
  free(requests);
  free(lengths);
  lds_cache_free(rt, cache);
  lds_loader_free(rt, loader);
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s NGINX_SCRIPT [rounds resources concurrent h2rounds]\n", argv[0]);
    return 2;
  }
  const char *script = argv[1];
  int rounds = argc > 2 ? atoi(argv[2]) : 100;
  int resources = argc > 3 ? atoi(argv[3]) : 100;
  int concurrent = argc > 4 ? atoi(argv[4]) : 1000;
  int h2rounds = argc > 5 ? atoi(argv[5]) : 5;
  server s;
  if (start_nginx(script, &s) != 0) {
    fprintf(stderr, "cannot start nginx\n");
    return 1;
  }
  lds_runtime *rt;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  int cell_count = resources > concurrent ? resources : concurrent;
  lds_id *cells = calloc((size_t)cell_count, sizeof *cells);
  for (int i = 0; i < cell_count; i++) lds_loadable_new(rt, on_event, NULL, &cells[i]);

  /* ---- 1. revalidation against full reloads ---- */
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = "";
  long offset = 0;
  revalidation(rt, &s, s.plain, "over loopback", cells, resources, rounds, &offset);
  revalidation(rt, &s, s.slow, "at 10 MB/s a connection", cells, resources, rounds, &offset);
  revalidation(rt, &s, s.slower, "at 1 MB/s a connection", cells, resources, rounds, &offset);

  /* ---- 2. HTTP/2 against HTTP/1.1 ---- */
  char url[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/ok", s.tls);
  size_t h2_len, h1_len;
  void *h2 = encode_get(url, LDS_HTTP_HTTP2, s.ca, &h2_len);
  void *h1 = encode_get(url, LDS_HTTP_HTTP1, s.ca, &h1_len);
  lds_id *tracked = calloc((size_t)concurrent, sizeof *tracked);
  for (int i = 0; i < concurrent; i++) lds_loadable_new(rt, on_event, (void *)1, &tracked[i]);
  double *t2 = calloc((size_t)h2rounds, sizeof *t2), *t1 = calloc((size_t)h2rounds, sizeof *t1);
  int c2 = 0, c1 = 0;
  for (int round = 0; round < 2 * h2rounds; round++) {
    int use_h2 = round % 2 == 0;
    lds_id fresh;
    lds_http_loader_new(rt, &ho, &fresh);
    reset_counts();
    double start = now_s();
    for (int i = 0; i < concurrent; i++) {
      lds_loadable_load(rt, tracked[i], fresh, use_h2 ? h2 : h1, use_h2 ? h2_len : h1_len, NULL);
    }
    wait_settled(concurrent);
    double took = now_s() - start;
    if (failed) {
      fprintf(stderr, "%d loads failed\n", failed);
      return 1;
    }
    if (use_h2) {
      t2[round / 2] = took;
      c2 = connections;
    } else {
      t1[round / 2] = took;
      c1 = connections;
    }
    lds_loader_free(rt, fresh);
  }
  qsort(t2, (size_t)h2rounds, sizeof *t2, compare);
  qsort(t1, (size_t)h2rounds, sizeof *t1, compare);
  double m2 = t2[h2rounds / 2], m1 = t1[h2rounds / 2];
  printf("HTTP/2 against HTTP/1.1: %d concurrent GETs over TLS, new connections each round (median of %d)\n",
         concurrent, h2rounds);
  printf("  HTTP/2    %8.1f ms  %4d connection(s)\n", m2 * 1000, c2);
  printf("  HTTP/1.1  %8.1f ms  %4d connection(s)\n", m1 * 1000, c1);
  printf("  HTTP/2 takes %.2fx the time of HTTP/1.1\n", m2 / m1);

  lds_runtime_free(rt);
  lds_free(h2);
  lds_free(h1);
  stop_nginx(&s);
  return 0;
}
