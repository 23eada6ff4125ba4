//! Scheduling: loader limits, priorities, queued states, polling, prefetch.

#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{DEADLINE, Watch};
use loadstate::{
    CachePolicy, ErrorKind, ExecOptions, FileOptions, Flags, HttpOptions, Job, Limits, LoadOptions, Loader,
    MemoryCacheOptions, Runtime, Status,
};

/// A loader held to `limits` whose jobs go to the test, with their requests.
fn limited(runtime: &Runtime, limits: Limits) -> (Loader, mpsc::Receiver<Job>) {
    let (tx, rx) = mpsc::channel::<Job>();
    let loader = runtime
        .loader_with_limits(limits, move |job| {
            let _ = tx.send(job);
        })
        .expect("loader");
    (loader, rx)
}

fn next_job(jobs: &mpsc::Receiver<Job>) -> Job {
    jobs.recv_timeout(DEADLINE).expect("a job should start")
}

/// Waits until `ms` have passed, on an event: a load that times out.
fn wait_ms(runtime: &Runtime, ms: u64) {
    let (never, _jobs) = limited(runtime, Limits::new());
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load_with(&never, b"clock", &LoadOptions::new().timeout(Duration::from_millis(ms))).unwrap();
    assert_eq!(watch.wait_settled().status, Status::Error);
}

#[test]
fn loads_over_the_limit_are_queued_and_start_by_priority() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = limited(&runtime, Limits::new().max_concurrent(1));
    let (first, _first_events) = runtime.loadable().unwrap();
    first.load(&loader, b"first").unwrap();
    let running = next_job(&jobs);
    let mut cells = Vec::new();
    for (request, priority) in [(&b"low"[..], -1), (b"high", 5), (b"moved", 0)] {
        let (cell, events) = runtime.loadable().unwrap();
        cell.load_with(&loader, request, &LoadOptions::new().priority(priority)).unwrap();
        let mut watch = Watch::new(events);
        let event = watch.next();
        assert_eq!(event.status, Status::Loading);
        assert!(event.flags.contains(Flags::QUEUED), "{event:?}");
        cells.push((cell, watch));
    }
    cells[2].0.set_priority(9).unwrap();
    running.succeed(b"v").unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        let job = next_job(&jobs);
        order.push(job.request().to_vec());
        job.succeed(b"v").unwrap();
    }
    assert_eq!(order, [b"moved".to_vec(), b"high".to_vec(), b"low".to_vec()]);
    for (_, watch) in &mut cells {
        let started = watch.next();
        assert_eq!(started.status, Status::Loading);
        assert!(!started.flags.contains(Flags::QUEUED));
        assert_eq!(watch.next().status, Status::Loaded);
    }
}

#[test]
fn a_cancelled_queued_load_never_reaches_the_loader() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = limited(&runtime, Limits::new().max_concurrent(1));
    let (a, _a_events) = runtime.loadable().unwrap();
    let (b, b_events) = runtime.loadable().unwrap();
    let mut b_watch = Watch::new(b_events);
    a.load(&loader, b"a").unwrap();
    let running = next_job(&jobs);
    b.load(&loader, b"b").unwrap();
    assert!(b_watch.next().flags.contains(Flags::QUEUED));
    b.cancel().unwrap();
    let restored = b_watch.next();
    assert!(restored.flags.contains(Flags::CANCELLED));
    assert_eq!(restored.status, Status::Absent);
    running.succeed(b"v").unwrap();
    a.load(&loader, b"after").unwrap();
    assert_eq!(next_job(&jobs).request(), b"after");
}

#[test]
fn the_rate_limit_spaces_the_starts() {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel::<Instant>();
    let loader = runtime
        .loader_with_limits(Limits::new().rate(40, 2), move |job| {
            let _ = tx.send(Instant::now());
            let _ = job.succeed(b"v");
        })
        .unwrap();
    let mut cells = Vec::new();
    for _ in 0..10 {
        let (cell, events) = runtime.loadable().unwrap();
        cell.load(&loader, b"r").unwrap();
        cells.push((cell, Watch::new(events)));
    }
    let starts: Vec<Instant> = (0..10).map(|_| rx.recv_timeout(DEADLINE).unwrap()).collect();
    // Two at once, then eight at 40 per second: 200 ms, with a generous tolerance below.
    assert!(starts[9] - starts[0] >= Duration::from_millis(150), "{:?}", starts[9] - starts[0]);
    for (_, watch) in &mut cells {
        assert_eq!(watch.wait_settled().status, Status::Loaded);
    }
}

#[test]
fn polling_refreshes_and_stops_on_cancel_and_pauses_with_the_runtime() {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    let loader = runtime
        .loader(move |job| {
            let _ = tx.send(());
            let _ = job.succeed(b"v");
        })
        .unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let watch = Watch::new(events);
    cell.load_with(&loader, b"p", &LoadOptions::new().refresh_interval(Duration::from_millis(10))).unwrap();
    for _ in 0..3 {
        rx.recv_timeout(DEADLINE).unwrap();
    }
    runtime.pause_polling().unwrap();
    wait_ms(&runtime, 30);
    while rx.try_recv().is_ok() {}
    wait_ms(&runtime, 60);
    assert!(rx.try_recv().is_err(), "no poll while paused");
    runtime.resume_polling().unwrap();
    rx.recv_timeout(DEADLINE).unwrap();
    rx.recv_timeout(DEADLINE).unwrap();
    cell.cancel().unwrap();
    wait_ms(&runtime, 30);
    while rx.try_recv().is_ok() {}
    wait_ms(&runtime, 60);
    assert!(rx.try_recv().is_err(), "no poll after cancel");
    let refreshing = std::iter::from_fn(|| watch.events.try_recv().ok()).any(|e| e.flags.contains(Flags::REFRESHING));
    assert!(refreshing, "a poll is a silent refresh");
}

#[test]
fn prefetch_then_load_calls_the_loader_once() {
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = limited(&runtime, Limits::new());
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let options = LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheFirst).fresh(Duration::from_secs(60));
    runtime.prefetch(&loader, b"k", &options).unwrap();
    let job = next_job(&jobs);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load_with(&loader, b"k", &options).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    job.succeed(b"value").unwrap();
    let loaded = watch.wait_settled();
    assert_eq!(loaded.value.as_deref(), Some(&b"value"[..]));
    let (later, later_events) = runtime.loadable().unwrap();
    let mut later_watch = Watch::new(later_events);
    later.load_with(&loader, b"k", &options).unwrap();
    let cached = later_watch.wait_settled();
    assert!(cached.flags.contains(Flags::FROM_CACHE));
    assert!(jobs.try_recv().is_err(), "the loader ran once");
    let no_cache = runtime.prefetch(&loader, b"k", &LoadOptions::new()).unwrap_err();
    assert_eq!(no_cache.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn built_in_loaders_take_limits() {
    let runtime = Runtime::new().unwrap();
    runtime.file_loader(&FileOptions::new().limits(Limits::new().max_concurrent(2))).unwrap();
    runtime.exec_loader(&ExecOptions::new().limits(Limits::new().rate(5, 5))).unwrap();
    runtime.http_loader(&HttpOptions::new().limits(Limits::new().max_concurrent(8)).max_per_host(2)).unwrap();
    let (process, _events) = runtime.process().unwrap();
    process.set_priority(3).unwrap();
}
