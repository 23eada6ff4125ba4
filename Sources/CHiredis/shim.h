/* hiredis for Swift: its async API and its libuv adapter (Debian's 0.14). */
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>
#include <strings.h>

/*
 * The context's socket on the loop: hiredis's libuv adapter (its poll
 * handle, its poll callback and its cleanup), with this file's functions
 * for the four requests hiredis makes of it (add or remove read or write
 * interest).
 *
 * The poll changes only when what it watches changes: the adapter's own
 * functions call uv_poll_start for every command hiredis appends, and
 * uv_poll_start takes the socket out of epoll and puts it back each time.
 *
 * Writes can be deferred: between lds_redis_defer_writes(ac, 1) and (ac, 0)
 * a command hiredis appends only marks output as pending, and
 * lds_redis_flush writes all of it at once (the connection flushes once
 * the loop has run the batch of work items that sent its commands: one
 * write() for all, and the poll never watches for writability). When the
 * socket takes less than the whole buffer, and before the connection is
 * made (a writable socket announces it), the poll watches for writability
 * as hiredis asks.
 *
 * The adapter's `events` field keeps what the poll watches in its
 * UV_READABLE and UV_WRITABLE bits and this file's flags above them; only
 * this file's functions read it or start the poll.
 */
#define LDS_REDIS_WATCHED (UV_READABLE | UV_WRITABLE)
#define LDS_REDIS_PENDING 0x100   /* deferred output: lds_redis_flush writes it */
#define LDS_REDIS_DEFERRING 0x200 /* between lds_redis_defer_writes(ac, 1) and (ac, 0) */
#define LDS_REDIS_FLUSHING 0x400  /* inside lds_redis_flush's write */

/*
 * What a connection has read of a reply it has not finished: after each
 * read, the hook (set once with lds_redis_set_pending_hook) is told how
 * many bytes wait in the reader's buffer for the rest of their reply, so
 * that the connection can bound them and the time they take. It may free
 * the context (not from inside hiredis's callbacks: the read is over).
 */
typedef void (*lds_redis_pending_hook)(redisAsyncContext *ac, size_t pending);

static inline lds_redis_pending_hook *lds_redis_pending_hook_slot(void) {
  static lds_redis_pending_hook hook;
  return &hook;
}

static inline void lds_redis_set_pending_hook(lds_redis_pending_hook hook) {
  __atomic_store_n(lds_redis_pending_hook_slot(), hook, __ATOMIC_RELAXED);
}

static void lds_redis_poll(uv_poll_t *handle, int status, int events) {
  redisLibuvEvents *p = (redisLibuvEvents *)handle->data;
  if (status < 0) {
    /* An error on the socket (a refused connection: UV_ECONNREFUSED).
     * hiredis's adapter ignores polls with an error, so that the attempt
     * would wait for its timeout: hiredis is told the socket is ready
     * instead, and finds the error itself (SO_ERROR, or a failed read). */
    status = 0;
    events = p->events & LDS_REDIS_WATCHED;
    if (!events) events = UV_READABLE;
  }
  redisLibuvPoll(handle, status, events);
  /* p lives until its handle is closed, on a later turn; its context is
   * NULL once hiredis dropped the connection. */
  redisAsyncContext *ac = p->context;
  lds_redis_pending_hook hook = __atomic_load_n(lds_redis_pending_hook_slot(), __ATOMIC_RELAXED);
  if (ac == NULL || ac->c.reader == NULL || hook == NULL || !(events & UV_READABLE)) return;
  redisReader *r = ac->c.reader;
  hook(ac, r->len > r->pos ? r->len - r->pos : 0);
}

static inline void lds_redis_watch(redisLibuvEvents *p, int watched) {
  watched &= LDS_REDIS_WATCHED;
  if (watched == (p->events & LDS_REDIS_WATCHED)) return;
  p->events = (p->events & ~LDS_REDIS_WATCHED) | watched;
  if (watched) uv_poll_start(&p->handle, watched, lds_redis_poll);
  else uv_poll_stop(&p->handle);
}

static void lds_redis_add_read(void *privdata) {
  redisLibuvEvents *p = (redisLibuvEvents *)privdata;
  lds_redis_watch(p, p->events | UV_READABLE);
}

static void lds_redis_del_read(void *privdata) {
  redisLibuvEvents *p = (redisLibuvEvents *)privdata;
  lds_redis_watch(p, p->events & ~UV_READABLE);
}

static void lds_redis_add_write(void *privdata) {
  redisLibuvEvents *p = (redisLibuvEvents *)privdata;
  if ((p->events & LDS_REDIS_DEFERRING) && !(p->events & LDS_REDIS_FLUSHING) && p->context != NULL &&
      (p->context->c.flags & REDIS_CONNECTED)) {
    p->events |= LDS_REDIS_PENDING;
    return;
  }
  lds_redis_watch(p, p->events | UV_WRITABLE);
}

static void lds_redis_del_write(void *privdata) {
  redisLibuvEvents *p = (redisLibuvEvents *)privdata;
  p->events &= ~LDS_REDIS_PENDING;
  lds_redis_watch(p, p->events & ~UV_WRITABLE);
}

/* The adapter's functions are static: a wrapper Swift can call. `loop` is a uv_loop_t *. */
static inline int lds_redis_attach(redisAsyncContext *ac, void *loop) {
  int rc = redisLibuvAttach(ac, (uv_loop_t *)loop);
  if (rc == REDIS_OK) {
    ac->ev.addRead = lds_redis_add_read;
    ac->ev.delRead = lds_redis_del_read;
    ac->ev.addWrite = lds_redis_add_write;
    ac->ev.delWrite = lds_redis_del_write;
  }
  return rc;
}

/* Defers the writes of the commands appended from now (on 1) until
 * lds_redis_flush; off (0), later commands are written as hiredis asks. */
static inline void lds_redis_defer_writes(redisAsyncContext *ac, int on) {
  redisLibuvEvents *p = (redisLibuvEvents *)ac->ev.data;
  if (!p) return;
  if (on) p->events |= LDS_REDIS_DEFERRING;
  else p->events &= ~LDS_REDIS_DEFERRING;
}

/* Writes the deferred output now. May drop the connection (hiredis calls
 * its disconnect callback and frees ac): do not use ac after it. */
static inline void lds_redis_flush(redisAsyncContext *ac) {
  redisLibuvEvents *p = (redisLibuvEvents *)ac->ev.data;
  if (!p || !(p->events & LDS_REDIS_PENDING) || p->context == NULL) return;
  p->events = (p->events & ~LDS_REDIS_PENDING) | LDS_REDIS_FLUSHING;
  redisAsyncHandleWrite(ac); /* p lives until its handle is closed, on a later turn */
  p->events &= ~LDS_REDIS_FLUSHING;
}

/* The reply's fields, read without Swift importing the struct's unions. */
static inline int lds_redis_reply_type(const void *r) { return ((const redisReply *)r)->type; }
static inline long long lds_redis_reply_integer(const void *r) { return ((const redisReply *)r)->integer; }
static inline const char *lds_redis_reply_str(const void *r) { return ((const redisReply *)r)->str; }
static inline size_t lds_redis_reply_len(const void *r) { return (size_t)((const redisReply *)r)->len; }
static inline size_t lds_redis_reply_elements(const void *r) { return ((const redisReply *)r)->elements; }
static inline const void *lds_redis_reply_element(const void *r, size_t i) { return ((const redisReply *)r)->element[i]; }

/* The uv_poll_t the adapter watches the context's socket with. */
static inline void *lds_redis_poll_handle(redisAsyncContext *ac) {
  redisLibuvEvents *p = (redisLibuvEvents *)ac->ev.data;
  return p ? (void *)&p->handle : NULL;
}

/*
 * A guard on the replies hiredis reads, for its async layer (0.14), which
 * asserts (aborting the process) on replies a server may send: a reply
 * that answers no command on a connection that is not subscribed, and on
 * a subscribed one an array of fewer than two elements, or whose first
 * two are not bulk strings, or an "unsubscribe" whose third is missing.
 * The guard sits in the reader's object functions: it refuses such a
 * reply while it is read (hiredis then drops the connection with
 * REDIS_ERR_OOM), and any array of more than LDS_REDIS_ARRAY_MAX elements
 * (hiredis would allocate its pointers at once). An error reply that
 * answers no command stays hiredis's to handle (it drops the connection).
 */
#define LDS_REDIS_ARRAY_MAX 1000000

/* Where hiredis's own object functions are kept (the same for every
 * context). Statics live inside functions: Swift emits the header's
 * functions, not its variables. */
static inline redisReplyObjectFunctions **lds_redis_inner_slot(void) {
  static redisReplyObjectFunctions *inner;
  return &inner;
}

static inline redisReplyObjectFunctions *lds_redis_inner_fns(void) {
  return __atomic_load_n(lds_redis_inner_slot(), __ATOMIC_RELAXED);
}

/*
 * Per context: what the reply being read holds so far (its objects and
 * their bytes, counted as the reader makes them), against the bounds the
 * connection set (lds_redis_guard_replies). A reply that passes one is
 * refused (hiredis drops the connection) with `exceeded` set.
 */
typedef struct lds_redis_tally {
  redisAsyncContext *ac;
  size_t bytes_max;
  size_t bytes;
  size_t replies;   /* replies begun (their first object made) */
  int exceeded;
} lds_redis_tally;

/* What an object costs the tally: its bytes and a reply's own size. */
#define LDS_REDIS_OBJECT_COST 48

/* Counts an object of `bytes` for the reply `task` belongs to; 0 when the
 * reply passes its bound. A reply's first object (its root) starts it. */
static inline int lds_redis_count(const redisReadTask *task, size_t bytes) {
  lds_redis_tally *t = (lds_redis_tally *)task->privdata;
  if (!t) return 1;
  if (!task->parent) {
    t->bytes = 0;
    t->replies++;
  }
  size_t cost = bytes + LDS_REDIS_OBJECT_COST;
  if (cost < bytes || t->bytes_max - t->bytes < cost || t->bytes > t->bytes_max) {
    t->exceeded = 1;
    return 0;
  }
  t->bytes += cost;
  return 1;
}

/* Whether the reply `task` belongs to answers no command: hiredis gives it
 * to the subscription handling, or asserts when there is none. */
static inline int lds_redis_unclaimed(const redisReadTask *task, int *subscribed) {
  const lds_redis_tally *t = (const lds_redis_tally *)task->privdata;
  const redisAsyncContext *ac = t ? t->ac : NULL;
  if (!ac || ac->replies.head != NULL) return 0;
  *subscribed = (ac->c.flags & REDIS_SUBSCRIBED) != 0;
  return 1;
}

/* Whether an object of `type` (an array of `elements`) may stand where `task` is. */
static inline int lds_redis_accepts(const redisReadTask *task, int type, int elements, const char *str, size_t len) {
  int subscribed = 0;
  if (!task->parent) {
    if (!lds_redis_unclaimed(task, &subscribed) || type == REDIS_REPLY_ERROR) return 1;
    return subscribed && (type != REDIS_REPLY_ARRAY || elements >= 2);
  }
  /* The first two elements of a subscription message: bulk strings, and
   * the first not an unsubscription (this library never unsubscribes). */
  if (task->parent->parent || task->idx > 1 || !lds_redis_unclaimed(task, &subscribed) || !subscribed) return 1;
  if (type != REDIS_REPLY_STRING) return 0;
  if (task->idx == 0 && str && ((len == 11 && strncasecmp(str, "unsubscribe", 11) == 0) ||
                                (len == 12 && strncasecmp(str, "punsubscribe", 12) == 0)))
    return 0;
  return 1;
}

static void *lds_redis_create_string(const redisReadTask *task, char *str, size_t len) {
  if (!lds_redis_accepts(task, task->type, 0, str, len) || !lds_redis_count(task, len)) return NULL;
  return lds_redis_inner_fns()->createString(task, str, len);
}

static void *lds_redis_create_array(const redisReadTask *task, int elements) {
  if (elements > LDS_REDIS_ARRAY_MAX || !lds_redis_accepts(task, REDIS_REPLY_ARRAY, elements, NULL, 0) ||
      !lds_redis_count(task, elements > 0 ? (size_t)elements * sizeof(void *) : 0))
    return NULL;
  return lds_redis_inner_fns()->createArray(task, elements);
}

static void *lds_redis_create_integer(const redisReadTask *task, long long value) {
  if (!lds_redis_accepts(task, REDIS_REPLY_INTEGER, 0, NULL, 0) || !lds_redis_count(task, 0)) return NULL;
  return lds_redis_inner_fns()->createInteger(task, value);
}

static void *lds_redis_create_nil(const redisReadTask *task) {
  if (!lds_redis_accepts(task, REDIS_REPLY_NIL, 0, NULL, 0) || !lds_redis_count(task, 0)) return NULL;
  return lds_redis_inner_fns()->createNil(task);
}

static void lds_redis_free_object(void *reply) { lds_redis_inner_fns()->freeObject(reply); }

/* Puts the guard on the replies of `ac`, counting them in `tally` (owned
 * by the caller, alive as long as the context; its ac and bytes_max set). */
static inline void lds_redis_guard_replies(redisAsyncContext *ac, lds_redis_tally *tally) {
  static redisReplyObjectFunctions guard = {lds_redis_create_string, lds_redis_create_array,
                                            lds_redis_create_integer, lds_redis_create_nil, lds_redis_free_object};
  redisReader *r = ac->c.reader;
  if (!r || r->fn == &guard) return;
  __atomic_store_n(lds_redis_inner_slot(), r->fn, __ATOMIC_RELAXED);
  r->fn = &guard;
  tally->ac = ac;
  tally->bytes = 0;
  tally->exceeded = 0;
  r->privdata = tally;
}

/* Whether the connection was dropped because hiredis could not hold a
 * reply: the guard refused it (or memory ran out). */
static inline int lds_redis_reply_refused(const redisAsyncContext *ac) { return ac->c.err == REDIS_ERR_OOM; }
