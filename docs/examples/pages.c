/* pages.c — an infinite list: a pages cell loads the first page, then the
 * next ones with the cursor each page returns, until a page has none. */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int pages_loaded = 0;

/* Three pages of three items; a page's cursor is the number of its first item. */
static void list(lds_runtime *rt, lds_id job, const void *req, size_t len, void *data) {
  (void)data;
  lds_page_request page;
  if (lds_page_request_decode(req, len, &page) != LDS_OK) {
    lds_job_fail_final(rt, job, 1, "not a page request");
    return;
  }
  int first = page.cursor ? ((const char *)page.cursor)[0] - '0' : 1;
  char items[32], next[2] = {(char)('0' + first + 3), 0};
  int n = snprintf(items, sizeof items, "%.*s %d-%d", (int)page.request_len,
                   (const char *)page.request, first, first + 2);
  if (first + 3 <= 9) lds_job_succeed_page(rt, job, items, (size_t)n, next, 1, NULL, 0);
  else lds_job_succeed_page(rt, job, items, (size_t)n, NULL, 0, NULL, 0); /* the last page */
}

static void on_page(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE || e->status != LDS_LOADED) return;
  printf("page %d: %.*s\n", e->kind, (int)e->value_len, (const char *)e->value);
  pthread_mutex_lock(&lock);
  pages_loaded++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

static void wait_for(int count) {
  pthread_mutex_lock(&lock);
  while (pages_loaded < count) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(void) {
  lds_runtime *rt;
  lds_id loader, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_loader_new(rt, list, NULL, NULL, &loader);
  lds_pages_options po = LDS_PAGES_OPTIONS_INIT;
  po.on_event = on_page;
  lds_pages_new(rt, &po, &cell);

  lds_pages_load(rt, cell, loader, "items", 5, NULL);
  int count = 1;
  wait_for(count);
  while (lds_pages_load_next(rt, cell) == LDS_OK) wait_for(++count);

  size_t held;
  lds_pages_count(rt, cell, &held);
  int more = lds_pages_has_more(rt, cell, 1);
  printf("%zu pages; more after the last: %s\n", held, more ? "yes" : "no");
  lds_runtime_free(rt);
  return 0;
}
