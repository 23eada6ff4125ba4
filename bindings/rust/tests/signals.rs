//! Host signals: online/offline and foreground/background.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{DEADLINE, Watch, setup};
use loadstate::{ErrorDomain, ErrorKind, Flags, LoadOptions, OfflineMode, Runtime, Status};

/// A short sleep, only to show that something does NOT happen meanwhile.
fn quiet(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

#[test]
fn signals_start_true_and_show_in_stats_and_metrics() {
    let runtime = Runtime::new().unwrap();
    assert!(runtime.is_online().unwrap() && runtime.is_foreground().unwrap());
    runtime.set_online(false).unwrap();
    runtime.set_online(false).unwrap();
    runtime.set_foreground(false).unwrap();
    assert!(!runtime.is_online().unwrap() && !runtime.is_foreground().unwrap());
    let stats = runtime.stats().unwrap();
    assert!(!stats.online && !stats.foreground);
    let text = runtime.metrics_text().unwrap();
    assert!(text.contains("\nloadstate_online 0\n") && text.contains("\nloadstate_foreground 0\n"), "{text}");
    runtime.set_online(true).unwrap();
    runtime.set_foreground(true).unwrap();
    assert!(runtime.stats().unwrap().online);
    assert_eq!(loadstate::Error::from_code(-13).kind(), ErrorKind::Offline);
}

#[test]
fn a_load_started_offline_waits_paused_and_runs_on_reconnect() {
    let mut s = setup();
    s.runtime.set_online(false).unwrap();
    s.cell.load(&s.loader, b"r").unwrap();
    let paused = s.watch.next();
    assert_eq!(paused.status, Status::Loading);
    assert!(paused.flags.contains(Flags::PAUSED), "{paused:?}");
    quiet(30);
    assert!(s.jobs.try_next().is_none(), "no loader call while offline");
    assert_eq!(s.runtime.stats().unwrap().loads_paused, 1);
    s.runtime.set_online(true).unwrap();
    s.jobs.next().succeed(b"v").unwrap();
    let resumed = s.watch.next();
    assert_eq!(resumed.status, Status::Loading);
    assert!(!resumed.flags.contains(Flags::PAUSED));
    assert_eq!(s.watch.wait_settled().value.as_deref(), Some(&b"v"[..]));
    let stats = s.runtime.stats().unwrap();
    assert_eq!((stats.loads_paused, stats.loads_paused_total), (0, 1));
}

#[test]
fn offline_fail_fails_at_once_and_offline_run_runs() {
    let mut s = setup();
    s.runtime.set_online(false).unwrap();
    s.cell.load_with(&s.loader, b"f", &LoadOptions::new().offline(OfflineMode::Fail)).unwrap();
    let failed = s.watch.wait_settled();
    assert_eq!(failed.status, Status::Error);
    let error = failed.error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Loadstate, -13));
    assert!(s.jobs.try_next().is_none());
    s.cell.load_with(&s.loader, b"r", &LoadOptions::new().offline(OfflineMode::Run)).unwrap();
    s.jobs.next().succeed(b"ran").unwrap();
    assert_eq!(s.watch.wait_settled().value.as_deref(), Some(&b"ran"[..]));
}

#[test]
fn offline_pauses_a_retry_until_online() {
    let mut s = setup();
    let options = LoadOptions::new().retries(1).retry_base(Duration::from_millis(1)).retry_max(Duration::from_millis(1));
    s.cell.load_with(&s.loader, b"r", &options).unwrap();
    let first = s.jobs.next();
    s.runtime.set_online(false).unwrap();
    first.fail(1, "down").unwrap();
    let paused = loop {
        let event = s.watch.next();
        if event.flags.contains(Flags::PAUSED) {
            break event;
        }
    };
    assert_eq!((paused.status, paused.attempt), (Status::Loading, 2));
    quiet(30);
    assert!(s.jobs.try_next().is_none(), "the retry waits");
    s.runtime.set_online(true).unwrap();
    s.jobs.next().succeed(b"v").unwrap();
    let loaded = s.watch.wait_settled();
    assert_eq!((loaded.status, loaded.attempt), (Status::Loaded, 2));
}

#[test]
fn cancel_of_a_paused_load_restores_the_state() {
    let mut s = setup();
    s.load_and_succeed(b"old");
    s.runtime.set_online(false).unwrap();
    s.cell.load(&s.loader, b"new").unwrap();
    assert!(s.watch.next().flags.contains(Flags::PAUSED));
    s.cell.cancel().unwrap();
    let restored = s.watch.next();
    assert_eq!(restored.status, Status::Loaded);
    assert!(restored.flags.contains(Flags::CANCELLED));
    assert_eq!(restored.value.as_deref(), Some(&b"old"[..]));
    s.runtime.set_online(true).unwrap();
    quiet(30);
    assert!(s.jobs.try_next().is_none());
}

/// A poll held by one signal fires again once the signal is set back.
fn poll_held_by(set: fn(&Runtime, bool) -> loadstate::Result<()>) {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    let loader = runtime
        .loader(move |job| {
            let _ = tx.send(());
            let _ = job.succeed(b"v");
        })
        .unwrap();
    let (cell, _events) = runtime.loadable().unwrap();
    cell.load_with(&loader, b"p", &LoadOptions::new().refresh_interval(Duration::from_millis(5))).unwrap();
    for _ in 0..2 {
        rx.recv_timeout(DEADLINE).unwrap();
    }
    set(&runtime, false).unwrap();
    quiet(40);
    while rx.try_recv().is_ok() {}
    quiet(40);
    assert!(rx.try_recv().is_err(), "no poll while held");
    set(&runtime, true).unwrap();
    rx.recv_timeout(DEADLINE).unwrap();
    rx.recv_timeout(DEADLINE).unwrap();
}

#[test]
fn a_poll_waits_while_offline_and_fires_on_return() {
    poll_held_by(Runtime::set_online);
}

#[test]
fn a_poll_waits_in_background_and_fires_on_return() {
    poll_held_by(Runtime::set_foreground);
}

#[test]
fn poll_in_background_goes_on() {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel::<()>();
    let loader = runtime
        .loader(move |job| {
            let _ = tx.send(());
            let _ = job.succeed(b"v");
        })
        .unwrap();
    runtime.set_foreground(false).unwrap();
    let (cell, _events) = runtime.loadable().unwrap();
    let options = LoadOptions::new().refresh_interval(Duration::from_millis(5)).poll_in_background(true);
    cell.load_with(&loader, b"p", &options).unwrap();
    for _ in 0..3 {
        rx.recv_timeout(DEADLINE).unwrap();
    }
}

#[test]
fn foreground_refreshes_stale_flagged_cells_once_per_throttle() {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let loader = runtime
        .loader(move |job| {
            let _ = tx.send(job.request().to_vec());
            let _ = job.succeed(job.request());
        })
        .unwrap();
    let flagged = LoadOptions::new().refresh_on_foreground(true);
    let mut cells = Vec::new();
    for (request, options) in [
        (&b"stale"[..], flagged.clone()),
        (b"fresh", flagged.clone().fresh(Duration::from_secs(600))),
        (b"plain", LoadOptions::new()),
    ] {
        let (cell, events) = runtime.loadable().unwrap();
        let mut watch = Watch::new(events);
        cell.load_with(&loader, request, &options).unwrap();
        assert_eq!(watch.wait_settled().status, Status::Loaded);
        assert_eq!(rx.recv_timeout(DEADLINE).unwrap(), request);
        cells.push((cell, watch));
    }
    runtime.set_foreground(false).unwrap();
    runtime.set_foreground(true).unwrap();
    assert_eq!(rx.recv_timeout(DEADLINE).unwrap(), b"stale");
    let refreshing = cells[0].1.next();
    assert!(refreshing.flags.contains(Flags::REFRESHING));
    assert_eq!(cells[0].1.wait_settled().status, Status::Loaded);
    // Within the default throttle (5 s): no second refresh.
    runtime.set_foreground(false).unwrap();
    runtime.set_foreground(true).unwrap();
    quiet(40);
    assert!(rx.try_recv().is_err(), "only the stale flagged cell refreshes, once");
}
