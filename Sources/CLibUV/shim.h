/* libuv and the few Linux calls the runtime needs, for Swift. */
#include <uv.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <pthread.h>

/* Asks for the cache line at p ahead of its use (a hint; never faults).
 * Not lds_prefetch: that is an exported function of the C API, and a
 * Swift body using this helper that cross-module optimization emits in
 * the export module would meet both names there. */
static inline void lds_prefetch_line(const void *p) { __builtin_prefetch(p); }

/* Word-sized atomics for lock-free directories (acquire loads, release stores). */
static inline uintptr_t lds_load_acquire(const uintptr_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void lds_store_release(uintptr_t *p, uintptr_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* 64-bit counters with one writer (relaxed: a plain load and store, never torn). */
static inline uint64_t lds_counter_load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void lds_counter_store(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

/* Whether the calling thread runs a runtime's loop, where nothing may
 * wait (set by the loop thread when it starts; read by the Loadstate
 * module alone, so that one copy of the variable is used). */
static inline int *lds_loop_thread_flag(void) {
  static __thread int is_loop_thread;
  return &is_loop_thread;
}

/* A pause in a spin-wait loop. */
static inline void lds_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}
