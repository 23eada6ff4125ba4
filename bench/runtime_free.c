/*
 * runtime_free.c: how long lds_runtime_free takes while host threads keep
 * calling in. Producer threads make cells and, on each, loads, cancels and
 * sets at random (keeping the cells, or freeing them); in POLL mode other
 * threads dispatch (all pending at once, or 50 at a time with a pause);
 * after a second the main thread frees the runtime while they go on, and
 * the time the free took is printed. Every call after the free returns
 * LDS_ECLOSED and the threads stop.
 *
 *   runtime_free POLL|LOOP PRODUCERS DISPATCHERS keep|free fast|slow
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "loadstate.h"

static lds_runtime *rt;
static lds_id loader;
static atomic_int closed_seen, cells_made;
static int keep_cells, slow_dispatch;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void start(lds_runtime *r, lds_id job, const void *req, size_t len, void *data) {
  (void)data; lds_job_succeed(r, job, req, len);
}
static void on_event(const lds_event *e, void *u) { (void)e; (void)u; }
static void *producer(void *arg) {
  (void)arg;
  unsigned seed = (unsigned)(uintptr_t)pthread_self();
  for (;;) {
    lds_id cell;
    int rc = lds_loadable_new(rt, on_event, NULL, &cell);
    if (rc == LDS_ECLOSED) break;
    if (rc != LDS_OK) continue;
    atomic_fetch_add(&cells_made, 1);
    for (int i = 0; i < 8; i++) {
      int r = rand_r(&seed) % 4;
      if (r == 0) rc = lds_loadable_load(rt, cell, loader, "req", 3, NULL);
      else if (r == 1) rc = lds_loadable_cancel(rt, cell);
      else if (r == 2) rc = lds_loadable_set_loaded(rt, cell, "v", 1);
      else rc = lds_loadable_load(rt, cell, loader, "other", 5, NULL);
      if (rc == LDS_ECLOSED) goto done;
    }
    if (!keep_cells && lds_loadable_free(rt, cell) == LDS_ECLOSED) break;
  }
done:
  atomic_fetch_add(&closed_seen, 1);
  return NULL;
}
static void *dispatcher(void *arg) {
  (void)arg;
  for (;;) {
    int n = lds_runtime_dispatch(rt, slow_dispatch ? 50 : 0);
    if (slow_dispatch) usleep(1000);
    if (n == LDS_ECLOSED) break;
    if (n == 0) usleep(100);
  }
  return NULL;
}
int main(int argc, char **argv) {
  int poll = argc > 1 ? strcmp(argv[1], "LOOP") != 0 : 1;
  int producers = argc > 2 ? atoi(argv[2]) : 4, dispatchers = poll ? (argc > 3 ? atoi(argv[3]) : 3) : 0;
  keep_cells = argc > 4 && strcmp(argv[4], "keep") == 0;
  slow_dispatch = argc > 5 && strcmp(argv[5], "slow") == 0;
  if (producers < 1 || producers + dispatchers > 64) return 2;
  lds_runtime_options o = LDS_RUNTIME_OPTIONS_INIT;
  o.delivery = poll ? LDS_DELIVER_POLL : LDS_DELIVER_LOOP;
  if (lds_runtime_new(&o, &rt) != LDS_OK) return 1;
  lds_loader_new(rt, start, NULL, NULL, &loader);
  pthread_t t[64];
  int n = 0;
  for (int i = 0; i < producers; i++) pthread_create(&t[n++], NULL, producer, NULL);
  for (int i = 0; i < dispatchers; i++) pthread_create(&t[n++], NULL, dispatcher, NULL);
  sleep(1);
  double t0 = now();
  int rc = lds_runtime_free(rt);
  double t1 = now();
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("%s, %d producers (%s cells), %d dispatchers%s: %d cells made; lds_runtime_free returned %d in %.3f s\n",
         poll ? "POLL" : "LOOP", producers, keep_cells ? "keeping" : "freeing", dispatchers,
         slow_dispatch ? " (50 at a time)" : "", atomic_load(&cells_made), rc, t1 - t0);
  return 0;
}
