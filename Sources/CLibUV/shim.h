/* libuv and the few Linux calls the runtime needs, for Swift. */
#include <uv.h>
#include <sys/eventfd.h>
#include <pthread.h>

/* Asks for the cache line at p ahead of its use (a hint; never faults). */
static inline void lds_prefetch(const void *p) { __builtin_prefetch(p); }
