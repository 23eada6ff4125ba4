/* http_request.c — which request a state answers, read from the event: the
 * host keeps no copy of its URLs; lds_http_request_decode gives back the
 * method, URL, headers and body that the load was given.
 *
 *   usage: http_request BASE_URL   (the test server, Tests/support/http_server.py) */
#include <loadstate.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int settled = 0; /* loads that ended */
static const char *base; /* printed URLs leave it out: its port changes */

static void on_event(const lds_event *e, void *user_data) {
  (void)user_data;
  if (e->type != LDS_EVENT_STATE || e->status == LDS_LOADING) return;
  lds_http_request req;
  if (lds_http_request_decode(e->request, e->request_len, &req) != LDS_OK) return;
  const char *path = req.url + strlen(base); /* the URL less the server's address */
  if (e->status == LDS_LOADED)
    printf("loaded: %s %s", req.method, path);
  else
    printf("error %d: %s %s", e->error_code, req.method, path);
  for (size_t i = 0; i < req.header_count; i++) printf(", %s", req.headers[i]);
  if (req.body_len > 0) printf(", body \"%.*s\"", (int)req.body_len, (const char *)req.body);
  printf("\n");
  lds_http_request_clear(&req); /* the decoded copies */

  pthread_mutex_lock(&lock);
  settled++;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&lock);
}

/* Loads req in the cell and waits until it has ended. */
static void load(lds_runtime *rt, lds_id cell, lds_id http, const lds_http_request *req, int count) {
  void *encoded;
  size_t len;
  if (lds_http_request_encode(req, &encoded, &len) != LDS_OK) return;
  lds_loadable_load(rt, cell, http, encoded, len, NULL);
  lds_free(encoded); /* the load copied it */
  pthread_mutex_lock(&lock);
  while (settled < count) pthread_cond_wait(&changed, &lock);
  pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  base = argv[1];
  char echo_url[512], missing_url[512];
  snprintf(echo_url, sizeof echo_url, "%s/echo", base);
  snprintf(missing_url, sizeof missing_url, "%s/status/404", base);

  lds_runtime *rt;
  lds_id http, cell;
  if (lds_runtime_new(NULL, &rt) != LDS_OK) return 1;
  lds_http_loader_new(rt, NULL, &http);
  lds_loadable_new(rt, on_event, NULL, &cell);

  const char *const headers[] = {"Content-Type: text/plain"};
  lds_http_request post = LDS_HTTP_REQUEST_INIT;
  post.method = "POST";
  post.url = echo_url;
  post.headers = headers;
  post.header_count = 1;
  post.body = "ping";
  post.body_len = 4;
  load(rt, cell, http, &post, 1);

  lds_http_request get = LDS_HTTP_REQUEST_INIT;
  get.url = missing_url;
  load(rt, cell, http, &get, 2);

  lds_runtime_free(rt);
  return 0;
}
