//! End to end: request directives, `Age` and the cache's verdict against a
//! server on 127.0.0.1.
//!
//! These tests need the http loader's cache of issue #32 (request
//! directives honoured; `Age` and `Cache-Status: loadstate; ...` added to a
//! response served from the cache; heuristic freshness from
//! `Last-Modified`; `LDS_HTTP_NO_HEURISTIC_FRESHNESS`). Against a library
//! without it they fail; they are not ignored, so that the failure shows
//! what is missing.

#![allow(clippy::cast_possible_truncation)] // casts of small test numbers (counts, sizes, ms) known to fit
#![allow(clippy::cast_possible_wrap)] // casts of small test numbers known to fit
#![allow(clippy::cast_sign_loss)] // casts of test numbers known not to be negative

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{DEADLINE, Watch};
use loadstate::{
    CacheControl, CachePolicy, CacheVerdict, Event, HttpOptions, HttpRequest, HttpResponse, HttpVersion, LoadOptions,
    MemoryCacheOptions, Runtime, Status,
};

/// An HTTP date `seconds_ago` before now (IMF-fixdate).
fn http_date(seconds_ago: u64) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - seconds_ago;
    let (days, rest) = (now / 86400, now % 86400);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let name =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][(month - 1) as usize];
    format!("{weekday}, {day:02} {name} {year} {:02}:{:02}:{:02} GMT", rest / 3600, rest / 60 % 60, rest % 60)
}

/// A server: /fresh with `Cache-Control: max-age=60`, /modified with only a
/// `Last-Modified` a day old. Reports each request's path.
fn serve() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let path = head.split(' ').nth(1).unwrap_or("").to_owned();
            let extra = match path.as_str() {
                "/fresh" => "Cache-Control: max-age=60\r\n".to_owned(),
                _ => format!("Last-Modified: {}\r\nDate: {}\r\n", http_date(86400), http_date(0)),
            };
            let reply = format!("HTTP/1.1 200 OK\r\n{extra}Content-Length: 4\r\nConnection: close\r\n\r\nbody");
            let _ = stream.write_all(reply.as_bytes());
            let _ = tx.send(path);
        }
    });
    (base, rx)
}

struct Fixture {
    _runtime: Runtime,
    http: loadstate::Loader,
    cache: loadstate::Cache,
    cell: loadstate::Loadable,
    watch: Watch,
}

impl Fixture {
    fn new() -> Fixture {
        let runtime = Runtime::new().unwrap();
        let http = runtime.http_loader(&HttpOptions::new().no_proxy()).unwrap();
        let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
        let (cell, events) = runtime.loadable().unwrap();
        Fixture { _runtime: runtime, http, cache, cell, watch: Watch::new(events) }
    }

    fn load(&mut self, request: &HttpRequest) -> Event {
        let options = LoadOptions::new().cache(&self.cache).cache_key("k").cache_policy(CachePolicy::CacheFirst);
        let bytes = request.clone().version(HttpVersion::Http1).encode().unwrap();
        self.cell.load_with(&self.http, &bytes, &options).unwrap();
        self.watch.wait_settled()
    }
}

/// Asserts that the server saw no request since the last one received: a
/// request of the test's own to /marker must be the next it reports.
fn nothing_sent(base: &str, requests: &mpsc::Receiver<String>) {
    let mut stream = std::net::TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    stream.write_all(b"GET /marker HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    assert_eq!(requests.recv_timeout(DEADLINE).unwrap(), "/marker");
}

fn response(event: &Event) -> HttpResponse {
    HttpResponse::decode(event.value.as_deref().expect("a value")).unwrap()
}

#[test]
fn a_fresh_stored_response_comes_back_with_age_and_the_fresh_verdict() {
    let (base, requests) = serve();
    let mut f = Fixture::new();
    let request = HttpRequest::get(format!("{base}/fresh"));
    let first = f.load(&request);
    assert_eq!(first.status, Status::Loaded);
    assert_eq!(response(&first).cache_verdict(), None);
    requests.recv_timeout(DEADLINE).unwrap();
    let again = f.load(&request);
    let value = response(&again);
    assert_eq!(value.cache_verdict(), Some(CacheVerdict::Fresh), "{value:?}");
    assert!(value.age().is_some_and(|age| age <= 60), "{value:?}");
    nothing_sent(&base, &requests);
}

#[test]
fn a_response_with_only_last_modified_is_heuristic_unless_the_request_says_no() {
    let (base, requests) = serve();
    let mut f = Fixture::new();
    let request = HttpRequest::get(format!("{base}/modified"));
    f.load(&request);
    requests.recv_timeout(DEADLINE).unwrap();
    let again = f.load(&request);
    assert_eq!(response(&again).cache_verdict(), Some(CacheVerdict::Heuristic), "{again:?}");

    let mut g = Fixture::new();
    let strict = request.heuristic_freshness(false);
    g.load(&strict);
    requests.recv_timeout(DEADLINE).unwrap();
    let reloaded = g.load(&strict);
    assert_eq!(reloaded.status, Status::Loaded);
    assert_eq!(requests.recv_timeout(DEADLINE).unwrap(), "/modified");
}

#[test]
fn only_if_cached_on_an_empty_cache_is_a_504_without_the_network() {
    let (base, requests) = serve();
    let mut f = Fixture::new();
    let request = HttpRequest::get(format!("{base}/fresh")).cache_control(CacheControl::new().only_if_cached());
    let event = f.load(&request);
    assert_eq!(event.status, Status::Error, "{event:?}");
    let error = event.error.expect("an error");
    assert_eq!((error.domain, error.code), (loadstate::ErrorDomain::Http, 504));
    nothing_sent(&base, &requests);
}
