//! A short tour: a loader that works on its own thread, a cell that shows
//! its progress, a refresh over old data, a cancel, a cached value that is
//! shown at once and then renewed, and a process run.
//!
//! Run with `cargo run --offline --example tour`.

#![allow(clippy::format_push_string)] // building test output; speed does not matter here

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use loadstate::{CachePolicy, Event, EventType, Flags, Job, LoadOptions, MemoryCacheOptions, Runtime, Status};

const PATIENCE: Duration = Duration::from_secs(10);

fn describe(event: &Event) -> String {
    let mut text = format!("#{} {:?}", event.seq, event.status);
    match event.event_type {
        EventType::Progress { done, total } => text += &format!(" progress {done}/{total}"),
        EventType::Interrupt { elapsed_ms } => text += &format!(" still loading after {elapsed_ms} ms"),
        _ => {}
    }
    if !event.flags.is_empty() {
        text += &format!(" {:?}", event.flags);
    }
    if let Some(value) = &event.value {
        text += &format!(" value={:?}", String::from_utf8_lossy(value));
    }
    if let Some(error) = &event.error {
        text += &format!(" error={:?} {} {:?}", error.domain, error.code, error.message);
    }
    text
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::new()?;

    // Jobs are handed to a worker thread, which streams words back.
    let (work, queue) = mpsc::channel::<Job>();
    let worker = thread::spawn(move || {
        for job in queue {
            let text = String::from_utf8_lossy(job.request()).into_owned();
            if text == "wait" {
                // Works until it is told to stop.
                let (stop_tx, stop_rx) = mpsc::channel::<()>();
                job.on_cancel(move || drop(stop_tx)).ok();
                let _ = stop_rx.recv_timeout(PATIENCE);
                continue;
            }
            let words: Vec<&str> = text.split(' ').collect();
            let mut shown = String::new();
            for (i, word) in words.iter().enumerate() {
                if !shown.is_empty() {
                    shown.push(' ');
                }
                shown.push_str(word);
                job.progress(i as u64 + 1, words.len() as u64)?;
                job.yield_value(shown.as_bytes())?;
            }
            job.finish()?;
        }
        Ok::<(), loadstate::Error>(())
    });
    let words = runtime.loader(move |job| work.send(job).expect("the worker runs"))?;

    let (cell, events) = runtime.loadable()?;
    let settled = |what: &str| -> Result<(), Box<dyn std::error::Error>> {
        println!("-- {what}");
        loop {
            let event = events.recv_timeout(PATIENCE)?;
            println!("   {}", describe(&event));
            if event.is_settled() || event.flags.contains(Flags::CANCELLED) {
                return Ok(());
            }
        }
    };

    cell.load(&words, b"hello from the loop")?;
    settled("load")?;

    cell.refresh()?;
    settled("refresh: the old value stays visible, flagged REFRESHING")?;

    let patient = LoadOptions::new().interrupts([Duration::from_millis(50)]);
    cell.load_with(&words, b"wait", &patient)?;
    println!("-- a slow load, with an interrupt after 50 ms");
    loop {
        let event = events.recv_timeout(PATIENCE)?;
        println!("   {}", describe(&event));
        if matches!(event.event_type, EventType::Interrupt { .. }) {
            break;
        }
    }
    cell.cancel()?;
    settled("cancel: the value from before the load comes back")?;

    let cache = runtime.memory_cache(&MemoryCacheOptions::new())?;
    cache.put(b"greeting", b"hello from the cache")?;
    let cached = LoadOptions::new().cache(&cache).cache_key("greeting").cache_policy(CachePolicy::CacheThenLoad);
    cell.load_with(&words, b"hello from the loader", &cached)?;
    println!("-- cache then load: the cached value at once, then a silent load renews it");
    loop {
        let event = events.recv_timeout(PATIENCE)?;
        println!("   {}", describe(&event));
        if event.is_settled() && !event.is_from_cache() {
            break;
        }
    }
    cache.invalidate(b"greet")?;
    settled("invalidate: the cell showing the entry reloads it, flagged STALE")?;

    let (process, process_events) = runtime.process()?;
    let fails = runtime.loader(|job| {
        let _ = job.fail(2, "disk full");
    })?;
    process.run(1, &fails, b"")?;
    println!("-- process");
    let failed = process_events.wait_until(|e| e.status == Status::Failed, PATIENCE)?;
    println!("   {}", describe(&failed));

    drop(runtime);
    worker.join().expect("the worker ends")?;
    Ok(())
}
