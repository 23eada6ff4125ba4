//! 10,000 loads from 8 threads, every one accounted for.
//!
//! Each thread owns a cell and loads it in bursts: every load of a burst
//! supersedes the one before, and the thread then waits for the burst's
//! last value. Half the jobs complete inside the loader closure, half on
//! worker threads. At the end:
//!
//! * every load shows exactly one LOADING event with its request, in order;
//! * every started job either succeeded (its value shows exactly once) or
//!   was cancelled (its completion returned Cancelled and its hook ran
//!   exactly once, or it was cancelled before the hook was added);
//! * the value of a cancelled job never shows; every burst ends loaded
//!   with its last request.

#![allow(clippy::needless_pass_by_value)] // helpers take owned values to keep call sites short
#![allow(clippy::too_many_lines)] // one scenario per test, read from top to bottom

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;

use common::DEADLINE;
use loadstate::{ErrorKind, Event, EventType, Job, Runtime, Status};

const THREADS: usize = 8;
const LOADS_PER_THREAD: usize = 1250;
const BURST: usize = 5;
const WORKERS: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Outcome {
    Succeeded,
    /// Completion returned Cancelled after the hook was added.
    CancelledWithHook,
    /// The job no longer ran when the hook was to be added.
    CancelledBeforeHook,
}

#[derive(Default)]
struct Ledger {
    outcomes: Mutex<HashMap<Vec<u8>, Outcome>>,
    hooks: Mutex<HashMap<Vec<u8>, usize>>,
    started: AtomicUsize,
}

fn complete(job: Job, ledger: &Arc<Ledger>) {
    ledger.started.fetch_add(1, Ordering::Relaxed);
    let request = job.request().to_vec();
    let hook_ledger = Arc::clone(ledger);
    let hook_request = request.clone();
    let outcome = match job.on_cancel(move || {
        *hook_ledger.hooks.lock().unwrap().entry(hook_request).or_default() += 1;
    }) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Cancelled);
            Outcome::CancelledBeforeHook
        }
        Ok(()) => match job.succeed(&request) {
            Ok(()) => Outcome::Succeeded,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Cancelled);
                Outcome::CancelledWithHook
            }
        },
    };
    let previous = ledger.outcomes.lock().unwrap().insert(request, outcome);
    assert!(previous.is_none(), "a job started twice");
}

#[test]
fn ten_thousand_loads_from_eight_threads_are_all_accounted_for() {
    let runtime = Runtime::new().unwrap();
    let ledger = Arc::new(Ledger::default());

    let (work_tx, work_rx) = mpsc::channel::<Job>();
    let work_rx = Arc::new(Mutex::new(work_rx));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (work_rx, ledger) = (Arc::clone(&work_rx), Arc::clone(&ledger));
            thread::spawn(move || {
                loop {
                    let job = work_rx.lock().unwrap().recv();
                    match job {
                        Ok(job) => complete(job, &ledger),
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();

    let loader = {
        let ledger = Arc::clone(&ledger);
        let work_tx = Mutex::new(work_tx);
        runtime
            .loader(move |job| {
                let n: usize = std::str::from_utf8(job.request()).unwrap().rsplit('-').next().unwrap().parse().unwrap();
                if n % 2 == 0 {
                    complete(job, &ledger);
                } else {
                    work_tx.lock().unwrap().send(job).unwrap();
                }
            })
            .unwrap()
    };
    let loader = Arc::new(loader);
    let runtime = Arc::new(runtime);

    let loaders: Vec<_> = (0..THREADS)
        .map(|t| {
            let (runtime, loader) = (Arc::clone(&runtime), Arc::clone(&loader));
            thread::spawn(move || {
                let (cell, events) = runtime.loadable().unwrap();
                let mut seen: Vec<Event> = Vec::new();
                let mut issued: Vec<Vec<u8>> = Vec::new();
                let mut burst_ends: Vec<Vec<u8>> = Vec::new();
                for burst in 0..LOADS_PER_THREAD / BURST {
                    for i in 0..BURST {
                        let request = format!("t{t}-{}", burst * BURST + i).into_bytes();
                        cell.load(&loader, &request).unwrap();
                        issued.push(request);
                    }
                    let last = issued.last().unwrap().clone();
                    loop {
                        let event = events.recv_timeout(DEADLINE).expect("the burst settles");
                        let done = event.status == Status::Loaded && event.value.as_deref() == Some(&last[..]);
                        seen.push(event);
                        if done {
                            break;
                        }
                    }
                    burst_ends.push(last);
                }
                (issued, burst_ends, seen)
            })
        })
        .collect();
    let results: Vec<_> = loaders.into_iter().map(|h| h.join().unwrap()).collect();

    // Dropping the runtime runs every pending hook and drops the loader
    // closure, which ends the workers.
    drop(loader);
    let runtime = Arc::into_inner(runtime).expect("no other runtime handle");
    drop(runtime);
    for worker in workers {
        worker.join().unwrap();
    }

    let outcomes = ledger.outcomes.lock().unwrap().clone();
    let hooks = ledger.hooks.lock().unwrap().clone();
    let mut total_loads = 0;
    let mut shown_values = HashSet::new();
    for (issued, burst_ends, seen) in &results {
        total_loads += issued.len();
        for (i, event) in seen.iter().enumerate() {
            assert_eq!(event.seq, i as u64 + 1, "seq grows by one");
            assert_eq!(event.event_type, EventType::State);
        }
        let loading: Vec<&[u8]> =
            seen.iter().filter(|e| e.status == Status::Loading).map(|e| e.request.as_deref().unwrap()).collect();
        let issued_refs: Vec<&[u8]> = issued.iter().map(Vec::as_slice).collect();
        assert_eq!(loading, issued_refs, "one LOADING event per load, in order");
        for event in seen.iter().filter(|e| e.status == Status::Loaded) {
            let value = event.value.clone().unwrap();
            assert_eq!(outcomes.get(&value), Some(&Outcome::Succeeded), "only succeeded jobs show their value");
            assert!(shown_values.insert(value), "a value shows once");
        }
        for end in burst_ends {
            assert!(shown_values.contains(end), "every burst ends with its last value");
        }
        assert!(seen.iter().all(|e| matches!(e.status, Status::Loading | Status::Loaded)));
    }
    assert_eq!(total_loads, THREADS * LOADS_PER_THREAD);

    let mut counts: HashMap<Outcome, usize> = HashMap::new();
    for (request, outcome) in &outcomes {
        *counts.entry(*outcome).or_default() += 1;
        let hook_runs = hooks.get(request).copied().unwrap_or(0);
        match outcome {
            Outcome::Succeeded => {
                assert_eq!(hook_runs, 0, "no hook for a job that succeeded");
                assert!(shown_values.contains(request), "a succeeded job's value shows");
            }
            Outcome::CancelledWithHook => assert_eq!(hook_runs, 1, "the hook of a cancelled job runs once"),
            Outcome::CancelledBeforeHook => assert_eq!(hook_runs, 0),
        }
    }
    assert_eq!(ledger.started.load(Ordering::Relaxed), outcomes.len());
    assert!(outcomes.len() <= total_loads);
    assert_eq!(counts.get(&Outcome::Succeeded).copied().unwrap_or(0), shown_values.len());
    // Loads that never started a job were superseded before their start.
    let unstarted = total_loads - outcomes.len();
    eprintln!(
        "loads {total_loads}: succeeded {}, cancelled {} (+{} before the hook), never started {unstarted}",
        counts.get(&Outcome::Succeeded).copied().unwrap_or(0),
        counts.get(&Outcome::CancelledWithHook).copied().unwrap_or(0),
        counts.get(&Outcome::CancelledBeforeHook).copied().unwrap_or(0),
    );
}
