//! Caches and shared loads through the safe API.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{DEADLINE, Watch, job_queue};
use loadstate::{
    ErrorKind, EventType, Flags, LoadOptions, MemoryCacheOptions, PersistentCacheOptions, Runtime, Status,
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
    for (_, events) in cells.iter() {
        let loaded = events.wait_until(|e| e.is_settled(), DEADLINE).unwrap();
        assert_eq!(loaded.value.as_deref(), Some(&b"for everyone"[..]));
    }
    assert!(jobs.try_next().is_none(), "one job for the three loads");
}
