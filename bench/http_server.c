/* http_server.c — a minimal keep-alive HTTP/1.1 server for the HTTP
 * benchmark: epoll, one thread, every GET answered with the same body.
 * Started by bench/http.c on 127.0.0.1 and an ephemeral port, which it
 * prints on stdout; exits when stdin closes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONN 65536

typedef struct { char buf[8192]; size_t used; } conn;
static conn *conns[MAX_CONN];
static char response[4096];
static size_t response_len;

static void drop(int ep, int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
  free(conns[fd]);
  conns[fd] = NULL;
}

static void serve(int ep, int fd) {
  conn *c = conns[fd];
  for (;;) {
    ssize_t n = read(fd, c->buf + c->used, sizeof c->buf - c->used);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { drop(ep, fd); return; }
    if (n < 0) break;
    c->used += (size_t)n;
    char *end;
    while ((end = memmem(c->buf, c->used, "\r\n\r\n", 4)) != NULL) {
      size_t request_len = (size_t)(end - c->buf) + 4;
      if (write(fd, response, response_len) != (ssize_t)response_len) { drop(ep, fd); return; }
      memmove(c->buf, c->buf + request_len, c->used - request_len);
      c->used -= request_len;
    }
    if (c->used == sizeof c->buf) { drop(ep, fd); return; }
  }
}

int main(int argc, char **argv) {
  size_t body = argc > 1 ? (size_t)atoi(argv[1]) : 1024;
  if (body > 2048) body = 2048;
  int head = snprintf(response, sizeof response,
                      "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nContent-Type: text/plain\r\n\r\n", body);
  memset(response + head, 'b', body);
  response_len = (size_t)head + body;

  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 4096) != 0) { perror("listen"); return 1; }
  socklen_t alen = sizeof a;
  getsockname(ls, (struct sockaddr *)&a, &alen);
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);

  int ep = epoll_create1(0);
  struct epoll_event ev = { .events = EPOLLIN, .data.fd = ls };
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
  ev.data.fd = 0;
  epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
  struct epoll_event events[256];
  for (;;) {
    int n = epoll_wait(ep, events, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;
      if (fd == 0) return 0; /* stdin closed or written: the parent is done */
      if (fd == ls) {
        int c;
        while ((c = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
          if (c >= MAX_CONN) { close(c); continue; }
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          conns[c] = calloc(1, sizeof(conn));
          struct epoll_event cev = { .events = EPOLLIN, .data.fd = c };
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
      } else {
        serve(ep, fd);
      }
    }
  }
}
