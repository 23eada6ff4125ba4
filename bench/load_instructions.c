/*
 * load_instructions.c — a fixed number of loads and nothing else, for
 * instruction counts under callgrind (bench/load_instructions.sh).
 *
 *   usage: load_instructions loads
 *
 * 1024 cells used round-robin; a loader whose start function calls
 * lds_job_succeed inside the callback (as bench/loads.c's throughput run).
 * A cell gets its next load once its previous one reached LOADED; the
 * calling thread waits on a condition variable, never spins, so that its
 * count does not depend on timing.
 */
#include <loadstate.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELLS 1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int busy[CELLS];
static long done;

static void start(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  if (lds_job_succeed(rt, job, request, len) != LDS_OK) abort();
}

static void on_event(const lds_event *e, void *user_data) {
  if (e->status != LDS_LOADED) return;
  int cell = (int)(intptr_t)user_data;
  pthread_mutex_lock(&mu);
  busy[cell] = 0;
  done++;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

int main(int argc, char **argv) {
  long loads = argc > 1 ? atol(argv[1]) : 20000;
  lds_runtime *rt;
  lds_id loader, cells[CELLS];
  /* A second argument "no-metrics": a runtime made with LDS_RUNTIME_NO_METRICS. */
  lds_runtime_options ro = LDS_RUNTIME_OPTIONS_INIT;
  if (argc > 2 && strcmp(argv[2], "no-metrics") == 0) ro.flags = LDS_RUNTIME_NO_METRICS;
  if (lds_runtime_new(&ro, &rt) != LDS_OK) abort();
  if (lds_loader_new(rt, start, NULL, NULL, &loader) != LDS_OK) abort();
  for (int i = 0; i < CELLS; i++)
    if (lds_loadable_new(rt, on_event, (void *)(intptr_t)i, &cells[i]) != LDS_OK) abort();
  static const char request[16] = "0123456789abcde";
  for (long k = 0; k < loads; k++) {
    int i = (int)(k % CELLS);
    pthread_mutex_lock(&mu);
    while (busy[i]) pthread_cond_wait(&cv, &mu);
    busy[i] = 1;
    pthread_mutex_unlock(&mu);
    if (lds_loadable_load(rt, cells[i], loader, request, sizeof request, NULL) != LDS_OK) abort();
  }
  pthread_mutex_lock(&mu);
  while (done < loads) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  if (lds_runtime_free(rt) != LDS_OK) abort();
  printf("%ld loads\n", loads);
  return 0;
}
