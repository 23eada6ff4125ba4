/* test_request_decode.c — lds_exec_request_decode and lds_http_request_decode:
 * round trips of every field shape, truncations, oversized and malformed
 * encodings, NULL arguments. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---- helpers ---- */

/* Encodes then decodes an exec request; checks the decode is LDS_OK. */
static bool exec_round_trip(const lds_exec_request *req, lds_exec_request *out) {
  void *buf = NULL;
  size_t len = 0;
  if (!CHECK_RC(lds_exec_request_encode(req, &buf, &len), LDS_OK)) return false;
  bool ok = CHECK_RC(lds_exec_request_decode(buf, len, out), LDS_OK);
  lds_free(buf);
  return ok;
}

static bool http_round_trip(const lds_http_request *req, lds_http_request *out) {
  void *buf = NULL;
  size_t len = 0;
  if (!CHECK_RC(lds_http_request_encode(req, &buf, &len), LDS_OK)) return false;
  bool ok = CHECK_RC(lds_http_request_decode(buf, len, out), LDS_OK);
  lds_free(buf);
  return ok;
}

/* Two NULL-terminated lists hold the same strings (both may be NULL). */
static void check_list(const char *const *got, const char *const *want) {
  if (want == NULL) {
    CHECK(got == NULL);
    return;
  }
  REQUIRE(got != NULL);
  size_t i = 0;
  for (; want[i] != NULL; i++) {
    REQUIRE(got[i] != NULL);
    CHECK_STR(got[i], want[i]);
  }
  CHECK(got[i] == NULL);
}

static void check_exec(const lds_exec_request *got, const lds_exec_request *want) {
  CHECK_EQ(got->size, sizeof(lds_exec_request));
  check_list(got->argv, want->argv);
  check_list(got->env, want->env);
  if (want->cwd == NULL) CHECK(got->cwd == NULL);
  else if (got->cwd != NULL) CHECK_STR(got->cwd, want->cwd);
  else CHECK(got->cwd != NULL);
}

/* Checks every field of a decoded http request against the one encoded;
 * `redirects` and `flags` are what the decoding must hold. */
static void check_http(const lds_http_request *got, const lds_http_request *want, uint32_t redirects,
                       uint32_t flags) {
  CHECK_EQ(got->size, sizeof(lds_http_request));
  CHECK_STR(got->method, want->method ? want->method : "GET");
  CHECK_STR(got->url, want->url);
  CHECK_EQ(got->header_count, want->header_count);
  REQUIRE(got->headers != NULL);
  for (size_t i = 0; i < want->header_count && i < got->header_count; i++) CHECK_STR(got->headers[i], want->headers[i]);
  CHECK(got->headers[got->header_count] == NULL);
  CHECK(got->body != NULL);
  CHECK_EQ(got->body_len, want->body_len);
  if (got->body_len == want->body_len && want->body_len > 0) CHECK(memcmp(got->body, want->body, want->body_len) == 0);
  CHECK_EQ(got->timeout_ms, want->timeout_ms);
  CHECK_EQ(got->max_body, want->max_body);
  CHECK_EQ(got->max_redirects, redirects);
  CHECK_EQ(got->flags, flags);
  if (want->ca_file == NULL) CHECK(got->ca_file == NULL);
  else if (got->ca_file != NULL) CHECK_STR(got->ca_file, want->ca_file);
  else CHECK(got->ca_file != NULL);
}

/* Re-encodes a decoded request and checks the bytes are `want`. */
static void check_http_reencodes(const lds_http_request *decoded, const void *want, size_t want_len) {
  void *buf = NULL;
  size_t len = 0;
  REQUIRE_RC(lds_http_request_encode(decoded, &buf, &len), LDS_OK);
  CHECK_EQ(len, want_len);
  if (len == want_len) CHECK(memcmp(buf, want, len) == 0);
  lds_free(buf);
}

static void check_exec_reencodes(const lds_exec_request *decoded, const void *want, size_t want_len) {
  void *buf = NULL;
  size_t len = 0;
  REQUIRE_RC(lds_exec_request_encode(decoded, &buf, &len), LDS_OK);
  CHECK_EQ(len, want_len);
  if (len == want_len) CHECK(memcmp(buf, want, len) == 0);
  lds_free(buf);
}

/* Whether every byte of a struct is zero. */
static bool all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i] != 0) return false;
  return true;
}

/* A little-endian writer for hand-made encodings. */
typedef struct {
  unsigned char bytes[256];
  size_t len;
} wire;

static void w_raw(wire *w, const void *p, size_t n) {
  memcpy(w->bytes + w->len, p, n);
  w->len += n;
}
static void w_u32(wire *w, uint32_t v) {
  for (int i = 0; i < 4; i++) w->bytes[w->len++] = (unsigned char)(v >> (8 * i));
}
static void w_u64(wire *w, uint64_t v) {
  w_u32(w, (uint32_t)v);
  w_u32(w, (uint32_t)(v >> 32));
}
static void w_field(wire *w, const char *s, size_t n) {
  if (s == NULL) {
    w_u32(w, 0xFFFFFFFFu);
    return;
  }
  w_u32(w, (uint32_t)n);
  w_raw(w, s, n);
}
#define W_TEXT(w, s) w_field((w), (s), sizeof(s) - 1)

/* An http encoding by hand: method, url, one header, no body, numbers. */
static void http_by_hand(wire *w, const char *method, size_t method_len, const char *url, size_t url_len,
                         const char *header, size_t header_len) {
  w->len = 0;
  w_raw(w, "LDH1", 4);
  w_field(w, method, method_len);
  w_field(w, url, url_len);
  if (header) {
    w_u32(w, 1);
    w_field(w, header, header_len);
  } else {
    w_u32(w, 0);
  }
  w_field(w, "", 0);
  w_u32(w, 0);
  w_u64(w, 0);
  w_u32(w, 5);
  w_u32(w, 0);
}

/* ---- exec ---- */

TEST(test_exec_request_decode_round_trips) {
  lds_exec_request out;

  /* argv alone: env and cwd absent. */
  const char *const one[] = {"true", NULL};
  lds_exec_request r = LDS_EXEC_REQUEST_INIT;
  r.argv = one;
  if (exec_round_trip(&r, &out)) {
    check_exec(&out, &r);
    lds_exec_request_clear(&out);
    CHECK(all_zero(&out, sizeof out));
  }

  /* Every field, empty strings among them, and text beyond ASCII. */
  const char *const argv[] = {"printf", "", "%s\\n", "caf\xc3\xa9 \xe2\x9c\x93", NULL};
  const char *const env[] = {"A=1", "EMPTY=", "", NULL};
  r.argv = argv;
  r.env = env;
  r.cwd = "/tmp/d\xc3\xa9j\xc3\xa0";
  if (exec_round_trip(&r, &out)) {
    check_exec(&out, &r);
    lds_exec_request_clear(&out);
  }

  /* An empty environment is not an inherited one; an empty cwd is not
   * an absent one. */
  const char *const none[] = {NULL};
  r.env = none;
  r.cwd = "";
  if (exec_round_trip(&r, &out)) {
    check_exec(&out, &r);
    REQUIRE(out.env != NULL);
    CHECK(out.env[0] == NULL);
    lds_exec_request_clear(&out);
  }

  /* Large: 4,096 arguments and one of 1 MiB. */
  enum { COUNT = 4096, BIG = 1 << 20 };
  const char **many = calloc(COUNT + 1, sizeof *many);
  char *big = malloc(BIG + 1);
  REQUIRE(many != NULL && big != NULL);
  memset(big, 'x', BIG);
  big[BIG] = 0;
  for (size_t i = 0; i < COUNT; i++) many[i] = i % 2 ? "arg" : "";
  many[COUNT / 2] = big;
  r.argv = many;
  r.env = NULL;
  r.cwd = NULL;
  if (exec_round_trip(&r, &out)) {
    check_exec(&out, &r);
    lds_exec_request_clear(&out);
  }
  free(many);
  free(big);
}

TEST(test_exec_request_decode_refuses_every_truncation) {
  const char *const argv[] = {"sh", "-c", "echo hi", NULL};
  const char *const env[] = {"X=y", NULL};
  lds_exec_request r = LDS_EXEC_REQUEST_INIT;
  r.argv = argv;
  for (int shape = 0; shape < 3; shape++) {
    r.env = shape >= 1 ? env : NULL;
    r.cwd = shape >= 2 ? "/" : NULL;
    void *buf = NULL;
    size_t len = 0;
    REQUIRE_RC(lds_exec_request_encode(&r, &buf, &len), LDS_OK);
    lds_exec_request out;
    /* Each prefix in a buffer of its own, so that a read past it is seen
     * by the address sanitizer. */
    for (size_t n = 0; n < len; n++) {
      unsigned char *prefix = malloc(n ? n : 1);
      REQUIRE(prefix != NULL);
      memcpy(prefix, buf, n);
      memset(&out, 0xAB, sizeof out);
      if (!CHECK_RC(lds_exec_request_decode(prefix, n, &out), LDS_EINVAL))
        fprintf(stderr, "  shape %d, prefix of %zu bytes out of %zu\n", shape, n, len);
      CHECK(all_zero(&out, sizeof out));
      free(prefix);
    }
    if (CHECK_RC(lds_exec_request_decode(buf, len, &out), LDS_OK)) {
      check_exec(&out, &r);
      check_exec_reencodes(&out, buf, len);
      lds_exec_request_clear(&out);
    }
    lds_free(buf);
  }
}

TEST(test_exec_request_decode_refuses_malformed_input) {
  lds_exec_request out;
  wire w = {.len = 0};

  /* Not the magic. */
  CHECK_RC(lds_exec_request_decode("LDH1\0\0\0\0", 8, &out), LDS_EINVAL);
  /* No argv (absent), an empty argv. */
  w.len = 0;
  w_raw(&w, "LDX1", 4);
  w_u32(&w, 0xFFFFFFFFu);
  w_u32(&w, 0xFFFFFFFFu);
  w_u32(&w, 0xFFFFFFFFu);
  CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
  w.len = 0;
  w_raw(&w, "LDX1", 4);
  w_u32(&w, 0);
  w_u32(&w, 0xFFFFFFFFu);
  w_u32(&w, 0xFFFFFFFFu);
  CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
  /* A field longer than what follows; a list that counts more fields
   * than there are. */
  w.len = 0;
  w_raw(&w, "LDX1", 4);
  w_u32(&w, 1);
  w_u32(&w, 0xFFFFFFF0u);
  w_raw(&w, "ls", 2);
  CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
  w.len = 0;
  w_raw(&w, "LDX1", 4);
  w_u32(&w, 0xFFFFFFFEu);
  W_TEXT(&w, "ls");
  CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
  /* Not UTF-8, a NUL inside an argument, in env, in cwd. */
  static const char *const bad_args[] = {"\xff", "a\0b", "\xc3"};
  static const size_t bad_lengths[] = {1, 3, 1};
  for (int i = 0; i < 3; i++) {
    for (int where = 0; where < 3; where++) {
      w.len = 0;
      w_raw(&w, "LDX1", 4);
      w_u32(&w, 1);
      if (where == 0) w_field(&w, bad_args[i], bad_lengths[i]);
      else W_TEXT(&w, "ls");
      if (where == 1) {
        w_u32(&w, 1);
        w_field(&w, bad_args[i], bad_lengths[i]);
      } else {
        w_u32(&w, 0xFFFFFFFFu);
      }
      if (where == 2) w_field(&w, bad_args[i], bad_lengths[i]);
      else w_u32(&w, 0xFFFFFFFFu);
      memset(&out, 0xAB, sizeof out);
      CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
      CHECK(all_zero(&out, sizeof out));
    }
  }
  /* The same shape with good text decodes: the refusals above are the
   * text's. */
  w.len = 0;
  w_raw(&w, "LDX1", 4);
  w_u32(&w, 1);
  W_TEXT(&w, "ls");
  w_u32(&w, 1);
  W_TEXT(&w, "A=b");
  W_TEXT(&w, "/");
  if (CHECK_RC(lds_exec_request_decode(w.bytes, w.len, &out), LDS_OK)) {
    CHECK_STR(out.argv[0], "ls");
    CHECK_STR(out.env[0], "A=b");
    CHECK_STR(out.cwd, "/");
    lds_exec_request_clear(&out);
  }
}

TEST(test_exec_request_decode_bad_arguments) {
  lds_exec_request out;
  CHECK_RC(lds_exec_request_decode("LDX1", 4, NULL), LDS_EINVAL);
  CHECK_RC(lds_exec_request_decode(NULL, 4, &out), LDS_EINVAL);
  CHECK_RC(lds_exec_request_decode(NULL, 0, &out), LDS_EINVAL);
  CHECK_RC(lds_exec_request_decode("", 0, &out), LDS_EINVAL);
  /* Longer than LDS_VALUE_MAX: refused before a byte is read. */
  CHECK_RC(lds_exec_request_decode("LDX1", (size_t)LDS_VALUE_MAX + 1, &out), LDS_ETOOBIG);
  CHECK_RC(lds_exec_request_decode("LDX1", SIZE_MAX, &out), LDS_ETOOBIG);
  CHECK(all_zero(&out, sizeof out));
  lds_exec_request_clear(NULL);
  lds_exec_request_clear(&out); /* zeroed: nothing to release */
}

/* ---- http ---- */

TEST(test_http_request_decode_round_trips) {
  lds_http_request out;

  /* The least: a url; no method, headers or body. */
  lds_http_request r = LDS_HTTP_REQUEST_INIT;
  r.url = "http://example.invalid/";
  r.max_redirects = 3;
  if (http_round_trip(&r, &out)) {
    check_http(&out, &r, 3, 0);
    CHECK_EQ(out.header_count, 0);
    CHECK_EQ(out.body_len, 0);
    lds_http_request_clear(&out);
    CHECK(all_zero(&out, sizeof out));
  }
  /* max_redirects 0 is the default, 5. */
  r.max_redirects = 0;
  if (http_round_trip(&r, &out)) {
    check_http(&out, &r, 5, 0);
    lds_http_request_clear(&out);
  }

  /* Every field, at its largest numbers, a body with NUL bytes. */
  const char *const headers[] = {"Accept: text/plain", "X-Empty:", "X-Tab: a\tb", "X-Utf8: caf\xc3\xa9"};
  static const char body[] = {'a', 0, 'b', 0, (char)0xff};
  r.method = "PATCH";
  r.url = "https://example.invalid:8443/a/b?c=d&e=%20#f";
  r.headers = headers;
  r.header_count = 4;
  r.body = body;
  r.body_len = sizeof body;
  r.timeout_ms = UINT32_MAX;
  r.max_body = UINT64_MAX;
  r.max_redirects = UINT32_MAX;
  r.flags = LDS_HTTP_INSECURE | LDS_HTTP_NO_COMPRESSION | LDS_HTTP_HTTP2 | LDS_HTTP_NO_HEURISTIC_FRESHNESS |
            LDS_HTTP_NO_STALE_ON_DISCONNECT;
  r.ca_file = "/etc/ssl/caf\xc3\xa9.pem";
  if (http_round_trip(&r, &out)) {
    check_http(&out, &r, UINT32_MAX, r.flags);
    lds_http_request_clear(&out);
  }

  /* Each flag alone; LDS_HTTP_NO_REDIRECTS comes back with max_redirects 0;
   * an empty ca_file is not an absent one. */
  static const uint32_t each[] = {LDS_HTTP_INSECURE, LDS_HTTP_NO_REDIRECTS, LDS_HTTP_NO_COMPRESSION,
                                  LDS_HTTP_HTTP2, LDS_HTTP_HTTP1, LDS_HTTP_NO_HEURISTIC_FRESHNESS,
                                  LDS_HTTP_NO_STALE_ON_DISCONNECT};
  r.ca_file = "";
  r.max_redirects = 7;
  for (size_t i = 0; i < sizeof each / sizeof each[0]; i++) {
    r.flags = each[i];
    if (http_round_trip(&r, &out)) {
      check_http(&out, &r, each[i] == LDS_HTTP_NO_REDIRECTS ? 0 : 7, each[i]);
      lds_http_request_clear(&out);
    }
  }

  /* Large: 65,536 header lines (the most) and a body of 1 MiB. */
  enum { LINES = 65536, BIG = 1 << 20 };
  const char **many = calloc(LINES, sizeof *many);
  char *big = malloc(BIG);
  REQUIRE(many != NULL && big != NULL);
  for (size_t i = 0; i < LINES; i++) many[i] = i % 2 ? "X-A: b" : "Y:";
  memset(big, 0, BIG);
  big[BIG - 1] = 'z';
  lds_http_request large = LDS_HTTP_REQUEST_INIT;
  large.url = "http://example.invalid/";
  large.headers = many;
  large.header_count = LINES;
  large.body = big;
  large.body_len = BIG;
  large.max_redirects = 1;
  if (http_round_trip(&large, &out)) {
    check_http(&out, &large, 1, 0);
    lds_http_request_clear(&out);
  }
  free(many);
  free(big);
}

TEST(test_http_request_decode_refuses_every_truncation) {
  const char *const headers[] = {"A: b", "Cc: dd"};
  lds_http_request r = LDS_HTTP_REQUEST_INIT;
  r.method = "POST";
  r.url = "http://example.invalid/x";
  r.headers = headers;
  r.header_count = 2;
  r.body = "body";
  r.body_len = 4;
  r.timeout_ms = 1000;
  r.max_body = 1 << 20;
  r.max_redirects = 2;
  r.flags = LDS_HTTP_HTTP1;
  /* Without ca_file every prefix is refused; with it, the prefix that
   * ends before ca_file is the same request without one. */
  void *plain = NULL, *with_ca = NULL;
  size_t plain_len = 0, with_ca_len = 0;
  REQUIRE_RC(lds_http_request_encode(&r, &plain, &plain_len), LDS_OK);
  r.ca_file = "/ca.pem";
  REQUIRE_RC(lds_http_request_encode(&r, &with_ca, &with_ca_len), LDS_OK);
  lds_http_request out;
  for (int shape = 0; shape < 2; shape++) {
    r.ca_file = shape ? "/ca.pem" : NULL;
    const unsigned char *buf = shape ? with_ca : plain;
    size_t len = shape ? with_ca_len : plain_len;
    for (size_t n = 0; n < len; n++) {
      unsigned char *prefix = malloc(n ? n : 1);
      REQUIRE(prefix != NULL);
      memcpy(prefix, buf, n);
      memset(&out, 0xAB, sizeof out);
      int want = shape == 1 && n == plain_len ? LDS_OK : LDS_EINVAL;
      if (!CHECK_RC(lds_http_request_decode(prefix, n, &out), want))
        fprintf(stderr, "  shape %d, prefix of %zu bytes out of %zu\n", shape, n, len);
      if (want == LDS_OK) {
        CHECK(out.ca_file == NULL);
        lds_http_request_clear(&out);
      } else {
        CHECK(all_zero(&out, sizeof out));
      }
      free(prefix);
    }
    if (CHECK_RC(lds_http_request_decode(buf, len, &out), LDS_OK)) {
      check_http(&out, &r, 2, LDS_HTTP_HTTP1);
      check_http_reencodes(&out, buf, len);
      lds_http_request_clear(&out);
    }
  }
  /* A byte after ca_file is refused too. */
  unsigned char *longer = malloc(with_ca_len + 1);
  REQUIRE(longer != NULL);
  memcpy(longer, with_ca, with_ca_len);
  longer[with_ca_len] = 0;
  CHECK_RC(lds_http_request_decode(longer, with_ca_len + 1, &out), LDS_EINVAL);
  free(longer);
  lds_free(plain);
  lds_free(with_ca);
}

TEST(test_http_request_decode_refuses_malformed_input) {
  lds_http_request out;
  wire w = {.len = 0};

  /* The hand-made encoding decodes as it is... */
  http_by_hand(&w, "GET", 3, "http://h/", 9, "A: b", 4);
  if (CHECK_RC(lds_http_request_decode(w.bytes, w.len, &out), LDS_OK)) {
    CHECK_STR(out.headers[0], "A: b");
    lds_http_request_clear(&out);
  }
  /* ...and an absent method is GET. */
  http_by_hand(&w, NULL, 0, "http://h/", 9, NULL, 0);
  if (CHECK_RC(lds_http_request_decode(w.bytes, w.len, &out), LDS_OK)) {
    CHECK_STR(out.method, "GET");
    lds_http_request_clear(&out);
  }
  /* What the encoder refuses, the decoder refuses: no url, a method that
   * is not a token, CR or LF or a space in the url, a header line with
   * CR LF or without a colon, text that is not UTF-8, a NUL. */
  struct {
    const char *method, *url, *header;
    size_t method_len, url_len, header_len;
  } bad[] = {
      {"GET", NULL, NULL, 3, 0, 0},
      {"GE T", "http://h/", NULL, 4, 9, 0},
      {"", "http://h/", NULL, 0, 9, 0},
      {"GET\r\nX: y", "http://h/", NULL, 9, 9, 0},
      {"GET", "http://h/\r\nX: y", NULL, 3, 15, 0},
      {"GET", "http://h/ x", NULL, 3, 11, 0},
      {"GET", "http://h/\xff", NULL, 3, 10, 0},
      {"GET", "http://h/\0x", NULL, 3, 11, 0},
      {"GET", "http://h/", "A: b\r\nC: d", 3, 9, 10},
      {"GET", "http://h/", "no colon", 3, 9, 8},
      {"GET", "http://h/", "A: \xc3", 3, 9, 4},
      {"GET", "http://h/", "A: \0", 3, 9, 4},
      {"GET", "http://h/", ": b", 3, 9, 3},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    http_by_hand(&w, bad[i].method, bad[i].method_len, bad[i].url, bad[i].url_len, bad[i].header, bad[i].header_len);
    memset(&out, 0xAB, sizeof out);
    if (!CHECK_RC(lds_http_request_decode(w.bytes, w.len, &out), LDS_EINVAL)) {
      fprintf(stderr, "  case %zu\n", i);
      if (out.headers != NULL) lds_http_request_clear(&out);
    } else {
      CHECK(all_zero(&out, sizeof out));
    }
  }
  /* Not the magic; a field longer than the rest. */
  CHECK_RC(lds_http_request_decode("LDX1\0\0\0\0", 8, &out), LDS_EINVAL);
  w.len = 0;
  w_raw(&w, "LDH1", 4);
  W_TEXT(&w, "GET");
  w_u32(&w, 0x7FFFFFFFu);
  w_raw(&w, "http", 4);
  CHECK_RC(lds_http_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
  /* A header list that counts more lines than there are. */
  w.len = 0;
  w_raw(&w, "LDH1", 4);
  W_TEXT(&w, "GET");
  W_TEXT(&w, "http://h/");
  w_u32(&w, 0xFFFFFFFEu);
  W_TEXT(&w, "A: b");
  CHECK_RC(lds_http_request_decode(w.bytes, w.len, &out), LDS_EINVAL);
}

TEST(test_http_request_decode_refuses_too_many_header_lines) {
  /* 65,537 lines "A:": one more than lds_http_request_encode accepts. */
  enum { LINES = 65537 };
  size_t cap = 64 + (size_t)LINES * 6;
  unsigned char *buf = malloc(cap);
  REQUIRE(buf != NULL);
  wire head = {.len = 0};
  w_raw(&head, "LDH1", 4);
  W_TEXT(&head, "GET");
  W_TEXT(&head, "http://h/");
  w_u32(&head, LINES);
  size_t len = 0;
  memcpy(buf, head.bytes, head.len);
  len = head.len;
  for (size_t i = 0; i < LINES; i++) {
    static const unsigned char line[] = {2, 0, 0, 0, 'A', ':'};
    memcpy(buf + len, line, sizeof line);
    len += sizeof line;
  }
  wire tail = {.len = 0};
  w_field(&tail, "", 0);
  w_u32(&tail, 0);
  w_u64(&tail, 0);
  w_u32(&tail, 5);
  w_u32(&tail, 0);
  memcpy(buf + len, tail.bytes, tail.len);
  len += tail.len;
  lds_http_request out;
  CHECK_RC(lds_http_request_decode(buf, len, &out), LDS_ETOOBIG);
  CHECK(all_zero(&out, sizeof out));
  /* One line fewer is the most, and decodes. */
  uint32_t fewer = LINES - 1;
  for (int i = 0; i < 4; i++) buf[head.len - 4 + i] = (unsigned char)(fewer >> (8 * i));
  memmove(buf + head.len, buf + head.len + 6, len - head.len - 6);
  if (CHECK_RC(lds_http_request_decode(buf, len - 6, &out), LDS_OK)) {
    CHECK_EQ(out.header_count, LINES - 1);
    lds_http_request_clear(&out);
  }
  free(buf);
}

TEST(test_http_request_decode_bad_arguments) {
  lds_http_request out;
  CHECK_RC(lds_http_request_decode("LDH1", 4, NULL), LDS_EINVAL);
  CHECK_RC(lds_http_request_decode(NULL, 4, &out), LDS_EINVAL);
  CHECK_RC(lds_http_request_decode(NULL, 0, &out), LDS_EINVAL);
  CHECK_RC(lds_http_request_decode("", 0, &out), LDS_EINVAL);
  CHECK_RC(lds_http_request_decode("LDH1", (size_t)LDS_VALUE_MAX + 1, &out), LDS_ETOOBIG);
  CHECK_RC(lds_http_request_decode("LDH1", SIZE_MAX, &out), LDS_ETOOBIG);
  CHECK(all_zero(&out, sizeof out));
  lds_http_request_clear(NULL);
  lds_http_request_clear(&out);
}
