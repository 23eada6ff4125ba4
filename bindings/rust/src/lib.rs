//! Rust bindings to `libloadstate`, a loading-state runtime.
//!
//! A [`Runtime`] owns an event loop on its own thread. Cells hold a loading
//! state and report every change as an [`Event`] on an [`Events`] stream:
//!
//! * [`Loadable`]: absent → loading → loaded | error;
//! * [`Process`]: idle → running(kind) → finished(kind) | failed(kind).
//!
//! A [`Loader`] is a closure that runs once per load as a [`Job`]; the job
//! is ended from any thread with [`Job::succeed`], [`Job::finish`],
//! [`Job::fail`], [`Job::fail_final`], [`Job::cancel_self`] or
//! [`Job::reset_self`]. The library's own loaders read files
//! ([`Runtime::file_loader`]), run commands ([`Runtime::exec_loader`]) and
//! fetch URLs ([`Runtime::http_loader`]; an [`HttpRequest`] may carry its own
//! cache directives, a [`CacheControl`], and an [`HttpResponse`] served from
//! the cache tells its [`age`](HttpResponse::age) and
//! [`cache_verdict`](HttpResponse::cache_verdict)) on the runtime's loop; [`Cache`]s
//! hold values in memory, in a file or in Redis ([`RedisCache`], shared by
//! processes), and loads read and fill them as their [`CachePolicy`] says.
//! [`Runtime::stats`], [`Runtime::observe`] (every event, job start and job
//! end) and [`Runtime::start_inspector`] (a live web page) show what a
//! runtime does.
//!
//! ```
//! use std::time::Duration;
//! use loadstate::{Runtime, Status};
//!
//! let runtime = Runtime::new()?;
//! let greeter = runtime.loader(|job| {
//!     let mut value = b"hello, ".to_vec();
//!     value.extend_from_slice(job.request());
//!     let _ = job.succeed(&value); // refused only if the job no longer runs
//! })?;
//! let (cell, events) = runtime.loadable()?;
//! cell.load(&greeter, b"world")?;
//! let loaded = events.wait_until(|e| e.status == Status::Loaded, Duration::from_secs(10))?;
//! assert_eq!(loaded.value.as_deref(), Some(&b"hello, world"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Loads and event streams are also futures any executor drives, with no
//! dependency: [`Events::poll_next`] and [`Events::next`],
//! [`Loadable::load_async`] (a [`LoadFuture`] that cancels its load when
//! dropped before it resolves). Cells and caches can be typed:
//! [`Runtime::typed_loadable`] and [`Cache::typed`] encode requests, keys
//! and values with [`Encode`] and decode values with [`Decode`] (bytes,
//! UTF-8 text, [`HttpRequest`], [`HttpResponse`], your own types).
//!
//! The raw C declarations are in [`sys`]; the header `include/loadstate.h`
//! is the reference for the semantics of every call.

#![warn(missing_docs)]
// Each fallible call of the crate fails with the library's `LDS_E*` code
// for it, as an [`Error`]; the header documents, at each C function, the
// codes it returns, and the doc comments here name the ones a caller acts
// on. A `# Errors` section repeating that on each of the 67 functions that
// predate the typed and async API is not written; the newer functions
// (codec, futures) have theirs.
#![allow(clippy::missing_errors_doc)]

/// The crate's README, whose examples run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod builtin;
mod cache;
mod cell;
mod codec;
mod error;
mod event;
mod http_cache;
mod inspector;
mod loader;
mod metrics;
mod mutation;
mod observer;
mod options;
mod pages;
mod redis;
mod runtime;
pub mod sys;

pub use builtin::{
    ExecOptions, ExecRequest, FileOptions, HttpOptions, HttpRequest, HttpResponse, HttpStatusError, HttpVersion,
    file_request,
};
pub use cache::{Cache, CacheEntry, CacheStats, MemoryCacheOptions, PersistentCacheOptions};
pub use cell::{Events, LoadFuture, LoadOutcome, LoadWaitError, Loadable, NextEvent, Process};
pub use codec::{CodecError, Decode, Encode, TypedCache, TypedError, TypedLoadFuture, TypedLoadable};
pub use error::{Error, ErrorKind, RedisErrorKind, Result, strerror};
pub use event::{ErrorDomain, Event, EventType, Flags, LoadError, Status};
pub use http_cache::{CacheControl, CacheVerdict, MaxStale};
pub use inspector::InspectorOptions;
pub use loader::{Job, Loader, PANIC_ERROR_CODE};
pub use metrics::{LoadMetrics, RuntimeStats};
pub use mutation::{MUTATION_KEYS_MAX, Mutation};
pub use observer::{JobOutcome, Observation, ObservationKind, Observer};
pub use options::{CachePolicy, Delivery, Limits, LoadOptions, OfflineMode};
pub use pages::{CURSOR_MAX, PAGES_MAX, Page, PageRequest, Pages};
pub use redis::{RedisCache, RedisCacheOptions, RedisStatus};
pub use runtime::Runtime;
pub use std::sync::mpsc::{RecvTimeoutError, TryRecvError};

/// The largest value, request or message, in bytes, the library accepts
/// (256 MiB); larger ones fail with [`ErrorKind::TooBig`].
pub const VALUE_MAX: usize = sys::LDS_VALUE_MAX;

/// The most commands of one Redis cache that may wait for a connection or a
/// reply (65,536); more fail with [`RedisErrorKind::Queue`].
pub const REDIS_PENDING_MAX: usize = sys::LDS_REDIS_PENDING_MAX;

/// The most keys one call into the library looks up (4,096):
/// [`Cache::get_many`] asks for larger batches in calls of this many keys.
pub const CACHE_GET_MANY_MAX: usize = sys::LDS_CACHE_GET_MANY_MAX;

/// The longest name of a loader or cell, in bytes of UTF-8 (128). A name
/// (see [`Runtime::named_loader`]) is at most this long and holds no
/// control character (U+0000 to U+001F, U+007F to U+009F), else the call
/// that gives it fails with [`ErrorKind::InvalidArgument`]. The metrics
/// label a loader's series with its name in place of its id, and the
/// inspector shows the names of cells and loaders.
pub const NAME_MAX: usize = sys::LDS_NAME_MAX;

/// The most operations host threads may have waiting for a runtime's loop
/// thread (262,144); a call that would queue more fails with
/// [`ErrorKind::Busy`] and changes nothing.
pub const QUEUE_MAX: usize = sys::LDS_QUEUE_MAX;

/// The version of the loaded library as `(major << 16) | (minor << 8) | patch`.
/// Compare with [`sys::LDS_VERSION`], the version the crate was written for.
#[must_use]
pub fn version() -> u32 {
    // SAFETY: no arguments; callable from any thread.
    unsafe { sys::lds_version() }
}
