//! The HTTP cache seen from a request and a response: the request's own
//! cache directives (RFC 9111 5.2.1), and the `Age` and `Cache-Status`
//! (RFC 9211) the http loader's cache adds to a response it serves.

use std::fmt;

/// Delta-seconds above this read as this (RFC 9111 1.2.2).
const DELTA_SECONDS_MAX: u32 = 1 << 31;

/// How stale a stored response a request accepts (`max-stale`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MaxStale {
    /// However stale (`max-stale` without a value).
    Any,
    /// Up to this many seconds past its lifetime (`max-stale=N`).
    Seconds(u32),
}

/// A request's cache directives (RFC 9111 5.2.1), sent as its
/// `Cache-Control` header ([`HttpRequest::cache_control`](crate::HttpRequest::cache_control))
/// and honoured by the http loader's cache. Seconds are `u32`, so never
/// negative. [`Display`](fmt::Display) gives the header's value, the
/// directives in the fields' order; no directive gives `""` (and no header
/// is sent).
///
/// ```
/// use loadstate::CacheControl;
/// let directives = CacheControl::new().max_age(60).max_stale_any();
/// assert_eq!(directives.to_string(), "max-age=60, max-stale");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[allow(clippy::struct_excessive_bools)]
pub struct CacheControl {
    /// `max-age=N`: take a stored response only while its age is at most N seconds.
    pub max_age: Option<u32>,
    /// `max-stale`: take a stale stored response too.
    pub max_stale: Option<MaxStale>,
    /// `min-fresh=N`: take a stored response only if it stays fresh N seconds more.
    pub min_fresh: Option<u32>,
    /// `no-cache`: take no stored response without revalidating it.
    pub no_cache: bool,
    /// `no-store`: store neither the request nor its response.
    pub no_store: bool,
    /// `only-if-cached`: never reach the network; with no usable stored
    /// response the load fails with status 504 (an HTTP-domain error).
    pub only_if_cached: bool,
}

impl CacheControl {
    /// No directive.
    #[must_use]
    pub fn new() -> CacheControl {
        CacheControl::default()
    }

    /// Sets `max-age`.
    #[must_use]
    pub fn max_age(mut self, seconds: u32) -> CacheControl {
        self.max_age = Some(seconds);
        self
    }

    /// Sets `max-stale=N`.
    #[must_use]
    pub fn max_stale(mut self, seconds: u32) -> CacheControl {
        self.max_stale = Some(MaxStale::Seconds(seconds));
        self
    }

    /// Sets `max-stale` without a bound.
    #[must_use]
    pub fn max_stale_any(mut self) -> CacheControl {
        self.max_stale = Some(MaxStale::Any);
        self
    }

    /// Sets `min-fresh`.
    #[must_use]
    pub fn min_fresh(mut self, seconds: u32) -> CacheControl {
        self.min_fresh = Some(seconds);
        self
    }

    /// Sets `no-cache`.
    #[must_use]
    pub fn no_cache(mut self) -> CacheControl {
        self.no_cache = true;
        self
    }

    /// Sets `no-store`.
    #[must_use]
    pub fn no_store(mut self) -> CacheControl {
        self.no_store = true;
        self
    }

    /// Sets `only-if-cached`.
    #[must_use]
    pub fn only_if_cached(mut self) -> CacheControl {
        self.only_if_cached = true;
        self
    }

    /// Whether no directive is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == CacheControl::default()
    }

    /// The directives of a `Cache-Control` request value, or `None` when it
    /// holds anything else (an unknown directive, a bad or repeated number, a
    /// quoted value). Names in any case; numbers above 2^31 read as 2^31.
    #[must_use]
    pub fn parse(value: &str) -> Option<CacheControl> {
        let mut out = CacheControl::default();
        let mut seen: Vec<String> = Vec::new();
        for part in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, argument) = match part.split_once('=') {
                Some((name, argument)) => (name, Some(argument)),
                None => (part, None),
            };
            let name = name.to_ascii_lowercase();
            if seen.contains(&name) || name.trim() != name {
                return None;
            }
            seen.push(name.clone());
            let seconds = argument.map(delta_seconds);
            match (name.as_str(), seconds) {
                ("max-age", Some(Some(n))) => out.max_age = Some(n),
                ("min-fresh", Some(Some(n))) => out.min_fresh = Some(n),
                ("max-stale", Some(Some(n))) => out.max_stale = Some(MaxStale::Seconds(n)),
                ("max-stale", None) => out.max_stale = Some(MaxStale::Any),
                ("no-cache", None) => out.no_cache = true,
                ("no-store", None) => out.no_store = true,
                ("only-if-cached", None) => out.only_if_cached = true,
                _ => return None,
            }
        }
        Some(out)
    }
}

impl fmt::Display for CacheControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(n) = self.max_age {
            parts.push(format!("max-age={n}"));
        }
        match self.max_stale {
            Some(MaxStale::Any) => parts.push("max-stale".to_owned()),
            Some(MaxStale::Seconds(n)) => parts.push(format!("max-stale={n}")),
            None => {}
        }
        if let Some(n) = self.min_fresh {
            parts.push(format!("min-fresh={n}"));
        }
        for (name, on) in
            [("no-cache", self.no_cache), ("no-store", self.no_store), ("only-if-cached", self.only_if_cached)]
        {
            if on {
                parts.push(name.to_owned());
            }
        }
        f.write_str(&parts.join(", "))
    }
}

/// Why the http loader's cache served a response
/// ([`HttpResponse::cache_verdict`](crate::HttpResponse::cache_verdict)):
/// the `detail` of the `loadstate` member of its `Cache-Status` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheVerdict {
    /// Within its explicit lifetime (the response's `max-age` or `Expires`).
    Fresh,
    /// Fresh by the heuristic lifetime guessed from `Last-Modified` (RFC 9111 4.2.2).
    Heuristic,
    /// Served stale: allowed by the request's `max-stale`, or the
    /// response's `stale-while-revalidate` or `stale-if-error`.
    Stale,
    /// Stored, and confirmed by the server with a 304.
    Revalidated,
}

impl CacheVerdict {
    /// The verdict's name as `Cache-Status` spells it (`"fresh"`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CacheVerdict::Fresh => "fresh",
            CacheVerdict::Heuristic => "heuristic",
            CacheVerdict::Stale => "stale",
            CacheVerdict::Revalidated => "revalidated",
        }
    }

    fn from_name(name: &str) -> Option<CacheVerdict> {
        [CacheVerdict::Fresh, CacheVerdict::Heuristic, CacheVerdict::Stale, CacheVerdict::Revalidated]
            .into_iter()
            .find(|v| v.as_str() == name)
    }
}

impl fmt::Display for CacheVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Digits only, saturated at 2^31; `None` for anything else.
fn delta_seconds(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = text.trim_start_matches('0');
    if digits.len() > 10 {
        return Some(DELTA_SECONDS_MAX);
    }
    Some(
        digits
            .parse::<u64>()
            .map_or(0, |n| u32::try_from(n.min(u64::from(DELTA_SECONDS_MAX))).unwrap_or(DELTA_SECONDS_MAX)),
    )
}

/// An `Age` value: its first member, digits only, saturated at 2^31.
pub(crate) fn parse_age(value: &str) -> Option<u32> {
    delta_seconds(value.split(',').next().unwrap_or("").trim_matches([' ', '\t']))
}

/// A bare item of a structured field, read tolerantly.
#[derive(Debug, PartialEq)]
enum Item {
    Token(String),
    Quoted(String),
    Integer,
    Bad,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip(&mut self) {
        while self.at < self.bytes.len() && matches!(self.bytes[self.at], b' ' | b'\t') {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn item(&mut self) -> Item {
        if self.peek() == Some(b'"') {
            self.at += 1;
            let mut text = Vec::new();
            while let Some(b) = self.peek() {
                self.at += 1;
                match b {
                    b'"' => return Item::Quoted(String::from_utf8_lossy(&text).into_owned()),
                    b'\\' => {
                        if let Some(next) = self.peek() {
                            text.push(next);
                            self.at += 1;
                        }
                    }
                    _ => text.push(b),
                }
            }
            return Item::Bad;
        }
        let start = self.at;
        while let Some(b) = self.peek() {
            if matches!(b, b';' | b',' | b'=' | b' ' | b'\t' | b'"') {
                break;
            }
            self.at += 1;
        }
        let raw = String::from_utf8_lossy(&self.bytes[start..self.at]).into_owned();
        let digits = raw.strip_prefix('-').unwrap_or(&raw);
        if raw.is_empty() {
            Item::Bad
        } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            Item::Integer
        } else {
            Item::Token(raw)
        }
    }
}

/// The verdict in a `Cache-Status` value: the `detail` of its first member
/// that is the token `loadstate`, read with a tolerant structured-field
/// parse (members of other caches skipped, odd spacing, unknown
/// parameters). `None` when there is no such member, it does not parse, or
/// its `detail` is not a known verdict.
#[allow(clippy::option_option)] // None: no loadstate member; Some(None): a member whose verdict does not parse
pub(crate) fn parse_cache_status(value: &str) -> Option<Option<CacheVerdict>> {
    let mut r = Reader { bytes: value.as_bytes(), at: 0 };
    while r.at < r.bytes.len() {
        r.skip();
        let member = r.item();
        let mut good = member != Item::Bad;
        let mut detail: Option<Item> = None;
        r.skip();
        while r.peek() == Some(b';') {
            r.at += 1;
            r.skip();
            let key = r.item();
            r.skip();
            let mut param = Item::Token(String::new());
            if r.peek() == Some(b'=') {
                r.at += 1;
                r.skip();
                param = r.item();
                r.skip();
            }
            if key == Item::Token("detail".to_owned()) && detail.is_none() {
                detail = Some(param);
            }
        }
        if r.peek().is_some_and(|b| b != b',') {
            good = false;
            while let Some(b) = r.peek() {
                if b == b',' {
                    break;
                }
                if b == b'"' {
                    r.item();
                } else {
                    r.at += 1;
                }
            }
        }
        r.at += 1;
        if good && member == Item::Token("loadstate".to_owned()) {
            let verdict = match detail {
                Some(Item::Token(name) | Item::Quoted(name)) => CacheVerdict::from_name(&name),
                _ => None,
            };
            return Some(verdict);
        }
    }
    None
}
