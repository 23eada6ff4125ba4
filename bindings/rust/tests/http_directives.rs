//! Request cache directives, the heuristic-freshness flag, and the `Age`
//! and `Cache-Status` of a response. No server: encodings and parsing only.

#![allow(clippy::format_collect)] // building test data; speed does not matter here

use loadstate::{CacheControl, CacheVerdict, HttpRequest, HttpResponse, MaxStale, sys};

fn response(lines: &[(&str, &str)]) -> HttpResponse {
    let headers = lines.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect::<String>();
    HttpResponse { status: 200, headers: headers.into_bytes(), body: Vec::new() }
}

/// The flags word of an encoded request: after magic, method, url, headers,
/// body, timeout, `max_body` and `max_redirects`.
fn flags_of(encoded: &[u8]) -> u32 {
    let mut at = 4;
    let u32_at = |at: usize| u32::from_le_bytes(encoded[at..at + 4].try_into().unwrap());
    for _ in 0..2 {
        let len = u32_at(at);
        at += 4 + if len == u32::MAX { 0 } else { len as usize };
    }
    let count = u32_at(at);
    at += 4;
    for _ in 0..if count == u32::MAX { 0 } else { count } {
        at += 4 + u32_at(at) as usize;
    }
    let len = u32_at(at);
    at += 4 + if len == u32::MAX { 0 } else { len as usize };
    u32_at(at + 4 + 8 + 4)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn cache_control_gives_the_header_value_in_a_fixed_order() {
    assert_eq!(CacheControl::new().max_age(60).to_string(), "max-age=60");
    assert_eq!(CacheControl::new().max_stale_any().to_string(), "max-stale");
    assert_eq!(CacheControl::new().max_stale(30).to_string(), "max-stale=30");
    assert_eq!(
        CacheControl::new().only_if_cached().no_store().no_cache().min_fresh(5).max_age(0).to_string(),
        "max-age=0, min-fresh=5, no-cache, no-store, only-if-cached"
    );
    assert_eq!(CacheControl::new().to_string(), "");
    assert!(CacheControl::new().is_empty() && !CacheControl::new().no_cache().is_empty());
}

#[test]
fn cache_control_parse_reads_its_own_directives_and_nothing_else() {
    assert_eq!(CacheControl::parse("max-age=60, no-cache"), Some(CacheControl::new().max_age(60).no_cache()));
    assert_eq!(
        CacheControl::parse("  MAX-STALE ,only-if-cached "),
        Some(CacheControl { max_stale: Some(MaxStale::Any), only_if_cached: true, ..CacheControl::default() })
    );
    assert_eq!(CacheControl::parse("max-age=99999999999"), Some(CacheControl::new().max_age(1 << 31)));
    for other in [
        "max-age",
        "max-age=",
        "max-age=-1",
        "max-age=1.5",
        "max-age=\"5\"",
        "no-cache=x",
        "no-transform",
        "max-age=1, max-age=2",
        "max-age =5",
    ] {
        assert_eq!(CacheControl::parse(other), None, "{other}");
    }
}

#[test]
fn a_request_sends_its_directives_as_a_cache_control_line() {
    let encoded = HttpRequest::get("http://127.0.0.1/")
        .header("Accept", "text/plain")
        .cache_control(CacheControl::new().max_age(0).only_if_cached())
        .encode()
        .unwrap();
    assert!(contains(&encoded, "Cache-Control: max-age=0, only-if-cached"));
    let empty = HttpRequest::get("http://127.0.0.1/").cache_control(CacheControl::new()).encode().unwrap();
    assert!(!contains(&empty, "Cache-Control"));
    assert_eq!(empty, HttpRequest::get("http://127.0.0.1/").encode().unwrap());
}

#[test]
fn cache_control_in_both_places_is_refused() {
    let both = HttpRequest::get("http://127.0.0.1/")
        .header("cache-control", "no-store")
        .cache_control(CacheControl::new().no_cache());
    assert_eq!(both.encode().unwrap_err().kind(), loadstate::ErrorKind::InvalidArgument);
    assert!(HttpRequest::get("http://127.0.0.1/").header("Cache-Control", "no-store").encode().is_ok());
}

#[test]
fn heuristic_freshness_off_is_flag_bit_5() {
    assert_eq!(sys::LDS_HTTP_NO_HEURISTIC_FRESHNESS, 1 << 5);
    let off = HttpRequest::get("http://127.0.0.1/").heuristic_freshness(false).encode().unwrap();
    assert_eq!(flags_of(&off) & sys::LDS_HTTP_NO_HEURISTIC_FRESHNESS, sys::LDS_HTTP_NO_HEURISTIC_FRESHNESS);
    let on =
        HttpRequest::get("http://127.0.0.1/").heuristic_freshness(false).heuristic_freshness(true).encode().unwrap();
    assert_eq!(flags_of(&on), 0);
}

#[test]
fn age_reads_the_first_member_and_saturates() {
    let cases: [(&str, Option<u32>); 14] = [
        ("0", Some(0)),
        ("118", Some(118)),
        (" 42 ", Some(42)),
        ("7200, 0", Some(7200)),
        ("7200,0", Some(7200)),
        ("99999999999999999999", Some(1 << 31)),
        ("2147483648", Some(1 << 31)),
        ("2147483647", Some(2_147_483_647)),
        ("-1", None),
        ("1.5", None),
        ("abc", None),
        ("", None),
        ("12a", None),
        (", 5", None),
    ];
    for (value, age) in cases {
        assert_eq!(response(&[("Age", value)]).age(), age, "{value:?}");
    }
    assert_eq!(response(&[("Date", "x")]).age(), None);
    assert_eq!(response(&[("age", "5"), ("Age", "9")]).age(), Some(5));
}

#[test]
fn cache_verdict_reads_the_loadstate_member_of_cache_status() {
    use CacheVerdict::{Fresh, Heuristic, Revalidated, Stale};
    type Case = (Vec<(&'static str, &'static str)>, Option<CacheVerdict>);
    let cases: Vec<Case> = vec![
        (vec![("Cache-Status", "loadstate; hit; ttl=118; detail=fresh")], Some(Fresh)),
        (vec![("Cache-Status", "loadstate; hit; ttl=3600; detail=heuristic")], Some(Heuristic)),
        (vec![("Cache-Status", "loadstate; hit; ttl=-12; detail=stale")], Some(Stale)),
        (vec![("Cache-Status", "loadstate; fwd=stale; fwd-status=304; detail=revalidated")], Some(Revalidated)),
        (vec![("cache-status", "loadstate;detail=\"fresh\"")], Some(Fresh)),
        (vec![("Cache-Status", "  loadstate ;  hit ;ttl = 5;   detail =  stale  ")], Some(Stale)),
        (
            vec![("Cache-Status", "Ex; hit; key=\"a,b;c\"; detail=\"x, loadstate\", loadstate; detail=fresh")],
            Some(Fresh),
        ),
        (
            vec![("Cache-Status", "proxy; fwd=miss"), ("Cache-Status", "loadstate; hit; detail=heuristic")],
            Some(Heuristic),
        ),
        (vec![("Cache-Status", "loadstate; unknown=1; ttl=99999999999999999999; detail=fresh; x")], Some(Fresh)),
        (vec![("Cache-Status", "loadstate; hit; detail=fresh; detail=stale")], Some(Fresh)),
        (vec![("Cache-Status", "loadstate; hit; ttl=5")], None),
        (vec![("Cache-Status", "loadstate; detail=brilliant")], None),
        (vec![("Cache-Status", "loadstate; detail=FRESH")], None),
        (vec![("Cache-Status", "loadstate; detail=5")], None),
        (vec![("Cache-Status", "loadstate; detail")], None),
        (vec![("Cache-Status", "loadstate; detail=\"fresh")], None),
        (vec![("Cache-Status", "other; detail=fresh")], None),
        (vec![("Cache-Status", "loadstatex; detail=fresh")], None),
        (vec![("Cache-Status", "\"loadstate\"; detail=fresh")], None),
        (vec![("Cache-Status", "")], None),
        (vec![("X-Cache-Status", "loadstate; detail=fresh")], None),
        (vec![], None),
    ];
    for (lines, verdict) in cases {
        assert_eq!(response(&lines).cache_verdict(), verdict, "{lines:?}");
    }
    assert_eq!(CacheVerdict::Revalidated.to_string(), "revalidated");
}
