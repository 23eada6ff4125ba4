//! Caches: bounded maps from byte-string keys to byte-string values, in
//! memory or in an `SQLite` file. Their calls work on the calling thread
//! under the cache's lock and never wait for the loop (those of a
//! [`RedisCache`](crate::RedisCache) do). Loads use them through
//! [`LoadOptions::cache`](crate::LoadOptions::cache).

use std::ffi::{CString, c_int};
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result, check};
use crate::runtime::{Runtime, Shared};
use crate::sys;

pub(crate) fn millis64(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Options of a memory cache ([`Runtime::memory_cache`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryCacheOptions {
    name: Option<String>,
    max_entries: u64,
    max_bytes: u64,
    ttl_ms: u64,
    unobserved_ms: u64,
}

impl MemoryCacheOptions {
    /// The defaults: 10,000 entries, 64 MiB, no expiry.
    #[must_use]
    pub fn new() -> MemoryCacheOptions {
        MemoryCacheOptions::default()
    }

    /// The cache's name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> MemoryCacheOptions {
        self.name = Some(name.into());
        self
    }

    /// The most entries held (0: the library's default).
    #[must_use]
    pub fn max_entries(mut self, n: u64) -> MemoryCacheOptions {
        self.max_entries = n;
        self
    }

    /// The most bytes of keys and values held (0: the library's default).
    #[must_use]
    pub fn max_bytes(mut self, bytes: u64) -> MemoryCacheOptions {
        self.max_bytes = bytes;
        self
    }

    /// The time to live of every entry (zero: entries do not expire).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> MemoryCacheOptions {
        self.ttl_ms = millis64(ttl);
        self
    }

    /// How long an entry that no cell observes is kept (zero: no such
    /// limit, the default). An entry is observed while a live cell's last
    /// load used this cache and its key (the cell was not reset since); the
    /// grace starts when the last such cell stops observing it (it is
    /// dropped, reset, or loads another key), or at the put for an entry no
    /// cell observes. Separate from freshness and from [`ttl`](Self::ttl);
    /// each drop counts in [`CacheStats::expirations`](crate::CacheStats).
    #[must_use]
    pub fn unobserved(mut self, grace: Duration) -> MemoryCacheOptions {
        self.unobserved_ms = millis64(grace);
        self
    }
}

/// Options of a persistent cache ([`Runtime::persistent_cache`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistentCacheOptions {
    path: PathBuf,
    replace_damaged: bool,
    max_bytes: u64,
    ttl_ms: u64,
}

impl PersistentCacheOptions {
    /// A cache in the file `path` (created with mode 0600 when missing),
    /// 256 MiB, no expiry.
    pub fn new(path: impl AsRef<Path>) -> PersistentCacheOptions {
        PersistentCacheOptions { path: path.as_ref().to_owned(), replace_damaged: false, max_bytes: 0, ttl_ms: 0 }
    }

    /// Deletes and recreates a file that is not a cache of this library's
    /// version, instead of failing with [`ErrorKind::Io`](crate::ErrorKind::Io).
    #[must_use]
    pub fn replace_damaged(mut self, replace: bool) -> PersistentCacheOptions {
        self.replace_damaged = replace;
        self
    }

    /// The most bytes of keys and values held (0: the library's default).
    #[must_use]
    pub fn max_bytes(mut self, bytes: u64) -> PersistentCacheOptions {
        self.max_bytes = bytes;
        self
    }

    /// The time to live of every entry (zero: entries do not expire).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> PersistentCacheOptions {
        self.ttl_ms = millis64(ttl);
        self
    }
}

/// An entry found by [`Cache::get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// A copy of the value.
    pub value: Vec<u8>,
    /// Wall-clock time (ms since the Unix epoch) of the put that stored it.
    pub stored_at_ms: u64,
    /// Wall-clock time at which it expires, if it does.
    pub expires_at_ms: Option<u64>,
    /// Whether its key prefix was invalidated since that put.
    pub stale: bool,
}

/// A cache's counters since it was opened, and what it holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Gets that found a live entry.
    pub hits: u64,
    /// Gets that found nothing or an expired entry.
    pub misses: u64,
    /// Entries dropped to stay within the bounds (and puts too large to keep).
    pub evictions: u64,
    /// Entries dropped because their time to live had passed.
    pub expirations: u64,
    /// Entries held now.
    pub entries: u64,
    /// Bytes of keys and values held now.
    pub bytes: u64,
}

/// Copies a found entry out of what the library allocated, and releases it.
fn take_entry(raw: &mut sys::lds_cache_value) -> CacheEntry {
    let value = if raw.value.is_null() || raw.value_len == 0 {
        Vec::new()
    } else {
        // SAFETY: a found entry holds `value_len` bytes at `value`.
        unsafe { std::slice::from_raw_parts(raw.value.cast::<u8>(), raw.value_len) }.to_vec()
    };
    let entry = CacheEntry {
        value,
        stored_at_ms: raw.stored_at_ms,
        expires_at_ms: (raw.expires_at_ms != 0).then_some(raw.expires_at_ms),
        stale: raw.stale != 0,
    };
    // SAFETY: releases what the library allocated.
    unsafe { sys::lds_cache_value_clear(raw) };
    entry
}

/// A cache of a runtime. Dropping it frees it (a persistent cache closes
/// its file; its entries stay). Its calls are safe from any thread (a Redis
/// cache's, from any thread but the loop thread: see [`RedisCache`](crate::RedisCache)).
pub struct Cache {
    shared: Arc<Shared>,
    id: u64,
    /// A Redis cache: its `LDS_EREDIS` errors carry the reason it reports.
    redis: bool,
}

impl Cache {
    pub(crate) fn new(shared: &Arc<Shared>, id: u64, redis: bool) -> Cache {
        Cache { shared: Arc::clone(shared), id, redis }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A return code of a call on this cache as a `Result`.
    fn check(&self, code: c_int) -> Result<c_int> {
        if self.redis && code == sys::LDS_EREDIS {
            let reason = crate::redis::raw_status(&self.shared, self.id).map_or(0, |status| status.last_error_code);
            return Err(Error::redis(reason));
        }
        check(code)
    }

    /// The cache's id in its runtime.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Stores a copy of `value` under `key`, replacing any entry, then
    /// evicts least recently used entries beyond the bounds.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        // SAFETY: valid handle and buffers.
        self.check(unsafe {
            sys::lds_cache_put(
                self.shared.raw(),
                self.id,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
            )
        })?;
        Ok(())
    }

    /// The entry under `key`, or `None` on a miss (an expired entry is
    /// dropped and is a miss).
    pub fn get(&self, key: &[u8]) -> Result<Option<CacheEntry>> {
        let mut raw = sys::lds_cache_value::zeroed();
        // SAFETY: valid handle, buffer and out pointer.
        let rc = self.check(unsafe {
            sys::lds_cache_get(self.shared.raw(), self.id, key.as_ptr().cast(), key.len(), &raw mut raw)
        })?;
        Ok((rc == 1).then(|| take_entry(&mut raw)))
    }

    /// The entries under `keys`, in their order, looked up together
    /// (`lds_cache_get_many`, one call per [`CACHE_GET_MANY_MAX`](crate::CACHE_GET_MANY_MAX)
    /// keys), each like [`get`](Cache::get): `Ok(Some(entry))`, `Ok(None)`
    /// on a miss, or the error of that key alone ([`ErrorKind::TooBig`](crate::ErrorKind::TooBig)
    /// for a key over [`VALUE_MAX`](crate::VALUE_MAX), a Redis error when
    /// Redis could not answer for it). A memory or persistent cache looks a
    /// batch up under one lock; a Redis cache sends a batch's `GET`s in one
    /// pipeline and waits once for the replies (its front tier answers what
    /// it holds). The outer error is a whole call's (a freed cache, a Redis
    /// cache on the loop thread); batches before it are dropped.
    pub fn get_many<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Result<Option<CacheEntry>>>> {
        let mut found = Vec::with_capacity(keys.len());
        for batch in keys.chunks(sys::LDS_CACHE_GET_MANY_MAX) {
            let pointers: Vec<*const std::ffi::c_void> = batch.iter().map(|k| k.as_ref().as_ptr().cast()).collect();
            let lengths: Vec<usize> = batch.iter().map(|k| k.as_ref().len()).collect();
            let mut out: Vec<sys::lds_cache_value> = batch.iter().map(|_| sys::lds_cache_value::zeroed()).collect();
            let mut results: Vec<c_int> = vec![0; batch.len()];
            // SAFETY: valid handle; the four arrays hold `batch.len()`
            // elements, key i being lengths[i] bytes at pointers[i].
            self.check(unsafe {
                sys::lds_cache_get_many(
                    self.shared.raw(),
                    self.id,
                    batch.len(),
                    pointers.as_ptr(),
                    lengths.as_ptr(),
                    out.as_mut_ptr(),
                    results.as_mut_ptr(),
                )
            })?;
            for (raw, rc) in out.iter_mut().zip(results) {
                found.push(match rc {
                    1 => Ok(Some(take_entry(raw))),
                    0 => Ok(None),
                    rc => self.check(rc).map(|_| None),
                });
            }
        }
        Ok(found)
    }

    /// Drops the entry under `key`; whether there was one.
    pub fn remove(&self, key: &[u8]) -> Result<bool> {
        // SAFETY: valid handle and buffer.
        let rc =
            self.check(unsafe { sys::lds_cache_remove(self.shared.raw(), self.id, key.as_ptr().cast(), key.len()) })?;
        Ok(rc == 1)
    }

    /// Drops every entry; the counters are kept.
    pub fn clear(&self) -> Result<()> {
        // SAFETY: valid handle.
        self.check(unsafe { sys::lds_cache_clear(self.shared.raw(), self.id) })?;
        Ok(())
    }

    /// Marks every entry whose key begins with `prefix` stale (an empty
    /// prefix matches every key). Then, on the loop, every cell showing
    /// the value of such an entry (loaded through this cache, no load
    /// running) reloads it silently from its loader: its state comes again
    /// flagged [`Flags::STALE`](crate::Flags::STALE) and
    /// [`Flags::REFRESHING`](crate::Flags::REFRESHING), and is replaced
    /// when the load ends. Later cache-first loads of those keys load again.
    pub fn invalidate(&self, prefix: &[u8]) -> Result<()> {
        // SAFETY: valid handle and buffer.
        self.check(unsafe {
            sys::lds_cache_invalidate(self.shared.raw(), self.id, prefix.as_ptr().cast(), prefix.len())
        })?;
        Ok(())
    }

    /// The keys of the live entries that begin with `prefix` (every key
    /// when it is empty), copied in one call: a memory cache lists them
    /// from the most to the least recently used, a persistent cache in
    /// byte order. Listing is no use of an entry (the counters and the
    /// eviction order stay); expired entries are left out.
    pub fn keys(&self, prefix: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut raw = sys::lds_cache_key_list::zeroed();
        // SAFETY: valid handle, buffer and out pointer.
        self.check(unsafe {
            sys::lds_cache_keys(self.shared.raw(), self.id, prefix.as_ptr().cast(), prefix.len(), &raw mut raw)
        })?;
        let mut keys = Vec::with_capacity(raw.count);
        for i in 0..raw.count {
            // SAFETY: a filled list holds `count` pointers and lengths, key i
            // being lengths[i] bytes at keys[i].
            let key = unsafe {
                let (pointer, length) = (*raw.keys.add(i), *raw.lengths.add(i));
                if length == 0 { Vec::new() } else { std::slice::from_raw_parts(pointer.cast::<u8>(), length).to_vec() }
            };
            keys.push(key);
        }
        // SAFETY: releases what the library allocated.
        unsafe { sys::lds_cache_key_list_clear(&raw mut raw) };
        Ok(keys)
    }

    /// How many live entries begin with `prefix`, as many as [`keys`](Self::keys)
    /// lists, counting up to `limit` (0: no limit; 1 tells whether there is
    /// one) without copying a key. Unlike [`CacheStats::entries`], it leaves
    /// out entries whose time to live has passed and that no get has dropped
    /// yet. Counting is no use of an entry.
    pub fn count(&self, prefix: &[u8], limit: u64) -> Result<u64> {
        let mut count = 0u64;
        // SAFETY: valid handle, buffer and out pointer.
        self.check(unsafe {
            sys::lds_cache_count(
                self.shared.raw(),
                self.id,
                prefix.as_ptr().cast(),
                prefix.len(),
                limit,
                &raw mut count,
            )
        })?;
        Ok(count)
    }

    /// The cache's counters.
    pub fn stats(&self) -> Result<CacheStats> {
        let mut raw = sys::lds_cache_statistics::default();
        // SAFETY: valid handle and out pointer.
        self.check(unsafe { sys::lds_cache_stats(self.shared.raw(), self.id, &raw mut raw) })?;
        Ok(CacheStats {
            hits: raw.hits,
            misses: raw.misses,
            evictions: raw.evictions,
            expirations: raw.expirations,
            entries: raw.entries,
            bytes: raw.bytes,
        })
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // SAFETY: valid handle. LDS_ECLOSED after the runtime is gone is fine.
        unsafe { sys::lds_cache_free(self.shared.raw(), self.id) };
    }
}

#[allow(clippy::missing_fields_in_debug)] // the runtime handle is not worth printing: the id says which cache
impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache").field("id", &self.id).finish()
    }
}

impl Runtime {
    /// A new, empty memory cache.
    pub fn memory_cache(&self, options: &MemoryCacheOptions) -> Result<Cache> {
        let name = options
            .name
            .as_ref()
            .map(|n| CString::new(n.as_bytes()).map_err(|_| Error::from_code(sys::LDS_EINVAL)))
            .transpose()?;
        let raw = sys::lds_memory_cache_options {
            name: name.as_ref().map_or(std::ptr::null(), |n| n.as_ptr()),
            max_entries: options.max_entries,
            max_bytes: options.max_bytes,
            ttl_ms: options.ttl_ms,
            unobserved_ms: options.unobserved_ms,
            ..sys::lds_memory_cache_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, options (borrowing `name`) and out pointer.
        check(unsafe { sys::lds_memory_cache_new(self.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(Cache::new(self.shared(), id, false))
    }

    /// Opens (or creates) the persistent cache in a file. A file that is
    /// not a cache fails with [`ErrorKind::Io`](crate::ErrorKind::Io)
    /// unless [`PersistentCacheOptions::replace_damaged`] is set.
    pub fn persistent_cache(&self, options: &PersistentCacheOptions) -> Result<Cache> {
        let path = CString::new(options.path.as_os_str().as_bytes()).map_err(|_| Error::from_code(sys::LDS_EINVAL))?;
        let raw = sys::lds_persistent_cache_options {
            flags: if options.replace_damaged { sys::LDS_CACHE_REPLACE_DAMAGED } else { 0 },
            path: path.as_ptr(),
            max_bytes: options.max_bytes,
            ttl_ms: options.ttl_ms,
            ..sys::lds_persistent_cache_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, options (borrowing `path`) and out pointer.
        check(unsafe { sys::lds_persistent_cache_new(self.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(Cache::new(self.shared(), id, false))
    }
}
