/// A stored response as the http loader's cache serves it (RFC 9111
/// sections 3.1, 4 and 5.1; RFC 9211): built from the stored encoding in
/// one pass, without
/// - the hop-by-hop fields (`Connection`, `Keep-Alive`, `Proxy-Connection`,
///   `Proxy-Authenticate`, `Proxy-Authentication-Info`,
///   `Proxy-Authorization`, `TE`, `Transfer-Encoding`, `Upgrade`) and the
///   fields the stored `Connection` names,
/// - the fields a `no-cache="..."` named,
/// - its stored `Age`, replaced by its current age,
/// and with a `Cache-Status` member of its own (`loadstate; hit; ttl=N;
/// detail=fresh|heuristic|stale`, or `loadstate; fwd=stale;
/// fwd-status=304; detail=revalidated`) after any other cache's.
struct HTTPServedResponse {
    /// What `Cache-Status` says of the response.
    enum Status {
        /// Served from the cache without the server: `ttl` in seconds
        /// (negative when stale) and the verdict's detail.
        case hit(ttlSeconds: Int64, detail: String)
        /// Confirmed by the server (a 304).
        case revalidated
    }

    /// The cache's name in `Cache-Status` (RFC 9211 section 2).
    static let cacheName = "loadstate"
    private static let cacheStatusName = Array("cache-status".utf8)
    private static let ownMember = Array("\(cacheName);".utf8)

    /// The fields never served from the cache (RFC 9110 section 7.6.1,
    /// RFC 9111 section 3.1), and `Age`, which the cache writes anew.
    private static let dropped = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                                  "proxy-authentication-info", "proxy-authorization", "te", "transfer-encoding",
                                  "upgrade", "age"].map { Array($0.utf8) }

    /// The fields a 304 made by the cache for a request's own condition
    /// carries (RFC 9110 section 15.4.5), besides `Age` and `Cache-Status`.
    private static let notModifiedFields = ["cache-control", "content-location", "date", "etag", "expires", "vary",
                                            "last-modified"].map { Array($0.utf8) }

    /// The response the cache serves from `stored` (an `HTTPResponse`
    /// encoding; returned as it is when it is not one). `head`: without its
    /// body (an answer to HEAD); `notModified`: as a 304 without a body (an
    /// answer to a request whose own condition the stored response meets).
    /// `range`: the bytes of the body a range request asked for (RFC 9110
    /// section 14), served as a 206 with its `Content-Range`.
    /// `update`: the fields of a 304 that confirmed it (RFC 9111 section
    /// 3.2), each in place of the stored lines of its name (see
    /// `HTTPRevalidation.updateFields`).
    static func make(from stored: [UInt8], record: HTTPCacheRecord?, ageMs: UInt64, status: Status,
                     head: Bool = false, notModified: Bool = false, range: Range<Int>? = nil,
                     update: (names: [[UInt8]], lines: [UInt8])? = nil) -> [UInt8] {
        guard let (storedStatus, lines) = HTTPRevalidation.parts(of: stored) else { return stored }
        let headers = HTTPHeaderLines(stored[lines])
        var omitted = dropped + (update?.names ?? [])
        if range != nil { omitted += ["content-length", "content-range"].map { Array($0.utf8) } }
        for value in headers.values("connection") {
            HTTPCacheControl.directives(value) { name, _ in omitted.append(name.map(HTTPHeaderLines.lower)) }
        }
        omitted.append(contentsOf: record?.noCacheFields ?? [])
        let bodyCount = head || notModified ? 0 : stored.count - lines.upperBound
        var value = HTTPResponse.encodingStart(capacity: stored.count - bodyCount + 96 + bodyCount)
        // Line by line, as stored (names and values untouched).
        var start = lines.lowerBound
        while start < lines.upperBound {
            var end = start
            while end < lines.upperBound && stored[end] != UInt8(ascii: "\n") { end += 1 }
            let line = stored[start..<min(end + 1, lines.upperBound)]
            start = end + 1
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = line[line.startIndex..<colon].map(HTTPHeaderLines.lower)
            if omitted.contains(name) || (notModified && !notModifiedFields.contains(name)) { continue }
            // This cache's own verdict, when it served the response before, is written anew.
            if name == cacheStatusName, HTTPHeaderLines.trimmed(line[(colon + 1)...]).starts(with: ownMember) { continue }
            value.append(contentsOf: line)
        }
        if let update { value.append(contentsOf: update.lines) }
        if let range {
            let total = stored.count - lines.upperBound
            value.append(contentsOf: "Content-Range: bytes \(range.lowerBound)-\(range.upperBound - 1)/\(total)\r\n".utf8)
            value.append(contentsOf: "Content-Length: \(range.count)\r\n".utf8)
        }
        value.append(contentsOf: "Age: \(ageMs / 1000)\r\n".utf8)
        switch status {
        case .hit(let ttl, let detail):
            value.append(contentsOf: "Cache-Status: \(cacheName); hit; ttl=\(ttl); detail=\(detail)\r\n".utf8)
        case .revalidated:
            value.append(contentsOf: "Cache-Status: \(cacheName); fwd=stale; fwd-status=304; detail=revalidated\r\n".utf8)
        }
        let headersEnd = value.count
        if let range, !head {
            value.append(contentsOf: stored[(lines.upperBound + range.lowerBound)..<(lines.upperBound + range.upperBound)])
        } else if bodyCount > 0 {
            value.append(contentsOf: stored[(stored.count - bodyCount)...])
        }
        HTTPResponse.finishEncoding(&value, status: notModified ? 304 : range != nil ? 206 : storedStatus,
                                    headersEnd: headersEnd)
        return value
    }

    /// The one byte range a `Range` value asks of a body of `length` bytes
    /// (`bytes=a-b`, `bytes=a-`, `bytes=-n`; RFC 9110 section 14.1.2),
    /// clamped to the body; nil for several ranges, another unit, a range
    /// that does not parse or one the body cannot satisfy.
    static func byteRange(_ value: [UInt8], length: Int) -> Range<Int>? {
        let text = String(decoding: value, as: UTF8.self).filter { $0 != " " && $0 != "\t" }
        guard text.lowercased().hasPrefix("bytes="), length > 0 else { return nil }
        let spec = text.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        func number(_ s: Substring) -> Int? {
            guard !s.isEmpty, s.count <= 18, s.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(s)
        }
        if first.isEmpty {
            guard let suffix = number(last), suffix > 0 else { return nil }
            return max(0, length - suffix)..<length
        }
        guard let start = number(first), start < length else { return nil }
        if last.isEmpty { return start..<length }
        guard let end = number(last), end >= start else { return nil }
        return start..<min(end + 1, length)
    }

    /// Seconds of a `Verdict`'s ttl, rounded toward zero.
    static func seconds(_ ms: Int64) -> Int64 { ms / 1000 }
}
