//! Typed cells and caches: requests and values through `Encode`/`Decode`
//! (`str`/`String` as UTF-8, bytes, `HttpRequest`/`HttpResponse`), the
//! typed future, and `HttpResponse::text`/`error_for_status`/`header_pairs`
//! against an HTTP server on 127.0.0.1.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use loadstate::{CodecError, Decode, HttpOptions, HttpRequest, HttpResponse, MemoryCacheOptions, Runtime, TypedError};

const DEADLINE: Duration = Duration::from_secs(20);

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        assert!(!left.is_zero(), "block_on: not woken in time");
        thread::park_timeout(left);
    }
}

/// Serves `/hello` (200, text) and anything else (404) on 127.0.0.1.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let path = request_line.split(' ').nth(1).unwrap_or("").to_owned();
            let (status, body) =
                if path == "/hello" { ("200 OK", "héllo") } else { ("404 Not Found", "no such page") };
            let reply = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nX-Test: yes\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    base
}

#[test]
fn a_str_to_string_cell_loads_text() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let greeter = runtime.loader(|job| {
        let mut value = b"hello, ".to_vec();
        value.extend_from_slice(job.request());
        let _ = job.succeed(&value);
    })?;
    let cell = runtime.typed_loadable::<str, String>()?;
    assert_eq!(cell.get()?, None);
    let value = cell.fetch(&greeter, "wörld", DEADLINE)?;
    assert_eq!(value, "hello, wörld");
    assert_eq!(cell.get()?.as_deref(), Some("hello, wörld"));
    let again = block_on(cell.load_async(&greeter, "async")?)?;
    assert_eq!(again, "hello, async");
    Ok(())
}

#[test]
fn a_loader_reads_and_answers_typed_values() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let shout = runtime.loader(|job| match job.request_as::<String>() {
        Ok(text) => {
            let _ = job.succeed_with(&text.to_uppercase());
        }
        Err(error) => {
            let _ = job.fail_final(1, &error.to_string());
        }
    })?;
    let cell = runtime.typed_loadable::<str, String>()?;
    assert_eq!(cell.fetch(&shout, "ärger", DEADLINE)?, "ÄRGER");
    let bytes = runtime.typed_loadable::<[u8], String>()?;
    match bytes.fetch(&shout, &[0xff], DEADLINE) {
        Err(TypedError::Load { error, .. }) => {
            assert!(error.message.is_some_and(|m| m.starts_with("String codec:")), "the codec error is the message");
        }
        other => panic!("expected a load error, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_value_that_does_not_decode_is_a_codec_error() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let loader = runtime.loader(|job| {
        let _ = job.succeed(&[0xff, 0xfe]);
    })?;
    let cell = runtime.typed_loadable::<str, String>()?;
    match cell.fetch(&loader, "x", DEADLINE) {
        Err(TypedError::Codec(CodecError { codec: "String", .. })) => {}
        other => panic!("expected a String codec error, got {other:?}"),
    }
    // The byte-level API still sees the bytes.
    assert_eq!(cell.cell().get()?.value.as_deref(), Some(&[0xff, 0xfe][..]));
    Ok(())
}

#[test]
fn a_failed_load_is_a_load_error_with_its_message() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let loader = runtime.loader(|job| {
        let _ = job.fail_final(7, "broken");
    })?;
    let cell = runtime.typed_loadable::<[u8], Vec<u8>>()?;
    match cell.fetch(&loader, b"x", DEADLINE) {
        Err(TypedError::Load { error, .. }) => {
            assert_eq!((error.code, error.message.as_deref()), (7, Some("broken")));
        }
        other => panic!("expected a load error, got {other:?}"),
    }
    Ok(())
}

#[test]
fn an_http_cell_is_typed_by_request_and_response() -> Result<(), Box<dyn std::error::Error>> {
    let base = serve();
    let runtime = Runtime::new()?;
    let http = runtime.http_loader(&HttpOptions::new())?;
    let cell = runtime.typed_loadable::<HttpRequest, HttpResponse>()?;
    let response = cell.fetch(&http, &HttpRequest::get(format!("{base}/hello")), DEADLINE)?.error_for_status()?;
    assert_eq!(response.status, 200);
    assert_eq!(response.text()?, "héllo");
    assert!(response.header_pairs().contains(&("X-Test".to_owned(), "yes".to_owned())));
    let outcome = block_on(cell.load_async(&http, &HttpRequest::get(format!("{base}/missing")))?);
    let error = outcome.expect_err("a 404 is an error state");
    let response = error.http_response().expect("the 404 response is carried");
    assert_eq!(response.status, 404);
    let status_error = response.error_for_status().expect_err("404 is not a success");
    assert_eq!(status_error.to_string(), "HTTP status 404: no such page");
    Ok(())
}

#[test]
fn a_typed_cache_stores_text_under_text_keys() -> Result<(), TypedError> {
    let runtime = Runtime::new()?;
    let cache = runtime.memory_cache(&MemoryCacheOptions::new())?;
    let typed = cache.typed::<str, String>();
    typed.put("greeting", &"hello".to_owned())?;
    assert_eq!(typed.get("greeting")?.as_deref(), Some("hello"));
    assert_eq!(typed.get("other")?, None);
    assert_eq!(cache.get(b"greeting")?.map(|e| e.value), Some(b"hello".to_vec()));
    assert!(typed.remove("greeting")?);
    Ok(())
}

#[test]
fn codecs_round_trip_and_refuse_what_they_cannot_read() {
    assert_eq!(String::decode("é".as_bytes()), Ok("é".to_owned()));
    assert!(String::decode(&[0xc3]).is_err());
    assert_eq!(Vec::<u8>::decode(&[1, 2]), Ok(vec![1, 2]));
    let error = <HttpResponse as Decode>::decode(b"not a response").err();
    assert_eq!(error.map(|e| e.codec), Some("HttpResponse"));
}
