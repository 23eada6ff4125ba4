//! The built-in loaders through the safe API: files, commands, HTTP.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use common::{DEADLINE, Watch};
use loadstate::{
    ErrorDomain, ErrorKind, EventType, ExecOptions, ExecRequest, FileOptions, Flags, HttpOptions, HttpRequest,
    HttpResponse, HttpVersion, LoadOptions, MemoryCacheOptions, Runtime, Status, file_request,
};

/// A file path in a folder of its own (tests run in parallel), removed
/// with its folder when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("builtin-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.join(name))
    }
}

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::path::Path> for Scratch {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
    }
}

#[test]
fn the_file_loader_reads_a_file_with_progress() {
    let path = Scratch::new("contents.txt");
    let contents: Vec<u8> = (0..10_000u32).flat_map(u32::to_le_bytes).collect();
    std::fs::write(&path, &contents).unwrap();
    let runtime = Runtime::new().unwrap();
    let files = runtime.file_loader(&FileOptions::new().chunk_size(16 * 1024)).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    cell.load(&files, file_request(&path)).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    let mut last_done = 0;
    let loaded = loop {
        let event = watch.next();
        match event.event_type {
            EventType::Progress { done, total } => {
                assert!(done >= last_done && done <= contents.len() as u64, "progress {done} after {last_done}");
                assert_eq!(total, contents.len() as u64);
                last_done = done;
            }
            _ if event.is_settled() => break event,
            _ => {}
        }
    };
    assert_eq!(loaded.status, Status::Loaded);
    assert!(loaded.value.as_deref() == Some(&contents[..]), "the file's contents");
    assert_eq!(last_done, contents.len() as u64, "progress reaches the file's size");
}

#[test]
fn the_file_loader_reports_a_missing_file_and_a_file_too_big() {
    let runtime = Runtime::new().unwrap();
    let files = runtime.file_loader(&FileOptions::new()).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    let missing = Scratch::new("does-not-exist");
    cell.load(&files, file_request(&missing)).unwrap();
    watch.next();
    let error = watch.next().error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Os, 2), "ENOENT");
    assert!(error.message.unwrap().starts_with("open "));

    let big = Scratch::new("big.bin");
    std::fs::write(&big, [7u8; 100]).unwrap();
    let small = runtime.file_loader(&FileOptions::new().max_size(10)).unwrap();
    cell.load(&small, file_request(&big)).unwrap();
    watch.next();
    let error = watch.next().error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Loadstate, ErrorKind::TooBig.code()));
}

#[test]
fn the_exec_loader_returns_stdout_and_reports_a_failed_exit() {
    let runtime = Runtime::new().unwrap();
    let commands = runtime.exec_loader(&ExecOptions::new()).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);

    let request = ExecRequest::new("sh", ["-c", "printf \"$GREETING from $(pwd)\""])
        .env([("GREETING", "hello"), ("PATH", "/usr/bin:/bin")])
        .cwd("/");
    cell.load(&commands, &request.encode().unwrap()).unwrap();
    watch.next();
    let loaded = watch.wait_settled();
    assert_eq!(loaded.value.as_deref(), Some(&b"hello from /"[..]));

    let failing = ExecRequest::new("sh", ["-c", "echo partial; echo broken >&2; exit 3"]);
    cell.load(&commands, &failing.encode().unwrap()).unwrap();
    watch.next();
    let failed = watch.wait_settled();
    let error = failed.error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Exit, 3));
    assert!(error.message.unwrap().contains("broken"), "the message holds stderr");

    assert_eq!(ExecRequest::new("nul\0inside", [""; 0]).encode().unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn the_exec_loader_streams_lines_and_stops_a_cancelled_command() {
    unsafe extern "C" {
        fn mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
    let fifo = Scratch::new("gate.fifo");
    let _ = std::fs::remove_file(&fifo);
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path string.
    assert_eq!(unsafe { mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");

    let runtime = Runtime::new().unwrap();
    let streaming = runtime.exec_loader(&ExecOptions::new().stream_lines(true)).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    // The second line is printed only once the test opens the gate, after
    // it has seen the first one.
    let script = format!("echo one; cat '{}'; echo two", fifo.display());
    cell.load(&streaming, &ExecRequest::new("sh", ["-c", &script]).encode().unwrap()).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    let first = watch.next();
    assert_eq!((first.flags, first.value.as_deref()), (Flags::PARTIAL, Some(&b"one\n"[..])));
    drop(std::fs::OpenOptions::new().write(true).open(&fifo).unwrap());
    let done = watch.wait_settled();
    assert_eq!((done.flags, done.value.as_deref()), (Flags::NONE, Some(&b"one\ntwo\n"[..])));

    // A command that would run for a minute ends with the cancel.
    let sleeper = ExecRequest::new("sleep", ["60"]);
    cell.load(&streaming, &sleeper.encode().unwrap()).unwrap();
    assert_eq!(watch.next().status, Status::Loading);
    cell.cancel().unwrap();
    let restored = watch.next();
    assert_eq!((restored.status, restored.flags), (Status::Loaded, Flags::CANCELLED));
    // Freeing the runtime reaps every child; it returns.
    drop(runtime);
}

/// A one-connection-at-a-time HTTP server on a local port. Each request is
/// reported on the channel as (request line, body); the reply depends on
/// the path.
fn serve(connections: usize) -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming().take(connections) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
            let (status, reply): (&str, Vec<u8>) = match path.as_str() {
                "/hello" => ("200 OK", b"hello".to_vec()),
                "/echo" => ("200 OK", body.clone()),
                _ => ("404 Not Found", b"nope".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nX-Served-By: test\r\nConnection: close\r\n\r\n",
                reply.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(&reply).unwrap();
            tx.send((request_line.trim_end().to_owned(), body)).unwrap();
        }
    });
    (base, rx)
}

#[test]
fn the_http_loader_fetches_decodes_and_reports_statuses() {
    let (base, requests) = serve(3);
    let runtime = Runtime::new().unwrap();
    let http = runtime.http_loader(&HttpOptions::new().user_agent("loadstate-rust-tests").no_proxy()).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);

    cell.load(&http, &HttpRequest::get(format!("{base}/hello")).encode().unwrap()).unwrap();
    watch.next();
    let loaded = watch.wait_settled();
    assert_eq!(loaded.status, Status::Loaded, "{loaded:?}");
    let response = HttpResponse::decode(loaded.value.as_deref().unwrap()).unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"hello");
    assert_eq!(response.header("x-served-by").as_deref(), Some("test"));
    assert_eq!(requests.recv_timeout(DEADLINE).unwrap().0, "GET /hello HTTP/1.1");

    let post = HttpRequest::get(format!("{base}/echo")).method("POST").header("X-Kind", "echo").body("ping");
    cell.load(&http, &post.encode().unwrap()).unwrap();
    watch.next();
    let echoed = HttpResponse::decode(watch.wait_settled().value.as_deref().unwrap()).unwrap();
    assert_eq!(echoed.body, b"ping");
    assert_eq!(requests.recv_timeout(DEADLINE).unwrap(), ("POST /echo HTTP/1.1".to_owned(), b"ping".to_vec()));

    cell.load(&http, &HttpRequest::get(format!("{base}/missing")).encode().unwrap()).unwrap();
    watch.next();
    let error = watch.wait_settled().error.expect("an error");
    assert_eq!((error.domain, error.code), (ErrorDomain::Http, 404));

    let bad_header = HttpRequest::get(format!("{base}/hello")).header("X-Bad", "line\nbreak");
    assert_eq!(bad_header.encode().unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(HttpResponse::decode(b"not a response").unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// The header: `lds_http_request_encode` refuses a header line with CR or
/// LF, alone or as a pair, anywhere in the line.
#[test]
fn a_header_line_holding_cr_lf_is_refused() {
    for value in ["line\r\nInjected: yes", "line\rbreak", "line\nbreak", "trailing\r\n", "\r\nleading"] {
        let injected = HttpRequest::get("http://127.0.0.1:1/").header("X-Bad", value);
        assert_eq!(injected.encode().unwrap_err().kind(), ErrorKind::InvalidArgument, "{value:?}");
    }
    let clean = HttpRequest::get("http://127.0.0.1:1/").header("X-Good", "plain value");
    assert!(clean.encode().is_ok());
}

/// A server for two connections: the first gets a body with an `ETag`, the
/// second, when it asks with that `ETag`, a 304. Reports each request head.
fn serve_etag() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            let reply = if head.contains("If-None-Match: \"r1\"\r\n") {
                "HTTP/1.1 304 Not Modified\r\nETag: \"r1\"\r\nConnection: close\r\n\r\n".to_owned()
            } else {
                "HTTP/1.1 200 OK\r\nETag: \"r1\"\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody".to_owned()
            };
            stream.write_all(reply.as_bytes()).unwrap();
            tx.send(head).unwrap();
        }
    });
    (base, rx)
}

#[test]
fn a_cached_response_is_revalidated_and_a_304_is_flagged_revalidated() {
    let (base, requests) = serve_etag();
    let runtime = Runtime::new().unwrap();
    let http = runtime.http_loader(&HttpOptions::new().no_proxy()).unwrap();
    let cache = runtime.memory_cache(&MemoryCacheOptions::new()).unwrap();
    let (cell, events) = runtime.loadable().unwrap();
    let mut watch = Watch::new(events);
    let request = HttpRequest::get(format!("{base}/page")).version(HttpVersion::Http1).encode().unwrap();
    let options = LoadOptions::new().cache(&cache).cache_key("page");

    cell.load_with(&http, &request, &options).unwrap();
    watch.next();
    let first = watch.wait_settled();
    assert!(!first.flags.contains(Flags::FROM_CACHE), "{first:?}");
    assert!(!requests.recv_timeout(DEADLINE).unwrap().contains("If-None-Match"));

    cell.load_with(&http, &request, &options).unwrap();
    watch.next();
    let second = watch.wait_settled();
    assert_eq!(second.status, Status::Loaded);
    assert!(second.flags.contains(Flags::FROM_CACHE | Flags::REVALIDATED), "{second:?}");
    assert_eq!(HttpResponse::decode(second.value.as_deref().unwrap()).unwrap().body, b"body");
    assert!(requests.recv_timeout(DEADLINE).unwrap().contains("If-None-Match: \"r1\"\r\n"));
}

#[test]
fn http_requests_take_a_version_a_ca_file_and_no_compression() {
    let base = HttpRequest::get("https://127.0.0.1:1/");
    let plain = base.clone().encode().unwrap();
    let with_ca = base.clone().ca_file("/etc/ssl/certs/ca-certificates.crt").encode().unwrap();
    assert_eq!(&with_ca[..plain.len()], &plain[..]);
    assert!(with_ca.len() > plain.len());
    for version in [HttpVersion::Automatic, HttpVersion::Http1, HttpVersion::Http2] {
        assert!(base.clone().version(version).no_compression(true).encode().is_ok());
    }
}
