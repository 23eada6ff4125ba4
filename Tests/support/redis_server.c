/* redis_server.c — see redis_server.h. */
#include "redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int redis_server_deadline_s(void) {
  const char *slow = getenv("LDS_TEST_SLOW");
  return slow != NULL && *slow != '\0' && strcmp(slow, "0") != 0 ? 120 : 10;
}

/* A pidfd of the process, or -1 (the caller then polls). Not asked again
 * once the kernel (or valgrind, which does not know the call) refused it. */
static int open_pidfd(pid_t pid) {
  static bool unsupported;
  if (unsupported) return -1;
  int fd = pidfd_open(pid, 0);
  if (fd < 0 && errno == ENOSYS) unsupported = true;
  return fd;
}

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A port of 127.0.0.1 that nothing listens on now, or -1. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

/* Prints the last lines of the current log on stderr. */
static void print_log_tail(const redis_server *s) {
  char buf[2048];
  int fd = open(s->log, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  off_t size = lseek(fd, 0, SEEK_END);
  off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, from);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  fprintf(stderr, "redis_server: end of %s:\n%s\n", s->log, buf);
}

/* Whether the current log has the line that says the server is ready. */
static bool log_says_ready(const redis_server *s, bool *address_in_use) {
  FILE *f = fopen(s->log, "re");
  if (f == NULL) return false;
  char line[1024];
  bool ready = false;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strstr(line, "Ready to accept connections") != NULL) ready = true;
    if (strstr(line, "Address already in use") != NULL) *address_in_use = true;
  }
  fclose(f);
  return ready;
}

/* Reaps the server if it exited; true when it did. */
static bool reap(redis_server *s, bool block) {
  if (s->pid == 0) return true;
  int status;
  pid_t r;
  while ((r = waitpid(s->pid, &status, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == s->pid || (r < 0 && errno == ECHILD)) {
    s->pid = 0;
    return true;
  }
  return false;
}

/* Forks and execs redis-server on s->port; waits for its log line.
 * *address_in_use tells the caller to try another port. */
static bool launch(redis_server *s, bool *address_in_use) {
  char port[16], bus_port[16];
  snprintf(port, sizeof port, "%d", s->port);
  /* A cluster node's bus: another free port (by default it would be the
   * port + 10000, past 65535 for a port over 55535). */
  if (s->cluster && s->bus_port == 0) s->bus_port = free_port();
  snprintf(bus_port, sizeof bus_port, "%d", s->bus_port);
  s->runs++;
  snprintf(s->log, sizeof s->log, "%s/redis-%d.log", s->dir, s->runs);
  snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
  /* Watch the directory before the server can write its first line. */
  int watch = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (watch < 0 || inotify_add_watch(watch, s->dir, IN_CREATE | IN_MODIFY) < 0) {
    fprintf(stderr, "redis_server: inotify on %s: %s\n", s->dir, strerror(errno));
    if (watch >= 0) close(watch);
    return false;
  }
  char stderr_path[96];
  snprintf(stderr_path, sizeof stderr_path, "%s/stderr-%d.log", s->dir, s->runs);
  const char *argv[] = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--dir", s->dir, "--logfile", s->log,
                        "--unixsocket", s->socket, "--unixsocketperm", "700",
                        "--daemonize", "no", "--databases", "16",
                        s->cluster ? "--cluster-enabled" : NULL, "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "1000", "--cluster-port", bus_port, NULL};
  pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "redis_server: fork: %s\n", strerror(errno));
    close(watch);
    return false;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int in = open("/dev/null", O_RDONLY);
    int err = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in >= 0) dup2(in, 0);
    if (err >= 0) {
      dup2(err, 1);
      dup2(err, 2);
    }
    execvp("redis-server", (char *const *)argv);
    _exit(127);
  }
  s->pid = pid;
  int pidfd = open_pidfd(pid);
  long long deadline = mono_ms() + 1000LL * redis_server_deadline_s();
  bool ready = false;
  for (;;) {
    if (log_says_ready(s, address_in_use)) {
      ready = true;
      break;
    }
    if (reap(s, false)) {
      fprintf(stderr, "redis_server: redis-server exited before it was ready (port %d)\n", s->port);
      break;
    }
    long long left = deadline - mono_ms();
    if (left <= 0) {
      fprintf(stderr, "redis_server: not ready after %d s (port %d)\n", redis_server_deadline_s(), s->port);
      break;
    }
    /* Without a pidfd, look at the process again every 100 ms. */
    struct pollfd p[2] = {{.fd = watch, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    poll(p, pidfd >= 0 ? 2 : 1, (int)(pidfd >= 0 || left < 100 ? left : 100));
    char events[4096];
    while (read(watch, events, sizeof events) > 0) {
    }
  }
  close(watch);
  if (pidfd >= 0) close(pidfd);
  if (!ready) {
    if (!*address_in_use) print_log_tail(s);
    if (s->pid != 0) {
      kill(s->pid, SIGKILL);
      reap(s, true);
    }
  }
  return ready;
}

static bool start_new(redis_server *s, bool cluster);

bool redis_server_start(redis_server *s) { return start_new(s, false); }

bool redis_server_start_cluster_node(redis_server *s) { return start_new(s, true); }

static bool start_new(redis_server *s, bool cluster) {
  memset(s, 0, sizeof *s);
  s->cluster = cluster;
  snprintf(s->dir, sizeof s->dir, "/tmp/lds-redis-XXXXXX");
  if (mkdtemp(s->dir) == NULL) {
    fprintf(stderr, "redis_server: mkdtemp: %s\n", strerror(errno));
    return false;
  }
  snprintf(s->socket, sizeof s->socket, "%s/redis.sock", s->dir);
  /* Another process may take the free port before the server binds it. */
  for (int attempt = 0; attempt < 5; attempt++) {
    s->port = free_port();
    if (s->port < 0) break;
    bool in_use = false;
    if (launch(s, &in_use)) return true;
    if (!in_use) break;
  }
  fprintf(stderr, "redis_server: could not start redis-server\n");
  return false;
}

bool redis_server_restart(redis_server *s) {
  if (s->pid != 0) {
    fprintf(stderr, "redis_server: restart of a server that runs\n");
    return false;
  }
  bool in_use = false;
  return launch(s, &in_use);
}

/* Sends sig and waits for the exit until the deadline. */
static bool end_with(redis_server *s, int sig) {
  if (s->pid == 0) return true;
  int pidfd = open_pidfd(s->pid);
  if (kill(s->pid, sig) != 0 && errno != ESRCH) {
    fprintf(stderr, "redis_server: kill: %s\n", strerror(errno));
  }
  long long deadline = mono_ms() + 1000LL * redis_server_deadline_s();
  while (!reap(s, false)) {
    long long left = deadline - mono_ms();
    if (left <= 0) break;
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    if (pidfd >= 0) poll(&p, 1, (int)left);
    else poll(NULL, 0, left < 20 ? (int)left : 20);
  }
  if (pidfd >= 0) close(pidfd);
  if (s->pid != 0) {
    fprintf(stderr, "redis_server: still running after signal %d; killed\n", sig);
    kill(s->pid, SIGKILL);
    reap(s, true);
    return false;
  }
  return true;
}

bool redis_server_stop(redis_server *s) { return end_with(s, SIGTERM); }

bool redis_server_kill(redis_server *s) { return end_with(s, SIGKILL); }

void redis_server_destroy(redis_server *s) {
  if (s->pid != 0) redis_server_kill(s);
  if (s->dir[0] == '\0') return;
  char path[160];
  for (int i = 1; i <= s->runs; i++) {
    snprintf(path, sizeof path, "%s/redis-%d.log", s->dir, i);
    unlink(path);
    snprintf(path, sizeof path, "%s/stderr-%d.log", s->dir, i);
    unlink(path);
  }
  unlink(s->socket);
  /* What a cluster node (or a replica's full sync) leaves. */
  const char *left[] = {"nodes.conf", "dump.rdb"};
  for (size_t i = 0; i < sizeof left / sizeof left[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", s->dir, left[i]);
    unlink(path);
  }
  if (rmdir(s->dir) != 0) fprintf(stderr, "redis_server: rmdir %s: %s\n", s->dir, strerror(errno));
  s->dir[0] = '\0';
}

static redisReply *command_v(const redis_server *s, const char *format, va_list ap) {
  struct timeval tv = {.tv_sec = redis_server_deadline_s(), .tv_usec = 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "redis_server: connect to %d: %s\n", s->port, c ? c->errstr : "out of memory");
    if (c) redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  redisReply *r = redisvCommand(c, format, ap);
  if (r == NULL) fprintf(stderr, "redis_server: command failed: %s\n", c->errstr);
  redisFree(c);
  return r;
}

redisReply *redis_server_command(const redis_server *s, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  redisReply *r = command_v(s, format, ap);
  va_end(ap);
  return r;
}

long long redis_server_integer(const redis_server *s, long long fallback, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  redisReply *r = command_v(s, format, ap);
  va_end(ap);
  long long v = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : fallback;
  if (r != NULL) freeReplyObject(r);
  return v;
}
