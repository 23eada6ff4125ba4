//! Writes: what a [`Process::mutate`](crate::Process::mutate) shows while
//! it runs, and what it does once it ends.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use crate::cache::Cache;
use crate::runtime::Shared;
use crate::sys;

/// The most optimistic values, and the most prefixes, of one write (64,
/// `LDS_MUTATION_KEYS_MAX`); more make the write fail with
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
pub const MUTATION_KEYS_MAX: usize = sys::LDS_MUTATION_KEYS_MAX;

/// An optimistic value: the cache's runtime, the cache, the key, the value.
type Update = (Arc<Shared>, u64, Vec<u8>, Vec<u8>);
/// A prefix to invalidate: the cache's runtime, the cache, the prefix.
type Prefix = (Arc<Shared>, u64, Vec<u8>);

/// A write's optimistic values, its prefixes to invalidate and whether its
/// result populates its keys, built up before
/// [`Process::mutate`](crate::Process::mutate):
///
/// ```no_run
/// # fn demo(runtime: &loadstate::Runtime, save: &loadstate::Loader, todos: &loadstate::Cache)
/// #     -> loadstate::Result<()> {
/// let (process, _events) = runtime.process()?;
/// let write = loadstate::Mutation::new()
///     .optimistic(todos, b"todo/7", b"{\"done\":true}")
///     .invalidate(todos, b"list/")
///     .populate(true);
/// process.mutate(0, save, b"PATCH todo/7", &write)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Mutation {
    updates: Vec<Update>,
    prefixes: Vec<Prefix>,
    populate: bool,
}

impl Mutation {
    /// A write with no optimistic value, no prefix, not populating.
    #[must_use]
    pub fn new() -> Mutation {
        Mutation::default()
    }

    /// Shows `value` under `key` of `cache` while the write runs: a memory
    /// cache stores it, a persistent or Redis cache is not written (it
    /// takes only confirmed values), and every loadable cell whose last
    /// load used that cache and key shows it, flagged
    /// [`Flags::OPTIMISTIC`](crate::Flags::OPTIMISTIC). A failure rolls it
    /// back (flagged [`Flags::ROLLED_BACK`](crate::Flags::ROLLED_BACK))
    /// unless newer data replaced it.
    #[must_use]
    pub fn optimistic(mut self, cache: &Cache, key: &[u8], value: &[u8]) -> Mutation {
        self.updates.push((Arc::clone(cache.shared()), cache.id(), key.to_vec(), value.to_vec()));
        self
    }

    /// Invalidates the entries of `cache` under `prefix` once the write
    /// succeeded, as [`Cache::invalidate`](crate::Cache::invalidate) does.
    #[must_use]
    pub fn invalidate(mut self, cache: &Cache, prefix: &[u8]) -> Mutation {
        self.prefixes.push((Arc::clone(cache.shared()), cache.id(), prefix.to_vec()));
        self
    }

    /// Whether the job's value is stored under every key of
    /// [`optimistic`](Mutation::optimistic) once the write succeeded (in
    /// every kind of cache); without it the optimistic values stay,
    /// confirmed.
    #[must_use]
    pub fn populate(mut self, populate: bool) -> Mutation {
        self.populate = populate;
        self
    }

    /// Whether every cache belongs to the runtime `shared`.
    pub(crate) fn same_runtime(&self, shared: &Arc<Shared>) -> bool {
        self.updates.iter().all(|u| Arc::ptr_eq(&u.0, shared))
            && self.prefixes.iter().all(|p| Arc::ptr_eq(&p.0, shared))
    }

    /// Calls `body` with the write as `lds_mutation_options`, valid during the call.
    pub(crate) fn with_raw<R>(&self, body: impl FnOnce(&sys::lds_mutation_options) -> R) -> R {
        fn bytes(b: &[u8]) -> *const c_void {
            if b.is_empty() { ptr::null() } else { b.as_ptr().cast() }
        }
        let updates: Vec<sys::lds_cache_update> = self
            .updates
            .iter()
            .map(|(_, cache, key, value)| sys::lds_cache_update {
                cache: *cache,
                key: bytes(key),
                key_len: key.len(),
                value: bytes(value),
                value_len: value.len(),
            })
            .collect();
        let prefixes: Vec<sys::lds_cache_prefix> = self
            .prefixes
            .iter()
            .map(|(_, cache, prefix)| sys::lds_cache_prefix {
                cache: *cache,
                prefix: bytes(prefix),
                prefix_len: prefix.len(),
            })
            .collect();
        let mut raw = sys::lds_mutation_options::INIT;
        raw.flags = if self.populate { sys::LDS_MUTATE_POPULATE } else { 0 };
        if !updates.is_empty() {
            raw.optimistic = updates.as_ptr();
            raw.optimistic_count = updates.len();
        }
        if !prefixes.is_empty() {
            raw.invalidate = prefixes.as_ptr();
            raw.invalidate_count = prefixes.len();
        }
        body(&raw)
    }
}

impl std::fmt::Debug for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mutation")
            .field("optimistic", &self.updates.len())
            .field("invalidate", &self.prefixes.len())
            .field("populate", &self.populate)
            .finish()
    }
}
