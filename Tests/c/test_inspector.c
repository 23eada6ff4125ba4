/* test_inspector.c — lds_inspector_start, lds_inspector_url and
 * lds_inspector_stop through the C API: arguments, states, and a request
 * over a socket (the Python tests cover the HTTP side at length). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Sends request to 127.0.0.1:port and reads the answer's status line into status (NUL-terminated). */
static void http_status(unsigned port, const char *request, char *status, size_t cap) {
  status[0] = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && write(fd, request, strlen(request)) > 0) {
    size_t n = 0;
    ssize_t got;
    while (n + 1 < cap && (got = read(fd, status + n, cap - 1 - n)) > 0) n += (size_t)got;
    status[n] = 0;
    char *eol = strstr(status, "\r\n");
    if (eol) *eol = 0;
  }
  close(fd);
}

TEST(test_inspector_start_url_and_stop) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  char url[128];
  size_t len = 0;
  CHECK_RC(lds_inspector_url(rt, url, sizeof url, &len), LDS_ENOENT);
  CHECK_RC(lds_inspector_stop(rt), LDS_ENOENT);
  REQUIRE_RC(lds_inspector_start(rt, "127.0.0.1:0", NULL), LDS_OK);
  CHECK_RC(lds_inspector_start(rt, "127.0.0.1:0", NULL), LDS_ESTATE);
  REQUIRE_RC(lds_inspector_url(rt, url, sizeof url, &len), LDS_OK);
  CHECK_EQ(strlen(url), len);
  unsigned port = 0;
  char token[40] = "";
  REQUIRE(sscanf(url, "http://127.0.0.1:%u/?token=%39s", &port, token) == 2);
  CHECK_EQ(strlen(token), 32);
  char small[8];
  CHECK_RC(lds_inspector_url(rt, small, sizeof small, &len), LDS_ETOOBIG);
  CHECK_EQ(small[0], 0);

  char request[256], status[4096];
  snprintf(request, sizeof request, "GET /snapshot?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", token, port);
  http_status(port, request, status, sizeof status);
  CHECK_STR(status, "HTTP/1.1 200 OK");
  snprintf(request, sizeof request, "GET /snapshot HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", port);
  http_status(port, request, status, sizeof status);
  CHECK_STR(status, "HTTP/1.1 403 Forbidden");
  snprintf(request, sizeof request, "GET /snapshot?token=%s HTTP/1.1\r\nHost: attacker.example\r\n\r\n", token);
  http_status(port, request, status, sizeof status);
  CHECK_STR(status, "HTTP/1.1 421 Misdirected Request");

  REQUIRE_RC(lds_inspector_stop(rt), LDS_OK);
  CHECK_RC(lds_inspector_url(rt, url, sizeof url, &len), LDS_ENOENT);
  /* A new one gets a new token. */
  REQUIRE_RC(lds_inspector_start(rt, "localhost:0", NULL), LDS_OK);
  char again[128];
  REQUIRE_RC(lds_inspector_url(rt, again, sizeof again, &len), LDS_OK);
  CHECK(strstr(again, token) == NULL);
  rt_free(rt);
}

TEST(test_inspector_bad_arguments) {
  lds_runtime *rt = rt_new(LDS_DELIVER_LOOP);
  lds_inspector_options o = LDS_INSPECTOR_OPTIONS_INIT;
  CHECK_RC(lds_inspector_start(NULL, "127.0.0.1:0", NULL), LDS_EINVAL);
  CHECK_RC(lds_inspector_start(rt, NULL, NULL), LDS_EINVAL);
  const char *bad[] = {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "0.0.0.0:0",
                       "192.168.1.1:0", "127.1:0", "[::1]:0", "example.com:0", "127.0.0.1:0 ", "127.0.0.1:0x10"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int rc = lds_inspector_start(rt, bad[i], NULL);
    if (rc != LDS_EINVAL) check_fail(__FILE__, __LINE__, "address \"%s\": %d, expected LDS_EINVAL", bad[i], rc);
  }
  o.flags = 1u << 9;
  CHECK_RC(lds_inspector_start(rt, "127.0.0.1:0", &o), LDS_EINVAL);
  o.flags = 0;
  o.interval_ms = 10;
  CHECK_RC(lds_inspector_start(rt, "127.0.0.1:0", &o), LDS_EINVAL);
  o.interval_ms = 0;
  o.size = 4;
  CHECK_RC(lds_inspector_start(rt, "127.0.0.1:0", &o), LDS_EINVAL);
  size_t len;
  CHECK_RC(lds_inspector_url(rt, NULL, 4, &len), LDS_EINVAL);
  CHECK_RC(lds_inspector_url(rt, NULL, 0, NULL), LDS_EINVAL);
  rt_free(rt);
  CHECK_RC(lds_inspector_start(rt, "127.0.0.1:0", NULL), LDS_ECLOSED);
  CHECK_RC(lds_inspector_stop(rt), LDS_ECLOSED);
}
