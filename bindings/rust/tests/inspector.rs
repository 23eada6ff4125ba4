//! `Runtime::start_inspector`, `inspector_url` and `stop_inspector`: arguments,
//! states, and requests over a socket.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use loadstate::{ErrorKind, InspectorOptions, Limits, Runtime};

/// The port and token of an inspector URL.
fn parts(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://127.0.0.1:").expect("a loopback URL");
    let (port, query) = rest.split_once("/?token=").expect("a token");
    (port.parse().unwrap(), query.to_owned())
}

/// Sends a GET of `target` with a `Host` naming the bound address; the
/// whole answer.
fn get(port: u16, target: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn the_inspector_starts_serves_with_its_token_and_stops() {
    let runtime = Runtime::new().unwrap();
    assert_eq!(runtime.inspector_url().unwrap(), None);
    assert!(!runtime.stop_inspector().unwrap());
    let url = runtime.start_inspector("127.0.0.1:0", &InspectorOptions::new()).unwrap();
    assert_eq!(runtime.inspector_url().unwrap().as_deref(), Some(url.as_str()));
    let (port, token) = parts(&url);
    assert_eq!(token.len(), 32);
    let err = runtime.start_inspector("127.0.0.1:0", &InspectorOptions::new()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::State);

    let page = get(port, &format!("/?token={token}"));
    assert!(page.starts_with("HTTP/1.1 200 ") && page.contains("<title>loadstate inspector</title>"));
    assert!(get(port, "/snapshot").starts_with("HTTP/1.1 403 "));

    assert!(runtime.stop_inspector().unwrap());
    assert_eq!(runtime.inspector_url().unwrap(), None);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    // A new one gets a new token.
    let again = runtime.start_inspector("localhost:0", &InspectorOptions::new().show_values(true)).unwrap();
    assert_ne!(parts(&again).1, token);
}

#[test]
fn the_snapshot_lists_a_job_waiting_for_its_loaders_limits() {
    let runtime = Runtime::new().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let loader = runtime
        .loader_with_limits(Limits::new().max_concurrent(1), move |job| {
            let _ = tx.send(job);
        })
        .unwrap();
    let (first, _first_events) = runtime.loadable().unwrap();
    let (second, _second_events) = runtime.loadable().unwrap();
    first.load(&loader, b"running").unwrap();
    let running = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    second.load(&loader, b"waiting").unwrap();
    let url =
        runtime.start_inspector("127.0.0.1:0", &InspectorOptions::new().interval(Duration::from_millis(50))).unwrap();
    let (port, token) = parts(&url);
    let snapshot = get(port, &format!("/snapshot?token={token}"));
    assert!(snapshot.starts_with("HTTP/1.1 200 "), "{snapshot}");
    assert!(snapshot.contains("\"queued_jobs_total\":1"), "{snapshot}");
    assert!(snapshot.contains("\"request\":\"waiting\""), "{snapshot}");
    running.succeed(b"done").unwrap();
}

#[test]
fn bad_addresses_and_options_are_refused() {
    let runtime = Runtime::new().unwrap();
    for address in ["0.0.0.0:0", "10.1.2.3:0", "127.0.0.1", "127.0.0.1:99999", "example.com:80", "", "127.0.0.1:0\0"] {
        let err = runtime.start_inspector(address, &InspectorOptions::new()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{address:?}");
    }
    let too_often = InspectorOptions::new().interval(Duration::from_millis(10));
    assert_eq!(runtime.start_inspector("127.0.0.1:0", &too_often).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(runtime.inspector_url().unwrap(), None);
}
