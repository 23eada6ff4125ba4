//! The library's built-in loaders: files, commands and HTTP. They work on
//! the runtime's own loop; no host thread is involved.

use std::ffi::{CString, OsStr, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::time::Duration;

use crate::error::{Error, Result, check};
use crate::http_cache::{CacheControl, CacheVerdict, parse_age, parse_cache_status};
use crate::loader::{Loader, c_name};
use crate::options::Limits;
use crate::runtime::Runtime;
use crate::sys;

fn c_string(bytes: impl AsRef<[u8]>) -> Result<CString> {
    CString::new(bytes.as_ref()).map_err(|_| Error::from_code(sys::LDS_EINVAL))
}

/// The bytes of a NUL-terminated string the library wrote.
///
/// # Safety
/// `text` must be null or a NUL-terminated string.
unsafe fn c_bytes(text: *const c_char) -> Option<Vec<u8>> {
    // SAFETY: the caller's contract.
    (!text.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(text) }.to_bytes().to_vec())
}

/// The strings of a NULL-terminated array the library wrote.
///
/// # Safety
/// `list` must be null or a NULL-terminated array of NUL-terminated strings.
unsafe fn c_list(list: *const *const c_char) -> Option<Vec<Vec<u8>>> {
    if list.is_null() {
        return None;
    }
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        // SAFETY: the array ends with a null entry, not read past.
        let item = unsafe { *list.add(i) };
        if item.is_null() {
            return Some(items);
        }
        // SAFETY: a NUL-terminated string of the array.
        items.push(unsafe { std::ffi::CStr::from_ptr(item) }.to_bytes().to_vec());
        i += 1;
    }
}

fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX)
}

/// Copies a buffer the library allocated and releases it with `lds_free`.
///
/// # Safety
/// `data` must be a buffer of `len` bytes from an `lds_*_encode` call.
unsafe fn take_buffer(data: *mut c_void, len: usize) -> Vec<u8> {
    let bytes = if data.is_null() || len == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }.to_vec()
    };
    // SAFETY: the buffer came from the library; NULL is accepted.
    unsafe { sys::lds_free(data) };
    bytes
}

/// A NULL-terminated array of C strings borrowing `strings`.
fn pointer_array(strings: &[CString]) -> Vec<*const c_char> {
    strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(ptr::null())).collect()
}

/// Options of the file loader ([`Runtime::file_loader`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOptions {
    chunk_size: u32,
    max_size: u64,
    limits: Limits,
    name: Option<String>,
}

impl FileOptions {
    /// The defaults: 256 KiB reads, files up to [`VALUE_MAX`](crate::VALUE_MAX).
    #[must_use]
    pub fn new() -> FileOptions {
        FileOptions::default()
    }

    /// Bytes per read (0: the library's default).
    #[must_use]
    pub fn chunk_size(mut self, bytes: u32) -> FileOptions {
        self.chunk_size = bytes;
        self
    }

    /// The largest file accepted (0: the library's default); a larger one
    /// fails with [`ErrorKind::TooBig`](crate::ErrorKind::TooBig)'s code in the loadstate domain.
    #[must_use]
    pub fn max_size(mut self, bytes: u64) -> FileOptions {
        self.max_size = bytes;
        self
    }

    /// Holds the loader's jobs to `limits` (none by default).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> FileOptions {
        self.limits = limits;
        self
    }

    /// Names the loader, as [`Runtime::named_loader`] does.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> FileOptions {
        self.name = Some(name.into());
        self
    }
}

/// The request of a file load: the path's bytes.
#[must_use]
pub fn file_request(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// Options of the exec loader ([`Runtime::exec_loader`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOptions {
    stream_lines: bool,
    kill_grace_ms: u32,
    max_output: u64,
    limits: Limits,
    name: Option<String>,
}

impl ExecOptions {
    /// The defaults: the value is the whole stdout, 2 s between SIGTERM and
    /// SIGKILL on cancel, output up to [`VALUE_MAX`](crate::VALUE_MAX).
    #[must_use]
    pub fn new() -> ExecOptions {
        ExecOptions::default()
    }

    /// Yields partial values while the command runs
    /// (`LDS_EXEC_STREAM_LINES`): when new complete lines arrive, stdout up
    /// to its last newline. Lines that arrive together come in one partial
    /// value.
    #[must_use]
    pub fn stream_lines(mut self, stream: bool) -> ExecOptions {
        self.stream_lines = stream;
        self
    }

    /// Time between SIGTERM and SIGKILL when a job is cancelled (zero: the
    /// library's default).
    #[must_use]
    pub fn kill_grace(mut self, grace: Duration) -> ExecOptions {
        self.kill_grace_ms = millis(grace);
        self
    }

    /// The most stdout accepted (0: the library's default).
    #[must_use]
    pub fn max_output(mut self, bytes: u64) -> ExecOptions {
        self.max_output = bytes;
        self
    }

    /// Holds the loader's jobs (commands) to `limits` (none by default).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> ExecOptions {
        self.limits = limits;
        self
    }

    /// Names the loader, as [`Runtime::named_loader`] does.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> ExecOptions {
        self.name = Some(name.into());
        self
    }
}

/// What an exec job runs: a program (searched in `PATH`), its arguments,
/// and optionally its environment and working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    argv: Vec<Vec<u8>>,
    env: Option<Vec<Vec<u8>>>,
    cwd: Option<Vec<u8>>,
}

impl ExecRequest {
    /// Runs `program` with `args`, inheriting the environment and the
    /// working directory of the runtime's process.
    #[allow(clippy::similar_names)] // argv (what is sent) is built from args (what is given)
    pub fn new<I, S>(program: impl AsRef<OsStr>, args: I) -> ExecRequest
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut argv = vec![program.as_ref().as_bytes().to_vec()];
        argv.extend(args.into_iter().map(|a| a.as_ref().as_bytes().to_vec()));
        ExecRequest { argv, env: None, cwd: None }
    }

    /// Replaces the whole environment with these variables.
    #[must_use]
    pub fn env<I, K, V>(mut self, vars: I) -> ExecRequest
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.env = Some(
            vars.into_iter().map(|(k, v)| [k.as_ref().as_bytes(), b"=", v.as_ref().as_bytes()].concat()).collect(),
        );
        self
    }

    /// Runs in this directory.
    #[must_use]
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> ExecRequest {
        self.cwd = Some(dir.as_ref().as_os_str().as_bytes().to_vec());
        self
    }

    /// The request bytes to load with an exec loader
    /// (`lds_exec_request_encode`). Strings holding NUL bytes are refused
    /// with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let argv: Vec<CString> = self.argv.iter().map(c_string).collect::<Result<_>>()?;
        let env: Option<Vec<CString>> =
            self.env.as_ref().map(|env| env.iter().map(c_string).collect::<Result<_>>()).transpose()?;
        let cwd = self.cwd.as_ref().map(c_string).transpose()?;
        let argv_ptrs = pointer_array(&argv);
        let env_ptrs = env.as_deref().map(pointer_array);
        let request = sys::lds_exec_request {
            argv: argv_ptrs.as_ptr(),
            env: env_ptrs.as_ref().map_or(ptr::null(), std::vec::Vec::as_ptr),
            cwd: cwd.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            ..sys::lds_exec_request::INIT
        };
        let (mut out, mut len) = (ptr::null_mut(), 0);
        // SAFETY: every pointer borrows a live local.
        check(unsafe { sys::lds_exec_request_encode(&raw const request, &raw mut out, &raw mut len) })?;
        // SAFETY: the library returned this buffer.
        Ok(unsafe { take_buffer(out, len) })
    }

    /// Reads encoded exec request bytes back (`lds_exec_request_decode`):
    /// `ExecRequest::decode(&r.encode()?)` is `r`. Bytes that are not an
    /// encoded exec request fail with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn decode(bytes: &[u8]) -> Result<ExecRequest> {
        let mut out = sys::lds_exec_request::INIT;
        // SAFETY: bytes is a live slice; out is a local.
        check(unsafe { sys::lds_exec_request_decode(bytes.as_ptr().cast(), bytes.len(), &raw mut out) })?;
        // SAFETY: the library filled out with NULL-terminated arrays of strings.
        let request = unsafe {
            ExecRequest { argv: c_list(out.argv).unwrap_or_default(), env: c_list(out.env), cwd: c_bytes(out.cwd) }
        };
        // SAFETY: out was filled by lds_exec_request_decode.
        unsafe { sys::lds_exec_request_clear(&raw mut out) };
        Ok(request)
    }
}

/// Options of the HTTP loader ([`Runtime::http_loader`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpOptions {
    max_connections: u32,
    user_agent: Option<String>,
    proxy: Option<String>,
    limits: Limits,
    max_per_host: u32,
    name: Option<String>,
}

impl HttpOptions {
    /// The defaults: libcurl's connection limit, user agent
    /// `loadstate/<version>`, the proxy the environment names.
    #[must_use]
    pub fn new() -> HttpOptions {
        HttpOptions::default()
    }

    /// Holds the loader's jobs (requests) to `limits` (none by default).
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> HttpOptions {
        self.limits = limits;
        self
    }

    /// Names the loader, as [`Runtime::named_loader`] does.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> HttpOptions {
        self.name = Some(name.into());
        self
    }

    /// The most connections open at once to one host (0: no limit);
    /// libcurl holds the transfers over it.
    #[must_use]
    pub fn max_per_host(mut self, connections: u32) -> HttpOptions {
        self.max_per_host = connections;
        self
    }

    /// The most connections at once (0: libcurl's default).
    #[must_use]
    pub fn max_connections(mut self, n: u32) -> HttpOptions {
        self.max_connections = n;
        self
    }

    /// The `User-Agent` header.
    #[must_use]
    pub fn user_agent(mut self, agent: impl Into<String>) -> HttpOptions {
        self.user_agent = Some(agent.into());
        self
    }

    /// Goes through the proxy at this URL, instead of the one the
    /// environment names (`http_proxy`, `https_proxy`, `no_proxy`).
    #[must_use]
    pub fn proxy(mut self, url: impl Into<String>) -> HttpOptions {
        self.proxy = Some(url.into());
        self
    }

    /// Uses no proxy at all, whatever the environment says.
    #[must_use]
    pub fn no_proxy(self) -> HttpOptions {
        self.proxy("")
    }
}

/// What an HTTP job fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    method: Option<String>,
    url: String,
    headers: Vec<String>,
    body: Vec<u8>,
    timeout_ms: u32,
    max_redirects: u32,
    max_body: u64,
    flags: u32,
    ca_file: Option<PathBuf>,
    cache_control: Option<CacheControl>,
}

/// The HTTP version a request asks for ([`HttpRequest::version`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HttpVersion {
    /// libcurl's choice: HTTP/2 over TLS when the server offers it, HTTP/1.1 otherwise.
    #[default]
    Automatic,
    /// HTTP/1.1 only (`LDS_HTTP_HTTP1`).
    Http1,
    /// HTTP/2, multiplexed: by ALPN over TLS, with prior knowledge over
    /// plain http (`LDS_HTTP_HTTP2`).
    Http2,
}

impl HttpRequest {
    /// A GET of `url` (http:// or https:// only).
    pub fn get(url: impl Into<String>) -> HttpRequest {
        HttpRequest {
            method: None,
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms: 0,
            max_redirects: 0,
            max_body: 0,
            flags: 0,
            ca_file: None,
            cache_control: None,
        }
    }

    /// Uses another method ("POST", "PUT", ...).
    #[must_use]
    pub fn method(mut self, method: impl Into<String>) -> HttpRequest {
        self.method = Some(method.into());
        self
    }

    /// Adds a header line.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> HttpRequest {
        self.headers.push(format!("{name}: {value}"));
        self
    }

    /// Sends this body.
    #[must_use]
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> HttpRequest {
        self.body = body.into();
        self
    }

    /// A limit for the whole transfer (zero: none; the load's own timeout
    /// still applies).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> HttpRequest {
        self.timeout_ms = millis(timeout);
        self
    }

    /// The most redirects followed (0: the library's default, 5).
    #[must_use]
    pub fn max_redirects(mut self, n: u32) -> HttpRequest {
        self.max_redirects = n;
        self
    }

    /// The largest body accepted (0: the library's default).
    #[must_use]
    pub fn max_body(mut self, bytes: u64) -> HttpRequest {
        self.max_body = bytes;
        self
    }

    /// Skips TLS certificate and host verification (`LDS_HTTP_INSECURE`).
    #[must_use]
    pub fn insecure(mut self, insecure: bool) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_INSECURE, insecure);
        self
    }

    /// Does not follow redirects (`LDS_HTTP_NO_REDIRECTS`).
    #[must_use]
    pub fn no_redirects(mut self, no: bool) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_NO_REDIRECTS, no);
        self
    }

    /// Asks for no compressed response (`LDS_HTTP_NO_COMPRESSION`); by
    /// default every encoding libcurl decodes is asked for, and the body is
    /// decoded ([`max_body`](Self::max_body) bounds the decoded size).
    #[must_use]
    pub fn no_compression(mut self, no: bool) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_NO_COMPRESSION, no);
        self
    }

    /// The HTTP version to speak.
    #[must_use]
    pub fn version(mut self, version: HttpVersion) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_HTTP1, version == HttpVersion::Http1);
        self.set_flag(sys::LDS_HTTP_HTTP2, version == HttpVersion::Http2);
        self
    }

    /// Verifies the server with the PEM CA certificates of this file
    /// instead of the system's (`ca_file`): a self-signed server is
    /// trusted by naming its certificate, never by turning verification off.
    #[must_use]
    pub fn ca_file(mut self, path: impl AsRef<Path>) -> HttpRequest {
        self.ca_file = Some(path.as_ref().to_path_buf());
        self
    }

    /// The request's cache directives, sent as its last header line
    /// `Cache-Control: ...` and honoured by the http loader's cache (RFC 9111
    /// 5.2.1). Directives without any directive send no header. A request
    /// with both these and a `Cache-Control` [`header`](Self::header) fails
    /// to [`encode`](Self::encode) with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument): one
    /// request, one set of directives.
    #[must_use]
    pub fn cache_control(mut self, directives: CacheControl) -> HttpRequest {
        self.cache_control = (!directives.is_empty()).then_some(directives);
        self
    }

    /// Whether the cache may give this request's responses a lifetime
    /// guessed from `Last-Modified` when they carry no explicit freshness
    /// (RFC 9111 4.2.2: 10% of their age when they arrive, at most 24
    /// hours); `false` sets `LDS_HTTP_NO_HEURISTIC_FRESHNESS`. Default: true.
    #[must_use]
    pub fn heuristic_freshness(mut self, allowed: bool) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_NO_HEURISTIC_FRESHNESS, !allowed);
        self
    }

    /// Whether a stale stored response stands in for this request when the
    /// server cannot be reached or closes the connection without an answer
    /// (RFC 9111 4.2.4), unless the response forbids it (`must-revalidate`,
    /// `no-cache`); `false` sets `LDS_HTTP_NO_STALE_ON_DISCONNECT`. Default: true.
    #[must_use]
    pub fn stale_on_disconnect(mut self, allowed: bool) -> HttpRequest {
        self.set_flag(sys::LDS_HTTP_NO_STALE_ON_DISCONNECT, !allowed);
        self
    }

    fn set_flag(&mut self, flag: u32, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }

    /// The request bytes to load with an HTTP loader
    /// (`lds_http_request_encode`). Strings holding NUL bytes, a method
    /// that is not an HTTP token, a URL holding a control character or a
    /// space, and header lines that are not `Name: value` (a token name, a
    /// value with no control character but tab) fail with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let method = self.method.as_ref().map(c_string).transpose()?;
        let url = c_string(&self.url)?;
        let mut headers: Vec<CString> = self.headers.iter().map(c_string).collect::<Result<_>>()?;
        if let Some(directives) = self.cache_control {
            let named =
                |line: &String| line.split(':').next().is_some_and(|n| n.trim().eq_ignore_ascii_case("cache-control"));
            if self.headers.iter().any(named) {
                return Err(Error::from_code(sys::LDS_EINVAL));
            }
            headers.push(c_string(format!("Cache-Control: {directives}"))?);
        }
        let header_ptrs: Vec<*const c_char> = headers.iter().map(|h| h.as_ptr()).collect();
        let ca_file = self.ca_file.as_ref().map(|p| c_string(p.as_os_str().as_bytes())).transpose()?;
        let request = sys::lds_http_request {
            method: method.as_ref().map_or(ptr::null(), |m| m.as_ptr()),
            url: url.as_ptr(),
            headers: if header_ptrs.is_empty() { ptr::null() } else { header_ptrs.as_ptr() },
            header_count: header_ptrs.len(),
            body: if self.body.is_empty() { ptr::null() } else { self.body.as_ptr().cast() },
            body_len: self.body.len(),
            timeout_ms: self.timeout_ms,
            max_redirects: self.max_redirects,
            max_body: self.max_body,
            flags: self.flags,
            ca_file: ca_file.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
            ..sys::lds_http_request::INIT
        };
        let (mut out, mut len) = (ptr::null_mut(), 0);
        // SAFETY: every pointer borrows a live local.
        check(unsafe { sys::lds_http_request_encode(&raw const request, &raw mut out, &raw mut len) })?;
        // SAFETY: the library returned this buffer.
        Ok(unsafe { take_buffer(out, len) })
    }

    /// Reads encoded HTTP request bytes back (`lds_http_request_decode`).
    /// The method comes back set (`GET` when none was given), a
    /// `max_redirects` of 0 as the library's 5 and
    /// [`cache_control`](HttpRequest::cache_control) as the header line it
    /// was sent as: the decoded request encodes to the same bytes. Bytes
    /// that are not an encoded HTTP request fail with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn decode(bytes: &[u8]) -> Result<HttpRequest> {
        let mut out = sys::lds_http_request::INIT;
        // SAFETY: bytes is a live slice; out is a local.
        check(unsafe { sys::lds_http_request_decode(bytes.as_ptr().cast(), bytes.len(), &raw mut out) })?;
        let text = |b: Option<Vec<u8>>| String::from_utf8(b.unwrap_or_default()).unwrap_or_default();
        // SAFETY: the library filled out with NUL-terminated UTF-8 strings,
        // a NULL-terminated header array and a body of body_len bytes.
        let request = unsafe {
            HttpRequest {
                method: c_bytes(out.method).map(|m| text(Some(m))),
                url: text(c_bytes(out.url)),
                headers: c_list(out.headers).unwrap_or_default().into_iter().map(|h| text(Some(h))).collect(),
                body: if out.body_len == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(out.body.cast::<u8>(), out.body_len).to_vec()
                },
                timeout_ms: out.timeout_ms,
                max_redirects: out.max_redirects,
                max_body: out.max_body,
                flags: out.flags,
                ca_file: c_bytes(out.ca_file).map(|p| PathBuf::from(OsStr::from_bytes(&p))),
                cache_control: None,
            }
        };
        // SAFETY: out was filled by lds_http_request_decode.
        unsafe { sys::lds_http_request_clear(&raw mut out) };
        Ok(request)
    }
}

/// An HTTP response whose status is outside 2xx, from
/// [`HttpResponse::error_for_status`]: it prints the status and the start
/// of the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpStatusError {
    /// The response.
    pub response: Box<HttpResponse>,
}

impl std::fmt::Display for HttpStatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const PREVIEW: usize = 200;
        let body = String::from_utf8_lossy(&self.response.body);
        let preview: String = body.chars().take(PREVIEW).collect();
        let more = if body.chars().nth(PREVIEW).is_some() { "..." } else { "" };
        write!(f, "HTTP status {}: {preview}{more}", self.response.status)
    }
}

impl std::error::Error for HttpStatusError {}

/// The value of an HTTP job, decoded (`lds_http_response_decode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The final response's status.
    pub status: i32,
    /// Its header lines, `"Name: value\r\n"` each.
    pub headers: Vec<u8>,
    /// Its body.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// Decodes the value of an HTTP job; fails with
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) for
    /// anything else.
    pub fn decode(value: &[u8]) -> Result<HttpResponse> {
        let mut raw =
            sys::lds_http_response { status: 0, headers: ptr::null(), headers_len: 0, body: ptr::null(), body_len: 0 };
        // SAFETY: valid buffer and out pointer.
        check(unsafe { sys::lds_http_response_decode(value.as_ptr().cast(), value.len(), &raw mut raw) })?;
        let bytes = |p: *const c_void, len: usize| {
            if p.is_null() || len == 0 {
                Vec::new()
            } else {
                // SAFETY: the decoded pointers point into `value`.
                unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }.to_vec()
            }
        };
        Ok(HttpResponse {
            status: raw.status,
            headers: bytes(raw.headers.cast(), raw.headers_len),
            body: bytes(raw.body, raw.body_len),
        })
    }

    /// Whether the status is in 2xx.
    #[must_use]
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as UTF-8 text.
    ///
    /// # Errors
    ///
    /// A [`CodecError`](crate::CodecError) when the body is not valid UTF-8.
    pub fn text(&self) -> std::result::Result<String, crate::CodecError> {
        <String as crate::Decode>::decode(&self.body)
    }

    /// The header lines as `(name, value)` pairs, in order, names and
    /// values trimmed (invalid UTF-8 is replaced); a line without a colon
    /// is skipped.
    #[must_use]
    pub fn header_pairs(&self) -> Vec<(String, String)> {
        String::from_utf8_lossy(&self.headers)
            .split("\r\n")
            .filter_map(|line| {
                let (key, value) = line.split_once(':')?;
                Some((key.trim().to_owned(), value.trim().to_owned()))
            })
            .collect()
    }

    /// The response itself when its status is in 2xx, else an
    /// [`HttpStatusError`] holding it.
    ///
    /// # Errors
    ///
    /// [`HttpStatusError`] for a status outside 2xx.
    pub fn error_for_status(self) -> std::result::Result<HttpResponse, HttpStatusError> {
        if self.is_success() { Ok(self) } else { Err(HttpStatusError { response: Box::new(self) }) }
    }

    /// The value of the first header called `name` (case-insensitive).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<String> {
        String::from_utf8_lossy(&self.headers).split("\r\n").find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    }

    /// The `Age` header in seconds (RFC 9111 5.1): the response's current
    /// age when the cache served it (the cache writes it then), or what an
    /// upstream cache sent. The first header's first member is read
    /// (`"7200, 0"` is 7200); not digits, or no header: `None`; values above
    /// 2^31 read as 2^31 (RFC 9111 1.2.2).
    #[must_use]
    pub fn age(&self) -> Option<u32> {
        parse_age(&self.header("Age")?)
    }

    /// Why the http loader's cache served this response, or `None` for a
    /// response loaded from the network and not from the cache: the
    /// `detail` parameter of the `loadstate` member of its `Cache-Status`
    /// field (RFC 9211), which the cache adds, as in
    /// `Cache-Status: loadstate; hit; ttl=118; detail=fresh`. Members of
    /// other caches, on any `Cache-Status` line, are skipped; a member or
    /// `detail` that does not parse, or an unknown verdict, gives `None`.
    #[must_use]
    pub fn cache_verdict(&self) -> Option<CacheVerdict> {
        String::from_utf8_lossy(&self.headers).split("\r\n").find_map(|line| {
            let (key, value) = line.split_once(':')?;
            if key.trim().eq_ignore_ascii_case("cache-status") { parse_cache_status(value) } else { None }
        })?
    }
}

impl Runtime {
    /// A loader that reads files: the request is a path
    /// ([`file_request`]), the value the file's contents; progress counts
    /// bytes. A missing or unreadable file is an error in the OS domain
    /// with the errno as code. Only regular files are read: a directory is
    /// an OS error (EISDIR), a FIFO, socket or device an `LDS_EINVAL` error
    /// in the loadstate domain.
    pub fn file_loader(&self, options: &FileOptions) -> Result<Loader> {
        let name = c_name(options.name.as_deref())?;
        let raw = sys::lds_file_options {
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            chunk_size: options.chunk_size,
            max_size: options.max_size,
            max_concurrent: options.limits.max_concurrent,
            rate_per_s: options.limits.rate_per_s,
            burst: options.limits.burst,
            ..sys::lds_file_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, options and out pointer.
        check(unsafe { sys::lds_file_loader_new(self.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(Loader::built_in(self.shared(), id, options.name.as_deref()))
    }

    /// A loader that runs commands: the request is an encoded
    /// [`ExecRequest`], the value the command's stdout. A non-zero exit is
    /// an error in the exit domain with the status as code and the end of
    /// stderr as message. Cancelling terminates the command.
    pub fn exec_loader(&self, options: &ExecOptions) -> Result<Loader> {
        let name = c_name(options.name.as_deref())?;
        let raw = sys::lds_exec_options {
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            flags: if options.stream_lines { sys::LDS_EXEC_STREAM_LINES } else { 0 },
            kill_grace_ms: options.kill_grace_ms,
            max_output: options.max_output,
            max_concurrent: options.limits.max_concurrent,
            rate_per_s: options.limits.rate_per_s,
            burst: options.limits.burst,
            ..sys::lds_exec_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, options and out pointer.
        check(unsafe { sys::lds_exec_loader_new(self.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(Loader::built_in(self.shared(), id, options.name.as_deref()))
    }

    /// A loader that fetches URLs: the request is an encoded
    /// [`HttpRequest`], the value an encoded response
    /// ([`HttpResponse::decode`]). A status outside 2xx is an error in the
    /// HTTP domain with the status as code.
    pub fn http_loader(&self, options: &HttpOptions) -> Result<Loader> {
        let agent = options.user_agent.as_ref().map(c_string).transpose()?;
        let proxy = options.proxy.as_ref().map(c_string).transpose()?;
        let name = c_name(options.name.as_deref())?;
        let raw = sys::lds_http_options {
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            max_connections: options.max_connections,
            user_agent: agent.as_ref().map_or(ptr::null(), |a| a.as_ptr()),
            proxy: proxy.as_ref().map_or(ptr::null(), |p| p.as_ptr()),
            max_concurrent: options.limits.max_concurrent,
            rate_per_s: options.limits.rate_per_s,
            burst: options.limits.burst,
            max_per_host: options.max_per_host,
            ..sys::lds_http_options::INIT
        };
        let mut id = 0;
        // SAFETY: valid handle, options (borrowing its strings) and out pointer.
        check(unsafe { sys::lds_http_loader_new(self.as_ptr(), &raw const raw, &raw mut id) })?;
        Ok(Loader::built_in(self.shared(), id, options.name.as_deref()))
    }
}
