/*
 * redis_server.h — a real redis-server for the C tests and benchmarks.
 *
 * Lifecycle: redis_server_start picks a free port of 127.0.0.1, makes a
 * temporary directory of its own (/tmp/lds-redis-XXXXXX) and runs Debian's
 * redis-server there, without persistence (--save "" --appendonly no),
 * listening on that port and on a unix socket in the directory; it returns
 * once the server's log says "Ready to accept connections" (waited for
 * with inotify on the directory and a pidfd of the server, until a
 * deadline). redis_server_stop (SIGTERM) and redis_server_kill (SIGKILL)
 * end it and reap it; redis_server_restart starts it again on the same
 * port and directory; redis_server_destroy stops it and removes the
 * directory. The server gets SIGKILL when the thread that started it
 * ends (PR_SET_PDEATHSIG), so a test that crashes leaves no server.
 *
 * It never uses a redis-server it did not start (one systemd may run on
 * 6379 is left alone). Not thread-safe: one thread drives a server.
 * Failures are printed on stderr, with the end of the server's log.
 */
#ifndef LOADSTATE_TEST_REDIS_SERVER_H
#define LOADSTATE_TEST_REDIS_SERVER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct redis_server {
  int port;          /* TCP port on 127.0.0.1 */
  pid_t pid;         /* the running server, 0 when stopped */
  int runs;          /* how many times it was started */
  char dir[64];      /* its temporary directory */
  char socket[96];   /* its unix socket: DIR/redis.sock */
  char url[64];      /* "redis://127.0.0.1:PORT" */
  char log[96];      /* the current run's log: DIR/redis-N.log */
  bool cluster;      /* a Redis Cluster node (redis_server_start_cluster_node) */
  int bus_port;      /* a cluster node's bus port (--cluster-port) */
} redis_server;

/* Starts a new server; true once it accepts connections. */
bool redis_server_start(redis_server *s);
/* Starts a new server in cluster mode (--cluster-enabled yes, its own
 * nodes.conf, --cluster-node-timeout 1000, its bus on another free port
 * of 127.0.0.1), not yet part of a cluster:
 * redis-cli --cluster create joins the nodes. */
bool redis_server_start_cluster_node(redis_server *s);
/* Starts a stopped server again on the same port and directory. */
bool redis_server_restart(redis_server *s);
/* SIGTERM, then waits for the exit (SIGKILL after the deadline). True when it exited. */
bool redis_server_stop(redis_server *s);
/* SIGKILL, then reaps it. */
bool redis_server_kill(redis_server *s);
/* Stops the server if it runs and removes its directory. */
void redis_server_destroy(redis_server *s);

/* One command on a new connection (hiredis's redisCommand format); the
 * reply, to release with freeReplyObject, or NULL (printed on stderr). */
redisReply *redis_server_command(const redis_server *s, const char *format, ...);
/* The integer reply of a command, or `fallback` when it has none. */
long long redis_server_integer(const redis_server *s, long long fallback, const char *format, ...);

/* Seconds every wait of the helper allows: 10, or 120 with LDS_TEST_SLOW. */
int redis_server_deadline_s(void);

#endif
