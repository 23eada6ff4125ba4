/* exec.c — the exec loader: a command's standard output is the value; a
 * non-zero exit is an error in LDS_DOMAIN_EXIT with the status as code and
 * the end of standard error as message. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int settled = 0;

static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE || e->status == LDS_LOADING) return;
  if (e->status == LDS_LOADED) printf("loaded: %.*s", (int)e->value_len, (const char *)e->value);
  else printf("error: domain %s, code %d, message %s", e->error_domain == LDS_DOMAIN_EXIT ? "EXIT" : "other",
              e->error_code, e->error_message);
  pthread_mutex_lock(&lock);
  settled++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

/* Runs argv in the cell and waits for the outcome. */
static void run(lds_runtime *rt, lds_id cell, lds_id exec, const char *const *argv,
                int count) {
  lds_exec_request req = LDS_EXEC_REQUEST_INIT;
  req.argv = argv;
  void *encoded;
  size_t len;
  if (lds_exec_request_encode(&req, &encoded, &len) != LDS_OK) return;
  lds_loadable_load(rt, cell, exec, encoded, len, NULL);
  lds_free(encoded); /* the load copied it */
  pthread_mutex_lock(&lock);
  while (settled < count) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(void) {
  lds_runtime *rt;
  lds_id exec, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_exec_loader_new(rt, NULL, &exec);
  lds_loadable_new(rt, on_event, NULL, &cell);

  const char *const greet[] = {"echo", "hello from a command", NULL};
  run(rt, cell, exec, greet, 1);
  const char *const fail[] = {"sh", "-c", "echo 'no such branch' >&2; exit 3", NULL};
  run(rt, cell, exec, fail, 2);

  lds_runtime_free(rt);
  return 0;
}
