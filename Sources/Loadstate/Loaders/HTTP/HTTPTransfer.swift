import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP request of one job: a curl easy handle, the response as it
/// arrives, and how the job ends. Lives on the loop thread; retained from
/// `start` until `release`.
final class HTTPTransfer {
    let easy: UnsafeMutableRawPointer
    private let handle: EasyHandle
    private let job: Job<[UInt8], [UInt8]>
    private let runtime: Runtime
    private let request: HTTPRequest
    private let maxBody: UInt64
    /// The cached response this request revalidates, if any.
    private let revalidation: HTTPRevalidation?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The response in its encoded form (`HTTPResponse.encoded`): the fixed
    /// part (status and headers length filled in at the end), the header
    /// lines, then the body as it arrives, so that the value is ready
    /// without a copy. Made, at its full size when the body's length is
    /// announced, at the body's first byte (or at the end, when there is no
    /// body); until then the header lines collect in the handle's
    /// `headerLines`, which keeps its storage from request to request.
    /// Trailers (headers after the body) are kept apart, in `trailers`.
    private var response: [UInt8] = []
    /// Where the body begins in `response`; nil until `response` is made.
    private var bodyStart: Int?
    private var trailers: [UInt8] = []
    /// Header lines of the current response so far.
    private var headerLineCount = 0
    /// Why a callback stopped the transfer (a limit was passed).
    private var refusal: LoadError?
    /// The body's length as announced (0: unknown), and how many of its
    /// bytes PROGRESS last reported.
    private var announced: UInt64 = 0
    private var reported: UInt64 = 0
    private var errorBuffer: UnsafeMutablePointer<CChar> { handle.errorBuffer }
    /// Requests sent so far (redirects included), and the redirects
    /// followed when the last was sent: a second send with no redirect in
    /// between is libcurl's own resend of the same request (a reused
    /// connection that closed without an answer), which is refused.
    private var sends = 0
    private var sentAtRedirect = 0
    /// Set when libcurl's resend was refused (the transfer then ends).
    private var resendRefused = false
    private var keepAlive: Unmanaged<HTTPTransfer>?

    /// Where the easy handle came from and goes back to (kept alive for that).
    private let multi: CurlMulti

    /// The loader, for its caching rules (kept alive by the job anyway).
    private unowned(unsafe) let loader: HTTPLoader

    init?(job: Job<[UInt8], [UInt8]>, runtime: Runtime, request: HTTPRequest, loader: HTTPLoader,
          multi: CurlMulti, revalidation: HTTPRevalidation? = nil) {
        let options = loader.options
        guard let handle = multi.takeHandle() else { return nil }
        self.handle = handle
        easy = handle.easy
        self.multi = multi
        self.job = job
        self.runtime = runtime
        self.request = request
        self.revalidation = revalidation
        self.loader = loader
        maxBody = request.maxBody == 0 ? 256 << 20 : request.maxBody
        errorBuffer[0] = 0
        handle.socketErrno = 0
        handle.headerLines.removeAll(keepingCapacity: true)
        keepAlive = Unmanaged.passRetained(self)
        handle.transfer = self
        configure(options)
    }

    deinit {
        multi.recycle(handle)
        curl_slist_free_all(headerList)
    }

    /// Drops the reference taken at creation; called once by the multi.
    func release() {
        keepAlive?.release()
        keepAlive = nil
    }

    /// Sets the handle up for this request. A reused handle keeps the
    /// loader-wide options, and sets only the options of a request that
    /// differ from its last request's (each is a call into curl that costs
    /// more than the comparison): a run of GETs of one URL sets none. The
    /// callbacks reach the transfer through the handle.
    private func configure(_ options: HTTPLoader.Options) {
        if !handle.isSetUp {
            lds_easy_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "http,https")
            lds_easy_setopt_str(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            lds_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
            // A receive buffer of 64 KiB instead of curl's 16 KiB: a quarter of
            // the reads and write callbacks for a large body (a 1 MiB GET took
            // about 20% less of the loop thread's time), at 48 KiB more per
            // connection in use. Only on a handle that is reused (see
            // `CurlMulti.recycle`): a new handle per transfer would allocate
            // it for every request, which cost 1 KiB GETs about 4 us each.
            if CurlMulti.reusesHandles {
                lds_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, HTTPLoader.receiveBufferSize)
            }
            // The User-Agent as a header line of the handle's own rather
            // than CURLOPT_USERAGENT, which curl formats anew (allocating)
            // for every transfer. Also sent to a proxy asked to CONNECT.
            if !options.userAgent.isEmpty {
                handle.agentLine = "User-Agent: \(options.userAgent)"
                handle.agentHeader = curl_slist_append(nil, handle.agentLine)
                lds_easy_setopt_slist(easy, CURLOPT_PROXYHEADER, handle.agentHeader)
            }
            if let proxy = options.proxy {
                lds_easy_setopt_str(easy, CURLOPT_PROXY, proxy)
            }
            lds_easy_setopt_write(easy) { data, size, count, userp in
                EasyHandle.transfer(userp)?.received(data, size * count) ?? 0
            }
            lds_easy_setopt_header(easy) { data, size, count, userp in
                EasyHandle.transfer(userp)?.receivedHeader(data, size * count) ?? 0
            }
            let me = Unmanaged.passUnretained(handle).toOpaque()
            lds_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me)
            lds_easy_setopt_ptr(easy, CURLOPT_HEADERDATA, me)
            lds_easy_setopt_prereq(easy, { data, _, _, _, _ in
                EasyHandle.transfer(data)?.aboutToSend() ?? CURL_PREREQFUNC_OK
            }, me)
            lds_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer)
            // The default CA certificates: LOADSTATE_CA_FILE and
            // LOADSTATE_CA_DIR when set (a copy of libcurl built on another
            // machine, as in the Python wheel, has that machine's paths
            // compiled in), otherwise libcurl's own.
            if let file = getenv("LOADSTATE_CA_FILE"), file.pointee != 0 {
                handle.defaultCAFile = String(cString: file)
                lds_easy_setopt_str(easy, CURLOPT_CAINFO, handle.defaultCAFile)
            } else {
                var cainfo: UnsafeMutableRawPointer?
                if lds_easy_getinfo_ptr(easy, CURLINFO_CAINFO, &cainfo) == CURLE_OK, let cainfo {
                    handle.defaultCAFile = String(cString: cainfo.assumingMemoryBound(to: CChar.self))
                }
            }
            if let dir = getenv("LOADSTATE_CA_DIR"), dir.pointee != 0 {
                lds_easy_setopt_str(easy, CURLOPT_CAPATH, String(cString: dir))
            }
            handle.isSetUp = true
        }
        if handle.url != request.url {
            lds_easy_setopt_str(easy, CURLOPT_URL, request.url)
            handle.url = request.url
        }
        if handle.maxRedirects != request.maxRedirects {
            lds_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, request.maxRedirects > 0 ? 1 : 0)
            lds_easy_setopt_long(easy, CURLOPT_MAXREDIRS, Int(request.maxRedirects))
            handle.maxRedirects = request.maxRedirects
        }
        if handle.insecure != request.insecure {
            lds_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, request.insecure ? 0 : 1)
            lds_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, request.insecure ? 0 : 2)
            handle.insecure = request.insecure
        }
        if handle.decodingOff {
            lds_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 1)
            handle.decodingOff = false
        }
        if handle.compressed != request.compressed {
            // The encodings this libcurl decodes; with none set, curl
            // neither asks for nor decodes a compressed body.
            lds_easy_setopt_str(easy, CURLOPT_ACCEPT_ENCODING, request.compressed ? HTTPLoader.acceptEncoding : nil)
            handle.compressed = request.compressed
        }
        let overTLS = HTTPLoader.startsWithIgnoringCase(request.url, "https:")
        if handle.version != request.version || handle.versionOverTLS != overTLS {
            configureVersion(overTLS: overTLS)
        }
        if handle.caFile != request.caFile {
            lds_easy_setopt_str(easy, CURLOPT_CAINFO, request.caFile ?? handle.defaultCAFile)
            handle.caFile = request.caFile
        }
        if handle.timeoutMs != request.timeoutMs {
            lds_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeoutMs))
            handle.timeoutMs = request.timeoutMs
        }
        // The method: HEAD, GET, or a body (POST unless named otherwise).
        // Its options change one another, so they are set as a group,
        // unless this request and the last are both GETs with no body.
        let method = Method(request.method)
        let plainGet = method == .get && request.body.isEmpty
        if !(plainGet && handle.plainGet) {
            lds_easy_setopt_long(easy, CURLOPT_NOBODY, method == .head ? 1 : 0)
            if !request.body.isEmpty || method == .post || method == .put || method == .patch {
                lds_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
                request.body.withUnsafeBytes { raw in
                    let base = raw.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)
                    lds_easy_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
                }
            } else if method != .head {
                lds_easy_setopt_long(easy, CURLOPT_HTTPGET, 1)
            }
            if method == .get || method == .head {
                lds_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, nil)
            } else {
                lds_easy_setopt_str(easy, CURLOPT_CUSTOMREQUEST, request.method.uppercased())
            }
        }
        handle.plainGet = plainGet
        let conditions = revalidation?.conditionalHeaders ?? []
        if request.headers.isEmpty && conditions.isEmpty {
            if handle.headers != handle.agentHeader {
                lds_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, handle.agentHeader)
                handle.headers = handle.agentHeader
            }
        } else {
            // A User-Agent line of the request's own replaces the loader's
            // (an empty one, "User-Agent:", sends none).
            if let agent = handle.agentLine,
               !request.headers.contains(where: { HTTPLoader.startsWithIgnoringCase($0, "user-agent:") }) {
                headerList = curl_slist_append(headerList, agent)
            }
            for line in request.headers {
                headerList = curl_slist_append(headerList, line)
            }
            for line in conditions {
                headerList = curl_slist_append(headerList, line)
            }
            lds_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, headerList)
            handle.headers = headerList  // taken back by `detach` before the list is freed
        }
    }

    /// Sets the HTTP version the request asks for. HTTP/2 transfers wait
    /// for a connection that can take one more stream (PIPEWAIT) rather
    /// than open one of their own, so that concurrent requests to one host
    /// share connections.
    private func configureVersion(overTLS: Bool) {
        let version: Int
        switch request.version {
        case .automatic: version = Int(CURL_HTTP_VERSION_NONE)
        case .http1: version = Int(CURL_HTTP_VERSION_1_1)
        case .http2: version = Int(overTLS ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        }
        lds_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, version)
        // Cleartext HTTP/2 (prior knowledge) on a connection curl reuses
        // fails before libcurl 8.0.0 ("Error in the HTTP2 framing layer":
        // curl issue 10634, fixed by pull request 10643): there, each such
        // transfer opens a connection of its own and closes it after.
        let ownConnection = request.version == .http2 && !overTLS && !CurlMulti.reusesPriorKnowledgeConnections
        lds_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, ownConnection ? 1 : 0)
        lds_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, ownConnection ? 1 : 0)
        lds_easy_setopt_long(easy, CURLOPT_PIPEWAIT, request.version == .http2 && !ownConnection ? 1 : 0)
        handle.version = request.version
        handle.versionOverTLS = overTLS
    }

    /// The methods curl is set up for differently; any other is sent as is.
    private enum Method {
        case get, head, post, put, patch, other

        init(_ name: String) {
            switch name {
            case "GET": self = .get
            case "HEAD": self = .head
            case "POST": self = .post
            case "PUT": self = .put
            case "PATCH": self = .patch
            default:
                // Other spellings (`get`) once more in capitals.
                let upper = name.uppercased()
                self = upper == name ? .other : Method(upper)
            }
        }
    }

    // MARK: - curl callbacks (no curl calls in here)

    private func received(_ data: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int {
        guard let data else { return length }
        let start: Int
        if let bodyStart {
            start = bodyStart
        } else {
            // Room for the whole body when its length is announced (up to a
            // limit: the announcement is the server's word).
            var contentLength: curl_off_t = -1
            lds_easy_getinfo_off(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &contentLength)
            announced = contentLength > 0 ? UInt64(contentLength) : 0
            if announced > 0 && request.compressed && HTTPHeaderLines(handle.headerLines).has("content-encoding") {
                // The length of the encoded body: the decoded one is unknown.
                announced = 0
            }
            let body = announced > 0 ? Int(min(announced, maxBody, 16 << 20)) : max(length, 1024)
            start = makeResponse(bodyCapacity: body)
        }
        if UInt64(response.count - start + length) > maxBody {
            return refuse("body over \(maxBody) bytes")
        }
        response.append(contentsOf: UnsafeRawBufferPointer(start: data, count: length))
        progressed(UInt64(response.count - start))
        return length
    }

    /// libcurl is about to send the request. No request is sent twice
    /// behind the caller's back: when libcurl would send it again on
    /// another connection (the one it reused closed without an answer,
    /// "Connection died, retrying a fresh connect"), the transfer ends
    /// instead, and the load's own retry policy decides.
    private func aboutToSend() -> Int32 {
        var redirects = 0
        lds_easy_getinfo_long(easy, CURLINFO_REDIRECT_COUNT, &redirects)
        defer { sentAtRedirect = redirects }
        sends += 1
        guard sends > 1, redirects == sentAtRedirect else { return CURL_PREREQFUNC_OK }
        resendRefused = true
        return CURL_PREREQFUNC_ABORT
    }

    private static let statusLinePrefix = Array("HTTP/".utf8)

    private func receivedHeader(_ data: UnsafeMutablePointer<CChar>?, _ length: Int) -> Int {
        guard let data else { return length }
        let line = UnsafeRawBufferPointer(start: data, count: length)
        if line.starts(with: Self.statusLinePrefix) {
            // The status line of a new response (after a redirect or a
            // 100 Continue): start over.
            guard length <= HTTPLoader.statusLineMax else {
                return refuse("status line over \(HTTPLoader.statusLineMax) bytes")
            }
            headerLineCount = 0
            handle.headerLines.removeAll(keepingCapacity: true)
            response = []
            bodyStart = nil
            trailers = []
            announced = 0
            reported = 0
        } else if length > 2 {
            if bodyStart == nil {
                headerLineCount += 1
                guard handle.headerLines.count + length <= HTTPLoader.headersMax else {
                    return refuse("header lines over \(HTTPLoader.headersMax) bytes")
                }
                guard headerLineCount <= HTTPLoader.headerLinesMax else {
                    return refuse("over \(HTTPLoader.headerLinesMax) header lines")
                }
                handle.headerLines.append(contentsOf: line)
                if !handle.decodingOff && Self.hasUnknownCoding(line) {
                    // libcurl would fail the transfer at the body's first
                    // byte ("Unrecognized content encoding"): the body
                    // arrives as it was sent instead, with its header.
                    lds_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
                    handle.decodingOff = true
                }
            } else {
                guard trailers.count + length <= HTTPLoader.trailersMax else {
                    return refuse("trailer lines over \(HTTPLoader.trailersMax) bytes")
                }
                trailers.append(contentsOf: line)
            }
        }
        return length
    }

    private static let codingFields = [Array("content-encoding:".utf8), Array("transfer-encoding:".utf8)]

    /// The codings libcurl decodes: those it is asked for, and chunked.
    private static let knownCodings = HTTPLoader.acceptEncoding.split(separator: ",")
        .map { Array($0.utf8.filter { $0 != 0x20 }) } + ["identity", "x-gzip", "chunked"].map { Array($0.utf8) }

    /// Whether a header line is a `Content-Encoding` or `Transfer-Encoding`
    /// naming a coding the libcurl in use does not decode (it would fail
    /// the transfer at the body's first byte: "Unrecognized content
    /// encoding type").
    private static func hasUnknownCoding(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let field = codingFields.first(where: { name in
            line.count > name.count && HTTPHeaderLines.equalsIgnoringCase(line[0..<name.count], name)
        }) else { return false }
        var unknown = false
        HTTPCacheControl.directives(ArraySlice(line[field.count...])) { coding, _ in
            if !knownCodings.contains(where: { HTTPHeaderLines.equalsIgnoringCase(coding, $0) }) { unknown = true }
        }
        return unknown
    }

    /// Stops the transfer from a callback (curl then ends it with
    /// CURLE_WRITE_ERROR) because the response passed a limit.
    private func refuse(_ what: String) -> Int {
        refusal = LoadError(.tooBig, message: "\(what) (\(request.url))")
        return 0
    }

    /// Makes `response` from the header lines so far, with room for
    /// `bodyCapacity` bytes of body; returns where the body begins.
    private func makeResponse(bodyCapacity: Int) -> Int {
        let lines = handle.headerLines
        response = HTTPResponse.encodingStart(capacity: HTTPResponse.encodedHeadersStart + lines.count + bodyCapacity)
        response.append(contentsOf: lines)
        bodyStart = response.count
        return response.count
    }

    /// Reports the body's progress (from the write callback, rather than
    /// curl's progress callback, which curl calls several times a request
    /// even for a small body): every `progressStep` bytes, and at the end of
    /// a body that already reported some. A small body reports none: its
    /// LOADED event follows at once.
    private func progressed(_ done: UInt64) {
        let finished = announced > 0 && done >= announced
        guard done > reported, done - reported >= Self.progressStep || (finished && reported > 0) else { return }
        reported = done
        submit(.progress(done: done, total: announced))
    }

    private static let progressStep: UInt64 = 64 << 10

    // MARK: - Completion

    /// Reports how the transfer ended.
    func complete(_ result: CURLcode) {
        submit(outcome(result))
    }

    private func outcome(_ result: CURLcode) -> JobOperation<[UInt8]> {
        if result == CURLE_OK {
            var longStatus = 0
            lds_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &longStatus)
            let status = Int32(clamping: longStatus)
            let headersEnd = bodyStart ?? makeResponse(bodyCapacity: 0)
            let lines = response[HTTPResponse.encodedHeadersStart..<headersEnd]
            let followsRules = job.cache?.followsLoaderRules ?? false
            if status == 304, let revalidation, revalidation.sendsConditions {
                guard followsRules else {
                    let (value, headers) = revalidation.updated(with: lines)
                    let storedStatus = HTTPRevalidation.parts(of: value)?.status ?? 200
                    var write = cacheWrite(for: HTTPHeaderLines(headers), status: storedStatus)
                    write.origin = .revalidated
                    job.cacheWrite = write
                    return .succeed(value)
                }
                // One copy of the body: the stored response with the 304's
                // fields, its age and the cache's word, both shown and stored
                // (served again, its Age and Cache-Status are written anew).
                let notModified = HTTPHeaderLines(lines)
                let age = HTTPCacheRecord(headers: notModified, control: HTTPCacheControl(), nowMs: Clock.wallMs()) { _ in nil }
                // The 304's fields, unless the header lines would pass their bound.
                let update = revalidation.updateFields(lines)
                let fits = revalidation.headerLines.count + update.lines.count <= HTTPLoader.headersMax
                let value = HTTPServedResponse.make(from: revalidation.storedValue, record: revalidation.record,
                                                    ageMs: age.initialAgeMs, status: .revalidated,
                                                    update: fits ? update : nil)
                guard let (storedStatus, merged) = HTTPRevalidation.parts(of: value) else { return .succeed(value) }
                var write = cacheWrite(for: HTTPHeaderLines(value[merged]), status: storedStatus)
                write.origin = .revalidated
                job.cacheWrite = write
                return .succeed(value)
            }
            let success = (200..<300).contains(status)
            if job.cache != nil {
                job.cacheWrite = cacheWrite(for: HTTPHeaderLines(lines), status: status)
                if success, followsRules, let revalidation, !revalidation.isOtherVariant,
                   request.method.uppercased() == "HEAD",
                   revalidation.record.agrees(with: HTTPHeaderLines(lines)) {
                    // A HEAD's answer updates the stored GET's header lines
                    // (RFC 9111 section 4.3.5); the HEAD gets its own answer.
                    let (value, headers) = revalidation.updated(with: lines)
                    var get = request
                    get.method = "GET"
                    var write = loader.cacheWrite(for: HTTPHeaderLines(headers), status: 200, request: get,
                                                  key: job.cache?.key ?? [], followsRules: true, nowMs: Clock.wallMs())
                    write.storedValue = value
                    job.cacheWrite = write
                    // The HEAD's answer with the stored fields it did not carry.
                    let record = HTTPCacheRecord(decoding: write.meta)
                    return .succeed(HTTPServedResponse.make(from: value, record: record, ageMs: record?.initialAgeMs ?? 0,
                                                            status: .revalidated, head: true))
                }
            }
            if !success, [500, 502, 503, 504].contains(status), let stale = staleOnError(disconnected: false) {
                return stale
            }
            if success && trailers.isEmpty {
                // The common case: the value is the buffer it arrived in.
                HTTPResponse.finishEncoding(&response, status: status, headersEnd: headersEnd)
                return .succeed(response)
            }
            let parsed = HTTPResponse(status: status,
                                      headers: Array(response[HTTPResponse.encodedHeadersStart..<headersEnd]) + trailers,
                                      body: Array(response[headersEnd...]))
            if success {
                return .succeed(parsed.encoded())
            }
            let error = LoadError(domain: .http, code: status, message: "HTTP \(status) from \(request.url)",
                                  underlying: HTTPStatusError(response: parsed))
            return .fail(error, retry: retryAdvice(status: status, response: parsed))
        }
        if refusal == nil, result != CURLE_TOO_MANY_REDIRECTS, result != CURLE_UNSUPPORTED_PROTOCOL,
           result != CURLE_URL_MALFORMAT, let stale = staleOnError(disconnected: request.staleOnDisconnect) {
            return stale
        }
        let detail = String(cString: errorBuffer)
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(result)) : detail
        let message = "\(reason) (\(request.url))"
        if let refusal {
            return .fail(refusal, retry: .never)
        }
        if resendRefused {
            // The server closed the connection without answering: the request
            // may have reached it. Sent again only by the load's retries, and
            // only when its method may be repeated (RFC 9110 section 9.2.2).
            let message = "the connection closed before an answer; not sent again (\(request.url))"
            return .fail(LoadError(.io, message: message), retry: HTTPLoader.isIdempotent(request.method) ? .allowed : .never)
        }
        switch result {
        case CURLE_OPERATION_TIMEDOUT:
            return .fail(LoadError(.timedOut, message: message), retry: .allowed)
        case CURLE_TOO_MANY_REDIRECTS:
            // Named here rather than by curl's buffer, which keeps the first
            // message of a transfer: one written on an earlier hop would
            // stand for the loop.
            let loop = "too many redirects (more than \(request.maxRedirects)) from \(request.url)"
            return .fail(LoadError(.invalidArgument, message: loop), retry: .never)
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return .fail(LoadError(.invalidArgument, message: message), retry: .never)
        default:
            // curl's errno of the failure; else that of a socket that could
            // not be made (curl reports that as a failed connection with
            // none), such as EMFILE when the process is out of descriptors.
            var osErrno = 0
            lds_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &osErrno)
            let code = osErrno != 0 ? Int32(clamping: osErrno) : handle.socketErrno
            if code != 0 {
                return .fail(LoadError(domain: .os, code: code, message: osMessage(message, code)), retry: .allowed)
            }
            return .fail(LoadError(.io, message: message), retry: .allowed)
        }
    }

    /// curl's message of a failure, with the errno's own text when curl's
    /// does not give it (a socket that could not be made).
    private func osMessage(_ message: String, _ code: Int32) -> String {
        guard code == handle.socketErrno, let text = strerror(code) else { return message }
        return "\(String(cString: text)): \(message)"
    }

    /// What a final response (or a stored one updated by a 304) does to
    /// the job's cache.
    private func cacheWrite(for headers: HTTPHeaderLines, status: Int32) -> CacheWrite {
        loader.cacheWrite(for: headers, status: status, request: request, key: job.cache?.key ?? [],
                          followsRules: job.cache?.followsLoaderRules ?? false, nowMs: Clock.wallMs())
    }

    /// The stored response, when it may stand in for a failed load
    /// (`stale-if-error`, or any time the server was unreachable when
    /// `disconnected`): shown from the cache and stale, the entry left as it is.
    private func staleOnError(disconnected: Bool) -> JobOperation<[UInt8]>? {
        let now = Clock.wallMs()
        guard let revalidation, revalidation.servesOnError(nowMs: now, disconnected: disconnected) else { return nil }
        job.cacheWrite = CacheWrite(entry: .keep, origin: .staleOnError)
        let verdict = revalidation.record.verdict(storedAtMs: revalidation.storedAtMs, nowMs: now)
        var value = HTTPServedResponse.make(from: revalidation.storedValue, record: revalidation.record,
                                            ageMs: verdict.ageMs,
                                            status: .hit(ttlSeconds: HTTPServedResponse.seconds(verdict.ttlMs),
                                                         detail: "stale"),
                                            head: request.method.uppercased() == "HEAD")
        if !revalidation.followsRules { value = revalidation.storedValue }
        return .succeed(value)
    }

    /// 5xx, 408 and 429 are worth retrying, after the delay `Retry-After`
    /// gives when the server sends one that parses (the cell caps it at the
    /// load's maximum back-off); other statuses are final.
    private func retryAdvice(status: Int32, response: HTTPResponse) -> RetryAdvice {
        guard status >= 500 || status == 408 || status == 429 else { return .never }
        if let value = response.header("Retry-After"), let ms = RetryAfter.delayMs(value, nowMs: Clock.wallMs()) {
            return .after(ms: ms)
        }
        return .allowed
    }

    private func submit(_ op: JobOperation<[UInt8]>) {
        runtime.submit(op, job: job.id, of: Job<[UInt8], [UInt8]>.self)
    }
}
