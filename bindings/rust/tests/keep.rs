//! Keeping the previous value while another request loads, placeholders,
//! and the grace of memory cache entries no cell observes.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{DEADLINE, Setup, Watch, setup};
use loadstate::{Cache, CachePolicy, Flags, LoadOptions, LoadWaitError, MemoryCacheOptions, Status};

const KEPT: Flags = Flags::from_bits(Flags::PREVIOUS.bits() | Flags::REFRESHING.bits());
const SHOWN: Flags = Flags::from_bits(Flags::PLACEHOLDER.bits() | Flags::REFRESHING.bits());
const GRACE: Duration = Duration::from_millis(150);

fn loaded_a() -> Setup {
    let mut s = setup();
    s.cell.load(&s.loader, b"a").unwrap();
    s.jobs.next().succeed(b"A").unwrap();
    assert_eq!(s.watch.wait_settled().value.as_deref(), Some(&b"A"[..]));
    s
}

fn keep() -> LoadOptions {
    LoadOptions::new().keep_previous(true)
}

#[test]
fn keep_previous_across_a_request_change() {
    let mut s = loaded_a();
    s.cell.load_with(&s.loader, b"b", &keep()).unwrap();
    let kept = s.watch.next();
    assert_eq!((kept.status, kept.flags), (Status::Loaded, KEPT));
    assert_eq!((kept.value.as_deref(), kept.request.as_deref()), (Some(&b"A"[..]), Some(&b"a"[..])));
    assert!(kept.is_previous() && !kept.is_placeholder() && !kept.is_settled());
    s.jobs.next().succeed(b"B").unwrap();
    let done = s.watch.next();
    assert_eq!((done.status, done.flags), (Status::Loaded, Flags::NONE));
    assert_eq!((done.value.as_deref(), done.request.as_deref()), (Some(&b"B"[..]), Some(&b"b"[..])));
}

#[test]
fn keep_previous_failure_and_cancel() {
    let mut s = loaded_a();
    s.cell.load_with(&s.loader, b"b", &keep()).unwrap();
    assert!(s.watch.next().is_previous());
    s.jobs.next().fail(7, "no").unwrap();
    let failed = s.watch.next();
    assert_eq!((failed.status, failed.value.as_deref()), (Status::Error, None));
    assert_eq!(failed.error.map(|e| e.code), Some(7));
    s.cell.load(&s.loader, b"a").unwrap();
    s.jobs.next().succeed(b"A").unwrap();
    s.watch.wait_settled();
    s.cell.load_with(&s.loader, b"c", &keep()).unwrap();
    assert!(s.watch.next().is_previous());
    s.cell.cancel().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::CANCELLED));
    assert_eq!((restored.value.as_deref(), restored.request.as_deref()), (Some(&b"A"[..]), Some(&b"a"[..])));
}

/// What a load future reads: the outcome of its own request, never the
/// previous value shown meanwhile.
#[test]
fn keep_previous_awaited_outcome_is_the_new_requests() {
    let s = loaded_a();
    s.cell.load_with(&s.loader, b"b", &keep()).unwrap();
    // The outcome comes after the previous value, both queued in the stream.
    s.jobs.next().succeed(b"B").unwrap();
    let outcome = s.watch.events.wait_for_load(b"b", DEADLINE).expect("the outcome");
    assert_eq!((outcome.value.as_deref(), outcome.flags), (Some(&b"B"[..]), Flags::NONE));
    s.cell.load_with(&s.loader, b"c", &keep()).unwrap();
    s.jobs.next().fail(3, "down").unwrap();
    let failed = s.watch.events.wait_for_load(b"c", DEADLINE).expect("the outcome");
    assert_eq!((failed.status, failed.value.as_deref()), (Status::Error, None));
    assert!(s.watch.events.try_recv().is_err(), "nothing after the outcome");
}

#[test]
fn keep_placeholder_shown_then_replaced_and_never_cached_nor_shared() {
    let mut s = setup();
    let cache = s.runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let options = LoadOptions::new().share(true).cache(&cache).cache_policy(CachePolicy::CacheFirst).placeholder(b"ph".to_vec());
    s.cell.load_with(&s.loader, b"k", &options).unwrap();
    let shown = s.watch.next();
    assert_eq!((shown.status, shown.flags), (Status::Loaded, SHOWN));
    assert_eq!((shown.value.as_deref(), shown.request.as_deref()), (Some(&b"ph"[..]), Some(&b"k"[..])));
    assert!(shown.is_placeholder());
    let job = s.jobs.next();
    let (other, other_events) = s.runtime.loadable().unwrap();
    let mut other_watch = Watch::new(other_events);
    other.load_with(&s.loader, b"k", &LoadOptions::new().share(true).cache(&cache)).unwrap();
    assert_eq!(other_watch.next().status, Status::Loading);
    assert!(cache.get(b"k").unwrap().is_none());
    job.fail(3, "down").unwrap();
    assert_eq!(s.watch.next().status, Status::Error);
    assert_eq!(other_watch.next().status, Status::Error);
    assert!(s.jobs.try_next().is_none(), "one job for both cells");
    assert!(cache.get(b"k").unwrap().is_none());
    s.cell.load_with(&s.loader, b"k", &options).unwrap();
    assert!(s.watch.next().is_placeholder());
    s.jobs.next().succeed(b"value").unwrap();
    let done = s.watch.next();
    assert_eq!((done.flags, done.value.as_deref()), (Flags::NONE, Some(&b"value"[..])));
    assert_eq!(cache.get(b"k").unwrap().map(|e| e.value), Some(b"value".to_vec()));
}

fn wait_gone(cache: &Cache, key: &[u8]) -> Instant {
    let deadline = Instant::now() + DEADLINE;
    while cache.get(key).unwrap().is_some() {
        assert!(Instant::now() < deadline, "still cached");
        thread::sleep(Duration::from_millis(5));
    }
    Instant::now()
}

#[test]
fn keep_unwatched_entry_dropped_after_its_grace() {
    let s = setup();
    let cache = s.runtime.memory_cache(&MemoryCacheOptions::new().unobserved(GRACE)).unwrap();
    let put_at = Instant::now();
    cache.put(b"k", b"v").unwrap();
    assert!(wait_gone(&cache, b"k").duration_since(put_at) + Duration::from_millis(2) >= GRACE);
    let stats = cache.stats().unwrap();
    assert_eq!((stats.expirations, stats.entries), (1, 0));
}

#[test]
fn keep_watched_entry_stays_until_its_cell_is_dropped() {
    let mut s = setup();
    let cache = s.runtime.memory_cache(&MemoryCacheOptions::new().unobserved(GRACE)).unwrap();
    s.cell.load_with(&s.loader, b"w", &LoadOptions::new().cache(&cache)).unwrap();
    s.jobs.next().succeed(b"value").unwrap();
    s.watch.wait_settled();
    thread::sleep(GRACE * 2);
    assert!(cache.get(b"w").unwrap().is_some());
    let Setup { cell, watch, runtime: _runtime, .. } = s;
    let dropped_at = Instant::now();
    drop(cell);
    drop(watch);
    assert!(wait_gone(&cache, b"w").duration_since(dropped_at) + Duration::from_millis(2) >= GRACE);
    assert_eq!(cache.stats().unwrap().expirations, 1);
}

/// The three ways a load of another request may show something while it
/// runs: loading, the previous value, a placeholder.
fn shows() -> [LoadOptions; 3] {
    [LoadOptions::new(), keep(), LoadOptions::new().placeholder(b"ph".to_vec())]
}

/// A job that finishes without a value brings back the state from before
/// the load, flagged `NO_VALUE`: the waiter learns that, never taking the
/// previous request's value for its own, with or without `keep_previous` or
/// a placeholder, for another request or the same one.
#[test]
fn load_ending_without_a_value_never_answers_with_the_previous_value() {
    for options in shows() {
        for request in [&b"b"[..], &b"a"[..]] {
            let s = loaded_a();
            s.cell.load_with(&s.loader, request, &options).unwrap();
            s.jobs.next().finish().unwrap();
            let restored = match s.watch.events.wait_for_load(request, DEADLINE) {
                Err(LoadWaitError::NoValue(restored)) => restored,
                other => panic!("{options:?} {request:?}: expected NoValue, got {other:?}"),
            };
            assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::NO_VALUE));
            assert!(restored.is_no_value());
            assert_eq!((restored.value.as_deref(), restored.request.as_deref()), (Some(&b"A"[..]), Some(&b"a"[..])));
            assert_eq!(s.cell.get().unwrap().value.as_deref(), Some(&b"A"[..]));
        }
    }
}

#[test]
fn first_load_ending_without_a_value_is_no_value_over_absent() {
    for options in shows() {
        let s = setup();
        s.cell.load_with(&s.loader, b"a", &options).unwrap();
        s.jobs.next().finish().unwrap();
        match s.watch.events.wait_for_load(b"a", DEADLINE) {
            Err(LoadWaitError::NoValue(restored)) => {
                assert_eq!((restored.status, restored.flags, restored.value), (Status::Absent, Flags::NO_VALUE, None));
            }
            other => panic!("{options:?}: expected NoValue, got {other:?}"),
        }
    }
}

#[test]
fn a_yield_then_finish_is_the_loads_own_value() {
    let s = loaded_a();
    s.cell.load_with(&s.loader, b"b", &keep()).unwrap();
    let job = s.jobs.next();
    job.yield_value(b"B1").unwrap();
    job.finish().unwrap();
    let outcome = s.watch.events.wait_for_load(b"b", DEADLINE).expect("the outcome");
    assert_eq!((outcome.value.as_deref(), outcome.flags), (Some(&b"B1"[..]), Flags::NONE));
}
