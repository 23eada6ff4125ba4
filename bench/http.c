/* http.c — 1,000 concurrent GETs to a local server through loadstate's
 * http loader, and in the same run through a plain program that drives
 * libcurl's multi interface directly (curl_multi_perform + curl_multi_poll),
 * over the same number of rounds; prints both rates and the ratio.
 * The two alternate, pair after pair; the summary gives medians, and the
 * median of the pairs' ratios (this machine's speed drifts between runs
 * a few seconds apart, so a single pair can mislead), and the client's
 * CPU time per request (every thread of this process; the server is
 * another process).
 *
 *   make bench-http          (BENCH_HTTP_ARGS="concurrent rounds pairs")
 */
#include <curl/curl.h>
#include <loadstate.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int start_server(const char *path, pid_t *pid, int *stdin_fd) {
  int to[2], from[2];
  if (pipe(to) || pipe(from)) return -1;
  *pid = fork();
  if (*pid == 0) {
    dup2(to[0], 0);
    dup2(from[1], 1);
    close(to[1]);
    close(from[0]);
    execl(path, path, "1024", (char *)NULL);
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  char line[32] = {0};
  ssize_t n = read(from[0], line, sizeof line - 1);
  close(from[0]);
  *stdin_fd = to[1];
  return n > 0 ? atoi(line) : -1;
}

/* ---- loadstate ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int finished, failed, awaited;

/* Counts finished requests; wakes the main thread only when a round is
 * complete (a host need not wake a thread per event). */
static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE || e->status == LDS_LOADING) return;
  pthread_mutex_lock(&lock);
  finished++;
  if (e->status != LDS_LOADED) failed++;
  if (finished >= awaited) pthread_cond_signal(&changed);
  pthread_mutex_unlock(&lock);
}

static double run_loadstate(const char *url, int concurrent, int rounds, int *errors) {
  lds_runtime *rt;
  lds_runtime_new(NULL, &rt);
  lds_id loader;
  lds_http_options options = LDS_HTTP_OPTIONS_INIT;
  options.proxy = ""; /* the server is local: never through a proxy */
  lds_http_loader_new(rt, &options, &loader);
  lds_id *cells = calloc((size_t)concurrent, sizeof *cells);
  for (int i = 0; i < concurrent; i++) lds_loadable_new(rt, on_event, NULL, &cells[i]);
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  void *encoded;
  size_t encoded_len;
  lds_http_request_encode(&req, &encoded, &encoded_len);
  finished = failed = 0;
  double t0 = now_s();
  for (int r = 0; r < rounds; r++) {
    pthread_mutex_lock(&lock);
    awaited = (r + 1) * concurrent;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < concurrent; i++) lds_loadable_load(rt, cells[i], loader, encoded, encoded_len, NULL);
    pthread_mutex_lock(&lock);
    while (finished < awaited) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
  }
  double elapsed = now_s() - t0;
  *errors = failed;
  lds_free(encoded);
  lds_runtime_free(rt);
  free(cells);
  return elapsed;
}

/* ---- plain libcurl multi ---- */

static size_t sink(char *data, size_t size, size_t count, void *user) {
  (void)data;
  *(size_t *)user += size * count;
  return size * count;
}

static double run_plain(const char *url, int concurrent, int rounds, int *errors) {
  CURLM *multi = curl_multi_init();
  CURL **easy = calloc((size_t)concurrent, sizeof *easy);
  size_t *received = calloc((size_t)concurrent, sizeof *received);
  for (int i = 0; i < concurrent; i++) {
    easy[i] = curl_easy_init();
    curl_easy_setopt(easy[i], CURLOPT_URL, url);
    curl_easy_setopt(easy[i], CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy[i], CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy[i], CURLOPT_PROXY, "");
    curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(easy[i], CURLOPT_WRITEDATA, &received[i]);
  }
  int bad = 0;
  double t0 = now_s();
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < concurrent; i++) curl_multi_add_handle(multi, easy[i]);
    int running = 1;
    while (running) {
      curl_multi_perform(multi, &running);
      CURLMsg *m;
      int left;
      while ((m = curl_multi_info_read(multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE) continue;
        long status = 0;
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        if (m->data.result != CURLE_OK || status != 200) bad++;
        curl_multi_remove_handle(multi, m->easy_handle);
      }
      if (running) curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
  }
  double elapsed = now_s() - t0;
  for (int i = 0; i < concurrent; i++) curl_easy_cleanup(easy[i]);
  curl_multi_cleanup(multi);
  free(easy);
  free(received);
  *errors = bad;
  return elapsed;
}

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
         ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) / 1e6;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_PAIRS 99

int main(int argc, char **argv) {
  int concurrent = argc > 1 ? atoi(argv[1]) : 1000;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  int pairs = argc > 3 ? atoi(argv[3]) : 9;
  const char *server = argc > 4 ? argv[4] : "build/bench-http-server";
  if (concurrent < 1 || rounds < 1 || pairs < 1 || pairs > MAX_PAIRS) {
    fprintf(stderr, "usage: %s [concurrent] [rounds] [pairs] [server]\n", argv[0]);
    return 2;
  }
  printf("command: make bench-http BENCH_HTTP_ARGS=\"%d %d %d\"\n", concurrent, rounds, pairs);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  pid_t pid;
  int server_stdin;
  int port = start_server(server, &pid, &server_stdin);
  if (port <= 0) { fprintf(stderr, "cannot start %s\n", server); return 1; }
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
  int total = concurrent * rounds;
  int e1 = 0, e2 = 0;
  /* BENCH_HTTP_ONLY=plain|loadstate runs one side alone, for profiling. */
  const char *only = getenv("BENCH_HTTP_ONLY");
  if (only) {
    double t = strcmp(only, "plain") == 0 ? run_plain(url, concurrent, rounds, &e2)
                                          : run_loadstate(url, concurrent, rounds, &e1);
    printf("%s: %.0f requests/s (%d errors)\n", only, total / t, e1 + e2);
    close(server_stdin);
    kill(pid, SIGTERM);
    return e1 || e2;
  }
  /* Warm up both (connections, page cache), then measure in pairs, interleaved. */
  run_plain(url, concurrent, 1, &e2);
  run_loadstate(url, concurrent, 1, &e1);
  double plain[MAX_PAIRS], lds[MAX_PAIRS], ratio[MAX_PAIRS], plain_cpu[MAX_PAIRS], lds_cpu[MAX_PAIRS];
  printf("%d concurrent GETs x %d rounds (%d requests) per run, 1 KiB bodies, %d pairs\n", concurrent, rounds,
         total, pairs);
  printf("%4s %14s %14s %7s %16s %16s\n", "pair", "plain req/s", "loadstate req/s", "ratio", "plain cpu us/req",
         "lds cpu us/req");
  for (int k = 0; k < pairs; k++) {
    double c0 = cpu_s();
    double p = run_plain(url, concurrent, rounds, &e2);
    double c1 = cpu_s();
    double l = run_loadstate(url, concurrent, rounds, &e1);
    double c2 = cpu_s();
    plain[k] = total / p;
    lds[k] = total / l;
    ratio[k] = p / l;
    plain_cpu[k] = (c1 - c0) / total * 1e6;
    lds_cpu[k] = (c2 - c1) / total * 1e6;
    printf("%4d %14.0f %14.0f %7.2f %16.1f %16.1f\n", k + 1, plain[k], lds[k], ratio[k], plain_cpu[k], lds_cpu[k]);
  }
  double r_min = ratio[0], r_max = ratio[0];
  for (int k = 1; k < pairs; k++) {
    if (ratio[k] < r_min) r_min = ratio[k];
    if (ratio[k] > r_max) r_max = ratio[k];
  }
  double pc = median(plain_cpu, pairs), lc = median(lds_cpu, pairs);
  printf("medians: plain libcurl multi %.0f requests/s (%d errors), loadstate http %.0f requests/s (%d errors)\n",
         median(plain, pairs), e2, median(lds, pairs), e1);
  printf("client CPU per request: plain %.1f us, loadstate %.1f us (%.2fx)\n", pc, lc, lc / pc);
  printf("ratio loadstate/plain: median %.2f of %d pairs (%.2f to %.2f) (target >= 0.80: %s)\n",
         median(ratio, pairs), pairs, r_min, r_max, median(ratio, pairs) >= 0.8 ? "met" : "MISSED");
  close(server_stdin);
  kill(pid, SIGTERM);
  curl_global_cleanup();
  return e1 || e2;
}
