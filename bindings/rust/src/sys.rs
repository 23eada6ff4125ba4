//! Raw declarations of `include/loadstate.h`.
//!
//! Names, types and values follow the header one to one; read the header
//! for the semantics of each function. Everything here is `unsafe` to call:
//! the safe API in the crate root is built on top of it. The layout of
//! every struct is checked against the C compiler by `tests/layout.rs`.

// The `as u32` casts are `size_of` of the option structs (a few hundred
// bytes) into the header's uint32_t `size` fields: none can truncate.
#![allow(clippy::cast_possible_truncation)]
#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_int, c_void};

pub const LDS_VERSION_MAJOR: u32 = 0;
pub const LDS_VERSION_MINOR: u32 = 4;
pub const LDS_VERSION_PATCH: u32 = 0;
/// The version these declarations describe: `(major << 16) | (minor << 8) | patch`.
pub const LDS_VERSION: u32 = (LDS_VERSION_MAJOR << 16) | (LDS_VERSION_MINOR << 8) | LDS_VERSION_PATCH;

pub const LDS_OK: c_int = 0;
pub const LDS_EINVAL: c_int = -1;
pub const LDS_ENOENT: c_int = -2;
pub const LDS_ESTATE: c_int = -3;
pub const LDS_ECANCELED: c_int = -4;
pub const LDS_ETIMEDOUT: c_int = -5;
pub const LDS_ENOMEM: c_int = -6;
pub const LDS_ECLOSED: c_int = -7;
pub const LDS_ETOOBIG: c_int = -8;
pub const LDS_EIO: c_int = -9;
pub const LDS_EAGAIN: c_int = -10;
pub const LDS_EREDIS: c_int = -11;
pub const LDS_ENOTSUP: c_int = -12;
pub const LDS_EOFFLINE: c_int = -13;

/// The largest value, request or message, in bytes, the library accepts.
pub const LDS_VALUE_MAX: usize = 256 * 1024 * 1024;

/// The most operations host threads may have waiting for a runtime's loop thread.
pub const LDS_QUEUE_MAX: usize = 262_144;
/// The largest `lds_runtime_options.queue_max`.
pub const LDS_QUEUE_MAX_LIMIT: usize = 4_194_304;

pub const LDS_ABSENT: i32 = 0;
pub const LDS_LOADING: i32 = 1;
pub const LDS_LOADED: i32 = 2;
pub const LDS_ERROR: i32 = 3;
pub const LDS_IDLE: i32 = 4;
pub const LDS_RUNNING: i32 = 5;
pub const LDS_FINISHED: i32 = 6;
pub const LDS_FAILED: i32 = 7;

pub const LDS_EVENT_STATE: u32 = 1;
pub const LDS_RECORD_EVENT: u32 = 1;
pub const LDS_RECORD_START: u32 = 2;
pub const LDS_RECORD_CANCEL: u32 = 3;
pub const LDS_OP_LOAD: u32 = 1;
pub const LDS_OP_CANCEL: u32 = 2;
pub const LDS_OP_YIELD: u32 = 3;
pub const LDS_OP_SUCCEED: u32 = 4;
pub const LDS_OP_FINISH: u32 = 5;
pub const LDS_OP_FAIL: u32 = 6;
pub const LDS_EVENT_PROGRESS: u32 = 2;
pub const LDS_EVENT_INTERRUPT: u32 = 3;

pub const LDS_FLAG_REFRESHING: u32 = 1 << 0;
pub const LDS_FLAG_PARTIAL: u32 = 1 << 1;
pub const LDS_FLAG_STALE: u32 = 1 << 2;
pub const LDS_FLAG_FROM_CACHE: u32 = 1 << 3;
pub const LDS_FLAG_CANCELLED: u32 = 1 << 4;
pub const LDS_FLAG_QUEUED: u32 = 1 << 6;
pub const LDS_FLAG_REVALIDATED: u32 = 1 << 7;
pub const LDS_FLAG_OPTIMISTIC: u32 = 1 << 8;
pub const LDS_FLAG_ROLLED_BACK: u32 = 1 << 12;
pub const LDS_FLAG_PREVIOUS: u32 = 1 << 9;
pub const LDS_FLAG_PLACEHOLDER: u32 = 1 << 10;
pub const LDS_FLAG_PAUSED: u32 = 1 << 13;
pub const LDS_FLAG_NO_VALUE: u32 = 1 << 15;
pub const LDS_FLAG_PAGES_LOAD: u32 = 1 << 16;

pub const LDS_LOAD_SILENT: u32 = 1 << 0;
pub const LDS_LOAD_SHARE: u32 = 1 << 1;
pub const LDS_LOAD_POLL_ON_ERROR: u32 = 1 << 4;
pub const LDS_LOAD_IGNORE_CACHE_HEADERS: u32 = 1 << 5;
pub const LDS_LOAD_NO_PROGRESS: u32 = 1 << 6;
pub const LDS_LOAD_KEEP_PREVIOUS: u32 = 1 << 7;
pub const LDS_LOAD_REFRESH_ON_FOREGROUND: u32 = 1 << 8;
pub const LDS_LOAD_OFFLINE_FAIL: u32 = 1 << 9;
pub const LDS_LOAD_OFFLINE_RUN: u32 = 1 << 10;
pub const LDS_LOAD_POLL_IN_BACKGROUND: u32 = 1 << 11;

pub const LDS_PRIORITY_PREFETCH: i32 = -100;

pub const LDS_DELIVER_LOOP: u32 = 0;
pub const LDS_DELIVER_POLL: u32 = 1;

pub const LDS_DOMAIN_LOADSTATE: i32 = 1;
pub const LDS_DOMAIN_HOST: i32 = 2;
pub const LDS_DOMAIN_OS: i32 = 3;
pub const LDS_DOMAIN_HTTP: i32 = 4;
pub const LDS_DOMAIN_EXIT: i32 = 5;
pub const LDS_DOMAIN_REDIS: i32 = 6;

pub type lds_id = u64;

/// The opaque runtime; only ever used behind a pointer.
#[repr(C)]
pub struct lds_runtime {
    _opaque: [u8; 0],
    _not_send_sync_unpin: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_event {
    pub r#type: u32,
    pub cell: lds_id,
    pub seq: u64,
    pub status: i32,
    pub kind: i32,
    pub flags: u32,
    pub value: *const c_void,
    pub value_len: usize,
    pub request: *const c_void,
    pub request_len: usize,
    pub error_domain: i32,
    pub error_code: i32,
    pub error_message: *const c_char,
    pub attempt: u32,
    pub elapsed_ms: u64,
    pub progress_done: u64,
    pub progress_total: u64,
    pub updated_at_ms: u64,
}

#[repr(C)]
#[derive(Debug)]
pub struct lds_snapshot {
    pub r#type: u32,
    pub cell: lds_id,
    pub seq: u64,
    pub status: i32,
    pub kind: i32,
    pub flags: u32,
    pub value: *mut c_void,
    pub value_len: usize,
    pub request: *mut c_void,
    pub request_len: usize,
    pub error_domain: i32,
    pub error_code: i32,
    pub error_message: *mut c_char,
    pub attempt: u32,
    pub elapsed_ms: u64,
    pub progress_done: u64,
    pub progress_total: u64,
    pub updated_at_ms: u64,
}

impl lds_snapshot {
    /// An all-zero snapshot, the state `lds_snapshot_clear` leaves behind.
    #[must_use]
    pub const fn zeroed() -> Self {
        lds_snapshot {
            r#type: 0,
            cell: 0,
            seq: 0,
            status: 0,
            kind: 0,
            flags: 0,
            value: core::ptr::null_mut(),
            value_len: 0,
            request: core::ptr::null_mut(),
            request_len: 0,
            error_domain: 0,
            error_code: 0,
            error_message: core::ptr::null_mut(),
            attempt: 0,
            elapsed_ms: 0,
            progress_done: 0,
            progress_total: 0,
            updated_at_ms: 0,
        }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_runtime_options {
    pub size: u32,
    pub delivery: u32,
    pub spin_us: u32,
    pub queue_max: u32,
    pub flags: u32,
}

/// `lds_runtime_options.flags`: count nothing.
pub const LDS_RUNTIME_NO_METRICS: u32 = 1 << 0;
/// `lds_runtime_options.flags` (since 0.5), POLL mode only: the free leaves
/// the descriptor open, drained and never readable; the host closes it.
pub const LDS_RUNTIME_KEEP_FD: u32 = 1 << 1;
/// The latency buckets of `lds_load_metrics`.
pub const LDS_LATENCY_BUCKETS: usize = 32;

impl lds_runtime_options {
    /// The value of `LDS_RUNTIME_OPTIONS_INIT`.
    pub const INIT: Self = lds_runtime_options {
        size: core::mem::size_of::<lds_runtime_options>() as u32,
        delivery: LDS_DELIVER_LOOP,
        spin_us: 0,
        queue_max: 0,
        flags: 0,
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_load_options {
    pub size: u32,
    pub flags: u32,
    pub timeout_ms: u32,
    pub interrupts_ms: *const u32,
    pub interrupt_count: usize,
    pub retries: u32,
    pub retry_base_ms: u32,
    pub retry_max_ms: u32,
    pub cache: lds_id,
    pub cache_key: *const c_void,
    pub cache_key_len: usize,
    pub cache_policy: u32,
    pub fresh_ms: u32,
    pub max_age_ms: u64,
    pub priority: i32,
    pub refresh_interval_ms: u32,
    pub placeholder: *const c_void,
    pub placeholder_len: usize,
    pub foreground_throttle_ms: u32,
}

impl lds_load_options {
    /// The value of `LDS_LOAD_OPTIONS_INIT`.
    pub const INIT: Self = lds_load_options {
        size: core::mem::size_of::<lds_load_options>() as u32,
        flags: 0,
        timeout_ms: 0,
        interrupts_ms: core::ptr::null(),
        interrupt_count: 0,
        retries: 0,
        retry_base_ms: 0,
        retry_max_ms: 0,
        cache: 0,
        cache_key: core::ptr::null(),
        cache_key_len: 0,
        cache_policy: LDS_POLICY_LOAD_ONLY,
        fresh_ms: 0,
        max_age_ms: 0,
        priority: 0,
        refresh_interval_ms: 0,
        placeholder: core::ptr::null(),
        placeholder_len: 0,
        foreground_throttle_ms: 0,
    };
}

pub const LDS_POLICY_LOAD_ONLY: u32 = 0;
pub const LDS_POLICY_CACHE_FIRST: u32 = 1;
pub const LDS_POLICY_CACHE_THEN_LOAD: u32 = 2;
pub const LDS_POLICY_CACHE_ONLY: u32 = 3;

pub const LDS_EXEC_STREAM_LINES: u32 = 1 << 0;

pub const LDS_HTTP_INSECURE: u32 = 1 << 0;
pub const LDS_HTTP_NO_REDIRECTS: u32 = 1 << 1;
pub const LDS_HTTP_NO_COMPRESSION: u32 = 1 << 2;
pub const LDS_HTTP_HTTP2: u32 = 1 << 3;
pub const LDS_HTTP_HTTP1: u32 = 1 << 4;
pub const LDS_HTTP_NO_HEURISTIC_FRESHNESS: u32 = 1 << 5;
pub const LDS_HTTP_NO_STALE_ON_DISCONNECT: u32 = 1 << 6;

pub const LDS_HTTP_STATUS_LINE_MAX: u32 = 8192;
pub const LDS_HTTP_HEADERS_MAX: u32 = 65536;
pub const LDS_HTTP_HEADER_LINES_MAX: u32 = 1024;
pub const LDS_HTTP_TRAILERS_MAX: u32 = 65536;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_file_options {
    pub size: u32,
    pub chunk_size: u32,
    pub max_size: u64,
    pub max_concurrent: u32,
    pub rate_per_s: u32,
    pub burst: u32,
    /// Since 0.5: the loader's name (`LDS_NAME_MAX`), or null.
    pub name: *const c_char,
}

impl lds_file_options {
    /// The value of `LDS_FILE_OPTIONS_INIT`.
    pub const INIT: Self = lds_file_options {
        size: core::mem::size_of::<lds_file_options>() as u32,
        chunk_size: 0,
        max_size: 0,
        max_concurrent: 0,
        rate_per_s: 0,
        burst: 0,
        name: core::ptr::null(),
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_exec_options {
    pub size: u32,
    pub flags: u32,
    pub kill_grace_ms: u32,
    pub max_output: u64,
    pub max_concurrent: u32,
    pub rate_per_s: u32,
    pub burst: u32,
    /// Since 0.5: the loader's name (`LDS_NAME_MAX`), or null.
    pub name: *const c_char,
}

impl lds_exec_options {
    /// The value of `LDS_EXEC_OPTIONS_INIT`.
    pub const INIT: Self = lds_exec_options {
        size: core::mem::size_of::<lds_exec_options>() as u32,
        flags: 0,
        kill_grace_ms: 0,
        max_output: 0,
        max_concurrent: 0,
        rate_per_s: 0,
        burst: 0,
        name: core::ptr::null(),
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_exec_request {
    pub size: u32,
    pub argv: *const *const c_char,
    pub env: *const *const c_char,
    pub cwd: *const c_char,
}

impl lds_exec_request {
    /// The value of `LDS_EXEC_REQUEST_INIT`.
    pub const INIT: Self = lds_exec_request {
        size: core::mem::size_of::<lds_exec_request>() as u32,
        argv: core::ptr::null(),
        env: core::ptr::null(),
        cwd: core::ptr::null(),
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_http_options {
    pub size: u32,
    pub max_connections: u32,
    pub user_agent: *const c_char,
    pub proxy: *const c_char,
    pub max_concurrent: u32,
    pub rate_per_s: u32,
    pub burst: u32,
    pub max_per_host: u32,
    /// Since 0.5: the loader's name (`LDS_NAME_MAX`), or null.
    pub name: *const c_char,
}

impl lds_http_options {
    /// The value of `LDS_HTTP_OPTIONS_INIT`.
    pub const INIT: Self = lds_http_options {
        size: core::mem::size_of::<lds_http_options>() as u32,
        max_connections: 0,
        user_agent: core::ptr::null(),
        proxy: core::ptr::null(),
        max_concurrent: 0,
        rate_per_s: 0,
        burst: 0,
        max_per_host: 0,
        name: core::ptr::null(),
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_http_request {
    pub size: u32,
    pub method: *const c_char,
    pub url: *const c_char,
    pub headers: *const *const c_char,
    pub header_count: usize,
    pub body: *const c_void,
    pub body_len: usize,
    pub timeout_ms: u32,
    pub max_redirects: u32,
    pub max_body: u64,
    pub flags: u32,
    pub ca_file: *const c_char,
}

impl lds_http_request {
    /// The value of `LDS_HTTP_REQUEST_INIT`.
    pub const INIT: Self = lds_http_request {
        size: core::mem::size_of::<lds_http_request>() as u32,
        method: core::ptr::null(),
        url: core::ptr::null(),
        headers: core::ptr::null(),
        header_count: 0,
        body: core::ptr::null(),
        body_len: 0,
        timeout_ms: 0,
        max_redirects: 0,
        max_body: 0,
        flags: 0,
        ca_file: core::ptr::null(),
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_http_response {
    pub status: i32,
    pub headers: *const c_char,
    pub headers_len: usize,
    pub body: *const c_void,
    pub body_len: usize,
}

pub const LDS_CACHE_REPLACE_DAMAGED: u32 = 1 << 0;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_memory_cache_options {
    pub size: u32,
    pub name: *const c_char,
    pub max_entries: u64,
    pub max_bytes: u64,
    pub ttl_ms: u64,
    pub unobserved_ms: u64,
}

impl lds_memory_cache_options {
    /// The value of `LDS_MEMORY_CACHE_OPTIONS_INIT`.
    pub const INIT: Self = lds_memory_cache_options {
        size: core::mem::size_of::<lds_memory_cache_options>() as u32,
        name: core::ptr::null(),
        max_entries: 0,
        max_bytes: 0,
        ttl_ms: 0,
        unobserved_ms: 0,
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_persistent_cache_options {
    pub size: u32,
    pub flags: u32,
    pub path: *const c_char,
    pub max_bytes: u64,
    pub ttl_ms: u64,
}

impl lds_persistent_cache_options {
    /// The value of `LDS_PERSISTENT_CACHE_OPTIONS_INIT`.
    pub const INIT: Self = lds_persistent_cache_options {
        size: core::mem::size_of::<lds_persistent_cache_options>() as u32,
        flags: 0,
        path: core::ptr::null(),
        max_bytes: 0,
        ttl_ms: 0,
    };
}

#[repr(C)]
#[derive(Debug)]
pub struct lds_cache_value {
    pub value: *mut c_void,
    pub value_len: usize,
    pub stored_at_ms: u64,
    pub expires_at_ms: u64,
    pub stale: u32,
}

impl lds_cache_value {
    /// An all-zero value, the state `lds_cache_value_clear` leaves behind.
    #[must_use]
    pub const fn zeroed() -> Self {
        lds_cache_value { value: core::ptr::null_mut(), value_len: 0, stored_at_ms: 0, expires_at_ms: 0, stale: 0 }
    }
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct lds_cache_statistics {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub expirations: u64,
    pub entries: u64,
    pub bytes: u64,
}

#[repr(C)]
#[derive(Debug)]
pub struct lds_cache_key_list {
    pub count: usize,
    pub keys: *const *const c_void,
    pub lengths: *const usize,
    pub block: *mut c_void,
}

impl lds_cache_key_list {
    /// An all-zero list, the state `lds_cache_key_list_clear` leaves behind.
    #[must_use]
    pub const fn zeroed() -> Self {
        lds_cache_key_list {
            count: 0,
            keys: core::ptr::null(),
            lengths: core::ptr::null(),
            block: core::ptr::null_mut(),
        }
    }
}

pub const LDS_REDIS_ECONNECT: i32 = 1;
pub const LDS_REDIS_ETIMEDOUT: i32 = 2;
pub const LDS_REDIS_EAUTH: i32 = 3;
pub const LDS_REDIS_EREPLY: i32 = 4;
pub const LDS_REDIS_ETOOBIG: i32 = 5;
pub const LDS_REDIS_EDOWN: i32 = 6;
pub const LDS_REDIS_ECLOSED: i32 = 7;
pub const LDS_REDIS_EQUEUE: i32 = 8;
pub const LDS_REDIS_EPROTO: i32 = 9;
pub const LDS_REDIS_EREFUSED: i32 = 10;
pub const LDS_REDIS_EUNREACHABLE: i32 = 11;
/// What one reply from Redis may hold beyond `max_value_bytes`.
pub const LDS_REDIS_REPLY_SLACK: usize = 1 << 20;
/// The most commands that wait for a connection or a reply, per Redis cache.
pub const LDS_REDIS_PENDING_MAX: usize = 65_536;
/// The most keys `lds_cache_keys` lists from a Redis cache.
pub const LDS_REDIS_KEYS_MAX: usize = 1_000_000;
/// The most inspector connections still waiting for their request head.
pub const LDS_INSPECTOR_WAITING_MAX: usize = 64;
/// The most keys one `lds_cache_get_many` looks up.
pub const LDS_CACHE_GET_MANY_MAX: usize = 4096;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_redis_cache_options {
    pub size: u32,
    pub flags: u32,
    pub key_prefix: *const c_char,
    pub ttl_ms: u64,
    pub max_ttl_ms: u64,
    pub max_value_bytes: u64,
    pub command_timeout_ms: u32,
    pub connect_timeout_ms: u32,
    pub lease_ms: u32,
    pub reconnect_max_ms: u32,
    pub memory_max_entries: u64,
    pub memory_max_bytes: u64,
    pub memory_ttl_ms: u64,
}

impl lds_redis_cache_options {
    /// The value of `LDS_REDIS_CACHE_OPTIONS_INIT`.
    pub const INIT: Self = lds_redis_cache_options {
        size: core::mem::size_of::<lds_redis_cache_options>() as u32,
        flags: 0,
        key_prefix: core::ptr::null(),
        ttl_ms: 0,
        max_ttl_ms: 0,
        max_value_bytes: 0,
        command_timeout_ms: 0,
        connect_timeout_ms: 0,
        lease_ms: 0,
        reconnect_max_ms: 0,
        memory_max_entries: 0,
        memory_max_bytes: 0,
        memory_ttl_ms: 0,
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_redis_status {
    pub size: u32,
    pub connected: u32,
    pub subscribed: u32,
    pub last_error_code: i32,
    pub connects: u64,
    pub errors: u64,
    pub leases_taken: u64,
    pub leases_waited: u64,
    pub results_received: u64,
    pub takeovers: u64,
    pub published: u64,
    pub fenced: u64,
    pub invalidations: u64,
    pub last_error: [c_char; 256],
}

impl lds_redis_status {
    /// All zero but `size`, as `lds_redis_cache_status` wants it.
    #[must_use]
    pub const fn with_size() -> Self {
        lds_redis_status {
            size: core::mem::size_of::<lds_redis_status>() as u32,
            connected: 0,
            subscribed: 0,
            last_error_code: 0,
            connects: 0,
            errors: 0,
            leases_taken: 0,
            leases_waited: 0,
            results_received: 0,
            takeovers: 0,
            published: 0,
            fenced: 0,
            invalidations: 0,
            last_error: [0; 256],
        }
    }
}

/// `lds_inspector_options.flags`.
pub const LDS_INSPECTOR_SHOW_VALUES: u32 = 1 << 0;
pub const LDS_INSPECTOR_ACTIONS: u32 = 1 << 1;
pub const LDS_INSPECTOR_ALLOW_REMOTE: u32 = 1 << 2;

/// Options for `lds_inspector_start`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_inspector_options {
    pub size: u32,
    pub flags: u32,
    pub max_clients: u32,
    pub interval_ms: u32,
    pub idle_timeout_ms: u32,
    pub max_cells: u32,
}

impl lds_inspector_options {
    /// The value of `LDS_INSPECTOR_OPTIONS_INIT`.
    pub const INIT: Self = lds_inspector_options {
        size: core::mem::size_of::<lds_inspector_options>() as u32,
        flags: 0,
        max_clients: 0,
        interval_ms: 0,
        idle_timeout_ms: 0,
        max_cells: 0,
    };
}

/// The load counters of a loader or of a runtime.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_load_metrics {
    pub started: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub timed_out: u64,
    pub retried: u64,
    pub shared: u64,
    pub jobs_started: u64,
    pub jobs_in_flight: u64,
    pub latency_count: u64,
    pub latency_sum_us: u64,
    pub latency_max_us: u64,
    pub latency_p50_us: u64,
    pub latency_p90_us: u64,
    pub latency_p99_us: u64,
    pub latency_buckets: [u64; LDS_LATENCY_BUCKETS],
    pub jobs_queued: u64,
    pub queue_wait_count: u64,
    pub queue_wait_sum_us: u64,
    pub queue_wait_max_us: u64,
    pub queue_wait_p50_us: u64,
    pub queue_wait_p90_us: u64,
    pub queue_wait_p99_us: u64,
    pub queue_wait_buckets: [u64; LDS_LATENCY_BUCKETS],
}

impl lds_load_metrics {
    /// All counters at zero.
    #[must_use]
    pub const fn zeroed() -> Self {
        lds_load_metrics {
            started: 0,
            succeeded: 0,
            failed: 0,
            cancelled: 0,
            timed_out: 0,
            retried: 0,
            shared: 0,
            jobs_started: 0,
            jobs_in_flight: 0,
            latency_count: 0,
            latency_sum_us: 0,
            latency_max_us: 0,
            latency_p50_us: 0,
            latency_p90_us: 0,
            latency_p99_us: 0,
            latency_buckets: [0; LDS_LATENCY_BUCKETS],
            jobs_queued: 0,
            queue_wait_count: 0,
            queue_wait_sum_us: 0,
            queue_wait_max_us: 0,
            queue_wait_p50_us: 0,
            queue_wait_p90_us: 0,
            queue_wait_p99_us: 0,
            queue_wait_buckets: [0; LDS_LATENCY_BUCKETS],
        }
    }
}

/// One loader alive and its counters.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_loader_metrics {
    pub loader: lds_id,
    pub loads: lds_load_metrics,
}

/// One cache open and its counters.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_cache_metrics {
    pub cache: lds_id,
    pub persistent: u32,
    pub reserved: u32,
    pub stats: lds_cache_statistics,
}

/// What `lds_runtime_stats` fills.
#[repr(C)]
#[derive(Debug)]
pub struct lds_runtime_statistics {
    pub size: u32,
    pub enabled: u32,
    pub cells_alive: u64,
    pub events_delivered: u64,
    pub loads: lds_load_metrics,
    pub loaders: *mut lds_loader_metrics,
    pub loaders_cap: u32,
    pub loader_count: u32,
    pub caches: *mut lds_cache_metrics,
    pub caches_cap: u32,
    pub cache_count: u32,
    /// The second version: loads a cache answered alone, in all and per loader.
    pub loads_from_cache: u64,
    pub loaders_from_cache: *mut u64,
    /// The third version: the host signals.
    pub online: u32,
    pub foreground: u32,
    pub loads_paused: u64,
    pub loads_paused_total: u64,
}

impl lds_runtime_statistics {
    /// The value of `LDS_RUNTIME_STATISTICS_INIT`.
    pub const INIT: Self = lds_runtime_statistics {
        size: core::mem::size_of::<lds_runtime_statistics>() as u32,
        enabled: 0,
        cells_alive: 0,
        events_delivered: 0,
        loads: lds_load_metrics::zeroed(),
        loaders: core::ptr::null_mut(),
        loaders_cap: 0,
        loader_count: 0,
        caches: core::ptr::null_mut(),
        caches_cap: 0,
        cache_count: 0,
        loads_from_cache: 0,
        loaders_from_cache: core::ptr::null_mut(),
        online: 0,
        foreground: 0,
        loads_paused: 0,
        loads_paused_total: 0,
    };
}

/// A delivery handed over as data by `lds_runtime_dispatch_records`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_record {
    pub size: u32,
    pub what: u32,
    pub user_data: *mut c_void,
    pub job: lds_id,
    pub event: lds_event,
}

/// One call in a batch given to `lds_runtime_submit`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_op {
    pub op: u32,
    pub code: i32,
    pub target: lds_id,
    pub loader: lds_id,
    pub data: *const c_void,
    pub data_len: usize,
}

pub type lds_event_fn = unsafe extern "C" fn(event: *const lds_event, user_data: *mut c_void);

pub type lds_loader_fn = unsafe extern "C" fn(
    rt: *mut lds_runtime,
    job: lds_id,
    request: *const c_void,
    request_len: usize,
    loader_data: *mut c_void,
);

pub type lds_free_fn = unsafe extern "C" fn(data: *mut c_void);
/// A runtime observer (`lds_runtime_observe`).
pub type lds_observe_fn = unsafe extern "C" fn(observation: *const lds_observation, user_data: *mut c_void);

/// `lds_observation.what`.
pub const LDS_OBSERVE_EVENT: u32 = 1;
pub const LDS_OBSERVE_JOB_START: u32 = 2;
pub const LDS_OBSERVE_JOB_END: u32 = 3;
/// `lds_observation.outcome`.
pub const LDS_JOB_SUCCEEDED: u32 = 0;
pub const LDS_JOB_FAILED: u32 = 1;
pub const LDS_JOB_CANCELLED: u32 = 2;

/// One thing a runtime observer is told.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_observation {
    pub size: u32,
    pub what: u32,
    pub event: *const lds_event,
    pub job: lds_id,
    pub loader: lds_id,
    pub cell: lds_id,
    pub attempt: u32,
    pub outcome: u32,
    pub error_domain: i32,
    pub error_code: i32,
    pub time_ns: u64,
    pub duration_ns: u64,
    pub request: *const c_void,
    pub request_len: usize,
}

pub type lds_cancel_fn = unsafe extern "C" fn(job: lds_id, data: *mut c_void);

/// A loader's cancel function (`lds_loader_options.cancel`).
pub type lds_loader_cancel_fn = unsafe extern "C" fn(rt: *mut lds_runtime, job: lds_id, loader_data: *mut c_void);

/// What `lds_loader_new_ex` makes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_loader_options {
    pub size: u32,
    pub start: Option<lds_loader_fn>,
    pub cancel: Option<lds_loader_cancel_fn>,
    pub free_data: Option<lds_free_fn>,
    pub loader_data: *mut c_void,
    pub max_concurrent: u32,
    pub rate_per_s: u32,
    pub burst: u32,
    /// Since 0.5: the loader's name (`LDS_NAME_MAX`), or null.
    pub name: *const c_char,
}

impl lds_loader_options {
    /// The value of `LDS_LOADER_OPTIONS_INIT`.
    pub const INIT: Self = lds_loader_options {
        size: core::mem::size_of::<lds_loader_options>() as u32,
        start: None,
        cancel: None,
        free_data: None,
        loader_data: core::ptr::null_mut(),
        max_concurrent: 0,
        rate_per_s: 0,
        burst: 0,
        name: core::ptr::null(),
    };
}

/// The longest name of a loader or cell, in bytes of UTF-8 (since 0.5).
pub const LDS_NAME_MAX: usize = 128;

/// What `lds_loadable_new_ex` and `lds_process_new_ex` make (since 0.5).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_cell_options {
    pub size: u32,
    pub on_event: Option<lds_event_fn>,
    pub user_data: *mut c_void,
    pub name: *const c_char,
}

/// Since 0.5: one optimistic value of a write.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_cache_update {
    pub cache: lds_id,
    pub key: *const c_void,
    pub key_len: usize,
    pub value: *const c_void,
    pub value_len: usize,
}

/// Since 0.5: one prefix a write invalidates once it succeeded.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_cache_prefix {
    pub cache: lds_id,
    pub prefix: *const c_void,
    pub prefix_len: usize,
}

/// Since 0.5: what a write shows and does (`lds_process_mutate`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_mutation_options {
    pub size: u32,
    pub flags: u32,
    pub optimistic: *const lds_cache_update,
    pub optimistic_count: usize,
    pub invalidate: *const lds_cache_prefix,
    pub invalidate_count: usize,
}

impl lds_mutation_options {
    /// The value of `LDS_MUTATION_OPTIONS_INIT`.
    pub const INIT: Self = lds_mutation_options {
        size: core::mem::size_of::<lds_mutation_options>() as u32,
        flags: 0,
        optimistic: core::ptr::null(),
        optimistic_count: 0,
        invalidate: core::ptr::null(),
        invalidate_count: 0,
    };
}

pub const LDS_MUTATE_POPULATE: u32 = 1 << 0;
pub const LDS_MUTATION_KEYS_MAX: usize = 64;

impl lds_cell_options {
    /// The value of `LDS_CELL_OPTIONS_INIT`.
    pub const INIT: Self = lds_cell_options {
        size: core::mem::size_of::<lds_cell_options>() as u32,
        on_event: None,
        user_data: core::ptr::null_mut(),
        name: core::ptr::null(),
    };
}

/// The most pages one pages cell holds (since 0.5).
pub const LDS_PAGES_MAX: u32 = 1024;
/// The longest page cursor, in bytes; a longer one fails its page with `LDS_ETOOBIG` (since 0.5).
pub const LDS_CURSOR_MAX: usize = 4096;
/// The event is about a page loaded before the first one (since 0.5).
pub const LDS_FLAG_PAGE_PREVIOUS: u32 = 1 << 11;
/// Pages were dropped: by the page cap from the other end, or by a refresh after this page (since 0.5).
pub const LDS_FLAG_PAGES_DROPPED: u32 = 1 << 14;

/// What `lds_pages_new` makes (since 0.5).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_pages_options {
    pub size: u32,
    pub on_event: Option<lds_event_fn>,
    pub user_data: *mut c_void,
    pub name: *const c_char,
    pub max_pages: u32,
}

impl lds_pages_options {
    /// The value of `LDS_PAGES_OPTIONS_INIT`.
    pub const INIT: Self = lds_pages_options {
        size: core::mem::size_of::<lds_pages_options>() as u32,
        on_event: None,
        user_data: core::ptr::null_mut(),
        name: core::ptr::null(),
        max_pages: 0,
    };
}

/// One page's request, as `lds_page_request_decode` reads it (since 0.5): pointers into the request.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct lds_page_request {
    pub request: *const c_void,
    pub request_len: usize,
    pub cursor: *const c_void,
    pub cursor_len: usize,
    pub direction: i32,
}

unsafe extern "C" {
    pub fn lds_strerror(code: c_int) -> *const c_char;
    pub fn lds_version() -> u32;

    pub fn lds_runtime_new(opts: *const lds_runtime_options, out: *mut *mut lds_runtime) -> c_int;
    pub fn lds_runtime_free(rt: *mut lds_runtime) -> c_int;
    pub fn lds_runtime_fd(rt: *mut lds_runtime) -> c_int;
    pub fn lds_runtime_dispatch(rt: *mut lds_runtime, max_events: c_int) -> c_int;
    pub fn lds_runtime_dispatch_records(
        rt: *mut lds_runtime,
        buf: *mut c_void,
        cap: usize,
        max_records: c_int,
        used: *mut usize,
    ) -> c_int;
    pub fn lds_runtime_submit(rt: *mut lds_runtime, ops: *const lds_op, count: usize, results: *mut i32) -> c_int;

    pub fn lds_loadable_new(
        rt: *mut lds_runtime,
        on_event: Option<lds_event_fn>,
        user_data: *mut c_void,
        out: *mut lds_id,
    ) -> c_int;
    pub fn lds_loadable_new_ex(rt: *mut lds_runtime, opts: *const lds_cell_options, out: *mut lds_id) -> c_int;
    pub fn lds_loadable_free(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_loadable_load(
        rt: *mut lds_runtime,
        cell: lds_id,
        loader: lds_id,
        request: *const c_void,
        request_len: usize,
        opts: *const lds_load_options,
    ) -> c_int;
    pub fn lds_loadable_refresh(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_loadable_cancel(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_loadable_reset(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_loadable_set_loaded(rt: *mut lds_runtime, cell: lds_id, value: *const c_void, len: usize) -> c_int;
    pub fn lds_loadable_set_error(rt: *mut lds_runtime, cell: lds_id, code: i32, message: *const c_char) -> c_int;
    pub fn lds_loadable_set_progress(rt: *mut lds_runtime, cell: lds_id, enabled: c_int) -> c_int;
    pub fn lds_loadable_get(rt: *mut lds_runtime, cell: lds_id, out: *mut lds_snapshot) -> c_int;
    pub fn lds_snapshot_clear(snap: *mut lds_snapshot);

    pub fn lds_loader_new(
        rt: *mut lds_runtime,
        start: Option<lds_loader_fn>,
        loader_data: *mut c_void,
        free_data: Option<lds_free_fn>,
        out: *mut lds_id,
    ) -> c_int;
    pub fn lds_loader_new_ex(rt: *mut lds_runtime, opts: *const lds_loader_options, out: *mut lds_id) -> c_int;
    pub fn lds_loader_free(rt: *mut lds_runtime, loader: lds_id) -> c_int;

    pub fn lds_job_yield(rt: *mut lds_runtime, job: lds_id, value: *const c_void, len: usize) -> c_int;
    pub fn lds_job_succeed(rt: *mut lds_runtime, job: lds_id, value: *const c_void, len: usize) -> c_int;
    pub fn lds_job_finish(rt: *mut lds_runtime, job: lds_id) -> c_int;
    pub fn lds_job_fail(rt: *mut lds_runtime, job: lds_id, code: i32, message: *const c_char) -> c_int;
    pub fn lds_job_fail_final(rt: *mut lds_runtime, job: lds_id, code: i32, message: *const c_char) -> c_int;
    pub fn lds_job_progress(rt: *mut lds_runtime, job: lds_id, done: u64, total: u64) -> c_int;
    pub fn lds_job_cancel_self(rt: *mut lds_runtime, job: lds_id) -> c_int;
    pub fn lds_job_reset_self(rt: *mut lds_runtime, job: lds_id) -> c_int;
    pub fn lds_job_is_cancelled(rt: *mut lds_runtime, job: lds_id) -> c_int;
    pub fn lds_job_on_cancel(
        rt: *mut lds_runtime,
        job: lds_id,
        func: Option<lds_cancel_fn>,
        data: *mut c_void,
    ) -> c_int;

    pub fn lds_free(ptr: *mut c_void);
    pub fn lds_file_loader_new(rt: *mut lds_runtime, opts: *const lds_file_options, out: *mut lds_id) -> c_int;
    pub fn lds_exec_request_encode(req: *const lds_exec_request, out: *mut *mut c_void, out_len: *mut usize) -> c_int;
    /// Since 0.5: copies in one block the library allocates; release with `lds_exec_request_clear`.
    pub fn lds_exec_request_decode(request: *const c_void, len: usize, out: *mut lds_exec_request) -> c_int;
    pub fn lds_exec_request_clear(req: *mut lds_exec_request);
    pub fn lds_exec_loader_new(rt: *mut lds_runtime, opts: *const lds_exec_options, out: *mut lds_id) -> c_int;
    pub fn lds_http_request_encode(req: *const lds_http_request, out: *mut *mut c_void, out_len: *mut usize) -> c_int;
    /// Since 0.5: copies in one block the library allocates; release with `lds_http_request_clear`.
    pub fn lds_http_request_decode(request: *const c_void, len: usize, out: *mut lds_http_request) -> c_int;
    pub fn lds_http_request_clear(req: *mut lds_http_request);
    pub fn lds_http_response_decode(value: *const c_void, len: usize, out: *mut lds_http_response) -> c_int;
    pub fn lds_http_loader_new(rt: *mut lds_runtime, opts: *const lds_http_options, out: *mut lds_id) -> c_int;

    pub fn lds_memory_cache_new(rt: *mut lds_runtime, opts: *const lds_memory_cache_options, out: *mut lds_id)
    -> c_int;
    pub fn lds_persistent_cache_new(
        rt: *mut lds_runtime,
        opts: *const lds_persistent_cache_options,
        out: *mut lds_id,
    ) -> c_int;
    pub fn lds_cache_free(rt: *mut lds_runtime, cache: lds_id) -> c_int;
    pub fn lds_cache_put(
        rt: *mut lds_runtime,
        cache: lds_id,
        key: *const c_void,
        key_len: usize,
        value: *const c_void,
        value_len: usize,
    ) -> c_int;
    pub fn lds_cache_get(
        rt: *mut lds_runtime,
        cache: lds_id,
        key: *const c_void,
        key_len: usize,
        out: *mut lds_cache_value,
    ) -> c_int;
    pub fn lds_cache_value_clear(value: *mut lds_cache_value);
    pub fn lds_cache_remove(rt: *mut lds_runtime, cache: lds_id, key: *const c_void, key_len: usize) -> c_int;
    pub fn lds_cache_clear(rt: *mut lds_runtime, cache: lds_id) -> c_int;
    pub fn lds_cache_stats(rt: *mut lds_runtime, cache: lds_id, out: *mut lds_cache_statistics) -> c_int;
    pub fn lds_runtime_stats(rt: *mut lds_runtime, out: *mut lds_runtime_statistics) -> c_int;
    pub fn lds_runtime_metrics_text(rt: *mut lds_runtime, buf: *mut c_char, cap: usize, len: *mut usize) -> c_int;
    pub fn lds_inspector_start(
        rt: *mut lds_runtime,
        address: *const c_char,
        opts: *const lds_inspector_options,
    ) -> c_int;
    pub fn lds_inspector_url(rt: *mut lds_runtime, buf: *mut c_char, cap: usize, len: *mut usize) -> c_int;
    pub fn lds_inspector_stop(rt: *mut lds_runtime) -> c_int;
    pub fn lds_runtime_observe(
        rt: *mut lds_runtime,
        observe: Option<lds_observe_fn>,
        user_data: *mut c_void,
        free_data: Option<lds_free_fn>,
    ) -> c_int;
    pub fn lds_cache_get_many(
        rt: *mut lds_runtime,
        cache: lds_id,
        count: usize,
        keys: *const *const c_void,
        key_lens: *const usize,
        out: *mut lds_cache_value,
        results: *mut c_int,
    ) -> c_int;
    pub fn lds_cache_read(
        rt: *mut lds_runtime,
        cache: lds_id,
        key: *const c_void,
        key_len: usize,
        buf: *mut c_void,
        cap: usize,
        len: *mut usize,
    ) -> c_int;
    pub fn lds_cache_keys(
        rt: *mut lds_runtime,
        cache: lds_id,
        prefix: *const c_void,
        prefix_len: usize,
        out: *mut lds_cache_key_list,
    ) -> c_int;
    pub fn lds_cache_key_list_clear(list: *mut lds_cache_key_list);
    pub fn lds_cache_count(
        rt: *mut lds_runtime,
        cache: lds_id,
        prefix: *const c_void,
        prefix_len: usize,
        limit: u64,
        count: *mut u64,
    ) -> c_int;

    pub fn lds_cache_invalidate(rt: *mut lds_runtime, cache: lds_id, prefix: *const c_void, prefix_len: usize)
    -> c_int;

    pub fn lds_process_new(
        rt: *mut lds_runtime,
        on_event: Option<lds_event_fn>,
        user_data: *mut c_void,
        out: *mut lds_id,
    ) -> c_int;
    pub fn lds_process_new_ex(rt: *mut lds_runtime, opts: *const lds_cell_options, out: *mut lds_id) -> c_int;
    pub fn lds_process_free(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_process_run(
        rt: *mut lds_runtime,
        cell: lds_id,
        kind: i32,
        loader: lds_id,
        request: *const c_void,
        request_len: usize,
        opts: *const lds_load_options,
    ) -> c_int;
    pub fn lds_process_mutate(
        rt: *mut lds_runtime,
        cell: lds_id,
        kind: i32,
        loader: lds_id,
        request: *const c_void,
        request_len: usize,
        opts: *const lds_load_options,
        mutation: *const lds_mutation_options,
    ) -> c_int;
    pub fn lds_process_cancel(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_process_reset(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_process_set_progress(rt: *mut lds_runtime, cell: lds_id, enabled: c_int) -> c_int;

    pub fn lds_loadable_set_priority(rt: *mut lds_runtime, cell: lds_id, priority: i32) -> c_int;
    pub fn lds_process_set_priority(rt: *mut lds_runtime, cell: lds_id, priority: i32) -> c_int;
    pub fn lds_runtime_pause_polling(rt: *mut lds_runtime) -> c_int;
    pub fn lds_runtime_resume_polling(rt: *mut lds_runtime) -> c_int;
    pub fn lds_runtime_set_online(rt: *mut lds_runtime, online: c_int) -> c_int;
    pub fn lds_runtime_set_foreground(rt: *mut lds_runtime, foreground: c_int) -> c_int;
    pub fn lds_prefetch(
        rt: *mut lds_runtime,
        loader: lds_id,
        request: *const c_void,
        len: usize,
        opts: *const lds_load_options,
    ) -> c_int;

    pub fn lds_redis_cache_new(
        rt: *mut lds_runtime,
        url: *const c_char,
        opts: *const lds_redis_cache_options,
        out: *mut lds_id,
    ) -> c_int;
    pub fn lds_redis_cache_status(rt: *mut lds_runtime, cache: lds_id, out: *mut lds_redis_status) -> c_int;

    pub fn lds_pages_new(rt: *mut lds_runtime, opts: *const lds_pages_options, out: *mut lds_id) -> c_int;
    pub fn lds_pages_free(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_load(
        rt: *mut lds_runtime,
        cell: lds_id,
        loader: lds_id,
        request: *const c_void,
        len: usize,
        opts: *const lds_load_options,
    ) -> c_int;
    pub fn lds_pages_load_next(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_load_previous(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_refresh(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_cancel(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_reset(rt: *mut lds_runtime, cell: lds_id) -> c_int;
    pub fn lds_pages_count(rt: *mut lds_runtime, cell: lds_id, out: *mut usize) -> c_int;
    pub fn lds_pages_has_more(rt: *mut lds_runtime, cell: lds_id, direction: i32) -> c_int;
    pub fn lds_pages_get(rt: *mut lds_runtime, cell: lds_id, index: usize, out: *mut lds_snapshot) -> c_int;
    pub fn lds_page_request_decode(request: *const c_void, len: usize, out: *mut lds_page_request) -> c_int;
    pub fn lds_job_succeed_page(
        rt: *mut lds_runtime,
        job: lds_id,
        value: *const c_void,
        len: usize,
        next_cursor: *const c_void,
        next_len: usize,
        previous_cursor: *const c_void,
        previous_len: usize,
    ) -> c_int;
}
