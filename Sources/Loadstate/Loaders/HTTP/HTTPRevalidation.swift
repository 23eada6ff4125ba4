/// A cached response that a GET of the http loader may stand for (RFC
/// 9110 section 13, RFC 9111 section 4.3): when it has validators, the
/// request carries them (`If-None-Match`, `If-Modified-Since`), and a
/// `304 Not Modified` answer makes the stored response current again, with
/// the header lines the 304 carries in place of its own; when the load
/// fails and the response allows it (`stale-if-error`), it is served
/// instead of the error.
struct HTTPRevalidation {
    /// The stored response in its encoding (`HTTPResponse.encoded()`), as
    /// the cache gave it: its body is not copied out of it.
    let storedValue: [UInt8]
    /// Where its header lines lie in `storedValue` (the body follows).
    let headerLines: Range<Int>
    var record: HTTPCacheRecord
    /// When the entry was stored.
    var storedAtMs: UInt64 = 0
    /// Whether the request carries the validators (it asks no condition of its own).
    var sendsConditions = true
    /// Whether the load follows the stored response's rules (`stale-if-error`).
    var followsRules = false
    /// The stored response is another request's variant (`Vary`): only a
    /// 304 to its ETag makes it this request's; it never stands in for a
    /// failed load.
    var isOtherVariant = false

    /// The entry of `job`'s cache that `request` may stand for: a GET
    /// without a body, and a stored 2xx response (within the load's
    /// maximum age) that answers the request (`Vary`, when the load
    /// follows the response's rules). Reads the validators from the
    /// entry's record, or from the stored headers when the entry has none
    /// (an entry stored by an earlier version).
    static func of(_ job: Job<[UInt8], [UInt8]>, request: HTTPRequest, loader: HTTPLoader,
                   nowMs: UInt64) -> HTTPRevalidation? {
        // A range request, or one that asks for nothing stored, revalidates nothing.
        guard let cache = job.cache, HTTPLoader.readsCache(request.method), request.body.isEmpty,
              loader.requestValue(Array("range".utf8), of: request) == nil, !loader.askedControl(request).noStore,
              var entry = cache.entry(at: nowMs)
        else { return nil }
        var kept = HTTPCacheRecord(decoding: entry.meta)
        var otherVariant = false
        if cache.followsLoaderRules, let record = kept {
            if let (stored, variantRecord) = loader.storedEntry(entry, store: cache.store, key: cache.key,
                                                                 request: request) {
                (entry, kept) = (stored, variantRecord)
            } else {
                // No variant answers this request; the latest one's ETag
                // still asks the server whether it would do (RFC 9111
                // section 4.3.1): a 304 makes it this request's variant.
                guard !record.varyAll, record.etag != nil else { return nil }
                otherVariant = true
            }
        }
        guard let (status, headerLines) = Self.parts(of: entry.value), (200..<300).contains(status) else { return nil }
        let record = kept ?? HTTPCacheRecord(headers: HTTPHeaderLines(entry.value[headerLines]))
        var revalidation = HTTPRevalidation(storedValue: entry.value, headerLines: headerLines, record: record)
        revalidation.storedAtMs = entry.storedAtMs
        revalidation.sendsConditions = request.method.uppercased() == "GET" && revalidation.record.hasValidators
            && !request.headers.contains(where: isConditional)
        revalidation.followsRules = cache.followsLoaderRules
        revalidation.decodedBody = request.compressed
        revalidation.isOtherVariant = otherVariant
        if otherVariant { revalidation.record.lastModified = nil }
        return revalidation
    }

    init(storedValue: [UInt8], headerLines: Range<Int>, record: HTTPCacheRecord) {
        self.storedValue = storedValue
        self.headerLines = headerLines
        self.record = record
    }

    /// A stored response, for the tests.
    init(stored: HTTPResponse, record: HTTPCacheRecord) {
        let value = stored.encoded()
        self.init(storedValue: value, headerLines: Self.parts(of: value)?.headerLines ?? 0..<0, record: record)
    }

    /// The status and the range of the header lines of an encoded response
    /// (`HTTPResponse`), read without copying it; nil when it is not one.
    static func parts(of value: [UInt8]) -> (status: Int32, headerLines: Range<Int>)? {
        let start = HTTPResponse.encodedHeadersStart
        guard value.count >= start, value.starts(with: HTTPResponse.magic.utf8) else { return nil }
        func u32(_ at: Int) -> UInt32 {
            (0..<4).reduce(UInt32(0)) { $0 | UInt32(value[at + $1]) << (8 * UInt32($1)) }
        }
        let status = Int32(bitPattern: u32(4))
        let length = Int(u32(8))
        guard value.count - start >= length else { return nil }
        return (status, start..<(start + length))
    }

    /// The request header lines of the conditions it asks.
    var conditionalHeaders: [String] {
        sendsConditions ? record.conditionalHeaders : []
    }

    /// Whether the stored response stands in for a failed load now;
    /// `disconnected`: the server was not reached or gave no answer.
    func servesOnError(nowMs: UInt64, disconnected: Bool) -> Bool {
        followsRules && !isOtherVariant
            && record.servesOnError(storedAtMs: storedAtMs, nowMs: nowMs, disconnected: disconnected)
    }

    private static let conditionalNames = ["if-none-match:", "if-modified-since:", "if-match:",
                                           "if-unmodified-since:", "if-range:"].map { Array($0.utf8) }

    /// Whether a request header line asks a condition (the host's own:
    /// then the loader adds none, and a 304 is the host's to read).
    private static func isConditional(_ line: String) -> Bool {
        let bytes = Array(line.utf8)
        return conditionalNames.contains { name in
            bytes.count >= name.count && HTTPHeaderLines.equalsIgnoringCase(bytes[0..<name.count], name)
        }
    }

    /// Header fields a 304 does not replace in the stored response
    /// (RFC 9111 section 3.2: they describe the 304's own message).
    /// `Content-Encoding` is among them when the stored body was decoded
    /// (a compressed request): the stored body no longer has that coding.
    private static let kept = ["content-length", "transfer-encoding",
                               "connection", "keep-alive", "te", "trailer", "upgrade",
                               "proxy-connection"].map { Array($0.utf8) }
    private static let contentEncoding = Array("content-encoding".utf8)
    /// Whether the stored body was decoded as it arrived.
    var decodedBody = false

    /// The fields a 304's header lines update in the stored response: the
    /// names (lower case) they replace and the lines that take their place.
    func updateFields(_ notModified: ArraySlice<UInt8>) -> (names: [[UInt8]], lines: [UInt8]) {
        var replacing: [[UInt8]] = []
        var fresh: [UInt8] = []
        HTTPHeaderLines(notModified).forEach { name, value in
            let lower = name.map(HTTPHeaderLines.lower)
            guard !Self.kept.contains(lower), !(decodedBody && lower == Self.contentEncoding),
                  HTTPHeaderLines.isSendable(value) || value.isEmpty else { return }
            if !replacing.contains(lower) { replacing.append(lower) }
            fresh.append(contentsOf: name)
            fresh.append(contentsOf: ": ".utf8)
            fresh.append(contentsOf: value)
            fresh.append(contentsOf: "\r\n".utf8)
        }
        return (replacing, fresh)
    }

    /// The stored response brought up to date by a 304 whose header lines
    /// are `notModified`: each field the 304 carries (but those of `kept`)
    /// replaces the stored lines of that name. When the result would pass
    /// `HTTPLoader.headersMax`, the stored header lines stay as they were.
    /// Returns the response's encoding (the stored one itself when nothing
    /// changed) and its header lines.
    func updated(with notModified: ArraySlice<UInt8>) -> (value: [UInt8], headers: ArraySlice<UInt8>) {
        let (replacing, fresh) = updateFields(notModified)
        let headers = storedValue[headerLines]
        guard !replacing.isEmpty else { return (storedValue, headers) }
        var merged: [UInt8] = []
        var start = headers.startIndex
        while start < headers.endIndex {
            var end = start
            while end < headers.endIndex && headers[end] != UInt8(ascii: "\n") { end += 1 }
            let line = headers[start..<min(end + 1, headers.endIndex)]
            let name = line.firstIndex(of: UInt8(ascii: ":")).map { line[start..<$0].map(HTTPHeaderLines.lower) }
            if name.map({ !replacing.contains($0) }) ?? true { merged.append(contentsOf: line) }
            start = end + 1
        }
        merged.append(contentsOf: fresh)
        if merged.count > HTTPLoader.headersMax || merged.elementsEqual(headers) { return (storedValue, headers) }
        // One copy of the body, behind the new header lines.
        let body = storedValue[headerLines.upperBound...]
        var value = HTTPResponse.encodingStart(capacity: HTTPResponse.encodedHeadersStart + merged.count + body.count)
        value.append(contentsOf: merged)
        let headersEnd = value.count
        value.append(contentsOf: body)
        let status = Self.parts(of: storedValue)?.status ?? 200
        HTTPResponse.finishEncoding(&value, status: status, headersEnd: headersEnd)
        return (value, value[HTTPResponse.encodedHeadersStart..<headersEnd])
    }
}
