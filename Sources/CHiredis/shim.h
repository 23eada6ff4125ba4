/* hiredis for Swift: its async API and its libuv adapter (Debian's 0.14). */
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

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
