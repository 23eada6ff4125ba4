//! `Events::wait_for_load`: a waiter gets its own request's outcome, or
//! `LoadWaitError::Superseded` naming the request that replaced it; and
//! `refresh` after a cancel reloads the request the restored state shows.

mod common;

use common::{DEADLINE, setup};
use loadstate::{LoadWaitError, Status};

#[test]
fn a_load_waits_for_its_own_outcome() {
    let s = setup();
    s.cell.load(&s.loader, b"a").unwrap();
    s.jobs.next().succeed(b"A").unwrap();
    let event = s.watch.events.wait_for_load(b"a", DEADLINE).expect("the outcome");
    assert_eq!((event.status, event.value.as_deref()), (Status::Loaded, Some(&b"A"[..])));
}

#[test]
fn a_load_superseded_by_another_request_is_superseded_not_given_its_value() {
    let s = setup();
    s.cell.load(&s.loader, b"a").unwrap();
    let first = s.jobs.next();
    s.cell.load(&s.loader, b"b").unwrap();
    s.jobs.next().succeed(b"B").unwrap();
    assert!(first.succeed(b"A").is_err(), "a superseded job's completion is refused");
    match s.watch.events.wait_for_load(b"a", DEADLINE) {
        Err(LoadWaitError::Superseded { request }) => assert_eq!(request.as_deref(), Some(&b"b"[..])),
        other => panic!("expected Superseded, got {other:?}"),
    }
}

#[test]
fn a_load_superseded_by_the_same_request_takes_its_outcome() {
    let s = setup();
    s.cell.load(&s.loader, b"a").unwrap();
    let _first = s.jobs.next();
    s.cell.load(&s.loader, b"a").unwrap();
    s.jobs.next().succeed(b"A2").unwrap();
    let event = s.watch.events.wait_for_load(b"a", DEADLINE).expect("the outcome");
    assert_eq!(event.value.as_deref(), Some(&b"A2"[..]));
}

#[test]
fn a_cancelled_load_is_cancelled_and_refresh_reloads_the_restored_request() {
    let s = setup();
    s.cell.load(&s.loader, b"ada").unwrap();
    s.jobs.next().succeed(b"A").unwrap();
    s.watch.events.wait_for_load(b"ada", DEADLINE).expect("the outcome");
    s.cell.load(&s.loader, b"bob").unwrap();
    let _bob = s.jobs.next();
    s.cell.cancel().unwrap();
    match s.watch.events.wait_for_load(b"bob", DEADLINE) {
        Err(LoadWaitError::Cancelled(restored)) => assert_eq!(restored.request.as_deref(), Some(&b"ada"[..])),
        other => panic!("expected Cancelled, got {other:?}"),
    }
    s.cell.refresh().unwrap();
    let job = s.jobs.next();
    assert_eq!(job.request(), b"ada");
}
