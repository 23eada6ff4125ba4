use std::time::Duration;

use crate::cache::Cache;
use crate::sys;

/// How a load or a run behaves: silent, shared, timeout, interrupts,
/// retries, and the cache it reads and fills.
///
/// ```
/// use std::time::Duration;
/// use loadstate::{CachePolicy, LoadOptions, MemoryCacheOptions, Runtime};
///
/// let runtime = Runtime::new()?;
/// let cache = runtime.memory_cache(&MemoryCacheOptions::new())?;
/// let options = LoadOptions::new()
///     .silent(true)
///     .timeout(Duration::from_secs(5))
///     .interrupts([Duration::from_millis(500), Duration::from_secs(2)])
///     .retries(3)
///     .cache(&cache)
///     .cache_key("user/42")
///     .cache_policy(CachePolicy::CacheThenLoad)
///     .fresh(Duration::from_secs(60))
///     .max_age(Duration::from_secs(24 * 3600));
/// # let _ = options;
/// # Ok::<(), loadstate::Error>(())
/// ```
///
/// Durations are passed to the library in whole milliseconds (rounded
/// down, capped at `u32::MAX`, or `u64::MAX` for [`max_age`](LoadOptions::max_age)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one bool per LDS_LOAD_* flag bit, mirroring the C options
pub struct LoadOptions {
    silent: bool,
    share: bool,
    timeout_ms: u32,
    interrupts_ms: Vec<u32>,
    retries: u32,
    retry_base_ms: u32,
    retry_max_ms: u32,
    cache: u64,
    cache_key: Option<Vec<u8>>,
    cache_policy: CachePolicy,
    fresh_ms: u32,
    max_age_ms: u64,
    priority: i32,
    refresh_interval_ms: u32,
    poll_on_error: bool,
    ignore_cache_headers: bool,
    no_progress: bool,
    keep_previous: bool,
    placeholder: Option<Vec<u8>>,
    refresh_on_foreground: bool,
    poll_in_background: bool,
    offline: OfflineMode,
    foreground_throttle_ms: u32,
}

/// What a load does while the runtime is offline
/// ([`Runtime::set_online`](crate::Runtime::set_online)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OfflineMode {
    /// The loader is not called: the load (or a retry) waits, its events
    /// flagged [`Flags::PAUSED`](crate::Flags::PAUSED), and starts when the
    /// runtime is online again (the default).
    #[default]
    Wait,
    /// The load (or a retry falling due) fails at once with
    /// [`ErrorKind::Offline`](crate::ErrorKind::Offline) (`LDS_LOAD_OFFLINE_FAIL`).
    Fail,
    /// The load ignores the signal, for loaders that need no network
    /// (`LDS_LOAD_OFFLINE_RUN`).
    Run,
}

/// The limits of a loader's jobs (`max_concurrent`, `rate_per_s`, `burst`
/// of its options): [`Runtime::loader_with_limits`](crate::Runtime::loader_with_limits),
/// and the options of the built-in loaders.
///
/// A job that may not start yet waits in the loader's queue, higher
/// [priority](LoadOptions::priority) first; its cells' events carry
/// [`Flags::QUEUED`](crate::Flags::QUEUED) until it starts. All zero, the
/// default, is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Limits {
    pub(crate) max_concurrent: u32,
    pub(crate) rate_per_s: u32,
    pub(crate) burst: u32,
}

impl Limits {
    /// No limit.
    #[must_use]
    pub fn new() -> Limits {
        Limits::default()
    }

    /// The most jobs of the loader running at once (0: no limit).
    #[must_use]
    pub fn max_concurrent(mut self, jobs: u32) -> Limits {
        self.max_concurrent = jobs;
        self
    }

    /// Jobs started per second, on average, and how many may start at once
    /// after a pause (`burst`, 0 counting as 1). A rate of 0 is no limit.
    #[must_use]
    pub fn rate(mut self, per_second: u32, burst: u32) -> Limits {
        self.rate_per_s = per_second;
        self.burst = burst;
        self
    }
}

/// How a load with a cache uses it (`LDS_POLICY_*`). Whatever the policy,
/// the value of a successful load is stored under the load's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CachePolicy {
    /// Always load (the default).
    #[default]
    LoadOnly,
    /// A fresh entry is shown, [`Status::Loaded`](crate::Status::Loaded)
    /// flagged [`Flags::FROM_CACHE`](crate::Flags::FROM_CACHE), and nothing
    /// is loaded; without one, load.
    CacheFirst,
    /// An entry, fresh or not, is shown at once (flagged `FROM_CACHE`, and
    /// [`Flags::STALE`](crate::Flags::STALE) when not fresh); then a silent
    /// load revalidates it. A failed revalidation keeps the cached value
    /// and reports its error in [`Event::error`](crate::Event::error) of a
    /// loaded event. Without an entry, a plain load.
    CacheThenLoad,
    /// Only the cache: the entry is shown, or the cell becomes an error
    /// with [`ErrorKind::NotFound`](crate::ErrorKind::NotFound)'s code in
    /// the loadstate domain. Nothing is loaded.
    CacheOnly,
}

impl CachePolicy {
    /// The raw `LDS_POLICY_*` value.
    #[must_use]
    pub const fn raw(self) -> u32 {
        match self {
            CachePolicy::LoadOnly => sys::LDS_POLICY_LOAD_ONLY,
            CachePolicy::CacheFirst => sys::LDS_POLICY_CACHE_FIRST,
            CachePolicy::CacheThenLoad => sys::LDS_POLICY_CACHE_THEN_LOAD,
            CachePolicy::CacheOnly => sys::LDS_POLICY_CACHE_ONLY,
        }
    }
}

fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX)
}

impl LoadOptions {
    /// The defaults: not silent, no timeout, no interrupts, no retries.
    #[must_use]
    pub fn new() -> LoadOptions {
        LoadOptions::default()
    }

    /// Keeps the current state visible while loading, flagged
    /// [`Flags::REFRESHING`](crate::Flags::REFRESHING) (`LDS_LOAD_SILENT`).
    #[must_use]
    pub fn silent(mut self, silent: bool) -> LoadOptions {
        self.silent = silent;
        self
    }

    /// Turns the cell's progress events off as the load is asked for
    /// (`LDS_LOAD_NO_PROGRESS`, as [`Loadable::set_progress`](crate::Loadable::set_progress)`(false)`):
    /// progress its jobs report is dropped and takes no
    /// [`seq`](crate::Event::seq) number, so the state events' `seq` has no
    /// gaps from it. The setting stays with the cell for later loads.
    #[must_use]
    pub fn no_progress(mut self, off: bool) -> LoadOptions {
        self.no_progress = off;
        self
    }

    /// Shares one job with the running loads of the same loader and key
    /// (`LDS_LOAD_SHARE`): the loader runs once, every waiting cell gets
    /// the same events, and the job is cancelled only when every cell has
    /// left it. The key is the [cache key](LoadOptions::cache_key) when one
    /// is given, otherwise the request.
    #[must_use]
    pub fn share(mut self, share: bool) -> LoadOptions {
        self.share = share;
        self
    }

    /// Cancels the job after `timeout`; the cell becomes an error with
    /// [`ErrorKind::TimedOut`](crate::ErrorKind::TimedOut)'s code in the loadstate domain.
    /// A zero duration means no timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> LoadOptions {
        self.timeout_ms = millis(timeout);
        self
    }

    /// Delays between [`EventType::Interrupt`](crate::EventType::Interrupt)
    /// events (at most 64; the library rejects more with `LDS_EINVAL`).
    #[must_use]
    pub fn interrupts(mut self, delays: impl IntoIterator<Item = Duration>) -> LoadOptions {
        self.interrupts_ms = delays.into_iter().map(millis).collect();
        self
    }

    /// Extra attempts after a failure.
    #[must_use]
    pub fn retries(mut self, retries: u32) -> LoadOptions {
        self.retries = retries;
        self
    }

    /// Back-off before the first retry (the library's default, 100 ms, when zero).
    #[must_use]
    pub fn retry_base(mut self, delay: Duration) -> LoadOptions {
        self.retry_base_ms = millis(delay);
        self
    }

    /// Upper bound of any back-off (the library's default, 30 s, when zero).
    #[must_use]
    pub fn retry_max(mut self, delay: Duration) -> LoadOptions {
        self.retry_max_ms = millis(delay);
        self
    }

    /// Reads and fills `cache` as the [policy](LoadOptions::cache_policy)
    /// says. The options keep the cache's id only: a load whose cache was
    /// dropped fails with [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    #[must_use]
    pub fn cache(mut self, cache: &Cache) -> LoadOptions {
        self.cache = cache.id();
        self
    }

    /// The cache entry's key; without one, the request is the key. It is
    /// also the key loads [share](LoadOptions::share) a job by.
    #[must_use]
    pub fn cache_key(mut self, key: impl Into<Vec<u8>>) -> LoadOptions {
        self.cache_key = Some(key.into());
        self
    }

    /// How the load uses its cache ([`CachePolicy::LoadOnly`] by default).
    #[must_use]
    pub fn cache_policy(mut self, policy: CachePolicy) -> LoadOptions {
        self.cache_policy = policy;
        self
    }

    /// Cached entries younger than this are fresh, older ones stale. Zero,
    /// the default, makes every entry stale.
    #[must_use]
    pub fn fresh(mut self, fresh: Duration) -> LoadOptions {
        self.fresh_ms = millis(fresh);
        self
    }

    /// Cached entries older than this count as missing (zero: no limit).
    #[must_use]
    pub fn max_age(mut self, max_age: Duration) -> LoadOptions {
        self.max_age_ms = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Where the job waits while its loader is at its [`Limits`]: higher
    /// first, in call order within one priority (0 by default).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> LoadOptions {
        self.priority = priority;
        self
    }

    /// Polls: after each successful load, refreshes silently `interval`
    /// after it ended (zero: no polling, the default). Polling stops after
    /// a failure unless [`poll_on_error`](LoadOptions::poll_on_error), and
    /// on cancel, reset, `set_*`, a new load or drop.
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> LoadOptions {
        self.refresh_interval_ms = millis(interval);
        self
    }

    /// Keeps polling after a failed load, with the retry back-off
    /// (`LDS_LOAD_POLL_ON_ERROR`).
    #[must_use]
    pub fn poll_on_error(mut self, keep: bool) -> LoadOptions {
        self.poll_on_error = keep;
        self
    }

    /// With a cache, the http loader's rules from its responses'
    /// `Cache-Control`, `Expires` and `Vary` do not apply: [`fresh`](Self::fresh)
    /// alone decides and every response is stored (`LDS_LOAD_IGNORE_CACHE_HEADERS`).
    #[must_use]
    pub fn ignore_cache_headers(mut self, ignore: bool) -> LoadOptions {
        self.ignore_cache_headers = ignore;
        self
    }

    /// A non-silent load of a request other than that of the loaded value
    /// shown keeps that value shown, with its own request, flagged
    /// [`Flags::PREVIOUS`](crate::Flags::PREVIOUS) `| REFRESHING`, instead of
    /// `LOADING` (`LDS_LOAD_KEEP_PREVIOUS`). Success shows the new value, a
    /// failure its error, a cancel the state before the load; a cached value
    /// the cache policy shows comes first. The futures of a load never
    /// resolve with the previous value: they wait for the outcome of their
    /// own request.
    #[must_use]
    pub fn keep_previous(mut self, keep: bool) -> LoadOptions {
        self.keep_previous = keep;
        self
    }

    /// A value (its bytes, as the cell's codec encodes it) shown `LOADED`,
    /// with the load's request, flagged
    /// [`Flags::PLACEHOLDER`](crate::Flags::PLACEHOLDER) `| REFRESHING`, while a
    /// non-silent load runs and nothing else would be shown (no cached
    /// value, no previous value kept). Never stored in a cache, never shown
    /// by another cell sharing the job. At most
    /// [`VALUE_MAX`](crate::VALUE_MAX) bytes (more: the load fails with
    /// `LDS_ETOOBIG`).
    #[must_use]
    pub fn placeholder(mut self, value: impl Into<Vec<u8>>) -> LoadOptions {
        self.placeholder = Some(value.into());
        self
    }

    /// Refreshes silently when the runtime returns to the foreground
    /// ([`Runtime::set_foreground`](crate::Runtime::set_foreground)) if the
    /// cell shows a loaded value at least [`fresh`](Self::fresh) old (any
    /// age when `fresh` is zero), at most once per
    /// [`foreground_throttle`](Self::foreground_throttle)
    /// (`LDS_LOAD_REFRESH_ON_FOREGROUND`).
    #[must_use]
    pub fn refresh_on_foreground(mut self, refresh: bool) -> LoadOptions {
        self.refresh_on_foreground = refresh;
        self
    }

    /// The least time between two refreshes of the cell on returning to
    /// the foreground (zero: 5 s, the default).
    #[must_use]
    pub fn foreground_throttle(mut self, throttle: Duration) -> LoadOptions {
        self.foreground_throttle_ms = millis(throttle);
        self
    }

    /// What the load does while the runtime is offline (default
    /// [`OfflineMode::Wait`]).
    #[must_use]
    pub fn offline(mut self, mode: OfflineMode) -> LoadOptions {
        self.offline = mode;
        self
    }

    /// Polling goes on while the runtime is in the background
    /// (`LDS_LOAD_POLL_IN_BACKGROUND`).
    #[must_use]
    pub fn poll_in_background(mut self, poll: bool) -> LoadOptions {
        self.poll_in_background = poll;
        self
    }

    /// The C struct; it borrows the interrupt delays, the cache key and the placeholder of `self`.
    pub(crate) fn to_raw(&self) -> sys::lds_load_options {
        sys::lds_load_options {
            flags: if self.silent { sys::LDS_LOAD_SILENT } else { 0 }
                | if self.share { sys::LDS_LOAD_SHARE } else { 0 }
                | if self.poll_on_error { sys::LDS_LOAD_POLL_ON_ERROR } else { 0 }
                | if self.ignore_cache_headers { sys::LDS_LOAD_IGNORE_CACHE_HEADERS } else { 0 }
                | if self.no_progress { sys::LDS_LOAD_NO_PROGRESS } else { 0 }
                | if self.keep_previous { sys::LDS_LOAD_KEEP_PREVIOUS } else { 0 }
                | if self.refresh_on_foreground { sys::LDS_LOAD_REFRESH_ON_FOREGROUND } else { 0 }
                | if self.poll_in_background { sys::LDS_LOAD_POLL_IN_BACKGROUND } else { 0 }
                | match self.offline {
                    OfflineMode::Wait => 0,
                    OfflineMode::Fail => sys::LDS_LOAD_OFFLINE_FAIL,
                    OfflineMode::Run => sys::LDS_LOAD_OFFLINE_RUN,
                },
            timeout_ms: self.timeout_ms,
            interrupts_ms: if self.interrupts_ms.is_empty() { std::ptr::null() } else { self.interrupts_ms.as_ptr() },
            interrupt_count: self.interrupts_ms.len(),
            retries: self.retries,
            retry_base_ms: self.retry_base_ms,
            retry_max_ms: self.retry_max_ms,
            cache: self.cache,
            // A given key, even an empty one, is never NULL: NULL means
            // "the request is the key".
            cache_key: self.cache_key.as_ref().map_or(std::ptr::null(), |k| k.as_ptr().cast()),
            cache_key_len: self.cache_key.as_ref().map_or(0, Vec::len),
            cache_policy: self.cache_policy.raw(),
            fresh_ms: self.fresh_ms,
            max_age_ms: self.max_age_ms,
            priority: self.priority,
            refresh_interval_ms: self.refresh_interval_ms,
            // A given placeholder, even an empty one, is never NULL: NULL means none.
            placeholder: self.placeholder.as_ref().map_or(std::ptr::null(), |p| p.as_ptr().cast()),
            placeholder_len: self.placeholder.as_ref().map_or(0, Vec::len),
            foreground_throttle_ms: self.foreground_throttle_ms,
            ..sys::lds_load_options::INIT
        }
    }
}

/// On which thread callbacks run (`LDS_DELIVER_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Delivery {
    /// On the runtime's loop thread (the default).
    #[default]
    Loop,
    /// On the thread that calls [`Runtime::dispatch`](crate::Runtime::dispatch),
    /// when [`Runtime::fd`](crate::Runtime::fd) is readable.
    Poll,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_fill_the_c_struct() {
        let options = LoadOptions::new()
            .silent(true)
            .share(true)
            .timeout(Duration::from_millis(1500))
            .interrupts([Duration::from_millis(10), Duration::from_secs(1)])
            .retries(2)
            .retry_base(Duration::from_millis(5))
            .retry_max(Duration::from_secs(u64::MAX));
        let raw = options.to_raw();
        assert_eq!(raw.size as usize, std::mem::size_of::<sys::lds_load_options>());
        assert_eq!(raw.flags, sys::LDS_LOAD_SILENT | sys::LDS_LOAD_SHARE);
        assert_eq!(raw.timeout_ms, 1500);
        assert_eq!(raw.interrupt_count, 2);
        // SAFETY: the delays live in `options`.
        assert_eq!(unsafe { std::slice::from_raw_parts(raw.interrupts_ms, 2) }, [10, 1000]);
        assert_eq!((raw.retries, raw.retry_base_ms, raw.retry_max_ms), (2, 5, u32::MAX));

        assert_eq!((raw.cache, raw.cache_policy, raw.fresh_ms, raw.max_age_ms), (0, sys::LDS_POLICY_LOAD_ONLY, 0, 0));

        let defaults = LoadOptions::new().to_raw();
        assert_eq!((defaults.flags, defaults.timeout_ms, defaults.interrupt_count), (0, 0, 0));
        assert!(defaults.interrupts_ms.is_null());
        assert!(defaults.cache_key.is_null());
        assert_eq!((defaults.cache, defaults.cache_key_len, defaults.cache_policy), (0, 0, 0));
    }

    #[test]
    fn cache_options_fill_the_c_struct() {
        let mut options = LoadOptions::new()
            .cache_key("key")
            .cache_policy(CachePolicy::CacheThenLoad)
            .fresh(Duration::from_secs(2))
            .max_age(Duration::from_secs(u64::MAX));
        options.cache = 17;
        let raw = options.to_raw();
        assert_eq!((raw.cache, raw.cache_policy), (17, sys::LDS_POLICY_CACHE_THEN_LOAD));
        // SAFETY: the key lives in `options`.
        assert_eq!(unsafe { std::slice::from_raw_parts(raw.cache_key.cast::<u8>(), raw.cache_key_len) }, b"key");
        assert_eq!((raw.fresh_ms, raw.max_age_ms), (2000, u64::MAX));

        let empty_key = LoadOptions::new().cache_key(Vec::new()).to_raw();
        assert!(!empty_key.cache_key.is_null(), "an empty key is a key, not the request");
        assert_eq!(empty_key.cache_key_len, 0);

        let policies =
            [CachePolicy::LoadOnly, CachePolicy::CacheFirst, CachePolicy::CacheThenLoad, CachePolicy::CacheOnly];
        let raws = [
            sys::LDS_POLICY_LOAD_ONLY,
            sys::LDS_POLICY_CACHE_FIRST,
            sys::LDS_POLICY_CACHE_THEN_LOAD,
            sys::LDS_POLICY_CACHE_ONLY,
        ];
        assert_eq!(policies.map(CachePolicy::raw), raws);
    }
}
