/* trace.c — tracing with a runtime observer: OpenTelemetry-style spans as
 * JSON lines.
 *
 * lds_runtime_observe sees every cell event, job start and job end. This
 * program turns them into spans, one JSON object per line on stdout, in
 * the shape of OTLP/JSON spans: a span per load (from its LOADING event to
 * the event that settles it), with a child span per job (an attempt) and
 * the cell's events as span events. Each load is its own trace. The loader
 * fails a request's first attempt when it starts with '!', so that load
 * has two job spans, the first one in error.
 *
 * LOOP delivery: the observer runs on the runtime's loop thread, so its
 * tables need no lock; the main thread only waits for the loads to settle.
 * Exits 0 when it wrote the spans it expected. */
#include <loadstate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { MAX_CELLS = 8, MAX_JOBS = 16, MAX_EVENTS = 8 };

/* Monotonic nanoseconds (what time_ns counts) plus this is Unix time. */
static uint64_t unix_offset_ns;

typedef struct load_span {
  lds_id cell;
  int open;
  char trace_id[33], span_id[17];
  uint64_t start_ns;
  int events;
  struct { const char *name; uint64_t at_ns; } event[MAX_EVENTS];
} load_span;

typedef struct job_span {
  lds_id job;
  char span_id[17];
  const load_span *parent;
  uint64_t start_ns;
} job_span;

static load_span loads[MAX_CELLS];
static job_span jobs[MAX_JOBS];
static uint64_t next_id = 1;
static int spans_written = 0, loads_settled = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static void hex_id(char *out, int digits) {
  /* Ids from a counter keep the output reproducible; a real exporter
   * would use random ones. */
  uint64_t n = next_id++;
  for (int i = digits - 1; i >= 0; i--, n >>= 4) out[i] = "0123456789abcdef"[n & 15];
  out[digits] = 0;
}

static load_span *load_of(lds_id cell) {
  for (int i = 0; i < MAX_CELLS; i++)
    if (loads[i].cell == cell) return &loads[i];
  for (int i = 0; i < MAX_CELLS; i++)
    if (loads[i].cell == 0) {
      loads[i].cell = cell;
      return &loads[i];
    }
  return NULL;
}

static const char *status_name(int32_t status) {
  switch (status) {
  case LDS_ABSENT: return "absent";
  case LDS_LOADING: return "loading";
  case LDS_LOADED: return "loaded";
  case LDS_ERROR: return "error";
  default: return "other";
  }
}

/* A JSON string: the bytes, escaped (only printable ASCII kept as is). */
static void json_string(const void *bytes, size_t len) {
  const unsigned char *s = bytes;
  putchar('"');
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '"' || s[i] == '\\') printf("\\%c", s[i]);
    else if (s[i] >= 0x20 && s[i] < 0x7f) putchar(s[i]);
    else printf("\\u%04x", s[i]);
  }
  putchar('"');
}

static void span_head(const char *trace_id, const char *span_id, const char *parent, const char *name,
                      uint64_t start_ns, uint64_t end_ns) {
  printf("{\"traceId\":\"%s\",\"spanId\":\"%s\",\"parentSpanId\":\"%s\",\"name\":\"%s\","
         "\"kind\":\"SPAN_KIND_INTERNAL\",\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\"",
         trace_id, span_id, parent, name, (unsigned long long)(start_ns + unix_offset_ns),
         (unsigned long long)(end_ns + unix_offset_ns));
}

static void on_event(const lds_observation *o) {
  const lds_event *e = o->event;
  load_span *span = load_of(e->cell);
  if (span == NULL || e->type != LDS_EVENT_STATE) return;
  if (e->status == LDS_LOADING && !span->open) {
    span->open = 1;
    span->events = 0;
    hex_id(span->trace_id, 32);
    hex_id(span->span_id, 16);
    span->start_ns = o->time_ns;
  }
  if (!span->open) return;
  if (span->events < MAX_EVENTS) {
    span->event[span->events].name = status_name(e->status);
    span->event[span->events++].at_ns = o->time_ns;
  }
  if (e->status == LDS_LOADING) return;
  /* Settled: the load's span ends. */
  span_head(span->trace_id, span->span_id, "", "load", span->start_ns, o->time_ns);
  printf(",\"attributes\":[{\"key\":\"loadstate.cell\",\"value\":{\"intValue\":\"%llu\"}},"
         "{\"key\":\"loadstate.request\",\"value\":{\"stringValue\":",
         (unsigned long long)e->cell);
  json_string(e->request, e->request_len);
  printf("}},{\"key\":\"loadstate.attempts\",\"value\":{\"intValue\":\"%u\"}}],\"events\":[", e->attempt);
  for (int i = 0; i < span->events; i++)
    printf("%s{\"timeUnixNano\":\"%llu\",\"name\":\"%s\"}", i ? "," : "",
           (unsigned long long)(span->event[i].at_ns + unix_offset_ns), span->event[i].name);
  printf("],\"status\":{\"code\":\"%s\"}}\n", e->status == LDS_LOADED ? "STATUS_CODE_OK" : "STATUS_CODE_ERROR");
  span->open = 0;
  spans_written++;
  pthread_mutex_lock(&lock);
  loads_settled++;
  pthread_cond_signal(&changed);
  pthread_mutex_unlock(&lock);
}

static void on_job(const lds_observation *o) {
  if (o->what == LDS_OBSERVE_JOB_START) {
    for (int i = 0; i < MAX_JOBS; i++)
      if (jobs[i].job == 0) {
        jobs[i].job = o->job;
        jobs[i].parent = load_of(o->cell);
        jobs[i].start_ns = o->time_ns;
        hex_id(jobs[i].span_id, 16);
        return;
      }
    return;
  }
  for (int i = 0; i < MAX_JOBS; i++) {
    job_span *j = &jobs[i];
    if (j->job != o->job) continue;
    if (j->parent) {
      span_head(j->parent->trace_id, j->span_id, j->parent->span_id, "job", j->start_ns, o->time_ns);
      printf(",\"attributes\":[{\"key\":\"loadstate.job\",\"value\":{\"intValue\":\"%llu\"}},"
             "{\"key\":\"loadstate.loader\",\"value\":{\"intValue\":\"%llu\"}},"
             "{\"key\":\"loadstate.attempt\",\"value\":{\"intValue\":\"%u\"}},"
             "{\"key\":\"loadstate.duration_ns\",\"value\":{\"intValue\":\"%llu\"}}]",
             (unsigned long long)o->job, (unsigned long long)o->loader, o->attempt,
             (unsigned long long)o->duration_ns);
      if (o->outcome == LDS_JOB_SUCCEEDED)
        printf(",\"status\":{\"code\":\"STATUS_CODE_OK\"}}\n");
      else
        printf(",\"status\":{\"code\":\"STATUS_CODE_ERROR\",\"message\":\"%s %d\"}}\n",
               o->outcome == LDS_JOB_FAILED ? "failed" : "cancelled", o->error_code);
      spans_written++;
    }
    j->job = 0;
    return;
  }
}

static void observe(const lds_observation *o, void *user_data) {
  (void)user_data;
  if (o->what == LDS_OBSERVE_EVENT) on_event(o);
  else on_job(o);
  fflush(stdout);
}

/* The loader: the request upper-cased; a request starting with '!' fails
 * its first attempt. */
static void shout(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  static int failures = 0; /* the loader runs on the loop thread only */
  const char *r = request;
  if (len > 0 && r[0] == '!' && failures == 0) {
    failures++;
    lds_job_fail(rt, job, 503, "try again");
    return;
  }
  char reply[64];
  size_t n = len < sizeof reply ? len : sizeof reply;
  for (size_t i = 0; i < n; i++) reply[i] = r[i] >= 'a' && r[i] <= 'z' ? (char)(r[i] - 'a' + 'A') : r[i];
  lds_job_succeed(rt, job, reply, n);
}

static void on_cell(const lds_event *e, void *user_data) {
  (void)e, (void)user_data;
}

int main(void) {
  struct timespec mono, real;
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  unix_offset_ns = ((uint64_t)real.tv_sec * 1000000000u + (uint64_t)real.tv_nsec) -
                   ((uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec);

  lds_runtime *rt;
  lds_id loader, cells[2];
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  if (lds_runtime_observe(rt, observe, NULL, NULL) != LDS_OK) return 1;
  lds_loader_new(rt, shout, NULL, NULL, &loader);
  for (int i = 0; i < 2; i++) lds_loadable_new(rt, on_cell, NULL, &cells[i]);

  lds_load_options retry = LDS_LOAD_OPTIONS_INIT;
  retry.retries = 1;
  retry.retry_base_ms = 1;
  lds_loadable_load(rt, cells[0], loader, "hello", 5, NULL);
  lds_loadable_load(rt, cells[1], loader, "!flaky", 6, &retry);

  pthread_mutex_lock(&lock);
  while (loads_settled < 2) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  lds_runtime_free(rt);
  /* Two load spans, three job spans (the flaky load's two attempts). */
  if (spans_written != 5) {
    fprintf(stderr, "trace: %d spans written, 5 expected\n", spans_written);
    return 1;
  }
  return 0;
}
