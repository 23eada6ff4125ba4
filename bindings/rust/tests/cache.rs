//! Caches and shared loads through the safe API.

#![allow(clippy::cast_possible_truncation)] // casts of small test numbers (counts, sizes, ms) known to fit
#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)
#![allow(clippy::unnecessary_wraps)] // helpers return Result to be used with ? like the calls they stand for

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{DEADLINE, JobQueue, Watch, job_queue};
use loadstate::{
    Cache, CachePolicy, ErrorDomain, ErrorKind, EventType, Flags, LoadError, LoadOptions, Loader, MemoryCacheOptions,
    PersistentCacheOptions, Runtime, Status,
};

/// A folder of this test process, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(name: &str) -> ScratchDir {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Waits for `delay` on the library's own timers: an interrupt of a load
/// that never ends.
fn wait_on_the_loop(runtime: &Runtime, delay: Duration) {
    let never = runtime.loader(|_job| {}).unwrap();
    let (clock, events) = runtime.loadable().unwrap();
    clock.load_with(&never, b"", &LoadOptions::new().interrupts([delay])).unwrap();
    events.wait_until(|e| matches!(e.event_type, EventType::Interrupt { .. }), DEADLINE).unwrap();
}

#[test]
fn a_memory_cache_stores_finds_removes_and_counts() {
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new().name("test")).unwrap();
    let before = now_ms();
    cache.put(b"key", b"value").unwrap();
    cache.put(b"empty", b"").unwrap();
    let entry = cache.get(b"key").unwrap().expect("a hit");
    assert_eq!(entry.value, b"value");
    assert!(entry.stored_at_ms + 1000 >= before && entry.stored_at_ms <= now_ms() + 1000);
    assert_eq!((entry.expires_at_ms, entry.stale), (None, false));
    assert_eq!(cache.get(b"empty").unwrap().unwrap().value, b"");
    assert_eq!(cache.get(b"other").unwrap(), None);
    assert!(cache.remove(b"key").unwrap());
    assert!(!cache.remove(b"key").unwrap());
    let stats = cache.stats().unwrap();
    assert_eq!((stats.hits, stats.misses, stats.entries), (2, 1, 1));
    assert_eq!(stats.bytes, b"empty".len() as u64);
    cache.clear().unwrap();
    assert_eq!(cache.stats().unwrap().entries, 0);
    assert_eq!(cache.stats().unwrap().hits, 2, "clear keeps the counters");
}

#[test]
fn a_memory_cache_evicts_the_least_recently_used_entries() {
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new().max_entries(2)).unwrap();
    cache.put(b"a", b"1").unwrap();
    cache.put(b"b", b"2").unwrap();
    cache.get(b"a").unwrap();
    cache.put(b"c", b"3").unwrap();
    assert!(cache.get(b"b").unwrap().is_none(), "b was the least recently used");
    assert!(cache.get(b"a").unwrap().is_some());
    assert!(cache.get(b"c").unwrap().is_some());
    assert_eq!(cache.stats().unwrap().evictions, 1);

    let small = runtime.memory_cache(&MemoryCacheOptions::new().max_bytes(8)).unwrap();
    small.put(b"k", b"fits").unwrap();
    small.put(b"big", b"far too large").unwrap();
    assert!(small.get(b"big").unwrap().is_none(), "an entry over the byte bound is not kept");
    assert!(small.get(b"k").unwrap().is_some());
}

#[test]
fn memory_cache_entries_expire_after_their_time_to_live() {
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new().ttl(Duration::from_millis(40))).unwrap();
    cache.put(b"k", b"v").unwrap();
    let entry = cache.get(b"k").unwrap().expect("fresh");
    assert_eq!(entry.expires_at_ms, Some(entry.stored_at_ms + 40));
    wait_on_the_loop(&runtime, Duration::from_millis(100));
    assert_eq!(cache.get(b"k").unwrap(), None);
    assert_eq!(cache.stats().unwrap().expirations, 1);
}

#[test]
fn a_persistent_cache_keeps_its_entries_across_opens() {
    let dir = ScratchDir::new("persist");
    let path = dir.0.join("cache.sqlite");
    let runtime = Runtime::new().unwrap();
    let cache = runtime.persistent_cache(&PersistentCacheOptions::new(&path)).unwrap();
    cache.put(b"kept", b"across opens").unwrap();
    let stored_at = cache.get(b"kept").unwrap().unwrap().stored_at_ms;
    drop(cache);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

    let again = Runtime::new().unwrap();
    let reopened = again.persistent_cache(&PersistentCacheOptions::new(&path)).unwrap();
    let entry = reopened.get(b"kept").unwrap().expect("kept in the file");
    assert_eq!((entry.value.as_slice(), entry.stored_at_ms), (&b"across opens"[..], stored_at));
}

#[test]
fn caches_list_their_keys_under_a_prefix() {
    let dir = ScratchDir::new("keys");
    let runtime = Runtime::new().unwrap();
    let memory = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let persistent = runtime.persistent_cache(&PersistentCacheOptions::new(dir.0.join("cache.sqlite"))).unwrap();
    for key in [&b"b/1"[..], b"a", b"", b"b/2"] {
        memory.put(key, b"v").unwrap();
        persistent.put(key, b"v").unwrap();
    }
    memory.get(b"a").unwrap();
    assert_eq!(memory.keys(b"").unwrap(), [&b"a"[..], b"b/2", b"", b"b/1"]);
    assert_eq!(persistent.keys(b"").unwrap(), [&b""[..], b"a", b"b/1", b"b/2"]);
    assert_eq!(persistent.keys(b"b/").unwrap(), [&b"b/1"[..], b"b/2"]);
    assert!(memory.keys(b"zz").unwrap().is_empty());
    assert_eq!(memory.stats().unwrap().hits, 1, "listing is no use of an entry");
    for cache in [&memory, &persistent] {
        assert_eq!(cache.count(b"", 0).unwrap(), 4);
        assert_eq!(cache.count(b"b/", 0).unwrap(), 2);
        assert_eq!(cache.count(b"", 1).unwrap(), 1);
        assert_eq!(cache.count(b"zz", 0).unwrap(), 0);
    }
    assert_eq!(memory.stats().unwrap().hits, 1, "counting is no use of an entry");
}

#[test]
fn get_many_looks_keys_up_together_like_get() {
    let dir = ScratchDir::new("get-many");
    let runtime = Runtime::new().unwrap();
    let memory = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let persistent = runtime.persistent_cache(&PersistentCacheOptions::new(dir.0.join("cache.sqlite"))).unwrap();
    for cache in [&memory, &persistent] {
        cache.put(b"a", b"alpha").unwrap();
        cache.put(b"", b"").unwrap();
        let found = cache.get_many(&[&b"a"[..], b"missing", b"", b"a"]).unwrap();
        let values: Vec<Option<Vec<u8>>> = found.into_iter().map(|r| r.unwrap().map(|e| e.value)).collect();
        assert_eq!(values, [Some(b"alpha".to_vec()), None, Some(Vec::new()), Some(b"alpha".to_vec())]);
        let stats = cache.stats().unwrap();
        assert_eq!((stats.hits, stats.misses), (3, 1));
        assert!(cache.get_many::<&[u8]>(&[]).unwrap().is_empty());
        // More keys than one call takes: asked in batches.
        let keys: Vec<Vec<u8>> =
            (0..loadstate::CACHE_GET_MANY_MAX * 2 + 3).map(|i| format!("k{i}").into_bytes()).collect();
        for key in keys.iter().step_by(3) {
            cache.put(key, key).unwrap();
        }
        let found = cache.get_many(&keys).unwrap();
        assert_eq!(found.len(), keys.len());
        for (i, (key, entry)) in keys.iter().zip(found).enumerate() {
            assert_eq!(entry.unwrap().map(|e| e.value), (i % 3 == 0).then(|| key.clone()), "key {i}");
        }
    }
    drop(runtime);
    assert_eq!(memory.get_many(&[b"a"]).unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn a_damaged_file_is_refused_unless_it_may_be_replaced() {
    let dir = ScratchDir::new("damaged");
    let path = dir.0.join("not-a-cache");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let runtime = Runtime::new().unwrap();
    assert_eq!(runtime.persistent_cache(&PersistentCacheOptions::new(&path)).unwrap_err().kind(), ErrorKind::Io);
    let cache = runtime.persistent_cache(&PersistentCacheOptions::new(&path).replace_damaged(true)).unwrap();
    assert_eq!(cache.stats().unwrap().entries, 0);
    cache.put(b"k", b"v").unwrap();
}

#[test]
fn a_cache_used_after_its_runtime_returns_closed() {
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    drop(runtime);
    assert_eq!(cache.put(b"k", b"v").unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(cache.get(b"k").unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn shared_loads_run_one_job_that_ends_when_every_cell_left() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (first, first_events) = runtime.loadable().unwrap();
    let (second, second_events) = runtime.loadable().unwrap();
    let (mut first_watch, mut second_watch) = (Watch::new(first_events), Watch::new(second_events));
    let shared = LoadOptions::new().share(true);

    first.load_with(&loader, b"same key", &shared).unwrap();
    assert_eq!(first_watch.next().status, Status::Loading);
    let job = jobs.next();
    second.load_with(&loader, b"same key", &shared).unwrap();
    assert_eq!(second_watch.next().status, Status::Loading);
    // The LOADING event comes just before the cell joins the job.
    expect_no_job_started(&runtime, &loader, &jobs);
    let (hook_tx, hook_rx) = mpsc::channel();
    job.on_cancel(move || hook_tx.send(()).unwrap()).unwrap();

    job.yield_value(b"both see this").unwrap();
    for watch in [&mut first_watch, &mut second_watch] {
        let partial = watch.next();
        assert_eq!((partial.flags, partial.value.as_deref()), (Flags::PARTIAL, Some(&b"both see this"[..])));
    }
    assert!(jobs.try_next().is_none(), "the loader ran once");

    first.cancel().unwrap();
    assert_eq!(first_watch.next().flags, Flags::CANCELLED);
    assert!(!job.is_cancelled(), "the other cell still waits for the job");
    second.cancel().unwrap();
    assert_eq!(second_watch.next().flags, Flags::CANCELLED);
    hook_rx.recv_timeout(DEADLINE).expect("the last cell leaving cancels the job");
    assert!(job.is_cancelled());
}

#[test]
fn a_shared_job_completes_every_waiting_cell() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let shared = LoadOptions::new().share(true);
    let cells: Vec<_> = (0..3).map(|_| runtime.loadable().unwrap()).collect();
    for (cell, _) in &cells {
        cell.load_with(&loader, b"key", &shared).unwrap();
    }
    let job = jobs.next();
    job.succeed(b"for everyone").unwrap();
    for (_, events) in &cells {
        let loaded = events.wait_until(loadstate::Event::is_settled, DEADLINE).unwrap();
        assert_eq!(loaded.value.as_deref(), Some(&b"for everyone"[..]));
    }
    assert!(jobs.try_next().is_none(), "one job for the three loads");
}

/// Asserts that no job started for the loads so far, and that the loop has
/// run everything asked of it before: a load of a new cell, queued on the
/// loop after them, starts the next job.
fn expect_no_job_started(runtime: &Runtime, loader: &Loader, jobs: &JobQueue) {
    let (probe, _events) = runtime.loadable().unwrap();
    probe.load(loader, b"probe").unwrap();
    let job = jobs.next();
    assert_eq!(job.request(), b"probe", "a job started before the probe");
    job.succeed(b"").unwrap();
}

/// A runtime with a job-queue loader and a memory cache.
struct Cached {
    runtime: Runtime,
    loader: Loader,
    jobs: JobQueue,
    cache: Cache,
}

fn cached() -> Cached {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    Cached { runtime, loader, jobs, cache }
}

impl Cached {
    fn cell(&self) -> (loadstate::Loadable, Watch) {
        let (cell, events) = self.runtime.loadable().unwrap();
        (cell, Watch::new(events))
    }

    /// Options reading and filling the cache under `key` with `policy`.
    fn options(&self, key: &str, policy: CachePolicy) -> LoadOptions {
        LoadOptions::new().cache(&self.cache).cache_key(key).cache_policy(policy)
    }

    fn expect_no_job_started(&self) {
        expect_no_job_started(&self.runtime, &self.loader, &self.jobs);
    }

    fn cached_value(&self, key: &str) -> Option<Vec<u8>> {
        self.cache.get(key.as_bytes()).unwrap().map(|entry| entry.value)
    }
}

const LONG: Duration = Duration::from_secs(600);

fn host_error(code: i32, message: &str) -> Option<LoadError> {
    Some(LoadError { domain: ErrorDomain::Host, code, message: Some(message.to_owned()) })
}

#[test]
fn load_only_loads_every_time_and_stores_a_success_under_its_key() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    let by_request = LoadOptions::new().cache(&c.cache);
    cell.load_with(&c.loader, b"request", &by_request).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    c.jobs.next().succeed(b"v1").unwrap();
    let loaded = watch.next();
    assert_eq!((loaded.status, loaded.flags, loaded.value.as_deref()), (Status::Loaded, Flags::NONE, Some(&b"v1"[..])));
    assert_eq!(c.cached_value("request").as_deref(), Some(&b"v1"[..]), "without a key the request is the key");

    let keyed = c.options("key", CachePolicy::LoadOnly).fresh(LONG);
    cell.load_with(&c.loader, b"request", &keyed).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    let job = c.jobs.next();
    assert_eq!(job.request(), b"request");
    job.succeed(b"v2").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"v2"[..]));
    assert_eq!(c.cached_value("key").as_deref(), Some(&b"v2"[..]));
    assert_eq!(c.cached_value("request").as_deref(), Some(&b"v1"[..]));

    // A fresh entry does not stop a load-only load; a failure stores nothing.
    cell.load_with(&c.loader, b"request", &keyed).unwrap();
    assert_eq!(watch.next().status, Status::Loading, "load-only loads even with a fresh entry");
    c.jobs.next().fail(1, "down").unwrap();
    assert_eq!(watch.next().status, Status::Error);
    assert_eq!(c.cached_value("key").as_deref(), Some(&b"v2"[..]));

    // An empty key is a key of its own, not the request.
    let empty_key = LoadOptions::new().cache(&c.cache).cache_key(Vec::new());
    cell.load_with(&c.loader, b"request", &empty_key).unwrap();
    watch.next();
    c.jobs.next().succeed(b"under the empty key").unwrap();
    watch.next();
    assert_eq!(c.cached_value("").as_deref(), Some(&b"under the empty key"[..]));
}

#[test]
fn cache_first_shows_a_fresh_entry_without_starting_the_loader() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    c.cache.put(b"key", b"cached").unwrap();
    let stored_at = c.cache.get(b"key").unwrap().unwrap().stored_at_ms;

    cell.load_with(&c.loader, b"request", &c.options("key", CachePolicy::CacheFirst).fresh(LONG)).unwrap();
    let hit = watch.next();
    assert_eq!((hit.status, hit.flags), (Status::Loaded, Flags::FROM_CACHE), "no loading state: {hit:?}");
    assert!(hit.is_from_cache() && !hit.is_stale() && hit.is_settled());
    assert_eq!(hit.value.as_deref(), Some(&b"cached"[..]));
    assert_eq!(hit.request.as_deref(), Some(&b"request"[..]));
    assert_eq!((hit.attempt, hit.error.as_ref()), (0, None));
    assert_eq!(hit.updated_at_ms, stored_at, "a cached value's time is the time it was stored");
    c.expect_no_job_started();
    assert_eq!(cell.get().unwrap(), hit);
}

#[test]
fn cache_first_loads_when_the_entry_is_stale_missing_or_invalidated() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    c.cache.put(b"key", b"old").unwrap();

    // Fresh time zero: every entry is stale.
    cell.load_with(&c.loader, b"request", &c.options("key", CachePolicy::CacheFirst)).unwrap();
    let loading = watch.next();
    assert_eq!((loading.status, loading.flags), (Status::Loading, Flags::NONE));
    let job = c.jobs.next();
    assert_eq!(job.request(), b"request");
    job.succeed(b"new").unwrap();
    let loaded = watch.next();
    assert_eq!((loaded.flags, loaded.value.as_deref()), (Flags::NONE, Some(&b"new"[..])));
    assert_eq!(c.cached_value("key").as_deref(), Some(&b"new"[..]), "the loaded value is stored");

    cell.load_with(&c.loader, b"request", &c.options("missing", CachePolicy::CacheFirst).fresh(LONG)).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    c.jobs.next().succeed(b"found").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"found"[..]));
    assert_eq!(c.cached_value("missing").as_deref(), Some(&b"found"[..]));

    // A fresh entry no cell shows, invalidated: the next cache-first load loads.
    c.cache.put(b"other", b"x").unwrap();
    c.cache.invalidate(b"oth").unwrap();
    assert!(c.cache.get(b"other").unwrap().unwrap().stale);
    cell.load_with(&c.loader, b"request", &c.options("other", CachePolicy::CacheFirst).fresh(LONG)).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    c.jobs.next().succeed(b"y").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"y"[..]));
    assert!(!c.cache.get(b"other").unwrap().unwrap().stale, "storing the new value clears the stale mark");
}

#[test]
fn cache_then_load_shows_the_entry_then_revalidates_it() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    c.cache.put(b"key", b"cached").unwrap();

    for (fresh, stale) in [(LONG, Flags::NONE), (Duration::ZERO, Flags::STALE)] {
        let options = c.options("key", CachePolicy::CacheThenLoad).fresh(fresh);
        cell.load_with(&c.loader, b"request", &options).unwrap();
        // One event: the cached value, flagged, while the revalidation runs.
        let shown = watch.next();
        assert_eq!(
            (shown.status, shown.flags),
            (Status::Loaded, Flags::FROM_CACHE | stale | Flags::REFRESHING),
            "{shown:?}"
        );
        let before = c.cached_value("key");
        assert_eq!(shown.value, before);
        let job = c.jobs.next();
        assert_eq!(job.request(), b"request");
        let renewed = format!("renewed {}", fresh.as_millis());
        job.succeed(renewed.as_bytes()).unwrap();
        let loaded = watch.next();
        assert_eq!((loaded.status, loaded.flags, loaded.error), (Status::Loaded, Flags::NONE, None));
        assert_eq!(loaded.value.as_deref(), Some(renewed.as_bytes()));
        assert_eq!(c.cached_value("key").as_deref(), Some(renewed.as_bytes()));
    }

    // Without an entry: a plain load.
    cell.load_with(&c.loader, b"request", &c.options("none", CachePolicy::CacheThenLoad)).unwrap();
    let loading = watch.next();
    assert_eq!((loading.status, loading.flags), (Status::Loading, Flags::NONE));
    c.jobs.next().succeed(b"first").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"first"[..]));
    assert_eq!(c.cached_value("none").as_deref(), Some(&b"first"[..]));
}

#[test]
fn a_failed_revalidation_keeps_the_cached_value_and_reports_the_error() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    c.cache.put(b"key", b"cached").unwrap();
    cell.load_with(&c.loader, b"request", &c.options("key", CachePolicy::CacheThenLoad)).unwrap();
    assert_eq!(watch.next().flags, Flags::FROM_CACHE | Flags::STALE | Flags::REFRESHING);
    c.jobs.next().fail(503, "unavailable").unwrap();
    let kept = watch.next();
    assert_eq!(kept.status, Status::Loaded, "{kept:?}");
    assert_eq!(kept.value.as_deref(), Some(&b"cached"[..]));
    assert!(kept.is_from_cache() && !kept.flags.contains(Flags::REFRESHING));
    assert_eq!(kept.error, host_error(503, "unavailable"));
    assert!(kept.is_settled());
    assert_eq!(cell.get().unwrap(), kept);
    assert_eq!(c.cached_value("key").as_deref(), Some(&b"cached"[..]), "the entry stays");
}

#[test]
fn cache_only_shows_the_entry_or_an_error_and_never_loads() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    c.cache.put(b"key", b"cached").unwrap();

    cell.load_with(&c.loader, b"request", &c.options("key", CachePolicy::CacheOnly).fresh(LONG)).unwrap();
    let hit = watch.next();
    assert_eq!(
        (hit.status, hit.flags, hit.value.as_deref()),
        (Status::Loaded, Flags::FROM_CACHE, Some(&b"cached"[..]))
    );
    cell.load_with(&c.loader, b"request", &c.options("key", CachePolicy::CacheOnly)).unwrap();
    let stale = watch.next();
    assert_eq!((stale.status, stale.flags), (Status::Loaded, Flags::FROM_CACHE | Flags::STALE));

    cell.load_with(&c.loader, b"request", &c.options("missing", CachePolicy::CacheOnly)).unwrap();
    let miss = watch.next();
    assert_eq!((miss.status, miss.value.as_ref()), (Status::Error, None));
    let error = miss.error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Loadstate, ErrorKind::NotFound.code()));

    // Entries older than the maximum age count as missing.
    wait_on_the_loop(&c.runtime, Duration::from_millis(30));
    let aged = c.options("key", CachePolicy::CacheOnly).max_age(Duration::from_millis(10));
    cell.load_with(&c.loader, b"request", &aged).unwrap();
    assert_eq!(watch.next().status, Status::Error, "the entry is too old");
    cell.load_with(&c.loader, b"request", &aged.max_age(LONG)).unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"cached"[..]));
    c.expect_no_job_started();
}

#[test]
fn invalidation_reloads_the_cells_showing_the_entries_flagged_stale_and_refreshing() {
    let c = cached();
    let (loaded, mut loaded_watch) = c.cell();
    let (hit, mut hit_watch) = c.cell();
    let (elsewhere, mut elsewhere_watch) = c.cell();
    let (uncached, mut uncached_watch) = c.cell();
    let (running, mut running_watch) = c.cell();

    // Loaded through the cache under user/1.
    loaded.load_with(&c.loader, b"r1", &c.options("user/1", CachePolicy::LoadOnly)).unwrap();
    loaded_watch.next();
    c.jobs.next().succeed(b"one").unwrap();
    assert_eq!(loaded_watch.next().value.as_deref(), Some(&b"one"[..]));
    // A cache-first hit under user/2.
    c.cache.put(b"user/2", b"two").unwrap();
    hit.load_with(&c.loader, b"r2", &c.options("user/2", CachePolicy::CacheFirst).fresh(LONG)).unwrap();
    assert_eq!(hit_watch.next().flags, Flags::FROM_CACHE);
    // Another prefix; no cache at all; a load still running under user/3.
    elsewhere.load_with(&c.loader, b"r3", &c.options("team/1", CachePolicy::LoadOnly)).unwrap();
    elsewhere_watch.next();
    c.jobs.next().succeed(b"team").unwrap();
    elsewhere_watch.next();
    uncached.load(&c.loader, b"user/1").unwrap();
    uncached_watch.next();
    c.jobs.next().succeed(b"plain").unwrap();
    uncached_watch.next();
    running.load_with(&c.loader, b"r4", &c.options("user/3", CachePolicy::LoadOnly)).unwrap();
    running_watch.next();
    let running_job = c.jobs.next();

    c.cache.invalidate(b"user/").unwrap();
    assert!(c.cache.get(b"user/1").unwrap().unwrap().stale);
    assert!(!c.cache.get(b"team/1").unwrap().unwrap().stale);

    let reloading = loaded_watch.next();
    assert_eq!((reloading.status, reloading.flags), (Status::Loaded, Flags::STALE | Flags::REFRESHING));
    assert_eq!(reloading.value.as_deref(), Some(&b"one"[..]));
    let reloading_hit = hit_watch.next();
    assert!(reloading_hit.flags.contains(Flags::STALE | Flags::REFRESHING), "{reloading_hit:?}");
    assert_eq!(reloading_hit.value.as_deref(), Some(&b"two"[..]));

    // Two reloads, from the loader, with the cells' own requests.
    let mut reloads: Vec<_> = (0..2).map(|_| c.jobs.next()).collect();
    reloads.sort_by(|a, b| a.request().cmp(b.request()));
    assert_eq!(reloads.iter().map(|j| j.request().to_vec()).collect::<Vec<_>>(), [b"r1".to_vec(), b"r2".to_vec()]);
    reloads[0].succeed(b"one again").unwrap();
    reloads[1].succeed(b"two again").unwrap();
    let renewed = loaded_watch.next();
    assert_eq!((renewed.flags, renewed.value.as_deref()), (Flags::NONE, Some(&b"one again"[..])));
    let renewed = hit_watch.next();
    assert_eq!((renewed.flags, renewed.value.as_deref()), (Flags::NONE, Some(&b"two again"[..])));
    let entry = c.cache.get(b"user/1").unwrap().unwrap();
    assert_eq!((entry.value.as_slice(), entry.stale), (&b"one again"[..], false));

    // The others did nothing: their next events are the ones caused now.
    c.expect_no_job_started();
    running_job.succeed(b"three").unwrap();
    let finished = running_watch.next();
    assert_eq!((finished.flags, finished.value.as_deref()), (Flags::NONE, Some(&b"three"[..])));
    for (cell, watch) in [(&elsewhere, &mut elsewhere_watch), (&uncached, &mut uncached_watch)] {
        cell.set_loaded(b"barrier").unwrap();
        assert_eq!(watch.next().value.as_deref(), Some(&b"barrier"[..]));
    }
}

#[test]
fn invalidating_every_key_and_a_closed_runtime() {
    let c = cached();
    let (cell, mut watch) = c.cell();
    cell.load_with(&c.loader, b"r", &c.options("any key", CachePolicy::LoadOnly)).unwrap();
    watch.next();
    c.jobs.next().succeed(b"v").unwrap();
    watch.next();
    c.cache.invalidate(b"").unwrap();
    assert_eq!(watch.next().flags, Flags::STALE | Flags::REFRESHING, "an empty prefix matches every key");
    c.jobs.next().succeed(b"w").unwrap();
    assert_eq!(watch.next().value.as_deref(), Some(&b"w"[..]));

    let Cached { runtime, cache, .. } = c;
    drop(runtime);
    assert_eq!(cache.invalidate(b"x").unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn a_load_whose_cache_was_dropped_is_not_found() {
    let c = cached();
    let (cell, watch) = c.cell();
    let options = c.options("key", CachePolicy::CacheFirst);
    drop(c.cache);
    assert_eq!(cell.load_with(&c.loader, b"r", &options).unwrap_err().kind(), ErrorKind::NotFound);
    watch.expect_nothing_queued();
}

#[test]
fn shared_loads_share_by_the_cache_key() {
    let c = cached();
    let (first, mut first_watch) = c.cell();
    let (second, mut second_watch) = c.cell();
    let shared = |key: &str| c.options(key, CachePolicy::LoadOnly).share(true);

    // Different requests, one key: one job.
    first.load_with(&c.loader, b"request 1", &shared("key")).unwrap();
    let job = c.jobs.next();
    second.load_with(&c.loader, b"request 2", &shared("key")).unwrap();
    assert_eq!(second_watch.next().status, Status::Loading);
    c.expect_no_job_started();
    assert_eq!(job.request(), b"request 1");
    job.succeed(b"for both").unwrap();
    for watch in [&mut first_watch, &mut second_watch] {
        let loaded = watch.wait_settled();
        assert_eq!(loaded.value.as_deref(), Some(&b"for both"[..]));
    }
    assert_eq!(c.cached_value("key").as_deref(), Some(&b"for both"[..]));

    // One request, different keys: two jobs.
    first.load_with(&c.loader, b"same", &shared("key a")).unwrap();
    second.load_with(&c.loader, b"same", &shared("key b")).unwrap();
    let (a, b) = (c.jobs.next(), c.jobs.next());
    assert_eq!((a.request(), b.request()), (&b"same"[..], &b"same"[..]));
    a.succeed(b"a").unwrap();
    b.succeed(b"b").unwrap();
    assert_eq!(first_watch.wait_settled().value.as_deref(), Some(&b"a"[..]));
    assert_eq!(second_watch.wait_settled().value.as_deref(), Some(&b"b"[..]));
    assert_eq!(
        (c.cached_value("key a").as_deref(), c.cached_value("key b").as_deref()),
        (Some(&b"a"[..]), Some(&b"b"[..]))
    );
}

#[test]
fn a_shared_job_completed_right_after_one_cell_left_reaches_the_other() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (first, first_events) = runtime.loadable().unwrap();
    let (second, second_events) = runtime.loadable().unwrap();
    let (first_watch, mut second_watch) = (Watch::new(first_events), Watch::new(second_events));
    let shared = LoadOptions::new().share(true);
    first.load_with(&loader, b"key", &shared).unwrap();
    let job = jobs.next();
    second.load_with(&loader, b"key", &shared).unwrap();
    assert_eq!(second_watch.next().status, Status::Loading);
    expect_no_job_started(&runtime, &loader, &jobs);

    first.cancel().unwrap();
    job.succeed(b"still wanted").expect("the second cell still waits for the job");
    assert_eq!(second_watch.wait_settled().value.as_deref(), Some(&b"still wanted"[..]));
    drop(first_watch);
}

/// The cell that left: its cancel was called before the completion, so it
/// shows the state from before the load, flagged CANCELLED, not the value.
/// The library applies the completion to it first (it is still a waiter
/// on the loop), and the cancel that follows finds no job: the cell shows
/// the late value and never a CANCELLED state.
#[test]
fn a_cell_that_left_a_shared_job_does_not_get_its_later_completion() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (first, first_events) = runtime.loadable().unwrap();
    let (second, second_events) = runtime.loadable().unwrap();
    let (mut first_watch, mut second_watch) = (Watch::new(first_events), Watch::new(second_events));
    let shared = LoadOptions::new().share(true);
    first.load_with(&loader, b"key", &shared).unwrap();
    let job = jobs.next();
    second.load_with(&loader, b"key", &shared).unwrap();
    assert_eq!(second_watch.next().status, Status::Loading);
    expect_no_job_started(&runtime, &loader, &jobs);

    first.cancel().unwrap();
    job.succeed(b"still wanted").unwrap();
    assert_eq!(first_watch.next().status, Status::Loading);
    let left = first_watch.next();
    assert_eq!((left.status, left.flags, left.value), (Status::Absent, Flags::CANCELLED, None));
}

/// The first cell's cancel is called right after the second cell's load,
/// before the loop has run that load: at the call, the first cell is the
/// only one waiting, so the job takes nothing more (its completion is
/// refused). The second load, when it runs, does not join a job all of
/// whose cells are leaving: it starts a job of its own.
#[test]
fn a_load_called_before_the_only_waiting_cell_left_starts_its_own_job() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (first, first_events) = runtime.loadable().unwrap();
    let (second, second_events) = runtime.loadable().unwrap();
    let (mut first_watch, mut second_watch) = (Watch::new(first_events), Watch::new(second_events));
    let shared = LoadOptions::new().share(true);
    first.load_with(&loader, b"key", &shared).unwrap();
    let job = jobs.next();
    second.load_with(&loader, b"key", &shared).unwrap();
    first.cancel().unwrap();
    let refused = job.succeed(b"too late");
    assert!(refused.is_err(), "the job's only cell had left: {refused:?}");
    assert_eq!(first_watch.next().status, Status::Loading);
    assert_eq!(first_watch.next().flags, Flags::CANCELLED);
    assert_eq!(second_watch.next().status, Status::Loading);
    let own = jobs.next();
    own.succeed(b"its own").unwrap();
    let settled = second_watch.events.wait_until(loadstate::Event::is_settled, Duration::from_secs(10));
    assert_eq!(settled.unwrap().value.as_deref(), Some(&b"its own"[..]));
}
