//! `ExecRequest::decode` and `HttpRequest::decode` over the library's
//! request decoders: round trips, and truncations refused.

use std::time::Duration;

use loadstate::{ErrorKind, ExecRequest, HttpRequest, HttpVersion};

#[test]
fn request_decode_exec_round_trips() {
    let requests = [
        ExecRequest::new("true", Vec::<&str>::new()),
        ExecRequest::new("printf", ["", "caf\u{e9}"]).env([("A", "1"), ("EMPTY", "")]).cwd("/tmp"),
        ExecRequest::new("x", ["y"]).env(Vec::<(&str, &str)>::new()).cwd(""),
    ];
    for request in requests {
        let bytes = request.encode().unwrap();
        let decoded = ExecRequest::decode(&bytes).unwrap();
        assert_eq!(decoded, request);
        assert_eq!(decoded.encode().unwrap(), bytes);
    }
}

#[test]
fn request_decode_http_round_trips() {
    let requests = [
        HttpRequest::get("http://example.invalid/").method("GET").max_redirects(2),
        HttpRequest::get("https://example.invalid/a?b=c")
            .method("PUT")
            .header("Accept", "text/plain")
            .header("X-Utf8", "caf\u{e9}")
            .body(b"a\0b".to_vec())
            .timeout(Duration::from_millis(2500))
            .max_redirects(u32::MAX)
            .max_body(u64::MAX)
            .insecure(true)
            .no_compression(true)
            .version(HttpVersion::Http1)
            .ca_file("/ca.pem")
            .heuristic_freshness(false)
            .stale_on_disconnect(false),
        HttpRequest::get("http://example.invalid/").method("HEAD").no_redirects(true).ca_file(""),
    ];
    for request in requests {
        let bytes = request.encode().unwrap();
        let decoded = HttpRequest::decode(&bytes).unwrap();
        assert_eq!(decoded, request);
        assert_eq!(decoded.encode().unwrap(), bytes);
    }
    // No method given: it comes back as GET, and encodes the same.
    let bytes = HttpRequest::get("http://example.invalid/").encode().unwrap();
    assert_eq!(HttpRequest::decode(&bytes).unwrap().encode().unwrap(), bytes);
}

#[test]
fn request_decode_refuses_every_truncation() {
    let exec = ExecRequest::new("sh", ["-c", "x"]).env([("A", "b")]).cwd("/").encode().unwrap();
    for n in 0..exec.len() {
        assert_eq!(ExecRequest::decode(&exec[..n]).unwrap_err().kind(), ErrorKind::InvalidArgument, "{n}");
    }
    let http = HttpRequest::get("http://h/").header("A", "b").body(b"x".to_vec()).encode().unwrap();
    for n in 0..http.len() {
        assert_eq!(HttpRequest::decode(&http[..n]).unwrap_err().kind(), ErrorKind::InvalidArgument, "{n}");
    }
}
