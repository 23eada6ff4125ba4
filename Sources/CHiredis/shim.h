/* hiredis for Swift: its async API and its libuv adapter (Debian's 0.14). */
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libuv.h>

/* The adapter's functions are static: a wrapper Swift can call. `loop` is a uv_loop_t *. */
static inline int lds_redis_attach(redisAsyncContext *ac, void *loop) {
  return redisLibuvAttach(ac, (uv_loop_t *)loop);
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
