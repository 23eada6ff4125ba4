//! The async API driven by a minimal executor written here (no crate):
//! `block_on` parks the thread until the runtime's delivery wakes it, and
//! `join_all` polls several futures under one waker. Several loads run at
//! once; dropping a `LoadFuture` cancels its load; `Events::poll_next`
//! ends with the stream.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use loadstate::{Event, EventType, Flags, Job, LoadOptions, LoadWaitError, Runtime, Status};

/// Wakes by noting the wake and unparking the thread that polls.
struct ThreadWaker {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// Polls `future` on this thread, parking between polls until woken.
/// Each poll is made only after a wake (or the first time): a future that
/// never wakes its waker fails the test after 20 s instead of resolving
/// through spurious polls.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let woken = Arc::new(ThreadWaker { thread: thread::current(), woken: AtomicBool::new(true) });
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if woken.woken.swap(false, Ordering::AcqRel) {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "block_on: the future was not woken within 20 s");
        // A wake before this park makes it return at once: none is lost.
        thread::park_timeout(left);
    }
}

/// Polls every future until all are ready; their outputs in order.
async fn join_all<F: Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                if let Poll::Ready(value) = Pin::new(future).poll(cx) {
                    *output = Some(value);
                }
            }
        }
        if outputs.iter().all(Option::is_some) {
            Poll::Ready(outputs.iter_mut().map(|o| o.take().expect("every output is there")).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// A runtime with a loader whose jobs are handed to the test.
fn runtime_with_jobs() -> (Runtime, loadstate::Loader, mpsc::Receiver<Job>) {
    let runtime = Runtime::new().expect("a runtime");
    let (tx, rx) = mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let loader = runtime
        .loader(move |job| {
            let _ = tx.lock().expect("the sender").send(job);
        })
        .expect("a loader");
    (runtime, loader, rx)
}

#[test]
fn block_on_waits_for_a_value_delivered_later() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    let (cell, events) = runtime.loadable().unwrap();
    // The job ends on another thread once the future is already waiting.
    let finisher = thread::spawn(move || {
        let job = jobs.recv_timeout(Duration::from_secs(20)).expect("a job");
        thread::sleep(Duration::from_millis(50));
        let mut value = b"hello, ".to_vec();
        value.extend_from_slice(job.request());
        job.succeed(&value).unwrap();
    });
    let future = cell.load_async(&events, &loader, b"world", &LoadOptions::new()).unwrap();
    let event = block_on(future).expect("the outcome");
    assert_eq!((event.status, event.value.as_deref()), (Status::Loaded, Some(&b"hello, world"[..])));
    finisher.join().unwrap();
}

#[test]
fn several_loads_at_once_under_one_executor() {
    let runtime = Runtime::new().unwrap();
    // Each job ends from its own thread, in the reverse order of the loads.
    let loader = runtime
        .loader(|job| {
            thread::spawn(move || {
                let n: u64 = String::from_utf8_lossy(job.request()).parse().unwrap();
                thread::sleep(Duration::from_millis(10 * (8 - n)));
                job.succeed(format!("value {n}").as_bytes()).unwrap();
            });
        })
        .unwrap();
    let cells: Vec<_> = (0..8).map(|_| runtime.loadable().unwrap()).collect();
    let requests: Vec<Vec<u8>> = (0..8).map(|n| n.to_string().into_bytes()).collect();
    let futures: Vec<_> = cells
        .iter()
        .zip(&requests)
        .map(|((cell, events), request)| cell.load_async(events, &loader, request, &LoadOptions::new()).unwrap())
        .collect();
    let outcomes = block_on(join_all(futures));
    for (n, outcome) in outcomes.into_iter().enumerate() {
        let event = outcome.expect("every load ends");
        assert_eq!(event.value, Some(format!("value {n}").into_bytes()));
    }
}

#[test]
fn dropping_a_load_future_before_it_resolves_cancels_its_load() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    let (cell, events) = runtime.loadable().unwrap();
    let job = {
        let mut future = cell.load_async(&events, &loader, b"slow", &LoadOptions::new()).unwrap();
        let job = jobs.recv_timeout(Duration::from_secs(20)).expect("a job");
        let waker = Waker::noop();
        assert!(Pin::new(&mut future).poll(&mut Context::from_waker(waker)).is_pending());
        job
    }; // the future is dropped here, unresolved
    let cancelled =
        events.wait_until(|e| e.flags.contains(Flags::CANCELLED), Duration::from_secs(20)).expect("a cancelled state");
    assert_eq!(cancelled.status, Status::Absent);
    assert!(job.is_cancelled(), "the job of the dropped future is cancelled");
    assert!(job.succeed(b"late").is_err(), "a cancelled job's value is refused");
}

#[test]
fn dropping_a_resolved_load_future_cancels_nothing() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    let (cell, events) = runtime.loadable().unwrap();
    let future = cell.load_async(&events, &loader, b"a", &LoadOptions::new()).unwrap();
    jobs.recv_timeout(Duration::from_secs(20)).unwrap().succeed(b"A").unwrap();
    block_on(future).expect("the outcome");
    // The next load is not cancelled by the earlier future's drop.
    cell.load(&loader, b"b").unwrap();
    let job = jobs.recv_timeout(Duration::from_secs(20)).unwrap();
    job.succeed(b"B").unwrap();
    let event = events.wait_for_load(b"b", Duration::from_secs(20)).expect("b loads");
    assert_eq!(event.value.as_deref(), Some(&b"B"[..]));
}

#[test]
fn a_superseded_load_future_says_so() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    let (cell, events) = runtime.loadable().unwrap();
    let future = cell.load_async(&events, &loader, b"a", &LoadOptions::new()).unwrap();
    let _first = jobs.recv_timeout(Duration::from_secs(20)).unwrap();
    cell.load(&loader, b"b").unwrap();
    jobs.recv_timeout(Duration::from_secs(20)).unwrap().succeed(b"B").unwrap();
    match block_on(future) {
        Err(LoadWaitError::Superseded { request }) => assert_eq!(request.as_deref(), Some(&b"b"[..])),
        other => panic!("expected Superseded, got {other:?}"),
    }
}

#[test]
fn poll_next_streams_events_and_ends_with_the_cell() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    let (cell, mut events) = runtime.loadable().unwrap();
    cell.load(&loader, b"x").unwrap();
    let job = jobs.recv_timeout(Duration::from_secs(20)).unwrap();
    let producer = thread::spawn(move || {
        job.progress(1, 2).unwrap();
        job.succeed(b"X").unwrap();
    });
    let mut seen: Vec<Event> = Vec::new();
    while seen.last().is_none_or(|e| e.status != Status::Loaded) {
        let event = block_on(std::future::poll_fn(|cx| Pin::new(&mut events).poll_next(cx))).expect("an event");
        seen.push(event);
    }
    producer.join().unwrap();
    let types: Vec<_> = seen.iter().map(|e| (e.event_type, e.status)).collect();
    assert_eq!(types[0], (EventType::State, Status::Loading));
    assert!(types.contains(&(EventType::Progress { done: 1, total: 2 }, Status::Loading)));
    // seq counts every event, PROGRESS included (see Event::seq).
    let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "seq without gap over all events: {seqs:?}");
    drop(cell);
    assert_eq!(block_on(events.next()), None, "the stream ends once the cell is dropped");
}

#[test]
fn progress_takes_seq_numbers_unless_turned_off() {
    let (runtime, loader, jobs) = runtime_with_jobs();
    for off in [false, true] {
        let (cell, events) = runtime.loadable().unwrap();
        cell.load_with(&loader, b"x", &LoadOptions::new().no_progress(off)).unwrap();
        let job = jobs.recv_timeout(Duration::from_secs(20)).unwrap();
        job.progress(1, 2).unwrap();
        job.succeed(b"X").unwrap();
        let mut states = Vec::new();
        let mut progress = 0;
        while states.last().is_none_or(|e: &Event| e.status != Status::Loaded) {
            let event = block_on(events.next()).expect("an event");
            match event.event_type {
                EventType::State => states.push(event),
                EventType::Progress { .. } => progress += 1,
                _ => {}
            }
        }
        let seqs: Vec<u64> = states.iter().map(|e| e.seq).collect();
        if off {
            assert_eq!((progress, seqs), (0, vec![1, 2]), "no progress event, no gap");
        } else {
            assert_eq!((progress, seqs), (1, vec![1, 3]), "the progress event took seq 2");
        }
    }
}

/// A load future whose job finishes without a value resolves to
/// `NoValue` with the restored state, never to the previous request's
/// value as its own: plain, keeping the previous value, or with a
/// placeholder.
#[test]
fn a_load_future_ending_without_a_value_says_so() {
    let shows = [
        LoadOptions::new(),
        LoadOptions::new().keep_previous(true),
        LoadOptions::new().placeholder(b"ph".to_vec()),
    ];
    for options in shows {
        let (runtime, loader, jobs) = runtime_with_jobs();
        let (cell, events) = runtime.loadable().unwrap();
        let first = cell.load_async(&events, &loader, b"a", &LoadOptions::new()).unwrap();
        jobs.recv_timeout(Duration::from_secs(20)).unwrap().succeed(b"A").unwrap();
        assert_eq!(block_on(first).expect("a's value").value.as_deref(), Some(&b"A"[..]));
        let future = cell.load_async(&events, &loader, b"b", &options).unwrap();
        jobs.recv_timeout(Duration::from_secs(20)).unwrap().finish().unwrap();
        match block_on(future) {
            Err(LoadWaitError::NoValue(restored)) => {
                assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::NO_VALUE));
                assert_eq!(restored.request.as_deref(), Some(&b"a"[..]));
            }
            other => panic!("{options:?}: expected NoValue, got {other:?}"),
        }
    }
}
