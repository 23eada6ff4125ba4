/* write.c — writes with optimistic values. A list cell shows what a cache
 * key holds; each write (a process run) shows its new list under that key
 * at once. The first write fails and its value is rolled back; the second
 * succeeds and its value stays. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int runs_over = 0, list_loaded = 0;

/* Loads the list: the server's answer would go here. */
static void load_list(lds_runtime *rt, lds_id job, const void *req, size_t len, void *data) {
  (void)req, (void)len, (void)data;
  lds_job_succeed(rt, job, "milk", 4);
}

/* Saves: the request says whether the server accepts the write. */
static void save(lds_runtime *rt, lds_id job, const void *req, size_t len, void *data) {
  (void)data;
  if (len == 4 && memcmp(req, "fail", 4) == 0) lds_job_fail_final(rt, job, 409, "conflict");
  else lds_job_succeed(rt, job, NULL, 0);
}

static void on_list(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->status != LDS_LOADED) return;
  printf("list: %.*s%s%s\n", (int)e->value_len, (const char *)e->value,
         e->flags & LDS_FLAG_OPTIMISTIC ? " (optimistic)" : "",
         e->flags & LDS_FLAG_ROLLED_BACK ? " (rolled back)" : "");
  pthread_mutex_lock(&lock);
  list_loaded = 1;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

static void on_write(const lds_event *e, void *user_data) {
  (void)user_data;
  const char *names[] = {[LDS_IDLE] = "idle", [LDS_RUNNING] = "running",
                         [LDS_FINISHED] = "finished", [LDS_FAILED] = "failed"};
  printf("write: %s", names[e->status]);
  if (e->status == LDS_FAILED) printf(" (%d %s)", e->error_code, e->error_message);
  printf("\n");
  if (e->status != LDS_FINISHED && e->status != LDS_FAILED) return;
  pthread_mutex_lock(&lock);
  runs_over++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

static void write_list(lds_runtime *rt, lds_id writer, lds_id saver, lds_id cache,
                       const char *request, const char *shown, int count) {
  lds_cache_update update = {cache, "list", 4, shown, strlen(shown)};
  lds_mutation_options m = LDS_MUTATION_OPTIONS_INIT;
  m.optimistic = &update;
  m.optimistic_count = 1;
  lds_process_mutate(rt, writer, 0, saver, request, strlen(request), NULL, &m);
  pthread_mutex_lock(&lock);
  while (runs_over < count) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(void) {
  lds_runtime *rt;
  lds_id cache, lister, saver, list, writer;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_memory_cache_new(rt, NULL, &cache);
  lds_loader_new(rt, load_list, NULL, NULL, &lister);
  lds_loader_new(rt, save, NULL, NULL, &saver);
  lds_loadable_new(rt, on_list, NULL, &list);
  lds_process_new(rt, on_write, NULL, &writer);

  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.cache = cache;
  opts.cache_key = "list";
  opts.cache_key_len = 4;
  lds_loadable_load(rt, list, lister, "list", 4, &opts);
  pthread_mutex_lock(&lock);
  while (!list_loaded) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);

  write_list(rt, writer, saver, cache, "fail", "milk, eggs", 1);
  write_list(rt, writer, saver, cache, "ok", "milk, bread", 2);

  lds_runtime_free(rt);
  return 0;
}
