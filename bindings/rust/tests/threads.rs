//! Jobs ended from threads other than the delivery thread, and handles
//! shared between threads.

#![allow(clippy::items_after_statements)] // helper items are declared where they are first used
#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)

mod common;

use std::sync::{Arc, Barrier, mpsc};
use std::thread;

use common::{DEADLINE, Watch, job_queue, wait_readable};
use loadstate::{Delivery, ErrorKind, Event, EventType, Flags, Job, Runtime, Status};

#[test]
fn a_job_handed_to_a_worker_thread_completes_there() {
    let runtime = Runtime::new().unwrap();
    let (work_tx, work_rx) = mpsc::channel::<Job>();
    let worker = thread::spawn(move || {
        for job in work_rx {
            let request = job.request().to_vec();
            job.progress(1, 2).unwrap();
            job.yield_value(&request).unwrap();
            let mut value = request;
            value.reverse();
            job.succeed(&value).unwrap();
        }
    });
    let loader = runtime.loader(move |job| work_tx.send(job).unwrap()).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"abc").unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    assert_eq!(watch.next().event_type, EventType::Progress { done: 1, total: 2 });
    assert_eq!(watch.next().flags, Flags::PARTIAL);
    assert_eq!(watch.next().value.as_deref(), Some(&b"cba"[..]));
    drop(loader);
    drop(runtime);
    worker.join().unwrap();
}

#[test]
fn a_worker_stops_when_its_job_is_cancelled() {
    let runtime = Runtime::new().unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let (stopped_tx, stopped_rx) = mpsc::channel();
    let loader = runtime
        .loader(move |job| {
            let started = started_tx.clone();
            let stopped = stopped_tx.clone();
            let (wake_tx, wake_rx) = mpsc::channel::<()>();
            job.on_cancel(move || {
                let _ = wake_tx.send(());
            })
            .unwrap();
            thread::spawn(move || {
                started.send(()).unwrap();
                // Waits for the cancel hook, as a worker would wait on I/O.
                wake_rx.recv_timeout(DEADLINE).expect("the hook wakes the worker");
                assert!(job.is_cancelled());
                stopped.send(job.succeed(b"too late").unwrap_err().kind()).unwrap();
            });
        })
        .unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"").unwrap();
    watch.next();
    started_rx.recv_timeout(DEADLINE).unwrap();
    cell.cancel().unwrap();
    assert_eq!(stopped_rx.recv_timeout(DEADLINE).unwrap(), ErrorKind::Cancelled);
    assert_eq!(watch.next().flags, Flags::CANCELLED);
}

#[test]
fn cells_loaders_and_jobs_are_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Runtime>();
    assert_send_sync::<loadstate::Loadable>();
    assert_send_sync::<loadstate::Process>();
    assert_send_sync::<loadstate::Loader>();
    assert_send_sync::<Job>();
    fn assert_send<T: Send>() {}
    assert_send::<loadstate::Events>();

    let runtime = Arc::new(Runtime::new().unwrap());
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let cell = Arc::new(cell);
    let loader = Arc::new(loader);

    // The stream is read on its own thread.
    let reader = thread::spawn(move || {
        let mut watch = Watch::new(events);
        let loading = watch.next();
        let loaded = watch.next();
        (loading, loaded)
    });
    let loader_thread = {
        let (cell, loader) = (Arc::clone(&cell), Arc::clone(&loader));
        thread::spawn(move || cell.load(&loader, b"from a thread").unwrap())
    };
    loader_thread.join().unwrap();
    let job = jobs.next();
    thread::spawn(move || job.succeed(b"from another").unwrap()).join().unwrap();
    let (loading, loaded): (Event, Event) = reader.join().unwrap();
    assert_eq!(loading.request.as_deref(), Some(&b"from a thread"[..]));
    assert_eq!(loaded.value.as_deref(), Some(&b"from another"[..]));
}

#[test]
fn concurrent_yields_from_several_threads_each_arrive_once() {
    const THREADS: usize = 4;
    const YIELDS: usize = 50;
    let runtime = Runtime::new().unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"").unwrap();
    watch.next();
    let job = jobs.next();
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (job, barrier) = (job.clone(), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                for i in 0..YIELDS {
                    job.yield_value(format!("{t}:{i}").as_bytes()).unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    job.finish().unwrap();
    let mut next_of = [0usize; THREADS];
    for _ in 0..THREADS * YIELDS {
        let event = watch.next();
        assert_eq!(event.flags, Flags::PARTIAL);
        let text = String::from_utf8(event.value.unwrap()).unwrap();
        let (t, i) = text.split_once(':').unwrap();
        let (t, i): (usize, usize) = (t.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next_of[t], "each thread's yields arrive in its order, once");
        next_of[t] += 1;
    }
    let finished = watch.next();
    assert_eq!(finished.flags, Flags::NONE);
    assert_eq!(next_of, [YIELDS; THREADS]);
}

/// POLL mode: callbacks run on the thread that dispatches, when the
/// descriptor is readable, and not before.
#[test]
fn poll_mode_runs_callbacks_on_the_dispatching_thread() {
    let runtime = Runtime::with_delivery(Delivery::Poll).unwrap();
    let fd = runtime.fd().unwrap();
    let (thread_tx, thread_rx) = mpsc::channel();
    let loader = runtime
        .loader(move |job| {
            thread_tx.send(thread::current().id()).unwrap();
            job.succeed(job.request()).unwrap();
        })
        .unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    cell.load(&loader, b"polled").unwrap();
    wait_readable(fd);
    assert!(events.try_recv().is_err(), "no event before a dispatch");
    assert!(thread_rx.try_recv().is_err(), "no loader start before a dispatch");

    let mut received = Vec::new();
    while received.last().is_none_or(|e: &Event| e.status != Status::Loaded) {
        wait_readable(fd);
        runtime.dispatch(0).unwrap();
        received.extend(events.receiver().try_iter());
    }
    assert_eq!(thread_rx.try_recv().unwrap(), thread::current().id());
    assert_eq!(received.iter().map(|e| e.status).collect::<Vec<_>>(), [Status::Loading, Status::Loaded]);
    assert_eq!(received[1].value.as_deref(), Some(&b"polled"[..]));
    assert_eq!(runtime.dispatch(0).unwrap(), 0, "nothing is left pending");
    assert!(events.try_recv().is_err());

    let loop_runtime = Runtime::new().unwrap();
    assert_eq!(loop_runtime.fd().unwrap_err().kind(), ErrorKind::State);
    assert_eq!(loop_runtime.dispatch(0).unwrap_err().kind(), ErrorKind::State);
}
