/*
 * fuzz_parsers.c — libFuzzer harness for the byte formats of the C API:
 * the encoders and decoder of include/loadstate.h, and the requests the
 * built-in loaders decode.
 *
 * The first byte picks a target; the rest is its input:
 *   0  lds_http_request_encode with fields taken from the input; the
 *      encoding is decoded here (the documented "LDH1" format) and must
 *      give the fields back.
 *   1  lds_http_response_decode over the raw bytes; when it succeeds, the
 *      parts must lie inside the input and encode back to it exactly.
 *   2  a response encoded here from fields, decoded by the library.
 *   3  lds_exec_request_encode with argv, env and cwd from the input; the
 *      "LDX1" encoding must decode to them.
 *   4  the raw bytes as the request of an http loader load, and first
 *      through lds_http_request_decode: what it accepts, the harness's
 *      reader reads, and it re-encodes to bytes that decode to the same
 *      request and encode the same.
 *   5  the raw bytes as the request of an exec loader load, and first
 *      through lds_exec_request_decode: it accepts exactly what the exec
 *      loader runs, and re-encodes as in 4.
 *   6  the raw bytes as a path, under a scratch directory, for a file
 *      loader load.
 *   7  the raw bytes as the file of a persistent cache (an SQLite
 *      database: a sound one, one of another schema version, a damaged
 *      one, or one whose tables hold what the library never writes),
 *      opened with and without LDS_CACHE_REPLACE_DAMAGED, then used.
 *   8  the raw bytes as two HTTP responses (split where the first byte
 *      says), written as they are by a server thread of this harness on
 *      127.0.0.1: the first answers a GET whose response is stored in a
 *      memory cache, the second a cache-first GET of the same key, which
 *      the stored response's own headers decide about (Cache-Control,
 *      Expires, Date, Age, Vary; ETag and Last-Modified make it a
 *      conditional GET, which may get a 304).
 *
 * Safety of the loads: the http loader's every transfer goes through the
 * proxy http://127.0.0.1:1 (a closed port; no_proxy is cleared), and a
 * request that decodes is rewritten to the URL http://127.0.0.1:1/ before
 * it is loaded. An exec request whose argument vector decodes gets the
 * program /nonexistent/loadstate-fuzz instead of its own, and PATH names
 * no directory, so no command can run. File paths stay inside the scratch
 * directory: paths with ".." are dropped (a FIFO elsewhere would block
 * the loader's read). Target 8's loader has no proxy and loads only
 * http://127.0.0.1:PORT/ of the harness's own server.
 *
 * Checked: no crash, no leak (AddressSanitizer, LeakSanitizer); round
 * trips as above; return codes within the documented sets; a load ends
 * with the expected error (a request that does not decode: LDS_EINVAL in
 * the loadstate domain; the rewritten ones: a failure to connect or to
 * spawn, not a value).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loadstate.h"

#define FUZZ_NAME "fuzz_parsers"
#include "fuzz_input.h"

#define SAFE_URL "http://127.0.0.1:1/"
#define SAFE_PROGRAM "/nonexistent/loadstate-fuzz"

/* ------------------------------------------------------------------ */
/* Input                                                               */
/* ------------------------------------------------------------------ */

static uint32_t u32(input *in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)u8(in) << (8 * i);
  return v;
}

/* A NUL-terminated string of up to max bytes of the input (stops early at
 * a NUL), or NULL when the length byte says so. */
static char *text(input *in, size_t max, bool may_be_null) {
  uint8_t b = u8(in);
  if (may_be_null && b == 0xFF) return NULL;
  size_t n = b % (max + 1);
  if (n > in->n) n = in->n;
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, in->p, n);
  s[n] = 0;
  in->p += n;
  in->n -= n;
  return s;
}

/* ------------------------------------------------------------------ */
/* The wire format, as documented in the header                        */
/* ------------------------------------------------------------------ */

#define ABSENT 0xFFFFFFFFu

typedef struct reader {
  const uint8_t *p;
  size_t n, off;
} reader;

static bool r_u32(reader *r, uint32_t *v) {
  if (r->n - r->off < 4) return false;
  *v = 0;
  for (int i = 0; i < 4; i++) *v |= (uint32_t)r->p[r->off + i] << (8 * i);
  r->off += 4;
  return true;
}

static bool r_u64(reader *r, uint64_t *v) {
  uint32_t lo, hi;
  if (!r_u32(r, &lo) || !r_u32(r, &hi)) return false;
  *v = (uint64_t)hi << 32 | lo;
  return true;
}

/* A field: *absent, or *at / *len into the bytes. */
typedef struct span {
  bool absent;
  size_t at, len;
} span;

static bool r_field(reader *r, span *s) {
  uint32_t n;
  if (!r_u32(r, &n)) return false;
  s->absent = n == ABSENT;
  s->at = r->off;
  s->len = 0;
  if (s->absent) return true;
  if (r->n - r->off < n) return false;
  s->len = n;
  r->off += n;
  return true;
}

static bool has_byte(const reader *r, const span *s, uint8_t b) {
  return !s->absent && memchr(r->p + s->at, b, s->len) != NULL;
}

#define MAX_ITEMS 64

static bool utf8_ok(const uint8_t *s, size_t n);

/* A list: *absent, or up to MAX_ITEMS fields (more are read but not kept). */
typedef struct list {
  bool absent;
  uint32_t count;
  span items[MAX_ITEMS];
  bool any_nul, any_crlf, any_not_utf8;
} list;

static bool r_list(reader *r, list *l) {
  uint32_t n;
  if (!r_u32(r, &n)) return false;
  memset(l, 0, sizeof *l);
  l->absent = n == ABSENT;
  if (l->absent) return true;
  l->count = n;
  for (uint32_t i = 0; i < n; i++) {
    span s;
    if (!r_field(r, &s) || s.absent) return false;
    l->any_nul |= has_byte(r, &s, 0);
    l->any_crlf |= has_byte(r, &s, '\r') || has_byte(r, &s, '\n');
    l->any_not_utf8 |= !utf8_ok(r->p + s.at, s.len);
    if (i < MAX_ITEMS) l->items[i] = s;
  }
  return true;
}

static bool r_magic(reader *r, const char *magic) {
  if (r->n < 4 || memcmp(r->p, magic, 4) != 0) return false;
  r->off = 4;
  return true;
}

typedef struct http_req {
  span method, url, body;
  list headers;
  uint32_t timeout_ms, max_redirects, flags;
  uint64_t max_body;
} http_req;

/* Whether the bytes decode as an http request, by the rules of the http
 * loader: method and url text without NUL, url present, header lines
 * without NUL, CR or LF. */
static bool http_decode(const uint8_t *p, size_t n, http_req *q) {
  reader r = {p, n, 0};
  if (!r_magic(&r, "LDH1") || !r_field(&r, &q->method) || !r_field(&r, &q->url) || q->url.absent ||
      !r_list(&r, &q->headers) || !r_field(&r, &q->body) || !r_u32(&r, &q->timeout_ms) ||
      !r_u64(&r, &q->max_body) || !r_u32(&r, &q->max_redirects) || !r_u32(&r, &q->flags))
    return false;
  if (has_byte(&r, &q->method, 0) || has_byte(&r, &q->url, 0)) return false;
  return !q->headers.any_nul && !q->headers.any_crlf;
}

typedef struct exec_req {
  list argv, env;
  span cwd;
} exec_req;

/* How far an exec request decodes: 0 not even its argument vector, 1 the
 * argument vector (present, not empty, no NUL) but not the rest, 2 all. */
static int exec_decode(const uint8_t *p, size_t n, exec_req *q, size_t *argv_end) {
  reader r = {p, n, 0};
  if (!r_magic(&r, "LDX1") || !r_list(&r, &q->argv) || q->argv.absent || q->argv.count == 0 || q->argv.any_nul)
    return 0;
  *argv_end = r.off;
  if (!r_list(&r, &q->env) || !r_field(&r, &q->cwd)) return 1;
  if ((!q->env.absent && q->env.any_nul) || has_byte(&r, &q->cwd, 0)) return 1;
  /* Text that is not UTF-8 is refused by the exec loader (EINVAL), as a
   * tail that does not decode is. */
  if (q->argv.any_not_utf8 || (!q->env.absent && q->env.any_not_utf8) ||
      (!q->cwd.absent && !utf8_ok(p + q->cwd.at, q->cwd.len)))
    return 1;
  return 2;
}

static void b_u32(buf *b, uint32_t v) {
  uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  b_put(b, le, 4);
}

static void b_u64(buf *b, uint64_t v) {
  b_u32(b, (uint32_t)v);
  b_u32(b, (uint32_t)(v >> 32));
}

static void b_field(buf *b, const uint8_t *base, const span *s) {
  if (s->absent) return b_u32(b, ABSENT);
  b_u32(b, (uint32_t)s->len);
  b_put(b, base + s->at, s->len);
}

static void b_text(buf *b, const char *s) {
  b_u32(b, (uint32_t)strlen(s));
  b_put(b, s, strlen(s));
}

/* Whether s is well-formed UTF-8: the library refuses text that is not
 * (LDS_EINVAL), and well-formed text round-trips byte for byte. */
static bool utf8_ok(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = s[i];
    size_t k;
    uint32_t cp;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xC2 && c <= 0xDF) k = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) k = 2, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) k = 3, cp = c & 0x07;
    else return false;
    if (i + k >= n) return false;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return false;
      cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += k + 1;
  }
  return true;
}

static bool str_ok(const char *s) { return s == NULL || utf8_ok((const uint8_t *)s, strlen(s)); }

static bool span_is(const uint8_t *base, const span *s, const char *want) {
  return !s->absent && s->len == strlen(want) && memcmp(base + s->at, want, s->len) == 0;
}

/* ------------------------------------------------------------------ */
/* 0: lds_http_request_encode                                          */
/* ------------------------------------------------------------------ */

/* The checks of lds_http_request_encode, as the header states them: a
 * method is an HTTP token; a url has no control character and no space;
 * a header line is a token name, a colon, then a value with no control
 * character but tab. */
static bool tchar(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool token_ok(const char *s, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if (!tchar((unsigned char)s[i])) return false;
  return true;
}

static bool url_ok(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 0x21 || *p == 0x7F) return false;
  return true;
}

static bool header_ok(const char *s) {
  const char *colon = strchr(s, ':');
  if (colon == NULL || !token_ok(s, (size_t)(colon - s))) return false;
  for (const unsigned char *p = (const unsigned char *)colon + 1; *p; p++)
    if ((*p < 0x20 && *p != '\t') || *p == 0x7F) return false;
  return true;
}


/* The flag bits of the "LDH1" encoding for the flags of a request: its
 * flags but LDS_HTTP_NO_REDIRECTS (which is max_redirects 0). */
static uint32_t encoded_http_flags(uint32_t flags) {
  return flags & ~(uint32_t)LDS_HTTP_NO_REDIRECTS;
}

static void target_http_encode(input *in) {
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  uint8_t shape = u8(in);
  char *method = text(in, 8, true);
  char *url = text(in, 40, true);
  size_t nh = u8(in) % 3;
  char *headers[2] = {0};
  bool crlf = false;
  for (size_t i = 0; i < nh; i++) {
    headers[i] = text(in, 16, false);
    crlf |= strpbrk(headers[i], "\r\n") != NULL;
  }
  char *body = text(in, 32, false);
  req.method = method;
  req.url = url;
  req.headers = (const char *const *)headers;
  req.header_count = nh;
  req.body = (shape & 1) ? NULL : body;
  req.body_len = (shape & 1) ? 0 : strlen(body);
  req.timeout_ms = u32(in);
  req.max_redirects = u8(in) % 8;
  req.max_body = (uint64_t)u32(in) << (u8(in) % 33);
  req.flags = u8(in) % 256;
  bool bad_size = shape & 2 && shape & 4;
  if (bad_size) req.size = 8;

  void *out = NULL;
  size_t out_len = 0;
  int rc = lds_http_request_encode(&req, &out, &out_len);
  bool fields_ok = (!method || token_ok(method, strlen(method))) && url && url_ok(url) &&
                   (nh < 1 || header_ok(headers[0])) && (nh < 2 || header_ok(headers[1]));
  bool texts_ok = str_ok(method) && str_ok(url) && (nh < 1 || str_ok(headers[0])) &&
                  (nh < 2 || str_ok(headers[1]));
  bool must_fail = bad_size || !fields_ok || crlf || !texts_ok ||
                   (req.flags & ~(LDS_HTTP_INSECURE | LDS_HTTP_NO_REDIRECTS | LDS_HTTP_NO_COMPRESSION |
                                  LDS_HTTP_HTTP2 | LDS_HTTP_HTTP1 | LDS_HTTP_NO_HEURISTIC_FRESHNESS |
                                  LDS_HTTP_NO_STALE_ON_DISCONNECT)) ||
                   ((req.flags & LDS_HTTP_HTTP2) && (req.flags & LDS_HTTP_HTTP1));
  if (must_fail && rc != LDS_EINVAL) fail("lds_http_request_encode returned %d for a bad request", rc);
  if (!must_fail && rc != LDS_OK) fail("lds_http_request_encode returned %d (%s)", rc, lds_strerror(rc));
  if (rc == LDS_OK) {
    http_req q;
    if (!http_decode(out, out_len, &q)) fail("lds_http_request_encode: the encoding does not decode");
    const uint8_t *e = out;
    {
      if (!span_is(e, &q.method, method ? method : "GET")) fail("http request: method changed");
      if (!span_is(e, &q.url, url)) fail("http request: url changed");
      if (q.headers.absent || q.headers.count != nh) fail("http request: %u headers for %zu", q.headers.count, nh);
      for (size_t i = 0; i < nh; i++)
        if (!span_is(e, &q.headers.items[i], headers[i])) fail("http request: header %zu changed", i);
    }
    if (q.body.len != req.body_len || (req.body_len && memcmp(e + q.body.at, req.body, req.body_len)))
      fail("http request: body changed");
    uint32_t redirects = (req.flags & LDS_HTTP_NO_REDIRECTS) ? 0 : req.max_redirects ? req.max_redirects : 5;
    if (q.timeout_ms != req.timeout_ms || q.max_body != req.max_body || q.max_redirects != redirects ||
        q.flags != encoded_http_flags(req.flags))
      fail("http request: numbers changed (timeout %u/%u, max_body %llu/%llu, redirects %u/%u, flags %u/%u)",
           q.timeout_ms, req.timeout_ms, (unsigned long long)q.max_body, (unsigned long long)req.max_body,
           q.max_redirects, redirects, q.flags, req.flags);
  } else if (out) {
    fail("lds_http_request_encode set *out on failure");
  }
  lds_free(out);
  if (lds_http_request_encode(NULL, &out, &out_len) != LDS_EINVAL) fail("lds_http_request_encode(NULL) did not fail");
  free(method);
  free(url);
  for (size_t i = 0; i < 2; i++) free(headers[i]);
  free(body);
}

/* ------------------------------------------------------------------ */
/* 1, 2: lds_http_response_decode                                      */
/* ------------------------------------------------------------------ */

static void check_response(const uint8_t *p, size_t n) {
  lds_http_response r;
  memset(&r, 0xA5, sizeof r);
  int rc = lds_http_response_decode(p, n, &r);
  reader rd = {p, n, 0};
  uint32_t status;
  span headers;
  bool ok = r_magic(&rd, "LDR1") && r_u32(&rd, &status) && r_field(&rd, &headers) && !headers.absent;
  if (ok != (rc == LDS_OK)) fail("lds_http_response_decode returned %d for %s encoding", rc, ok ? "a valid" : "an invalid");
  if (rc != LDS_OK) {
    if (rc != LDS_EINVAL) fail("lds_http_response_decode returned %d", rc);
    return;
  }
  const uint8_t *h = (const uint8_t *)r.headers, *b = r.body;
  if (h < p || h + r.headers_len > p + n || b < p || b + r.body_len > p + n)
    fail("lds_http_response_decode: parts outside the value");
  if (r.status != (int32_t)status || h != p + headers.at || r.headers_len != headers.len || b != h + r.headers_len ||
      b + r.body_len != p + n)
    fail("lds_http_response_decode: parts differ from the encoding");
  buf again = {0};
  b_put(&again, "LDR1", 4);
  b_u32(&again, (uint32_t)r.status);
  b_u32(&again, (uint32_t)r.headers_len);
  b_put(&again, r.headers, r.headers_len);
  b_put(&again, r.body, r.body_len);
  if (again.n != n || memcmp(again.p, p, n) != 0) fail("lds_http_response_decode: does not encode back");
  free(again.p);
}

static void target_response_raw(input *in) {
  uint8_t *copy = malloc(in->n ? in->n : 1);
  if (!copy) abort();
  memcpy(copy, in->p, in->n);
  check_response(copy, in->n);
  free(copy);
  lds_http_response r;
  if (lds_http_response_decode(NULL, 12, &r) != LDS_EINVAL || lds_http_response_decode("LDR1", 4, NULL) != LDS_EINVAL)
    fail("lds_http_response_decode accepted a NULL pointer");
}

static void target_response_fields(input *in) {
  uint32_t status = u32(in);
  char *headers = text(in, 64, false);
  buf e = {0};
  b_put(&e, "LDR1", 4);
  b_u32(&e, status);
  b_text(&e, headers);
  b_put(&e, in->p, in->n);
  check_response(e.p, e.n);
  free(e.p);
  free(headers);
}

/* ------------------------------------------------------------------ */
/* 3: lds_exec_request_encode                                          */
/* ------------------------------------------------------------------ */

static void target_exec_encode(input *in) {
  uint8_t shape = u8(in);
  char *argv[4] = {0}, *env[3] = {0};
  size_t na = u8(in) % 4, ne = u8(in) % 3;
  for (size_t i = 0; i < na; i++) argv[i] = text(in, 12, false);
  for (size_t i = 0; i < ne; i++) env[i] = text(in, 12, false);
  char *cwd = text(in, 16, true);
  lds_exec_request req = LDS_EXEC_REQUEST_INIT;
  req.argv = (const char *const *)argv;
  req.env = (shape & 1) ? NULL : (const char *const *)env;
  req.cwd = cwd;
  bool bad_size = (shape & 6) == 6;
  if (bad_size) req.size = 4;
  void *out = NULL;
  size_t out_len = 0;
  int rc = lds_exec_request_encode(&req, &out, &out_len);
  bool texts_ok = str_ok(cwd);
  for (size_t i = 0; i < na; i++) texts_ok &= str_ok(argv[i]);
  for (size_t i = 0; req.env && i < ne; i++) texts_ok &= str_ok(env[i]);
  bool must_fail = bad_size || na == 0 || !texts_ok;
  if (must_fail != (rc != LDS_OK) || (rc != LDS_OK && rc != LDS_EINVAL))
    fail("lds_exec_request_encode returned %d (%zu arguments, size %u)", rc, na, req.size);
  if (rc == LDS_OK) {
    exec_req q;
    size_t argv_end;
    if (exec_decode(out, out_len, &q, &argv_end) != 2) fail("lds_exec_request_encode: the encoding does not decode");
    const uint8_t *e = out;
    if (q.argv.count != na) fail("exec request: %u arguments for %zu", q.argv.count, na);
    if (q.env.absent != !req.env || (req.env && q.env.count != ne)) fail("exec request: environment changed");
    if (q.cwd.absent != !cwd) fail("exec request: directory presence changed");
    {
      for (size_t i = 0; i < na; i++)
        if (!span_is(e, &q.argv.items[i], argv[i])) fail("exec request: argument %zu changed", i);
      for (size_t i = 0; req.env && i < ne; i++)
        if (!span_is(e, &q.env.items[i], env[i])) fail("exec request: variable %zu changed", i);
      if (cwd && !span_is(e, &q.cwd, cwd)) fail("exec request: directory changed");
    }
  }
  lds_free(out);
  for (size_t i = 0; i < 4; i++) free(argv[i]);
  for (size_t i = 0; i < 3; i++) free(env[i]);
  free(cwd);
}

/* ------------------------------------------------------------------ */
/* 4-6: requests decoded by the loaders                                */
/* ------------------------------------------------------------------ */

static lds_runtime *rt;
static lds_id http_loader, exec_loader, file_loader;
static char scratch[64];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

typedef struct outcome {
  bool done;
  int32_t status, domain, code;
} outcome;

static void on_event(const lds_event *ev, void *user_data) {
  outcome *o = user_data;
  if (ev->type != LDS_EVENT_STATE || ev->status == LDS_LOADING) return;
  pthread_mutex_lock(&mu);
  o->done = true;
  o->status = ev->status;
  o->domain = ev->error_domain;
  o->code = ev->error_code;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static const char *cache_files[] = {"cache.db", "cache.db-wal", "cache.db-shm", "cache.db-journal"};

static void remove_cache_files(void) {
  char path[128];
  for (size_t i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", scratch, cache_files[i]);
    remove(path);
  }
}

static void remove_scratch(void) {
  const char *names[] = {"a", "empty", "d"};
  char path[128];
  remove_cache_files();
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", scratch, names[i]);
    remove(path);
  }
  rmdir(scratch);
}

static void setup(void) {
  if (rt) return;
  /* Nothing leaves this machine and no program is found by name. */
  unsetenv("no_proxy");
  unsetenv("NO_PROXY");
  setenv("PATH", "/nonexistent/loadstate-fuzz-path", 1);
  if (lds_runtime_new(NULL, &rt) != LDS_OK) fail("lds_runtime_new failed");
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = SAFE_URL;
  lds_exec_options eo = LDS_EXEC_OPTIONS_INIT;
  eo.max_output = 4096;
  eo.kill_grace_ms = 10;
  lds_file_options fo = LDS_FILE_OPTIONS_INIT;
  fo.max_size = 4096;
  fo.chunk_size = 7;
  if (lds_http_loader_new(rt, &ho, &http_loader) != LDS_OK || lds_exec_loader_new(rt, &eo, &exec_loader) != LDS_OK ||
      lds_file_loader_new(rt, &fo, &file_loader) != LDS_OK)
    fail("a built-in loader could not be made");
  /* In memory when the machine has /dev/shm: the persistent cache syncs
   * its file, which on a disk costs more than the rest of an input. */
  snprintf(scratch, sizeof scratch, "/dev/shm/loadstate-fuzz-XXXXXX");
  if (!mkdtemp(scratch)) {
    snprintf(scratch, sizeof scratch, "/tmp/loadstate-fuzz-XXXXXX");
    if (!mkdtemp(scratch)) fail("mkdtemp: %s", strerror(errno));
  }
  atexit(remove_scratch);
  char path[128];
  snprintf(path, sizeof path, "%s/a", scratch);
  FILE *f = fopen(path, "w");
  if (!f) fail("fopen %s", path);
  fputs("loadstate fuzz file\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/empty", scratch);
  f = fopen(path, "w");
  if (!f) fail("fopen %s", path);
  fclose(f);
  snprintf(path, sizeof path, "%s/d", scratch);
  mkdir(path, 0700);
}

/* Loads the request and waits for the load's end. */
static outcome load(lds_id loader, const void *req, size_t len) {
  outcome o = {0};
  lds_id cell;
  if (lds_loadable_new(rt, on_event, &o, &cell) != LDS_OK) fail("lds_loadable_new failed");
  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.timeout_ms = 5000;
  int rc = lds_loadable_load(rt, cell, loader, req, len, &opts);
  if (rc != LDS_OK) fail("lds_loadable_load returned %d", rc);
  pthread_mutex_lock(&mu);
  while (!o.done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  if (lds_loadable_free(rt, cell) != LDS_OK) fail("lds_loadable_free failed");
  return o;
}

/* ------------------------------------------------------------------ */
/* The request decoders                                                */
/* ------------------------------------------------------------------ */

static bool zeroed(const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return false;
  return true;
}

static bool same_text(const char *a, const char *b) {
  return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

static bool same_list(const char *const *a, const char *const *b) {
  if ((a == NULL) != (b == NULL)) return false;
  if (a == NULL) return true;
  size_t i = 0;
  for (; a[i] && b[i]; i++)
    if (strcmp(a[i], b[i]) != 0) return false;
  return a[i] == NULL && b[i] == NULL;
}

/* lds_exec_request_decode over raw bytes: it succeeds exactly when the
 * exec loader would run them (exec_decode says 2); what it gives encodes,
 * and that encoding decodes to the same request and encodes the same. */
static void check_exec_decoder(const uint8_t *p, size_t n) {
  lds_exec_request d;
  int rc = lds_exec_request_decode(p, n, &d);
  exec_req q;
  size_t end;
  int level = exec_decode(p, n, &q, &end);
  if (rc != LDS_OK) {
    if (rc != LDS_EINVAL) fail("lds_exec_request_decode returned %d", rc);
    if (!zeroed(&d, sizeof d)) fail("lds_exec_request_decode: out not zeroed on failure");
    if (level == 2) fail("lds_exec_request_decode refused a request the exec loader runs");
    return;
  }
  if (level != 2) fail("lds_exec_request_decode accepted a request the exec loader refuses");
  void *e1 = NULL, *e2 = NULL;
  size_t n1 = 0, n2 = 0;
  if (lds_exec_request_encode(&d, &e1, &n1) != LDS_OK) fail("a decoded exec request does not encode");
  lds_exec_request d2;
  if (lds_exec_request_decode(e1, n1, &d2) != LDS_OK) fail("an exec request's re-encoding does not decode");
  if (!same_list(d.argv, d2.argv) || !same_list(d.env, d2.env) || !same_text(d.cwd, d2.cwd))
    fail("an exec request's re-encoding decodes to another request");
  if (lds_exec_request_encode(&d2, &e2, &n2) != LDS_OK || n1 != n2 || memcmp(e1, e2, n1) != 0)
    fail("an exec request does not encode the same twice");
  lds_free(e1);
  lds_free(e2);
  lds_exec_request_clear(&d);
  lds_exec_request_clear(&d2);
}

static bool same_http(const lds_http_request *a, const lds_http_request *b) {
  if (!same_text(a->method, b->method) || !same_text(a->url, b->url) || !same_text(a->ca_file, b->ca_file) ||
      a->header_count != b->header_count || !same_list(a->headers, b->headers) || a->body_len != b->body_len ||
      (a->body_len && memcmp(a->body, b->body, a->body_len) != 0) || a->timeout_ms != b->timeout_ms ||
      a->max_body != b->max_body || a->max_redirects != b->max_redirects || a->flags != b->flags)
    return false;
  return true;
}

/* lds_http_request_decode over raw bytes: what it accepts the harness's
 * own reader reads too; what it gives encodes, and that encoding decodes
 * to the same request and encodes the same. */
static void check_http_decoder(const uint8_t *p, size_t n) {
  lds_http_request d;
  int rc = lds_http_request_decode(p, n, &d);
  if (rc != LDS_OK) {
    if (rc != LDS_EINVAL && rc != LDS_ETOOBIG) fail("lds_http_request_decode returned %d", rc);
    if (!zeroed(&d, sizeof d)) fail("lds_http_request_decode: out not zeroed on failure");
    return;
  }
  http_req q;
  if (!http_decode(p, n, &q)) fail("lds_http_request_decode accepted a request the harness does not read");
  if (d.header_count != q.headers.count || d.timeout_ms != q.timeout_ms || d.max_body != q.max_body ||
      d.max_redirects != q.max_redirects)
    fail("lds_http_request_decode: numbers differ from the encoding's");
  void *e1 = NULL, *e2 = NULL;
  size_t n1 = 0, n2 = 0;
  if (lds_http_request_encode(&d, &e1, &n1) != LDS_OK) fail("a decoded http request does not encode");
  lds_http_request d2;
  if (lds_http_request_decode(e1, n1, &d2) != LDS_OK) fail("an http request's re-encoding does not decode");
  if (!same_http(&d, &d2)) fail("an http request's re-encoding decodes to another request");
  if (lds_http_request_encode(&d2, &e2, &n2) != LDS_OK || n1 != n2 || memcmp(e1, e2, n1) != 0)
    fail("an http request does not encode the same twice");
  lds_free(e1);
  lds_free(e2);
  lds_http_request_clear(&d);
  lds_http_request_clear(&d2);
}

static bool is_einval(const outcome *o) {
  return o->status == LDS_ERROR && o->domain == LDS_DOMAIN_LOADSTATE && o->code == LDS_EINVAL;
}

static void target_http_load(input *in) {
  check_http_decoder(in->p, in->n);
  http_req q;
  if (!http_decode(in->p, in->n, &q)) {
    outcome o = load(http_loader, in->p, in->n);
    if (!is_einval(&o)) fail("http loader: a request that does not decode ended with status %d, domain %d, code %d",
                             o.status, o.domain, o.code);
    return;
  }
  /* A CR or LF in the method is a known defect of the http loader, fixed
   * apart; such inputs keep the default method here. */
  const uint8_t *p = in->p;
  reader whole = {p, in->n, 0};
  bool method_ok = !has_byte(&whole, &q.method, '\r') && !has_byte(&whole, &q.method, '\n');
  buf e = {0};
  b_put(&e, "LDH1", 4);
  if (method_ok) b_field(&e, p, &q.method);
  else b_u32(&e, ABSENT);
  b_text(&e, SAFE_URL);
  if (q.headers.absent) {
    b_u32(&e, ABSENT);
  } else {
    uint32_t kept = q.headers.count < MAX_ITEMS ? q.headers.count : MAX_ITEMS;
    b_u32(&e, kept);
    for (uint32_t i = 0; i < kept; i++) b_field(&e, p, &q.headers.items[i]);
  }
  b_field(&e, p, &q.body);
  b_u32(&e, q.timeout_ms == 0 || q.timeout_ms > 2000 ? 2000 : q.timeout_ms);
  b_u64(&e, q.max_body);
  b_u32(&e, q.max_redirects);
  b_u32(&e, q.flags);
  outcome o = load(http_loader, e.p, e.n);
  free(e.p);
  if (o.status != LDS_ERROR) fail("http loader: a load of " SAFE_URL " ended with status %d", o.status);
}

static void target_exec_load(input *in) {
  check_exec_decoder(in->p, in->n);
  exec_req q;
  size_t argv_end = 0;
  int level = exec_decode(in->p, in->n, &q, &argv_end);
  if (level == 0) {
    outcome o = load(exec_loader, in->p, in->n);
    if (!is_einval(&o)) fail("exec loader: a request without a program ended with status %d, domain %d, code %d",
                             o.status, o.domain, o.code);
    return;
  }
  /* The argument vector decodes: the program is replaced, the other
   * arguments and whatever follows them are kept as they are. */
  buf e = {0};
  b_put(&e, "LDX1", 4);
  uint32_t kept = q.argv.count < MAX_ITEMS ? q.argv.count : MAX_ITEMS;
  b_u32(&e, kept);
  b_text(&e, SAFE_PROGRAM);
  for (uint32_t i = 1; i < kept; i++) b_field(&e, in->p, &q.argv.items[i]);
  b_put(&e, in->p + argv_end, in->n - argv_end);
  exec_req check;
  size_t end2;
  int level2 = exec_decode(e.p, e.n, &check, &end2);
  if (level2 == 0 || !span_is(e.p, &check.argv.items[0], SAFE_PROGRAM)) fail("exec request rewrite went wrong");
  outcome o = load(exec_loader, e.p, e.n);
  free(e.p);
  if (level2 == 2 && !(o.status == LDS_ERROR && o.domain == LDS_DOMAIN_OS))
    fail("exec loader: " SAFE_PROGRAM " ended with status %d, domain %d, code %d", o.status, o.domain, o.code);
  if (level2 == 1 && !is_einval(&o))
    fail("exec loader: a request whose tail does not decode ended with status %d, domain %d, code %d", o.status,
         o.domain, o.code);
}

static void target_file_load(input *in) {
  if (memmem(in->p, in->n, "..", 2)) return;
  buf e = {0};
  b_put(&e, scratch, strlen(scratch));
  b_put(&e, "/", 1);
  b_put(&e, in->p, in->n);
  outcome o = load(file_loader, e.p, e.n);
  free(e.p);
  if (o.status != LDS_LOADED && o.status != LDS_ERROR) fail("file loader: status %d", o.status);
}

static void target_cache_file(input *in) {
  uint8_t how = u8(in);
  char path[128];
  snprintf(path, sizeof path, "%s/cache.db", scratch);
  remove_cache_files();
  FILE *f = fopen(path, "wb");
  if (!f) fail("fopen %s", path);
  if (in->n && fwrite(in->p, 1, in->n, f) != in->n) fail("fwrite %s", path);
  fclose(f);
  lds_persistent_cache_options o = LDS_PERSISTENT_CACHE_OPTIONS_INIT;
  o.path = path;
  o.flags = (how & 1) ? LDS_CACHE_REPLACE_DAMAGED : 0;
  o.max_bytes = (how & 2) ? 48 : 0;
  o.ttl_ms = (how & 4) ? 1 : 0;
  lds_id cache = 0;
  int rc = lds_persistent_cache_new(rt, &o, &cache);
  if (rc != LDS_OK && rc != LDS_EIO && rc != LDS_ENOMEM)
    fail("lds_persistent_cache_new returned %d (%s)", rc, lds_strerror(rc));
  if (rc != LDS_OK) {
    remove_cache_files();
    return;
  }
  /* Whatever the file held, every call answers with one of its codes. */
  static const char *keys[] = {"k", "a", "", "key"};
  for (size_t i = 0; i < 4; i++) {
    lds_cache_value v;
    int g = lds_cache_get(rt, cache, keys[i], strlen(keys[i]), &v);
    if (g != 0 && g != 1 && g != LDS_EIO && g != LDS_ENOMEM) fail("lds_cache_get returned %d", g);
    if (g == 1 && !v.value) fail("lds_cache_get: a hit without a value");
    lds_cache_value_clear(&v);
  }
  lds_cache_statistics st;
  int r = lds_cache_stats(rt, cache, &st);
  if (r != LDS_OK && r != LDS_EIO) fail("lds_cache_stats returned %d", r);
  r = lds_cache_put(rt, cache, "k", 1, "value-0123456789-0123456789", 27);
  if (r != LDS_OK && r != LDS_EIO) fail("lds_cache_put returned %d", r);
  r = lds_cache_put(rt, cache, "n", 1, "v", 1);
  if (r != LDS_OK && r != LDS_EIO) fail("lds_cache_put returned %d", r);
  r = lds_cache_invalidate(rt, cache, "k", 1);
  if (r != LDS_OK && r != LDS_EIO) fail("lds_cache_invalidate returned %d", r);
  r = lds_cache_remove(rt, cache, "a", 1);
  if (r != 0 && r != 1 && r != LDS_EIO) fail("lds_cache_remove returned %d", r);
  if (how & 8) {
    r = lds_cache_clear(rt, cache);
    if (r != LDS_OK && r != LDS_EIO) fail("lds_cache_clear returned %d", r);
  }
  if (lds_cache_free(rt, cache) != LDS_OK) fail("lds_cache_free failed");
  remove_cache_files();
}

/* ---- 8: responses through a cache ---- */

static int answer_listener = -1;
static int answer_port;
static lds_id cached_loader;
/* The responses of the current input, guarded by mu. */
static const uint8_t *answers[2];
static size_t answer_lengths[2];
static int answers_given;

/* Answers each connection's request (read up to its blank line) with the
 * next response of the current input, then closes it. */
static void *answer_loop(void *unused) {
  (void)unused;
  for (;;) {
    int conn = accept(answer_listener, NULL, NULL);
    if (conn < 0) continue;
    char request[8192];
    size_t got = 0;
    while (got < sizeof request - 1) {
      ssize_t n = read(conn, request + got, sizeof request - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
      request[got] = 0;
      if (strstr(request, "\r\n\r\n")) break;
    }
    /* A copy: the input may be gone before the client has read it all. */
    pthread_mutex_lock(&mu);
    size_t length = answers_given < 2 ? answer_lengths[answers_given] : 0;
    uint8_t *answer = malloc(length ? length : 1);
    if (answer && length) memcpy(answer, answers[answers_given], length);
    answers_given++;
    pthread_mutex_unlock(&mu);
    for (size_t sent = 0; answer && sent < length;) {
      ssize_t n = write(conn, answer + sent, length - sent);
      if (n <= 0) break;
      sent += (size_t)n;
    }
    free(answer);
    close(conn);
  }
  return NULL;
}

static void setup_answers(void) {
  if (answer_listener >= 0) return;
  signal(SIGPIPE, SIG_IGN);
  answer_listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (answer_listener < 0 || bind(answer_listener, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(answer_listener, 16) != 0 || getsockname(answer_listener, (struct sockaddr *)&a, &len) != 0)
    fail("cannot listen on 127.0.0.1");
  answer_port = ntohs(a.sin_port);
  pthread_t thread;
  if (pthread_create(&thread, NULL, answer_loop, NULL) != 0) fail("pthread_create failed");
  pthread_detach(thread);
  lds_http_options ho = LDS_HTTP_OPTIONS_INIT;
  ho.proxy = "";
  if (lds_http_loader_new(rt, &ho, &cached_loader) != LDS_OK) fail("an http loader could not be made");
}

/* Loads through `cache` under one key with `policy`; waits for the end. */
static outcome load_cached(const void *req, size_t len, lds_id cache, uint32_t policy) {
  outcome o = {0};
  lds_id cell;
  if (lds_loadable_new(rt, on_event, &o, &cell) != LDS_OK) fail("lds_loadable_new failed");
  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.timeout_ms = 5000;
  opts.cache = cache;
  opts.cache_key = "k";
  opts.cache_key_len = 1;
  opts.cache_policy = policy;
  int rc = lds_loadable_load(rt, cell, cached_loader, req, len, &opts);
  if (rc != LDS_OK) fail("lds_loadable_load returned %d", rc);
  pthread_mutex_lock(&mu);
  while (!o.done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  if (lds_loadable_free(rt, cell) != LDS_OK) fail("lds_loadable_free failed");
  return o;
}

/* Whether header lines hold a field `name` (lower case), in any case. */
static bool has_field(const char *lines, size_t n, const char *name) {
  size_t len = strlen(name);
  for (size_t at = 0; at < n;) {
    if (n - at > len && lines[at + len] == ':' && strncasecmp(lines + at, name, len) == 0) return true;
    const char *nl = memchr(lines + at, '\n', n - at);
    if (!nl) break;
    at = (size_t)(nl - lines) + 1;
  }
  return false;
}

/* Whether the http loader's cache may store a response of `status` with
 * these header lines (RFC 9111 section 3): a final status but 206; outside
 * 2xx, one cacheable by default, or one with explicit freshness or public. */
static bool storable(const lds_http_response *r) {
  static const int by_default[] = {203, 204, 300, 301, 308, 404, 405, 410, 414, 501};
  if (r->status < 200 || r->status == 206) return false;
  if (r->status <= 299) return true;
  for (size_t i = 0; i < sizeof by_default / sizeof by_default[0]; i++)
    if (r->status == by_default[i]) return true;
  return has_field(r->headers, r->headers_len, "cache-control") || has_field(r->headers, r->headers_len, "expires");
}

static void target_cached_responses(input *in) {
  setup_answers();
  size_t split = in->n ? (size_t)u8(in) * in->n / 256 : 0;
  /* The answers are served as they are, folded header lines included: with
   * a libcurl older than 8.1.0 the loader reuses no easy handle, since a
   * folded first header would otherwise touch the previous transfer's freed
   * header (curl issue 11101; this target found it). */
  uint8_t *served = malloc(in->n ? in->n : 1);
  if (!served) fail("out of memory");
  memcpy(served, in->p, in->n);
  pthread_mutex_lock(&mu);
  answers[0] = served;
  answer_lengths[0] = split < in->n ? split : in->n;
  answers[1] = served + answer_lengths[0];
  answer_lengths[1] = in->n - answer_lengths[0];
  answers_given = 0;
  pthread_mutex_unlock(&mu);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", answer_port);
  lds_http_request req = LDS_HTTP_REQUEST_INIT;
  req.url = url;
  req.timeout_ms = 2000;
  req.max_body = 1 << 16;
  const char *headers[] = {"X-Lang: en"};
  req.headers = headers;
  req.header_count = 1;
  void *encoded = NULL;
  size_t encoded_len = 0;
  if (lds_http_request_encode(&req, &encoded, &encoded_len) != LDS_OK) fail("lds_http_request_encode failed");
  lds_id cache;
  if (lds_memory_cache_new(rt, NULL, &cache) != LDS_OK) fail("lds_memory_cache_new failed");
  outcome first = load_cached(encoded, encoded_len, cache, LDS_POLICY_LOAD_ONLY);
  outcome second = load_cached(encoded, encoded_len, cache, LDS_POLICY_CACHE_FIRST);
  if (first.status != LDS_LOADED && first.status != LDS_ERROR) fail("cached responses: first load ended %d", first.status);
  if (second.status != LDS_LOADED && second.status != LDS_ERROR)
    fail("cached responses: second load ended %d", second.status);
  lds_cache_value v;
  int rc = lds_cache_get(rt, cache, "k", 1, &v);
  if (rc == 1) {
    lds_http_response r;
    if (lds_http_response_decode(v.value, v.value_len, &r) != LDS_OK) fail("a stored response does not decode");
    if (!storable(&r)) fail("a response of status %d was stored", r.status);
    lds_cache_value_clear(&v);
  } else if (rc != 0) {
    fail("lds_cache_get returned %d", rc);
  }
  if (lds_cache_free(rt, cache) != LDS_OK) fail("lds_cache_free failed");
  lds_free(encoded);
  /* The input goes away: later connections get no answer. */
  pthread_mutex_lock(&mu);
  answers_given = 2;
  pthread_mutex_unlock(&mu);
  free(served);
}

/* ------------------------------------------------------------------ */
/* Pages: the page request and page value encodings                    */
/* ------------------------------------------------------------------ */

/* The harness's reader of a page request: 0 malformed, 1 a cursor over
 * LDS_CURSOR_MAX, 2 decodes. */
static int page_request_read(const uint8_t *p, size_t n, int32_t *dir, span *req, span *cur) {
  reader r = {p, n, 0};
  if (n < 5 || memcmp(p, "\0LPQ", 4) != 0) return 0;
  uint8_t d = p[4];
  if (d != 0 && d != 1 && d != 0xFF) return 0;
  *dir = d == 0 ? 0 : (d == 1 ? 1 : -1);
  r.off = 5;
  if (!r_field(&r, req) || req->absent || !r_field(&r, cur) || r.off != n) return 0;
  return !cur->absent && cur->len > LDS_CURSOR_MAX ? 1 : 2;
}

/* lds_page_request_decode over raw bytes (what it reads must agree with
 * the harness's reader) and over an encoding of fields from the input. */
static void target_page_request(input *in) {
  uint8_t how = u8(in);
  buf e = {0};
  const uint8_t *p = in->p;
  size_t n = in->n;
  if (how & 1) {
    /* Fields from the input; the cursor may be absent or over-long. */
    size_t rl, cl;
    const uint8_t *rq = bytes(in, 64, &rl);
    const uint8_t *cu = bytes(in, 64, &cl);
    uint8_t dirs[] = {0, 1, 0xFF, 2};
    b_put(&e, "\0LPQ", 4);
    b_put(&e, &dirs[(how >> 1) % 4], 1);
    b_u32(&e, (uint32_t)rl);
    b_put(&e, rq, rl);
    switch ((how >> 3) % 4) {
    case 0: b_u32(&e, ABSENT); break;
    case 1: {
      size_t big = LDS_CURSOR_MAX + (how >> 5);
      uint8_t *zeros = calloc(1, big);
      if (!zeros) return;
      b_u32(&e, (uint32_t)big);
      b_put(&e, zeros, big);
      free(zeros);
      break;
    }
    default: b_u32(&e, (uint32_t)cl); b_put(&e, cu, cl); break;
    }
    if (how & 0x80) b_put(&e, in->p, in->n > 3 ? 3 : in->n);
    p = e.p;
    n = e.n;
  }
  int32_t dir = 0;
  span rq = {0}, cu = {0};
  int want = page_request_read(p, n, &dir, &rq, &cu);
  lds_page_request pr;
  memset(&pr, 0x5a, sizeof pr);
  int rc = lds_page_request_decode(p, n, &pr);
  if (want == 0) {
    if (rc != LDS_EINVAL) fail("lds_page_request_decode: malformed bytes gave %d", rc);
    if (pr.request || pr.request_len || pr.cursor || pr.cursor_len || pr.direction)
      fail("lds_page_request_decode: out not zeroed on LDS_EINVAL");
  } else if (want == 1) {
    if (rc != LDS_ETOOBIG) fail("lds_page_request_decode: a cursor of %zu bytes gave %d", cu.len, rc);
  } else {
    if (rc != LDS_OK) fail("lds_page_request_decode: a valid request gave %d", rc);
    if (pr.direction != dir || pr.request_len != rq.len || (rq.len && pr.request != p + rq.at))
      fail("lds_page_request_decode: request or direction read wrong");
    if (cu.absent ? (pr.cursor != NULL || pr.cursor_len != 0) : (pr.cursor != p + cu.at || pr.cursor_len != cu.len))
      fail("lds_page_request_decode: cursor read wrong");
  }
  free(e.p);
}

typedef struct page_outcome {
  bool done;
  int32_t status, domain, code;
  uint8_t *value;
  size_t value_len;
} page_outcome;

static const uint8_t *page_bytes;
static size_t page_len;

static void page_start(lds_runtime *r, lds_id job, const void *req, size_t len, void *data) {
  (void)req, (void)len, (void)data;
  int rc = lds_job_succeed(r, job, page_bytes, page_len);
  if (rc != LDS_OK) fail("lds_job_succeed of a page returned %d", rc);
}

static void on_page_event(const lds_event *ev, void *user_data) {
  page_outcome *o = user_data;
  if (ev->type != LDS_EVENT_STATE || ev->status == LDS_LOADING) return;
  pthread_mutex_lock(&mu);
  if (!o->done) {
    o->done = true;
    o->status = ev->status;
    o->domain = ev->error_domain;
    o->code = ev->error_code;
    if (ev->kind != 0) fail("the first page's event has index %d", ev->kind);
    if (ev->status == LDS_LOADED) {
      o->value = malloc(ev->value_len ? ev->value_len : 1);
      if (!o->value) fail("malloc");
      memcpy(o->value, ev->value, ev->value_len);
      o->value_len = ev->value_len;
    }
  }
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* A loader completes the first page of a pages cell with the input's
 * bytes (lds_job_succeed): a plain value, or a page value's encoding that
 * decodes, has a cursor over LDS_CURSOR_MAX, or does not decode. */
static void target_page_value(input *in) {
  static lds_id loader;
  if (!loader && lds_loader_new(rt, page_start, NULL, NULL, &loader) != LDS_OK) fail("lds_loader_new failed");
  uint8_t how = u8(in);
  buf e = {0};
  if (how & 1) b_put(&e, "\0LPV", 4);
  b_put(&e, in->p, in->n);
  page_bytes = e.p;
  page_len = e.n;
  /* The harness's reading. 0: malformed, 1: a cursor too long, 2: decodes. */
  bool tagged = e.n >= 4 && memcmp(e.p, "\0LPV", 4) == 0;
  span v = {0}, next = {0}, prev = {0};
  int want = 2;
  if (tagged) {
    reader r = {e.p, e.n, 4};
    if (!r_field(&r, &v) || v.absent || !r_field(&r, &next) || !r_field(&r, &prev) || r.off != e.n) want = 0;
    else if ((!next.absent && next.len > LDS_CURSOR_MAX) || (!prev.absent && prev.len > LDS_CURSOR_MAX)) want = 1;
  }
  page_outcome o = {0};
  lds_pages_options po = LDS_PAGES_OPTIONS_INIT;
  po.on_event = on_page_event;
  po.user_data = &o;
  lds_id cell;
  if (lds_pages_new(rt, &po, &cell) != LDS_OK) fail("lds_pages_new failed");
  lds_load_options opts = LDS_LOAD_OPTIONS_INIT;
  opts.timeout_ms = 5000;
  int rc = lds_pages_load(rt, cell, loader, "q", 1, &opts);
  if (rc != LDS_OK) fail("lds_pages_load returned %d", rc);
  pthread_mutex_lock(&mu);
  while (!o.done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  if (want == 2) {
    const uint8_t *shown = tagged ? e.p + v.at : e.p;
    size_t shown_len = tagged ? v.len : e.n;
    if (o.status != LDS_LOADED) fail("a page value that decodes ended with status %d, code %d", o.status, o.code);
    if (o.value_len != shown_len || (shown_len && memcmp(o.value, shown, shown_len) != 0))
      fail("a page shows %zu bytes, not its value's %zu", o.value_len, shown_len);
    int more_next = lds_pages_has_more(rt, cell, 1), more_prev = lds_pages_has_more(rt, cell, -1);
    if (more_next != (tagged && !next.absent) || more_prev != (tagged && !prev.absent))
      fail("lds_pages_has_more: %d and %d for the cursors decoded", more_next, more_prev);
    size_t count = 0;
    if (lds_pages_count(rt, cell, &count) != LDS_OK || count != 1) fail("lds_pages_count: %zu pages", count);
  } else {
    int32_t code = want == 1 ? LDS_ETOOBIG : LDS_EINVAL;
    if (o.status != LDS_ERROR || o.domain != LDS_DOMAIN_LOADSTATE || o.code != code)
      fail("a page value that does not decode (%d) ended with status %d, domain %d, code %d", want, o.status,
           o.domain, o.code);
  }
  if (lds_pages_free(rt, cell) != LDS_OK) fail("lds_pages_free failed");
  free(o.value);
  free(e.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size};
  uint8_t target = u8(&in);
  switch (target % 11) {
  case 0: target_http_encode(&in); break;
  case 1: target_response_raw(&in); break;
  case 2: target_response_fields(&in); break;
  case 3: target_exec_encode(&in); break;
  case 4: setup(); target_http_load(&in); break;
  case 5: setup(); target_exec_load(&in); break;
  case 6: setup(); target_file_load(&in); break;
  case 7: setup(); target_cache_file(&in); break;
  case 8: setup(); target_cached_responses(&in); break;
  case 9: target_page_request(&in); break;
  default: setup(); target_page_value(&in); break;
  }
  return 0;
}
