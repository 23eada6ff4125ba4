//! The Redis cache: a [`Cache`] whose entries live in a Redis server,
//! shared by every process that opens one on the same server (or Redis
//! Cluster), database and key prefix (`lds_redis_cache_new`).

use std::ffi::{CStr, CString};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use crate::cache::{Cache, millis64};
use crate::error::{Error, RedisErrorKind, Result, check};
use crate::runtime::{Runtime, Shared};
use crate::sys;

fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX)
}

/// Options of a Redis cache ([`Runtime::redis_cache`]). Zero durations
/// and sizes stand for the library's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisCacheOptions {
    key_prefix: Option<Vec<u8>>,
    ttl_ms: u64,
    max_ttl_ms: u64,
    max_value_bytes: u64,
    command_timeout_ms: u32,
    connect_timeout_ms: u32,
    lease_ms: u32,
    reconnect_max_ms: u32,
    memory_max_entries: u64,
    memory_max_bytes: u64,
    memory_ttl_ms: u64,
}

impl RedisCacheOptions {
    /// The defaults: prefix `lds:`, entries live one day, values up to
    /// 8 MiB, 2 s for a reply or a connection, 10 s leases, reconnection
    /// back-off up to 5 s, no front memory tier.
    #[must_use]
    pub fn new() -> RedisCacheOptions {
        RedisCacheOptions::default()
    }

    /// The namespace of every Redis key of the cache (default `lds:`). An
    /// entry under the prefix P lives under the Redis key P `v:` key.
    #[must_use]
    pub fn key_prefix(mut self, prefix: impl Into<Vec<u8>>) -> RedisCacheOptions {
        self.key_prefix = Some(prefix.into());
        self
    }

    /// How long an entry lives in Redis (default: [`max_ttl`](RedisCacheOptions::max_ttl)).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> RedisCacheOptions {
        self.ttl_ms = millis64(ttl);
        self
    }

    /// The bound on every entry's time to live (default one day).
    #[must_use]
    pub fn max_ttl(mut self, max_ttl: Duration) -> RedisCacheOptions {
        self.max_ttl_ms = millis64(max_ttl);
        self
    }

    /// A larger value is not stored (default 8 MiB; at most
    /// [`VALUE_MAX`](crate::VALUE_MAX)): a put fails with
    /// [`RedisErrorKind::TooBig`], a load's result is not kept.
    #[must_use]
    pub fn max_value_bytes(mut self, bytes: u64) -> RedisCacheOptions {
        self.max_value_bytes = bytes;
        self
    }

    /// The longest wait for a reply (default 2 s); a late reply fails its
    /// command and drops the connection.
    #[must_use]
    pub fn command_timeout(mut self, timeout: Duration) -> RedisCacheOptions {
        self.command_timeout_ms = millis(timeout);
        self
    }

    /// The longest wait for a connection (default 2 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> RedisCacheOptions {
        self.connect_timeout_ms = millis(timeout);
        self
    }

    /// The life of a shared load's lease (default 10 s): another process
    /// takes the load over when its holder neither publishes a result nor
    /// releases the lease within it.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> RedisCacheOptions {
        self.lease_ms = millis(lease);
        self
    }

    /// The ceiling of the reconnection back-off, which starts at 50 ms
    /// (default 5 s).
    #[must_use]
    pub fn reconnect_max(mut self, max: Duration) -> RedisCacheOptions {
        self.reconnect_max_ms = millis(max);
        self
    }

    /// With `n` > 0, entries read or written are also kept in memory, at
    /// most `n` of them (default 0: no front tier).
    #[must_use]
    pub fn memory_max_entries(mut self, n: u64) -> RedisCacheOptions {
        self.memory_max_entries = n;
        self
    }

    /// The front memory tier's bound in bytes (default 64 MiB).
    #[must_use]
    pub fn memory_max_bytes(mut self, bytes: u64) -> RedisCacheOptions {
        self.memory_max_bytes = bytes;
        self
    }

    /// How long a front entry is used (default 60 s).
    #[must_use]
    pub fn memory_ttl(mut self, ttl: Duration) -> RedisCacheOptions {
        self.memory_ttl_ms = millis64(ttl);
        self
    }
}

/// A Redis cache's connection state and counters ([`RedisCache::status`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisStatus {
    /// The command connection is up.
    pub connected: bool,
    /// The message connection listens (invalidations and results of other processes).
    pub subscribed: bool,
    /// Why the last failure happened; `None` before any.
    pub last_error_kind: Option<RedisErrorKind>,
    /// The last failure's message; empty before any.
    pub last_error: String,
    /// Connections made, first ones and reconnections, of both connections.
    pub connects: u64,
    /// Commands that failed.
    pub errors: u64,
    /// Shared loads that took a lease and called their loader.
    pub leases_taken: u64,
    /// Shared loads that waited for another process's result.
    pub leases_waited: u64,
    /// Waits that ended with another process's result.
    pub results_received: u64,
    /// Waits that ended by taking an expired or released lease.
    pub takeovers: u64,
    /// Results stored and published under a lease.
    pub published: u64,
    /// Results not stored: the lease had passed to a newer holder.
    pub fenced: u64,
    /// Invalidation messages received from other processes.
    pub invalidations: u64,
}

/// `lds_redis_cache_status` of a cache.
pub(crate) fn raw_status(shared: &Arc<Shared>, id: u64) -> Result<sys::lds_redis_status> {
    let mut raw = sys::lds_redis_status::with_size();
    // SAFETY: valid handle and out pointer, its size set.
    check(unsafe { sys::lds_redis_cache_status(shared.raw(), id, &raw mut raw) })?;
    Ok(raw)
}

/// A cache in a Redis server (5.0 or later), shared by every process and
/// machine that opens one on the same server, database and key prefix;
/// made by [`Runtime::redis_cache`]. It is a [`Cache`] (it dereferences to
/// one), usable wherever a cache is: its calls, [`LoadOptions::cache`](crate::LoadOptions::cache)
/// with any policy, [`Runtime::prefetch`], [`Cache::invalidate`].
/// Across processes:
///
/// * a shared load ([`LoadOptions::share`](crate::LoadOptions::share))
///   takes a lease on its key in Redis before its loader is called, so
///   that one process among all those loading the key calls it; the others
///   wait for its result (their cells show [`Status::Loading`](crate::Status::Loading))
///   and take over when the lease expires unused or is released;
/// * [`Cache::invalidate`] marks the entries under a prefix stale in Redis
///   and tells every process, whose cells showing them reload.
///
/// While Redis cannot answer, its calls fail with
/// [`ErrorKind::Redis`](crate::ErrorKind::Redis) (the reason in
/// [`Error::redis_kind`], the message in [`status`](RedisCache::status))
/// and loads call their loaders as if there were no cache; a cache-only
/// load fails with an error in [`ErrorDomain::Redis`](crate::ErrorDomain::Redis).
/// The cache reconnects by itself.
///
/// Its calls wait for the runtime's loop (at most about twice the command
/// timeout): make them from any thread except the loop thread, so not from
/// a callback of a [`Delivery::Loop`](crate::Delivery::Loop) runtime,
/// where they fail with [`ErrorKind::State`](crate::ErrorKind::State).
/// [`Cache::stats`] counts this process's hits and misses; its entries and
/// bytes are those of the front memory tier. Dropping it frees it; the
/// entries stay in Redis.
pub struct RedisCache {
    cache: Cache,
}

impl RedisCache {
    /// The cache as a plain [`Cache`].
    #[must_use]
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The connection's state and the cache's counters now; never waits
    /// for the loop.
    pub fn status(&self) -> Result<RedisStatus> {
        let raw = raw_status(self.cache.shared(), self.cache.id())?;
        // SAFETY: the library NUL-terminates last_error within its 256 bytes.
        let message = unsafe { CStr::from_ptr(raw.last_error.as_ptr()) };
        Ok(RedisStatus {
            connected: raw.connected != 0,
            subscribed: raw.subscribed != 0,
            last_error_kind: RedisErrorKind::from_raw(raw.last_error_code),
            last_error: message.to_string_lossy().into_owned(),
            connects: raw.connects,
            errors: raw.errors,
            leases_taken: raw.leases_taken,
            leases_waited: raw.leases_waited,
            results_received: raw.results_received,
            takeovers: raw.takeovers,
            published: raw.published,
            fenced: raw.fenced,
            invalidations: raw.invalidations,
        })
    }
}

impl Deref for RedisCache {
    type Target = Cache;

    fn deref(&self) -> &Cache {
        &self.cache
    }
}

impl AsRef<Cache> for RedisCache {
    fn as_ref(&self) -> &Cache {
        &self.cache
    }
}

impl fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCache").field("id", &self.cache.id()).finish()
    }
}

impl Runtime {
    /// A cache on the Redis server at `url`:
    /// `redis://[[user]:password@]host[:port][/db]` (port 6379, database 0)
    /// or `unix://[[user]:password@]/path/to/redis.sock[?db=N]`, or a Redis
    /// Cluster by its seed nodes: `redis+cluster://host:port[,host:port...]`
    /// (database 0; each command goes to the master of its key's slot,
    /// `MOVED` and `ASK` are followed, a failover is found again); `rediss://`
    /// (TLS) is refused with [`ErrorKind::NotSupported`](crate::ErrorKind::NotSupported):
    /// this build's hiredis has no TLS. Returns without waiting for the connection (a
    /// server that is down is no error here); the first commands wait for
    /// it. [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument)
    /// for a URL that does not parse, or a NUL in it or in the key prefix.
    pub fn redis_cache(&self, url: &str, options: &RedisCacheOptions) -> Result<RedisCache> {
        let invalid = |_| Error::from_code(sys::LDS_EINVAL);
        let url = CString::new(url).map_err(invalid)?;
        let prefix = options.key_prefix.as_ref().map(|p| CString::new(p.as_slice()).map_err(invalid)).transpose()?;
        let raw = sys::lds_redis_cache_options {
            key_prefix: prefix.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            ttl_ms: options.ttl_ms,
            max_ttl_ms: options.max_ttl_ms,
            max_value_bytes: options.max_value_bytes,
            command_timeout_ms: options.command_timeout_ms,
            connect_timeout_ms: options.connect_timeout_ms,
            lease_ms: options.lease_ms,
            reconnect_max_ms: options.reconnect_max_ms,
            memory_max_entries: options.memory_max_entries,
            memory_max_bytes: options.memory_max_bytes,
            memory_ttl_ms: options.memory_ttl_ms,
            ..sys::lds_redis_cache_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, URL, options (borrowing `prefix`) and out pointer.
        check(unsafe { sys::lds_redis_cache_new(self.as_ptr(), url.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(RedisCache { cache: Cache::new(self.shared(), id, true) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_become_milliseconds_and_saturate() {
        let options = RedisCacheOptions::new()
            .ttl(Duration::from_secs(30))
            .command_timeout(Duration::from_millis(1500))
            .lease(Duration::from_secs(u64::MAX))
            .memory_ttl(Duration::from_secs(u64::MAX));
        assert_eq!((options.ttl_ms, options.command_timeout_ms), (30_000, 1500));
        assert_eq!((options.lease_ms, options.memory_ttl_ms), (u32::MAX, u64::MAX));
    }

    #[test]
    fn redis_error_kinds_round_trip() {
        for code in 1..=8 {
            assert_eq!(RedisErrorKind::from_raw(code).unwrap().code(), code);
        }
        assert_eq!(RedisErrorKind::from_raw(0), None);
        assert_eq!(RedisErrorKind::from_raw(99), Some(RedisErrorKind::Other(99)));
        let error = Error::redis(sys::LDS_REDIS_EDOWN);
        assert_eq!(error.kind(), crate::ErrorKind::Redis);
        assert_eq!(error.redis_kind(), Some(RedisErrorKind::Down));
        assert!(error.to_string().ends_with(": Down"), "{error}");
        assert_eq!(Error::from_code(sys::LDS_EREDIS).redis_kind(), None);
        assert_eq!(Error::from_code(sys::LDS_EIO).redis_kind(), None);
    }
}
