/* hello.c — the smallest loadstate host: one cell, one loader, one load.
 *
 * The loader answers on the loop thread, inside its start callback; the
 * main thread waits for the final state on a condition variable. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int finished = 0;

/* The loader: greets whoever the request names. */
static void greet(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  char reply[128];
  int n = snprintf(reply, sizeof reply, "hello, %.*s", (int)len, (const char *)request);
  lds_job_succeed(rt, job, reply, (size_t)n);
}

/* The cell's callback: print every state; note when the load is over. */
static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  const char *names[] = {"absent", "loading", "loaded", "error"};
  printf("#%llu %s", (unsigned long long)e->seq, names[e->status]);
  if (e->status == LDS_LOADED) printf(": %.*s", (int)e->value_len, (const char *)e->value);
  printf("\n");
  if (e->status == LDS_LOADED || e->status == LDS_ERROR) {
    pthread_mutex_lock(&lock);
    finished = 1;
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&lock);
  }
}

int main(void) {
  lds_runtime *rt;
  lds_id loader, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_loader_new(rt, greet, NULL, NULL, &loader);
  lds_loadable_new(rt, on_event, NULL, &cell);

  int rc = lds_loadable_load(rt, cell, loader, "world", 5, NULL);
  if (rc != LDS_OK) {
    fprintf(stderr, "load: %s\n", lds_strerror(rc));
    return 1;
  }

  pthread_mutex_lock(&lock);
  while (!finished) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);

  lds_runtime_free(rt); /* also frees the cell and the loader */
  return 0;
}
