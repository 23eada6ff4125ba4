/* hiredis for Swift: its async API (Debian's 0.14), on a libuv loop through this file's adapter. */
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <stdlib.h>
#include <uv.h>
#include <strings.h>

/*
 * The context's socket on the loop: a libuv poll handle, and the functions
 * hiredis asks for reads and writes with (this library's own adapter, in
 * place of hiredis's adapters/libuv.h).
 *
 * The poll changes only when what it watches changes: uv_poll_start takes
 * the socket out of epoll and puts it back each time, a system call or two
 * per command if it were called for every command hiredis appends.
 *
 * Writes can be deferred: between lds_redis_defer_writes(ac, 1) and (ac, 0)
 * a command hiredis appends only marks output as pending, and
 * lds_redis_flush writes all of it at once (the connection flushes after
 * the work item that sent its commands: one write() for a batch, and the
 * poll never watches for writability). When the socket takes less than
 * the whole buffer, and before the connection is made (a writable socket
 * announces it), the poll watches for writability as hiredis asks.
 */
typedef struct lds_redis_io {
  redisAsyncContext *context;  /* NULL once hiredis cleaned up */
  uv_poll_t handle;
  int events;                  /* UV_READABLE | UV_WRITABLE: what the poll watches */
  int write_pending;           /* deferred output: lds_redis_flush writes it */
  int deferring;               /* between lds_redis_defer_writes(ac, 1) and (ac, 0) */
  int flushing;                /* inside a write of hiredis's buffer */
} lds_redis_io;

static void lds_redis_on_poll(uv_poll_t *handle, int status, int events);

static inline void lds_redis_watch(lds_redis_io *io, int events) {
  if (events == io->events) return;
  io->events = events;
  if (events) uv_poll_start(&io->handle, events, lds_redis_on_poll);
  else uv_poll_stop(&io->handle);
}

static inline void lds_redis_write_now(lds_redis_io *io) {
  io->flushing = 1;
  redisAsyncHandleWrite(io->context); /* may disconnect; io lives until its handle is closed */
  io->flushing = 0;
}

static void lds_redis_on_poll(uv_poll_t *handle, int status, int events) {
  lds_redis_io *io = (lds_redis_io *)handle->data;
  if (status != 0) {
    /* libuv stopped watching after a socket error: reading finds it (hiredis then drops the connection). */
    io->events = 0;
    events = UV_READABLE;
  }
  if (io->context != NULL && (events & UV_READABLE)) redisAsyncHandleRead(io->context);
  if (io->context != NULL && (events & UV_WRITABLE)) lds_redis_write_now(io);
}

static void lds_redis_add_read(void *privdata) {
  lds_redis_io *io = (lds_redis_io *)privdata;
  lds_redis_watch(io, io->events | UV_READABLE);
}

static void lds_redis_del_read(void *privdata) {
  lds_redis_io *io = (lds_redis_io *)privdata;
  lds_redis_watch(io, io->events & ~UV_READABLE);
}

static void lds_redis_add_write(void *privdata) {
  lds_redis_io *io = (lds_redis_io *)privdata;
  if (io->deferring && !io->flushing && io->context != NULL && (io->context->c.flags & REDIS_CONNECTED)) {
    io->write_pending = 1;
    return;
  }
  lds_redis_watch(io, io->events | UV_WRITABLE);
}

static void lds_redis_del_write(void *privdata) {
  lds_redis_io *io = (lds_redis_io *)privdata;
  io->write_pending = 0;
  lds_redis_watch(io, io->events & ~UV_WRITABLE);
}

static void lds_redis_io_closed(uv_handle_t *handle) { free(handle->data); }

static void lds_redis_cleanup(void *privdata) {
  lds_redis_io *io = (lds_redis_io *)privdata;
  io->context = NULL;
  uv_close((uv_handle_t *)&io->handle, lds_redis_io_closed);
}

/* Watches the context's socket on `loop` (a uv_loop_t *). REDIS_ERR when
 * the handle cannot be made (nothing is left attached then). */
static inline int lds_redis_attach(redisAsyncContext *ac, void *loop) {
  if (ac->ev.data != NULL) return REDIS_ERR;
  lds_redis_io *io = (lds_redis_io *)calloc(1, sizeof *io);
  if (!io) return REDIS_ERR;
  if (uv_poll_init((uv_loop_t *)loop, &io->handle, ac->c.fd) != 0) {
    free(io);
    return REDIS_ERR;
  }
  io->context = ac;
  io->handle.data = io;
  ac->ev.data = io;
  ac->ev.addRead = lds_redis_add_read;
  ac->ev.delRead = lds_redis_del_read;
  ac->ev.addWrite = lds_redis_add_write;
  ac->ev.delWrite = lds_redis_del_write;
  ac->ev.cleanup = lds_redis_cleanup;
  return REDIS_OK;
}

/* Defers the writes of the commands appended from now (on 1) until
 * lds_redis_flush; off (0), later commands are written as hiredis asks. */
static inline void lds_redis_defer_writes(redisAsyncContext *ac, int on) {
  lds_redis_io *io = (lds_redis_io *)ac->ev.data;
  if (io) io->deferring = on;
}

/* Writes the deferred output now. May drop the connection (hiredis calls
 * its disconnect callback and frees ac): do not use ac after it. */
static inline void lds_redis_flush(redisAsyncContext *ac) {
  lds_redis_io *io = (lds_redis_io *)ac->ev.data;
  if (!io || !io->write_pending || io->context == NULL) return;
  io->write_pending = 0;
  lds_redis_write_now(io);
}

/* The reply's fields, read without Swift importing the struct's unions. */
static inline int lds_redis_reply_type(const void *r) { return ((const redisReply *)r)->type; }
static inline long long lds_redis_reply_integer(const void *r) { return ((const redisReply *)r)->integer; }
static inline const char *lds_redis_reply_str(const void *r) { return ((const redisReply *)r)->str; }
static inline size_t lds_redis_reply_len(const void *r) { return (size_t)((const redisReply *)r)->len; }
static inline size_t lds_redis_reply_elements(const void *r) { return ((const redisReply *)r)->elements; }
static inline const void *lds_redis_reply_element(const void *r, size_t i) { return ((const redisReply *)r)->element[i]; }

/* The uv_poll_t the context's socket is watched with. */
static inline void *lds_redis_poll_handle(redisAsyncContext *ac) {
  lds_redis_io *io = (lds_redis_io *)ac->ev.data;
  return io ? (void *)&io->handle : NULL;
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

/* Whether the reply `task` belongs to answers no command: hiredis gives it
 * to the subscription handling, or asserts when there is none. */
static inline int lds_redis_unclaimed(const redisReadTask *task, int *subscribed) {
  const redisAsyncContext *ac = (const redisAsyncContext *)task->privdata;
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
  if (!lds_redis_accepts(task, task->type, 0, str, len)) return NULL;
  return lds_redis_inner_fns()->createString(task, str, len);
}

static void *lds_redis_create_array(const redisReadTask *task, int elements) {
  if (elements > LDS_REDIS_ARRAY_MAX || !lds_redis_accepts(task, REDIS_REPLY_ARRAY, elements, NULL, 0)) return NULL;
  return lds_redis_inner_fns()->createArray(task, elements);
}

static void *lds_redis_create_integer(const redisReadTask *task, long long value) {
  if (!lds_redis_accepts(task, REDIS_REPLY_INTEGER, 0, NULL, 0)) return NULL;
  return lds_redis_inner_fns()->createInteger(task, value);
}

static void *lds_redis_create_nil(const redisReadTask *task) {
  if (!lds_redis_accepts(task, REDIS_REPLY_NIL, 0, NULL, 0)) return NULL;
  return lds_redis_inner_fns()->createNil(task);
}

static void lds_redis_free_object(void *reply) { lds_redis_inner_fns()->freeObject(reply); }

/* Puts the guard on the replies of `ac`. */
static inline void lds_redis_guard_replies(redisAsyncContext *ac) {
  static redisReplyObjectFunctions guard = {lds_redis_create_string, lds_redis_create_array,
                                            lds_redis_create_integer, lds_redis_create_nil, lds_redis_free_object};
  redisReader *r = ac->c.reader;
  if (!r || r->fn == &guard) return;
  __atomic_store_n(lds_redis_inner_slot(), r->fn, __ATOMIC_RELAXED);
  r->fn = &guard;
  r->privdata = ac;
}

/* Whether the connection was dropped because hiredis could not hold a
 * reply: the guard refused it (or memory ran out). */
static inline int lds_redis_reply_refused(const redisAsyncContext *ac) { return ac->c.err == REDIS_ERR_OOM; }
