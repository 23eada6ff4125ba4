//! Writes (`Process::mutate`): optimistic values, rollbacks, overlapping
//! writes, newer data, populate and invalidation through the safe API.

#![allow(clippy::similar_names)] // bindings named in pairs on purpose (first/second)

mod common;

use std::path::PathBuf;

use common::{JobQueue, Watch, job_queue};
use loadstate::{
    Cache, ErrorKind, Flags, LoadOptions, Loader, MUTATION_KEYS_MAX, MemoryCacheOptions, Mutation,
    PersistentCacheOptions, Process, Runtime, Status,
};

/// A runtime, a memory cache, a cell that loaded `v0` under `k` through
/// it, a process cell, and loaders whose jobs the test ends.
struct World {
    runtime: Runtime,
    cache: Cache,
    reads: Loader,
    read_jobs: JobQueue,
    writes: Loader,
    write_jobs: JobQueue,
    view: loadstate::Loadable,
    watch: Watch,
    process: Process,
    process_watch: Watch,
}

fn world() -> World {
    let runtime = Runtime::new().unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::default()).unwrap();
    let world_from = |runtime: Runtime, cache: Cache| {
        let (reads, read_jobs) = job_queue(&runtime);
        let (writes, write_jobs) = job_queue(&runtime);
        let (view, events) = runtime.loadable().unwrap();
        let (process, process_events) = runtime.process().unwrap();
        World {
            runtime,
            cache,
            reads,
            read_jobs,
            writes,
            write_jobs,
            view,
            watch: Watch::new(events),
            process,
            process_watch: Watch::new(process_events),
        }
    };
    let mut w = world_from(runtime, cache);
    view_load(&mut w, b"v0");
    w
}

fn view_load(w: &mut World, value: &[u8]) {
    let options = LoadOptions::new().cache(&w.cache).cache_key(b"k".to_vec());
    w.view.load_with(&w.reads, value, &options).unwrap();
    w.read_jobs.next().succeed(value).unwrap();
    assert_eq!(w.watch.wait_settled().value.as_deref(), Some(value));
}

fn write_of(cache: &Cache, value: &[u8]) -> Mutation {
    Mutation::new().optimistic(cache, b"k", value)
}

fn cached(cache: &Cache, key: &[u8]) -> Option<Vec<u8>> {
    cache.get(key).unwrap().map(|entry| entry.value)
}

#[test]
fn the_optimistic_value_shows_at_once_and_a_failure_rolls_back_exactly() {
    let mut w = world();
    let before = w.cache.get(b"k").unwrap().unwrap();
    w.process.mutate(0, &w.writes, b"save", &write_of(&w.cache, b"opt")).unwrap();
    let shown = w.watch.next();
    assert_eq!(
        (shown.status, shown.value.as_deref(), shown.flags),
        (Status::Loaded, Some(&b"opt"[..]), Flags::OPTIMISTIC)
    );
    assert!(shown.is_optimistic());
    assert_eq!(shown.request.as_deref(), Some(&b"v0"[..]));
    let job = w.write_jobs.next();
    assert_eq!(cached(&w.cache, b"k").as_deref(), Some(&b"opt"[..]));
    job.fail(7, "refused").unwrap();
    let back = w.watch.next();
    assert_eq!((back.value.as_deref(), back.flags), (Some(&b"v0"[..]), Flags::ROLLED_BACK));
    assert!(back.is_rolled_back());
    assert_eq!(w.cache.get(b"k").unwrap().unwrap(), before);
    assert_eq!(w.process_watch.wait_settled().status, Status::Failed);
}

#[test]
fn two_failing_writes_leave_the_confirmed_value_in_either_order() {
    for newer_first in [false, true] {
        let mut w = world();
        let (other, _other_events) = w.runtime.process().unwrap();
        w.process.mutate(0, &w.writes, b"1", &write_of(&w.cache, b"opt1")).unwrap();
        let first = w.write_jobs.next();
        other.mutate(0, &w.writes, b"2", &write_of(&w.cache, b"opt2")).unwrap();
        let second = w.write_jobs.next();
        assert_eq!(w.watch.next().value.as_deref(), Some(&b"opt1"[..]));
        assert_eq!(w.watch.next().value.as_deref(), Some(&b"opt2"[..]));
        let order = if newer_first { [second, first] } else { [first, second] };
        for job in order {
            job.fail(7, "refused").unwrap();
        }
        let last = loop {
            let event = w.watch.next();
            if event.value.as_deref() == Some(&b"v0"[..]) {
                break event;
            }
        };
        assert_eq!(last.flags, Flags::ROLLED_BACK);
        assert_eq!(cached(&w.cache, b"k").as_deref(), Some(&b"v0"[..]));
    }
}

#[test]
fn a_load_finishing_during_the_write_stays_after_its_failure() {
    let mut w = world();
    let options = LoadOptions::new().cache(&w.cache).cache_key(b"k".to_vec());
    w.view.load_with(&w.reads, b"r", &options).unwrap();
    let read = w.read_jobs.next();
    w.process.mutate(0, &w.writes, b"save", &write_of(&w.cache, b"opt")).unwrap();
    let job = w.write_jobs.next();
    read.succeed(b"newer").unwrap();
    job.fail(7, "refused").unwrap();
    assert_eq!(w.process_watch.wait_settled().status, Status::Failed);
    assert_eq!(cached(&w.cache, b"k").as_deref(), Some(&b"newer"[..]));
    assert_eq!(w.view.get().unwrap().value.as_deref(), Some(&b"newer"[..]));
}

#[test]
fn cancel_of_the_process_cell_rolls_back() {
    let mut w = world();
    w.process.mutate(0, &w.writes, b"save", &write_of(&w.cache, b"opt")).unwrap();
    let _job = w.write_jobs.next();
    assert!(w.watch.next().is_optimistic());
    w.process.cancel().unwrap();
    let back = w.watch.next();
    assert_eq!((back.value.as_deref(), back.flags), (Some(&b"v0"[..]), Flags::ROLLED_BACK));
}

#[test]
fn populate_stores_the_result_and_a_persistent_cache_never_holds_the_optimistic_value() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mutations-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runtime = Runtime::new().unwrap();
    let disk = runtime.persistent_cache(&PersistentCacheOptions::new(dir.join("c.db"))).unwrap();
    disk.put(b"k", b"v0").unwrap();
    let memory = runtime.memory_cache(&MemoryCacheOptions::default()).unwrap();
    let (writes, write_jobs) = job_queue(&runtime);
    let (process, events) = runtime.process().unwrap();
    let mut watch = Watch::new(events);
    let write = Mutation::new().optimistic(&disk, b"k", b"opt").optimistic(&memory, b"m", b"opt").populate(true);
    process.mutate(3, &writes, b"save", &write).unwrap();
    let job = write_jobs.next();
    assert_eq!(cached(&disk, b"k").as_deref(), Some(&b"v0"[..]));
    assert_eq!(cached(&memory, b"m").as_deref(), Some(&b"opt"[..]));
    job.succeed(b"server").unwrap();
    let done = watch.wait_settled();
    assert_eq!((done.status, done.kind), (Status::Finished, 3));
    assert_eq!(cached(&disk, b"k").as_deref(), Some(&b"server"[..]));
    assert_eq!(cached(&memory, b"m").as_deref(), Some(&b"server"[..]));
    drop(disk);
    drop(runtime);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn success_invalidates_prefixes_and_their_cells_reload() {
    let mut w = world();
    let write = Mutation::new().optimistic(&w.cache, b"item", b"opt").invalidate(&w.cache, b"k");
    w.process.mutate(0, &w.writes, b"save", &write).unwrap();
    w.write_jobs.next().succeed(b"").unwrap();
    let stale = w.watch.next();
    assert!(stale.is_stale() && stale.flags.contains(Flags::REFRESHING));
    w.read_jobs.next().succeed(b"v1").unwrap();
    assert_eq!(w.watch.next().value.as_deref(), Some(&b"v1"[..]));
}

#[test]
fn bad_writes_fail_and_show_nothing() {
    let w = world();
    let mut many = Mutation::new();
    for i in 0..=MUTATION_KEYS_MAX {
        many = many.optimistic(&w.cache, format!("k{i}").as_bytes(), b"v");
    }
    let error = w.process.mutate(0, &w.writes, b"", &many).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    let other = Runtime::new().unwrap();
    let foreign = other.memory_cache(&MemoryCacheOptions::default()).unwrap();
    let error = w.process.mutate(0, &w.writes, b"", &write_of(&foreign, b"x")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert!(w.write_jobs.try_next().is_none());
    w.watch.expect_nothing_queued();
    assert_eq!(cached(&w.cache, b"k").as_deref(), Some(&b"v0"[..]));
    drop(w.view);
}
