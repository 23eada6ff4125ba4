import CCurl

/// Fetches URLs with libcurl's multi interface on the runtime's own loop.
/// The request is an encoded `HTTPRequest`; the value an encoded
/// `HTTPResponse` (status, headers, body).
///
/// Only http and https are allowed, for the request and for redirects;
/// TLS verification is on unless the request turns it off. A status
/// outside 2xx fails in the http domain with the status as code (5xx, 408
/// and 429 may be retried, after `Retry-After` when given); transport
/// failures fail in the os domain (errno) or the loadstate domain.
/// Cancelling aborts the transfer at once and closes its socket.
@_spi(LoadstateC) public final class HTTPLoader: Loader<[UInt8], [UInt8]>, @unchecked Sendable {
    @usableFromInline package struct Options: Sendable {
        /// The most connections open at once; 0 for curl's default.
        @usableFromInline package var maxConnections: Int
        /// The most connections open at once to one host; 0 for no limit.
        @usableFromInline package var maxPerHost: Int = 0
        @usableFromInline package var userAgent: String
        /// The proxy to use: nil follows the environment (`http_proxy`,
        /// `https_proxy`, `no_proxy`, as curl does); "" uses none.
        @usableFromInline package var proxy: String?

        @usableFromInline package init(maxConnections: Int = 0, userAgent: String = "loadstate/0.2", proxy: String? = nil) {
            self.maxConnections = maxConnections
            self.userAgent = userAgent
            self.proxy = proxy
        }
    }

    /// Bounds on one response (each redirect and interim response has its
    /// own): the status line, the header lines after it (their bytes and
    /// their number), the trailer lines after a chunked body. Passing one
    /// fails the load with `tooBig` at once, so that memory stays bounded
    /// whatever the server sends. LDS_HTTP_STATUS_LINE_MAX,
    /// LDS_HTTP_HEADERS_MAX, LDS_HTTP_HEADER_LINES_MAX and
    /// LDS_HTTP_TRAILERS_MAX in the C header.
    package static let statusLineMax = 8 << 10
    package static let headersMax = 64 << 10
    package static let headerLinesMax = 1024
    package static let trailersMax = 64 << 10
    /// The receive buffer of each connection (CURLOPT_BUFFERSIZE).
    static let receiveBufferSize = 64 << 10

    @usableFromInline package let options: Options
    // Loop thread only.
    private var multi: CurlMulti?
    /// For the tests (loop thread): the multi, once a request made it.
    var curlMulti: CurlMulti? { multi }

    @usableFromInline package init(id: UInt64, options: Options = Options()) {
        self.options = options
        super.init(id: id)
    }

    @_spi(LoadstateC) public override func start(_ job: Job<[UInt8], [UInt8]>, runtime: Runtime) {
        func fail(_ error: LoadError) {
            _ = runtime.submit(.fail(error, retry: .never), job: job.id, of: Job<[UInt8], [UInt8]>.self)
        }
        guard let request = HTTPRequest(decoding: job.request) else {
            return fail(LoadError(.invalidArgument, message: "not an encoded http request"))
        }
        if let problem = request.problem {
            return fail(LoadError(.invalidArgument, message: problem))
        }
        guard Self.isHTTP(request.url) else {
            return fail(LoadError(.invalidArgument, message: "only http and https are allowed: \(request.url)"))
        }
        if askedControl(request).onlyIfCached {
            // The cache had no response to serve (RFC 9111 section 5.2.1.7).
            let response = HTTPResponse(status: 504, headers: Array("Content-Length: 0\r\n".utf8), body: [])
            let error = LoadError(domain: .http, code: 504,
                                  message: "HTTP 504: no stored response for \(request.url) (only-if-cached)",
                                  underlying: HTTPStatusError(response: response))
            _ = runtime.submit(.fail(error, retry: .never), job: job.id, of: Job<[UInt8], [UInt8]>.self)
            return
        }
        if multi == nil {
            multi = CurlMulti(loop: runtime.loop.loop, maxConnections: options.maxConnections,
                              maxPerHost: options.maxPerHost)
        }
        guard let multi,
              let transfer = HTTPTransfer(job: job, runtime: runtime, request: request, loader: self, multi: multi,
                                          revalidation: HTTPRevalidation.of(job, request: request, loader: self,
                                                                            nowMs: Clock.wallMs()))
        else {
            return fail(LoadError(.outOfMemory, message: "cannot set up libcurl"))
        }
        job.onLoopCancel = { [unowned multi] in multi.remove(transfer) }
        multi.add(transfer)
    }

    /// Whether the URL's scheme is http or https (in any case).
    static func isHTTP(_ url: String) -> Bool {
        startsWithIgnoringCase(url, "http:") || startsWithIgnoringCase(url, "https:")
    }

    /// Whether `text` begins with `lowercasePrefix`, ASCII letters compared
    /// in any case (for URL schemes and header names).
    static func startsWithIgnoringCase(_ text: String, _ lowercasePrefix: StaticString) -> Bool {
        var utf8 = text.utf8.makeIterator()
        let prefix = UnsafeBufferPointer(start: lowercasePrefix.utf8Start, count: lowercasePrefix.utf8CodeUnitCount)
        for expected in prefix {
            guard let c = utf8.next() else { return false }
            let lower = c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z") ? c | 0x20 : c
            if lower != expected { return false }
        }
        return true
    }

    /// A stored response's own rules, when the load follows them (see
    /// `HTTPLoader+Caching`).
    @_spi(LoadstateC) public override func read(_ entry: CacheEntry, store: any CacheStore, key: [UInt8],
                                                request: [UInt8], freshMs: UInt64, nowMs: UInt64) -> CacheReading? {
        readEntry(entry, store: store, key: key, request: request, freshMs: freshMs, nowMs: nowMs)
    }

    @_spi(LoadstateC) public override func released(runtime: Runtime) {
        multi?.close()
        multi = nil
    }
}
