//! `Runtime::observe`: every cell event, job start and job end, and the
//! Observer guard that removes it.

#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)

mod common;

use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

use common::{DEADLINE, EXPECTED_PANIC, job_queue, quiet_expected_panics, setup};
use loadstate::{Delivery, ErrorDomain, JobOutcome, Observation, ObservationKind, Observer, Runtime, Status};

/// An observer that sends every observation to the returned receiver.
fn observe(runtime: &Runtime) -> (Observer, Receiver<Observation>) {
    let (tx, rx) = mpsc::channel();
    let observer = runtime
        .observe(move |observation| {
            let _ = tx.send(observation.clone());
        })
        .unwrap();
    (observer, rx)
}

fn next(rx: &Receiver<Observation>) -> Observation {
    rx.recv_timeout(DEADLINE).expect("an observation")
}

fn event_status(observation: &Observation) -> Status {
    match &observation.kind {
        ObservationKind::Event(event) => event.status,
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn a_load_is_observed_from_its_first_event_to_its_job_end_with_its_duration() {
    let mut s = setup();
    let (observer, rx) = observe(&s.runtime);
    let (loader, cell) = (&s.loader, &s.cell);
    cell.load(loader, b"GET /a").unwrap();
    assert_eq!(event_status(&next(&rx)), Status::Loading);
    let start = next(&rx);
    let job = s.jobs.next();
    match &start.kind {
        ObservationKind::JobStart { job: id, loader: l, cell: c, attempt, request } => {
            assert_eq!((*id, *l, *c, *attempt, &request[..]), (job.id(), loader.id(), cell.id(), 1, &b"GET /a"[..]));
        }
        other => panic!("expected a job start, got {other:?}"),
    }
    thread::sleep(Duration::from_millis(50));
    job.succeed(b"done").unwrap();
    let end = next(&rx);
    match &end.kind {
        ObservationKind::JobEnd { job: id, loader: l, attempt, request, outcome, duration } => {
            assert_eq!(
                (*id, *l, *attempt, &request[..], *outcome),
                (job.id(), loader.id(), 1, &b"GET /a"[..], JobOutcome::Succeeded)
            );
            assert!(*duration >= Duration::from_millis(50), "{duration:?}");
            assert!(duration.as_nanos() <= u128::from(end.time_ns - start.time_ns) + 1_000_000);
        }
        other => panic!("expected a job end, got {other:?}"),
    }
    let loaded = next(&rx);
    match &loaded.kind {
        ObservationKind::Event(event) => {
            assert_eq!(
                (event.cell, event.status, event.value.as_deref()),
                (cell.id(), Status::Loaded, Some(&b"done"[..]))
            );
        }
        other => panic!("expected an event, got {other:?}"),
    }
    assert_eq!(s.watch.wait_settled().status, Status::Loaded);

    // Dropped, the observer hears of nothing more.
    drop(observer);
    s.load_and_succeed(b"again");
    assert!(rx.try_recv().is_err());
}

#[test]
fn a_failed_job_ends_with_its_error_and_a_cancelled_one_as_cancelled() {
    let mut s = setup();
    let (_observer, rx) = observe(&s.runtime);
    s.cell.load(&s.loader, b"x").unwrap();
    s.jobs.next().fail(7, "boom").unwrap();
    assert_eq!(s.watch.wait_settled().status, Status::Error);
    let outcomes: Vec<_> = (0..4)
        .map(|_| next(&rx))
        .filter_map(|o| match o.kind {
            ObservationKind::JobEnd { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, [JobOutcome::Failed { domain: Some(ErrorDomain::Host), code: 7 }]);

    s.cell.load(&s.loader, b"y").unwrap();
    let _job = s.jobs.next();
    s.cell.cancel().unwrap();
    let kinds: Vec<_> = (0..4).map(|_| next(&rx).kind).collect();
    assert!(matches!(kinds[0], ObservationKind::Event(_)));
    assert!(matches!(kinds[1], ObservationKind::JobStart { .. }));
    assert!(matches!(kinds[2], ObservationKind::JobEnd { outcome: JobOutcome::Cancelled, .. }));
    // The cancel restores the state from before the load.
    assert!(matches!(&kinds[3], ObservationKind::Event(e) if e.status == Status::Error));
}

#[test]
fn a_new_observer_replaces_the_last_and_the_runtimes_drop_ends_it() {
    let mut s = setup();
    let (first, first_rx) = observe(&s.runtime);
    let (second, second_rx) = observe(&s.runtime);
    assert!(!first.is_active() && second.is_active());
    s.load_and_succeed(b"r");
    for _ in 0..4 {
        next(&second_rx);
    }
    assert!(first_rx.try_recv().is_err());
    // Dropping the replaced one leaves the current one in place.
    drop(first);
    assert!(second.is_active());
    drop(s);
    assert!(!second.is_active());
    drop(second);
}

#[test]
fn in_poll_mode_the_observer_runs_inside_dispatch() {
    let runtime = Runtime::with_delivery(Delivery::Poll).unwrap();
    let (loader, jobs) = job_queue(&runtime);
    let (cell, _events) = runtime.loadable().unwrap();
    let caller = thread::current().id();
    let (tx, rx) = mpsc::channel();
    let _observer = runtime
        .observe(move |o| {
            let _ = tx.send((thread::current().id(), o.clone()));
        })
        .unwrap();
    cell.load(&loader, b"p").unwrap();
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + DEADLINE;
    while seen.len() < 2 && std::time::Instant::now() < deadline {
        runtime.dispatch(0).unwrap();
        seen.extend(rx.try_iter());
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|(thread, _)| *thread == caller));
    assert!(matches!(seen[1].1.kind, ObservationKind::JobStart { .. }));
    drop(jobs);
}

#[test]
fn a_panicking_observer_does_not_stop_the_runtime() {
    quiet_expected_panics();
    let mut s = setup();
    let _observer = s.runtime.observe(|_| panic!("{EXPECTED_PANIC}: the observer")).unwrap();
    s.load_and_succeed(b"r");
}
