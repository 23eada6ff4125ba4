/*
 * harness.h — the test harness of the C suite.
 *
 * Tests register themselves with TEST(name) and run one by one, each in a
 * forked child process by default (a crash or a hang fails that test
 * only). The run ends with the line "N passed, M failed" and exits non-zero
 * on any failure.
 *
 * Waiting: tests never sleep. Every fixture below (recorders, host
 * loaders, cancel-hook logs) keeps its state under one process-wide lock
 * and broadcasts one condition variable on every change; WAIT_FOR(cond)
 * re-evaluates cond under that lock until it holds. Its deadline
 * (10 s, longer under LDS_TEST_SLOW) is only a safety net.
 *
 * Synchronous-callback rule: CHECK_RC marks the calling thread as "inside
 * a library call" while its expression runs; every fixture callback fails
 * the test if it runs while the mark is set. Do not pass
 * lds_runtime_dispatch or lds_runtime_free to CHECK_RC: they run callbacks
 * on purpose (use rt_free and POLL_UNTIL).
 *
 * Environment:
 *   LDS_TEST_SLOW=1    a slow host (valgrind): longer deadlines, small stress runs
 *   LDS_TEST_NOFORK=1  run every test in this process
 *   LDS_TEST_EXEC=1    run every test in a freshly executed process (used
 *                      under ThreadSanitizer, whose forked children can hang
 *                      in the Swift runtime's one-time initialization)
 *   LDS_TEST_JOBS=N    run up to N tests at once (1 to 16), each in its own
 *                      process as above; results print as tests end
 * Arguments: substrings; only tests whose name contains one of them run.
 * "--list" prints the names.
 */
#ifndef LOADSTATE_TEST_HARNESS_H
#define LOADSTATE_TEST_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "loadstate.h"

/* ------------------------------------------------------------------ */
/* Registration                                                        */
/* ------------------------------------------------------------------ */

typedef void (*test_fn)(void);

void test_register(const char *name, test_fn fn);

#define TEST(name)                                                          \
  static void name(void);                                                   \
  __attribute__((constructor)) static void name##_register(void) {          \
    test_register(#name, name);                                             \
  }                                                                         \
  static void name(void)

/* Whether the run is on a slow host (LDS_TEST_SLOW set). */
bool test_slow(void);

/* ------------------------------------------------------------------ */
/* Checks (any thread)                                                 */
/* ------------------------------------------------------------------ */

void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The thread's "inside a library call" depth; see the file comment. */
extern _Thread_local int harness_in_call;

/* Fails the test if a callback runs inside a call that caused it. */
void callback_enter(const char *what);

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);        \
  } while (0)

#define REQUIRE(cond)                                                       \
  do {                                                                      \
    if (!(cond)) {                                                          \
      check_fail(__FILE__, __LINE__, "REQUIRE(%s)", #cond);                 \
      return;                                                               \
    }                                                                       \
  } while (0)

#define CHECK_OP(a, op, b)                                                  \
  do {                                                                      \
    long long a_ = (long long)(a), b_ = (long long)(b);                     \
    if (!(a_ op b_))                                                        \
      check_fail(__FILE__, __LINE__, "%s %s %s (%lld vs %lld)", #a, #op,    \
                 #b, a_, b_);                                               \
  } while (0)

#define CHECK_EQ(a, b) CHECK_OP(a, ==, b)

#define CHECK_STR(a, b) check_str(__FILE__, __LINE__, #a, (a), (b))
void check_str(const char *file, int line, const char *expr, const char *got,
               const char *want);

/* Checks that a byte buffer equals a C string's bytes (no terminator). */
#define CHECK_BYTES(ptr, len, text)                                         \
  check_bytes(__FILE__, __LINE__, #ptr, (ptr), (len), (text))
void check_bytes(const char *file, int line, const char *expr, const void *ptr,
                 size_t len, const char *want);

/* Evaluates a library call as "inside a call" and checks its return code;
 * yields whether it matched. */
#define CHECK_RC(expr, want)                                                \
  ({                                                                        \
    harness_in_call++;                                                      \
    int rc_ = (expr);                                                       \
    harness_in_call--;                                                      \
    int want_ = (want);                                                     \
    if (rc_ != want_)                                                       \
      check_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)", \
                 #expr, rc_, lds_strerror(rc_), want_, lds_strerror(want_)); \
    rc_ == want_;                                                           \
  })

#define REQUIRE_RC(expr, want)                                              \
  do {                                                                      \
    if (!CHECK_RC(expr, want)) return;                                      \
  } while (0)

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

/* The lock and condition variable every fixture uses. */
void harness_lock(void);
void harness_unlock(void);
/* Wakes every waiter; call with the lock held after changing state. */
void harness_notify(void);
/* Waits for a notification until the deadline; false once it passed. */
bool harness_wait(const struct timespec *deadline);
struct timespec harness_deadline(void);
bool harness_past(const struct timespec *deadline);

/* Waits until cond (evaluated with the harness lock held) holds; fails the
 * test and yields false at the deadline. */
#define WAIT_FOR(cond)                                                      \
  ({                                                                        \
    struct timespec dl_ = harness_deadline();                               \
    bool ok_;                                                               \
    harness_lock();                                                         \
    while (!(ok_ = (cond)) && harness_wait(&dl_)) {                         \
    }                                                                       \
    harness_unlock();                                                       \
    if (!ok_) check_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
    ok_;                                                                    \
  })

/* Runs step(rt, &deadline) until cond (evaluated with the harness lock
 * held) holds; fails the test and yields false once step returns false. */
#define STEP_UNTIL(step, rt, cond)                                          \
  ({                                                                        \
    struct timespec dl_ = harness_deadline();                               \
    bool ok_;                                                               \
    for (;;) {                                                              \
      harness_lock();                                                       \
      ok_ = (cond);                                                         \
      harness_unlock();                                                     \
      if (ok_ || !step((rt), &dl_)) break;                                  \
    }                                                                       \
    if (!ok_) check_fail(__FILE__, __LINE__, "timed out waiting for %s", #cond); \
    ok_;                                                                    \
  })

/* POLL mode: waits on lds_runtime_fd and dispatches until cond holds. */
#define POLL_UNTIL(rt, cond) STEP_UNTIL(poll_dispatch, rt, cond)

/* Waits for the runtime's fd, then dispatches every pending callback.
 * False once the deadline passed. */
bool poll_dispatch(lds_runtime *rt, const struct timespec *deadline);

/* POLL mode: waits until the cell's snapshot reaches seq (the loop thread
 * has posted that many events; the snapshot is ahead of dispatch). */
bool wait_published(lds_runtime *rt, lds_id cell, uint64_t seq);

/* ------------------------------------------------------------------ */
/* Runtimes                                                            */
/* ------------------------------------------------------------------ */

lds_runtime *rt_new(uint32_t delivery);
/* Frees the runtime and checks that it returned LDS_OK. */
void rt_free(lds_runtime *rt);

/* ------------------------------------------------------------------ */
/* Event recorder                                                      */
/* ------------------------------------------------------------------ */

/* An lds_event whose pointers own copies (an empty non-NULL value stays
 * non-NULL), with where and when it was delivered. */
typedef struct rec_event {
  lds_event ev;
  pthread_t thread;
} rec_event;

typedef struct recorder recorder;
/* Runs inside the cell callback after the event was recorded. */
typedef void (*rec_action)(recorder *rec, const lds_event *event);

struct recorder {
  /* Guarded by the harness lock. */
  rec_event **events;
  size_t count;
  size_t capacity;
  uint64_t last_seq;
  bool closed;       /* any callback after this is a failure */
  /* Set before the cell is created. */
  rec_action action;
  void *data;
  lds_runtime *rt;
};

/* The cell callback; user_data is a recorder. */
void rec_on_event(const lds_event *event, void *user_data);
void rec_init(recorder *rec, lds_runtime *rt);
void rec_destroy(recorder *rec);
size_t rec_count(recorder *rec);
/* The i-th event (stable until rec_destroy), or NULL. */
const lds_event *rec_at(recorder *rec, size_t i);
pthread_t rec_thread(recorder *rec, size_t i);
/* The latest event of the given type, or NULL. */
const lds_event *rec_last(recorder *rec);
/* Marks that no callback may arrive any more. */
void rec_close(recorder *rec);
/* Waits until at least n events arrived; false at the deadline. */
#define REC_WAIT(rec, n) WAIT_FOR((rec)->count >= (size_t)(n))

/* Creates a loadable (or process) cell reporting to rec. */
lds_id cell_new(lds_runtime *rt, recorder *rec);
lds_id process_new(lds_runtime *rt, recorder *rec);

/* Checks the common fields of a STATE event. */
#define CHECK_STATE(e, seq_, status_, flags_)                               \
  check_state(__FILE__, __LINE__, (e), (seq_), (status_), (flags_))
void check_state(const char *file, int line, const lds_event *e, uint64_t seq,
                 int32_t status, uint32_t flags);

/* ------------------------------------------------------------------ */
/* Host loader                                                         */
/* ------------------------------------------------------------------ */

typedef struct host host;
/* Runs inside the loader's start function after the job was recorded. */
typedef void (*host_start_fn)(host *h, lds_id job, const void *request,
                              size_t request_len);

typedef struct host_job {
  lds_id job;
  void *request;       /* owned copy */
  size_t request_len;
  bool request_null;   /* the library passed NULL */
  pthread_t thread;
} host_job;

struct host {
  lds_runtime *rt;
  lds_id id;
  host_start_fn on_start;
  void *data;
  /* Guarded by the harness lock. */
  host_job *jobs;
  size_t starts;
  size_t started;  /* starts whose on_start returned */
  size_t capacity;
  int free_data_calls;
  pthread_t free_data_thread;
  struct hook_log *cancels;  /* where host_loader_cancel logs, or NULL */
  bool closed;  /* a start after this is a failure */
};

/* Creates a loader whose start records the job then calls on_start (may
 * be NULL: the job is left to the test). Returns the loader id. */
lds_id host_new(lds_runtime *rt, host *h, host_start_fn on_start);
void host_destroy(host *h);
/* Changes what later starts do. */
void host_set_start(host *h, host_start_fn on_start);
/* The i-th started job, or 0. */
lds_id host_job_at(host *h, size_t i);
const host_job *host_job_info(host *h, size_t i);
#define HOST_WAIT(h, n) WAIT_FOR((h)->starts >= (size_t)(n))
/* Waits until n starts ran their on_start to the end. */
#define HOST_WAIT_DONE(h, n) WAIT_FOR((h)->started >= (size_t)(n))

/* Like host_new, through lds_loader_new_ex with a cancel function,
 * host_loader_cancel, that logs (job, LOADER_CANCEL_TAG) in `cancels`. */
lds_id host_new_cancels(lds_runtime *rt, host *h, host_start_fn on_start, struct hook_log *cancels);
#define LOADER_CANCEL_TAG (-1)
void host_loader_cancel(lds_runtime *rt, lds_id job, void *loader_data);

/* The start function of every host loader (h is its loader_data); a test
 * that takes loader starts as records calls it itself. */
void host_loader_start(lds_runtime *rt, lds_id job, const void *request, size_t request_len,
                       void *loader_data);

/* on_start helpers. */
void host_succeed_echo(host *h, lds_id job, const void *request, size_t len);
void host_fail(host *h, lds_id job, const void *request, size_t len);
/* Registers a cancel hook in the hook_log at h->data, tagged with the start
 * number, before anything else can end the job. */
void host_hook_start(host *h, lds_id job, const void *request, size_t len);

/* ------------------------------------------------------------------ */
/* Cancel-hook log                                                     */
/* ------------------------------------------------------------------ */

typedef struct hook_entry {
  lds_id job;
  int tag;
  pthread_t thread;
} hook_entry;

#define HOOK_LOG_MAX 256

typedef struct hook_log hook_log;

/* What a registered hook gets as its data. */
typedef struct hook_slot {
  hook_log *log;
  int tag;
} hook_slot;

struct hook_log {
  /* Guarded by the harness lock. */
  hook_entry entries[HOOK_LOG_MAX];
  size_t count;
  hook_slot slots[HOOK_LOG_MAX];
  size_t registered;
};

/* Registers a hook recording (job, tag) in log. Returns the library's code. */
int hook_add(lds_runtime *rt, lds_id job, hook_log *log, int tag);
/* How many times hooks ran for job. */
size_t hook_count(hook_log *log, lds_id job);
/* How many times host_loader_cancel ran for job (entries tagged LOADER_CANCEL_TAG). */
size_t loader_cancel_count(hook_log *log, lds_id job);

/* ------------------------------------------------------------------ */
/* Fixture: a runtime, one cell, one host loader                        */
/* ------------------------------------------------------------------ */

typedef struct fixture {
  lds_runtime *rt;
  recorder rec;
  host h;
  lds_id cell;    /* a loadable cell reporting to rec */
  lds_id loader;  /* h's loader */
  hook_log hooks;
} fixture;

void fixture_init(fixture *f, uint32_t delivery, host_start_fn on_start);
/* fixture_init with a loader from host_new_cancels logging to f->hooks. */
void fixture_init_cancels(fixture *f, uint32_t delivery, host_start_fn on_start);
/* Frees the runtime, checks that the loader's free_data ran exactly once
 * by then, and that no callback comes later. */
void fixture_finish(fixture *f);
/* Loads the C string request into f's cell with f's loader. */
int fx_load(fixture *f, const char *request, const lds_load_options *opts);
/* The text of a C string as a value. */
int fx_set_loaded(fixture *f, const char *value);
/* POLL mode: sets value on f's cell n times, then waits until the loop has
 * posted the n events (their seq reached n); false if a call failed. */
bool fx_publish(fixture *f, int n, const char *value);
int fx_succeed(fixture *f, lds_id job, const char *value);
int fx_yield(fixture *f, lds_id job, const char *value);

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* Starts a thread running fn(arg); joins it with thread_join. */
pthread_t thread_start(void *(*fn)(void *), void *arg);
void thread_join(pthread_t thread);

uint64_t wall_ms(void);


/* Listens on a free port of 127.0.0.1 with `backlog`; the port (the socket
 * in *listener), or -1. */
int listen_local(int *listener, int backlog);

#endif /* LOADSTATE_TEST_HARNESS_H */
