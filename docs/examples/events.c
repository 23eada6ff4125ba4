/* events.c — one cell, a loader that answers later, and the events a load,
 * a second load and a cancel produce. The loader keeps its job; the main
 * thread ends it, as a worker thread or another event loop would. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int events = 0;
static lds_id started = 0; /* the job the loader was given last */

static void keep_job(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)rt, (void)request, (void)len, (void)data;
  pthread_mutex_lock(&lock);
  started = job;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  const char *names[] = {"absent", "loading", "loaded", "error"};
  printf("#%llu %s request=%.*s", (unsigned long long)e->seq, names[e->status],
         (int)e->request_len, (const char *)e->request);
  if (e->status == LDS_LOADED) printf(" value=%.*s", (int)e->value_len, (const char *)e->value);
  if (e->flags & LDS_FLAG_CANCELLED) printf(" (cancelled)");
  printf("\n");
  pthread_mutex_lock(&lock);
  events++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

/* Waits until the cell has had `count` events; returns the last job started. */
static lds_id wait_for(int count) {
  pthread_mutex_lock(&lock);
  while (events < count || started == 0) pthread_cond_wait(&changed, &lock);
  lds_id job = started;
  started = 0;
  pthread_mutex_unlock(&lock);
  return job;
}

int main(int argc, char **argv) {
  (void)argc, (void)argv; /* the test server's URL: not needed here */
  lds_runtime *rt;
  lds_id loader, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_loader_new(rt, keep_job, NULL, NULL, &loader);
  lds_loadable_new(rt, on_event, NULL, &cell);

  lds_loadable_load(rt, cell, loader, "ada", 3, NULL);  /* #1 loading */
  lds_id first = wait_for(1);
  lds_job_succeed(rt, first, "hello, ada", 10);          /* #2 loaded */

  lds_loadable_load(rt, cell, loader, "bob", 3, NULL);   /* #3 loading */
  lds_id second = wait_for(3);
  lds_loadable_cancel(rt, cell);                          /* #4: ada's value is back */
  int rc = lds_job_succeed(rt, second, "hello, bob", 10);

  pthread_mutex_lock(&lock);
  while (events < 4) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
  printf("late answer: %s\n",
         rc == LDS_ECANCELED ? "refused (LDS_ECANCELED)" : lds_strerror(rc));
  lds_runtime_free(rt);
  return 0;
}
