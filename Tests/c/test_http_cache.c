/*
 * test_http_cache.c — the http loader with a cache, through the C API:
 * a stored response is revalidated with its validators, and a 304 keeps
 * the stored body (flagged LDS_FLAG_FROM_CACHE | LDS_FLAG_REVALIDATED)
 * without the body crossing the wire again.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* A server on 127.0.0.1 for `answers` connections, one request each: a
 * request carrying If-None-Match with the current ETag gets a 304, any
 * other the body. It counts bodies sent and keeps the last request. */
typedef struct etag_server {
  int listener;
  int answers;
  const char *etag;       /* with its quotes */
  const char *body;
  const char *extra;      /* more header lines of every answer ("" for none) */
  atomic_int bodies;
  atomic_int requests;
  char last_request[4096];
} etag_server;

static void *serve_etag(void *data) {
  etag_server *server = data;
  for (int i = 0; i < server->answers; i++) {
    int conn = accept(server->listener, NULL, NULL);
    if (conn < 0) return NULL;
    char request[4096];
    size_t got = 0;
    request[0] = 0;
    while (got < sizeof request - 1) {
      ssize_t n = read(conn, request + got, sizeof request - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
      request[got] = 0;
      if (strstr(request, "\r\n\r\n")) break;
    }
    int n = atomic_fetch_add(&server->requests, 1) + 1;
    memcpy(server->last_request, request, got + 1);
    char condition[256];
    snprintf(condition, sizeof condition, "If-None-Match: %s\r\n", server->etag);
    char answer[1024];
    if (strstr(request, condition)) {
      snprintf(answer, sizeof answer,
               "HTTP/1.1 304 Not Modified\r\nETag: %s\r\nX-Answer: %d\r\n%sConnection: close\r\n\r\n",
               server->etag, n, server->extra);
    } else {
      atomic_fetch_add(&server->bodies, 1);
      snprintf(answer, sizeof answer,
               "HTTP/1.1 200 OK\r\nETag: %s\r\nX-Answer: %d\r\n%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
               server->etag, n, server->extra, strlen(server->body), server->body);
    }
    size_t length = strlen(answer);
    for (size_t sent = 0; sent < length;) {
      ssize_t w = write(conn, answer + sent, length - sent);
      if (w <= 0) break;
      sent += (size_t)w;
    }
    close(conn);
  }
  return NULL;
}

/* Loads url through `cache` under key "page" with `policy` (and load
 * `flags`); waits for the settled event and returns how many events the
 * cell had. */
static size_t cached_get_flags(lds_runtime *rt, lds_id loader, lds_id cache, const char *url, uint32_t policy,
                               uint32_t flags, recorder *rec) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  void *buf = NULL;
  size_t len = 0;
  if (!CHECK_RC(lds_http_request_encode(&req, &buf, &len), LDS_OK)) return 0;
  rec_init(rec, rt);
  lds_id cell = cell_new(rt, rec);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.cache = cache;
  o.cache_key = "page";
  o.cache_key_len = 4;
  o.cache_policy = policy;
  o.flags = flags;
  CHECK_RC(lds_loadable_load(rt, cell, loader, buf, len, &o), LDS_OK);
  lds_free(buf);
  WAIT_FOR(rec->count >= 1 && (rec_last(rec)->status == LDS_LOADED || rec_last(rec)->status == LDS_ERROR) &&
           !(rec_last(rec)->flags & LDS_FLAG_REFRESHING));
  return rec_count(rec);
}

static size_t cached_get(lds_runtime *rt, lds_id loader, lds_id cache, const char *url, uint32_t policy,
                         recorder *rec) {
  return cached_get_flags(rt, loader, cache, url, policy, 0, rec);
}

/* A memory cache and an http loader without a proxy. */
static void cache_and_loader(lds_runtime *rt, lds_id *cache, lds_id *loader) {
  CHECK_RC(lds_memory_cache_new(rt, NULL, cache), LDS_OK);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = "";
  CHECK_RC(lds_http_loader_new(rt, &ho, loader), LDS_OK);
}

TEST(http_a_stored_response_is_revalidated_and_a_304_keeps_its_body) {
  etag_server server = {.answers = 2, .etag = "\"v1\"", .body = "the stored body", .extra = ""};
  int port = listen_local(&server.listener, 8);
  REQUIRE(port > 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, serve_etag, &server) == 0);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char path[] = "/tmp/lds-http-cache-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  lds_persistent_cache_options po = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  po.path = path;
  po.flags = LDS_CACHE_REPLACE_DAMAGED;
  lds_id cache;
  REQUIRE_RC(lds_persistent_cache_new(rt, &po, &cache), LDS_OK);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = "";
  lds_id loader;
  REQUIRE_RC(lds_http_loader_new(rt, &ho, &loader), LDS_OK);
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/page", port);

  recorder first;
  cached_get(rt, loader, cache, url, LDS_POLICY_LOAD_ONLY, &first);
  const lds_event *e = rec_last(&first);
  CHECK_EQ(e->status, LDS_LOADED);
  CHECK_EQ(e->flags & (LDS_FLAG_FROM_CACHE | LDS_FLAG_REVALIDATED), 0);

  recorder second;
  size_t events = cached_get(rt, loader, cache, url, LDS_POLICY_CACHE_THEN_LOAD, &second);
  CHECK_EQ(events, 2);
  /* fresh_ms is 0: the cached value is shown stale while it is revalidated. */
  CHECK_EQ(rec_at(&second, 0)->flags, LDS_FLAG_FROM_CACHE | LDS_FLAG_STALE | LDS_FLAG_REFRESHING);
  e = rec_last(&second);
  CHECK_EQ(e->status, LDS_LOADED);
  CHECK_EQ(e->flags, LDS_FLAG_FROM_CACHE | LDS_FLAG_REVALIDATED);
  lds_http_response response;
  REQUIRE_RC(lds_http_response_decode(e->value, e->value_len, &response), LDS_OK);
  CHECK_EQ(response.status, 200);
  CHECK_BYTES(response.body, response.body_len, "the stored body");
  CHECK(strstr(server.last_request, "If-None-Match: \"v1\"\r\n") != NULL);
  CHECK_EQ(atomic_load(&server.bodies), 1);
  CHECK_EQ(atomic_load(&server.requests), 2);

  /* The entry took the 304's header lines. */
  lds_cache_value v;
  REQUIRE_RC(lds_cache_get(rt, cache, "page", 4, &v), 1);
  REQUIRE_RC(lds_http_response_decode(v.value, v.value_len, &response), LDS_OK);
  char headers[512] = {0};
  memcpy(headers, response.headers, response.headers_len < sizeof headers - 1 ? response.headers_len : 0);
  CHECK(strstr(headers, "X-Answer: 2\r\n") != NULL);
  CHECK(strstr(headers, "X-Answer: 1\r\n") == NULL);
  lds_cache_value_clear(&v);

  rt_free(rt);
  rec_destroy(&first);
  rec_destroy(&second);
  pthread_join(thread, NULL);
  close(server.listener);
  unlink(path);
}

/* Cache-Control: no-store keeps a response out of the cache, unless the
 * load sets LDS_LOAD_IGNORE_CACHE_HEADERS. */
TEST(http_no_store_is_not_stored_unless_the_load_ignores_cache_headers) {
  etag_server server = {.answers = 2, .etag = "\"ns\"", .body = "secret", .extra = "Cache-Control: no-store\r\n"};
  int port = listen_local(&server.listener, 8);
  REQUIRE(port > 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, serve_etag, &server) == 0);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_id cache, loader;
  cache_and_loader(rt, &cache, &loader);
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/secret", port);
  lds_cache_value v;

  recorder first;
  cached_get(rt, loader, cache, url, LDS_POLICY_LOAD_ONLY, &first);
  CHECK_EQ(rec_last(&first)->status, LDS_LOADED);
  CHECK_RC(lds_cache_get(rt, cache, "page", 4, &v), 0);

  recorder second;
  cached_get_flags(rt, loader, cache, url, LDS_POLICY_LOAD_ONLY, LDS_LOAD_IGNORE_CACHE_HEADERS, &second);
  CHECK_EQ(rec_last(&second)->status, LDS_LOADED);
  REQUIRE_RC(lds_cache_get(rt, cache, "page", 4, &v), 1);
  lds_cache_value_clear(&v);

  rt_free(rt);
  rec_destroy(&first);
  rec_destroy(&second);
  pthread_join(thread, NULL);
  close(server.listener);
}
