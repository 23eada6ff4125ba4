//! Pages cells: infinite loads, one job per page.

mod common;

use std::thread::sleep;
use std::time::Duration;

use common::{DEADLINE, JobQueue, job_queue};
use loadstate::{
    CachePolicy, ErrorDomain, ErrorKind, Event, Events, Flags, Job, LoadOptions, Loader, MemoryCacheOptions, Page,
    PageRequest, Pages, Runtime, Status, sys,
};

/// Reads events until one matches `test`; panics after the deadline.
fn wait(events: &Events, test: impl FnMut(&Event) -> bool) -> Event {
    events.wait_until(test, DEADLINE).expect("the expected event")
}

/// A settled event of page `index` (loaded or error, not refreshing).
fn settled(events: &Events, index: i32) -> Event {
    wait(events, |e| e.kind == index && e.is_settled())
}

fn request_of(job: &Job) -> (Vec<u8>, Option<Vec<u8>>, i32) {
    let r = PageRequest::decode(job.request()).expect("a page request");
    (r.request.to_vec(), r.cursor.map(<[u8]>::to_vec), r.direction)
}

struct Fixture {
    runtime: Runtime,
    loader: Loader,
    jobs: JobQueue,
}

fn fixture() -> Fixture {
    let runtime = Runtime::new().expect("runtime");
    let (loader, jobs) = job_queue(&runtime);
    Fixture { runtime, loader, jobs }
}

impl Fixture {
    /// Loads "q"; the first page returns "p0" with next "c1" and previous "c0".
    fn first(&self, pages: &Pages, events: &Events, options: &LoadOptions) {
        pages.load_with(&self.loader, b"q", options).unwrap();
        let job = self.jobs.next();
        assert_eq!(request_of(&job), (b"q".to_vec(), None, 0));
        job.succeed_page(b"p0", Some(b"c1"), Some(b"c0")).unwrap();
        assert_eq!(settled(events, 0).value.as_deref(), Some(&b"p0"[..]));
    }

    fn next(&self, pages: &Pages, events: &Events, cursor: &[u8], value: &[u8], next: Option<&[u8]>) -> Event {
        pages.load_next().unwrap();
        let job = self.jobs.next();
        assert_eq!(request_of(&job), (b"q".to_vec(), Some(cursor.to_vec()), 1));
        job.succeed_page(value, next, Some(b"back")).unwrap();
        wait(events, |e| e.is_settled() && e.value.as_deref() == Some(value))
    }
}

fn values(pages: &Pages) -> Vec<Vec<u8>> {
    pages.values().unwrap().into_iter().map(Option::unwrap_or_default).collect()
}

#[test]
fn three_pages_forward_and_one_backward() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 0, Some("feed")).unwrap();
    assert_eq!(pages.name(), Some("feed"));
    assert_eq!(pages.load_next().unwrap_err().kind(), ErrorKind::State);
    f.first(&pages, &events, &LoadOptions::new());
    assert!(pages.has_next().unwrap() && pages.has_previous().unwrap());
    assert_eq!(f.next(&pages, &events, b"c1", b"p1", Some(b"c2")).kind, 1);
    let third = f.next(&pages, &events, b"c2", b"p2", None);
    assert_eq!((third.kind, third.request.as_deref()), (2, Some(&b"q"[..])));
    assert!(!pages.has_next().unwrap());
    assert_eq!(pages.load_next().unwrap_err().kind(), ErrorKind::State);

    pages.load_previous().unwrap();
    let job = f.jobs.next();
    assert_eq!(request_of(&job), (b"q".to_vec(), Some(b"c0".to_vec()), -1));
    job.succeed_page(b"p-1", Some(b"c0x"), None).unwrap();
    let inserted = settled(&events, 0);
    assert!(inserted.flags.contains(Flags::PAGE_PREVIOUS) && !inserted.flags.contains(Flags::PAGES_DROPPED));
    assert_eq!(inserted.value.as_deref(), Some(&b"p-1"[..]));
    assert_eq!(values(&pages), [&b"p-1"[..], b"p0", b"p1", b"p2"]);
    assert_eq!(pages.get(3).unwrap().kind, 3);
    assert_eq!(pages.get(4).unwrap_err().kind(), ErrorKind::NotFound);
    assert!(!pages.has_previous().unwrap());
    pages.reset().unwrap();
    wait(&events, |e| e.status == Status::Absent);
    assert!(pages.is_empty().unwrap());
}

#[test]
fn the_cap_drops_pages_from_the_other_end() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 2, None).unwrap();
    f.first(&pages, &events, &LoadOptions::new());
    f.next(&pages, &events, b"c1", b"p1", Some(b"c2"));
    let third = f.next(&pages, &events, b"c2", b"p2", Some(b"c3"));
    assert_eq!(third.kind, 1);
    assert!(third.flags.contains(Flags::PAGES_DROPPED));
    assert_eq!(values(&pages), [&b"p1"[..], b"p2"]);
    assert_eq!(Pages::new(&f.runtime, sys::LDS_PAGES_MAX + 1, None).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn refresh_reloads_in_order_and_stops_at_a_changed_cursor() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 0, None).unwrap();
    f.first(&pages, &events, &LoadOptions::new());
    f.next(&pages, &events, b"c1", b"p1", Some(b"c2"));
    f.next(&pages, &events, b"c2", b"p2", None);
    pages.refresh().unwrap();
    let first = f.jobs.next();
    assert_eq!(request_of(&first), (b"q".to_vec(), None, 0));
    wait(&events, |e| e.kind == 0 && e.flags.contains(Flags::REFRESHING));
    // Page 1 waits for page 0 (a short look: nothing may start meanwhile).
    sleep(Duration::from_millis(30));
    assert!(f.jobs.try_next().is_none());
    first.succeed_page(b"p0 new", Some(b"c1"), Some(b"c0")).unwrap();
    assert_eq!(settled(&events, 0).value.as_deref(), Some(&b"p0 new"[..]));
    let second = f.jobs.next();
    assert_eq!(request_of(&second), (b"q".to_vec(), Some(b"c1".to_vec()), 1));
    second.succeed_page(b"p1 new", Some(b"elsewhere"), Some(b"c0")).unwrap();
    let ended = settled(&events, 1);
    assert!(ended.flags.contains(Flags::PAGES_DROPPED));
    assert_eq!(values(&pages), [&b"p0 new"[..], b"p1 new"]);
    sleep(Duration::from_millis(30));
    assert!(f.jobs.try_next().is_none());
}

#[test]
fn a_failed_next_page_leaves_the_others_and_a_cancel_ends_one_under_way() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 0, None).unwrap();
    f.first(&pages, &events, &LoadOptions::new());
    pages.load_next().unwrap();
    f.jobs.next().fail_final(42, "down").unwrap();
    let failed = settled(&events, 1);
    assert_eq!((failed.status, failed.error.as_ref().map(|e| e.code)), (Status::Error, Some(42)));
    assert_eq!(values(&pages), [&b"p0"[..]]);

    pages.load_next().unwrap();
    let job = f.jobs.next();
    pages.cancel().unwrap();
    let cancelled = wait(&events, |e| e.kind == 1 && e.flags.contains(Flags::CANCELLED));
    assert_eq!(cancelled.status, Status::Absent);
    assert_eq!(job.succeed_page(b"late", None, None).unwrap_err().kind(), ErrorKind::Cancelled);
    assert_eq!(values(&pages), [&b"p0"[..]]);
}

#[test]
fn pages_are_cached_with_their_cursors_and_shared() {
    let f = fixture();
    let cache = f.runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let options =
        LoadOptions::new().cache(&cache).cache_policy(CachePolicy::CacheFirst).fresh(Duration::from_secs(60));
    let (one, one_events) = Pages::new(&f.runtime, 0, None).unwrap();
    f.first(&one, &one_events, &options);
    f.next(&one, &one_events, b"c1", b"p1", Some(b"c2"));
    let (two, two_events) = Pages::new(&f.runtime, 0, None).unwrap();
    two.load_with(&f.loader, b"q", &options).unwrap();
    assert!(settled(&two_events, 0).flags.contains(Flags::FROM_CACHE));
    two.load_next().unwrap();
    assert!(settled(&two_events, 1).flags.contains(Flags::FROM_CACHE));
    assert!(two.has_next().unwrap());
    assert!(f.jobs.try_next().is_none());

    let shared = LoadOptions::new().share(true);
    let (a, a_events) = Pages::new(&f.runtime, 0, None).unwrap();
    let (b, b_events) = Pages::new(&f.runtime, 0, None).unwrap();
    a.load_with(&f.loader, b"s", &shared).unwrap();
    wait(&a_events, |e| e.status == Status::Loading);
    b.load_with(&f.loader, b"s", &shared).unwrap();
    wait(&b_events, |e| e.status == Status::Loading);
    f.jobs.next().succeed_page(b"s0", Some(b"n"), None).unwrap();
    settled(&a_events, 0);
    settled(&b_events, 0);
    assert!(f.jobs.try_next().is_none());
}

#[test]
fn bad_values_and_requests_are_errors() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 0, None).unwrap();
    pages.load(&f.loader, b"q").unwrap();
    f.jobs.next().succeed(b"\0LPV\x09\0\0\0x").unwrap();
    let bad = settled(&events, 0);
    let error = bad.error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Loadstate, sys::LDS_EINVAL));
    pages.load(&f.loader, b"q").unwrap();
    f.jobs.next().succeed(b"plain").unwrap();
    assert_eq!(wait(&events, |e| e.status == Status::Loaded).value.as_deref(), Some(&b"plain"[..]));
    assert!(!pages.has_next().unwrap());
    pages.load(&f.loader, b"q").unwrap();
    let long = vec![b'c'; loadstate::CURSOR_MAX + 1];
    assert_eq!(f.jobs.next().succeed_page(b"v", Some(&long), None).unwrap_err().kind(), ErrorKind::TooBig);
    assert_eq!(settled(&events, 0).error.map(|e| e.code), Some(sys::LDS_ETOOBIG));
    assert_eq!(PageRequest::decode(b"nope").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_page_loader_returns_pages_with_cursors() {
    let runtime = Runtime::new().unwrap();
    let loader = Pages::loader(&runtime, |request| {
        let number: u8 = request.cursor.map_or(0, |c| c[0]);
        let page = Page::new(vec![b'a' + number]);
        Ok(if number < 2 { page.with_next(vec![number + 1]) } else { page })
    })
    .unwrap();
    let (pages, events) = Pages::new(&runtime, 0, None).unwrap();
    pages.load(&loader, b"x").unwrap();
    settled(&events, 0);
    pages.load_next().unwrap();
    settled(&events, 1);
    pages.load_next().unwrap();
    settled(&events, 2);
    assert_eq!(values(&pages), [&b"a"[..], b"b", b"c"]);
    assert!(!pages.has_next().unwrap());
    let failing = Pages::loader(&runtime, |_| Err((7, "no".to_owned()))).unwrap();
    pages.load(&failing, b"x").unwrap();
    assert_eq!(settled(&events, 0).error.map(|e| e.code), Some(7));
}

/// A load asked for before the one before it ended its first page: each
/// load's first event is flagged `PAGES_LOAD`, so a reader of the stream
/// tells the loads apart; the earlier load's page shows nothing after it.
#[test]
fn each_load_has_one_start_event() {
    let f = fixture();
    let (pages, events) = Pages::new(&f.runtime, 0, None).unwrap();
    pages.load(&f.loader, b"A").unwrap();
    let job_a = f.jobs.next();
    pages.load(&f.loader, b"B").unwrap();
    let job_b = f.jobs.next();
    assert_eq!(request_of(&job_b).0, b"B".to_vec());
    // A's job went with its page: what it ends with shows nothing.
    let _ = job_a.succeed_page(b"pA", None, None);
    job_b.succeed_page(b"pB", None, None).unwrap();
    let mut seen = Vec::new();
    let done = wait(&events, |e| {
        seen.push(e.clone());
        e.is_settled()
    });
    assert_eq!((done.value.as_deref(), done.request.as_deref()), (Some(&b"pB"[..]), Some(&b"B"[..])));
    let starts: Vec<_> = seen.iter().filter(|e| e.flags.contains(Flags::PAGES_LOAD)).collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0].request.as_deref(), Some(&b"A"[..]));
    assert_eq!(starts[1].request.as_deref(), Some(&b"B"[..]));
    assert!(starts.iter().all(|e| e.status == Status::Loading && e.kind == 0));
    assert_eq!(seen.len(), 3, "A's start, B's start, B's page: {seen:?}");
}
