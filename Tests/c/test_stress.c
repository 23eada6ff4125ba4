/* test_stress.c — many threads loading at once; every load is accounted for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

enum { PRODUCERS = 8, WORKERS = 2 };

/* Per cell: how many job completions the library accepted. */
typedef struct lane {
  lds_runtime *rt;
  lds_id cell;
  lds_id loader;
  recorder rec;
  int index;
  size_t loads;
  /* Guarded by the harness lock. */
  size_t starts;     /* jobs started (a load superseded before it began starts none) */
  size_t accepted;   /* succeed calls that returned LDS_OK */
  size_t refused;    /* succeed calls that returned LDS_ECANCELED */
} lane;

typedef struct pending {
  lds_id job;
  lane *lane;
  char request[24];
  size_t len;
} pending;

/* The work queue of the worker threads, guarded by the harness lock. */
static struct {
  pending *items;
  size_t head, tail, capacity;
  size_t queued, done;
  bool closing;
  lane *lanes;
} work;

/* The request is "<lane>:<n>". */
static lane *parse_request(const void *request, size_t len, size_t *n) {
  char text[24] = {0};
  memcpy(text, request, len < sizeof text - 1 ? len : sizeof text - 1);
  int index = 0;
  if (sscanf(text, "%d:%zu", &index, n) != 2 || index < 0 || index >= PRODUCERS) {
    check_fail(__FILE__, __LINE__, "bad request \"%s\"", text);
    index = 0;
    *n = 0;
  }
  return &work.lanes[index];
}

static void account(lane *l, int rc) {
  harness_lock();
  if (rc == LDS_OK) l->accepted++;
  else if (rc == LDS_ECANCELED) l->refused++;
  else check_fail(__FILE__, __LINE__, "lds_job_succeed returned %d", rc);
  harness_notify();
  harness_unlock();
}

/* Even loads are completed inside start, odd ones by a worker thread. */
static void stress_start(host *h, lds_id job, const void *request, size_t len) {
  size_t n;
  lane *l = parse_request(request, len, &n);
  harness_lock();
  l->starts++;
  harness_unlock();
  if (n % 2 == 0) {
    account(l, lds_job_succeed(h->rt, job, request, len));
    return;
  }
  harness_lock();
  if (work.tail == work.capacity) {
    check_fail(__FILE__, __LINE__, "work queue full");
  } else {
    pending *p = &work.items[work.tail++];
    p->job = job;
    p->lane = l;
    p->len = len < sizeof p->request ? len : sizeof p->request;
    memcpy(p->request, request, p->len);
    work.queued++;
  }
  harness_notify();
  harness_unlock();
}

static void *worker_main(void *arg) {
  lds_runtime *rt = arg;
  for (;;) {
    harness_lock();
    struct timespec dl = harness_deadline();
    while (work.head == work.tail && !work.closing) {
      if (!harness_wait(&dl)) dl = harness_deadline();
    }
    if (work.head == work.tail) {
      harness_unlock();
      return NULL;
    }
    pending p = work.items[work.head++];
    harness_unlock();
    account(p.lane, lds_job_succeed(rt, p.job, p.request, p.len));
    harness_lock();
    work.done++;
    harness_notify();
    harness_unlock();
  }
}

static void *producer_main(void *arg) {
  lane *l = arg;
  for (size_t i = 0; i < l->loads; i++) {
    char request[24];
    int len = snprintf(request, sizeof request, "%d:%zu", l->index, i);
    if (!CHECK_RC(lds_loadable_load(l->rt, l->cell, l->loader, request, (size_t)len, NULL), LDS_OK)) break;
  }
  return NULL;
}

static bool request_is(const lds_event *e, int lane, size_t n) {
  char want[24];
  int len = snprintf(want, sizeof want, "%d:%zu", lane, n);
  return e->request != NULL && e->request_len == (size_t)len && memcmp(e->request, want, (size_t)len) == 0;
}

/* The last event is the last load's result. */
static bool lane_settled(lane *l) {
  const lds_event *e = rec_last(&l->rec);
  return e != NULL && e->status == LDS_LOADED && request_is(e, l->index, l->loads - 1);
}

static bool all_settled(lane *lanes) {
  for (int i = 0; i < PRODUCERS; i++)
    if (!lane_settled(&lanes[i])) return false;
  return work.done == work.queued;
}

TEST(test_8_threads_x_1000_loads_all_accounted_for) {
  const size_t loads = test_slow() ? 60 : 1000;
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  host h;
  lds_id loader = host_new(rt, &h, stress_start);
  lane *lanes = calloc(PRODUCERS, sizeof *lanes);
  memset(&work, 0, sizeof work);
  work.capacity = PRODUCERS * loads;
  work.items = calloc(work.capacity, sizeof *work.items);
  work.lanes = lanes;
  for (int i = 0; i < PRODUCERS; i++) {
    lanes[i] = (lane){.rt = rt, .loader = loader, .index = i, .loads = loads};
    rec_init(&lanes[i].rec, rt);
    lanes[i].cell = cell_new(rt, &lanes[i].rec);
  }
  pthread_t workers[WORKERS], producers[PRODUCERS];
  for (int i = 0; i < WORKERS; i++) workers[i] = thread_start(worker_main, rt);
  for (int i = 0; i < PRODUCERS; i++) producers[i] = thread_start(producer_main, &lanes[i]);
  for (int i = 0; i < PRODUCERS; i++) thread_join(producers[i]);
  CHECK(WAIT_FOR(all_settled(lanes)));
  harness_lock();
  work.closing = true;
  harness_notify();
  harness_unlock();
  for (int i = 0; i < WORKERS; i++) thread_join(workers[i]);

  /* Every load started at most one job. */
  CHECK_OP(h.starts, <=, PRODUCERS * loads);
  for (int i = 0; i < PRODUCERS; i++) {
    lane *l = &lanes[i];
    size_t loading = 0, loaded = 0, n = rec_count(&l->rec);
    size_t current = 0; /* the load the next LOADED must belong to */
    bool open = false;
    for (size_t k = 0; k < n; k++) {
      const lds_event *e = rec_at(&l->rec, k);
      if (e->type != LDS_EVENT_STATE) {
        check_fail(__FILE__, __LINE__, "lane %d: unexpected event type %u", i, e->type);
        continue;
      }
      if (e->status == LDS_LOADING) {
        if (!request_is(e, i, loading))
          check_fail(__FILE__, __LINE__, "lane %d: LOADING %zu out of order", i, loading);
        current = loading++;
        open = true;
      } else if (e->status == LDS_LOADED) {
        /* A result belongs to the load just begun, and comes once. */
        if (!open || !request_is(e, i, current))
          check_fail(__FILE__, __LINE__, "lane %d: LOADED for a load that is not the current one", i);
        if (e->value_len != e->request_len || memcmp(e->value, e->request, e->value_len) != 0)
          check_fail(__FILE__, __LINE__, "lane %d: LOADED value differs from its request", i);
        open = false;
        loaded++;
      } else {
        check_fail(__FILE__, __LINE__, "lane %d: unexpected status %d", i, e->status);
      }
    }
    /* Every load reported LOADING; each accepted completion produced
     * exactly one LOADED event; every job that started was either
     * completed or refused. */
    CHECK_EQ(loading, loads);
    CHECK_EQ(loaded, l->accepted);
    CHECK_OP(l->starts, >=, 1);
    CHECK_EQ(l->accepted + l->refused, l->starts);
    CHECK_EQ(n, loads + l->accepted);
    lds_snapshot s;
    CHECK_RC(lds_loadable_get(rt, l->cell, &s), LDS_OK);
    CHECK_EQ(s.seq, n);
    lds_snapshot_clear(&s);
  }
  rt_free(rt);
  CHECK_EQ(h.free_data_calls, 1);
  for (int i = 0; i < PRODUCERS; i++) rec_destroy(&lanes[i].rec);
  host_destroy(&h);
  free(work.items);
  free(lanes);
}
