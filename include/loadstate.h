/*
 * loadstate.h — the C interface of loadstate, a loading-state runtime.
 *
 * This header is the reference manual. A host never needs the Swift
 * sources to use the library.
 *
 * OVERVIEW
 *
 *   A runtime (lds_runtime) owns one libuv event loop on one dedicated
 *   thread. Cells hold a loading state; loaders do the work of a load;
 *   a job is one run of a loader on behalf of a cell.
 *
 *     loadable cell:  absent -> loading -> loaded | error
 *     process cell:   idle -> running(kind) -> finished(kind) | failed(kind)
 *
 *   Every state change is reported to the cell's callback as an lds_event.
 *
 * THREADING (applies to every function below unless it says otherwise)
 *
 *   - Every function is safe to call from any thread, including from
 *     inside a callback. It validates its arguments, queues the work for
 *     the loop thread and returns; it never waits for the loop. The one
 *     exception is lds_runtime_free, which joins the loop thread.
 *   - Every host callback (cell events, loader start, job cancel
 *     notifications, loader free_data) runs on the runtime's delivery
 *     thread: the loop thread in LDS_DELIVER_LOOP mode, or the thread that
 *     calls lds_runtime_dispatch in LDS_DELIVER_POLL mode.
 *   - Callbacks for one cell arrive in order, each transition exactly once,
 *     with seq increasing by one per event.
 *   - No callback runs synchronously inside the call that caused it.
 *   - A call that returns an error causes no callback.
 *   - After lds_runtime_free returns, no callback runs.
 *
 * OWNERSHIP
 *
 *   Values, requests and messages passed in are copied; the caller keeps
 *   ownership of its buffers. Pointers handed out in an lds_event are valid
 *   only during the callback. An lds_snapshot owns its copies until
 *   lds_snapshot_clear.
 *
 * ERRORS
 *
 *   Functions return LDS_OK (0) on success and a negative LDS_E* code on
 *   failure; lds_strerror(code) describes it. No function aborts the
 *   process on bad input.
 *
 * IDS
 *
 *   Cells, loaders, jobs and caches are named by lds_id values: never 0,
 *   never reused within a runtime. An id that was freed, that never existed, or
 *   that names an object of another kind (a loader id given as a cell)
 *   yields LDS_ENOENT.
 *
 * BOUNDS
 *
 *   Every size the library takes from a host, a server, a command or a
 *   file has a limit. Past it, a call returns the code below and changes
 *   nothing, or a load fails with it (domain LOADSTATE) and frees what it
 *   held; memory stays bounded whatever the input.
 *
 *   what                                limit (default)                 past it
 *   ----------------------------------  ------------------------------  ------------
 *   a value, request, error message,    LDS_VALUE_MAX (256 MiB)         LDS_ETOOBIG
 *     cache key or prefix given to a
 *     call
 *   interrupt delays of one load        64                              LDS_EINVAL
 *   a loader's or cell's name           LDS_NAME_MAX (128 bytes)        LDS_EINVAL
 *   pages of a pages cell               LDS_PAGES_MAX (1,024)           LDS_EINVAL
 *   one page cursor                     LDS_CURSOR_MAX (4,096 bytes)    LDS_ETOOBIG
 *   optimistic values, and prefixes     LDS_MUTATION_KEYS_MAX (64)      LDS_EINVAL
 *     to invalidate, of one write
 *     (lds_process_mutate)
 *   calls of one lds_runtime_submit     INT32_MAX                       LDS_EINVAL
 *   operations host threads have        LDS_QUEUE_MAX (262,144), or     LDS_EAGAIN
 *     waiting for the loop thread, in     lds_runtime_options.queue_max
 *     its queue or in one job's queue     (<= LDS_QUEUE_MAX_LIMIT)
 *   repeated cancels/resets of a cell   1 queued (the rest coalesce)    -
 *   loads waiting in a loader's queue   one entry per load that began   - (each holds
 *     (max_concurrent, rate_per_s)        on the loop (so, with the       about 300 bytes
 *                                         runtime's queue, bounded by     beside its cell)
 *                                         the host's loads)
 *   http: status line                   LDS_HTTP_STATUS_LINE_MAX (8 KiB) LDS_ETOOBIG
 *   http: header lines, per response    LDS_HTTP_HEADERS_MAX (64 KiB),  LDS_ETOOBIG
 *                                         LDS_HTTP_HEADER_LINES_MAX
 *                                         (1,024 lines)
 *   http: trailer lines                 LDS_HTTP_TRAILERS_MAX (64 KiB)  LDS_ETOOBIG
 *   http: body                          max_body (LDS_VALUE_MAX)        LDS_ETOOBIG
 *   http: redirects                     max_redirects (5)               LDS_EINVAL
 *   http: Retry-After wait              the load's retry_max_ms (30 s)  capped
 *   exec: stdout                        max_output (LDS_VALUE_MAX)      LDS_ETOOBIG,
 *                                                                         command killed
 *   exec: stderr kept                   its last 4 KiB (the message)    older bytes dropped
 *   file: size                          max_size (LDS_VALUE_MAX)        LDS_ETOOBIG
 *   file: type                          regular files only              LDS_EINVAL
 *   memory cache                        max_entries (10,000),           LRU eviction
 *                                         max_bytes (64 MiB)
 *   persistent cache file               max_bytes (256 MiB)             LRU eviction
 *   Redis cache: value stored           max_value_bytes (8 MiB)         not stored
 *   Redis cache: entry's time to live   max_ttl_ms (one day)            capped
 *   Redis cache: commands waiting for   LDS_REDIS_PENDING_MAX (65,536)  LDS_EREDIS
 *     a connection or a reply
 *   Redis cache: reply wait             command_timeout_ms (2 s)        LDS_EREDIS, and
 *                                                                         reconnection
 *   Redis cache: keys listed            LDS_REDIS_KEYS_MAX (1,000,000)  LDS_ETOOBIG
 *   lds_cache_get_many: keys            LDS_CACHE_GET_MANY_MAX (4,096)  LDS_ETOOBIG
 *   lds_runtime_free's wait for         one second                      abandoned (see
 *     commands and file operations                                        lds_runtime_free)
 *
 *   Numbers a server sends (Content-Length, chunk sizes, Retry-After,
 *   status) are read with saturation or ignored, never trusted for an
 *   allocation beyond the bounds above. Not bounded by the library: the
 *   callbacks of a POLL-mode runtime wait for lds_runtime_dispatch; a host
 *   that stops dispatching keeps them, as it keeps its own queue.
 */
#ifndef LOADSTATE_H
#define LOADSTATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Version                                                             */
/* ------------------------------------------------------------------ */

#define LDS_VERSION_MAJOR 0
#define LDS_VERSION_MINOR 4
#define LDS_VERSION_PATCH 0
/* The version this header describes, as (major << 16) | (minor << 8) | patch. */
#define LDS_VERSION ((LDS_VERSION_MAJOR << 16) | (LDS_VERSION_MINOR << 8) | LDS_VERSION_PATCH)

/* ------------------------------------------------------------------ */
/* Return codes                                                        */
/* ------------------------------------------------------------------ */

#define LDS_OK          0
#define LDS_EINVAL     (-1)  /* an argument is invalid: NULL pointer, bad size field, unknown flag */
#define LDS_ENOENT     (-2)  /* no object of that kind has this id (never created, freed, or another kind) */
#define LDS_ESTATE     (-3)  /* the call is not allowed in the current state */
#define LDS_ECANCELED  (-4)  /* the job no longer runs: cancelled, superseded, timed out or already completed */
#define LDS_ETIMEDOUT  (-5)  /* a load took longer than its timeout (seen as an error code in events) */
#define LDS_ENOMEM     (-6)  /* out of memory or of an operating-system resource */
#define LDS_ECLOSED    (-7)  /* the runtime is being freed or has been freed */
#define LDS_ETOOBIG    (-8)  /* a value, request or message is larger than LDS_VALUE_MAX */
#define LDS_EIO        (-9)  /* an operating-system call failed */
#define LDS_EAGAIN     (-10) /* too many operations wait for the loop thread (LDS_QUEUE_MAX); try again later */
#define LDS_EREDIS     (-11) /* since 0.4: Redis failed or is unreachable; lds_redis_cache_status says why */
#define LDS_ENOTSUP    (-12) /* since 0.5: a feature this build lacks (rediss://: TLS to Redis) */
#define LDS_EOFFLINE   (-13) /* since 0.5: the runtime is offline and the load has LDS_LOAD_OFFLINE_FAIL
                                (seen as an error code in events; see "Host signals") */

/* The largest value, request or message, in bytes, the library accepts (256 MiB). */
#define LDS_VALUE_MAX ((size_t)256 * 1024 * 1024)

/* The most operations host threads may have waiting for a runtime's loop
 * thread, in its queue or in the queue of one job, unless the runtime's
 * options set another limit (lds_runtime_options.queue_max, at most
 * LDS_QUEUE_MAX_LIMIT). A call that would queue more returns LDS_EAGAIN
 * and changes nothing; see "Bounds". */
#define LDS_QUEUE_MAX 262144
#define LDS_QUEUE_MAX_LIMIT 4194304

/* ------------------------------------------------------------------ */
/* Constants                                                           */
/* ------------------------------------------------------------------ */

/* Statuses of a loadable cell. */
#define LDS_ABSENT    0
#define LDS_LOADING   1
#define LDS_LOADED    2
#define LDS_ERROR     3
/* Statuses of a process cell. */
#define LDS_IDLE      4
#define LDS_RUNNING   5
#define LDS_FINISHED  6
#define LDS_FAILED    7

/* Event types. */
#define LDS_EVENT_STATE      1  /* the state changed (or a refresh began: LDS_FLAG_REFRESHING) */
#define LDS_EVENT_PROGRESS   2  /* the running job reported progress; the state is unchanged */
#define LDS_EVENT_INTERRUPT  3  /* a load runs longer than one of its interrupt delays */

/* Event flags. */
#define LDS_FLAG_REFRESHING  (1u << 0)  /* a silent load or refresh is running over this state */
#define LDS_FLAG_PARTIAL     (1u << 1)  /* the value is a partial one yielded by a running job */
#define LDS_FLAG_STALE       (1u << 2)  /* the value came from a cache and is older than its fresh time */
#define LDS_FLAG_FROM_CACHE  (1u << 3)  /* the value came from a cache */
#define LDS_FLAG_CANCELLED   (1u << 4)  /* this state was restored because a load was cancelled */
#define LDS_FLAG_QUEUED      (1u << 6)  /* since 0.4: the load's job waits for its loader's limits
                                           (see "Scheduling"); the loader has not been called */
#define LDS_FLAG_REVALIDATED (1u << 7)  /* since 0.4: with FROM_CACHE, the cached value was confirmed
                                           current by its loader (an HTTP 304, see lds_http_loader_new) */
#define LDS_FLAG_OPTIMISTIC  (1u << 8)  /* since 0.5: the value is an optimistic one of a running write
                                           (see "Writes") */
#define LDS_FLAG_ROLLED_BACK (1u << 12) /* since 0.5: this state came back because a write failed or
                                           was cancelled (see "Writes") */
#define LDS_FLAG_PREVIOUS    (1u << 9)  /* since 0.5: the value answers an earlier request (its own,
                                           in the event's request) and is kept while a load of another
                                           request runs (LDS_LOAD_KEEP_PREVIOUS); always with REFRESHING */
#define LDS_FLAG_PLACEHOLDER (1u << 10) /* since 0.5: the value is the load's placeholder
                                           (lds_load_options.placeholder), shown while it runs; never
                                           stored in a cache; always with REFRESHING */
#define LDS_FLAG_PAUSED      (1u << 13) /* since 0.5: the load waits for the runtime to be online (see
                                           "Host signals"); its loader has not been called for this attempt */
#define LDS_FLAG_NO_VALUE    (1u << 15) /* since 0.5: this state came back because the load's job finished
                                           without a value (lds_job_finish with nothing yielded): it is the
                                           state from before the load (an earlier request's value, or
                                           ABSENT), not an answer to the load's request */

/* Load flags (lds_load_options.flags). */
#define LDS_LOAD_SILENT      (1u << 0)  /* keep the current state while loading; emit REFRESHING */
#define LDS_LOAD_SHARE       (1u << 1)  /* share one job with the running loads of the same loader and key */
#define LDS_LOAD_POLL_ON_ERROR (1u << 4)  /* since 0.4: with refresh_interval_ms, keep polling after a
                                             failed load, with the retry back-off (see "Scheduling") */
#define LDS_LOAD_IGNORE_CACHE_HEADERS (1u << 5)  /* since 0.4: with a cache, the loader's rules from
                                                 its responses' headers (the http loader's
                                                 Cache-Control, Expires, Vary) do not apply: fresh_ms
                                                 alone decides freshness and every value is stored */
#define LDS_LOAD_NO_PROGRESS (1u << 6)  /* since 0.5: the cell stops delivering PROGRESS events as the
                                           load is asked for, as lds_loadable_set_progress(rt, cell, 0)
                                           (lds_process_set_progress) would, without a call of its own:
                                           for bindings that turn them off for cells nobody listens to */
#define LDS_LOAD_KEEP_PREVIOUS (1u << 7)  /* since 0.5: a non-silent load of a request other than the
                                             request of the LOADED value shown keeps that value shown,
                                             flagged PREVIOUS | REFRESHING, instead of LOADING (see
                                             "Keeping the previous value") */
#define LDS_LOAD_REFRESH_ON_FOREGROUND (1u << 8)  /* since 0.5: when the runtime returns to the foreground,
                                                     a stale LOADED value refreshes silently ("Host signals") */
#define LDS_LOAD_OFFLINE_FAIL (1u << 9)   /* since 0.5: while offline, the load (or a retry falling due)
                                             fails at once with LDS_EOFFLINE instead of waiting */
#define LDS_LOAD_OFFLINE_RUN  (1u << 10)  /* since 0.5: the load ignores the online signal (for loaders
                                             that need no network: file, exec, local work); with
                                             LDS_LOAD_OFFLINE_FAIL too: LDS_EINVAL */
#define LDS_LOAD_POLL_IN_BACKGROUND (1u << 11)  /* since 0.5: polling goes on while the runtime is in the
                                                   background */

/* Delivery modes (lds_runtime_options.delivery). */
#define LDS_DELIVER_LOOP  0  /* callbacks run on the loop thread (default) */
#define LDS_DELIVER_POLL  1  /* callbacks are queued and run by lds_runtime_dispatch */

/* Error domains (lds_event.error_domain). 0 means no error. */
#define LDS_DOMAIN_LOADSTATE 1  /* the library itself; error_code is an LDS_E* code */
#define LDS_DOMAIN_HOST      2  /* reported by the host with lds_job_fail or lds_loadable_set_error */
#define LDS_DOMAIN_OS        3  /* an operating-system error; error_code is an errno value */
#define LDS_DOMAIN_HTTP      4  /* an HTTP status outside 2xx; error_code is the status */
#define LDS_DOMAIN_EXIT      5  /* a child process exited non-zero; error_code is its status */
#define LDS_DOMAIN_REDIS     6  /* since 0.4: a Redis cache failed; error_code is an LDS_REDIS_E* code */

/* ------------------------------------------------------------------ */
/* Types                                                               */
/* ------------------------------------------------------------------ */

typedef uint64_t lds_id;
typedef struct lds_runtime lds_runtime;

/*
 * An event, passed to a cell's callback. Every pointer in it is valid only
 * during the call; copy what you keep.
 *
 *   type            LDS_EVENT_STATE, LDS_EVENT_PROGRESS or LDS_EVENT_INTERRUPT
 *   cell            the cell the event is for
 *   seq             1 for the cell's first event, +1 for every event after it,
 *                   of every type: PROGRESS and INTERRUPT events take numbers
 *                   too, so that a host sees at once that it missed or
 *                   reordered an event, whatever its type, and can compare
 *                   a snapshot's seq (lds_loadable_get) with the last event
 *                   it handled. A host that counts states counts
 *                   LDS_EVENT_STATE events, not seq; a cell whose progress is
 *                   turned off (LDS_LOAD_NO_PROGRESS, lds_loadable_set_progress)
 *                   has no gaps from it.
 *   status          the cell's status after the event
 *   kind            process cells: the kind of the current or last run; 0 for loadable cells
 *   flags           LDS_FLAG_* bits
 *   value           LDS_LOADED: the value (a loaded empty value has a non-NULL
 *                   pointer and length 0). LDS_ERROR: what the failed load
 *                   produced, when its loader gives one: the http loader's
 *                   encoded response of a status outside 2xx (see
 *                   lds_http_loader_new); NULL otherwise. Other statuses and
 *                   events: NULL with value_len 0
 *   request         the request of the load this state belongs to, or NULL
 *   error_domain    LDS_ERROR / LDS_FAILED: LDS_DOMAIN_*; also set on an LDS_LOADED
 *                   cached value whose revalidation failed (LDS_POLICY_CACHE_THEN_LOAD);
 *                   0 otherwise
 *   error_code      the error's code in its domain
 *   error_message   the error's message (may be NULL)
 *   attempt         1 for the first try of the load, 2 for the first retry, ...; 0 when no load is involved
 *   elapsed_ms      INTERRUPT: milliseconds since the load began, measured
 *   progress_done   PROGRESS: units done
 *   progress_total  PROGRESS: units in all, 0 when unknown
 *   updated_at_ms   wall-clock time (ms since the Unix epoch) at which this
 *                   status's value or error was produced
 */
typedef struct lds_event {
  uint32_t type;
  lds_id cell;
  uint64_t seq;
  int32_t status;
  int32_t kind;
  uint32_t flags;
  const void *value;
  size_t value_len;
  const void *request;
  size_t request_len;
  int32_t error_domain;
  int32_t error_code;
  const char *error_message;
  uint32_t attempt;
  uint64_t elapsed_ms;
  uint64_t progress_done;
  uint64_t progress_total;
  uint64_t updated_at_ms;
} lds_event;

/*
 * The callback a cell reports its events to. Runs on the delivery thread.
 * It may call any lds_* function except lds_runtime_free.
 */
typedef void (*lds_event_fn)(const lds_event *event, void *user_data);

/*
 * A copy of a cell's latest event, owned by the caller: the same fields as
 * lds_event, with value, request and error_message allocated by the
 * library. Release them with lds_snapshot_clear.
 */
typedef struct lds_snapshot {
  uint32_t type;
  lds_id cell;
  uint64_t seq;
  int32_t status;
  int32_t kind;
  uint32_t flags;
  void *value;
  size_t value_len;
  void *request;
  size_t request_len;
  int32_t error_domain;
  int32_t error_code;
  char *error_message;
  uint32_t attempt;
  uint64_t elapsed_ms;
  uint64_t progress_done;
  uint64_t progress_total;
  uint64_t updated_at_ms;
} lds_snapshot;

/* Options for lds_runtime_new. Initialize with LDS_RUNTIME_OPTIONS_INIT. */
typedef struct lds_runtime_options {
  uint32_t size;      /* sizeof(lds_runtime_options), set by the INIT macro */
  uint32_t delivery;  /* LDS_DELIVER_LOOP (default) or LDS_DELIVER_POLL */
  /* Since 0.2. Microseconds the loop thread keeps polling for more work,
   * in total per wake-up, once it has run out (at most 100000; 0, the
   * default: it sleeps at once). Calls made meanwhile (loads, job
   * completions) need no wake-up system call: worth it for hosts whose
   * calls come a few microseconds apart, such as interpreters, at the
   * cost of that much CPU time after each burst. */
  uint32_t spin_us;
  /* Since 0.4. The most operations host threads may have waiting for the
   * loop thread (see LDS_QUEUE_MAX): 0 for LDS_QUEUE_MAX, at most
   * LDS_QUEUE_MAX_LIMIT (more: LDS_EINVAL). Each waiting operation holds a
   * copy of what its call was given (a load: its request). */
  uint32_t queue_max;
  /* Since 0.4. LDS_RUNTIME_* flags. */
  uint32_t flags;
} lds_runtime_options;

/* lds_runtime_options.flags. */
#define LDS_RUNTIME_NO_METRICS (1u << 0)  /* count nothing: see lds_runtime_stats */
/*
 * Since 0.5. POLL mode only (in LOOP mode lds_runtime_new returns
 * LDS_EINVAL): lds_runtime_free leaves the descriptor of lds_runtime_fd
 * open, drained and never readable again, and the host closes it
 * (close(2)) once it has stopped watching it. For hosts whose main loop
 * may still watch the descriptor when the runtime is freed (GUI toolkits):
 * a watch left behind then sees a quiet descriptor, not a closed one that
 * the loop reports ready forever, nor one that a later open reuses.
 */
#define LDS_RUNTIME_KEEP_FD    (1u << 1)

#define LDS_RUNTIME_OPTIONS_INIT { (uint32_t)sizeof(lds_runtime_options), 0, 0, 0, 0 }

/*
 * Options for a load or a run. Initialize with LDS_LOAD_OPTIONS_INIT. size
 * must reach at least to the end of retry_max_ms (the first version of the
 * struct, offsetof(lds_load_options, cache)); otherwise LDS_EINVAL.
 */
typedef struct lds_load_options {
  uint32_t size;                  /* sizeof(lds_load_options), set by the INIT macro */
  uint32_t flags;                 /* LDS_LOAD_SILENT */
  uint32_t timeout_ms;            /* 0: none. On expiry the job is cancelled and the
                                     cell becomes an error LDS_ETIMEDOUT (domain LOADSTATE) */
  const uint32_t *interrupts_ms;  /* delays between LDS_EVENT_INTERRUPT events (copied) */
  size_t interrupt_count;         /* number of delays; at most 64 (more: LDS_EINVAL) */
  uint32_t retries;               /* extra attempts after a failure */
  uint32_t retry_base_ms;         /* back-off before the first retry (default 100 when 0) */
  uint32_t retry_max_ms;          /* upper bound of any back-off (default 30000 when 0) */
  /* Caching. A caller whose size ends before these fields gets no cache. */
  lds_id cache;                   /* a cache (lds_memory_cache_new, lds_persistent_cache_new); 0: none */
  const void *cache_key;          /* the entry's key (copied); NULL: the request is the key */
  size_t cache_key_len;
  uint32_t cache_policy;          /* LDS_POLICY_*; 0 is LDS_POLICY_LOAD_ONLY */
  uint32_t fresh_ms;              /* cached entries younger than this are fresh; older are stale */
  uint64_t max_age_ms;            /* cached entries older than this are not used at all; 0: no limit */
  /* Scheduling (since 0.4; see "Scheduling"). A caller whose size ends
   * before these fields gets priority 0 and no polling. */
  int32_t priority;               /* where the job waits in its loader's queue: higher first,
                                     in call order within one priority; any int32_t (default 0) */
  uint32_t refresh_interval_ms;   /* 0: none. After each successful load the cell refreshes
                                     itself silently this many ms after the load ended */
  /* Placeholder (since 0.5; see "Keeping the previous value"). A caller
   * whose size ends before these fields has none. */
  const void *placeholder;        /* shown while a non-silent load runs and nothing else would be
                                     (copied); NULL: none; non-NULL with length 0: an empty value */
  size_t placeholder_len;         /* at most LDS_VALUE_MAX (more: LDS_ETOOBIG) */
  /* Host signals (since 0.5; see "Host signals"). A caller whose size ends
   * before this field gets the default. */
  uint32_t foreground_throttle_ms; /* with LDS_LOAD_REFRESH_ON_FOREGROUND: the cell refreshes on
                                      returning to the foreground at most once in this many ms;
                                      0: 5000 */
} lds_load_options;

#define LDS_LOAD_OPTIONS_INIT { (uint32_t)sizeof(lds_load_options), 0, 0, NULL, 0, 0, 0, 0, 0, NULL, 0, 0, 0, 0, 0, 0, \
                                NULL, 0, 0 }

/*
 * Keeping the previous value (since 0.5). Without these options a
 * non-silent load shows LDS_LOADING until it ends.
 *
 * LDS_LOAD_KEEP_PREVIOUS: when the cell shows an LDS_LOADED value (or
 * showed one before a chain of superseding loads) whose request differs
 * from the load's request, the cell keeps showing that value, with its own
 * request, as LDS_LOADED flagged LDS_FLAG_PREVIOUS | LDS_FLAG_REFRESHING,
 * so that the value is never taken for the answer to the new request.
 * Success shows the new value (without PREVIOUS); a failure shows the
 * error (the previous value is dropped); a cancel restores what was shown
 * before the load, as for any load. A cached value that the load's cache
 * policy shows (LDS_POLICY_CACHE_THEN_LOAD, ...) is shown instead of the
 * previous one. A load of the same request shows LDS_LOADING (or the
 * placeholder) as usual.
 *
 * placeholder: while a non-silent load runs and nothing else would be
 * shown (no cached value, no previous value kept), the cell shows
 * LDS_LOADED with the placeholder and the load's request, flagged
 * LDS_FLAG_PLACEHOLDER | LDS_FLAG_REFRESHING. The placeholder belongs to the
 * cell's load: it is never stored in a cache, and another cell sharing the
 * load's job (LDS_LOAD_SHARE) shows its own placeholder or LDS_LOADING.
 * Success replaces it, a failure shows the error, a cancel restores the
 * state before the load. With both, a previous value wins over the
 * placeholder. Process cells ignore both.
 */

/*
 * Cache policies (lds_load_options.cache_policy), for loads with a cache:
 *
 *   LDS_POLICY_LOAD_ONLY       always load; a successful result is stored.
 *   LDS_POLICY_CACHE_FIRST     a fresh entry is shown (LOADED, LDS_FLAG_FROM_CACHE)
 *                              and nothing is loaded; otherwise load and store
 *                              (a stale entry its loader allows to, HTTP's
 *                              stale-while-revalidate, is shown while a silent
 *                              load revalidates it, as CACHE_THEN_LOAD does).
 *   LDS_POLICY_CACHE_THEN_LOAD an entry (fresh or not) is shown at once, in one
 *                              event flagged FROM_CACHE | REFRESHING (and STALE when
 *                              not fresh), while a silent load revalidates it: success replaces and stores the
 *                              value; a failure keeps the cached value (still
 *                              LDS_LOADED, FROM_CACHE) and reports the error in the
 *                              event's error fields. Without an entry: a plain load.
 *   LDS_POLICY_CACHE_ONLY      the entry is shown, or the cell becomes LDS_ERROR with
 *                              LDS_ENOENT (domain LOADSTATE); nothing is loaded.
 *
 * An entry is fresh while younger than fresh_ms and not invalidated
 * (lds_cache_invalidate); entries older than max_age_ms count as missing.
 * The http loader's responses carry rules of their own that replace
 * fresh_ms (Cache-Control, Expires, Vary: see lds_http_loader_new) unless
 * the load sets LDS_LOAD_IGNORE_CACHE_HEADERS.
 * A cached value's updated_at_ms is the time it was stored. With
 * LDS_LOAD_SHARE the share key is the cache key; the result of a shared job
 * is stored once.
 */
#define LDS_POLICY_LOAD_ONLY        0
#define LDS_POLICY_CACHE_FIRST      1
#define LDS_POLICY_CACHE_THEN_LOAD  2
#define LDS_POLICY_CACHE_ONLY       3

/*
 * A host loader's start function. Runs on the delivery thread when a job
 * begins. The request is valid only during the call (copy it to use it
 * later). The host does the work anywhere (this thread, a worker thread,
 * another event loop) and ends the job with lds_job_succeed, lds_job_finish,
 * lds_job_fail, lds_job_cancel_self or lds_job_reset_self, which may be
 * called from inside this function or later from any thread. Calls made
 * from inside it take effect in order after it returns (in LDS_DELIVER_LOOP
 * mode, as soon as it returns): the events they cause never arrive while it
 * runs.
 */
typedef void (*lds_loader_fn)(lds_runtime *rt, lds_id job,
                              const void *request, size_t request_len,
                              void *loader_data);

/* ------------------------------------------------------------------ */
/* Library                                                             */
/* ------------------------------------------------------------------ */

/*
 * A static, human-readable message for a return code (or an error_code in
 * the LOADSTATE domain). Unknown codes give "unknown error". Never NULL.
 * Any thread.
 */
const char *lds_strerror(int code);

/*
 * The library's version as (major << 16) | (minor << 8) | patch; compare
 * with LDS_VERSION to detect a header/library mismatch. Any thread.
 */
uint32_t lds_version(void);

/* ------------------------------------------------------------------ */
/* Runtime                                                             */
/* ------------------------------------------------------------------ */

/*
 * Creates a runtime: a new libuv loop on a new thread.
 *
 *   opts  may be NULL for defaults; otherwise opts->size must be at least
 *         the size of the first version of the struct (8 bytes); fields
 *         beyond opts->size take their defaults.
 *   out   receives the runtime; unchanged on failure.
 *
 * Returns LDS_OK; LDS_EINVAL (out NULL, bad size, unknown delivery mode,
 * spin_us over 100000);
 * LDS_ENOMEM / LDS_EIO if the loop or thread cannot be created.
 */
int lds_runtime_new(const lds_runtime_options *opts, lds_runtime **out);

/*
 * Frees a runtime: cancels every running job (their lds_job_on_cancel
 * callbacks run), calls every loader's free_data, drops undelivered cell
 * events, closes every libuv handle and joins the loop thread. After it
 * returns no callback runs, and every id of the runtime is invalid.
 *
 * Running commands of exec loaders, and cancelled ones still in their
 * kill grace period, get SIGKILL to their process group at once; the free
 * waits for each to exit and reaps it. File operations already handed to
 * libuv's thread pool are waited for too. Both waits together last at
 * most one second: a command SIGKILL has not ended by then (one stuck in
 * the kernel) is reaped by a thread of the library when it ends; a file
 * operation still running (a read on a hung network mount) is abandoned:
 * the runtime's loop (its memory and its few descriptors) and the
 * operation (its memory, and the descriptor it may open) are never
 * released, and its result is never used. Beyond
 * that bound the free takes as long as the cancel callbacks and free_data
 * it runs.
 *
 * Since 0.5 the free does not wait behind work still queued for the loop:
 * once no call is in flight (a dispatch under way returns after its
 * current batch of at most 1,024 deliveries), the loads, refreshes,
 * cancels, resets and sets not yet run are dropped (the free cancels every
 * job and frees every cell anyway; no event of theirs is delivered), so that the free takes well under a second
 * whatever threads keep calling in (make bench-free: 0.2 to 0.6 s with
 * 300,000 cells alive).
 *
 * In LOOP mode the cancel callbacks and free_data run on the loop thread;
 * in POLL mode they run on the calling thread before this returns. Calls
 * made on the runtime while it is being freed, or later from threads the
 * host has not yet stopped, return LDS_ECLOSED (the handle's memory stays
 * valid for that purpose). A freed runtime's handle is kept until 1,024
 * more runtimes have been freed, then serves a runtime created after that:
 * a program that creates and frees runtimes in a loop does not grow, and
 * a pointer used that long after its free may reach another runtime.
 *
 * POLL mode: stop watching the descriptor of lds_runtime_fd first, then
 * free; the free closes it (unless the runtime was made with
 * LDS_RUNTIME_KEEP_FD, since 0.5: then it stays open, drained and never
 * readable, and the host closes it itself once its watch is gone).
 *
 * Must not be called from a callback: returns LDS_ESTATE there.
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ECLOSED (already freed).
 */
int lds_runtime_free(lds_runtime *rt);

/*
 * POLL mode: a file descriptor that is readable while callbacks are
 * pending. Watch it for readability (poll, epoll, asyncio add_reader) and
 * then call lds_runtime_dispatch. Do not read, write or close it; it stays
 * open until lds_runtime_free.
 *
 * Order at the end: stop watching the descriptor (g_source_remove,
 * deletefilehandler, remove_reader, EPOLL_CTL_DEL), then call
 * lds_runtime_free. Freed first, the descriptor is closed under the watch:
 * poll reports a closed descriptor ready at once, so a main loop calls the
 * watch again and again at full CPU, and the number may be reused by the
 * next descriptor the process opens. Since 0.5, with LDS_RUNTIME_KEEP_FD
 * the free leaves the descriptor open and never readable, and the host
 * closes it after removing its watch.
 *
 * Returns the descriptor (>= 0); LDS_EINVAL (rt NULL); LDS_ESTATE in LOOP
 * mode; LDS_ECLOSED.
 */
int lds_runtime_fd(lds_runtime *rt);

/*
 * POLL mode: runs pending callbacks on the calling thread, in order, at most
 * max_events of them (all pending ones when max_events <= 0). Never waits:
 * with nothing pending it returns 0 at once. Call it from one thread at a
 * time; a concurrent or nested call (from inside a callback) returns
 * LDS_ESTATE.
 *
 * Returns the number of callbacks run (>= 0); LDS_EINVAL (rt NULL);
 * LDS_ESTATE (LOOP mode, concurrent or nested call); LDS_ECLOSED.
 */
int lds_runtime_dispatch(lds_runtime *rt, int max_events);

/*
 * A delivery handed over as data by lds_runtime_dispatch_records instead of
 * a callback. Records follow one another in the caller's buffer; the next
 * one begins `size` bytes after the start of this one. The pointers in
 * `event` point into the same buffer, after the record's fixed part, and
 * stay valid until the buffer is reused or freed.
 *
 *   what       LDS_RECORD_EVENT: a cell's event, what on_event would have
 *              received; user_data is the cell's user_data.
 *              LDS_RECORD_START: a job of a host loader to start, what
 *              start(rt, job, request, request_len, loader_data) would have
 *              received; user_data is the loader's loader_data, job the job,
 *              event.request / event.request_len the request (never NULL);
 *              the other fields of event are 0. The host starts the job
 *              exactly as it would in its start function.
 *              LDS_RECORD_CANCEL (since 0.3): a job of a loader made with a
 *              cancel function was cancelled, what cancel(rt, job,
 *              loader_data) would have received; user_data is the loader's
 *              loader_data, job the job; event is all 0.
 */
#define LDS_RECORD_EVENT 1
#define LDS_RECORD_START 2
#define LDS_RECORD_CANCEL 3

typedef struct lds_record {
  uint32_t size;       /* bytes from this record to the next: the fixed part, the data, padding to 8 */
  uint32_t what;       /* LDS_RECORD_EVENT, LDS_RECORD_START or LDS_RECORD_CANCEL */
  void *user_data;     /* the cell's user_data (EVENT) or the loader's loader_data (START, CANCEL) */
  lds_id job;          /* START, CANCEL: the job; 0 for EVENT */
  lds_event event;     /* EVENT: the event; START: request and request_len only */
} lds_record;

/*
 * POLL mode, without callbacks into the host: takes pending deliveries in
 * order and writes cell events and host-loader starts as lds_record
 * entries into buf, one after another, instead of calling on_event and
 * start. Every other pending callback (lds_job_on_cancel hooks, free_data)
 * runs as it would in lds_runtime_dispatch; the call stops before such a
 * callback once it has written a record, so the host handles the records
 * before anything that was queued after them. Takes at most max_records
 * deliveries (no limit when max_records <= 0), stops before the first
 * record that does not fit, and never waits. Made for bindings where a
 * call from C into the host language is costly (one call hands over a
 * batch). Same thread rules as lds_runtime_dispatch; the host may call
 * lds_* functions while it handles the records, but must not reuse buf
 * before it is done with them. Records handed over are the host's: the
 * library no longer drops them when a cell is freed or a job cancelled
 * meanwhile, so a host skips the records of cells it has freed, and a job
 * cancelled before its start record was handled answers its calls with
 * LDS_ECANCELED.
 *
 *   buf   8-byte aligned, cap bytes (cap may be 0 when nothing is expected).
 *   used  receives the bytes of records written; when the first pending
 *         record alone is larger than cap, the size it needs (and the call
 *         returns LDS_ETOOBIG, taking nothing).
 *
 * Returns the number of deliveries taken (records written, callbacks run,
 * events of cells freed meanwhile dropped), >= 0; LDS_EINVAL (rt or used
 * NULL, buf NULL with cap > 0, buf not 8-byte aligned); LDS_ETOOBIG; LDS_ESTATE
 * (LOOP mode, concurrent or nested call); LDS_ECLOSED.
 */
int lds_runtime_dispatch_records(lds_runtime *rt, void *buf, size_t cap, int max_records, size_t *used);

/* ------------------------------------------------------------------ */
/* Loadable cells                                                      */
/* ------------------------------------------------------------------ */

/*
 * Creates a loadable cell in the absent state. on_event receives every
 * event of the cell, with user_data, on the delivery thread; the library
 * does not own user_data. No event is sent for the initial state.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, on_event or out NULL); LDS_ECLOSED.
 */
int lds_loadable_new(lds_runtime *rt, lds_event_fn on_event, void *user_data, lds_id *out);

/*
 * Names (since 0.5). A loader or a cell may be given a name when it is
 * made (lds_cell_options.name, and the name field of each loader options
 * struct). The metrics label a loader's series with its name in place of
 * its id (see lds_runtime_metrics_text), and the inspector shows the names
 * of cells and loaders. A name is host text: NUL-terminated UTF-8 of at
 * most LDS_NAME_MAX bytes (the NUL not counted), without control
 * characters (U+0000 to U+001F, U+007F to U+009F); anything else makes the
 * call that gives it return LDS_EINVAL and make nothing. NULL or "" is no
 * name. The library copies the name; it escapes it wherever it shows it
 * (the metrics text, the inspector's JSON and page) and never uses it in a
 * path. Names need not be unique (see lds_runtime_metrics_text for two
 * loaders of the same name).
 */
#define LDS_NAME_MAX 128

/* Since 0.5. Options for lds_loadable_new_ex and lds_process_new_ex.
 * Initialize with LDS_CELL_OPTIONS_INIT. */
typedef struct lds_cell_options {
  uint32_t size;          /* sizeof(lds_cell_options) */
  lds_event_fn on_event;  /* required: as lds_loadable_new's */
  void *user_data;        /* as lds_loadable_new's; the library does not own it */
  const char *name;       /* NULL: none; otherwise copied (see "Names" above) */
} lds_cell_options;

#define LDS_CELL_OPTIONS_INIT { (uint32_t)sizeof(lds_cell_options), NULL, NULL, NULL }

/*
 * Since 0.5. Creates a loadable cell from options; otherwise like
 * lds_loadable_new.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, opts, opts->on_event or out NULL,
 * opts->size too small for the fields up to name, a name that is not
 * valid); LDS_ECLOSED.
 */
int lds_loadable_new_ex(lds_runtime *rt, const lds_cell_options *opts, lds_id *out);

/*
 * Frees a cell. A running job is cancelled (its cancel callbacks run). No
 * event for the cell starts after this returns; when called on the delivery
 * thread (for instance from the cell's own callback) no further callback of
 * the cell runs at all, so user_data may be released right away.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (unknown or already freed id);
 * LDS_ECLOSED.
 */
int lds_loadable_free(lds_runtime *rt, lds_id cell);

/*
 * Loads: cancels the cell's running job, emits LDS_LOADING carrying the
 * request (or, with LDS_LOAD_SILENT, the current state flagged
 * LDS_FLAG_REFRESHING; since 0.5, with LDS_LOAD_KEEP_PREVIOUS or a
 * placeholder, the value described in "Keeping the previous value"), and
 * starts a job of the loader with a copy of the request. On success the
 * cell becomes LDS_LOADED, on failure LDS_ERROR.
 *
 *   request  may be NULL when request_len is 0; copied.
 *   opts     may be NULL for defaults.
 *
 * With LDS_LOAD_SHARE, a load whose loader and key (the request bytes)
 * match a job that is still running when the load begins on the loop waits
 * for that job instead of starting one (a job every cell of which has been
 * asked to leave takes no new cell): the loader runs once, every waiting cell gets the same events, and
 * the job is cancelled only when every cell waiting for it has left it
 * (cancel, reset, set_*, a new load, free).
 *
 * The cell remembers the loader, request and options for lds_loadable_refresh.
 * If the loader is freed after this call returns but before the load
 * begins on the loop, no job starts and the cell becomes LDS_ERROR with
 * LDS_ENOENT (domain LOADSTATE).
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, request NULL with a length, bad
 * options, a NULL placeholder with a length); LDS_ENOENT (cell or loader
 * unknown); LDS_ETOOBIG (request or placeholder over LDS_VALUE_MAX);
 * LDS_ENOMEM; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_load(lds_runtime *rt, lds_id cell, lds_id loader,
                      const void *request, size_t request_len,
                      const lds_load_options *opts);

/*
 * Reloads the request the state shows (with the loader and options that
 * loaded it) silently: the current state stays visible, flagged
 * LDS_FLAG_REFRESHING, and is replaced when the job ends. Works after a
 * failure, a cancel or a reset. After a cancel it is the request of the
 * restored state, never the one backed out of: load "ada", then "bob",
 * cancel, refresh reloads "ada". When the restored state shows no request
 * (LDS_ABSENT, or a value set by hand), refresh reloads the last load's:
 * the cancelled one.
 * After a reset or a set_* it is the last load's request. A refresh always
 * asks the loader: the last load's cache is not read first (a load with
 * LDS_POLICY_CACHE_FIRST or LDS_POLICY_CACHE_THEN_LOAD is refreshed as
 * LDS_POLICY_LOAD_ONLY, its result stored), except with
 * LDS_POLICY_CACHE_ONLY, which reads the cache again.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT (cell unknown, or its last loader
 * was freed); LDS_ESTATE (the cell was never loaded); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_refresh(lds_runtime *rt, lds_id cell);

/*
 * Cancels the running job, if any: its cancel callbacks run, and the cell
 * returns to the state it had before the load began, emitted with
 * LDS_FLAG_CANCELLED. Without a running job nothing happens.
 *
 * A cancel that cannot change anything queues nothing: one of a cell that
 * was never asked to load, or one that follows a cancel or reset of the
 * cell still waiting for the loop thread with no other call for the cell
 * in between. So repeated cancels (and resets, by lds_loadable_reset) of
 * one cell hold at most one queued operation, however many threads call.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_cancel(lds_runtime *rt, lds_id cell);

/*
 * Cancels the running job, if any, and makes the cell absent. Emits an
 * event unless the cell was already absent with no job running. The last
 * request stays remembered for lds_loadable_refresh.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_reset(lds_runtime *rt, lds_id cell);

/*
 * Cancels the running job, if any, and sets the cell to LDS_LOADED with a
 * copy of value (NULL allowed when len is 0).
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ETOOBIG; LDS_ENOMEM; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_set_loaded(lds_runtime *rt, lds_id cell, const void *value, size_t len);

/*
 * Cancels the running job, if any, and sets the cell to LDS_ERROR with the
 * given code in LDS_DOMAIN_HOST and a copy of message (may be NULL).
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ETOOBIG (message over
 * LDS_VALUE_MAX); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_set_error(lds_runtime *rt, lds_id cell, int32_t code, const char *message);

/*
 * Turns the cell's PROGRESS events on (enabled != 0, the default) or off.
 * Off, progress its jobs report is dropped: no LDS_EVENT_PROGRESS event,
 * and no seq number taken. Takes effect at once: progress the loop thread
 * handles from then on follows the new setting (progress a job reported
 * just before the call may go either way), and in LDS_DELIVER_POLL mode
 * PROGRESS events already waiting for dispatch are still delivered. Any
 * thread, including callbacks.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT; LDS_ECLOSED.
 */
int lds_loadable_set_progress(lds_runtime *rt, lds_id cell, int enabled);

/*
 * Copies the cell's latest event into *out (fields as in lds_event, with
 * owned copies). Before the first event the snapshot shows the initial
 * state with seq 0 and type LDS_EVENT_STATE. In POLL mode the snapshot may
 * be ahead of the events dispatched so far; compare seq. It may also lag
 * the caller: a load, cancel or other call that returned LDS_OK has taken
 * effect once the loop thread has run it, and until then the snapshot
 * shows the state before it.
 *
 * On success the caller must call lds_snapshot_clear(out). On failure *out
 * is zeroed (clearing it is harmless).
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL); LDS_ENOENT; LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_loadable_get(lds_runtime *rt, lds_id cell, lds_snapshot *out);

/*
 * Releases what a snapshot owns and zeroes it. NULL and a zeroed snapshot
 * are accepted; clearing twice is harmless. Any thread.
 */
void lds_snapshot_clear(lds_snapshot *snap);

/* ------------------------------------------------------------------ */
/* Host loaders and jobs                                               */
/* ------------------------------------------------------------------ */

/*
 * Creates a loader whose jobs are started by calling start(rt, job,
 * request, request_len, loader_data) on the delivery thread. free_data
 * (may be NULL) is called once with loader_data, on the delivery thread,
 * after the loader is freed and its last job has ended, or during
 * lds_runtime_free.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, start or out NULL); LDS_ECLOSED.
 */
int lds_loader_new(lds_runtime *rt, lds_loader_fn start, void *loader_data,
                   void (*free_data)(void *), lds_id *out);

/*
 * Since 0.3. What lds_loader_new_ex makes: lds_loader_new's arguments, and
 * a cancel function. cancel(rt, job, loader_data) (may be NULL) runs on the
 * delivery thread, once, when a job of the loader is cancelled: from
 * outside or from inside, superseded, timed out, its cell or the runtime
 * freed, exactly when the job's lds_job_on_cancel callbacks would run (and
 * before them). It does not run when the job ends by succeed, finish or
 * fail, nor for a job whose start the host never received (cancelled in
 * POLL mode before it was dispatched). With it a host learns of every
 * cancellation without registering a callback per job. In POLL mode,
 * lds_runtime_dispatch_records hands it over as an LDS_RECORD_CANCEL record.
 */
typedef void (*lds_loader_cancel_fn)(lds_runtime *rt, lds_id job, void *loader_data);
typedef void (*lds_free_fn)(void *loader_data);

typedef struct lds_loader_options {
  uint32_t size;                 /* sizeof(lds_loader_options) */
  lds_loader_fn start;           /* required */
  lds_loader_cancel_fn cancel;   /* may be NULL */
  lds_free_fn free_data;         /* may be NULL; as in lds_loader_new */
  void *loader_data;
  /* Since 0.4: the loader's limits (see "Scheduling"); all 0, the
   * default, is no limit. Read only when size covers them. */
  uint32_t max_concurrent;       /* most jobs of the loader running at once; 0: no limit */
  uint32_t rate_per_s;           /* jobs started per second, on average; 0: no limit */
  uint32_t burst;                /* jobs that may start at once after a pause; 0: 1 */
  /* Since 0.5, read only when size covers it: the loader's name (see
   * "Names", under "Loadable cells"); NULL: none. Copied. */
  const char *name;
} lds_loader_options;

#define LDS_LOADER_OPTIONS_INIT {sizeof(lds_loader_options), NULL, NULL, NULL, NULL, 0, 0, 0, NULL}

/*
 * Creates a loader from options (see lds_loader_options); otherwise like
 * lds_loader_new.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, opts, opts->start or out NULL, opts->size
 * too small for the fields up to loader_data, a name that is not valid);
 * LDS_ECLOSED.
 */
int lds_loader_new_ex(lds_runtime *rt, const lds_loader_options *opts, lds_id *out);

/*
 * Frees a loader: new loads with it return LDS_ENOENT; its running jobs go
 * on and may complete; free_data runs when the last of them has ended.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT (unknown or already freed); LDS_ECLOSED.
 */
int lds_loader_free(lds_runtime *rt, lds_id loader);

/*
 * The job functions below may be called from any thread, from inside the
 * start function or later. They return LDS_ECANCELED when the job no longer
 * runs (cancelled, superseded, timed out, its cell freed, or already ended)
 * and change nothing then; LDS_ENOENT for an id that was never a job.
 * A job counts as cancelled from the moment lds_loadable_cancel, _reset,
 * _load, _refresh, _set_loaded, _set_error or _free (or their process
 * equivalents) is called on its cell — unless other cells sharing the job
 * (LDS_LOAD_SHARE) still wait for it. A load superseded by such a call
 * before it began on the loop starts no job at all (its LOADING event is
 * still reported, then the next operation's). A call that returned LDS_OK takes
 * effect in order with the job's other calls, before any later cancel.
 */

/*
 * Yields a partial value: the cell becomes LDS_LOADED with
 * LDS_FLAG_PARTIAL (process cells ignore values). The job goes on.
 * value may be NULL when len is 0; copied.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_ETOOBIG; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_yield(lds_runtime *rt, lds_id job, const void *value, size_t len);

/*
 * Ends the job with a final value: the cell becomes LDS_LOADED
 * (process cells: LDS_FINISHED).
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_ETOOBIG; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_succeed(lds_runtime *rt, lds_id job, const void *value, size_t len);

/*
 * Ends the job keeping the last yielded value: the cell becomes LDS_LOADED
 * without LDS_FLAG_PARTIAL. If the job yielded nothing, the cell returns
 * to the state it had before the load (without LDS_FLAG_CANCELLED; since
 * 0.5 flagged LDS_FLAG_NO_VALUE, also when that state shows the value of
 * an earlier request or of a load kept with LDS_LOAD_KEEP_PREVIOUS: it is
 * never the answer to this load's request). Process cells become
 * LDS_FINISHED.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_finish(lds_runtime *rt, lds_id job);

/*
 * Ends the job with an error: the cell becomes LDS_ERROR (process cells:
 * LDS_FAILED) in LDS_DOMAIN_HOST with the code and a copy of message
 * (may be NULL). When the load has retries left (lds_load_options.retries)
 * the failure is not shown: the cell stays LDS_LOADING and, after a
 * back-off, the loader starts a new job for the next attempt, announced by
 * a STATE event whose attempt is one higher. Use lds_job_fail_final for a
 * failure that retrying cannot fix.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_ETOOBIG; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_fail(lds_runtime *rt, lds_id job, int32_t code, const char *message);

/*
 * Like lds_job_fail, for a failure that is not worth retrying (a bad
 * request, a missing resource): the cell becomes LDS_ERROR at once even
 * when the load has retries left.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_ETOOBIG; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_fail_final(lds_runtime *rt, lds_id job, int32_t code, const char *message);

/*
 * Reports progress: the cell gets an LDS_EVENT_PROGRESS event with the
 * current status and progress_done / progress_total (0 = unknown).
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_progress(lds_runtime *rt, lds_id job, uint64_t done, uint64_t total);

/*
 * Cancels the job from inside, like a cancel from outside: the cell
 * returns to the state it had before the load, flagged LDS_FLAG_CANCELLED.
 * The job's cancel callbacks run.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_cancel_self(lds_runtime *rt, lds_id job);

/*
 * Resets the cell from inside the job: the job ends (its cancel callbacks
 * run) and the cell becomes absent (process cells: idle).
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_ECANCELED; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_job_reset_self(lds_runtime *rt, lds_id job);

/*
 * Whether the host should stop working on the job: 1 when it no longer
 * runs (cancelled, superseded, timed out, its cell freed, or already
 * ended), 0 while it runs.
 *
 * Returns 1 or 0; LDS_EINVAL (rt NULL); LDS_ENOENT (never a job); LDS_ECLOSED.
 */
int lds_job_is_cancelled(lds_runtime *rt, lds_id job);

/*
 * Registers fn(job, data) to be called once, on the delivery thread, when
 * the job is cancelled from outside or from inside, superseded, timed out,
 * or when its cell or the runtime is freed. It is not called when the job
 * ends by succeed, finish or fail. Several callbacks may be registered;
 * they run in the order of registration.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or fn NULL); LDS_ENOENT; LDS_ECANCELED
 * (the job no longer runs: fn will not be called); LDS_ECLOSED.
 */
int lds_job_on_cancel(lds_runtime *rt, lds_id job,
                      void (*fn)(lds_id job, void *data), void *data);

/* ------------------------------------------------------------------ */
/* Batches of calls (since 0.3)                                       */
/* ------------------------------------------------------------------ */

/*
 * One call in a batch given to lds_runtime_submit. Each kind stands for
 * one function of the API, called with the fields shown; fields a kind
 * does not use must be 0 (they may take a meaning in a later version).
 */
#define LDS_OP_LOAD    1  /* lds_loadable_load(rt, target, loader, data, data_len, opts) where opts is
                             NULL, or (since 0.4) holds only flags = code: LDS_LOAD_SILENT,
                             LDS_LOAD_SHARE and (since 0.5) LDS_LOAD_NO_PROGRESS, no other bit */
#define LDS_OP_CANCEL  2  /* lds_loadable_cancel(rt, target) */
#define LDS_OP_YIELD   3  /* lds_job_yield(rt, target, data, data_len) */
#define LDS_OP_SUCCEED 4  /* lds_job_succeed(rt, target, data, data_len) */
#define LDS_OP_FINISH  5  /* lds_job_finish(rt, target) */
#define LDS_OP_FAIL    6  /* lds_job_fail(rt, target, code, message): the message is the data_len
                             bytes at data (no NUL needed, none allowed inside), none when 0 */

typedef struct lds_op {
  uint32_t op;         /* LDS_OP_* */
  int32_t code;        /* LDS_OP_FAIL: the error code (domain HOST); LDS_OP_LOAD: load flags; else 0 */
  lds_id target;       /* the cell (LOAD, CANCEL) or the job (YIELD, SUCCEED, FINISH, FAIL) */
  lds_id loader;       /* LDS_OP_LOAD: the loader; else 0 */
  const void *data;    /* the request (LOAD), the value (YIELD, SUCCEED) or the message (FAIL); copied */
  size_t data_len;     /* bytes at data; data may be NULL when 0 */
} lds_op;

/*
 * Makes the calls of ops[0 .. count-1] in order, as if this thread called
 * the functions one after another, and stores each call's own return code
 * in results[i] (results may be NULL when the host needs only the count).
 * A call that fails changes nothing and does not stop the batch. Same
 * thread rules as the functions themselves: any thread, inside callbacks
 * too. Loads take no lds_load_options here: use lds_loadable_load for
 * those.
 *
 * Made for hosts where each call into C is costly (an interpreter that
 * converts the arguments of every call): one call hands over a batch, the
 * runtime is entered once, and a run of loads is looked up under one
 * acquisition of the runtime's lock and handed to the loop as one work
 * item; so is (since 0.4) a run of job calls (YIELD, SUCCEED, FINISH,
 * FAIL), whose jobs the loop settles in that one item. A binding that
 * defers calls into a batch must submit it before any other call that
 * could depend on them, so that their order holds.
 *
 * Returns the number of calls that returned LDS_OK, 0..count; LDS_EINVAL
 * (rt NULL, ops NULL with count > 0, count over INT32_MAX); LDS_ECLOSED
 * (then no call was made and results is left as it was). The codes of
 * the calls: those of the functions above, and LDS_EINVAL for an unknown
 * op, a field that must be 0 and is not, or a FAIL message with a NUL. A
 * run of loads counts as one queued operation; when the queue is full
 * every load of the run gets LDS_EAGAIN.
 */
int lds_runtime_submit(lds_runtime *rt, const lds_op *ops, size_t count, int32_t *results);

/* ------------------------------------------------------------------ */
/* Built-in loaders: files, commands, HTTP                             */
/* ------------------------------------------------------------------ */

/*
 * These loaders work on the runtime's own loop: the host needs no thread.
 * They are freed with lds_loader_free like host loaders. Their requests
 * are byte strings: a path, or a structure encoded by the *_encode
 * functions below (the encodings are stable and documented, so bindings
 * may also write them directly). Buffers returned by the encoders are
 * released with lds_free.
 */

/* Releases a buffer the library allocated for the caller. NULL is accepted. */
void lds_free(void *ptr);

/* ---- file ---- */

typedef struct lds_file_options {
  uint32_t size;        /* LDS_FILE_OPTIONS_INIT */
  uint32_t chunk_size;  /* bytes per read; 0: 256 KiB */
  uint64_t max_size;    /* largest file accepted; 0: LDS_VALUE_MAX */
  /* Since 0.4: the loader's limits, as in lds_loader_options (read only
   * when size covers them; 0: no limit). */
  uint32_t max_concurrent;
  uint32_t rate_per_s;
  uint32_t burst;
  /* Since 0.5, read only when size covers it: the loader's name, as in
   * lds_loader_options; NULL: none. */
  const char *name;
} lds_file_options;

#define LDS_FILE_OPTIONS_INIT { (uint32_t)sizeof(lds_file_options), 0, 0, 0, 0, 0, NULL }

/*
 * Creates a file loader. The request is a path (bytes, no NUL; opened by
 * those bytes, which need not be UTF-8); the value is the file's contents. PROGRESS events count bytes read (total from
 * fstat). Failures: a missing or unreadable file is an error in
 * LDS_DOMAIN_OS with the errno as code and "open PATH: reason" as message;
 * a file over max_size is LDS_ETOOBIG (domain LOADSTATE). Cancelling stops
 * between two reads and closes the file.
 *
 * Only regular files are read. The file is opened non-blocking, so that a
 * FIFO with no writer or a device cannot hold the runtime, then its type
 * is checked: a directory is an error in LDS_DOMAIN_OS with EISDIR; any
 * other file that is not regular (FIFO, socket, character or block
 * device) is LDS_EINVAL in LDS_DOMAIN_LOADSTATE, with "PATH: not a regular
 * file" as message.
 *
 * opts may be NULL. Returns LDS_OK; LDS_EINVAL (a name that is not valid
 * among others); LDS_ECLOSED.
 */
int lds_file_loader_new(lds_runtime *rt, const lds_file_options *opts, lds_id *out);

/* ---- exec ---- */

#define LDS_EXEC_STREAM_LINES (1u << 0)  /* when new complete lines arrive, yield stdout up to
                                             its last newline (lines that arrive together
                                             come in one partial value) */

typedef struct lds_exec_options {
  uint32_t size;           /* LDS_EXEC_OPTIONS_INIT */
  uint32_t flags;          /* LDS_EXEC_STREAM_LINES */
  uint32_t kill_grace_ms;  /* SIGTERM to SIGKILL on cancel; 0: 2000 */
  uint64_t max_output;     /* most stdout accepted; 0: LDS_VALUE_MAX */
  /* Since 0.4: the loader's limits, as in lds_loader_options (read only
   * when size covers them; 0: no limit). */
  uint32_t max_concurrent;
  uint32_t rate_per_s;
  uint32_t burst;
  /* Since 0.5, read only when size covers it: the loader's name, as in
   * lds_loader_options; NULL: none. */
  const char *name;
} lds_exec_options;

#define LDS_EXEC_OPTIONS_INIT { (uint32_t)sizeof(lds_exec_options), 0, 0, 0, 0, 0, 0, NULL }

/*
 * What an exec job runs. argv is NULL-terminated, argv[0] the program
 * (searched in PATH); env is a NULL-terminated "NAME=value" list or NULL to
 * inherit the runtime's environment; cwd is a directory or NULL.
 */
typedef struct lds_exec_request {
  uint32_t size;             /* LDS_EXEC_REQUEST_INIT */
  const char *const *argv;
  const char *const *env;
  const char *cwd;
} lds_exec_request;

#define LDS_EXEC_REQUEST_INIT { (uint32_t)sizeof(lds_exec_request), NULL, NULL, NULL }

/*
 * Encodes an exec request into a new buffer (*out, *out_len) to pass to
 * lds_loadable_load; free it with lds_free. The encoding: "LDX1", then
 * argv as a list, env as a list (or absent), cwd as a field (or absent);
 * a list is a u32 count of fields, a field a u32 length and its bytes,
 * 0xFFFFFFFF marks absent; all integers little-endian.
 *
 * The strings must be UTF-8: one that is not is refused (LDS_EINVAL),
 * never repaired into other bytes; the exec loader refuses such an encoded
 * request the same way (the job fails with LDS_EINVAL).
 *
 * Returns LDS_OK; LDS_EINVAL (NULL pointers, empty argv, a string that is
 * not UTF-8, bad size); LDS_ENOMEM.
 */
int lds_exec_request_encode(const lds_exec_request *req, void **out, size_t *out_len);

/*
 * Since 0.5. Decodes an encoded exec request (the bytes of
 * lds_exec_request_encode, or what an exec job's request holds) into out,
 * so that a host can read back what it asked for. argv, env and cwd are
 * copies, NUL-terminated, in one block the library allocates; argv and env
 * are NULL-terminated; env and cwd are NULL when absent. Release them with
 * lds_exec_request_clear. out->size is sizeof(lds_exec_request). Decoding
 * the encoding of a request gives that request back; it reads no byte past
 * len.
 *
 *   request  the encoded request (may be NULL when len is 0)
 *   len      its length in bytes
 *   out      filled on LDS_OK; zeroed on any failure
 *
 * Returns LDS_OK; LDS_EINVAL (out NULL, request NULL with a length, bytes
 * that are not an encoded exec request the exec loader would run:
 * truncated, no argv or an empty one, a string that is not UTF-8 or holds
 * a NUL; bytes after cwd are ignored, as the exec loader ignores them);
 * LDS_ETOOBIG (len over
 * LDS_VALUE_MAX); LDS_ENOMEM.
 */
int lds_exec_request_decode(const void *request, size_t len, lds_exec_request *out);

/*
 * Since 0.5. Releases what lds_exec_request_decode allocated for req and
 * zeroes it. Only for a request filled by lds_exec_request_decode (or
 * zeroed); NULL is accepted.
 *
 *   req  a decoded request
 */
void lds_exec_request_clear(lds_exec_request *req);

/*
 * Creates an exec loader: each job spawns the command (uv_spawn, in a new
 * process group, stdin from /dev/null). The value is its stdout. A
 * non-zero exit is an error in LDS_DOMAIN_EXIT with the exit status as
 * code (128 + N when killed by signal N) and the last 4 KiB of stderr as
 * message; a program that cannot be started is an error in LDS_DOMAIN_OS.
 * Output over max_output kills the command: LDS_ETOOBIG.
 *
 * Cancelling sends SIGTERM to the process group, then, kill_grace_ms
 * later, SIGKILL to the process group, whether or not the command itself
 * has exited by then: other members of its group that survived SIGTERM
 * are killed too (after the group has ended, the SIGKILL finds no process
 * and does nothing). Every child is reaped. lds_runtime_free cuts the
 * grace period short: see there.
 *
 * opts may be NULL. Returns LDS_OK; LDS_EINVAL (a name that is not valid
 * among others); LDS_ECLOSED.
 */
int lds_exec_loader_new(lds_runtime *rt, const lds_exec_options *opts, lds_id *out);

/* ---- http ---- */

#define LDS_HTTP_INSECURE      (1u << 0)  /* skip TLS certificate and host verification */
#define LDS_HTTP_NO_REDIRECTS  (1u << 1)  /* do not follow redirects */
#define LDS_HTTP_NO_COMPRESSION (1u << 2) /* since 0.4: ask for no compressed response (no
                                             Accept-Encoding) and decode none */
#define LDS_HTTP_HTTP2         (1u << 3)  /* since 0.4: HTTP/2, multiplexed: by ALPN over TLS
                                             (HTTP/1.1 when the server does not offer it), with
                                             prior knowledge over plain http (the server must
                                             speak HTTP/2 there) */
#define LDS_HTTP_HTTP1         (1u << 4)  /* since 0.4: HTTP/1.1 only. Neither flag: HTTP/2 by
                                             ALPN over TLS, HTTP/1.1 over plain http */
#define LDS_HTTP_NO_HEURISTIC_FRESHNESS (1u << 5) /* since 0.5: a cache gives this request's
                                             responses no lifetime guessed from Last-Modified
                                             (see Caching in lds_http_loader_new) */
#define LDS_HTTP_NO_STALE_ON_DISCONNECT (1u << 6) /* since 0.5: a cache serves no stale response
                                             when the server cannot be reached (see Caching
                                             in lds_http_loader_new) */

/*
 * Bounds on one HTTP response, whatever the request (each redirect and
 * each interim 1xx response is bounded on its own). A response that passes
 * one fails the load at once with LDS_ETOOBIG (domain LOADSTATE, not
 * retried), its message naming the bound and the URL; the transfer is
 * aborted as the line arrives, so memory stays bounded whatever a server
 * sends. The body has its own bound, lds_http_request.max_body.
 */
#define LDS_HTTP_STATUS_LINE_MAX   8192u   /* bytes of the status line, CRLF included */
#define LDS_HTTP_HEADERS_MAX       65536u  /* bytes of the header lines after the status line */
#define LDS_HTTP_HEADER_LINES_MAX  1024u   /* header lines after the status line */
#define LDS_HTTP_TRAILERS_MAX      65536u  /* bytes of the trailer lines after a chunked body */

typedef struct lds_http_options {
  uint32_t size;             /* LDS_HTTP_OPTIONS_INIT */
  uint32_t max_connections;  /* 0: libcurl's default */
  const char *user_agent;    /* NULL: "loadstate/<version>"; "": no User-Agent header.
                                A request's own "User-Agent:" line replaces it. */
  const char *proxy;         /* NULL: from the environment (http_proxy, https_proxy,
                                no_proxy, as curl reads them); "": no proxy at all;
                                otherwise the proxy's URL. Read only when size covers it. */
  /* Since 0.4, read only when size covers them. The loader's limits, as in
   * lds_loader_options (0: no limit), and max_per_host: the most
   * connections open at once to one host (libcurl's
   * CURLMOPT_MAX_HOST_CONNECTIONS; transfers over it wait inside libcurl,
   * already counted as running jobs and not flagged LDS_FLAG_QUEUED); 0: no limit. */
  uint32_t max_concurrent;
  uint32_t rate_per_s;
  uint32_t burst;
  uint32_t max_per_host;
  /* Since 0.5, read only when size covers it: the loader's name, as in
   * lds_loader_options; NULL: none. */
  const char *name;
} lds_http_options;

#define LDS_HTTP_OPTIONS_INIT { (uint32_t)sizeof(lds_http_options), 0, NULL, NULL, 0, 0, 0, 0, NULL }

typedef struct lds_http_request {
  uint32_t size;                /* LDS_HTTP_REQUEST_INIT */
  const char *method;           /* NULL: "GET"; otherwise an HTTP token (RFC 9110: letters,
                                   digits and !#$%&'*+-.^_`|~), sent as it is */
  const char *url;              /* http:// or https:// only; no control character
                                   (bytes 0x00-0x1F, 0x7F) and no space */
  const char *const *headers;   /* "Name: value" lines, header_count of them: a token
                                   name, a colon, then a value with no control character
                                   but tab ("Name:" alone removes a header) */
  size_t header_count;
  const void *body;             /* may be NULL when body_len is 0 */
  size_t body_len;
  uint32_t timeout_ms;          /* whole transfer; 0: none (the load's timeout_ms still applies) */
  uint32_t max_redirects;       /* 0: 5. Redirects go only between http and https */
  uint64_t max_body;            /* largest body accepted (decoded, when compressed); 0: LDS_VALUE_MAX */
  uint32_t flags;               /* LDS_HTTP_INSECURE, LDS_HTTP_NO_REDIRECTS, LDS_HTTP_NO_COMPRESSION,
                                   LDS_HTTP_HTTP2 or LDS_HTTP_HTTP1 */
  /* Since 0.4, read only when size covers it (size may end before it). */
  const char *ca_file;          /* NULL: verify servers with the system's CA certificates;
                                   otherwise a file of PEM CA certificates to trust instead
                                   (a self-signed server's own certificate, for instance) */
} lds_http_request;

#define LDS_HTTP_REQUEST_INIT { (uint32_t)sizeof(lds_http_request), NULL, NULL, NULL, 0, NULL, 0, 0, 0, 0, 0, NULL }

/*
 * Encodes an HTTP request into a new buffer for lds_loadable_load; free it
 * with lds_free. The encoding: "LDH1", method, url (fields), headers
 * (list), body (field), u32 timeout_ms, u64 max_body, u32 max_redirects,
 * u32 flags (the request's flags without LDS_HTTP_NO_REDIRECTS, which is
 * max_redirects 0: bit 0 insecure; since 0.4, LDS_HTTP_NO_COMPRESSION,
 * LDS_HTTP_HTTP2 and LDS_HTTP_HTTP1 at their bits; decoders ignore
 * other bits), then, since 0.4
 * and only when ca_file is set, ca_file (field) — fields and lists as for
 * exec requests. Decoders accept the encoding with or without ca_file.
 * The method, url and headers are checked as lds_http_request describes,
 * so that none can add lines of its own to the request sent (CR, LF); the
 * http loader checks a request it is given the same way, and fails a job
 * whose request does not pass with LDS_EINVAL (domain LOADSTATE), whoever
 * encoded it. Any thread.
 *
 * Returns LDS_OK; LDS_EINVAL (NULL pointers, no url, a method that is not
 * a token, a url or header with a control character, a header line that
 * is not "Name: value", a string that is not UTF-8 (refused, never
 * repaired; the http loader refuses it in an encoded request too), an
 * unknown flag, both LDS_HTTP_HTTP2 and LDS_HTTP_HTTP1, bad size);
 * LDS_ETOOBIG; LDS_ENOMEM.
 */
int lds_http_request_encode(const lds_http_request *req, void **out, size_t *out_len);

/*
 * Since 0.5. Decodes an encoded HTTP request (the bytes of
 * lds_http_request_encode, or what an http job's request and its events'
 * request hold) into out, so that a host can read back the URL, method,
 * headers and body it asked for. method, url, the header lines and
 * ca_file are copies, NUL-terminated, and body a copy, all in one block
 * the library allocates; headers is never NULL (its header_count lines are
 * followed by a NULL entry), method is "GET" when the encoding has none,
 * body is non-NULL (body_len may be 0), ca_file is NULL when absent.
 * Release them with lds_http_request_clear. The numbers come back as the
 * encoding holds them: max_redirects 0 sets LDS_HTTP_NO_REDIRECTS in
 * flags, and an encoded max_redirects of 5 for a request that asked for 0
 * (the default) reads 5. Decoding the encoding of a request gives that
 * request back; decoding reads no byte past len. out->size is
 * sizeof(lds_http_request).
 *
 *   request  the encoded request (may be NULL when len is 0)
 *   len      its length in bytes
 *   out      filled on LDS_OK; zeroed on any failure
 *
 * Returns LDS_OK; LDS_EINVAL (out NULL, request NULL with a length, bytes
 * that are not an encoded HTTP request the http loader would send:
 * truncated, with bytes after the last field, no url, a string that is not
 * UTF-8 or holds a NUL, a method, url or header line that
 * lds_http_request_encode would refuse); LDS_ETOOBIG (len over
 * LDS_VALUE_MAX, more than 65,536 header lines); LDS_ENOMEM.
 */
int lds_http_request_decode(const void *request, size_t len, lds_http_request *out);

/*
 * Since 0.5. Releases what lds_http_request_decode allocated for req and
 * zeroes it. Only for a request filled by lds_http_request_decode (or
 * zeroed); NULL is accepted.
 *
 *   req  a decoded request
 */
void lds_http_request_clear(lds_http_request *req);

/*
 * A decoded response; its pointers point into the value it was decoded
 * from (valid as long as that value is).
 */
typedef struct lds_http_response {
  int32_t status;        /* the final response's status */
  const char *headers;   /* its header lines, "Name: value\r\n" each; not NUL-terminated */
  size_t headers_len;
  const void *body;
  size_t body_len;
} lds_http_response;

/*
 * Decodes the value of an http job ("LDR1", i32 status, headers as a
 * field, then the body to the end).
 *
 * Returns LDS_OK; LDS_EINVAL (NULL pointers, not an encoded response).
 */
int lds_http_response_decode(const void *value, size_t len, lds_http_response *out);

/*
 * Creates an HTTP loader: libcurl's multi interface driven by the
 * runtime's libuv loop. The value of a job is an encoded response (see
 * lds_http_response_decode). Only http and https are allowed, also for
 * redirects; TLS verification is on unless the request sets
 * LDS_HTTP_INSECURE. Connections are kept and reused. libcurl's easy
 * handles are reused too, with libcurl 8.1.0 or later only: with an older
 * one (Debian 12's is 7.88.1) a reused handle lets a response whose first
 * header line is folded read and free memory of the previous transfer
 * (curl issue 11101), so every transfer gets a new handle.
 *
 * Compression (since 0.4): unless the request sets LDS_HTTP_NO_COMPRESSION,
 * it sends "Accept-Encoding:" with every encoding the libcurl in use
 * decodes ("gzip, deflate", then "br" and "zstd" when libcurl has them;
 * a request's own Accept-Encoding line is sent instead, and those four
 * are still decoded) and the value's body is the decoded body; the
 * header lines stay as received (Content-Encoding and Content-Length
 * describe the bytes on the wire). max_body bounds the decoded body:
 * decoding stops, and the load fails with LDS_ETOOBIG, as soon as the
 * decoded bytes pass it, so a small compressed body that expands without
 * bound (a compression bomb) costs at most max_body of memory. A body
 * that does not decode is LDS_EIO. With LDS_HTTP_NO_COMPRESSION no
 * Accept-Encoding is sent and the body is kept as it arrives, encoded or
 * not.
 *
 * HTTP versions (since 0.4): by default libcurl speaks HTTP/2 over TLS
 * when the server offers it (ALPN) and HTTP/1.1 over plain http.
 * LDS_HTTP_HTTP2 asks for HTTP/2 also over plain http (prior knowledge:
 * the server must speak it, there is no fallback) and lets transfers to
 * one host share HTTP/2 connections: a new request waits for a connection
 * that can take one more stream rather than opening one of its own, up
 * to 1,000 streams a connection or the server's own limit (its SETTINGS;
 * nginx's http2_max_concurrent_streams is 128 by default), so 1,000
 * concurrent requests to a server that allows 1,000 streams share one
 * connection once it is up. Requests that start while every connection
 * is at its limit each open a connection of their own (libcurl's
 * behaviour; while a connection is being set up, before the server has
 * said its limit, libcurl counts on 100 streams): bound them with
 * max_connections. With a libcurl older than 8.0.0 (Debian 12 has
 * 7.88.1), curl fails a cleartext HTTP/2 transfer that reuses a
 * connection ("Error in the HTTP2 framing layer", curl issue 10634): there
 * each request over plain http with prior knowledge opens a connection of
 * its own and closes it after (no multiplexing); HTTP/2 over TLS shares
 * connections with any libcurl.
 * LDS_HTTP_HTTP1 keeps to HTTP/1.1. The response's header lines of an
 * HTTP/2 answer are lower case, as HTTP/2 sends them. ca_file replaces
 * the system's CA certificates for the request (a server with a
 * self-signed certificate is trusted by naming that certificate, not by
 * turning verification off); a file that cannot be read fails the load
 * (LDS_EIO). The system's CA certificates are those libcurl was built
 * with, unless the environment variable LOADSTATE_CA_FILE names a file of
 * PEM CA certificates to use instead (a CA bundle), and LOADSTATE_CA_DIR a
 * folder of hashed certificates (c_rehash) to use as well; each is read
 * when a transfer handle is set up, empty meaning unset. A libcurl copied
 * from another machine (the Python wheel's) has that machine's paths
 * compiled in: the Python package sets both to the host's own.
 *
 * PROGRESS events count body bytes
 * (one every 64 KiB or so, then one when the body is complete; a body
 * under 64 KiB reports none).
 *
 * A status outside 2xx is an error in LDS_DOMAIN_HTTP with the status as
 * code; the LDS_ERROR event (and snapshot) carries the response as its
 * value, encoded as a successful job's value is (status, headers, body),
 * so a host can read what the server said. With retries (lds_load_options.retries), 5xx, 408 and 429 are
 * retried; other statuses are final. The back-off before such a retry is
 * the server's Retry-After when it sends one the loader can read: delay
 * seconds (digits only; a number past any range saturates instead of
 * overflowing) or an HTTP-date (IMF-fixdate "Sun, 06 Nov 1994 08:49:37
 * GMT", or the obsolete RFC 850 and asctime forms), measured against the
 * wall clock, 0 once past. That wait is capped, like every back-off, at
 * the load's retry_max_ms (30 s by default). A Retry-After the loader
 * cannot read is ignored: the usual back-off applies.
 *
 * Other failures, all in LDS_DOMAIN_LOADSTATE unless said otherwise:
 *   a body over max_body, or a response over one of the LDS_HTTP_*_MAX
 *     bounds above                            LDS_ETOOBIG (not retried)
 *   a transfer timeout                        LDS_ETIMEDOUT
 *   a request that does not pass the checks of lds_http_request_encode,
 *     a refused scheme (also in a redirect), a malformed URL, more
 *     redirects than max_redirects ("too many redirects")
 *                                             LDS_EINVAL (not retried)
 *   a transport failure for which the operating system gave an errno:
 *     a refused or reset connection, no socket to be had (EMFILE when
 *     the process is out of file descriptors), ...
 *                                             LDS_DOMAIN_OS, the errno
 *   any other transport failure (a name that does not resolve, a
 *     connection closed without an answer, a malformed response, a TLS
 *     failure without an errno)               LDS_EIO
 * The message of a transport failure is libcurl's (led by the errno's
 * text when libcurl's does not give it), followed by the URL.
 * No request is sent twice behind the caller's back (since 0.5): when a
 * connection libcurl reused closes without an answer, libcurl would send
 * the request again on a new one (up to five more times); the loader
 * refuses that resend instead, and the load fails with LDS_EIO ("the
 * connection closed before an answer; not sent again"), which the load's
 * retries (lds_load_options.retries) may send again for GET, HEAD,
 * OPTIONS, TRACE, PUT and DELETE, and never for another method (POST,
 * PATCH: the request may have reached the server). With a cache, a stale
 * stored response may stand in (see "A dead origin" below).
 * Cancelling aborts the transfer at once and closes its socket.
 *
 * Caching (since 0.4; a private cache per RFC 9111 and RFC 9110 since
 * 0.5), for loads with a cache (lds_load_options.cache). The cache key is
 * the load's (cache_key); key a URL's loads by the URL itself (its bytes,
 * without a fragment) for the rules below that name other URLs
 * (invalidation of Location and Content-Location, a POST's answer).
 *   Which loads read the cache: GET and HEAD (a HEAD is answered from a
 *     stored GET, without the body). Other methods never read it.
 *   What is stored (from the final response, unless the load sets
 *     LDS_LOAD_IGNORE_CACHE_HEADERS, then every 2xx response is stored as
 *     it is and the rules below about freshness, Vary, statuses and
 *     invalidation do not apply; validators and 304s still work):
 *     - a GET's response whose status is 2xx but 206, or cacheable by
 *       default (203, 204, 300, 301, 308, 404, 405, 410, 414, 501), or any
 *       other final status with explicit freshness (max-age, Expires) or
 *       Cache-Control: public;
 *     - not when Cache-Control: no-store is in the response or in the
 *       request (an older entry under the key is then dropped), except
 *       that must-understand with a status listed above stores it anyway,
 *       and must-understand with any other status never;
 *     - a POST's 2xx answer with explicit freshness whose Content-Location
 *       is the request's own URL, when the load keys by URL (it stands for
 *       a later GET of that URL);
 *     - no partial (206) response, no 1xx response, no answer to another
 *       method.
 *     A response with Vary is stored under the key and under a key of its
 *     variant's own (the key, a 0 byte, then each field it names with the
 *     request's normalised value): every variant is kept, the latest also
 *     under the key itself.
 *   Invalidation (RFC 9111 section 4.4). A 2xx or 3xx answer to a method
 *     other than GET, HEAD, OPTIONS and TRACE removes the entry under the
 *     load's key and its variants; when the key is the request's URL, also
 *     those of the same-origin URLs its Location and Content-Location name.
 *     A failed answer (4xx, 5xx, no answer) removes nothing.
 *   Freshness. A stored response is fresh while its age is below its
 *     lifetime:
 *     - its age: the time since it was stored, plus its age when it
 *       arrived (the larger of its Age and the time since its Date). Age is
 *       read from its first line's first member, digits up to any
 *       parameters ("7200;foo=1" is 7200); another first member (a sign, a
 *       fraction, letters) leaves Age out.
 *     - its lifetime: Cache-Control max-age=N (the first max-age counts);
 *       else Expires (an HTTP-date in any of its three forms, names in any
 *       case; two-digit years of the RFC 850 form taken within 50 years of
 *       now) minus Date (or its arrival): an Expires that does not parse
 *       ("0", a zone other than GMT) or that comes twice is in the past;
 *       else, heuristically, with Last-Modified and a status cacheable by
 *       default (or public): a tenth of the time from Last-Modified to
 *       Date, at most 24 hours (LDS_HTTP_NO_HEURISTIC_FRESHNESS in the
 *       request turns this guess off); else the load's fresh_ms (counted
 *       from when it was stored), as for any value.
 *     Cache-Control is read strictly: directive names in any case,
 *     arguments with or without quotes; a number is its leading ASCII
 *     digits ("3600.5" is 3600), saturated at 2^31 seconds (RFC 9111
 *     section 1.2.2); a max-age whose argument does not begin with a digit
 *     ("-1", "a3600", "'3600'") makes the response stale; a directive with
 *     whitespace around its "=" is no directive; the first occurrence of a
 *     directive counts.
 *   How a stored response serves a load:
 *     fresh                 a cache-first load shows it without asking the
 *                           server: LDS_LOADED flagged LDS_FLAG_FROM_CACHE,
 *                           or, for a stored status outside 2xx (a 404),
 *                           LDS_ERROR in LDS_DOMAIN_HTTP with the status as
 *                           code, the response as value, flagged
 *                           LDS_FLAG_FROM_CACHE.
 *     stale                 the server is asked, with If-None-Match and
 *                           If-Modified-Since from its ETag (quoted if it
 *                           came without quotes) and Last-Modified, when the
 *                           request is a GET without a body that names no
 *                           condition of its own. A 304 makes it current:
 *                           the stored status and body, its header lines
 *                           with those of the 304 in their place (but
 *                           Content-Length, the hop-by-hop fields, and
 *                           Content-Encoding of a body decoded on arrival;
 *                           when the result would pass LDS_HTTP_HEADERS_MAX
 *                           the stored lines stay), stored again, shown
 *                           LDS_LOADED flagged LDS_FLAG_FROM_CACHE |
 *                           LDS_FLAG_REVALIDATED. No body is transferred.
 *     stale-while-revalidate=N  for N seconds after it turns stale, a
 *                           cache-first load shows it (LOADED, FROM_CACHE |
 *                           STALE | REFRESHING) and revalidates it silently,
 *                           as LDS_POLICY_CACHE_THEN_LOAD does.
 *     no-cache              stale at once: revalidated before every use.
 *     no-cache="a, b"       usable, but the fields named are not served.
 *     must-revalidate, proxy-revalidate
 *                           once stale, never served stale (not by
 *                           stale-while-revalidate, stale-if-error, a
 *                           dead origin or max-stale).
 *     Vary: a, b            usable only by a request with the same values
 *                           of those fields (its own header lines, or the
 *                           loader's User-Agent and Accept-Encoding),
 *                           compared normalised: list members trimmed; for
 *                           Accept-Language, Accept-Encoding and
 *                           Accept-Charset also in any case and any order.
 *                           Vary: * matches nothing. When no stored
 *                           variant matches, the latest one's ETag is sent
 *                           (If-None-Match): a 304 makes it this request's
 *                           variant too.
 *     s-maxage, private, public (but as above)
 *                           for shared caches: no effect here.
 *     Pragma                ignored (RFC 9111 section 5.4).
 *   The request's own Cache-Control (RFC 9111 section 5.2.1):
 *     max-age=N             a response older than N seconds is stale.
 *     min-fresh=N           a response fresh for less than N more seconds
 *                           is stale.
 *     max-stale[=N]         a stale response (by at most N seconds) is
 *                           served as it is (unless must-revalidate or
 *                           no-cache forbid it).
 *     no-cache              the stored response is revalidated first.
 *     no-store              the cache is neither read nor written (an
 *                           older entry under the key is dropped).
 *     only-if-cached        without a usable stored response the load
 *                           fails at once, without the network: LDS_ERROR,
 *                           LDS_DOMAIN_HTTP, code 504.
 *   The request's own conditions (RFC 9111 section 4.3.2). A GET or HEAD
 *     with If-None-Match (or, without it, If-Modified-Since) that a fresh
 *     stored response meets (a weakly matching entity tag or "*"; a
 *     Last-Modified, or else Date, no later than the date) is answered by
 *     the cache with a 304: LDS_ERROR, LDS_DOMAIN_HTTP, code 304, flagged
 *     LDS_FLAG_FROM_CACHE, whose value carries the stored Cache-Control,
 *     Content-Location, Date, ETag, Expires, Last-Modified and Vary. A
 *     request with a condition of its own and a stale or missing stored
 *     response goes to the server as it is (its 304 is then an http error).
 *   Ranges. A GET with a Range of one byte range that a stored complete
 *     200 holds (bytes=a-b, bytes=a-, bytes=-n; clamped to the body) is
 *     answered from it: a 206 with Content-Range and Content-Length.
 *     Other range requests go to the server; their 206 is not stored.
 *   What a response served from the cache looks like: the stored
 *     response without the hop-by-hop fields (Connection, Keep-Alive,
 *     Proxy-Connection, Proxy-Authenticate, Proxy-Authentication-Info,
 *     Proxy-Authorization, TE, Transfer-Encoding, Upgrade) and those its
 *     Connection names, with "Age: N" (its current age in seconds, in
 *     place of a stored Age) and, after any Cache-Status of another cache,
 *     the cache's verdict (RFC 9211):
 *       Cache-Status: loadstate; hit; ttl=N; detail=fresh
 *       Cache-Status: loadstate; hit; ttl=N; detail=heuristic
 *       Cache-Status: loadstate; hit; ttl=-N; detail=stale
 *       Cache-Status: loadstate; fwd=stale; fwd-status=304; detail=revalidated
 *     (ttl: seconds it stays fresh, negative once stale). A response loaded
 *     from the server that the cache did not serve carries neither, and is
 *     shown as it arrived. Stored entries keep the response as it arrived
 *     (a revalidated one as it was last shown: its Age and Cache-Status are
 *     written anew whenever it is served).
 *   A dead origin (RFC 9111 section 4.2.4). When a load that could use a
 *     stored 2xx response (any policy but LDS_POLICY_CACHE_ONLY) fails:
 *     - the server could not be reached, or closed the connection without
 *       an answer, or the transfer timed out: the stored response, however
 *       stale, is served instead (LDS_LOADED, FROM_CACHE | STALE, the entry
 *       left as it is), unless no-cache, must-revalidate or
 *       proxy-revalidate forbid it, or the request sets
 *       LDS_HTTP_NO_STALE_ON_DISCONNECT;
 *     - the server answered 500, 502, 503 or 504: the stored response is
 *       served only within its stale-if-error=N time (N seconds after it
 *       turned stale); otherwise the error stands.
 *   Bodies in a coding libcurl does not decode (a made-up Content-Encoding
 *     or Transfer-Encoding) arrive as they were sent, with their header:
 *     always with LDS_HTTP_NO_COMPRESSION, and with libcurl 7 (Debian 12's)
 *     for any request. libcurl 8 sets up its decoders as it reads the
 *     header, before the loader sees it: there a request that asks for
 *     compression (the default) fails such a response with LDS_EIO.
 *   Entries stored by a version before 0.5 (a persistent cache file of
 *     schema version 1) have no validators beside them: the stored header
 *     lines are read instead.
 *   Not done: the rules of shared caches (s-maxage, private,
 *     proxy-revalidate as such, Authorization); storing 1xx or partial
 *     responses and combining partial responses; serving several ranges;
 *     the obsolete Warning field; heuristic freshness under a tenth of the
 *     time since Last-Modified.
 *
 * opts may be NULL. Returns LDS_OK; LDS_EINVAL (a name that is not valid
 * among others); LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_http_loader_new(lds_runtime *rt, const lds_http_options *opts, lds_id *out);

/* ------------------------------------------------------------------ */
/* Caches                                                              */
/* ------------------------------------------------------------------ */

/*
 * A cache maps byte-string keys to byte-string values. Two stores exist:
 *
 *   memory      named, held in memory, shared by any number of cells
 *   persistent  one SQLite file that outlives the process
 *
 * Both are bounded: when a put takes a cache over a bound, least recently
 * used entries (by get or put) are evicted until it is within bounds
 * again. The bytes of a cache are the lengths of its keys plus its values,
 * plus what the http loader keeps beside a response it stores (its
 * validators, see lds_http_loader_new; tens of bytes).
 * An entry larger than the byte bound is not kept (and an older entry
 * under its key is dropped). An entry may have a time to live (ttl_ms): a
 * get after it has passed drops the entry and reports a miss.
 *
 * Every entry records the wall-clock time at which it was stored, and a
 * stale flag (set when the entries under a key prefix are invalidated,
 * cleared by the next put of the key); whether a value is fresh enough to
 * show is the caller's decision.
 *
 * Lifecycle: lds_memory_cache_new / lds_persistent_cache_new, then any
 * number of gets and puts, then lds_cache_free (or lds_runtime_free, which
 * frees every cache still open). Caches are named by lds_id like cells.
 *
 * Threads: unlike the cell functions, the cache functions below do their
 * work on the calling thread, under the cache's lock, and return when it is
 * done; they never wait for the loop. They may be called from any thread,
 * including from callbacks.
 */

/* Options for lds_memory_cache_new. Initialize with LDS_MEMORY_CACHE_OPTIONS_INIT. */
typedef struct lds_memory_cache_options {
  uint32_t size;         /* sizeof(lds_memory_cache_options), set by the INIT macro */
  const char *name;      /* the cache's name (copied); NULL: "" */
  uint64_t max_entries;  /* most entries held; 0: 10000 */
  uint64_t max_bytes;    /* most bytes (keys and values) held; 0: 64 MiB */
  uint64_t ttl_ms;       /* time to live of every entry; 0: entries do not expire */
  uint64_t unobserved_ms; /* since 0.5: grace of an entry no cell shows; 0: no such limit
                            (see "Unobserved entries"). A caller whose size ends before
                            this field gets 0 */
} lds_memory_cache_options;

#define LDS_MEMORY_CACHE_OPTIONS_INIT { (uint32_t)sizeof(lds_memory_cache_options), NULL, 0, 0, 0, 0 }

/*
 * Unobserved entries (since 0.5): with unobserved_ms > 0, an entry that no
 * cell shows is dropped once it has been unobserved that long. An entry is
 * observed while a live loadable cell's last load used this cache and this
 * key (the cell was not reset or freed since); its grace starts when the
 * last such cell stops observing it (it is freed, reset, or loads another
 * key or another cache), or, for an entry no cell observes, at its put
 * (lds_cache_put, a prefetch, a load's result). The grace is separate from
 * freshness: fresh_ms still decides stale or fresh, and ttl_ms and the
 * bounds still apply to observed entries.
 * Dropping needs no call from the host: an entry past its grace is never
 * returned (lds_cache_get reports a miss), and every operation on the
 * cache (get, put, statistics, keys, a cell's load or release) first
 * sweeps out the entries whose grace has passed, so they hold memory only
 * until the cache is next used. Each drop counts in
 * lds_cache_statistics.expirations.
 */

/* Persistent cache flags (lds_persistent_cache_options.flags). */
#define LDS_CACHE_REPLACE_DAMAGED  (1u << 0)  /* delete and recreate a file that is not a cache of this version */

/* Options for lds_persistent_cache_new. Initialize with LDS_PERSISTENT_CACHE_OPTIONS_INIT. */
typedef struct lds_persistent_cache_options {
  uint32_t size;       /* sizeof(lds_persistent_cache_options), set by the INIT macro */
  uint32_t flags;      /* LDS_CACHE_REPLACE_DAMAGED */
  const char *path;    /* the file (required); created with mode 0600 when missing */
  uint64_t max_bytes;  /* most bytes (keys and values) held; 0: 256 MiB */
  uint64_t ttl_ms;     /* time to live of every entry; 0: entries do not expire */
} lds_persistent_cache_options;

#define LDS_PERSISTENT_CACHE_OPTIONS_INIT { (uint32_t)sizeof(lds_persistent_cache_options), 0, NULL, 0, 0 }

/*
 * An entry found by lds_cache_get, owned by the caller: value is a copy
 * allocated by the library (non-NULL even for an empty value). Release it
 * with lds_cache_value_clear.
 */
typedef struct lds_cache_value {
  void *value;
  size_t value_len;
  uint64_t stored_at_ms;   /* wall-clock time (ms since the Unix epoch) of the put that stored it */
  uint64_t expires_at_ms;  /* wall-clock time at which it expires; 0: never */
  uint32_t stale;          /* 1 when its key prefix was invalidated since that put, else 0 */
} lds_cache_value;

/*
 * A cache's counters since it was opened (for a persistent cache: since
 * this process opened the file), and what it holds now.
 */
typedef struct lds_cache_statistics {
  uint64_t hits;         /* gets that found a live entry */
  uint64_t misses;       /* gets that found nothing or an expired entry */
  uint64_t evictions;    /* entries dropped to stay within the bounds (and puts too large to keep) */
  uint64_t expirations;  /* entries dropped because their time to live had passed (since 0.5:
                            or their unobserved grace, see "Unobserved entries") */
  uint64_t entries;      /* entries held now */
  uint64_t bytes;        /* bytes of keys and values held now */
} lds_cache_statistics;

/*
 * Creates an empty memory cache.
 *
 *   opts  may be NULL for defaults; otherwise opts->size must reach at least
 *         to the end of ttl_ms (fields past opts->size read as 0).
 *   out   receives the cache's id; unchanged on failure.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL, bad size); LDS_ECLOSED.
 */
int lds_memory_cache_new(lds_runtime *rt, const lds_memory_cache_options *opts, lds_id *out);

/*
 * Opens the persistent cache in the file opts->path, creating the file
 * with mode 0600 (its -wal and -shm companions get the same mode) when it
 * does not exist. Entries stored earlier, by this process or another one,
 * are served again.
 *
 * Durability: the file is an SQLite database in WAL mode with
 * synchronous=NORMAL; every put, remove or clear is one transaction. Once
 * a call returned, its change survives the process being killed at any
 * moment, and the file always opens intact afterwards. An operating-system
 * crash or power loss may lose the last changes, never the file.
 *
 * Checkpoints: the cache copies its write-ahead log into the file on a
 * thread of its own (one per open cache, ended by lds_cache_free or the
 * runtime's free), so that puts, and loads storing their values, do not
 * wait for the disk's syncs. Under writes that never pause, the writer
 * copies the rest itself once the log passes 4,000 pages (16 MiB), so
 * its -wal companion file stays near that size (31 MiB at most
 * measured) until the cache is freed, which checkpoints and removes it.
 *
 * Processes sharing the file: while another one writes (holds the file's
 * write lock), a call on a host thread waits for it, up to 5 seconds in
 * all, then fails with LDS_EIO; it waits outside the cache's own lock, so
 * other callers do not wait behind it. On the runtime's loop thread (a
 * load reading or storing its value through the cache) nothing waits: a
 * write fails at once, and the load goes on as with any failure of its
 * cache. Reads do not wait in either case (a read whose bookkeeping of
 * recent use cannot be written still returns its entry).
 *
 * A file that is not an SQLite database, or is a database but not a cache
 * of this library's schema version, is left alone and gives LDS_EIO,
 * unless opts->flags has LDS_CACHE_REPLACE_DAMAGED: then it is deleted
 * and created anew, empty. Schema versions: 0.5 writes version 2 (a
 * column for what a loader keeps beside a value). A version 1 file,
 * written before 0.5, is upgraded in place when it is opened, in one
 * transaction, and keeps its entries; a library before 0.5 sees a
 * version 2 file as another schema (LDS_EIO, or replaced with
 * LDS_CACHE_REPLACE_DAMAGED).
 *
 * Returns LDS_OK; LDS_EINVAL (rt, opts, opts->path or out NULL, bad size,
 * unknown flag); LDS_EIO (the file cannot be opened or created, or is
 * damaged); LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_persistent_cache_new(lds_runtime *rt, const lds_persistent_cache_options *opts, lds_id *out);

/*
 * Frees a cache: a memory cache drops its entries; a persistent cache
 * closes its file (the entries stay in it). Calls already running on other
 * threads finish first; later calls with the id return LDS_ENOENT. (Of
 * the first 1024 memory caches of a runtime, which lds_cache_get finds
 * without a lock, a freed one keeps an empty record of under 1 KiB until
 * lds_runtime_free.)
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (not a cache, or already
 * freed); LDS_ECLOSED.
 */
int lds_cache_free(lds_runtime *rt, lds_id cache);

/*
 * Stores a copy of value under a copy of key, stamped with the current
 * wall-clock time, not stale, with the cache's time to live; replaces any
 * entry under the key. Then evicts least recently used entries until the
 * cache is within its bounds. key and value may be NULL when their length
 * is 0.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, a NULL pointer with a length);
 * LDS_ENOENT; LDS_ETOOBIG (key or value over LDS_VALUE_MAX); LDS_EIO (the
 * file could not be written: nothing changed); LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_cache_put(lds_runtime *rt, lds_id cache, const void *key, size_t key_len,
                  const void *value, size_t value_len);

/*
 * Looks key up. When an entry is found, fills *out with a copy of it, makes
 * it the most recently used, and returns 1; the caller must then call
 * lds_cache_value_clear(out). On a miss (no entry, or an expired one, which
 * is dropped) and on failure, *out is zeroed.
 *
 * Returns 1 (found); 0 (missing); LDS_EINVAL (rt or out NULL, key NULL with
 * a length); LDS_ENOENT (no such cache: not a miss); LDS_ETOOBIG; LDS_EIO;
 * LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_cache_get(lds_runtime *rt, lds_id cache, const void *key, size_t key_len,
                  lds_cache_value *out);

/* The most keys one lds_cache_get_many looks up (since 0.4). */
#define LDS_CACHE_GET_MANY_MAX 4096

/*
 * Since 0.4. Looks count keys up at once, each like lds_cache_get (an
 * expired entry is dropped, a hit becomes the most recently used, every
 * key counts as one hit or one miss in lds_cache_stats): made for hosts
 * that read many entries together, where one call per key costs more
 * than the lookups. Key i is the key_lens[i] bytes at keys[i] (keys[i]
 * may be NULL when key_lens[i] is 0; a key may appear more than once).
 *
 *   out      count values; out[i] is filled when key i is found (release
 *            it with lds_cache_value_clear), zeroed otherwise.
 *   results  count codes: results[i] is 1 (found), 0 (missing), or a
 *            negative code for key i alone: LDS_EINVAL (keys[i] NULL with
 *            a length), LDS_ETOOBIG (key over LDS_VALUE_MAX), LDS_ENOMEM,
 *            LDS_EIO (a persistent cache's statement failed), LDS_EREDIS
 *            (a Redis cache could not answer for it; see below).
 *
 * A memory cache looks every key up under one acquisition of its lock, a
 * persistent cache likewise. A Redis cache hands the whole batch to the
 * loop once: its front memory tier answers the keys it holds, and the
 * GETs of the others are all sent before the loop writes, in one pipeline
 * on the command connection; the call returns when every reply came, or
 * failed (a reply waits at most command_timeout_ms, then the connection
 * is dropped and every key still waiting fails with LDS_EREDIS). A key
 * whose GET would take the commands waiting over LDS_REDIS_PENDING_MAX
 * fails alone, with LDS_EREDIS (reason LDS_REDIS_EQUEUE); while Redis is
 * unreachable every key not in the front tier fails with LDS_EREDIS.
 *
 * Returns the number of keys found (0 to count), or for the whole call:
 * LDS_EINVAL (rt NULL; keys, key_lens, out or results NULL with count >
 * 0); LDS_ETOOBIG (count over LDS_CACHE_GET_MANY_MAX); LDS_ENOENT (no such
 * cache); LDS_ESTATE (a Redis cache, on the loop thread); LDS_EREDIS (a
 * Redis cache's loop did not answer); LDS_ECLOSED. On such a failure
 * every out[i] is zeroed and every results[i] is the returned code, except
 * for LDS_ETOOBIG, which touches neither array, and LDS_EINVAL for a NULL
 * array, which fills only the arrays that are not NULL. count 0
 * returns 0 once rt and cache are checked, touching nothing.
 * Threads: any, like lds_cache_get (a Redis cache: not the loop thread).
 */
int lds_cache_get_many(lds_runtime *rt, lds_id cache, size_t count, const void *const *keys,
                       const size_t *key_lens, lds_cache_value *out, int *results);

/*
 * Looks key up like lds_cache_get, and copies the value into the caller's
 * buffer instead of a copy the library allocates: made for hosts that
 * read many small values (a binding's mapping access), where an
 * allocation and a second call cost more than the lookup. *len receives
 * the value's length. When it is larger than cap, nothing is copied and
 * the call still counts as a hit: call again with a buffer of *len bytes
 * (the entry may have changed meanwhile, so check *len again).
 *
 *   buf  cap bytes; may be NULL when cap is 0.
 *   len  receives the value's length (0 on a miss or failure).
 *
 * Returns 1 (found); 0 (missing); LDS_EINVAL (rt or len NULL, buf NULL
 * with cap > 0, key NULL with a length); LDS_ENOENT (no such cache);
 * LDS_ETOOBIG; LDS_EIO; LDS_ECLOSED. Threads: any, like lds_cache_get.
 */
int lds_cache_read(lds_runtime *rt, lds_id cache, const void *key, size_t key_len, void *buf, size_t cap,
                   size_t *len);

/*
 * Releases the value an lds_cache_value owns and zeroes it. NULL and a
 * zeroed value are accepted; clearing twice is harmless. Any thread.
 */
void lds_cache_value_clear(lds_cache_value *value);

/*
 * Drops the entry under key.
 *
 * Returns 1 (an entry was dropped); 0 (there was none); LDS_EINVAL;
 * LDS_ENOENT (no such cache); LDS_ETOOBIG; LDS_EIO; LDS_ECLOSED.
 */
int lds_cache_remove(lds_runtime *rt, lds_id cache, const void *key, size_t key_len);

/*
 * Drops every entry. The counters of lds_cache_stats are kept.
 *
 * Returns LDS_OK; LDS_EINVAL; LDS_ENOENT; LDS_EIO; LDS_ECLOSED.
 */
int lds_cache_clear(lds_runtime *rt, lds_id cache);

/*
 * The keys listed by lds_cache_keys, owned by the caller: key i is the
 * lengths[i] bytes at keys[i] (a key may be empty). All of it lives in one
 * block the library allocated; release it with lds_cache_key_list_clear.
 */
typedef struct lds_cache_key_list {
  size_t count;                /* how many keys */
  const void *const *keys;     /* count pointers; NULL when count is 0 */
  const size_t *lengths;       /* count lengths; NULL when count is 0 */
  void *block;                 /* the allocation behind keys, lengths and the bytes */
} lds_cache_key_list;

/*
 * Lists the keys of the cache's live entries that begin with prefix
 * (prefix_len bytes; 0 lists every key) into *out, a copy taken under the
 * cache's lock: later puts and removes do not change it. A memory cache
 * lists its keys from the most to the least recently used, a persistent
 * cache in byte order. Entries whose time to live has passed are left out
 * (a later get drops them); listing counts as no hit and no use, so the
 * eviction order does not change. The list is at most as large as the
 * cache's byte bound; on failure *out is zeroed.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL, prefix NULL with a length);
 * LDS_ENOENT (no such cache); LDS_ETOOBIG (prefix over LDS_VALUE_MAX);
 * LDS_EIO; LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_cache_keys(lds_runtime *rt, lds_id cache, const void *prefix, size_t prefix_len,
                   lds_cache_key_list *out);

/*
 * Since 0.4. Counts the cache's live entries that begin with prefix
 * (prefix_len bytes; 0 counts every entry), as many as lds_cache_keys
 * would list, up to limit (0: no limit; 1 tells whether there is one),
 * into *count. Copies no key and allocates nothing for a memory or
 * persistent cache: it walks the entries under the cache's lock (a
 * memory cache of 1,000,000 entries took about 5 ms, where listing its
 * keys took 70). Unlike the entries of lds_cache_stats, it
 * leaves out entries whose time to live has passed and that no get has
 * dropped yet. Counting is no hit and no use. A Redis cache counts the
 * keys it would list (at most LDS_REDIS_KEYS_MAX, else LDS_ETOOBIG). On
 * failure *count is 0.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or count NULL, prefix NULL with a
 * length); LDS_ENOENT (no such cache); LDS_ETOOBIG; LDS_EIO; LDS_ECLOSED;
 * LDS_ESTATE (a Redis cache, on the loop thread).
 */
int lds_cache_count(lds_runtime *rt, lds_id cache, const void *prefix, size_t prefix_len, uint64_t limit,
                    uint64_t *count);

/*
 * Releases what an lds_cache_key_list owns and zeroes it. NULL and a
 * zeroed list are accepted; clearing twice is harmless. Any thread.
 */
void lds_cache_key_list_clear(lds_cache_key_list *list);

/*
 * Copies the cache's counters into *out (zeroed on failure).
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL); LDS_ENOENT; LDS_EIO; LDS_ECLOSED.
 */
int lds_cache_stats(lds_runtime *rt, lds_id cache, lds_cache_statistics *out);

/* ------------------------------------------------------------------ */
/* Invalidation                                                        */
/* ------------------------------------------------------------------ */

/*
 * Marks every entry of the cache whose key begins with prefix (prefix_len
 * bytes; 0 matches every key) stale, then, on the loop, every cell showing
 * the value of such an entry (loaded through this cache, no load running)
 * reloads it silently from its loader: its current state is emitted again
 * flagged LDS_FLAG_STALE | LDS_FLAG_REFRESHING, then replaced when the load
 * ends. Later cache-first loads of those keys load again.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, prefix NULL with a length);
 * LDS_ENOENT (not a cache); LDS_EIO (a persistent cache's write failed); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_cache_invalidate(lds_runtime *rt, lds_id cache, const void *prefix, size_t prefix_len);

/* ------------------------------------------------------------------ */
/* Redis: a cache shared by processes and machines                     */
/* ------------------------------------------------------------------ */

/*
 * Since 0.4. A Redis cache keeps its entries in a Redis server (5.0 or
 * later), so that many processes, on one machine or many, share them. It is
 * driven by the runtime's own loop through hiredis's libuv adapter: no
 * thread of its own, and no call on the loop thread waits for Redis.
 *
 * Its id works wherever a cache id does: load options (policies, fresh
 * time, maximum age), lds_prefetch, the direct calls (lds_cache_get,
 * get_many, put, read, remove, clear, keys, stats, free) and
 * lds_cache_invalidate.
 *
 * Entries carry their stored time, stale flag and what the loader keeps
 * beside the value (the http loader's validators and freshness), so that
 * fresh and stale are decided as for the other caches. Every entry has a
 * time to live in Redis: the cache's ttl_ms, never more than max_ttl_ms.
 * Keys are namespaced by key_prefix. Since 0.5, with P the prefix, K a key
 * and {ttt} a hash tag of three hex digits computed from K (FNV-1a of its
 * bytes, folded to 12 bits: see Sources/Loadstate/Redis/RedisKeys.swift),
 * the entry of K lives under the Redis key P{ttt}v:K, its lease under
 * P{ttt}l:K, the fencing counter of its tag under P{ttt}f, every stored
 * key in the sorted set P{i}keys (score 0: a lexicographic index) and in
 * P{i}expiry (scored by expiry on the server's clock), and messages go to
 * the channel P events. 0.4 stored entries under P v:K: a 0.5 cache does
 * not read them (they expire by their time to live), and 0.4 and 0.5
 * processes do not share results. Redis 5 or later is needed (scripts
 * that read the server's clock and then write).
 *
 * Single flight across processes: a shared load (LDS_LOAD_SHARE) with a
 * Redis cache takes a lease on its key (SET NX PX, lease_ms) before its
 * loader is called. Only the process holding it calls its loader; it then
 * stores the result and publishes it, and releases the lease when the
 * load fails or is cancelled. The loads of other processes wait for that
 * result (they show LDS_LOADING meanwhile), never calling their loader,
 * and take the lease over when it expires without a result (its holder
 * died) or when it is released. Each lease carries a fencing token from a
 * counter in Redis: a holder whose lease expired and was taken by another
 * process does not store its result over the newer one. A waiting load
 * also ends, with the entry, when a result stored since it began appears.
 * While Redis is unreachable, loads call their loaders as if there were
 * no cache.
 *
 * Invalidation: lds_cache_invalidate marks the matching entries stale in
 * Redis and publishes the prefix; every process with a Redis cache of the
 * same server, database and prefix then drops its front memory entries
 * under it and has its cells showing them reload, as for a local
 * invalidation. Since 0.5 the matching keys are read from the key index
 * (ZRANGEBYLEX) in batches of 250, each batch marked in one script (a few
 * ms of Redis's time at most: see bench/README.md), so the cost grows with the keys under the prefix,
 * not with the database, and Redis answers other clients between batches.
 * lds_cache_clear and lds_cache_keys read the index the same way. Each write keeps the index in step: the stored key is added
 * (with its expiry) in the same script, and at most 8 keys whose entries
 * expired over a minute before are dropped from it, so the index holds
 * about the live keys plus those of the last minute's expirations (about
 * 100 bytes per key in Redis). A direct call waits as long as batches keep
 * completing, each within the usual wait.
 *
 * Front memory tier: with memory_max_entries > 0, entries read or written
 * are also kept in memory for at most memory_ttl_ms; an invalidation, a
 * result published by another process and a reconnection drop them.
 *
 * Connection: commands are sent on one connection, messages come on a
 * second one. Both reconnect with exponential back-off (from 50 ms to
 * reconnect_max_ms). A command waits for the first connection of a new
 * cache; after a failure, commands fail at once until the next attempt
 * succeeds. A reply that does not come within command_timeout_ms fails
 * its command and drops the connection (hiredis cannot drop one command).
 * Host names are resolved with uv_getaddrinfo, off the loop thread.
 *
 * Failures: every failure of Redis is LDS_EREDIS from the cache calls,
 * with the reason (LDS_DOMAIN_REDIS, an LDS_REDIS_E* code and a message)
 * in lds_redis_cache_status. It never fails a load that can complete
 * without the cache: the load calls its loader. A load whose policy is
 * LDS_CACHE_ONLY fails with an error in LDS_DOMAIN_REDIS instead of
 * LDS_ENOENT when Redis cannot answer.
 *
 * Threads: the direct cache calls may be made from any thread except the
 * loop thread (a callback of an LDS_DELIVER_LOOP runtime): they wait for
 * the loop, at most about twice command_timeout_ms, and return LDS_ESTATE
 * on the loop thread. lds_cache_stats answers from the process's own
 * counters without waiting: its entries and bytes are those of the front
 * memory tier.
 *
 * Direct calls on a Redis cache, beyond what each call's own comment
 * lists: every one may return LDS_EREDIS (Redis failed; see above) and,
 * on the loop thread, LDS_ESTATE. lds_cache_put of a value over
 * max_value_bytes returns LDS_EREDIS with LDS_REDIS_ETOOBIG as reason and
 * stores nothing. lds_cache_keys lists in byte order (the key index's). lds_cache_value.expires_at_ms is the expiry set at the put.
 * lds_cache_invalidate while Redis cannot answer returns LDS_EREDIS and
 * reloads no cell. lds_cache_free closes the connections; the entries stay
 * in Redis until their time to live ends.
 *
 * Order: a load's result is written to Redis without waiting, after the
 * cells showed it (memory and persistent caches store it before): a
 * cache-first load in another process right after that event may still
 * miss it. The counters of lds_redis_cache_status move when Redis answers,
 * which may be after another process already has the result.
 *
 * Redis Cluster (since 0.5): a cache made with a redis+cluster:// URL keeps
 * the same entries, leases and messages on a cluster, through the same
 * calls. Its commands are routed by the library (Debian 12 packages no
 * cluster-aware hiredis): the map of the 16,384 slots to their masters is
 * read with CLUSTER SLOTS from a node (the seeds first), each master gets
 * one connection, each command goes to the master of its key's slot; a
 * MOVED reply sends it where the reply says (and the map is read again), an
 * ASK reply sends it there once after ASKING, at most 5 redirections per
 * command. The entry, lease and fencing counter of a key share its hash
 * tag, so one slot; the key index lives in the slot of the tag {i} and is
 * written by its own script, before the entry (a cluster refuses a script
 * over keys of several slots). Reads of many keys (lds_cache_get_many) go
 * in one pipelined group per master (a redirected key again alone, through
 * the routing); invalidation marks each key by a
 * script on its master, the index read in batches as on one server; the
 * index is not shrunk by removals on a cluster (removed keys leave it when
 * their entries would have expired). Messages: PUBLISH reaches every node
 * of a cluster, so one subscribed connection to one node hears them all;
 * when that node fails, the subscription moves to another after the
 * back-off. Failover: a lost connection to a master fails the commands
 * sent on it (loads go on through their loaders; a direct call returns
 * LDS_EREDIS) and has the map read again, then every 500 ms while a
 * master's connection is down, so the replica that takes over is used
 * within about half a second of the cluster's own failover (measured:
 * writes reached the new master 2.3 s after a SIGKILL, with a 1,000 ms
 * cluster-node-timeout). A load waiting on the cluster ends within
 * command_timeout_ms of the failure (at once for a killed master: its
 * connection closes). connected in lds_redis_cache_status is 1 while the
 * map is known and every master's connection is up.
 *
 * Closing: lds_runtime_free (and lds_cache_free) lets the commands already
 * sent, a result published or a lease released by the last jobs, reach
 * Redis, within the command timeout (and lds_runtime_free's one-second
 * wait); what does not answer by then is dropped.
 *
 * Timeouts: command_timeout_ms runs from when a command is handed to
 * hiredis to its reply, so it includes the time the loop thread spends on
 * a burst of other replies; a host that sends thousands of commands at
 * once on a slow machine should give it room.
 *
 * Trust: the Redis server is trusted like the cache file of a persistent
 * cache for what it stores, not for its memory. A value that does not
 * decode as an entry is a miss. A reply that answers no command, a message
 * on the subscribed connection of another shape than Redis sends, and an
 * array of more than 1,000,000 elements drop their connection
 * (LDS_REDIS_EREPLY). Since 0.5, on both connections (commands and the
 * subscription), whatever the server declares: one reply holds at most
 * max_value_bytes + LDS_REDIS_REPLY_SLACK bytes, counted while it arrives
 * (the bytes buffered for it) and as it is parsed (each element's bytes
 * and 48 bytes for the element itself); a reply still incomplete
 * command_timeout_ms after its first bytes arrived is one too many. Either
 * drops the connection (LDS_REDIS_EPROTO in the status; loads go on
 * through their loaders) and it reconnects with the back-off, so a
 * hostile server costs the host about that bound per connection.
 */

/* Codes of LDS_DOMAIN_REDIS errors. */
#define LDS_REDIS_ECONNECT   1  /* the connection could not be made or was lost */
#define LDS_REDIS_ETIMEDOUT  2  /* no reply (or connection) within command_timeout_ms / connect_timeout_ms */
#define LDS_REDIS_EAUTH      3  /* AUTH or SELECT was refused */
#define LDS_REDIS_EREPLY     4  /* Redis answered with an error, or with a reply of another shape */
#define LDS_REDIS_ETOOBIG    5  /* the value is larger than max_value_bytes: not stored */
#define LDS_REDIS_EDOWN      6  /* not connected: the cache waits to try again (back-off) */
#define LDS_REDIS_ECLOSED    7  /* the cache was freed while the command waited */
#define LDS_REDIS_EQUEUE     8  /* more than LDS_REDIS_PENDING_MAX commands wait */
#define LDS_REDIS_EREFUSED  10  /* since 0.5: the server refused the connection (nothing listens there) */
#define LDS_REDIS_EUNREACHABLE 11 /* since 0.5: the host could not be reached: its name does not
                                   resolve, no route leads to it, no such unix socket */
#define LDS_REDIS_EPROTO     9  /* since 0.5: the server broke a bound: a reply over
                                   max_value_bytes + LDS_REDIS_REPLY_SLACK bytes, or one still
                                   incomplete command_timeout_ms after it began to arrive */

/* The most commands that wait for a connection or a reply, per cache. */
#define LDS_REDIS_PENDING_MAX 65536
/* Since 0.5: what one reply may hold beyond max_value_bytes (an entry's
 * header, the protocol's framing, key lists): 1 MiB. */
#define LDS_REDIS_REPLY_SLACK (1024u * 1024u)
/* The most keys lds_cache_keys lists from a Redis cache. */
#define LDS_REDIS_KEYS_MAX 1000000

/* Options for lds_redis_cache_new. Initialize with LDS_REDIS_CACHE_OPTIONS_INIT. */
typedef struct lds_redis_cache_options {
  uint32_t size;                 /* sizeof(lds_redis_cache_options), set by the INIT macro */
  uint32_t flags;                /* 0 (reserved) */
  const char *key_prefix;        /* namespace of every key (copied); NULL: "lds:" */
  uint64_t ttl_ms;               /* time to live of entries in Redis; 0: max_ttl_ms */
  uint64_t max_ttl_ms;           /* bound on every entry's time to live; 0: one day (86,400,000) */
  uint64_t max_value_bytes;      /* a larger value is not stored; 0: 8 MiB; at most LDS_VALUE_MAX */
  uint32_t command_timeout_ms;   /* a reply's longest wait; 0: 2,000 */
  uint32_t connect_timeout_ms;   /* a connection's longest wait; 0: 2,000 */
  uint32_t lease_ms;             /* a single-flight lease's life; 0: 10,000 */
  uint32_t reconnect_max_ms;     /* the back-off's ceiling; 0: 5,000 */
  uint64_t memory_max_entries;   /* entries of the front memory tier; 0: no front tier */
  uint64_t memory_max_bytes;     /* bytes of the front memory tier; 0: 64 MiB */
  uint64_t memory_ttl_ms;        /* how long a front entry is used; 0: 60,000 */
} lds_redis_cache_options;

#define LDS_REDIS_CACHE_OPTIONS_INIT { (uint32_t)sizeof(lds_redis_cache_options), 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/*
 * Creates a Redis cache and starts connecting; returns without waiting for
 * the connection (a server that is down is not an error here).
 *
 *   url   redis://[[user]:password@]host[:port][/db]  (port 6379, db 0)
 *         unix://[[user]:password@]/path/to/redis.sock[?db=N]
 *         host: a name (resolved without blocking), an IPv4 address, or
 *         an IPv6 address between brackets ([::1]; nothing else between
 *         brackets, no zone). Percent-escapes are decoded in the password
 *         and path. rediss://
 *         (TLS, in any case) is refused with LDS_ENOTSUP: Debian 12's
 *         hiredis 0.14 has no TLS (reach a TLS-only Redis through a local
 *         TLS tunnel, such as stunnel or socat, and a redis:// URL to it).
 *         Since 0.5: redis+cluster://[[user]:password@]host[:port][,host[:port]...][/0]
 *         a Redis Cluster, from its seed nodes (at most 64; database 0
 *         only, a cluster has no other; see "Redis Cluster" above).
 *   opts  may be NULL for defaults; otherwise opts->size must be at least
 *         sizeof(lds_redis_cache_options).
 *   out   receives the cache's id; unchanged on failure.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, url or out NULL, a URL that does not
 * parse, a bad size, an unknown flag, max_value_bytes over LDS_VALUE_MAX);
 * LDS_ENOTSUP (rediss://); LDS_ENOMEM; LDS_ECLOSED.
 */
int lds_redis_cache_new(lds_runtime *rt, const char *url, const lds_redis_cache_options *opts, lds_id *out);

/* What lds_redis_cache_status reports. Initialize size with sizeof. */
typedef struct lds_redis_status {
  uint32_t size;              /* set by the caller: sizeof(lds_redis_status) */
  uint32_t connected;         /* 1 while the command connection is up: since 0.5, from the
                                 server's answer to the PING (after AUTH and SELECT) that
                                 follows each connect, not from the TCP connection alone */
  uint32_t subscribed;        /* 1 while the message connection listens */
  int32_t last_error_code;    /* LDS_REDIS_E* of the last failure; 0: none yet */
  uint64_t connects;          /* connections made (first and reconnections, both connections) */
  uint64_t errors;            /* commands that failed */
  uint64_t leases_taken;      /* shared loads that took a lease and called their loader */
  uint64_t leases_waited;     /* shared loads that waited for another process's result */
  uint64_t results_received;  /* waits that ended with another process's result */
  uint64_t takeovers;         /* waits that ended by taking an expired or released lease */
  uint64_t published;         /* results stored and published under a lease */
  uint64_t fenced;            /* results not stored: the lease had passed to a newer holder */
  uint64_t invalidations;     /* invalidation messages received from other processes */
  char last_error[256];       /* the last failure's message, NUL-terminated; "" when none */
} lds_redis_status;

/*
 * Copies the cache's connection state and counters into *out, without
 * waiting for the loop. Any thread.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL, out->size smaller than
 * sizeof(lds_redis_status)); LDS_ENOENT (not a Redis cache); LDS_ECLOSED.
 */
int lds_redis_cache_status(lds_runtime *rt, lds_id cache, lds_redis_status *out);

/* ------------------------------------------------------------------ */
/* Metrics                                                             */
/* ------------------------------------------------------------------ */

/*
 * Since 0.4. Every runtime counts its loads, jobs and events, per loader
 * and for the whole runtime, unless it was made with
 * LDS_RUNTIME_NO_METRICS (then every counter stays 0 and a load reads no
 * clock for them). The loop thread is the only writer of the counters: no
 * lock, no atomic read-modify-write on the path of a load. Readers copy
 * them from any thread; each counter is read whole, but counters that
 * change during the copy may be seen before or after the change.
 *
 * A load is one lds_loadable_load, lds_process_run, refresh or
 * invalidation reload, those a cache answered alone included. Every load
 * that started ends exactly once, as succeeded, failed, cancelled, timed
 * out or from the cache, so
 *   started = succeeded + failed + cancelled + timed_out + from_cache
 *             + loads running.
 * A load "from the cache" is one its cache answered without a job: a
 * cache-first hit, or any cache-only read (a miss too, which ends in its
 * error; lds_cache_statistics tells hits from misses). It starts and ends
 * at once and is not timed (latency_count leaves it out). A cache-first
 * miss or stale entry, and a cache-then-load read, start a job: such a
 * load ends like any other. from_cache is not a field of lds_load_metrics
 * (whose size is fixed): lds_runtime_statistics reports it in
 * loads_from_cache and loaders_from_cache. Before this version a load the
 * cache answered alone was not counted in started.
 * Retries are attempts of the same load; they start no new load.
 */

/* Latency buckets: bucket i (0 <= i < 31) counts the loads that took less
 * than 2^i microseconds (and at least 2^(i-1) for i > 0); the last one
 * counts the rest (33.5 s and more). */
#define LDS_LATENCY_BUCKETS 32

/* The load counters of a loader, or of the whole runtime. */
typedef struct lds_load_metrics {
  uint64_t started;         /* loads that started (see above) */
  uint64_t succeeded;       /* ended LOADED / FINISHED (a finish without value included) */
  uint64_t failed;          /* ended in an error other than a timeout (after their retries) */
  uint64_t cancelled;       /* ended by a cancel, reset, set_*, newer load, free, or the job's own cancel or reset */
  uint64_t timed_out;       /* ended by their timeout (or a job failing with LDS_ETIMEDOUT) */
  uint64_t retried;         /* retries: attempts after the first */
  uint64_t shared;          /* loads that joined another load's running job (LDS_LOAD_SHARE) */
  uint64_t jobs_started;    /* jobs the loader made (a runtime: its loaders alive), those its
                             * limits queue included */
  uint64_t jobs_in_flight;  /* jobs made and not yet ended, queued ones included (likewise) */
  /* Latency of the loads that ended, from the load's start (on the loop
   * thread) to its end, every attempt and back-off included. */
  uint64_t latency_count;   /* loads measured: succeeded + failed + cancelled + timed_out */
  uint64_t latency_sum_us;
  uint64_t latency_max_us;
  /* Quantiles estimated from the buckets (interpolated within the bucket
   * that holds them, at most latency_max_us); 0 without loads. */
  uint64_t latency_p50_us;
  uint64_t latency_p90_us;
  uint64_t latency_p99_us;
  uint64_t latency_buckets[LDS_LATENCY_BUCKETS];
  /* Loader limits (see "Scheduling"): the jobs the loader's queue held, and
   * how long they waited there, from queued to admitted (jobs cancelled
   * in the queue are not measured), in the same buckets and quantiles. */
  uint64_t jobs_queued;
  uint64_t queue_wait_count;
  uint64_t queue_wait_sum_us;
  uint64_t queue_wait_max_us;
  uint64_t queue_wait_p50_us;
  uint64_t queue_wait_p90_us;
  uint64_t queue_wait_p99_us;
  uint64_t queue_wait_buckets[LDS_LATENCY_BUCKETS];
} lds_load_metrics;

/* One loader alive and its counters. */
typedef struct lds_loader_metrics {
  lds_id loader;
  lds_load_metrics loads;
} lds_loader_metrics;

/* One cache open and its counters (what lds_cache_stats reports). */
typedef struct lds_cache_metrics {
  lds_id cache;
  uint32_t persistent;      /* 1: a persistent cache; 0: a memory cache; 2: a Redis cache (since 0.4) */
  uint32_t reserved;        /* 0 */
  lds_cache_statistics stats;
} lds_cache_metrics;

/*
 * What lds_runtime_stats fills. Initialize with
 * LDS_RUNTIME_STATISTICS_INIT, then point loaders and caches at arrays the
 * caller owns (or leave them NULL with a capacity of 0 for the totals only).
 */
typedef struct lds_runtime_statistics {
  uint32_t size;              /* in: sizeof(lds_runtime_statistics), set by the INIT macro */
  uint32_t enabled;           /* out: 1 when the runtime counts (no LDS_RUNTIME_NO_METRICS) */
  uint64_t cells_alive;       /* out: cells made and not freed */
  uint64_t events_delivered;  /* out: cell events handed to their callbacks (or queued for
                               *      lds_runtime_dispatch in LDS_DELIVER_POLL mode) */
  lds_load_metrics loads;     /* out: every loader's loads (freed loaders' too) */
  lds_loader_metrics *loaders;  /* in: loaders_cap entries, or NULL */
  uint32_t loaders_cap;         /* in */
  uint32_t loader_count;        /* out: loaders alive; min(loader_count, loaders_cap) written, by id */
  lds_cache_metrics *caches;    /* in: caches_cap entries, or NULL */
  uint32_t caches_cap;          /* in */
  uint32_t cache_count;         /* out: caches open; min(cache_count, caches_cap) written, by id */
  /* Second version: read and written only when size holds them. */
  uint64_t loads_from_cache;    /* out: loads a cache answered alone (counted in loads.started; see above) */
  uint64_t *loaders_from_cache; /* in: loaders_cap entries, or NULL; out: entry i is the from_cache count
                                 *      of loaders[i] (written for the entries written in loaders) */
  /* Third version (since 0.5): the host signals ("Host signals"), written only when size holds them. */
  uint32_t online;              /* out: 1 while the runtime is online (lds_runtime_set_online) */
  uint32_t foreground;          /* out: 1 while the runtime is in the foreground (lds_runtime_set_foreground) */
  uint64_t loads_paused;        /* out: loads and retries waiting for the runtime to be online now */
  uint64_t loads_paused_total;  /* out: loads and retries that waited so, since the runtime began */
} lds_runtime_statistics;

#define LDS_RUNTIME_STATISTICS_INIT { (uint32_t)sizeof(lds_runtime_statistics), 0, 0, 0, { 0 }, NULL, 0, 0, NULL, 0, 0, \
                                      0, NULL, 0, 0, 0, 0 }

/*
 * Copies the runtime's counters into *out. The loaders and caches that do
 * not fit in the caller's arrays are left out (compare loader_count with
 * loaders_cap, and call again with larger arrays to see them all: more
 * may exist by then). Holds the runtime's handle table lock while it lists
 * loaders and caches (as long as a lookup per object alive), and reads
 * each persistent cache's counters from its file's lock afterwards.
 *
 *   out  out->size at least the size of the first version of the struct
 *        (up to cache_count; later versions add fields at the end; the
 *        library reads and writes no more than out->size bytes). The
 *        library reads loaders, loaders_cap, caches, caches_cap and
 *        loaders_from_cache, and writes the rest.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL, bad size, loaders or caches
 * NULL with a capacity); LDS_ECLOSED. Threads: any, callbacks included.
 */
int lds_runtime_stats(lds_runtime *rt, lds_runtime_statistics *out);

/*
 * Since 0.4. Writes what lds_runtime_stats reports in the Prometheus text
 * exposition format (version 0.0.4: serve it with the content type
 * "text/plain; version=0.0.4"), NUL-terminated, into buf.
 *
 * Families (every load series has a label loader="<name>" per loader
 * alive, its id where it has no name (since 0.5; before, always the id),
 * and loader="freed" for the loads of loaders freed since, so that a sum
 * over loader is the runtime's total; loaders that share a label value, two
 * of the same name, or a name that is another loader's id or "freed",
 * share its series: their counters and histograms added, the longest of
 * their loads as the maximum):
 *   loadstate_loads_started_total                counter
 *   loadstate_loads_ended_total{outcome=...}     counter: succeeded, failed, cancelled, timed_out,
 *                                                from_cache (a cache answered alone)
 *   loadstate_load_retries_total                 counter
 *   loadstate_loads_shared_total                 counter
 *   loadstate_jobs_started_total                 counter
 *   loadstate_jobs_in_flight                     gauge
 *   loadstate_jobs_queued_total                  counter (loader limits)
 *   loadstate_job_queue_wait_seconds             histogram, as the load duration's
 *   loadstate_load_duration_seconds              histogram (le: 2^i microseconds, +Inf)
 *   loadstate_load_duration_max_seconds          gauge: the longest load (since 0.5, in place of
 *                                                the quantile gauge, which promtool refuses:
 *                                                quantiles come from the histogram, e.g.
 *                                                histogram_quantile(0.99, ...))
 *   loadstate_cells_alive, loadstate_metrics_enabled   gauges
 *   loadstate_events_delivered_total             counter
 *   loadstate_cache_{hits,misses,evictions,expirations}_total, loadstate_cache_{entries,bytes}
 *                                                by cache="<id>", kind="memory", "persistent" or "redis"
 * Label values are ids, fixed words and names; a name is written escaped
 * as the format asks (backslash, double quote and line feed as \\, \" and
 * \n; names hold no line feed, see "Names").
 * The text passes `promtool check metrics` (Prometheus 2.42, a test).
 * Its size grows with the number of loaders (about 4 KiB each) and caches.
 *
 *   buf  cap bytes; may be NULL when cap is 0 (to learn the size).
 *   len  receives the text's length in bytes, without the NUL.
 *
 * Returns LDS_OK (the text and its NUL fit: *len < cap); LDS_ETOOBIG (they
 * do not: nothing is written but an empty string when cap > 0; call again
 * with at least *len + 1 bytes, more if loaders may appear meanwhile);
 * LDS_EINVAL (rt or len NULL, buf NULL with cap > 0); LDS_ECLOSED.
 * Threads: any, callbacks included.
 */
int lds_runtime_metrics_text(lds_runtime *rt, char *buf, size_t cap, size_t *len);

/* ------------------------------------------------------------------ */
/* Runtime observer                                                    */
/* ------------------------------------------------------------------ */

/* lds_observation.what */
#define LDS_OBSERVE_EVENT      1  /* a cell event (after the cell's own callback got it) */
#define LDS_OBSERVE_JOB_START  2  /* a job starts: just before its loader's start function (a job
                                   * a loader's limits queue: when it is admitted) */
#define LDS_OBSERVE_JOB_END    3  /* a job ended */

/* lds_observation.outcome, for LDS_OBSERVE_JOB_END */
#define LDS_JOB_SUCCEEDED  0  /* succeeded or finished */
#define LDS_JOB_FAILED     1  /* failed: error_domain and error_code say why (a retry is a new job) */
#define LDS_JOB_CANCELLED  2  /* cancelled: its last cell left it (cancel, reset, newer load, timeout,
                               * free), it cancelled or reset itself, or the runtime was freed */

/*
 * Since 0.4. One thing a runtime observer is told. Every pointer is valid
 * during the call only; copy what is kept.
 */
typedef struct lds_observation {
  uint32_t size;            /* sizeof(lds_observation): later versions add fields at the end */
  uint32_t what;            /* LDS_OBSERVE_* */
  const lds_event *event;   /* EVENT: the event, as the cell's callback gets it; NULL otherwise */
  lds_id job;               /* JOB_*: the job */
  lds_id loader;            /* JOB_*: its loader */
  lds_id cell;              /* JOB_START: the first cell waiting for it (others that share it
                             * are not named); 0 otherwise */
  uint32_t attempt;         /* JOB_*: 1 for the first try, 2 for the first retry, ... */
  uint32_t outcome;         /* JOB_END: LDS_JOB_* */
  int32_t error_domain;     /* JOB_END with LDS_JOB_FAILED: LDS_DOMAIN_*; 0 otherwise */
  int32_t error_code;       /* likewise */
  uint64_t time_ns;         /* when it happened: CLOCK_MONOTONIC, nanoseconds */
  uint64_t duration_ns;     /* JOB_END: since the job started */
  const void *request;      /* JOB_*: the job's request; NULL otherwise */
  size_t request_len;
} lds_observation;

/* A runtime observer: see lds_runtime_observe. */
typedef void (*lds_observe_fn)(const lds_observation *observation, void *user_data);

/*
 * Since 0.4. Sets the runtime's observer, which receives every cell event,
 * job start and job end of the runtime, for logging and tracing. NULL
 * removes it. One observer per runtime: a new one replaces the last.
 *
 * Order and threads: the observer follows the runtime's delivery mode,
 * like the cells' callbacks. LDS_DELIVER_LOOP: it runs on the loop thread,
 * at once, and must not block (nor call lds_runtime_free). LDS_DELIVER_POLL:
 * each call is queued and runs on the thread that calls
 * lds_runtime_dispatch (or lds_runtime_dispatch_records, where it runs as a
 * callback, not as a record), in the order of the runtime's own steps: a
 * load's first event (LOADING), then its job's start; the job's end, then
 * the event it causes (LOADED, ERROR...); each event after the cell's own
 * callback got it. The setting takes effect on the loop after the calls
 * this thread made before it (a load made after it is observed from its
 * first event). A job that started before its observer was set is not
 * reported when it ends. Since 0.5, a pages cell is observed as one cell
 * (see "Infinite loads").
 *
 *   free_data  may be NULL; called once with user_data after the
 *              observer's last call: when it is replaced or removed, or
 *              when the runtime is freed. It runs like a loader's
 *              free_data: LOOP mode on the loop thread; POLL mode as a
 *              dispatched callback after the observer's queued calls, or
 *              on the thread calling lds_runtime_free.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, or fn NULL with free_data or
 * user_data); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED. Threads: any.
 */
int lds_runtime_observe(lds_runtime *rt, lds_observe_fn fn, void *user_data, lds_free_fn free_data);

/* ------------------------------------------------------------------ */
/* Inspector                                                           */
/* ------------------------------------------------------------------ */

/* lds_inspector_options.flags */
#define LDS_INSPECTOR_SHOW_VALUES   (1u << 0)  /* show cells' values (otherwise "(hidden)") */
#define LDS_INSPECTOR_ACTIONS       (1u << 1)  /* accept the page's cancel, refresh and invalidate */
#define LDS_INSPECTOR_ALLOW_REMOTE  (1u << 2)  /* allow an address other than 127.x.x.x */

/* Options for lds_inspector_start. Initialize with LDS_INSPECTOR_OPTIONS_INIT. */
typedef struct lds_inspector_options {
  uint32_t size;             /* sizeof(lds_inspector_options), set by the INIT macro */
  uint32_t flags;            /* LDS_INSPECTOR_* */
  uint32_t max_clients;      /* live pages (event streams) at once, more are answered 503 (before
                                0.5: connections); 0: 8, at most 256 */
  uint32_t interval_ms;      /* live page updates; 0: 500, at least 50, at most 60000 */
  uint32_t idle_timeout_ms;  /* the head timeout: a connection without a complete request head
                                this long after it was accepted is answered 408 and closed;
                                0: 3000 (before 0.5: 10000, and closed without an answer) */
  uint32_t max_cells;        /* cells listed, newest first; 0: 200, at most 10000 */
} lds_inspector_options;

#define LDS_INSPECTOR_OPTIONS_INIT { (uint32_t)sizeof(lds_inspector_options), 0, 0, 0, 0, 0 }

/* Since 0.5: the most inspector connections still waiting for their
 * request head; a new one over it closes the oldest of them. */
#define LDS_INSPECTOR_WAITING_MAX 64

/*
 * Since 0.4. Starts the runtime's inspector: a small HTTP/1.1 server on the
 * runtime's own loop (no other thread) serving one self-contained page that
 * shows the runtime live, updated by server-sent events: the cells (state,
 * flags, attempt, request preview; values only with
 * LDS_INSPECTOR_SHOW_VALUES; QUEUED among the flags, and since 0.5 PAUSED,
 * PREVIOUS, PLACEHOLDER, OPTIMISTIC and ROLLED_BACK, in the cells' timelines
 * too), the jobs in flight
 * with their age, the loaders with their metrics (lds_runtime_stats) and
 * the jobs waiting in the queue of their limits now (each loader's first
 * 100 in the order they would start, with their priority, their age since
 * they were queued and their request preview, and how many wait in all),
 * and the caches with their entries and hit rates. Opt-in and off by
 * default; for development.
 *
 *   address  "127.0.0.1:PORT" (or "localhost:PORT"); PORT 0 picks a free
 *            port. Other IPv4 addresses need LDS_INSPECTOR_ALLOW_REMOTE.
 *   opts     may be NULL for defaults.
 *
 * Every request must carry the inspector's token, 128 random bits, in its
 * URL (?token=..., compared in constant time) and a Host header naming the
 * bound address ("127.0.0.1:PORT" or "localhost:PORT"), against DNS
 * rebinding: others get 403 and 421. lds_inspector_url gives the page's
 * URL with the token, for the host to print. Responses forbid caching,
 * framing, referrers and any script or connection other than the page's
 * own. Requests are bounded: a head of at most 8 KiB and 64 header lines,
 * no body, GET and POST only; one request per connection (but the event
 * stream); max_clients live pages; a live page that reads slower than it
 * is sent to (4 MiB behind) is disconnected. Nothing waits on the loop:
 * writes are queued.
 * Against clients that hold connections (since 0.5): a connection must
 * send its complete request head within idle_timeout_ms of being accepted
 * (3 s by default), else it is answered 408 and closed; a head that
 * cannot become valid (a byte that is not printable ASCII, tab, CR or LF,
 * a line feed without its carriage return, a request line that is not
 * "METHOD /target HTTP/1.x", such as HTTP/0.9's) is answered 400 at once,
 * as is half a head followed by the end of the client's sending. Until
 * their head is complete (so before they could show the token),
 * connections have a budget of their own, LDS_INSPECTOR_WAITING_MAX: a new
 * connection over it closes the oldest one still waiting, so that clients
 * trickling bytes (a slowloris) cannot keep out a client that sends its
 * request at once, and cannot take the live pages' places.
 * Each update walks the handle table under its lock once.
 *
 * Routes (each with ?token=): GET / (the page), GET /events (the event
 * stream: an "event: snapshot" with a JSON "data:" line every
 * interval_ms), GET /snapshot (one JSON snapshot), GET /metrics
 * (lds_runtime_metrics_text), POST /action?do=cancel|refresh&cell=ID and
 * POST /action?do=invalidate&cache=ID&prefix=P (403 without
 * LDS_INSPECTOR_ACTIONS).
 * Since 0.5, in the JSON snapshot, each cell and loader object has a
 * "name" member when it was given a name (see "Names"), and each cell a
 * "key" member when its last load used a cache: that load's cache key, as
 * text when it is UTF-8 without control characters, else with its other
 * bytes written \xHH; cut after 256 characters (then an ellipsis). Both are escaped as
 * JSON, '<', '>' and '&' included; the page shows them as text.
 * Since 0.5 too, for the page's timelines and plots: each cell has
 * "events", its last state events since the inspector started (at most 16,
 * oldest first; kept per cell only while an inspector runs, dropped when it stops), each a
 * compact array [status, duration_ms, flag...] (the state's word, how long
 * it lasted: until the next event, or until now for the last; then the
 * names of its flags), and "events_from_ms", the wall-clock time of the
 * first; each loader has "series":
 * {"every_ms": 5000, "points": [...]}, one point per 5 s over the last 5
 * minutes (60 kept, for at most 256 loaders), then one for the loads since
 * the last point, each with "at_ms", "loads" (ended in that interval),
 * "p50_us", "p90_us" and "max_us" (their latency: the quantiles of the
 * difference of the loader's histograms, the maximum as its bucket's upper
 * bound) and "queued" (the jobs waiting in its queue then). The page draws
 * each cell's events as a timeline, each loader's series as a plot, and
 * filters both by name, cache key, id or request (a substring, in any
 * case).
 * Since 0.5 too, the snapshot has "pages_cells": each pages cell (newest
 * first, at most as many as cells), {"id", "name" (when named), "pages"
 * (its page count, as lds_pages_count), "has_next", "has_previous" (as
 * lds_pages_has_more)}; the page does not show them. The flag names of
 * cells and timelines are "queued", "paused", "refreshing", "partial",
 * "cancelled", "from cache", "stale", "previous", "placeholder",
 * "optimistic" and "rolled back".
 *
 * The call waits for the loop thread to bind the address (or binds it at
 * once on the loop thread). lds_runtime_free stops the inspector.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or address NULL, a malformed address, a
 * non-loopback one without LDS_INSPECTOR_ALLOW_REMOTE, bad options);
 * LDS_ESTATE (an inspector already serves); LDS_EIO (the address cannot be
 * bound: in use, or not local); LDS_ECLOSED. Threads: any.
 */
int lds_inspector_start(lds_runtime *rt, const char *address, const lds_inspector_options *opts);

/*
 * Since 0.4. Writes the inspector's URL, token included
 * ("http://127.0.0.1:PORT/?token=..."), NUL-terminated, into buf, as
 * lds_runtime_metrics_text writes its text: *len receives its length;
 * LDS_ETOOBIG when buf cannot hold it and its NUL (64 bytes always can).
 *
 * Returns LDS_OK; LDS_ETOOBIG; LDS_ENOENT (no inspector serves);
 * LDS_EINVAL (rt or len NULL, buf NULL with cap > 0); LDS_ECLOSED.
 * Threads: any (waits for the loop thread, as lds_inspector_start).
 */
int lds_inspector_url(lds_runtime *rt, char *buf, size_t cap, size_t *len);

/*
 * Since 0.4. Stops the inspector: its listening socket and every
 * connection close (live pages see the stream end).
 *
 * Returns LDS_OK; LDS_ENOENT (no inspector serves); LDS_EINVAL;
 * LDS_ECLOSED. Threads: any (waits for the loop thread, as
 * lds_inspector_start).
 */
int lds_inspector_stop(lds_runtime *rt);

/* ------------------------------------------------------------------ */
/* Process cells                                                       */
/* ------------------------------------------------------------------ */

/*
 * A process cell runs jobs whose values are ignored:
 *   idle -> running(kind) -> finished(kind) | failed(kind, error)
 * kind is any host integer naming what runs (0 for a single-purpose
 * process); it is reported in lds_event.kind. The functions mirror the
 * loadable ones, with the same return codes.
 */
int lds_process_new(lds_runtime *rt, lds_event_fn on_event, void *user_data, lds_id *out);

/* Since 0.5. Creates a process cell from options, as lds_loadable_new_ex. */
int lds_process_new_ex(lds_runtime *rt, const lds_cell_options *opts, lds_id *out);
int lds_process_free(lds_runtime *rt, lds_id cell);

/*
 * Runs a job of the loader as process `kind`: cancels the cell's running
 * job, emits LDS_RUNNING(kind) (or, with LDS_LOAD_SILENT, the current state
 * flagged LDS_FLAG_REFRESHING), then LDS_FINISHED(kind) or LDS_FAILED(kind).
 * A run has no value to cache: options with a cache give LDS_EINVAL.
 */
int lds_process_run(lds_runtime *rt, lds_id cell, int32_t kind, lds_id loader,
                    const void *request, size_t request_len,
                    const lds_load_options *opts);

/* Cancels the running job; the cell returns to its previous state, flagged LDS_FLAG_CANCELLED. */
int lds_process_cancel(lds_runtime *rt, lds_id cell);

/* Cancels the running job and makes the cell idle. */
int lds_process_reset(lds_runtime *rt, lds_id cell);

/* Turns the cell's PROGRESS events on or off, as lds_loadable_set_progress. */
int lds_process_set_progress(lds_runtime *rt, lds_id cell, int enabled);

/* ------------------------------------------------------------------ */
/* Writes (since 0.5)                                                  */
/* ------------------------------------------------------------------ */

/*
 * A write is a process run that shows its result before it has one: each
 * optimistic value is shown under its cache key at once, kept while the
 * run goes on, and taken back if the run fails. Once it succeeded, the
 * listed prefixes are invalidated, so that the cells that show them reload.
 *
 * What a key shows: the base (what it held before the first pending
 * write), then each pending write's value over it in the order the writes
 * began. A write that fails while its value is shown gives the key back to
 * the newest other pending write (its value, still LDS_FLAG_OPTIMISTIC),
 * else to the value a write confirmed meanwhile, else to the base: so two
 * overlapping writes that both fail, in either order, leave the base and
 * never an optimistic value. Newer data ends the claim of every pending
 * write on a key, and no rollback touches it afterwards: a load's result
 * stored under the key, an lds_cache_put of it (a memory cache tells it
 * from the entry the write stored; another cache from the call), a later
 * write's confirmed value. An invalidation is not newer data.
 */

/* One optimistic value: `value` under `key` of the cache `cache`. */
typedef struct lds_cache_update {
  lds_id cache;          /* a memory, persistent or Redis cache */
  const void *key;       /* at most LDS_VALUE_MAX bytes */
  size_t key_len;
  const void *value;     /* at most LDS_VALUE_MAX bytes */
  size_t value_len;
} lds_cache_update;

/* One prefix to invalidate once the write succeeded. */
typedef struct lds_cache_prefix {
  lds_id cache;
  const void *prefix;    /* at most LDS_VALUE_MAX bytes */
  size_t prefix_len;
} lds_cache_prefix;

/* The most optimistic values, and the most prefixes, of one write. */
#define LDS_MUTATION_KEYS_MAX 64

/* Write flags (lds_mutation_options.flags). */
#define LDS_MUTATE_POPULATE (1u << 0)  /* the job's value becomes the confirmed value of every key */

/* What a write shows and does. Initialize with LDS_MUTATION_OPTIONS_INIT. */
typedef struct lds_mutation_options {
  uint32_t size;                       /* sizeof(lds_mutation_options) */
  uint32_t flags;                      /* LDS_MUTATE_* */
  const lds_cache_update *optimistic;  /* NULL only with optimistic_count 0 */
  size_t optimistic_count;             /* at most LDS_MUTATION_KEYS_MAX */
  const lds_cache_prefix *invalidate;  /* NULL only with invalidate_count 0 */
  size_t invalidate_count;             /* at most LDS_MUTATION_KEYS_MAX */
} lds_mutation_options;

#define LDS_MUTATION_OPTIONS_INIT { (uint32_t)sizeof(lds_mutation_options), 0, NULL, 0, NULL, 0 }

/*
 * Since 0.5. Runs a job of the loader as process `kind`, as lds_process_run
 * does (the cell's states, retries, timeout, the cancel of the cell's
 * earlier run, which ends that run's write as a failure), as a write:
 *
 * Before the loader is called, each optimistic value is shown. A memory
 * cache stores it as an entry (lds_cache_get returns it); a persistent or
 * Redis cache is not written (it takes only confirmed values). Every live
 * loadable cell whose last load used that cache and key shows it:
 * LDS_LOADED, the value, the request it showed, flagged
 * LDS_FLAG_OPTIMISTIC (and LDS_FLAG_REFRESHING while its own load runs: that
 * load keeps its job, and its result, newer data, replaces the value).
 *
 * Failure (after the retries), timeout, lds_process_cancel,
 * lds_process_reset, a new run of the cell or lds_process_free: each key
 * is rolled back unless newer data replaced it (see above). The memory
 * cache gets back exactly the entry it had (value, stored and expiry
 * times, stale mark), or none; each cell shows exactly what it showed
 * before the first pending optimistic value, flagged LDS_FLAG_ROLLED_BACK.
 * This happens before the process cell reports LDS_FAILED (or the state a
 * cancel restores).
 *
 * Success: with LDS_MUTATE_POPULATE the job's value is stored under every
 * key (in every kind of cache, persistent and Redis included) and shown
 * by the cells without LDS_FLAG_OPTIMISTIC; without it the optimistic
 * value stays (a memory cache keeps it, the cells show it again without
 * the flag). Then each prefix is invalidated as lds_cache_invalidate does.
 * All of this happens before the process cell reports LDS_FINISHED.
 *
 * `mutation` NULL: exactly lds_process_run.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, a bad size or unknown flag in
 * `mutation` or `opts`, optimistic_count or invalidate_count over
 * LDS_MUTATION_KEYS_MAX, a NULL array with a count, a NULL key, value or
 * prefix with a length, options with a cache); LDS_ENOENT (the cell, the
 * loader or a cache is unknown); LDS_ETOOBIG (a request, key, value or
 * prefix over LDS_VALUE_MAX); LDS_ENOMEM; LDS_EAGAIN (see LDS_QUEUE_MAX);
 * LDS_ECLOSED. On an error nothing is shown or run and no event comes.
 */
int lds_process_mutate(lds_runtime *rt, lds_id cell, int32_t kind, lds_id loader,
                       const void *request, size_t request_len,
                       const lds_load_options *opts, const lds_mutation_options *mutation);

/* ------------------------------------------------------------------ */
/* Scheduling (since 0.4)                                              */
/* ------------------------------------------------------------------ */

/*
 * LIMITS. A loader may limit its jobs (lds_loader_options, or the options
 * of the built-in loaders: max_concurrent, rate_per_s, burst):
 *
 *   max_concurrent  at most this many of its jobs run at once;
 *   rate_per_s      a token bucket: a job takes a token when it starts;
 *   burst           tokens refill at rate_per_s per second up to burst
 *                   (0 counts as 1), and the bucket starts full.
 *
 * A job that may not start yet (the loader is at max_concurrent, has no
 * token, or other jobs already wait) waits in the loader's queue, on the
 * loop thread: higher lds_load_options.priority first, in the order the
 * loads began on the loop within one priority. Its cells show it: the
 * load's first event (LDS_LOADING, or the current state flagged
 * REFRESHING for a silent load or refresh) carries LDS_FLAG_QUEUED, and
 * when the job leaves the queue the cells get one more STATE event, the
 * same state without the flag, just before the loader is called. A job
 * leaves the queue when a running job of the loader ends or a token comes
 * due (a timer on the loop: no thread polls). A retry's new attempt waits
 * like a new job. Nothing waits forever: a waiting load is still under
 * its timeout_ms, and every operation below ends it.
 *
 * A waiting job is not started by the loader and has no job calls: its
 * id, not yet given to the host, answers lds_job_* with LDS_ECANCELED.
 * What happens to a waiting job:
 *
 *   cancel / reset / set_loaded /     the cell leaves the job; the job
 *     set_error / a new load or          leaves the queue and the loader
 *     refresh of the cell / free of      is never called (no start, no
 *     the cell / timeout_ms              cancel function, no on_cancel)
 *   lds_loader_free                    the job still waits and starts in
 *                                        turn; free_data runs after the
 *                                        last job of the loader ended
 *   lds_runtime_free                   dropped; the loader is never called
 *   lds_loadable_set_priority /        the job moves to its new place in
 *     lds_process_set_priority           the queue
 *
 * A shared job (LDS_LOAD_SHARE, or a prefetch) counts once against the
 * limits, waits at the highest priority of the loads waiting for it, and
 * leaves the queue only when its last cell leaves it. Jobs that run count
 * until they end (succeed, finish, fail, cancel). Limits cost nothing to
 * loaders that have none.
 *
 * Bounds: the queue holds one entry per load that waits on the loop
 * (loads still in the runtime's own queue are bounded by LDS_QUEUE_MAX);
 * a waiting load holds about 300 bytes beside its cell and request (its
 * job, its first event, its entry), measured in bench/README.md.
 *
 * POLLING. A load with refresh_interval_ms > 0 polls: refresh_interval_ms
 * after the load succeeded, the cell refreshes itself (as
 * lds_loadable_refresh: silent, flagged LDS_FLAG_REFRESHING), and again
 * after each successful refresh. The interval runs from the end of the
 * previous load, so polls never overlap. After a failed load (an error
 * once its retries are spent, or a timeout) polling stops, unless the load
 * has LDS_LOAD_POLL_ON_ERROR: then the next refresh is due after the
 * longer of the interval and the retry back-off (retry_base_ms doubled
 * per failure in a row, at most retry_max_ms). Polling stops on cancel,
 * reset, set_loaded, set_error, free, or a new load (which polls again if
 * it has an interval of its own); a refresh keeps the load's interval.
 * lds_runtime_pause_polling pauses the polling of every cell of the runtime.
 */

/*
 * Gives the cell's load under way another priority: a job that still waits
 * in its loader's queue moves to its place for the new priority (behind
 * the jobs already waiting at that priority); a shared job waits at the
 * highest priority of its cells. A job that already runs is not affected.
 * The priority is kept for lds_loadable_refresh. The change takes effect
 * on the loop thread, in order with the cell's other calls; without a load
 * under way by then it changes nothing.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (not a loadable cell);
 * LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_loadable_set_priority(lds_runtime *rt, lds_id cell, int32_t priority);

/* The same for a process cell's run. Same return codes (LDS_ENOENT: not a process cell). */
int lds_process_set_priority(lds_runtime *rt, lds_id cell, int32_t priority);

/*
 * Pauses the polling of every cell of the runtime (refresh_interval_ms),
 * for a host going to the background or offline: a refresh that falls due
 * while polling is paused waits. Loads under way, and loads the host asks
 * for, go on. Pausing a paused runtime changes nothing.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_runtime_pause_polling(lds_runtime *rt);

/*
 * Resumes polling: every cell whose refresh fell due while polling was
 * paused refreshes at once (in the order they fell due), the others when
 * their interval ends. Resuming a runtime that is not paused changes nothing.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_runtime_resume_polling(lds_runtime *rt);

/* ------------------------------------------------------------------ */
/* Host signals                                                        */
/* ------------------------------------------------------------------ */

/*
 * Since 0.5. The host tells the runtime whether it is online and whether
 * it is in the foreground; the runtime never guesses. A runtime starts
 * online and in the foreground, so nothing changes for a host that never
 * calls these functions.
 *
 * OFFLINE. A job that runs goes on (its answer may still come). A load
 * started while offline does not call its loader: by default it waits,
 * the cell showing its LOADING state (or, silent, its current state
 * flagged LDS_FLAG_REFRESHING) flagged LDS_FLAG_PAUSED, and starts when
 * the runtime is online again, with an event of the same state without
 * the flag. A retry after a failed attempt waits the same way (flagged
 * PAUSED): its back-off runs meanwhile, and on reconnect it starts at once
 * if its back-off is over. With LDS_LOAD_OFFLINE_FAIL such a load or retry
 * fails at once: after the load's first event (LOADING, or REFRESHING when
 * silent, not PAUSED) the cell becomes LDS_ERROR with LDS_EOFFLINE (domain
 * LOADSTATE), in the same loop turn. With LDS_LOAD_OFFLINE_RUN the load ignores the signal. A
 * load that joins a running shared job (LDS_LOAD_SHARE) joins it
 * offline too; paused loads of one key start one job on reconnect. A
 * cache-first hit is served offline as usual. Polls do not fire while
 * offline (unless OFFLINE_RUN): a poll that falls due waits and runs when
 * the runtime is online again. Cancel, reset, set_* and free of a paused
 * load work as for any load. A load's timeout_ms counts its paused time.
 *
 * BACKGROUND. Polls do not fire while the runtime is in the background,
 * unless the load has LDS_LOAD_POLL_IN_BACKGROUND; a poll that fell due
 * meanwhile runs on the return to the foreground. When the runtime
 * returns to the foreground, every loadable cell whose last load had
 * LDS_LOAD_REFRESH_ON_FOREGROUND, which shows an LDS_LOADED value, has no
 * load under way, and whose value is at least fresh_ms old (fresh_ms 0:
 * any age; updated_at_ms is the value's time) refreshes silently, as
 * lds_loadable_refresh, unless it refreshed for this reason less than
 * foreground_throttle_ms ago (0: 5000 ms). Offline, that refresh waits as
 * any load does.
 *
 * lds_runtime_stats reports both signals and the paused loads; the
 * Prometheus text (lds_runtime_metrics_text) and the inspector show them.
 */

/*
 * Tells the runtime whether the host is online (any non-zero is 1). Any
 * thread, callbacks included; never blocks, and calls no callback before
 * it returns: going online starts the paused loads and polls on the loop
 * thread. Setting the value the runtime already has changes nothing.
 *
 *   online  1: online (the default); 0: offline.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ECLOSED.
 */
int lds_runtime_set_online(lds_runtime *rt, int online);

/*
 * Tells the runtime whether the host is in the foreground (any non-zero
 * is 1). Any thread, callbacks included; never blocks, and calls no
 * callback before it returns: returning to the foreground runs the polls
 * that fell due in the background and the refreshes of
 * LDS_LOAD_REFRESH_ON_FOREGROUND cells on the loop thread. Setting the
 * value the runtime already has changes nothing.
 *
 *   foreground  1: in the foreground (the default); 0: in the background.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ECLOSED.
 */
int lds_runtime_set_foreground(lds_runtime *rt, int foreground);

/* The priority of a prefetch whose options leave priority at 0. */
#define LDS_PRIORITY_PREFETCH (-100)

/*
 * Prefetches: runs a load of the loader with a copy of request into the
 * cache of opts (opts->cache, with its cache_key and cache_policy; the
 * cache is required) without a cell, so that a later load finds the value
 * there. The job is shared under the cache key: a load of the same loader
 * and cache key that begins while the prefetch runs waits for its job
 * (whether it has LDS_LOAD_SHARE or not) and gets its result, so the
 * loader runs once; the job is cancelled only if every such cell leaves
 * it. The policy applies as for a cell: with LDS_POLICY_CACHE_FIRST a
 * fresh entry is kept and nothing is loaded; with LDS_POLICY_LOAD_ONLY the
 * loader is always asked. A prefetch is under the loader's limits like
 * any load, at opts->priority, or LDS_PRIORITY_PREFETCH when that is 0.
 * timeout_ms, interrupts and retries apply; refresh_interval_ms and
 * LDS_LOAD_SILENT are ignored. Nothing reports how a prefetch ends: read
 * the cache (lds_cache_get) or load a cell. lds_runtime_free cancels a
 * prefetch under way.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, opts NULL or without a cache,
 * request NULL with a length, bad options); LDS_ENOENT (loader or cache
 * unknown); LDS_ETOOBIG; LDS_ENOMEM; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_prefetch(lds_runtime *rt, lds_id loader, const void *request, size_t len,
                 const lds_load_options *opts);

/*
 * Infinite loads (since 0.5).
 *
 * A pages cell holds a list of pages, each loaded by a job of its own with
 * the loader, options and cache of the last lds_pages_load: timeouts,
 * retries, LDS_LOAD_SHARE (per page), caches and priorities apply to each
 * page as to a loadable cell's load (refresh_interval_ms is ignored: the
 * pages refresh together with lds_pages_refresh). The loader sees, as
 * each page's request, the encoding below of (request, cursor, direction),
 * read with lds_page_request_decode; it completes the page with
 * lds_job_succeed_page, giving the cursors of the pages after and before
 * it, or with lds_job_succeed for a page with no further cursor (the end
 * both ways).
 *
 * Encodings (u32: 4 bytes little-endian; a field is a u32 length then that
 * many bytes, the length 0xFFFFFFFF standing for no field at all):
 *
 *   page request  "\0LPQ", direction (1 byte: 0 first, 1 next, 0xFF
 *                 previous), request field, cursor field (absent for the
 *                 first page)
 *   page value    "\0LPV", value field, next cursor field, previous
 *                 cursor field (absent: no page that way)
 *
 * Each ends where its last field ends. The encoded value is what a job
 * completes, what caches store and what shared jobs share, so a cached
 * page brings its cursors. A value that does not begin with "\0LPV" is a
 * page of its own without cursors; one that does but does not decode
 * makes the page an error LDS_EINVAL (a cursor past LDS_CURSOR_MAX:
 * LDS_ETOOBIG), domain LOADSTATE. With a cache, a page's key is the load's
 * cache key (or its request) followed by a 0 byte and the page's cursor
 * (nothing for the first page), so invalidating the load's key as a
 * prefix reaches every page.
 *
 * Events (one lds_event_fn for the cell): kind is the index of the page
 * the event is about (0: the first page shown, after any insertion), value
 * that page's own value (without cursors), request the load's request;
 * status and flags are that page's. The first page is in the list from
 * lds_pages_load on (an error stays there, as in a loadable cell). A next
 * or previous page joins the list once loaded; until then its events carry
 * the index it will take (the count for a next page, 0 with
 * LDS_FLAG_PAGE_PREVIOUS for a previous one), and if it fails or is
 * cancelled (ERROR, or ABSENT with LDS_FLAG_CANCELLED) it is dropped and
 * the pages already loaded do not change. lds_pages_count and
 * lds_pages_get read the list from any thread. The first event of each
 * lds_pages_load carries LDS_FLAG_PAGES_LOAD (one per load, in the order
 * of the calls): the events before it are earlier loads'.
 *
 * The runtime observer (lds_runtime_observe) sees a pages cell's events as
 * that cell's: its id, kind the page's index and value the page's own
 * value, as above, but without the LDS_FLAG_PAGE_PREVIOUS,
 * LDS_FLAG_PAGES_DROPPED and LDS_FLAG_PAGES_LOAD flags; the jobs of its
 * pages are observed with the pages cell's id in lds_observation.cell.
 * The pages' own cells, inside it, are never reported.
 */
#define LDS_PAGES_MAX 1024        /* the most pages a cell holds (lds_pages_options.max_pages) */
#define LDS_CURSOR_MAX 4096       /* bytes of one cursor; more: the page fails with LDS_ETOOBIG */

#define LDS_FLAG_PAGE_PREVIOUS (1u << 11)  /* since 0.5: the event is about a page loaded before the
                                              first one (lds_pages_load_previous) */
#define LDS_FLAG_PAGES_DROPPED (1u << 14)  /* since 0.5: pages were dropped: by the page cap, from the
                                              other end; or, by lds_pages_refresh, after this page */
#define LDS_FLAG_PAGES_LOAD  (1u << 16)    /* since 0.5: the first event of an lds_pages_load, exactly one
                                              for each load the cell runs: its first page's first event;
                                              or, when the load is replaced by another lds_pages_load (or
                                              reset) before that page showed anything, the event that ends
                                              it (ABSENT, flagged CANCELLED when replaced). Events before
                                              it belong to earlier loads: a host that counts the loads it
                                              asked for and these flags knows which load an event ends */

/* Since 0.5. Options for lds_pages_new. Initialize with LDS_PAGES_OPTIONS_INIT. */
typedef struct lds_pages_options {
  uint32_t size;            /* sizeof(lds_pages_options), set by the INIT macro */
  lds_event_fn on_event;    /* required: receives the events of every page */
  void *user_data;          /* passed to on_event; the library does not own it */
  const char *name;         /* as lds_cell_options.name */
  uint32_t max_pages;       /* page cap; 0: LDS_PAGES_MAX; more than LDS_PAGES_MAX: LDS_EINVAL */
} lds_pages_options;

#define LDS_PAGES_OPTIONS_INIT { (uint32_t)sizeof(lds_pages_options), NULL, NULL, NULL, 0 }

/*
 * Since 0.5. Creates a pages cell, with no page.
 *
 * Returns LDS_OK; LDS_EINVAL (rt, opts, opts->on_event or out NULL,
 * opts->size too small, max_pages above LDS_PAGES_MAX, a name that is not
 * valid); LDS_ECLOSED.
 */
int lds_pages_new(lds_runtime *rt, const lds_pages_options *opts, lds_id *out);

/*
 * Since 0.5. Frees a pages cell: every page load under way is cancelled;
 * no event of the cell starts after this returns.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (unknown or freed id); LDS_ECLOSED.
 */
int lds_pages_free(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. Drops the pages (every page load under way is cancelled) and
 * loads the first page: the loader gets (request, no cursor, direction 0).
 * request and opts are copied, and used for every later page of this load.
 * A page's PROGRESS events carry its index in kind, as its other events do
 * (none with LDS_LOAD_NO_PROGRESS).
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL, request NULL with a length, bad
 * options as for lds_loadable_load); LDS_ENOENT (cell, loader or cache
 * unknown); LDS_ETOOBIG; LDS_ENOMEM; LDS_EAGAIN (see LDS_QUEUE_MAX); LDS_ECLOSED.
 */
int lds_pages_load(lds_runtime *rt, lds_id cell, lds_id loader, const void *request, size_t len,
                   const lds_load_options *opts);

/*
 * Since 0.5. Loads the page after the last one, with the next cursor the
 * last page returned (direction 1). Once loaded it is appended; with the
 * cap reached the first page is dropped (the event of the new page carries
 * LDS_FLAG_PAGES_DROPPED).
 *
 * Returns LDS_OK (also when a next page already loads: nothing new
 * starts); LDS_EINVAL (rt NULL); LDS_ENOENT (unknown cell); LDS_ESTATE (no
 * page loaded yet, or the last page has no next cursor: the end of the
 * list); LDS_EAGAIN; LDS_ECLOSED.
 */
int lds_pages_load_next(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. Loads the page before the first one, with the previous cursor
 * the first page returned (direction -1). Once loaded it is inserted at
 * index 0 (its events carry LDS_FLAG_PAGE_PREVIOUS); with the cap reached
 * the last page is dropped (LDS_FLAG_PAGES_DROPPED).
 *
 * Returns as lds_pages_load_next, for the first page's previous cursor.
 */
int lds_pages_load_previous(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. Reloads the pages in order, silently (each stays visible,
 * flagged LDS_FLAG_REFRESHING, until its reload ends), never all at once:
 * the first page with the cursor and direction it was loaded with; then,
 * only once it has loaded, the page after it with the next cursor it now
 * returns, and so on. It stops at the end of the list, at a page that
 * fails or is cancelled (the pages after it stay), or when the next cursor
 * a page now returns differs from the one it returned before (the pages
 * after it are dropped; that page's event carries LDS_FLAG_PAGES_DROPPED).
 * A next or previous page under way is cancelled.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (unknown cell);
 * LDS_ESTATE (no load since the cell was made or reset); LDS_EAGAIN; LDS_ECLOSED.
 */
int lds_pages_refresh(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. Cancels every page load under way (and a refresh): each page
 * returns to what it showed before, flagged LDS_FLAG_CANCELLED; a next or
 * previous page under way is dropped.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (unknown cell); LDS_EAGAIN; LDS_ECLOSED.
 */
int lds_pages_cancel(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. Cancels every page load and drops all pages: one event
 * (ABSENT, kind 0) if there were any. lds_pages_refresh needs a new load.
 *
 * Returns LDS_OK; LDS_EINVAL (rt NULL); LDS_ENOENT (unknown cell); LDS_EAGAIN; LDS_ECLOSED.
 */
int lds_pages_reset(lds_runtime *rt, lds_id cell);

/*
 * Since 0.5. The number of pages in the list (not counting a next or
 * previous page still loading), as of the latest event.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL); LDS_ENOENT (unknown cell).
 */
int lds_pages_count(lds_runtime *rt, lds_id cell, size_t *out);

/*
 * Since 0.5. Whether the list goes on that way: for direction 1, whether
 * the last page has a next cursor (lds_pages_load_next would not return
 * LDS_ESTATE); for -1, whether the first page has a previous cursor.
 *
 * Returns 1 (yes); 0 (no: the end of the list, or no page loaded yet);
 * LDS_EINVAL (rt NULL, direction neither 1 nor -1); LDS_ENOENT (unknown cell).
 */
int lds_pages_has_more(lds_runtime *rt, lds_id cell, int32_t direction);

/*
 * Since 0.5. A copy of the latest state of the page at index (kind is the
 * index; value the page's own value). Release it with lds_snapshot_clear.
 *
 * Returns LDS_OK; LDS_EINVAL (rt or out NULL); LDS_ENOENT (unknown cell,
 * or no page at index); LDS_ENOMEM.
 */
int lds_pages_get(lds_runtime *rt, lds_id cell, size_t index, lds_snapshot *out);

/* Since 0.5. One page's request, as lds_page_request_decode reads it. */
typedef struct lds_page_request {
  const void *request;      /* the request given to lds_pages_load */
  size_t request_len;
  const void *cursor;       /* the cursor of the page asked for; first page: NULL, 0 */
  size_t cursor_len;
  int32_t direction;        /* 0 first page, 1 next, -1 previous */
} lds_page_request;

/*
 * Since 0.5. Reads the request a loader received for a page. The pointers
 * set in out point into request (valid as long as it is); a cursor that is
 * present but empty is a non-NULL pointer with length 0.
 *
 * Returns LDS_OK; LDS_EINVAL (out NULL, request NULL with a length, bytes
 * that are not an encoded page request; out is then zeroed); LDS_ETOOBIG
 * (a cursor longer than LDS_CURSOR_MAX).
 */
int lds_page_request_decode(const void *request, size_t len, lds_page_request *out);

/*
 * Since 0.5. Completes a page's job with its value and the cursors of the
 * pages after it (next) and before it (previous): NULL for no page that
 * way (an empty cursor is a non-NULL pointer with length 0). The cell
 * shows value alone; the cache stores the encoding with the cursors.
 *
 * Returns as lds_job_succeed; LDS_EINVAL also for a cursor NULL with a
 * length; LDS_ETOOBIG also for a cursor longer than LDS_CURSOR_MAX: the
 * job then fails with that code (domain LOADSTATE, no retry).
 */
int lds_job_succeed_page(lds_runtime *rt, lds_id job, const void *value, size_t len,
                         const void *next_cursor, size_t next_len,
                         const void *previous_cursor, size_t previous_len);

#ifdef __cplusplus
}
#endif

#endif /* LOADSTATE_H */
