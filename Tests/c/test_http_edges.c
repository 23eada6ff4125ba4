/*
 * test_http_edges.c — the http loader at its edges: requests that would
 * write lines of their own into the HTTP request are refused.
 */

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
