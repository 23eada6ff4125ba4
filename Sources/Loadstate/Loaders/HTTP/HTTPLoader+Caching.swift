/// The http loader's rules for the responses it stores in a cache (RFC
/// 9111 as a private cache): which request a stored response answers
/// (`Vary`), how long it is fresh, and what a new response does to it.
extension HTTPLoader {
    /// The value the request sends for a header field (`name` in lower
    /// case): its lines of that name joined by ", ", or the loader's own
    /// value for a field it adds (`User-Agent`, and `Accept-Encoding` for a
    /// compressed request); nil when none is sent.
    func requestValue(_ name: [UInt8], of request: HTTPRequest) -> [UInt8]? {
        var joined: [UInt8]?
        for line in request.headers {
            let bytes = Array(line.utf8)
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
                  HTTPHeaderLines.equalsIgnoringCase(bytes[..<colon], name) else { continue }
            let value = HTTPHeaderLines.trimmed(bytes[(colon + 1)...])
            if joined == nil {
                joined = Array(value)
            } else {
                joined?.append(contentsOf: ", ".utf8)
                joined?.append(contentsOf: value)
            }
        }
        if joined == nil && name == Array("user-agent".utf8) && !options.userAgent.isEmpty {
            return Array(options.userAgent.utf8)
        }
        if joined == nil && name == Array("accept-encoding".utf8) && request.compressed {
            return Array(Self.acceptEncoding.utf8)
        }
        return joined
    }

    /// `Loader.judge` for the http loader: an entry without a record of
    /// this loader's is left to the load's ages.
    func judgeEntry(_ entry: CacheEntry, request: [UInt8], nowMs: UInt64) -> CacheJudgement? {
        guard let record = HTTPCacheRecord(decoding: entry.meta) else { return nil }
        if record.varyAll { return .unusable }
        if !record.vary.isEmpty {
            guard let decoded = HTTPRequest(decoding: request),
                  record.matches(requestValue: { requestValue($0, of: decoded) }) else { return .unusable }
        }
        return record.judgement(storedAtMs: entry.storedAtMs, nowMs: nowMs)
    }

    /// What a 2xx response with these header lines, received now for
    /// `request`, does to the job's cache entry.
    func cacheWrite(for headers: HTTPHeaderLines, request: HTTPRequest, followsRules: Bool,
                    nowMs: UInt64) -> CacheWrite {
        let control = HTTPCacheControl(headers.values("cache-control"))
        let record = HTTPCacheRecord(headers: headers, control: control, nowMs: nowMs) {
            requestValue($0, of: request)
        }
        if followsRules && (control.noStore || requestNoStore(request)) {
            return CacheWrite(entry: .remove)
        }
        return CacheWrite(meta: record.encoded())
    }

    /// Whether the request's own `Cache-Control` says `no-store`.
    private func requestNoStore(_ request: HTTPRequest) -> Bool {
        guard let value = requestValue(Array("cache-control".utf8), of: request) else { return false }
        return HTTPCacheControl([value[...]]).noStore
    }
}
