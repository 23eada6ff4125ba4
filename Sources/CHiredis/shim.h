/* hiredis for Swift: its async API and its libuv adapter (Debian's 0.14). */
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>
#include <strings.h>

/* The adapter calls uv_poll_start for every command hiredis appends (and
 * every read it asks for), and uv_poll_start takes the socket out of epoll
 * and puts it back each time: a system call per command, the most costly
 * part of a pipeline. These skip the call while the socket is already
 * watched for that event; what they change otherwise is the adapter's own. */
static void lds_redis_add_read(void *privdata) {
  if (!(((redisLibuvEvents *)privdata)->events & UV_READABLE)) redisLibuvAddRead(privdata);
}

static void lds_redis_add_write(void *privdata) {
  if (!(((redisLibuvEvents *)privdata)->events & UV_WRITABLE)) redisLibuvAddWrite(privdata);
}

/* The adapter's functions are static: a wrapper Swift can call. `loop` is a uv_loop_t *. */
static inline int lds_redis_attach(redisAsyncContext *ac, void *loop) {
  int rc = redisLibuvAttach(ac, (uv_loop_t *)loop);
  if (rc == REDIS_OK) {
    ac->ev.addRead = lds_redis_add_read;
    ac->ev.addWrite = lds_redis_add_write;
  }
  return rc;
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
