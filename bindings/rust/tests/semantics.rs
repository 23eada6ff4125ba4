//! One test per row of the semantics table (DESIGN.md, include/loadstate.h),
//! through the safe API.

#![allow(clippy::cast_possible_truncation)] // casts of small test numbers (counts, sizes, ms) known to fit
#![allow(clippy::cast_possible_wrap)] // casts of small test numbers known to fit
#![allow(clippy::similar_names)] // bindings named in pairs on purpose (tx/rx, first/second)
#![allow(clippy::unnecessary_wraps)] // helpers return Result to be used with ? like the calls they stand for

mod common;

use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{DEADLINE, EXPECTED_PANIC, JobQueue, Setup, Tally, Watch, job_queue, quiet_expected_panics, setup};
use loadstate::{
    Delivery, ErrorDomain, ErrorKind, EventType, Flags, LoadError, LoadOptions, Loader, PANIC_ERROR_CODE, Process,
    Runtime, Status,
};

fn process_setup() -> (Runtime, Loader, JobQueue, Process, Watch) {
    let runtime = Runtime::new().expect("runtime");
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.process().expect("process");
    (runtime, loader, jobs, cell, Watch::new(events))
}

fn host_error(code: i32, message: &str) -> Option<LoadError> {
    Some(LoadError { domain: ErrorDomain::Host, code, message: Some(message.to_owned()) })
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Sets the cell to a known loaded value and returns after its event.
fn preload(s: &mut Setup, value: &[u8]) {
    s.cell.set_loaded(value).unwrap();
    let event = s.watch.next();
    assert_eq!((event.status, event.value.as_deref()), (Status::Loaded, Some(value)));
}

#[test]
fn get_before_any_event_is_absent_with_seq_0() {
    let s = setup();
    let snapshot = s.cell.get().unwrap();
    assert_eq!(snapshot.seq, 0);
    assert_eq!(snapshot.status, Status::Absent);
    assert_eq!(snapshot.event_type, EventType::State);
    assert_eq!(snapshot.value, None);
    s.watch.expect_nothing_queued();
}

#[test]
fn load_emits_loading_with_the_request_then_loaded() {
    let mut s = setup();
    s.cell.load(&s.loader, b"request").unwrap();
    let loading = s.watch.next();
    assert_eq!(loading.event_type, EventType::State);
    assert_eq!(loading.cell, s.cell.id());
    assert_eq!(loading.status, Status::Loading);
    assert_eq!(loading.request.as_deref(), Some(&b"request"[..]));
    assert_eq!(loading.attempt, 1);
    assert_eq!(loading.flags, Flags::NONE);
    assert_eq!(loading.value, None);

    let job = s.jobs.next();
    assert_eq!(job.request(), b"request");
    assert!(!job.is_cancelled());
    let before = now_ms();
    job.succeed(b"value").unwrap();
    let loaded = s.watch.next();
    assert_eq!(loaded.status, Status::Loaded);
    assert_eq!(loaded.value.as_deref(), Some(&b"value"[..]));
    assert_eq!(loaded.flags, Flags::NONE);
    assert_eq!(loaded.error, None);
    assert!(loaded.updated_at_ms + 1000 >= before && loaded.updated_at_ms <= now_ms() + 1000);
    assert!(job.is_cancelled(), "an ended job no longer runs");

    let snapshot = s.cell.get().unwrap();
    assert_eq!(snapshot, loaded, "get returns the latest event");
}

#[test]
fn load_failure_is_an_error_in_the_host_domain() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    assert_eq!(s.watch.next().status, Status::Loading);
    s.jobs.next().fail(42, "it broke").unwrap();
    let failed = s.watch.next();
    assert_eq!(failed.status, Status::Error);
    assert_eq!(failed.error, host_error(42, "it broke"));
    assert_eq!(failed.value, None);
}

#[test]
fn load_cancels_the_running_job_without_an_event_for_the_cancel() {
    let mut s = setup();
    let hooks = Tally::default();
    s.cell.load(&s.loader, b"first").unwrap();
    let first = s.jobs.next();
    let tally = hooks.clone();
    let (ran_tx, ran_rx) = mpsc::channel();
    first
        .on_cancel(move || {
            tally.push("first cancelled");
            ran_tx.send(()).unwrap();
        })
        .unwrap();
    s.cell.load(&s.loader, b"second").unwrap();
    ran_rx.recv_timeout(DEADLINE).expect("the superseded job's hook runs");
    assert_eq!(hooks.entries(), ["first cancelled"]);

    let first_loading = s.watch.next();
    let second_loading = s.watch.next();
    assert_eq!(first_loading.request.as_deref(), Some(&b"first"[..]));
    assert_eq!((second_loading.status, second_loading.request.as_deref()), (Status::Loading, Some(&b"second"[..])));
    assert_eq!(second_loading.flags, Flags::NONE);

    let second = s.jobs.next();
    assert_eq!(second.request(), b"second");
    assert_eq!(first.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
    second.succeed(b"fresh").unwrap();
    let loaded = s.watch.next();
    assert_eq!(loaded.value.as_deref(), Some(&b"fresh"[..]));
}

#[test]
fn silent_load_keeps_the_state_flagged_refreshing_and_replaces_it_on_success() {
    let mut s = setup();
    preload(&mut s, b"old");
    s.cell.load_with(&s.loader, b"r", &LoadOptions::new().silent(true)).unwrap();
    let refreshing = s.watch.next();
    assert_eq!(refreshing.status, Status::Loaded);
    assert_eq!(refreshing.value.as_deref(), Some(&b"old"[..]));
    assert_eq!(refreshing.flags, Flags::REFRESHING);
    s.jobs.next().succeed(b"new").unwrap();
    let loaded = s.watch.next();
    assert_eq!(
        (loaded.status, loaded.value.as_deref(), loaded.flags),
        (Status::Loaded, Some(&b"new"[..]), Flags::NONE)
    );
}

#[test]
fn refresh_reloads_the_last_request_silently() {
    let mut s = setup();
    s.cell.load(&s.loader, b"query").unwrap();
    s.watch.next();
    s.jobs.next().succeed(b"v1").unwrap();
    assert_eq!(s.watch.next().value.as_deref(), Some(&b"v1"[..]));

    s.cell.refresh().unwrap();
    let refreshing = s.watch.next();
    assert_eq!((refreshing.status, refreshing.flags), (Status::Loaded, Flags::REFRESHING));
    assert_eq!(refreshing.value.as_deref(), Some(&b"v1"[..]));
    let job = s.jobs.next();
    assert_eq!(job.request(), b"query", "refresh reuses the last request");
    job.succeed(b"v2").unwrap();
    let loaded = s.watch.next();
    assert_eq!((loaded.value.as_deref(), loaded.flags), (Some(&b"v2"[..]), Flags::NONE));
}

#[test]
fn refresh_works_after_a_failure_a_cancel_and_a_reset() {
    let mut s = setup();
    s.cell.load(&s.loader, b"q").unwrap();
    s.watch.next();
    s.jobs.next().fail(1, "down").unwrap();
    assert_eq!(s.watch.next().status, Status::Error);

    s.cell.refresh().unwrap();
    let refreshing = s.watch.next();
    assert_eq!((refreshing.status, refreshing.flags), (Status::Error, Flags::REFRESHING));
    let job = s.jobs.next();
    s.cell.cancel().unwrap();
    let cancelled = s.watch.next();
    assert_eq!((cancelled.status, cancelled.flags), (Status::Error, Flags::CANCELLED));
    assert!(job.is_cancelled());

    s.cell.refresh().unwrap();
    s.watch.next();
    s.jobs.next().succeed(b"up").unwrap();
    assert_eq!(s.watch.next().value.as_deref(), Some(&b"up"[..]));

    s.cell.reset().unwrap();
    assert_eq!(s.watch.next().status, Status::Absent);
    s.cell.refresh().unwrap();
    let refreshing = s.watch.next();
    assert_eq!((refreshing.status, refreshing.flags), (Status::Absent, Flags::REFRESHING));
    let job = s.jobs.next();
    assert_eq!(job.request(), b"q", "reset keeps the last request");
    job.succeed(b"again").unwrap();
    assert_eq!(s.watch.next().value.as_deref(), Some(&b"again"[..]));
}

#[test]
fn yields_are_partial_values_and_later_yields_replace_them() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    job.yield_value(b"one").unwrap();
    job.yield_value(b"two").unwrap();
    for expected in [&b"one"[..], b"two"] {
        let partial = s.watch.next();
        assert_eq!((partial.status, partial.flags), (Status::Loaded, Flags::PARTIAL));
        assert_eq!(partial.value.as_deref(), Some(expected));
    }
    assert!(!job.is_cancelled(), "yield does not end the job");
    job.succeed(b"final").unwrap();
    let loaded = s.watch.next();
    assert_eq!((loaded.flags, loaded.value.as_deref()), (Flags::NONE, Some(&b"final"[..])));
}

#[test]
fn finish_keeps_the_last_yielded_value_and_clears_partial() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    job.yield_value(b"a").unwrap();
    job.yield_value(b"b").unwrap();
    job.finish().unwrap();
    s.watch.next();
    s.watch.next();
    let finished = s.watch.next();
    assert_eq!((finished.status, finished.flags), (Status::Loaded, Flags::NONE));
    assert_eq!(finished.value.as_deref(), Some(&b"b"[..]));
}

#[test]
fn finish_without_a_yield_returns_to_the_state_before_the_load() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    s.jobs.next().finish().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Absent, Flags::NO_VALUE));

    preload(&mut s, b"kept");
    s.cell.load(&s.loader, b"r").unwrap();
    assert_eq!(s.watch.next().status, Status::Loading);
    s.jobs.next().finish().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::NO_VALUE), "no CANCELLED flag");
    assert_eq!(restored.value.as_deref(), Some(&b"kept"[..]));
}

#[test]
fn cancel_restores_the_state_before_the_load_flagged_cancelled_and_runs_hooks() {
    let mut s = setup();
    preload(&mut s, b"before");
    s.cell.load(&s.loader, b"r").unwrap();
    assert_eq!(s.watch.next().status, Status::Loading);
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    job.on_cancel(move || tx.send("first").unwrap()).unwrap();
    job.on_cancel(move || tx2.send("second").unwrap()).unwrap();
    job.yield_value(b"partial").unwrap();
    assert_eq!(s.watch.next().flags, Flags::PARTIAL);
    s.cell.cancel().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::CANCELLED));
    assert_eq!(restored.value.as_deref(), Some(&b"before"[..]));
    assert_eq!(rx.recv_timeout(DEADLINE).unwrap(), "first", "hooks run in registration order");
    assert_eq!(rx.recv_timeout(DEADLINE).unwrap(), "second");
    assert!(job.is_cancelled());
    assert_eq!(job.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn cancel_from_an_absent_state_is_never_stuck_in_loading() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let _job = s.jobs.next();
    s.cell.cancel().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Absent, Flags::CANCELLED));
    assert_eq!(s.cell.get().unwrap().status, Status::Absent);
}

#[test]
fn cancel_self_is_like_a_cancel_from_outside() {
    let mut s = setup();
    preload(&mut s, b"before");
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    job.cancel_self().unwrap();
    let restored = s.watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::CANCELLED));
    assert_eq!(restored.value.as_deref(), Some(&b"before"[..]));
    rx.recv_timeout(DEADLINE).expect("cancel_self runs the hooks");
    assert_eq!(job.cancel_self().unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn cancel_without_a_running_job_succeeds_and_emits_nothing() {
    let mut s = setup();
    s.cell.cancel().unwrap();
    preload(&mut s, b"x");
    s.cell.cancel().unwrap();
    // Events of a cell arrive in order: had the cancels emitted anything,
    // it would come before this one.
    s.cell.set_loaded(b"barrier").unwrap();
    let next = s.watch.next();
    assert_eq!(next.value.as_deref(), Some(&b"barrier"[..]));
    assert_eq!(next.seq, 2);
}

#[test]
fn reset_cancels_the_job_and_makes_the_cell_absent() {
    let mut s = setup();
    preload(&mut s, b"v");
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    s.cell.reset().unwrap();
    let absent = s.watch.next();
    assert_eq!((absent.status, absent.value.as_deref()), (Status::Absent, None));
    rx.recv_timeout(DEADLINE).expect("reset runs the hooks");
    assert_eq!(job.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn reset_self_makes_the_cell_absent() {
    let mut s = setup();
    preload(&mut s, b"v");
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    job.reset_self().unwrap();
    assert_eq!(s.watch.next().status, Status::Absent);
    rx.recv_timeout(DEADLINE).expect("reset_self runs the hooks");
    assert!(job.is_cancelled());
}

#[test]
fn reset_of_an_absent_idle_cell_emits_nothing() {
    let mut s = setup();
    s.cell.reset().unwrap();
    s.cell.set_loaded(b"barrier").unwrap();
    assert_eq!(s.watch.next().value.as_deref(), Some(&b"barrier"[..]));
}

#[test]
fn set_loaded_cancels_the_running_job_then_sets_the_value() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    s.cell.set_loaded(b"manual").unwrap();
    let loaded = s.watch.next();
    assert_eq!((loaded.status, loaded.value.as_deref()), (Status::Loaded, Some(&b"manual"[..])));
    assert_eq!((loaded.request, loaded.attempt, loaded.flags), (None, 0, Flags::NONE));
    rx.recv_timeout(DEADLINE).expect("set_loaded cancels the job");
    assert_eq!(job.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn set_error_cancels_the_running_job_then_sets_a_host_error() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    s.cell.set_error(7, Some("manual")).unwrap();
    let failed = s.watch.next();
    assert_eq!(failed.status, Status::Error);
    assert_eq!(failed.error, host_error(7, "manual"));
    rx.recv_timeout(DEADLINE).expect("set_error cancels the job");

    s.cell.set_error(8, None).unwrap();
    let failed = s.watch.next();
    assert_eq!(failed.error, Some(LoadError { domain: ErrorDomain::Host, code: 8, message: None }));
    assert_eq!(s.cell.set_error(9, Some("nul\0inside")).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_superseded_job_changes_nothing_and_every_call_returns_cancelled() {
    let mut s = setup();
    s.cell.load(&s.loader, b"old").unwrap();
    s.watch.next();
    let old = s.jobs.next();
    s.cell.load(&s.loader, b"new").unwrap();
    s.watch.next();
    let new = s.jobs.next();

    let cancelled = |r: loadstate::Result<()>| assert_eq!(r.unwrap_err().kind(), ErrorKind::Cancelled);
    cancelled(old.yield_value(b"x"));
    cancelled(old.progress(1, 2));
    cancelled(old.succeed(b"x"));
    cancelled(old.finish());
    cancelled(old.fail(1, "x"));
    cancelled(old.cancel_self());
    cancelled(old.reset_self());
    let (hook_tx, hook_rx) = mpsc::channel::<&str>();
    cancelled(old.on_cancel(move || hook_tx.send("ran").unwrap()));
    assert_eq!(hook_rx.try_recv(), Err(mpsc::TryRecvError::Disconnected), "the refused hook is dropped unrun");
    assert!(old.is_cancelled());
    assert!(!new.is_cancelled());

    new.succeed(b"winner").unwrap();
    let loaded = s.watch.next();
    assert_eq!(loaded.value.as_deref(), Some(&b"winner"[..]));
    assert_eq!(loaded.request.as_deref(), Some(&b"new"[..]));
    cancelled(new.succeed(b"twice"));
}

#[test]
fn progress_is_reported_without_changing_the_state() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    job.progress(3, 10).unwrap();
    job.progress(4, 0).unwrap();
    let p = s.watch.next();
    assert_eq!(p.event_type, EventType::Progress { done: 3, total: 10 });
    assert_eq!(p.status, Status::Loading);
    assert_eq!(s.watch.next().event_type, EventType::Progress { done: 4, total: 0 });
    job.succeed(b"v").unwrap();
    assert_eq!(s.watch.next().status, Status::Loaded);
}

#[test]
fn interrupts_arrive_at_growing_delays_with_the_measured_elapsed_time() {
    let mut s = setup();
    let delays = [30u64, 30, 40];
    let options = LoadOptions::new().interrupts(delays.map(Duration::from_millis));
    s.cell.load_with(&s.loader, b"slow", &options).unwrap();
    assert_eq!(s.watch.next().status, Status::Loading);
    let job = s.jobs.next();
    let mut due = 0;
    let mut last = 0;
    for delay in delays {
        due += delay;
        let interrupt = s.watch.next();
        let EventType::Interrupt { elapsed_ms } = interrupt.event_type else {
            panic!("expected an interrupt, got {interrupt:?}");
        };
        assert!(elapsed_ms >= due, "interrupt due at {due} ms came at {elapsed_ms} ms");
        assert!(elapsed_ms > last);
        last = elapsed_ms;
        assert_eq!(interrupt.status, Status::Loading, "the state is unchanged");
    }
    job.succeed(b"done").unwrap();
    assert_eq!(s.watch.next().status, Status::Loaded);
}

#[test]
fn no_interrupt_arrives_after_the_job_ends() {
    let mut s = setup();
    let options = LoadOptions::new().interrupts([Duration::from_millis(20), Duration::from_millis(80)]);
    s.cell.load_with(&s.loader, b"r", &options).unwrap();
    s.watch.next();
    let job = s.jobs.next();
    assert!(matches!(s.watch.next().event_type, EventType::Interrupt { .. }));
    job.succeed(b"v").unwrap();
    assert_eq!(s.watch.next().status, Status::Loaded);

    // The library's own timer is the clock: a second cell's interrupt at
    // 300 ms comes well after the first cell's second interrupt was due.
    let (clock, clock_events) = s.runtime.loadable().unwrap();
    clock.load_with(&s.loader, b"clock", &LoadOptions::new().interrupts([Duration::from_millis(300)])).unwrap();
    let clock_job = s.jobs.next();
    let mut clock_watch = Watch::new(clock_events);
    assert_eq!(clock_watch.next().status, Status::Loading);
    assert!(matches!(clock_watch.next().event_type, EventType::Interrupt { .. }));
    clock_job.succeed(b"").unwrap();
    s.watch.expect_nothing_queued();
}

#[test]
fn timeout_cancels_the_job_and_shows_etimedout() {
    let mut s = setup();
    s.cell.load_with(&s.loader, b"r", &LoadOptions::new().timeout(Duration::from_millis(30))).unwrap();
    assert_eq!(s.watch.next().status, Status::Loading);
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    let timed_out = s.watch.next();
    assert_eq!(timed_out.status, Status::Error);
    let error = timed_out.error.unwrap();
    assert_eq!((error.domain, error.code), (ErrorDomain::Loadstate, ErrorKind::TimedOut.code()));
    rx.recv_timeout(DEADLINE).expect("a timeout runs the hooks");
    assert!(job.is_cancelled());
    assert_eq!(job.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
}

#[test]
fn retries_show_each_attempt_while_loading_then_the_error() {
    let mut s = setup();
    let options =
        LoadOptions::new().retries(2).retry_base(Duration::from_millis(5)).retry_max(Duration::from_millis(20));
    s.cell.load_with(&s.loader, b"flaky", &options).unwrap();
    for attempt in 1..=3 {
        let loading = s.watch.next();
        assert_eq!((loading.status, loading.attempt), (Status::Loading, attempt), "{loading:?}");
        assert_eq!(loading.request.as_deref(), Some(&b"flaky"[..]));
        let job = s.jobs.next();
        assert_eq!(job.request(), b"flaky");
        job.fail(500 + attempt as i32, "nope").unwrap();
    }
    let failed = s.watch.next();
    assert_eq!(failed.status, Status::Error);
    assert_eq!(failed.attempt, 3);
    assert_eq!(failed.error, host_error(503, "nope"));
    assert!(s.jobs.try_next().is_none());
}

#[test]
fn a_retry_that_succeeds_loads_the_value() {
    let mut s = setup();
    let options = LoadOptions::new().retries(3).retry_base(Duration::from_millis(1));
    s.cell.load_with(&s.loader, b"r", &options).unwrap();
    assert_eq!(s.watch.next().attempt, 1);
    s.jobs.next().fail(1, "once").unwrap();
    assert_eq!(s.watch.next().attempt, 2);
    s.jobs.next().succeed(b"ok").unwrap();
    let loaded = s.watch.next();
    assert_eq!((loaded.status, loaded.attempt, loaded.value.as_deref()), (Status::Loaded, 2, Some(&b"ok"[..])));
}

#[test]
fn fail_final_shows_the_error_at_once_despite_retries_left() {
    let mut s = setup();
    s.cell.load_with(&s.loader, b"r", &LoadOptions::new().retries(5).retry_base(Duration::from_millis(1))).unwrap();
    assert_eq!(s.watch.next().attempt, 1);
    s.jobs.next().fail_final(404, "gone").unwrap();
    let failed = s.watch.next();
    assert_eq!((failed.status, failed.attempt), (Status::Error, 1));
    assert_eq!(failed.error, host_error(404, "gone"));
    assert!(s.jobs.try_next().is_none(), "no retry starts");
}

#[test]
fn refresh_without_an_earlier_load_is_a_state_error() {
    let s = setup();
    assert_eq!(s.cell.refresh().unwrap_err().kind(), ErrorKind::State);
    s.watch.expect_nothing_queued();
}

#[test]
fn refresh_after_the_loader_was_dropped_is_not_found() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    s.jobs.next().succeed(b"v").unwrap();
    s.watch.next();
    drop(s.loader);
    assert_eq!(s.cell.refresh().unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn process_run_goes_running_then_finished_with_its_kind() {
    let (_runtime, loader, jobs, cell, mut watch) = process_setup();
    cell.run(7, &loader, b"task").unwrap();
    let running = watch.next();
    assert_eq!((running.status, running.kind, running.attempt), (Status::Running, 7, 1));
    assert_eq!(running.request.as_deref(), Some(&b"task"[..]));
    let job = jobs.next();
    job.yield_value(b"ignored").unwrap();
    job.succeed(b"ignored too").unwrap();
    let finished = watch.next();
    assert_eq!((finished.status, finished.kind, finished.value), (Status::Finished, 7, None), "values are ignored");

    cell.run(8, &loader, b"task").unwrap();
    assert_eq!(watch.next().status, Status::Running);
    jobs.next().fail(3, "exit 3").unwrap();
    let failed = watch.next();
    assert_eq!((failed.status, failed.kind), (Status::Failed, 8));
    assert_eq!(failed.error, host_error(3, "exit 3"));
}

#[test]
fn process_cancel_restores_and_reset_makes_idle() {
    let (_runtime, loader, jobs, cell, mut watch) = process_setup();
    cell.run(1, &loader, b"").unwrap();
    watch.next();
    jobs.next().succeed(b"").unwrap();
    assert_eq!(watch.next().status, Status::Finished);

    cell.run(2, &loader, b"").unwrap();
    assert_eq!((watch.next().status), Status::Running);
    let job = jobs.next();
    cell.cancel().unwrap();
    let restored = watch.next();
    assert_eq!((restored.status, restored.kind, restored.flags), (Status::Finished, 1, Flags::CANCELLED));
    assert!(job.is_cancelled());

    cell.run(3, &loader, b"").unwrap();
    watch.next();
    let job = jobs.next();
    cell.reset().unwrap();
    assert_eq!(watch.next().status, Status::Idle);
    assert!(job.is_cancelled());
}

#[test]
fn process_jobs_end_themselves_with_cancel_self_and_reset_self() {
    let (_runtime, loader, jobs, cell, mut watch) = process_setup();
    cell.run(4, &loader, b"").unwrap();
    watch.next();
    jobs.next().cancel_self().unwrap();
    let restored = watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Idle, Flags::CANCELLED));

    cell.run_with(5, &loader, b"", &LoadOptions::new().silent(true)).unwrap();
    let refreshing = watch.next();
    assert_eq!((refreshing.status, refreshing.flags), (Status::Idle, Flags::REFRESHING));
    jobs.next().reset_self().unwrap();
    assert_eq!(watch.next().status, Status::Idle);
}

#[test]
fn freeing_a_cell_with_a_running_job_cancels_it_and_ends_the_stream() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    drop(s.cell);
    rx.recv_timeout(DEADLINE).expect("freeing the cell cancels its job");
    assert_eq!(job.succeed(b"late").unwrap_err().kind(), ErrorKind::Cancelled);
    s.watch.expect_end();
}

#[test]
fn a_loaded_empty_value_is_some_empty() {
    let mut s = setup();
    s.cell.load(&s.loader, b"").unwrap();
    s.watch.next();
    s.jobs.next().succeed(b"").unwrap();
    let loaded = s.watch.next();
    assert_eq!(loaded.value, Some(Vec::new()));
}

#[test]
fn a_64_mib_value_loads_and_a_value_over_the_limit_is_too_big() {
    let mut s = setup();
    let big = vec![0xA5u8; 64 << 20];
    s.cell.load(&s.loader, b"big").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    job.succeed(&big).unwrap();
    let loaded = s.watch.next();
    assert!(loaded.value.as_deref() == Some(&big[..]), "the 64 MiB value arrives intact");
    drop(loaded);
    drop(big);

    // Zeroed pages are not touched: the length is refused first.
    let over = vec![0u8; loadstate::VALUE_MAX + 1];
    assert_eq!(s.cell.set_loaded(&over).unwrap_err().kind(), ErrorKind::TooBig);
    assert_eq!(s.cell.load(&s.loader, &over).unwrap_err().kind(), ErrorKind::TooBig);
    s.watch.expect_nothing_queued();
}

#[test]
fn a_panicking_loader_fails_its_job() {
    quiet_expected_panics();
    let runtime = Runtime::new().unwrap();
    let loader =
        runtime.loader(|job| panic!("{EXPECTED_PANIC}: no {}", String::from_utf8_lossy(job.request()))).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&loader, b"luck").unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    let failed = watch.next();
    assert_eq!(failed.status, Status::Error);
    assert_eq!(failed.error, host_error(PANIC_ERROR_CODE, &format!("loader panicked: {EXPECTED_PANIC}: no luck")));

    // The loader still works after a panic.
    cell.load(&loader, b"").unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    assert_eq!(watch.next().status, Status::Error);
}

#[test]
fn a_panicking_hook_does_not_stop_the_next_one() {
    quiet_expected_panics();
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (tx, rx) = mpsc::channel();
    job.on_cancel(|| panic!("{EXPECTED_PANIC}: hook failure")).unwrap();
    job.on_cancel(move || tx.send(()).unwrap()).unwrap();
    s.cell.cancel().unwrap();
    rx.recv_timeout(DEADLINE).expect("the second hook runs");
    assert_eq!(s.watch.next().flags, Flags::CANCELLED);
}

#[test]
fn hooks_of_a_job_that_ends_normally_are_dropped_not_run() {
    let mut s = setup();
    s.cell.load(&s.loader, b"r").unwrap();
    s.watch.next();
    let job = s.jobs.next();
    let (hook_tx, hook_rx) = mpsc::channel::<&str>();
    job.on_cancel(move || hook_tx.send("ran").unwrap()).unwrap();
    job.succeed(b"v").unwrap();
    // Disconnected: the hook was dropped without running.
    assert_eq!(hook_rx.recv_timeout(DEADLINE), Err(mpsc::RecvTimeoutError::Disconnected));
    assert_eq!(s.watch.next().status, Status::Loaded);
}

#[test]
fn calls_with_unknown_ids_or_bad_arguments_fail_without_events() {
    let mut s = setup();
    let raw = s.runtime.as_ptr();
    // SAFETY: valid runtime handle; these ids were never issued as jobs.
    unsafe {
        assert_eq!(loadstate::sys::lds_job_succeed(raw, 0, std::ptr::null(), 0), loadstate::sys::LDS_ENOENT);
        assert_eq!(loadstate::sys::lds_job_finish(raw, s.cell.id()), loadstate::sys::LDS_ENOENT);
        assert_eq!(loadstate::sys::lds_loadable_cancel(raw, s.loader.id()), loadstate::sys::LDS_ENOENT);
    }
    let options = LoadOptions::new().interrupts(vec![Duration::from_millis(1); 65]);
    assert_eq!(s.cell.load_with(&s.loader, b"r", &options).unwrap_err().kind(), ErrorKind::InvalidArgument);
    s.cell.set_loaded(b"barrier").unwrap();
    assert_eq!(s.watch.next().seq, 1, "failed calls emitted nothing");
}

#[test]
fn errors_carry_the_code_and_the_library_message() {
    let s = setup();
    let error = s.cell.refresh().unwrap_err();
    assert_eq!(error.code(), loadstate::sys::LDS_ESTATE);
    assert_eq!(error.message(), loadstate::strerror(loadstate::sys::LDS_ESTATE));
    assert!(!error.message().is_empty());
    assert_eq!(error.to_string(), format!("{} (-3)", error.message()));
    assert_eq!(loadstate::strerror(12345), "unknown error");
    for code in -9..=-1 {
        assert_ne!(loadstate::strerror(code), "unknown error", "code {code}");
        assert!(!matches!(loadstate::Error::from_code(code).kind(), ErrorKind::Other(_)));
    }
}

/// The header: a job counts as cancelled from the moment its cell's
/// cancel, reset, load, set_* or free is called, so a completion made right
/// after such a call returned (same thread, before the loop ran it) returns
/// `LDS_ECANCELED` and changes nothing.
#[test]
fn a_completion_right_after_the_cell_moved_on_returns_cancelled_and_changes_nothing() {
    for action in ["cancel", "load", "refresh", "reset", "set_loaded", "set_error", "free"] {
        let mut s = setup();
        s.cell.load(&s.loader, b"first").unwrap();
        assert_eq!(s.watch.next().status, Status::Loading);
        let job = s.jobs.next();
        let expected_status = match action {
            "cancel" => {
                s.cell.cancel().unwrap();
                Status::Absent
            }
            "load" => {
                s.cell.load(&s.loader, b"second").unwrap();
                Status::Loading
            }
            "reset" => {
                s.cell.reset().unwrap();
                Status::Absent
            }
            "refresh" => {
                s.cell.refresh().unwrap();
                Status::Loading
            }
            "set_loaded" => {
                s.cell.set_loaded(b"manual").unwrap();
                Status::Loaded
            }
            "set_error" => {
                s.cell.set_error(5, Some("manual")).unwrap();
                Status::Error
            }
            _ => {
                drop(s.cell);
                let result = job.succeed(b"late");
                assert_eq!(result.unwrap_err().kind(), ErrorKind::Cancelled, "after free");
                continue;
            }
        };
        let result = job.succeed(b"late");
        let next = s.watch.next();
        assert_ne!(next.value.as_deref(), Some(&b"late"[..]), "after {action}: the late value shows");
        assert_eq!(next.status, expected_status, "after {action}");
        assert_eq!(result.unwrap_err().kind(), ErrorKind::Cancelled, "after {action}");
    }
}

#[test]
fn a_runtime_that_spins_runs_loads_like_any_other() {
    let runtime = Runtime::with_spin(Delivery::Loop, Duration::from_micros(200)).expect("runtime");
    let (loader, jobs) = job_queue(&runtime);
    let (cell, events) = runtime.loadable().expect("cell");
    let mut watch = Watch::new(events);
    for i in 0..20u8 {
        cell.load(&loader, &[i]).unwrap();
        assert_eq!(watch.next().status, Status::Loading);
        jobs.next().succeed(&[i, i]).unwrap();
        let loaded = watch.next();
        assert_eq!(loaded.status, Status::Loaded);
        assert_eq!(loaded.value.as_deref(), Some(&[i, i][..]));
    }
    let too_long = Runtime::with_spin(Delivery::Loop, Duration::from_millis(101));
    assert!(matches!(too_long, Err(e) if e.code() == ErrorKind::InvalidArgument.code()));
}
