/* http_revalidate.c — an http load through a memory cache, twice. The
 * first load stores the response with its ETag; the second sends it back
 * (If-None-Match), the server answers 304 Not Modified, and the cell shows
 * the stored body flagged FROM_CACHE | REVALIDATED.
 *
 *   usage: http_revalidate BASE_URL   (the test server, Tests/support/http_server.py) */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int settled = 0; /* loads that ended */

static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE) return;
  if (e->status == LDS_LOADING) {
    printf("loading\n");
    return;
  }
  lds_http_response r;
  if (e->status == LDS_LOADED && lds_http_response_decode(e->value, e->value_len, &r) == LDS_OK)
    printf("loaded: %d \"%.*s\"%s%s\n", r.status, (int)r.body_len, (const char *)r.body,
           e->flags & LDS_FLAG_FROM_CACHE ? " from-cache" : "",
           e->flags & LDS_FLAG_REVALIDATED ? " revalidated" : "");
  else
    printf("error: %s\n", e->error_message ? e->error_message : "?");
  pthread_mutex_lock(&lock);
  settled++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

static void wait_for(int count) {
  pthread_mutex_lock(&lock);
  while (settled < count) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  char url[512];
  snprintf(url, sizeof url, "%s/cached/guide?etag=%%22v1%%22", argv[1]);

  lds_runtime *rt;
  lds_id http, cache, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_http_loader_new(rt, NULL, &http);
  lds_memory_cache_new(rt, NULL, &cache);
  lds_loadable_new(rt, on_event, NULL, &cell);

  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  void *encoded;
  size_t len;
  if (lds_http_request_encode(&req, &encoded, &len) != LDS_OK) return 1;

  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.cache = cache; /* the request is the key; the policy: always ask the server */
  opts.cache_policy = LDS_POLICY_LOAD_ONLY;

  lds_loadable_load(rt, cell, http, encoded, len, &opts); /* 200, stored */
  wait_for(1);
  lds_loadable_load(rt, cell, http, encoded, len, &opts); /* 304: the stored body */
  wait_for(2);
  lds_free(encoded);

  lds_runtime_free(rt);
  return 0;
}
