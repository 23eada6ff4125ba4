/*
 * fuzz_redis.c — libFuzzer harness for the Redis boundary: whatever a
 * server (or anything listening on its port) answers, the Redis cache
 * must not crash, hang or grow without bound, and every call must answer
 * with a code its comment in include/loadstate.h lists.
 *
 * A server thread of the harness listens on 127.0.0.1 (an ephemeral port)
 * and on a unix socket in a scratch directory, both opened once per
 * process. It reads the commands the library sends (RESP arrays of bulk
 * strings, bounded) and answers each with the next reply the input queued
 * for the command's class (AUTH, SELECT, SUBSCRIBE, GET, SET, DEL,
 * PUBLISH, the scripts: lease, publish, release, sweep, keys; others);
 * with none queued it answers as Redis would, from a small store of its
 * own (so that puts, hits, leases and messages work between fuzzed
 * replies). Queued replies are well-formed replies of every type, of
 * shapes the command does not expect, stored entries that are truncated,
 * oversized, of another format or with a metadata length past their end,
 * raw bytes, a reply cut short, a closed connection, silence, messages on
 * the subscribed connection.
 *
 * Input: a byte of URL form, the cache's options (front tier, timeouts of
 * a few ms, lease time, key prefix), the URL's parts, replies queued
 * before the cache connects, then up to MAX_OPS operations: direct cache
 * calls (get, read, put, remove, clear, stats, keys, invalidate), shared
 * loads (LDS_LOAD_SHARE: the lease path) and cache-first loads through a
 * host loader, a load cancelled at once, a refresh, lds_redis_cache_status,
 * more queued replies, a pause, lds_cache_free. Every input ends with
 * lds_runtime_free.
 *
 * URLs stay on this machine: the fuzzed URL form keeps the scheme,
 * user, password, database and query of the input, but its host and port
 * are always the harness's (127.0.0.1 in one of its spellings), and its
 * unix path is the harness's socket (percent-escaped or not); nothing
 * names a host to resolve. A scheme other than redis:// and unix://, a
 * port followed by junk, an unclosed bracket, an IPv4 address between
 * brackets must give LDS_EINVAL.
 *
 * Checked: return codes within the header's sets (plus LDS_EREDIS, which
 * every call on a Redis cache may return); a put over max_value_bytes is
 * LDS_EREDIS; lists and reads consistent with their lengths; status
 * fields within their ranges; events: seq 1, 2, 3, ... per cell, the
 * event names its cell, a loadable status, a value only when LOADED,
 * LDS_DOMAIN_REDIS errors carry an LDS_REDIS_E* code; every load ends in
 * a terminal state within LOAD_DEADLINE_MS; nothing after
 * lds_runtime_free returns. Hangs are libFuzzer's -timeout.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "loadstate.h"

#define FUZZ_NAME "fuzz_redis"
#include "fuzz_input.h"

#define MAX_OPS 32
#define MAX_CELLS 4
#define MAX_CONNS 32
#define MAX_RECORDS 64
#define MAX_ARGS 16
#define MAX_STORE 32
#define CONN_BUF_MAX (1u << 20)
#define LOAD_DEADLINE_MS 5000
#define MAX_VALUE_SMALL 24

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void b_str(buf *b, const char *s) { b_put(b, s, strlen(s)); }

static void b_fmt(buf *b, const char *fmt, unsigned long long v) {
  char t[32];
  int n = snprintf(t, sizeof t, fmt, v);
  b_put(b, t, (size_t)n);
}

static void b_bulk(buf *b, const void *p, size_t n) {
  b_fmt(b, "$%llu\r\n", n);
  b_put(b, p, n);
  b_str(b, "\r\n");
}

static void b_be64(buf *b, uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) {
    uint8_t c = (uint8_t)(v >> s);
    b_put(b, &c, 1);
  }
}

/* ------------------------------------------------------------------ */
/* The server: commands in, queued replies out                         */
/* ------------------------------------------------------------------ */

enum { C_AUTH, C_SELECT, C_SUBSCRIBE, C_GET, C_SET, C_DEL, C_PUBLISH, C_ACQUIRE, C_PUBLISH_SCRIPT,
       C_RELEASE, C_SWEEP, C_KEYS, C_OTHER, C_COUNT };

/* One reply spec: bytes of the input, read by render(). */
typedef struct record {
  const uint8_t *p;
  size_t n;
} record;

typedef struct conn {
  int fd;
  uint8_t *buf;
  size_t n, cap;
  bool silent;       /* answers nothing any more */
  bool subscribed;
  uint8_t chan[64];
  size_t chan_len;
} conn;

typedef struct stored {
  uint8_t *key, *value;
  size_t key_len, value_len;
} stored;

static pthread_mutex_t srv_mu = PTHREAD_MUTEX_INITIALIZER;
static int tcp_listener = -1, unix_listener = -1, wake_pipe[2] = {-1, -1};
static int srv_port;
static char scratch[64], sock_path[128];
static conn conns[MAX_CONNS];
/* Under srv_mu: the current input's queued replies and the store. */
static record queues[C_COUNT][MAX_RECORDS];
static int queue_len[C_COUNT], queue_head[C_COUNT];
static stored store[MAX_STORE];
static uint64_t next_token;
static uint8_t key_prefix[16];
static size_t key_prefix_len;

/* A command as received: its arguments point into the connection's buffer. */
typedef struct command {
  int cls;
  size_t argc;
  const uint8_t *argv[MAX_ARGS];
  size_t argl[MAX_ARGS];
} command;

static bool arg_is(const command *c, size_t i, const char *s) {
  return i < c->argc && c->argl[i] == strlen(s) && strncasecmp((const char *)c->argv[i], s, c->argl[i]) == 0;
}

static bool arg_has(const command *c, size_t i, const char *s) {
  return i < c->argc && memmem(c->argv[i], c->argl[i], s, strlen(s)) != NULL;
}

/* The class of a command. The cache's scripts are told apart by what
 * they run: the store script (SET of ARGV[1]) counts as a SET, the remove
 * script as a DEL, the key index's ZRANGEBYLEX and the script that checks
 * which keys exist as KEYS. */
static int classify(const command *c) {
  static const char *names[] = {"AUTH", "SELECT", "SUBSCRIBE", "GET", "SET", "DEL", "PUBLISH"};
  for (int i = 0; i < 7; i++)
    if (arg_is(c, 0, names[i])) return i;
  if (arg_is(c, 0, "ZRANGEBYLEX")) return C_KEYS;
  if (!arg_is(c, 0, "EVAL")) return C_OTHER;
  if (arg_has(c, 1, "INCR")) return C_ACQUIRE;
  if (arg_has(c, 1, "SETRANGE")) return C_SWEEP;
  if (arg_has(c, 1, "'EXISTS'")) return C_KEYS;
  if (arg_has(c, 1, "redis.call('SET', KEYS[1], ARGV[2]")) return C_PUBLISH_SCRIPT;
  if (arg_has(c, 1, "redis.call('SET', KEYS[1], ARGV[1]")) return C_SET;
  if (arg_has(c, 1, "redis.call('DEL', KEYS[1])")) return C_DEL;
  return C_RELEASE;
}

/* The entry's name less the prefix, its hash tag and "v:": the key. */
static bool key_of_entry(const uint8_t *name, size_t len, const uint8_t **key, size_t *key_len) {
  if (len < key_prefix_len + 7) return false;
  *key = name + key_prefix_len + 7;
  *key_len = len - key_prefix_len - 7;
  return true;
}

static stored *store_find(const uint8_t *key, size_t len, bool create) {
  stored *free_slot = NULL;
  for (int i = 0; i < MAX_STORE; i++) {
    stored *s = &store[i];
    if (s->key && s->key_len == len && memcmp(s->key, key, len) == 0) return s;
    if (!s->key && !free_slot) free_slot = s;
  }
  if (!create || !free_slot) return NULL;
  free_slot->key = malloc(len ? len : 1);
  if (!free_slot->key) abort();
  memcpy(free_slot->key, key, len);
  free_slot->key_len = len;
  return free_slot;
}

static void store_set(const uint8_t *key, size_t kl, const uint8_t *v, size_t vl) {
  stored *s = store_find(key, kl, true);
  if (!s) return;
  free(s->value);
  s->value = malloc(vl ? vl : 1);
  if (!s->value) abort();
  memcpy(s->value, v, vl);
  s->value_len = vl;
}

static bool store_del(const uint8_t *key, size_t kl) {
  stored *s = store_find(key, kl, false);
  if (!s) return false;
  free(s->key);
  free(s->value);
  memset(s, 0, sizeof *s);
  return true;
}

static void store_clear(void) {
  for (int i = 0; i < MAX_STORE; i++) {
    free(store[i].key);
    free(store[i].value);
  }
  memset(store, 0, sizeof store);
}

static void conn_write(conn *c, const buf *out) {
  size_t sent = 0;
  while (c->fd >= 0 && sent < out->n) {
    ssize_t n = send(c->fd, out->p + sent, out->n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) return;
    sent += (size_t)n;
  }
}

/* Sends `payload` on `chan` to every subscribed connection (any channel when chan is NULL). */
static void push_message(const uint8_t *chan, size_t chan_len, const uint8_t *payload, size_t len) {
  for (int i = 0; i < MAX_CONNS; i++) {
    conn *c = &conns[i];
    if (c->fd < 0 || !c->subscribed || c->silent) continue;
    if (chan && (chan_len != c->chan_len || memcmp(chan, c->chan, chan_len) != 0)) continue;
    buf m = {0};
    b_str(&m, "*3\r\n$7\r\nmessage\r\n");
    b_bulk(&m, c->chan, c->chan_len);
    b_bulk(&m, payload, len);
    conn_write(c, &m);
    free(m.p);
  }
}

/* The reply Redis would give (from the harness's store). */
static void default_reply(const command *c, buf *out) {
  switch (c->cls) {
  case C_AUTH:
  case C_SELECT:
  case C_SET:
    if (c->cls == C_SET && arg_is(c, 0, "EVAL")) {
      /* EVAL script 3 entry index expiry value ttl key channel message */
      if (c->argc >= 11) {
        store_set(c->argv[3], c->argl[3], c->argv[6], c->argl[6]);
        push_message(c->argv[9], c->argl[9], c->argv[10], c->argl[10]);
      }
      b_str(out, ":1\r\n");
      break;
    }
    if (c->cls == C_SET && c->argc >= 3) store_set(c->argv[1], c->argl[1], c->argv[2], c->argl[2]);
    b_str(out, "+OK\r\n");
    break;
  case C_SUBSCRIBE:
    b_str(out, "*3\r\n$9\r\nsubscribe\r\n");
    b_bulk(out, c->argv[1], c->argc >= 2 ? c->argl[1] : 0);
    b_str(out, ":1\r\n");
    break;
  case C_GET: {
    stored *s = c->argc >= 2 ? store_find(c->argv[1], c->argl[1], false) : NULL;
    if (s) b_bulk(out, s->value, s->value_len);
    else b_str(out, "$-1\r\n");
    break;
  }
  case C_DEL:
    if (arg_is(c, 0, "EVAL")) {
      /* EVAL script 3 entry index expiry key channel message */
      bool gone = c->argc >= 4 && store_del(c->argv[3], c->argl[3]);
      if (c->argc >= 9) push_message(c->argv[7], c->argl[7], c->argv[8], c->argl[8]);
      b_fmt(out, ":%llu\r\n", (unsigned long long)gone);
      break;
    }
    b_fmt(out, ":%llu\r\n", c->argc >= 2 && store_del(c->argv[1], c->argl[1]));
    break;
  case C_PUBLISH:
    if (c->argc >= 3) push_message(c->argv[1], c->argl[1], c->argv[2], c->argl[2]);
    b_str(out, ":1\r\n");
    break;
  case C_ACQUIRE: {
    /* EVAL script 3 entry lease fence not-before lease-ms */
    stored *s = c->argc >= 4 ? store_find(c->argv[3], c->argl[3], false) : NULL;
    if (s && s->value_len >= 30 && s->value[1] == 0) {
      uint64_t t = 0;
      for (int i = 2; i < 10; i++) t = t << 8 | s->value[i];
      uint64_t not_before = c->argc >= 7 ? strtoull((const char *)c->argv[6], NULL, 10) : 0;
      if (t >= not_before) {
        b_str(out, "*2\r\n:1\r\n");
        b_bulk(out, s->value, s->value_len);
        break;
      }
    }
    b_fmt(out, "*3\r\n:2\r\n:%llu\r\n", ++next_token);
    b_bulk(out, s ? s->value : NULL, s ? s->value_len : 0);
    break;
  }
  case C_PUBLISH_SCRIPT:
    /* EVAL script 4 entry lease index expiry token value ttl channel message key */
    if (c->argc >= 12) {
      store_set(c->argv[3], c->argl[3], c->argv[8], c->argl[8]);
      push_message(c->argv[10], c->argl[10], c->argv[11], c->argl[11]);
    }
    b_str(out, ":1\r\n");
    break;
  case C_RELEASE:
    /* EVAL script 1 lease token channel message */
    if (c->argc >= 7) push_message(c->argv[5], c->argl[5], c->argv[6], c->argl[6]);
    b_str(out, ":1\r\n");
    break;
  case C_SWEEP:
  {
    /* EVAL script N index expiry entries... mode keys... */
    size_t n = c->argc >= 3 ? strtoul((const char *)c->argv[2], NULL, 10) : 0;
    if (n >= 2 && n < c->argc && arg_is(c, 3 + n, "delete"))
      for (size_t i = 5; i < 3 + n; i++) store_del(c->argv[i], c->argl[i]);
    b_str(out, ":0\r\n");
    break;
  }
  case C_KEYS: {
    int n = 0;
    buf items = {0};
    if (arg_is(c, 0, "EVAL")) {
      /* EVAL script N entries...: 1 for each entry held. */
      for (size_t i = 3; i < c->argc; i++, n++)
        b_fmt(&items, ":%d\r\n", store_find(c->argv[i], c->argl[i], false) != NULL);
    } else if (c->argc >= 3 && c->argl[2] > 0 && c->argv[2][0] != '(') {
      /* ZRANGEBYLEX index start end LIMIT 0 N: the keys held, on the first page. */
      for (int i = 0; i < MAX_STORE; i++) {
        const uint8_t *key;
        size_t len;
        if (store[i].key && key_of_entry(store[i].key, store[i].key_len, &key, &len)) {
          b_bulk(&items, key, len);
          n++;
        }
      }
    }
    b_fmt(out, "*%llu\r\n", (unsigned long long)n);
    b_put(out, items.p, items.n);
    free(items.p);
    break;
  }
  default:
    b_str(out, "-ERR unknown command\r\n");
    break;
  }
}

/* What a reply spec asks of the connection once its bytes are written. */
enum { A_NONE, A_CLOSE, A_SILENCE };

static const uint64_t interesting[] = {0, 1, 2, 3, 4, (uint64_t)-1, (uint64_t)-2, 0x7fffffffffffffffull,
                                       0x8000000000000000ull, 0xffffffffull, 0x80000000ull, 30, 1000000,
                                       1000001, 65536, 10};

/* A stored entry built from the spec: the library's 30-byte header, then
 * metadata and value, possibly with wrong fields or cut. */
static void render_entry(input *s, buf *out) {
  uint8_t how = u8(s);
  uint64_t now = wall_ms();
  uint64_t times[] = {now, now - 3600000, 0, UINT64_MAX, now + 3600000, now - 1, now + 1, 1};
  buf e = {0};
  uint8_t fmt = (how & 1) ? u8(s) : 1, stale = (how & 2) ? u8(s) % 3 : 0;
  b_put(&e, &fmt, 1);
  b_put(&e, &stale, 1);
  b_be64(&e, times[u8(s) % 8]);
  uint8_t exp = u8(s);
  b_be64(&e, exp % 3 == 0 ? 0 : times[exp % 8]);
  b_be64(&e, interesting[u8(s) % 16]);
  size_t meta_len, value_len;
  const uint8_t *meta = bytes(s, 16, &meta_len);
  const uint8_t *value = bytes(s, 32, &value_len);
  uint8_t ml = u8(s);
  uint32_t claimed = ml % 4 == 0 ? (uint32_t)meta_len + ml / 4 : ml % 4 == 1 ? 0xffffffffu : ml % 4 == 2 ? 0x80000000u
                                                                                                   : (uint32_t)meta_len;
  uint8_t be[4] = {(uint8_t)(claimed >> 24), (uint8_t)(claimed >> 16), (uint8_t)(claimed >> 8), (uint8_t)claimed};
  b_put(&e, be, 4);
  b_put(&e, meta, meta_len);
  /* Oversized: the value repeated, up to 64 KiB. */
  size_t repeat = (how & 4) ? (size_t)u8(s) * 256 + 1 : 1;
  for (size_t i = 0; i < repeat && e.n < 65536; i++) b_put(&e, value, value_len);
  size_t len = e.n;
  if (how & 8) len = len * u8(s) / 256;
  b_bulk(out, e.p, len);
  free(e.p);
}

/* Renders one reply spec into out; returns what the connection does next. */
static int render(input *s, const command *c, buf *out, int depth) {
  uint8_t kind = u8(s);
  size_t n;
  const uint8_t *p;
  switch (kind % 16) {
  case 0:
  case 1: {
    p = bytes(s, 24, &n);
    b_str(out, kind % 16 == 0 ? "+" : "-");
    for (size_t i = 0; i < n; i++)
      if (p[i] != '\r' && p[i] != '\n') b_put(out, &p[i], 1);
    b_str(out, "\r\n");
    break;
  }
  case 2: {
    uint8_t v = u8(s);
    uint64_t x = (v & 0x80) ? (uint64_t)(int64_t)(int8_t)(v << 1) : interesting[v % 16];
    b_fmt(out, ":%lld\r\n", (unsigned long long)x);
    break;
  }
  case 3:
    p = bytes(s, 40, &n);
    b_bulk(out, p, n);
    break;
  case 4: b_str(out, "$-1\r\n"); break;
  case 5: b_str(out, "*-1\r\n"); break;
  case 6: {
    uint8_t count = u8(s) % 8;
    b_fmt(out, "*%llu\r\n", count);
    for (uint8_t i = 0; i < count; i++) {
      if (depth >= 10) b_str(out, ":0\r\n");
      else render(s, c, out, depth + 1);
    }
    break;
  }
  case 7: render_entry(s, out); break;
  case 8:
    p = bytes(s, 48, &n);
    b_put(out, p, n);
    break;
  case 9: {
    buf whole = {0};
    render(s, c, &whole, depth + 1);
    size_t keep = whole.n * u8(s) / 256;
    b_put(out, whole.p, keep);
    free(whole.p);
    return A_CLOSE;
  }
  case 10: return A_CLOSE;
  case 11: return A_SILENCE;
  case 12: {
    /* A lease script's reply: {1, entry}, {2, token, entry}, {3, pttl}, with a field of another kind. */
    uint8_t which = u8(s);
    switch (which % 3) {
    case 0:
      b_str(out, "*2\r\n:1\r\n");
      render_entry(s, out);
      break;
    case 1:
      b_str(out, "*3\r\n:2\r\n");
      if (which & 8) render(s, c, out, depth + 1);
      else b_fmt(out, ":%llu\r\n", interesting[u8(s) % 16]);
      render_entry(s, out);
      break;
    default:
      b_str(out, "*2\r\n:3\r\n");
      b_fmt(out, ":%lld\r\n", (unsigned long long)(int64_t)(int8_t)u8(s));
      break;
    }
    break;
  }
  case 13: {
    /* A message on this connection, then the reply. */
    p = bytes(s, 24, &n);
    b_str(out, "*3\r\n$7\r\nmessage\r\n");
    if (c->cls == C_SUBSCRIBE && c->argc >= 2) b_bulk(out, c->argv[1], c->argl[1]);
    else b_bulk(out, "events", 6);
    b_bulk(out, p, n);
    if (depth < 10) return render(s, c, out, depth + 1);
    break;
  }
  case 14: {
    /* A header that promises more than comes. */
    static const char *big[] = {"$2147483647\r\n", "*2147483647\r\n", "$536870913\r\nab", "*1000001\r\n",
                                "$-2\r\n", "*-2\r\n", "$99999999999999999999\r\n", ":99999999999999999999\r\n"};
    b_str(out, big[u8(s) % 8]);
    break;
  }
  default: default_reply(c, out); break;
  }
  return A_NONE;
}

/* A message to every subscriber, chosen by the spec: kind D/R/X/C/I, an
 * origin, a body (the command's key, or bytes). */
static void render_push(input *s, const command *c) {
  static const char kinds[] = "DRXCIQ";
  uint8_t how = u8(s);
  buf m = {0};
  b_put(&m, &kinds[how % 6], 1);
  for (int i = 0; i < 8; i++) {
    uint8_t o = (how & 0x40) ? u8(s) : 0;
    b_put(&m, &o, 1);
  }
  /* The key the command is about: its entry or lease key less the prefix, the hash tag and "v:". */
  size_t at = arg_is(c, 0, "EVAL") ? 3 : 1;
  if ((how & 0x80) && at < c->argc && c->argl[at] >= key_prefix_len + 7) {
    b_put(&m, c->argv[at] + key_prefix_len + 7, c->argl[at] - key_prefix_len - 7);
  } else {
    size_t n;
    const uint8_t *p = bytes(s, 16, &n);
    b_put(&m, p, n);
  }
  if (how & 0x20) m.n = m.n * u8(s) / 256;
  push_message(NULL, 0, m.p, m.n);
  free(m.p);
}

static void conn_close(conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->buf);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

/* Answers one command; returns false when the connection is to close. */
static bool answer(conn *cn, command *c) {
  c->cls = classify(c);
  if (c->cls == C_SUBSCRIBE && c->argc >= 2) {
    cn->subscribed = true;
    cn->chan_len = c->argl[1] < sizeof cn->chan ? c->argl[1] : sizeof cn->chan;
    memcpy(cn->chan, c->argv[1], cn->chan_len);
  }
  if (cn->silent) return true;
  buf out = {0};
  int action = A_NONE;
  record *r = queue_head[c->cls] < queue_len[c->cls] ? &queues[c->cls][queue_head[c->cls]++] : NULL;
  input s = {r ? r->p : NULL, r ? r->n : 0};
  uint8_t flags = r ? u8(&s) : 0;
  if (r) action = render(&s, c, &out, 0);
  else default_reply(c, &out);
  conn_write(cn, &out);
  free(out.p);
  if (flags & 1) render_push(&s, c);
  if (action == A_SILENCE) cn->silent = true;
  return action != A_CLOSE;
}

/* Parses the RESP arrays of bulk strings at the start of the buffer and
 * answers each; false when the connection is to close (bad syntax too). */
static bool serve(conn *cn) {
  size_t off = 0;
  for (;;) {
    const uint8_t *p = cn->buf + off, *end = cn->buf + cn->n;
    if (p == end) break;
    command c = {0};
    if (*p != '*') return false;
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    char *e;
    long count = strtol((const char *)p + 1, &e, 10);
    if ((const uint8_t *)e != nl - 1 || nl[-1] != '\r' || count < 1 || count > 1024) return false;
    p = nl + 1;
    bool complete = true;
    for (long i = 0; i < count; i++) {
      if (p >= end) { complete = false; break; }
      if (*p != '$') return false;
      nl = memchr(p, '\n', (size_t)(end - p));
      if (!nl) { complete = false; break; }
      long len = strtol((const char *)p + 1, &e, 10);
      if ((const uint8_t *)e != nl - 1 || nl[-1] != '\r' || len < 0 || (size_t)len > CONN_BUF_MAX) return false;
      p = nl + 1;
      if ((size_t)(end - p) < (size_t)len + 2) { complete = false; break; }
      if (p[len] != '\r' || p[len + 1] != '\n') return false;
      if (c.argc < MAX_ARGS) {
        c.argv[c.argc] = p;
        c.argl[c.argc++] = (size_t)len;
      }
      p += len + 2;
    }
    if (!complete) break;
    off = (size_t)(p - cn->buf);
    if (!answer(cn, &c)) return false;
  }
  memmove(cn->buf, cn->buf + off, cn->n - off);
  cn->n -= off;
  return true;
}

static void accept_conn(int listener) {
  int fd = accept(listener, NULL, NULL);
  if (fd < 0) return;
  for (int i = 0; i < MAX_CONNS; i++)
    if (conns[i].fd < 0) {
      conns[i].fd = fd;
      return;
    }
  close(fd);
}

static void *server_loop(void *unused) {
  (void)unused;
  for (;;) {
    struct pollfd fds[MAX_CONNS + 3];
    int map[MAX_CONNS + 3];
    int n = 0;
    fds[n] = (struct pollfd){.fd = tcp_listener, .events = POLLIN};
    map[n++] = -1;
    fds[n] = (struct pollfd){.fd = unix_listener, .events = POLLIN};
    map[n++] = -1;
    fds[n] = (struct pollfd){.fd = wake_pipe[0], .events = POLLIN};
    map[n++] = -2;
    pthread_mutex_lock(&srv_mu);
    for (int i = 0; i < MAX_CONNS; i++)
      if (conns[i].fd >= 0) {
        fds[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        map[n++] = i;
      }
    pthread_mutex_unlock(&srv_mu);
    if (poll(fds, (nfds_t)n, -1) < 0) continue;
    pthread_mutex_lock(&srv_mu);
    for (int k = 0; k < n; k++) {
      if (!fds[k].revents) continue;
      if (map[k] == -1) {
        accept_conn(fds[k].fd);
        continue;
      }
      if (map[k] == -2) {
        char drain[64];
        while (read(wake_pipe[0], drain, sizeof drain) == (ssize_t)sizeof drain) {
        }
        continue;
      }
      conn *cn = &conns[map[k]];
      if (cn->fd != fds[k].fd) continue;
      if (cn->cap - cn->n < 65536) {
        cn->cap = cn->cap ? cn->cap * 2 : 131072;
        cn->buf = realloc(cn->buf, cn->cap);
        if (!cn->buf) abort();
      }
      ssize_t got = recv(cn->fd, cn->buf + cn->n, cn->cap - cn->n, MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        conn_close(cn);
        continue;
      }
      if (got < 0) continue;
      cn->n += (size_t)got;
      if (!serve(cn) || cn->n > CONN_BUF_MAX) conn_close(cn);
    }
    pthread_mutex_unlock(&srv_mu);
  }
  return NULL;
}

static void remove_scratch(void) {
  unlink(sock_path);
  rmdir(scratch);
}

static void server_start(void) {
  if (tcp_listener >= 0) return;
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < MAX_CONNS; i++) conns[i].fd = -1;
  tcp_listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (tcp_listener < 0 || bind(tcp_listener, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(tcp_listener, 64) != 0 || getsockname(tcp_listener, (struct sockaddr *)&a, &len) != 0)
    fail("cannot listen on 127.0.0.1");
  srv_port = ntohs(a.sin_port);
  snprintf(scratch, sizeof scratch, "/tmp/lds-fuzz-redis-XXXXXX");
  if (!mkdtemp(scratch)) fail("mkdtemp: %s", strerror(errno));
  snprintf(sock_path, sizeof sock_path, "%s/s", scratch);
  atexit(remove_scratch);
  struct sockaddr_un u;
  memset(&u, 0, sizeof u);
  u.sun_family = AF_UNIX;
  snprintf(u.sun_path, sizeof u.sun_path, "%s", sock_path);
  unix_listener = socket(AF_UNIX, SOCK_STREAM, 0);
  if (unix_listener < 0 || bind(unix_listener, (struct sockaddr *)&u, sizeof u) != 0 || listen(unix_listener, 64) != 0)
    fail("cannot listen on %s", sock_path);
  if (pipe(wake_pipe) != 0) fail("pipe");
  pthread_t thread;
  if (pthread_create(&thread, NULL, server_loop, NULL) != 0) fail("pthread_create failed");
  pthread_detach(thread);
}

/* Queues the replies of up to `count` records of the input. */
static void queue_records(input *in, unsigned count) {
  pthread_mutex_lock(&srv_mu);
  for (unsigned i = 0; i < count && in->n; i++) {
    int cls = u8(in) % C_COUNT;
    size_t n;
    const uint8_t *p = bytes(in, 96, &n);
    if (queue_len[cls] < MAX_RECORDS) queues[cls][queue_len[cls]++] = (record){p, n};
  }
  pthread_mutex_unlock(&srv_mu);
}

/* The input's replies go away: no connection of an earlier input stays
 * (the library closed them; the server may not have seen it yet). */
static void server_reset(void) {
  pthread_mutex_lock(&srv_mu);
  memset(queue_len, 0, sizeof queue_len);
  memset(queue_head, 0, sizeof queue_head);
  store_clear();
  next_token = 0;
  for (int i = 0; i < MAX_CONNS; i++)
    if (conns[i].fd >= 0) conn_close(&conns[i]);
  pthread_mutex_unlock(&srv_mu);
  if (write(wake_pipe[1], "w", 1) < 0) {
  }
}

/* ------------------------------------------------------------------ */
/* The library side                                                    */
/* ------------------------------------------------------------------ */

#define RC(code) (1u << (unsigned)(-(code)))
#define R_INVAL RC(LDS_EINVAL)
#define R_NOENT RC(LDS_ENOENT)
#define R_TOOBIG RC(LDS_ETOOBIG)
#define R_NOMEM RC(LDS_ENOMEM)
#define R_CLOSED RC(LDS_ECLOSED)
#define R_IO RC(LDS_EIO)
#define R_AGAIN RC(LDS_EAGAIN)
#define R_REDIS RC(LDS_EREDIS)

/* rc must be one of `results` (non-negative results, e.g. 0 and 1) or of the codes in `codes`. */
static int check(const char *what, int rc, int max_result, unsigned codes) {
  if (rc >= 0 ? rc > max_result : (rc < LDS_ENOTSUP || !(codes & RC(rc))))
    fail("%s returned %d (%s)", what, rc, lds_strerror(rc));
  return rc;
}

typedef struct cell {
  lds_id id;
  uint64_t last_seq;
  int32_t last_status;
  uint32_t last_flags;
} cell;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static lds_runtime *rt;
static atomic_bool runtime_freed;
static cell cells[MAX_CELLS];
/* Under mu: jobs started in the pending mode, not completed yet. */
static lds_id pending[64];
static int npending;
/* What the loader's start does: 0 succeed, 1 fail, 2 pending (succeed later), 3 pending (fail later),
 * 4 succeed with a value over a small max_value_bytes, 5 yield then succeed. */
static atomic_uint loader_mode;

static void on_event(const lds_event *ev, void *user_data) {
  cell *cl = user_data;
  if (atomic_load(&runtime_freed)) fail("an event after lds_runtime_free returned");
  if (ev->cell != cl->id) fail("an event for cell %llu names cell %llu", (unsigned long long)cl->id,
                               (unsigned long long)ev->cell);
  pthread_mutex_lock(&mu);
  if (ev->seq != cl->last_seq + 1)
    fail("cell %llu: event seq %llu after %llu", (unsigned long long)cl->id, (unsigned long long)ev->seq,
         (unsigned long long)cl->last_seq);
  if (ev->type != LDS_EVENT_STATE && ev->type != LDS_EVENT_PROGRESS && ev->type != LDS_EVENT_INTERRUPT)
    fail("event type %u", ev->type);
  if (ev->status != LDS_ABSENT && ev->status != LDS_LOADING && ev->status != LDS_LOADED && ev->status != LDS_ERROR)
    fail("a loadable cell's event with status %d", ev->status);
  if (ev->value_len && ev->status != LDS_LOADED) fail("a value with status %d", ev->status);
  if (ev->value_len && !ev->value) fail("a NULL value of %zu bytes", ev->value_len);
  if (ev->error_domain == LDS_DOMAIN_REDIS && (ev->error_code < LDS_REDIS_ECONNECT || ev->error_code > LDS_REDIS_EUNREACHABLE))
    fail("a Redis error with code %d", ev->error_code);
  if (ev->status == LDS_ERROR && !ev->error_message) fail("an error without a message");
  cl->last_seq = ev->seq;
  if (ev->type == LDS_EVENT_STATE) {
    cl->last_status = ev->status;
    cl->last_flags = ev->flags;
  }
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static const char big_value[] = "a value longer than the small max_value_bytes of the cache";

static void on_start(lds_runtime *r, lds_id job, const void *req, size_t len, void *data) {
  (void)data;
  if (r != rt) fail("start with another runtime");
  if (len && !req) fail("start with a NULL request");
  unsigned mode = atomic_load(&loader_mode);
  /* LDS_ECLOSED: a start that runs while lds_runtime_free begins. */
  const unsigned ok = RC(LDS_ECANCELED) | R_CLOSED;
  switch (mode) {
  case 0: check("lds_job_succeed", lds_job_succeed(r, job, req, len), 0, ok); break;
  case 1: check("lds_job_fail", lds_job_fail(r, job, 7, "loader failed"), 0, ok); break;
  case 4: check("lds_job_succeed", lds_job_succeed(r, job, big_value, sizeof big_value), 0, ok); break;
  case 5:
    check("lds_job_yield", lds_job_yield(r, job, "part", 4), 0, ok);
    check("lds_job_succeed", lds_job_succeed(r, job, req, len), 0, ok);
    break;
  default:
    pthread_mutex_lock(&mu);
    if (npending < 64) pending[npending++] = job;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    break;
  }
}

/* Completes the jobs waiting in the pending modes (mu held). */
static void complete_pending(void) {
  while (npending) {
    lds_id job = pending[--npending];
    pthread_mutex_unlock(&mu);
    int rc = atomic_load(&loader_mode) == 3 ? lds_job_fail(rt, job, 9, "late failure") : lds_job_succeed(rt, job, "late", 4);
    check("completing a pending job", rc, 0, RC(LDS_ECANCELED));
    pthread_mutex_lock(&mu);
  }
}

static bool terminal(const cell *cl, uint64_t before) {
  return cl->last_seq > before && cl->last_status != LDS_LOADING &&
         !(cl->last_flags & (LDS_FLAG_REFRESHING | LDS_FLAG_PARTIAL | LDS_FLAG_QUEUED));
}

/* Waits until each of the cells has had a terminal event after seq `before[i]`. */
static void wait_loads(cell *const *which, const uint64_t *before, int count) {
  uint64_t deadline = mono_ms() + LOAD_DEADLINE_MS;
  pthread_mutex_lock(&mu);
  for (;;) {
    complete_pending();
    bool all = true;
    for (int i = 0; i < count; i++) all &= terminal(which[i], before[i]);
    if (all) break;
    if (mono_ms() > deadline) {
      for (int i = 0; i < count; i++)
        fprintf(stderr, "cell %llu: seq %llu (before %llu) status %d flags %#x\n", (unsigned long long)which[i]->id,
                (unsigned long long)which[i]->last_seq, (unsigned long long)before[i], which[i]->last_status,
                which[i]->last_flags);
      fail("a load did not end within %d ms", LOAD_DEADLINE_MS);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 2000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&cv, &mu, &ts);
  }
  pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ */
/* URLs                                                                */
/* ------------------------------------------------------------------ */

/* Appends input text without the bytes in `drop` (and without NUL). */
static void b_text_without(buf *b, const uint8_t *p, size_t n, const char *drop) {
  for (size_t i = 0; i < n; i++)
    if (p[i] && !strchr(drop, p[i])) b_put(b, &p[i], 1);
}

/* The URL of the cache, from the input; *must_fail when the library must refuse it. */
static char *make_url(input *in, uint8_t form, bool *must_fail) {
  buf u = {0};
  char port[16];
  snprintf(port, sizeof port, "%d", srv_port);
  *must_fail = false;
  uint8_t how = u8(in);
  size_t n;
  const uint8_t *p;
  switch (form) {
  case 0:
    b_str(&u, "redis://127.0.0.1:");
    b_str(&u, port);
    break;
  case 1:
    /* User, password and database: AUTH and SELECT are sent. */
    b_str(&u, (how & 1) ? "redis://user:pass@127.0.0.1:" : "redis://:pass@127.0.0.1:");
    b_str(&u, port);
    if (how & 2) b_str(&u, "/3");
    break;
  case 2:
    b_str(&u, (how & 1) ? "unix://pass@" : "unix://");
    b_str(&u, sock_path);
    if (how & 2) b_str(&u, "?db=2");
    break;
  default: {
    /* Fuzzed: scheme, credentials, database or query from the input; the
     * host and port, or the socket path, are the harness's. */
    bool unix_form = how & 1;
    switch ((how >> 1) % 4) {
    case 0: b_str(&u, unix_form ? "unix://" : "redis://"); break;
    case 1: b_str(&u, "rediss://"); *must_fail = true; break;
    case 2:
      p = bytes(in, 8, &n);
      /* No "://" at all, so that no other reading can find a host in it. */
      b_text_without(&u, p, n, ":/");
      *must_fail = true;
      break;
    default: b_str(&u, unix_form ? "UNIX://" : "Redis://"); *must_fail = true; break;
    }
    p = bytes(in, 24, &n);
    if (n) {
      b_text_without(&u, p, n, "/?");
      b_str(&u, "@");
    }
    if (unix_form) {
      /* The socket's path, each byte percent-escaped or not. */
      uint8_t esc = u8(in);
      for (const char *s = sock_path; *s; s++) {
        if (esc & 1 && *s != '/') b_fmt(&u, "%%%02X", (unsigned char)*s);
        else if (esc & 2 && *s == '/' && s != sock_path) b_str(&u, "%2f");
        else b_put(&u, s, 1);
      }
      if (esc & 4) {
        b_str(&u, "%");
        *must_fail = true;
      }
      p = bytes(in, 16, &n);
      if (esc & 8) {
        b_str(&u, "?");
        b_text_without(&u, p, n, "");
      }
    } else {
      static const char *hosts[] = {"127.0.0.1", "[127.0.0.1]", "[::ffff:127.0.0.1]", "", "[127.0.0.1"};
      uint8_t h = u8(in);
      b_str(&u, hosts[h % 5]);
      if (h % 5 == 1 || h % 5 >= 3) *must_fail = true; /* brackets hold an IPv6 address only */
      static const char *before[] = {":", ":0", ":00", ":+"};
      b_str(&u, before[(h >> 3) % 4]);
      b_str(&u, port);
      if (h & 0x20) {
        /* Never ']': after "[127.0.0.1" it would make "[127.0.0.1:PORT]" a
         * host name (resolved) on the default port. */
        static const char junk[] = "x:@[ -";
        b_put(&u, &junk[u8(in) % 6], 1);
        *must_fail = true;
      }
      p = bytes(in, 12, &n);
      if (h & 0x40) {
        b_str(&u, "/");
        b_text_without(&u, p, n, "@");
      }
    }
    break;
  }
  }
  b_put(&u, "", 1);
  return (char *)u.p;
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

typedef struct run {
  lds_id cache, loader;
  bool cache_freed;
  uint64_t max_value;  /* the cache's max_value_bytes */
} run;

static const uint8_t *key_of(input *in, size_t *len) {
  static const char *keys[] = {"k", "a", "", "ab", "k2", "*", "a?[", "\xff"};
  uint8_t b = u8(in);
  if (b & 0x80) return bytes(in, 8, len);
  *len = strlen(keys[b % 8]);
  return (const uint8_t *)keys[b % 8];
}

static unsigned cache_codes(const run *r, unsigned codes) { return codes | R_REDIS | (r->cache_freed ? R_NOENT : 0); }

static void op_direct(run *r, input *in, uint8_t op) {
  size_t kl;
  const uint8_t *key = key_of(in, &kl);
  switch (op) {
  case 0: {
    lds_cache_value v;
    int rc = check("lds_cache_get", lds_cache_get(rt, r->cache, key, kl, &v), 1,
                   cache_codes(r, R_TOOBIG | R_IO | R_NOMEM | R_CLOSED));
    if (rc == 1 && v.value_len && !v.value) fail("lds_cache_get: a hit without its value");
    if (rc != 1 && (v.value || v.value_len)) fail("lds_cache_get: *out not zeroed on %d", rc);
    if (rc == 1 && v.stale > 1) fail("lds_cache_get: stale %u", v.stale);
    lds_cache_value_clear(&v);
    break;
  }
  case 1: {
    uint8_t b[64];
    size_t cap = u8(in) % 65, len = 12345;
    int rc = check("lds_cache_read", lds_cache_read(rt, r->cache, key, kl, cap ? b : NULL, cap, &len), 1,
                   cache_codes(r, R_TOOBIG | R_IO | R_CLOSED));
    if (rc != 1 && len != 0) fail("lds_cache_read: length %zu on %d", len, rc);
    break;
  }
  case 2: {
    size_t vl;
    const uint8_t *v = bytes(in, 48, &vl);
    int rc = check("lds_cache_put", lds_cache_put(rt, r->cache, key, kl, v, vl), 0,
                   cache_codes(r, R_TOOBIG | R_IO | R_NOMEM | R_CLOSED));
    if (vl > r->max_value && !r->cache_freed && rc != LDS_EREDIS)
      fail("lds_cache_put of %zu bytes over max_value_bytes %llu returned %d", vl, (unsigned long long)r->max_value, rc);
    break;
  }
  case 3:
    check("lds_cache_remove", lds_cache_remove(rt, r->cache, key, kl), 1, cache_codes(r, R_TOOBIG | R_IO | R_CLOSED));
    break;
  case 4: check("lds_cache_clear", lds_cache_clear(rt, r->cache), 0, cache_codes(r, R_IO | R_CLOSED)); break;
  case 5: {
    lds_cache_statistics st;
    check("lds_cache_stats", lds_cache_stats(rt, r->cache, &st), 0, cache_codes(r, R_IO | R_CLOSED));
    break;
  }
  case 6: {
    lds_cache_key_list l;
    int rc = check("lds_cache_keys", lds_cache_keys(rt, r->cache, key, kl, &l), 0,
                   cache_codes(r, R_TOOBIG | R_IO | R_NOMEM | R_CLOSED));
    if (rc != LDS_OK && (l.count || l.keys || l.block)) fail("lds_cache_keys: *out not zeroed on %d", rc);
    if (rc == LDS_OK && l.count && (!l.keys || !l.lengths)) fail("lds_cache_keys: %zu keys without arrays", l.count);
    size_t total = 0;
    for (size_t i = 0; rc == LDS_OK && i < l.count; i++) {
      /* Every key is readable: ASan checks the bytes. */
      if (l.lengths[i] && !l.keys[i]) fail("lds_cache_keys: key %zu NULL", i);
      for (size_t j = 0; j < l.lengths[i]; j++) total += ((const uint8_t *)l.keys[i])[j];
    }
    (void)total;
    lds_cache_key_list_clear(&l);
    break;
  }
  default:
    check("lds_cache_invalidate", lds_cache_invalidate(rt, r->cache, key, kl), 0,
          cache_codes(r, R_IO | R_AGAIN | R_CLOSED));
    break;
  }
}

static void op_status(run *r) {
  lds_redis_status st;
  memset(&st, 0xA5, sizeof st);
  st.size = sizeof st;
  int rc = check("lds_redis_cache_status", lds_redis_cache_status(rt, r->cache, &st), 0,
                 R_CLOSED | (r->cache_freed ? R_NOENT : 0));
  if (rc != LDS_OK) return;
  if (st.connected > 1 || st.subscribed > 1) fail("status: connected %u subscribed %u", st.connected, st.subscribed);
  /* The LDS_REDIS_E* codes: 1 to 11 (EPROTO, EREFUSED and EUNREACHABLE since 0.5). */
  if (st.last_error_code < 0 || st.last_error_code > LDS_REDIS_EUNREACHABLE)
    fail("status: last_error_code %d", st.last_error_code);
  if (!memchr(st.last_error, 0, sizeof st.last_error)) fail("status: last_error not terminated");
  if (st.last_error_code == 0 && st.last_error[0]) fail("status: a message without a code");
  st.size = sizeof st - 1;
  check("lds_redis_cache_status (small size)", lds_redis_cache_status(rt, r->cache, &st), 0, R_INVAL);
  check("lds_redis_cache_status (NULL)", lds_redis_cache_status(rt, r->cache, NULL), 0, R_INVAL);
}

/* Loads `count` cells (1 or 2) through the cache and waits for their ends. */
static void op_load(run *r, input *in, bool share, bool cancel) {
  uint8_t how = u8(in);
  int count = share && (how & 1) ? 2 : 1;
  atomic_store(&loader_mode, (how >> 1) % 6);
  size_t kl;
  const uint8_t *key = key_of(in, &kl);
  lds_load_options o = LDS_LOAD_OPTIONS_INIT;
  o.flags = share ? LDS_LOAD_SHARE : 0;
  o.cache = r->cache;
  o.cache_key = key;
  o.cache_key_len = kl;
  o.cache_policy = (how >> 4) % 4;
  uint8_t t = u8(in);
  o.timeout_ms = t % 4 == 0 ? 1 + t / 16 : 0;
  o.fresh_ms = (t & 4) ? 60000 : 0;
  o.max_age_ms = (t & 8) ? 1 : 0;
  cell *which[2];
  uint64_t before[2];
  uint8_t first = u8(in) % MAX_CELLS;
  for (int i = 0; i < count; i++) {
    which[i] = &cells[(first + i) % MAX_CELLS];
    pthread_mutex_lock(&mu);
    before[i] = which[i]->last_seq;
    pthread_mutex_unlock(&mu);
    unsigned codes = R_AGAIN | (r->cache_freed ? R_NOENT | R_INVAL : 0);
    int rc = check("lds_loadable_load", lds_loadable_load(rt, which[i]->id, r->loader, "req", 3, &o), 0, codes);
    if (rc != LDS_OK) return;
  }
  if (cancel) {
    for (int i = 0; i < count; i++)
      check("lds_loadable_cancel", lds_loadable_cancel(rt, which[i]->id), 0, R_AGAIN);
    return;
  }
  wait_loads(which, before, count);
}

static void op_refresh(run *r, input *in) {
  cell *cl = &cells[u8(in) % MAX_CELLS];
  atomic_store(&loader_mode, u8(in) % 6);
  pthread_mutex_lock(&mu);
  uint64_t before = cl->last_seq;
  pthread_mutex_unlock(&mu);
  int rc = check("lds_loadable_refresh", lds_loadable_refresh(rt, cl->id), 0,
                 RC(LDS_ESTATE) | R_AGAIN | (r->cache_freed ? R_NOENT : 0));
  if (rc == LDS_OK) wait_loads(&cl, &before, 1);
}

/* The URL with bytes outside printable ASCII escaped, for a report. */
static const char *printable(const char *url) {
  static char out[1024];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)url; *p && n + 5 < sizeof out; p++)
    n += (size_t)snprintf(out + n, sizeof out - n, *p >= 0x20 && *p < 0x7f ? "%c" : "\\x%02x", *p);
  out[n] = 0;
  return out;
}

/* Whether the library, splitting a redis:// URL as its parser does, could
 * find a host that is not an IP address (and resolve it). A second line
 * of defence: make_url means never to write one. */
static bool port_ok(const char *p, const char *end) {
  if (p < end && *p == '+') p++;
  if (p == end || end - p > 5) return false;
  long v = 0;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
  }
  return v > 0 && v <= 65535;
}

static bool names_a_host(const char *url) {
  if (strncmp(url, "redis://", 8) != 0) return false;
  const char *rest = url + 8, *end = rest + strcspn(rest, "/?");
  for (const char *p = rest; p < end; p++)
    if (*p == '@') rest = p + 1;
  char host[300];
  size_t n;
  if (*rest == '[') {
    const char *close = memchr(rest, ']', (size_t)(end - rest));
    if (!close || (close + 1 < end && (close[1] != ':' || !port_ok(close + 2, end)))) return false;
    rest++;
    n = (size_t)(close - rest);
  } else {
    const char *colon = NULL;
    for (const char *p = rest; p < end; p++)
      if (*p == ':') colon = p;
    if (colon && !port_ok(colon + 1, end)) return false;
    n = (size_t)((colon ? colon : end) - rest);
  }
  if (n == 0 || n >= sizeof host) return false;
  memcpy(host, rest, n);
  host[n] = 0;
  struct in6_addr a6;
  return inet_pton(AF_INET, host, &a6) != 1 && inet_pton(AF_INET6, host, &a6) != 1;
}

/* Makes the cache of the input; false when the URL was refused. */
static bool make_cache(run *r, input *in) {
  uint8_t form = u8(in);
  uint8_t o1 = u8(in);
  lds_redis_cache_options o = LDS_REDIS_CACHE_OPTIONS_INIT;
  o.memory_max_entries = (o1 & 1) ? 1 + (o1 >> 1) % 4 : 0;
  o.max_value_bytes = (o1 & 8) ? MAX_VALUE_SMALL : 0;
  r->max_value = o.max_value_bytes ? o.max_value_bytes : 8u << 20;
  o.ttl_ms = (o1 & 16) ? 1 + u8(in) : 0;
  o.memory_ttl_ms = (o1 & 32) ? 1 : 0;
  o.command_timeout_ms = 2 + u8(in) % 10;
  o.connect_timeout_ms = 5 + u8(in) % 20;
  o.lease_ms = 1 + u8(in) % 8;
  o.reconnect_max_ms = 1 + u8(in) % 100;
  char prefix[16];
  key_prefix_len = 4;
  memcpy(key_prefix, "lds:", 4);
  if (o1 & 64) {
    size_t n;
    const uint8_t *p = bytes(in, 8, &n);
    memcpy(prefix, p, n);
    prefix[n] = 0;
    o.key_prefix = prefix;
    key_prefix_len = strlen(prefix);
    memcpy(key_prefix, prefix, key_prefix_len);
  }
  bool must_fail;
  char *url = make_url(in, form % 4, &must_fail);
  queue_records(in, u8(in) % 16);
  if (names_a_host(url)) fail("the harness wrote a URL that names a host: \"%s\"", printable(url));
  /* rediss:// (TLS) has a code of its own: this build has no TLS. */
  bool tls = strncmp(url, "rediss://", 9) == 0;
  int rc = check("lds_redis_cache_new", lds_redis_cache_new(rt, url, &o, &r->cache), 0,
                 tls ? RC(LDS_ENOTSUP) : R_INVAL);
  if (must_fail && rc != (tls ? LDS_ENOTSUP : LDS_EINVAL))
    fail("lds_redis_cache_new accepted the URL \"%s\"", printable(url));
  if (form % 4 != 3 && rc != LDS_OK) fail("lds_redis_cache_new refused the URL \"%s\"", printable(url));
  free(url);
  return rc == LDS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  server_start();
  /* The input outlives every reply the server renders from it: the
   * queues point into this copy until server_reset. */
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) abort();
  memcpy(copy, data, size);
  input in = {copy, size};
  if (lds_runtime_new(NULL, &rt) != LDS_OK) fail("lds_runtime_new failed");
  atomic_store(&runtime_freed, false);
  memset(cells, 0, sizeof cells);
  npending = 0;
  for (int i = 0; i < MAX_CELLS; i++)
    check("lds_loadable_new", lds_loadable_new(rt, on_event, &cells[i], &cells[i].id), 0, 0);
  run r = {0};
  check("lds_loader_new", lds_loader_new(rt, on_start, NULL, NULL, &r.loader), 0, 0);
  if (make_cache(&r, &in)) {
    for (int step = 0; step < MAX_OPS && in.n; step++) {
      uint8_t op = u8(&in);
      switch (op % 16) {
      case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: op_direct(&r, &in, op % 16); break;
      case 8: op_load(&r, &in, true, false); break;
      case 9: op_load(&r, &in, false, false); break;
      case 10: op_load(&r, &in, op & 0x10, true); break;
      case 11: op_refresh(&r, &in); break;
      case 12: op_status(&r); break;
      case 13: queue_records(&in, 1 + u8(&in) % 4); break;
      case 14: nap_ms(1 + (op >> 4) % 8); break;
      default:
        if (!r.cache_freed) check("lds_cache_free", lds_cache_free(rt, r.cache), 0, 0);
        r.cache_freed = true;
        break;
      }
    }
  }
  pthread_mutex_lock(&mu);
  complete_pending();
  pthread_mutex_unlock(&mu);
  int rc = lds_runtime_free(rt);
  atomic_store(&runtime_freed, true);
  if (rc != LDS_OK) fail("lds_runtime_free returned %d", rc);
  server_reset();
  free(copy);
  return 0;
}
