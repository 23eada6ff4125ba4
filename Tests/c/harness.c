/* harness.c — the runner and the fixtures declared in harness.h. */
#include "harness.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Registration and the runner                                         */
/* ------------------------------------------------------------------ */

#define MAX_TESTS 512

static struct {
  const char *name;
  test_fn fn;
} tests[MAX_TESTS];
static size_t test_total;

static const char *current_test = "(none)";
static atomic_int failures;
static atomic_int reported;

void test_register(const char *name, test_fn fn) {
  if (test_total == MAX_TESTS) {
    fprintf(stderr, "harness: too many tests\n");
    abort();
  }
  tests[test_total].name = name;
  tests[test_total].fn = fn;
  test_total++;
}

bool test_slow(void) {
  const char *v = getenv("LDS_TEST_SLOW");
  return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' && strcmp(v, "0") != 0;
}

static unsigned test_timeout_s(void) { return test_slow() ? 600 : 60; }

static bool selected(const char *name, int argc, char **argv) {
  if (argc <= 1) return true;
  for (int i = 1; i < argc; i++)
    if (strstr(name, argv[i]) != NULL) return true;
  return false;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char prefix[] = "FAIL: timed out in ";
  if (write(2, prefix, sizeof prefix - 1) < 0 ||
      write(2, current_test, strlen(current_test)) < 0 || write(2, "\n", 1) < 0) {
    _exit(3);
  }
  _exit(3);
}

/* Runs one test in this process; true when it passed. */
static bool run_here(size_t i) {
  current_test = tests[i].name;
  atomic_store(&failures, 0);
  atomic_store(&reported, 0);
  signal(SIGALRM, on_alarm);
  alarm(test_timeout_s());
  tests[i].fn();
  alarm(0);
  return atomic_load(&failures) == 0;
}

/* How tests are isolated from each other. */
enum isolation {
  IN_PROCESS, /* LDS_TEST_NOFORK: all in this process */
  FORK,       /* default: a forked child per test */
  EXEC,       /* LDS_TEST_EXEC: a fresh process per test (fork, then exec) */
};

static const char *self_path;

/* Starts one test in a child process; its pid, or -1 with why set. */
static pid_t start_child(size_t i, enum isolation how, char *why, size_t why_len) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, why_len, "fork: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    if (how == EXEC) {
      char *args[] = {(char *)self_path, "--exact", (char *)tests[i].name, NULL};
      execv("/proc/self/exe", args);
      fprintf(stderr, "exec: %s\n", strerror(errno));
      _exit(4);
    }
    bool ok = run_here(i);
    fflush(stdout);
    fflush(stderr);
    exit(ok ? 0 : 1);
  }
  return pid;
}

/* Whether a test child's wait status is a pass; why says otherwise. */
static bool child_passed(int status, char *why, size_t why_len) {
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    if (code == 0) return true;
    if (code == 1) snprintf(why, why_len, "checks failed");
    else if (code == 3) snprintf(why, why_len, "timed out");
    else if (code == 4) snprintf(why, why_len, "cannot exec the test binary");
    else snprintf(why, why_len, "exit status %d", code);
    return false;
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, why_len, "killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
    return false;
  }
  snprintf(why, why_len, "unexpected wait status %d", status);
  return false;
}

/* Runs one test in a child process; true when it passed. */
static bool run_child(size_t i, enum isolation how, char *why, size_t why_len) {
  pid_t pid = start_child(i, how, why, why_len);
  if (pid < 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      snprintf(why, why_len, "waitpid: %s", strerror(errno));
      return false;
    }
  }
  return child_passed(status, why, why_len);
}

/* Which tests reported a result, so that main can tell a selected test
 * that never ran (a runner that lost a child) from one that passed. */
static bool *reported_tests;

static void report(size_t i, bool ok, double took, const char *why, int *passed, int *failed) {
  if (reported_tests != NULL) {
    if (reported_tests[i]) {
      (*failed)++;
      printf("FAIL %-64s reported twice\n", tests[i].name);
      return;
    }
    reported_tests[i] = true;
  }
  if (ok) {
    (*passed)++;
    printf("ok   %-64s %8.1f ms\n", tests[i].name, took);
  } else {
    (*failed)++;
    printf("FAIL %-64s %8.1f ms  %s\n", tests[i].name, took, why);
  }
}

/* LDS_TEST_JOBS=N: how many test children run at once (1 to 16; 1 when
 * unset). Each test still has a process of its own; results print as
 * tests end. */
static unsigned test_jobs(void) {
  const char *v = getenv("LDS_TEST_JOBS");
  if (v == NULL || *v == '\0') return 1;
  char *end = NULL;
  unsigned long n = strtoul(v, &end, 10);
  if (*end != '\0' || n < 1) return 1;
  return n > 16 ? 16 : (unsigned)n;
}

/* Runs the selected tests in up to jobs children at once. */
static void run_parallel(enum isolation how, unsigned jobs, int argc, char **argv, int *passed,
                         int *failed) {
  struct running {
    pid_t pid;
    size_t test;
    double start;
  } running[16];
  unsigned count = 0;
  size_t next = 0;
  for (;;) {
    while (count < jobs && next < test_total) {
      size_t i = next++;
      if (!selected(tests[i].name, argc, argv)) continue;
      char why[160] = "checks failed";
      double start = now_ms();
      pid_t pid = start_child(i, how, why, sizeof why);
      if (pid < 0) {
        report(i, false, now_ms() - start, why, passed, failed);
        continue;
      }
      running[count++] = (struct running){pid, i, start};
    }
    if (count == 0) return;
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      for (unsigned k = 0; k < count; k++) {
        char why[160];
        snprintf(why, sizeof why, "waitpid: %s", strerror(errno));
        report(running[k].test, false, now_ms() - running[k].start, why, passed, failed);
      }
      return;
    }
    for (unsigned k = 0; k < count; k++) {
      if (running[k].pid != pid) continue;
      char why[160] = "checks failed";
      bool ok = child_passed(status, why, sizeof why);
      report(running[k].test, ok, now_ms() - running[k].start, why, passed, failed);
      running[k] = running[--count];
      break;
    }
  }
}

static void warm_up_event(const lds_event *event, void *user_data) {
  (void)event;
  harness_lock();
  *(bool *)user_data = true;
  harness_notify();
  harness_unlock();
}

/* Runs the library once in this process before tests are forked, so that
 * each child inherits a warmed-up runtime (type metadata, lazily bound
 * symbols) instead of paying for it again; under valgrind that is most of
 * a test's time. Leaves no thread behind. */
static void warm_up(void) {
  lds_runtime *rt = NULL;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return;
  bool seen = false;
  lds_id cell = 0;
  if (lds_loadable_new(rt, warm_up_event, &seen, &cell) == LDS_OK &&
      lds_loadable_set_loaded(rt, cell, "w", 1) == LDS_OK) {
    struct timespec deadline = harness_deadline();
    harness_lock();
    while (!seen && harness_wait(&deadline)) {
    }
    harness_unlock();
  }
  lds_runtime_free(rt);
}

int main(int argc, char **argv) {
  self_path = argv[0];
  if (argc > 1 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < test_total; i++) printf("%s\n", tests[i].name);
    return 0;
  }
  /* A child of LDS_TEST_EXEC: one test, in this process. */
  if (argc == 3 && strcmp(argv[1], "--exact") == 0) {
    for (size_t i = 0; i < test_total; i++)
      if (strcmp(tests[i].name, argv[2]) == 0) return run_here(i) ? 0 : 1;
    fprintf(stderr, "no test named %s\n", argv[2]);
    return 4;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  enum isolation how = env_flag("LDS_TEST_NOFORK") ? IN_PROCESS : env_flag("LDS_TEST_EXEC") ? EXEC : FORK;
  if (how == FORK) warm_up();
  int passed = 0, failed = 0;
  reported_tests = calloc(test_total > 0 ? test_total : 1, sizeof *reported_tests);
  unsigned jobs = how == IN_PROCESS ? 1 : test_jobs();
  if (jobs > 1) {
    run_parallel(how, jobs, argc, argv, &passed, &failed);
  } else {
    for (size_t i = 0; i < test_total; i++) {
      if (!selected(tests[i].name, argc, argv)) continue;
      char why[160] = "checks failed";
      double start = now_ms();
      bool ok = how == IN_PROCESS ? run_here(i) : run_child(i, how, why, sizeof why);
      report(i, ok, now_ms() - start, why, &passed, &failed);
    }
  }
  /* Every selected test reports once, whichever runner ran it. */
  for (size_t i = 0; reported_tests != NULL && i < test_total; i++) {
    if (selected(tests[i].name, argc, argv) && !reported_tests[i]) {
      failed++;
      printf("FAIL %-64s never ran\n", tests[i].name);
    }
  }
  free(reported_tests);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

_Thread_local int harness_in_call;

void check_fail(const char *file, int line, const char *fmt, ...) {
  atomic_fetch_add(&failures, 1);
  if (atomic_fetch_add(&reported, 1) >= 40) return;
  char message[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  fprintf(stderr, "  %s: %s:%d: %s\n", current_test, file, line, message);
}

void callback_enter(const char *what) {
  if (harness_in_call > 0)
    check_fail(__FILE__, __LINE__, "a %s callback ran inside the library call that caused it", what);
}

void check_str(const char *file, int line, const char *expr, const char *got,
               const char *want) {
  if (got == NULL && want == NULL) return;
  if (got == NULL || want == NULL || strcmp(got, want) != 0)
    check_fail(file, line, "%s is \"%s\", expected \"%s\"", expr,
               got ? got : "(null)", want ? want : "(null)");
}

void check_bytes(const char *file, int line, const char *expr, const void *ptr,
                 size_t len, const char *want) {
  size_t want_len = strlen(want);
  if (ptr == NULL) {
    check_fail(file, line, "%s is NULL, expected \"%s\"", expr, want);
  } else if (len != want_len || memcmp(ptr, want, len) != 0) {
    check_fail(file, line, "%s is \"%.*s\" (%zu bytes), expected \"%s\"", expr,
               (int)(len > 64 ? 64 : len), (const char *)ptr, len, want);
  }
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

/* Recursive, so that accessors may be called inside WAIT_FOR conditions. */
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t cond;
static pthread_once_t cond_once = PTHREAD_ONCE_INIT;

static void cond_setup(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&cond, &attr);
  pthread_condattr_destroy(&attr);
}

void harness_lock(void) {
  pthread_once(&cond_once, cond_setup);
  pthread_mutex_lock(&lock);
}

void harness_unlock(void) { pthread_mutex_unlock(&lock); }

void harness_notify(void) { pthread_cond_broadcast(&cond); }

struct timespec harness_deadline(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += test_slow() ? 120 : 10;
  return ts;
}

bool harness_past(const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > deadline->tv_sec ||
         (now.tv_sec == deadline->tv_sec && now.tv_nsec >= deadline->tv_nsec);
}

bool harness_wait(const struct timespec *deadline) {
  int rc = pthread_cond_timedwait(&cond, &lock, deadline);
  return rc != ETIMEDOUT || !harness_past(deadline);
}

bool wait_published(lds_runtime *rt, lds_id cell, uint64_t seq) {
  struct timespec dl = harness_deadline();
  for (;;) {
    lds_snapshot s;
    if (lds_loadable_get(rt, cell, &s) != LDS_OK) return false;
    uint64_t got = s.seq;
    lds_snapshot_clear(&s);
    if (got >= seq) break;
    if (harness_past(&dl)) return false;
    sched_yield();
  }
  /* POLL mode: the loop thread queues an event for dispatch just after it
   * publishes it; wait for the descriptor to say something is queued. */
  int fd = lds_runtime_fd(rt);
  if (fd < 0) return true;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) > 0 && (p.revents & POLLIN)) return true;
    if (harness_past(&dl)) return false;
  }
}

bool poll_dispatch(lds_runtime *rt, const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long left = (long long)(deadline->tv_sec - now.tv_sec) * 1000 +
                   (deadline->tv_nsec - now.tv_nsec) / 1000000;
  if (left <= 0) return false;
  int fd = lds_runtime_fd(rt);
  if (fd < 0) {
    check_fail(__FILE__, __LINE__, "lds_runtime_fd returned %d", fd);
    return false;
  }
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int n = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
  if (n < 0 && errno != EINTR) {
    check_fail(__FILE__, __LINE__, "poll: %s", strerror(errno));
    return false;
  }
  int ran = lds_runtime_dispatch(rt, 0);
  if (ran < 0) {
    check_fail(__FILE__, __LINE__, "lds_runtime_dispatch returned %d", ran);
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------ */
/* Runtimes                                                            */
/* ------------------------------------------------------------------ */

lds_runtime *rt_new(uint32_t delivery) {
  lds_runtime_options opts = LDS_RUNTIME_OPTIONS_INIT;
  opts.delivery = delivery;
  lds_runtime *rt = NULL;
  CHECK_RC(lds_runtime_new(&opts, &rt), LDS_OK);
  if (rt == NULL) {
    fprintf(stderr, "  %s: cannot create a runtime\n", current_test);
    exit(2);
  }
  return rt;
}

void rt_free(lds_runtime *rt) {
  int rc = lds_runtime_free(rt);
  if (rc != LDS_OK) check_fail(__FILE__, __LINE__, "lds_runtime_free returned %d", rc);
}

/* ------------------------------------------------------------------ */
/* Recorder                                                            */
/* ------------------------------------------------------------------ */

static void *copy_or_null(const void *p, size_t len) {
  if (p == NULL) return NULL;
  void *copy = malloc(len ? len : 1);
  if (copy == NULL) abort();
  memcpy(copy, p, len);
  return copy;
}

void rec_init(recorder *rec, lds_runtime *rt) {
  memset(rec, 0, sizeof *rec);
  rec->rt = rt;
}

void rec_destroy(recorder *rec) {
  harness_lock();
  for (size_t i = 0; i < rec->count; i++) {
    rec_event *e = rec->events[i];
    free((void *)e->ev.value);
    free((void *)e->ev.request);
    free((void *)e->ev.error_message);
    free(e);
  }
  free(rec->events);
  rec->events = NULL;
  rec->count = rec->capacity = 0;
  harness_unlock();
}

void rec_on_event(const lds_event *event, void *user_data) {
  callback_enter("cell event");
  recorder *rec = user_data;
  rec_event *e = malloc(sizeof *e);
  if (e == NULL) abort();
  e->ev = *event;
  e->ev.value = copy_or_null(event->value, event->value_len);
  e->ev.request = copy_or_null(event->request, event->request_len);
  e->ev.error_message = event->error_message ? strdup(event->error_message) : NULL;
  e->thread = pthread_self();
  harness_lock();
  if (rec->closed)
    check_fail(__FILE__, __LINE__, "event seq %llu of cell %llu after its recorder was closed",
               (unsigned long long)event->seq, (unsigned long long)event->cell);
  if (event->seq != rec->last_seq + 1)
    check_fail(__FILE__, __LINE__, "cell %llu: event seq %llu after seq %llu",
               (unsigned long long)event->cell, (unsigned long long)event->seq,
               (unsigned long long)rec->last_seq);
  rec->last_seq = event->seq;
  if (rec->count == rec->capacity) {
    rec->capacity = rec->capacity ? rec->capacity * 2 : 16;
    rec->events = realloc(rec->events, rec->capacity * sizeof *rec->events);
    if (rec->events == NULL) abort();
  }
  rec->events[rec->count++] = e;
  rec_action action = rec->action;
  harness_notify();
  harness_unlock();
  if (action != NULL) action(rec, event);
}

size_t rec_count(recorder *rec) {
  harness_lock();
  size_t n = rec->count;
  harness_unlock();
  return n;
}

const lds_event *rec_at(recorder *rec, size_t i) {
  harness_lock();
  const lds_event *e = i < rec->count ? &rec->events[i]->ev : NULL;
  harness_unlock();
  return e;
}

pthread_t rec_thread(recorder *rec, size_t i) {
  harness_lock();
  pthread_t t = i < rec->count ? rec->events[i]->thread : (pthread_t)0;
  harness_unlock();
  return t;
}

const lds_event *rec_last(recorder *rec) {
  harness_lock();
  const lds_event *e = rec->count ? &rec->events[rec->count - 1]->ev : NULL;
  harness_unlock();
  return e;
}

void rec_close(recorder *rec) {
  harness_lock();
  rec->closed = true;
  harness_unlock();
}

lds_id cell_new(lds_runtime *rt, recorder *rec) {
  lds_id id = 0;
  CHECK_RC(lds_loadable_new(rt, rec_on_event, rec, &id), LDS_OK);
  CHECK(id != 0);
  return id;
}

lds_id process_new(lds_runtime *rt, recorder *rec) {
  lds_id id = 0;
  CHECK_RC(lds_process_new(rt, rec_on_event, rec, &id), LDS_OK);
  CHECK(id != 0);
  return id;
}

void check_state(const char *file, int line, const lds_event *e, uint64_t seq,
                 int32_t status, uint32_t flags) {
  if (e == NULL) {
    check_fail(file, line, "no event (expected seq %llu)", (unsigned long long)seq);
    return;
  }
  if (e->type != LDS_EVENT_STATE) check_fail(file, line, "event type %u, expected STATE", e->type);
  if (e->seq != seq)
    check_fail(file, line, "seq %llu, expected %llu", (unsigned long long)e->seq,
               (unsigned long long)seq);
  if (e->status != status) check_fail(file, line, "status %d, expected %d", e->status, status);
  if (e->flags != flags) check_fail(file, line, "flags 0x%x, expected 0x%x", e->flags, flags);
  if (e->updated_at_ms == 0) check_fail(file, line, "updated_at_ms is 0");
  if (e->status != LDS_LOADED && (e->value != NULL || e->value_len != 0))
    check_fail(file, line, "status %d carries a value", e->status);
  if (e->status != LDS_ERROR && e->status != LDS_FAILED &&
      (e->error_domain != 0 || e->error_message != NULL))
    check_fail(file, line, "status %d carries an error (domain %d)", e->status, e->error_domain);
}

/* ------------------------------------------------------------------ */
/* Host loader                                                         */
/* ------------------------------------------------------------------ */

void host_loader_start(lds_runtime *rt, lds_id job, const void *request, size_t request_len,
                       void *loader_data) {
  callback_enter("loader start");
  host *h = loader_data;
  if (rt != h->rt) check_fail(__FILE__, __LINE__, "loader start got another runtime");
  if (job == 0) check_fail(__FILE__, __LINE__, "loader start got job id 0");
  harness_lock();
  if (h->closed) check_fail(__FILE__, __LINE__, "loader start after the loader was closed");
  if (h->starts == h->capacity) {
    h->capacity = h->capacity ? h->capacity * 2 : 16;
    h->jobs = realloc(h->jobs, h->capacity * sizeof *h->jobs);
    if (h->jobs == NULL) abort();
  }
  host_job *j = &h->jobs[h->starts++];
  j->job = job;
  j->request = copy_or_null(request, request_len);
  j->request_len = request_len;
  j->request_null = request == NULL;
  j->thread = pthread_self();
  host_start_fn on_start = h->on_start;
  harness_notify();
  harness_unlock();
  if (on_start != NULL) on_start(h, job, request, request_len);
  harness_lock();
  h->started++;
  harness_notify();
  harness_unlock();
}

static void host_free_data(void *data) {
  callback_enter("loader free_data");
  host *h = data;
  harness_lock();
  h->free_data_calls++;
  h->free_data_thread = pthread_self();
  harness_notify();
  harness_unlock();
}

/* A host with no job yet, for a loader made on rt. */
static void host_reset(host *h, lds_runtime *rt, host_start_fn on_start, hook_log *cancels) {
  memset(h, 0, sizeof *h);
  h->rt = rt;
  h->on_start = on_start;
  h->cancels = cancels;
}

lds_id host_new(lds_runtime *rt, host *h, host_start_fn on_start) {
  host_reset(h, rt, on_start, NULL);
  CHECK_RC(lds_loader_new(rt, host_loader_start, h, host_free_data, &h->id), LDS_OK);
  CHECK(h->id != 0);
  return h->id;
}

lds_id host_new_cancels(lds_runtime *rt, host *h, host_start_fn on_start, hook_log *cancels) {
  host_reset(h, rt, on_start, cancels);
  lds_loader_options o = LDS_LOADER_OPTIONS_INIT;
  o.start = host_loader_start;
  o.cancel = host_loader_cancel;
  o.free_data = host_free_data;
  o.loader_data = h;
  CHECK_RC(lds_loader_new_ex(rt, &o, &h->id), LDS_OK);
  CHECK(h->id != 0);
  return h->id;
}

void host_destroy(host *h) {
  harness_lock();
  for (size_t i = 0; i < h->starts; i++) free(h->jobs[i].request);
  free(h->jobs);
  h->jobs = NULL;
  h->starts = h->capacity = 0;
  harness_unlock();
}

void host_set_start(host *h, host_start_fn on_start) {
  harness_lock();
  h->on_start = on_start;
  harness_unlock();
}

lds_id host_job_at(host *h, size_t i) {
  harness_lock();
  lds_id job = i < h->starts ? h->jobs[i].job : 0;
  harness_unlock();
  return job;
}

const host_job *host_job_info(host *h, size_t i) {
  harness_lock();
  const host_job *j = i < h->starts ? &h->jobs[i] : NULL;
  harness_unlock();
  return j;
}

void host_succeed_echo(host *h, lds_id job, const void *request, size_t len) {
  CHECK_RC(lds_job_succeed(h->rt, job, request, len), LDS_OK);
}

void host_fail(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(lds_job_fail(h->rt, job, 1, "failed"), LDS_OK);
}

void host_hook_start(host *h, lds_id job, const void *request, size_t len) {
  (void)request;
  (void)len;
  CHECK_RC(hook_add(h->rt, job, h->data, (int)h->starts), LDS_OK);
}

/* ------------------------------------------------------------------ */
/* Cancel-hook log                                                     */
/* ------------------------------------------------------------------ */

/* Logs (job, tag) in log; with the harness lock not held. */
static void hook_log_add(hook_log *log, lds_id job, int tag) {
  harness_lock();
  if (log->count == HOOK_LOG_MAX) {
    check_fail(__FILE__, __LINE__, "hook log full");
  } else {
    hook_entry *e = &log->entries[log->count++];
    e->job = job;
    e->tag = tag;
    e->thread = pthread_self();
  }
  harness_notify();
  harness_unlock();
}

static void hook_run(lds_id job, void *data) {
  callback_enter("cancel hook");
  hook_slot *slot = data;
  hook_log_add(slot->log, job, slot->tag);
}

void host_loader_cancel(lds_runtime *rt, lds_id job, void *loader_data) {
  callback_enter("loader cancel");
  host *h = loader_data;
  if (rt != h->rt) check_fail(__FILE__, __LINE__, "loader cancel got another runtime");
  if (h->cancels == NULL) check_fail(__FILE__, __LINE__, "loader cancel without a log");
  else hook_log_add(h->cancels, job, LOADER_CANCEL_TAG);
}

int hook_add(lds_runtime *rt, lds_id job, hook_log *log, int tag) {
  harness_lock();
  if (log->registered == HOOK_LOG_MAX) {
    harness_unlock();
    check_fail(__FILE__, __LINE__, "hook log full");
    return LDS_ENOMEM;
  }
  hook_slot *slot = &log->slots[log->registered++];
  slot->log = log;
  slot->tag = tag;
  harness_unlock();
  return lds_job_on_cancel(rt, job, hook_run, slot);
}

/* How many entries of log are for job, with the given tag unless any_tag. */
static size_t hook_entries(hook_log *log, lds_id job, bool any_tag, int tag) {
  size_t n = 0;
  harness_lock();
  for (size_t i = 0; i < log->count; i++)
    if (log->entries[i].job == job && (any_tag || log->entries[i].tag == tag)) n++;
  harness_unlock();
  return n;
}

size_t hook_count(hook_log *log, lds_id job) {
  return hook_entries(log, job, true, 0);
}

size_t loader_cancel_count(hook_log *log, lds_id job) {
  return hook_entries(log, job, false, LOADER_CANCEL_TAG);
}

/* ------------------------------------------------------------------ */
/* Fixture                                                             */
/* ------------------------------------------------------------------ */

/* A runtime and a cell reporting to f->rec; the loader is the caller's. */
static void fixture_open(fixture *f, uint32_t delivery) {
  memset(f, 0, sizeof *f);
  f->rt = rt_new(delivery);
  rec_init(&f->rec, f->rt);
  f->cell = cell_new(f->rt, &f->rec);
}

void fixture_init(fixture *f, uint32_t delivery, host_start_fn on_start) {
  fixture_open(f, delivery);
  f->loader = host_new(f->rt, &f->h, on_start);
}

void fixture_init_cancels(fixture *f, uint32_t delivery, host_start_fn on_start) {
  fixture_open(f, delivery);
  f->loader = host_new_cancels(f->rt, &f->h, on_start, &f->hooks);
}

void fixture_finish(fixture *f) {
  rt_free(f->rt);
  harness_lock();
  if (f->h.free_data_calls != 1)
    check_fail(__FILE__, __LINE__, "free_data ran %d times by the end of lds_runtime_free",
               f->h.free_data_calls);
  f->rec.closed = true;
  f->h.closed = true;
  harness_unlock();
  rec_destroy(&f->rec);
  host_destroy(&f->h);
}

int fx_load(fixture *f, const char *request, const lds_load_options *opts) {
  return lds_loadable_load(f->rt, f->cell, f->loader, request, strlen(request), opts);
}

int fx_set_loaded(fixture *f, const char *value) {
  return lds_loadable_set_loaded(f->rt, f->cell, value, strlen(value));
}

bool fx_publish(fixture *f, int n, const char *value) {
  for (int i = 0; i < n; i++) {
    int rc = fx_set_loaded(f, value);
    if (rc != LDS_OK) {
      check_fail(__FILE__, __LINE__, "lds_loadable_set_loaded returned %d", rc);
      return false;
    }
  }
  return wait_published(f->rt, f->cell, (uint64_t)n);
}

int fx_succeed(fixture *f, lds_id job, const char *value) {
  return lds_job_succeed(f->rt, job, value, strlen(value));
}

int fx_yield(fixture *f, lds_id job, const char *value) {
  return lds_job_yield(f->rt, job, value, strlen(value));
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

pthread_t thread_start(void *(*fn)(void *), void *arg) {
  pthread_t t;
  int rc = pthread_create(&t, NULL, fn, arg);
  if (rc != 0) {
    fprintf(stderr, "  %s: pthread_create: %s\n", current_test, strerror(rc));
    exit(2);
  }
  return t;
}

void thread_join(pthread_t thread) { pthread_join(thread, NULL); }

uint64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int listen_local(int *listener, int backlog) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, backlog) != 0 ||
      getsockname(s, (struct sockaddr *)&a, &len) != 0) {
    if (s >= 0) close(s);
    return -1;
  }
  *listener = s;
  return ntohs(a.sin_port);
}
