//! Runtime metrics through the safe API.

mod common;

use std::time::Duration;

use common::{Watch, job_queue};
use loadstate::{Delivery, LoadOptions, MemoryCacheOptions, Runtime, Status};

#[test]
fn stats_count_loads_per_runtime_and_per_loader() {
    let runtime = Runtime::new().unwrap();
    // The binding's own cell (for cleanups) is alive from the start.
    let base = runtime.stats().unwrap().cells_alive;
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"a").unwrap();
    watch.next();
    jobs.next().succeed(b"A").unwrap();
    assert_eq!(watch.next().status, Status::Loaded);
    let options = LoadOptions::new().retries(1).retry_base(Duration::from_millis(1));
    cell.load_with(&loader, b"b", &options).unwrap();
    watch.next();
    jobs.next().fail(1, "once").unwrap();
    watch.next();
    jobs.next().fail(1, "twice").unwrap();
    assert_eq!(watch.next().status, Status::Error);
    cell.load(&loader, b"c").unwrap();
    watch.next();
    let running = jobs.next();
    cell.cancel().unwrap();
    watch.next();
    drop(running);

    let stats = runtime.stats().unwrap();
    assert!(stats.enabled);
    assert_eq!(stats.cells_alive, base + 1);
    let loads = stats.loads;
    assert_eq!((loads.started, loads.succeeded, loads.failed, loads.cancelled, loads.timed_out), (3, 1, 1, 1, 0));
    assert_eq!((loads.retried, loads.jobs_started, loads.jobs_in_flight), (1, 4, 0));
    assert_eq!(loads.latency_count, 3);
    assert_eq!(loads.latency_buckets.iter().sum::<u64>(), 3);
    assert_eq!(stats.loaders.get(&loader.id()), Some(&loads));
    assert_eq!(stats.events_delivered, 7);
}

#[test]
fn stats_list_caches_and_a_runtime_without_metrics_counts_nothing() {
    let runtime = Runtime::without_metrics(Delivery::Loop).unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    cache.put(b"k", b"v").unwrap();
    assert!(cache.get(b"k").unwrap().is_some());
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"a").unwrap();
    watch.next();
    jobs.next().succeed(b"A").unwrap();
    watch.next();
    let stats = runtime.stats().unwrap();
    assert!(!stats.enabled);
    assert_eq!((stats.loads.started, stats.events_delivered), (0, 0));
    assert_eq!(stats.caches.get(&cache.id()), Some(&cache.stats().unwrap()));
    assert_eq!(stats.caches[&cache.id()].hits, 1);
}

#[test]
fn metrics_text_names_each_loader() {
    let runtime = Runtime::new().unwrap();
    let loaders: Vec<_> = (0..20).map(|_| runtime.loader(|job| job.succeed(job.request()).unwrap()).unwrap()).collect();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loaders[3], b"x").unwrap();
    watch.next();
    assert_eq!(watch.next().status, Status::Loaded);
    let text = runtime.metrics_text().unwrap();
    assert!(text.len() > 16 * 1024, "the first buffer was too small: {} bytes", text.len());
    let started = format!("\nloadstate_loads_started_total{{loader=\"{}\"}} 1\n", loaders[3].id());
    assert!(text.contains(&started), "{text}");
    assert!(text.contains("\n# TYPE loadstate_load_duration_seconds histogram\n"));
    assert!(text.ends_with('\n'));
}

#[test]
fn loads_a_cache_answers_alone_count_as_from_cache() {
    use loadstate::CachePolicy;
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    cache.put(b"k", b"cached").unwrap();
    let (loader, _jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    let options = LoadOptions::new()
        .cache(&cache)
        .cache_key(b"k".to_vec())
        .cache_policy(CachePolicy::CacheFirst)
        .fresh(Duration::from_secs(60));
    cell.load_with(&loader, b"a", &options).unwrap();
    let event = watch.next();
    assert_eq!(event.status, Status::Loaded);
    assert!(event.is_from_cache());
    let only = LoadOptions::new().cache(&cache).cache_key(b"absent".to_vec()).cache_policy(CachePolicy::CacheOnly);
    cell.load_with(&loader, b"b", &only).unwrap();
    assert_eq!(watch.next().status, Status::Error);

    let stats = runtime.stats().unwrap();
    assert_eq!((stats.loads.started, stats.loads.from_cache, stats.loads.latency_count), (2, 2, 0));
    assert_eq!(stats.loaders[&loader.id()].from_cache, 2);
    assert_eq!(stats.loads.jobs_started, 0);
}
