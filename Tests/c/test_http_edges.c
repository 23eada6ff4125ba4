/*
 * test_http_edges.c — the http loader at its edges: requests that would
 * write lines of their own into the HTTP request are refused, and
 * connection failures keep their errno when the process runs out of file
 * descriptors, and the error of a status outside 2xx carries the response.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Encodes req and yields the return code (freeing any buffer). */
static int encode(const lds_http_request *req) {
  void *buf = NULL;
  size_t len = 0;
  int rc = lds_http_request_encode(req, &buf, &len);
  lds_free(buf);
  return rc;
}

static int encode_method(const char *method) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = "http://127.0.0.1/";
  req.method = method;
  return encode(&req);
}

static int encode_url(const char *url) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  return encode(&req);
}

static int encode_header(const char *line) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = "http://127.0.0.1/";
  const char *headers[] = {"X-Fine: yes", line};
  req.headers = headers;
  req.header_count = 2;
  return encode(&req);
}

/* Since 0.4: HTTP/2 or HTTP/1.1 only (not both), and a CA file, which a
 * caller built against the first version of the struct does not have. */
TEST(http_encode_takes_a_version_flag_and_a_ca_file_when_its_size_has_one) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = "https://127.0.0.1/";
  req.flags = LDS_HTTP_HTTP2;
  CHECK_RC(encode(&req), LDS_OK);
  req.flags = LDS_HTTP_HTTP1 | LDS_HTTP_NO_COMPRESSION;
  CHECK_RC(encode(&req), LDS_OK);
  req.flags = LDS_HTTP_HTTP2 | LDS_HTTP_HTTP1;
  CHECK_RC(encode(&req), LDS_EINVAL);
  req.flags = LDS_HTTP_NO_HEURISTIC_FRESHNESS | LDS_HTTP_HTTP1;
  CHECK_RC(encode(&req), LDS_OK);
  req.flags = 1u << 6;
  CHECK_RC(encode(&req), LDS_EINVAL);
  req.flags = 0;
  void *plain = NULL, *with_ca = NULL, *old = NULL;
  size_t plain_len = 0, with_ca_len = 0, old_len = 0;
  REQUIRE_RC(lds_http_request_encode(&req, &plain, &plain_len), LDS_OK);
  req.ca_file = "/etc/ssl/certs/ca-certificates.crt";
  REQUIRE_RC(lds_http_request_encode(&req, &with_ca, &with_ca_len), LDS_OK);
  CHECK_EQ(with_ca_len, plain_len + 4 + strlen(req.ca_file));
  CHECK(memcmp(with_ca, plain, plain_len) == 0);
  /* The first version's size ends before ca_file: it is not read. */
  req.size = (uint32_t)offsetof(lds_http_request, ca_file);
  REQUIRE_RC(lds_http_request_encode(&req, &old, &old_len), LDS_OK);
  CHECK(old_len == plain_len && memcmp(old, plain, plain_len) == 0);
  req.size = (uint32_t)offsetof(lds_http_request, ca_file) - 1;
  CHECK_RC(encode(&req), LDS_EINVAL);
  lds_free(plain);
  lds_free(with_ca);
  lds_free(old);
}

TEST(http_encode_refuses_a_method_that_is_not_a_token) {
  const char *good[] = {"GET", "get", "PROPFIND", "M-SEARCH", "X!#$%&'*+.^_`|~1"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_RC(encode_method(good[i]), LDS_OK);
  const char *bad[] = {"", "GET / HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "GET\n", "G ET", "GET\t",
                       "GE:T", "G\"ET", "G(ET)", "GET\x7f", "G\x01T", "G\xc3\xa9T"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (encode_method(bad[i]) != LDS_EINVAL) check_fail(__FILE__, __LINE__, "method %zu accepted", i);
  }
}

TEST(http_encode_refuses_a_url_with_control_characters) {
  CHECK_RC(encode_url("http://127.0.0.1/a?b=c#d"), LDS_OK);
  CHECK_RC(encode_url("http://127.0.0.1/caf\xc3\xa9"), LDS_OK);
  const char *bad[] = {"http://127.0.0.1/\r\nX-Injected: 1", "http://127.0.0.1/\n", "http://127.0.0.1/ a",
                       "http://127.0.0.1/\t", "http://127.0.0.1/\x7f", "http://127.0.0.1/\x1b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (encode_url(bad[i]) != LDS_EINVAL) check_fail(__FILE__, __LINE__, "url %zu accepted", i);
  }
}

TEST(http_encode_refuses_a_header_line_that_is_not_name_colon_value) {
  const char *good[] = {"X-A: b", "X-A:b", "X-A: b\tc", "User-Agent:", "X-Latin: caf\xc3\xa9", "x: \"q\" (c)"};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) CHECK_RC(encode_header(good[i]), LDS_OK);
  const char *bad[] = {"X-A: b\r\nX-Injected: 1", "X-A: b\n", "X-A: b\r", "no colon", "", ": no name",
                       "X A: b", "X-A : b", "X\x01: b", "X-A: b\x01", "X-A: b\x7f", "X-A; b", "(X): b"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (encode_header(bad[i]) != LDS_EINVAL) check_fail(__FILE__, __LINE__, "header %zu accepted", i);
  }
}

/* A port on 127.0.0.1 nothing listens on: bound, then closed. */
/* An http loader without a proxy on rt, and a GET of
 * http://127.0.0.1:port<path> encoded into *buf (free with lds_free). */
static bool local_get(lds_runtime *rt, int port, const char *path, lds_id *loader, void **buf, size_t *len) {
  lds_http_options opts = LDS_HTTP_OPTIONS_INIT;
  opts.proxy = "";
  if (!CHECK_RC(lds_http_loader_new(rt, &opts, loader), LDS_OK)) return false;
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  return CHECK_RC(lds_http_request_encode(&req, buf, len), LDS_OK);
}

/* A free port of 127.0.0.1 with nothing listening on it; the port, or -1. */
static int closed_port(void) {
  int s = -1;
  int port = listen_local(&s, 1);
  if (port > 0) close(s);
  return port;
}

/* The lowest descriptor not open yet: how many this process uses. */
static int descriptors_in_use(void) {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

#define EDGE_LOADS 400

typedef struct edge_loads {
  recorder rec[EDGE_LOADS];
  lds_id cell[EDGE_LOADS];
} edge_loads;

/* Loads beyond the descriptors the process may open: a load whose socket
 * cannot be made fails in LDS_DOMAIN_OS with EMFILE (not LDS_EIO), the
 * others with ECONNREFUSED. (The test runs in a child process of its own:
 * its lowered limit stays there.) */
TEST(http_connections_out_of_descriptors_fail_with_their_errno) {
  int port = closed_port();
  REQUIRE(port > 0);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  REQUIRE(rt != NULL);
  lds_id loader = 0;
  void *buf = NULL;
  size_t len = 0;
  REQUIRE(local_get(rt, port, "/", &loader, &buf, &len));
  edge_loads *loads = calloc(1, sizeof *loads);
  REQUIRE(loads != NULL);
  for (int i = 0; i < EDGE_LOADS; i++) {
    rec_init(&loads->rec[i], rt);
    loads->cell[i] = cell_new(rt, &loads->rec[i]);
  }
  /* Room for some of the loads' sockets only. */
  struct rlimit saved, limit;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
  limit = saved;
  limit.rlim_cur = (rlim_t)descriptors_in_use() + EDGE_LOADS / 4;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &limit) == 0);
  /* One work item for the loop: every transfer starts before any ends. */
  lds_op ops[EDGE_LOADS];
  memset(ops, 0, sizeof ops);
  for (int i = 0; i < EDGE_LOADS; i++) {
    ops[i].op = LDS_OP_LOAD;
    ops[i].target = loads->cell[i];
    ops[i].loader = loader;
    ops[i].data = buf;
    ops[i].data_len = len;
  }
  CHECK_EQ(lds_runtime_submit(rt, ops, EDGE_LOADS, NULL), EDGE_LOADS);
  int refused = 0, out_of_descriptors = 0;
  for (int i = 0; i < EDGE_LOADS; i++) {
    recorder *rec = &loads->rec[i];
    if (!WAIT_FOR(rec->count >= 2 && rec->events[rec->count - 1]->ev.status == LDS_ERROR)) break;
    const lds_event *e = rec_last(rec);
    if (e->error_domain != LDS_DOMAIN_OS) {
      check_fail(__FILE__, __LINE__, "load %d: domain %d code %d (%s)", i, e->error_domain, e->error_code,
                 e->error_message ? e->error_message : "");
    } else if (e->error_code == ECONNREFUSED) {
      refused++;
    } else if (e->error_code == EMFILE) {
      out_of_descriptors++;
    } else {
      check_fail(__FILE__, __LINE__, "load %d: errno %d", i, e->error_code);
    }
  }
  CHECK(refused > 0);
  CHECK(out_of_descriptors > 0);
  rt_free(rt);
  CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
  for (int i = 0; i < EDGE_LOADS; i++) rec_destroy(&loads->rec[i]);
  free(loads);
  lds_free(buf);
}

/* A server on 127.0.0.1 that answers one connection with a fixed response. */
typedef struct one_answer {
  int listener;
  const char *response;
} one_answer;

static void *answer_once(void *data) {
  one_answer *server = data;
  int conn = accept(server->listener, NULL, NULL);
  if (conn < 0) return NULL;
  char request[4096];
  size_t got = 0;
  while (got < sizeof request - 1) {
    ssize_t n = read(conn, request + got, sizeof request - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
    request[got] = 0;
    if (strstr(request, "\r\n\r\n")) break;
  }
  size_t length = strlen(server->response);
  for (size_t sent = 0; sent < length;) {
    ssize_t n = write(conn, server->response + sent, length - sent);
    if (n <= 0) break;
    sent += (size_t)n;
  }
  close(conn);
  return NULL;
}

TEST(http_error_event_of_a_status_outside_2xx_carries_the_response) {
  one_answer server = {-1, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nX-Reason: gone\r\n"
                           "Connection: close\r\n\r\nnot here!"};
  int port = listen_local(&server.listener, 1);
  REQUIRE(port > 0);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, answer_once, &server) == 0);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  REQUIRE(rt != NULL);
  lds_id loader = 0;
  void *buf = NULL;
  size_t len = 0;
  REQUIRE(local_get(rt, port, "/missing", &loader, &buf, &len));
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  REQUIRE_RC(lds_loadable_load(rt, cell, loader, buf, len, NULL), LDS_OK);
  REQUIRE(WAIT_FOR(rec.count >= 2));
  const lds_event *e = rec_last(&rec);
  CHECK_EQ(e->status, LDS_ERROR);
  CHECK_EQ(e->error_domain, LDS_DOMAIN_HTTP);
  CHECK_EQ(e->error_code, 404);
  REQUIRE(e->value != NULL);
  lds_http_response response;
  REQUIRE_RC(lds_http_response_decode(e->value, e->value_len, &response), LDS_OK);
  CHECK_EQ(response.status, 404);
  CHECK_BYTES(response.body, response.body_len, "not here!");
  char headers[256] = {0};
  memcpy(headers, response.headers, response.headers_len < sizeof headers - 1 ? response.headers_len : 0);
  CHECK(strstr(headers, "X-Reason: gone") != NULL);
  lds_snapshot s;
  REQUIRE_RC(lds_loadable_get(rt, cell, &s), LDS_OK);
  CHECK_EQ(s.status, LDS_ERROR);
  CHECK(s.value != NULL && s.value_len == e->value_len && memcmp(s.value, e->value, s.value_len) == 0);
  lds_snapshot_clear(&s);
  rt_free(rt);
  rec_destroy(&rec);
  pthread_join(thread, NULL);
  close(server.listener);
  lds_free(buf);
}

/* Answers two connections, one after the other, with the two responses. */
typedef struct answers {
  one_answer server[2];
} answers;

static void *answer_twice(void *data) {
  answers *a = data;
  answer_once(&a->server[0]);
  answer_once(&a->server[1]);
  return NULL;
}

/* Loads url on a new cell; the settled event's status (LDS_LOADED or LDS_ERROR). */
static int32_t load_settled(lds_runtime *rt, lds_id loader, const void *buf, size_t len) {
  recorder rec;
  rec_init(&rec, rt);
  lds_id cell = cell_new(rt, &rec);
  int32_t status = -1;
  if (CHECK_RC(lds_loadable_load(rt, cell, loader, buf, len, NULL), LDS_OK) && WAIT_FOR(rec.count >= 2))
    status = rec_last(&rec)->status;
  CHECK_RC(lds_loadable_free(rt, cell), LDS_OK);
  rec_destroy(&rec);
  return status;
}

/* A response whose first header line is folded, after a transfer that kept
 * headers: with a libcurl older than 8.1.0 a reused easy handle would unfold
 * it into the previous transfer's freed last header (curl issue 11101), which
 * test-valgrind reports. The loader reuses handles only where that is fixed. */
TEST(http_a_folded_first_header_after_a_transfer_touches_no_freed_memory) {
  answers a = {{{-1, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Long-Header: a value that is long enough\r\n"
                      "Connection: close\r\n\r\nfirst"},
                {-1, "HTTP/1.1 200 OK\r\n \tfolded: onto nothing\r\nContent-Length: 6\r\n"
                      "Connection: close\r\n\r\nsecond"}}};
  int port = listen_local(&a.server[0].listener, 1);
  REQUIRE(port > 0);
  a.server[1].listener = a.server[0].listener;
  pthread_t thread;
  REQUIRE(pthread_create(&thread, NULL, answer_twice, &a) == 0);
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  REQUIRE(rt != NULL);
  lds_id loader = 0;
  void *buf = NULL;
  size_t len = 0;
  REQUIRE(local_get(rt, port, "/", &loader, &buf, &len));
  CHECK_EQ(load_settled(rt, loader, buf, len), LDS_LOADED);
  int32_t second = load_settled(rt, loader, buf, len);
  CHECK(second == LDS_LOADED || second == LDS_ERROR);
  rt_free(rt);
  pthread_join(thread, NULL);
  close(a.server[0].listener);
  lds_free(buf);
}
