/* batch.c — several calls in one: lds_runtime_submit.
 *
 * Four cells are loaded with one call; the loader answers inside its start
 * callback. A second batch mixes good and bad calls: each gets its own
 * return code, and the bad ones stop nothing. Exits 0 when every result
 * is the one expected. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { CELLS = 4 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int settled = 0;

/* The loader: the request, upper-cased. */
static void shout(lds_runtime *rt, lds_id job, const void *request, size_t len, void *data) {
  (void)data;
  char reply[64];
  size_t n = len < sizeof reply ? len : sizeof reply;
  for (size_t i = 0; i < n; i++) {
    char c = ((const char *)request)[i];
    reply[i] = c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
  }
  lds_job_succeed(rt, job, reply, n);
}

static void on_event(const lds_event *e, void *user_data) {
  int index = (int)(size_t)user_data;
  if (e->status != LDS_LOADED) return;
  printf("cell %d: %.*s\n", index, (int)e->value_len, (const char *)e->value);
  pthread_mutex_lock(&lock);
  settled++;
  pthread_cond_signal(&changed);
  pthread_mutex_unlock(&lock);
}

static void wait_settled(int n) {
  pthread_mutex_lock(&lock);
  while (settled < n) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(void) {
  lds_runtime *rt;
  lds_id loader, cells[CELLS];
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_loader_new(rt, shout, NULL, NULL, &loader);
  for (int i = 0; i < CELLS; i++) lds_loadable_new(rt, on_event, (void *)(size_t)i, &cells[i]);

  /* One call, four loads; they begin on the loop in this order. */
  static const char *const names[CELLS] = {"ada", "grace", "edsger", "barbara"};
  lds_op ops[CELLS];
  memset(ops, 0, sizeof ops);
  for (int i = 0; i < CELLS; i++) {
    ops[i].op = LDS_OP_LOAD;
    ops[i].target = cells[i];
    ops[i].loader = loader;
    ops[i].data = names[i];
    ops[i].data_len = strlen(names[i]);
  }
  int32_t results[CELLS];
  int accepted = lds_runtime_submit(rt, ops, CELLS, results);
  printf("first batch: %d of %d accepted\n", accepted, CELLS);
  if (accepted != CELLS) return 1;
  wait_settled(CELLS);

  /* Good and bad calls together: an unknown cell, a cancel with nothing
   * running, a job id that never was one, and a last load. */
  lds_op mixed[4];
  memset(mixed, 0, sizeof mixed);
  mixed[0] = (lds_op){.op = LDS_OP_LOAD, .target = 999999, .loader = loader, .data = "x", .data_len = 1};
  mixed[1] = (lds_op){.op = LDS_OP_CANCEL, .target = cells[0]};
  mixed[2] = (lds_op){.op = LDS_OP_SUCCEED, .target = 999999, .data = "v", .data_len = 1};
  mixed[3] = (lds_op){.op = LDS_OP_LOAD, .target = cells[1], .loader = loader, .data = "again", .data_len = 5};
  accepted = lds_runtime_submit(rt, mixed, 4, results);
  printf("second batch: %d of 4 accepted\n", accepted);
  for (int i = 0; i < 4; i++) printf("  call %d: %s\n", i, lds_strerror(results[i]));
  int expected[4] = {LDS_ENOENT, LDS_OK, LDS_ENOENT, LDS_OK};
  for (int i = 0; i < 4; i++)
    if (results[i] != expected[i]) return 1;
  wait_settled(CELLS + 1);

  lds_runtime_free(rt);
  return accepted == 2 ? 0 : 1;
}
