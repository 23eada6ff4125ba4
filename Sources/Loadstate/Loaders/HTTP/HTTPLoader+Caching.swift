/// The http loader's rules for the responses it stores in a cache (RFC
/// 9111 as a private cache): which request a stored response answers
/// (`Vary`, with one entry per variant), how long it is fresh, what the
/// request's own directives and conditions ask, and what a new response
/// does to the entries.
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

    /// The request's own `Cache-Control` directives (RFC 9111 section 5.2.1).
    func askedControl(_ request: HTTPRequest) -> HTTPCacheControl {
        guard let value = requestValue(Array("cache-control".utf8), of: request) else { return HTTPCacheControl() }
        return HTTPCacheControl([value[...]])
    }

    /// Whether a method's response may be served from, and stored in, the
    /// cache: GET, and HEAD (answered from a stored GET).
    static func readsCache(_ method: String) -> Bool {
        let upper = method.uppercased()
        return upper == "GET" || upper == "HEAD"
    }

    /// Whether a request of the method may be sent again with the same
    /// effect (RFC 9110 section 9.2.2): the safe methods, PUT and DELETE.
    static func isIdempotent(_ method: String) -> Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(method.uppercased())
    }

    /// Whether a method is safe (RFC 9110 section 9.2.1): an answer to any
    /// other invalidates the stored responses of its URI (RFC 9111 section 4.4).
    static func isSafe(_ method: String) -> Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method.uppercased())
    }

    /// The key of the variant of `key` that a request with these values of
    /// the fields a response's `Vary` names is stored under: the key, a 0
    /// byte, then each name and normalised value.
    static func variantKey(_ key: [UInt8], vary: [HTTPCacheRecord.Varied]) -> [UInt8] {
        var variant = key
        variant.append(0)
        for varied in vary {
            variant.append(contentsOf: varied.name)
            if let value = varied.value {
                variant.append(UInt8(ascii: "="))
                variant.append(contentsOf: value)
            }
            variant.append(UInt8(ascii: "\n"))
        }
        return variant
    }

    /// The variant values a request has for the names of a record's `Vary`.
    func varied(_ record: HTTPCacheRecord, by request: HTTPRequest) -> [HTTPCacheRecord.Varied] {
        record.vary.map { varied in
            HTTPCacheRecord.Varied(name: varied.name, value: requestValue(varied.name, of: request).map {
                HTTPCacheRecord.normalised($0, of: varied.name)
            })
        }
    }

    /// The stored entry (under `key`, or its variant's key) that answers
    /// `request`, with its record; nil when none does.
    func storedEntry(_ entry: CacheEntry, store: any CacheStore, key: [UInt8],
                     request: HTTPRequest) -> (entry: CacheEntry, record: HTTPCacheRecord)? {
        guard let record = HTTPCacheRecord(decoding: entry.meta), !record.varyAll else { return nil }
        if record.matches(requestValue: { requestValue($0, of: request) }) { return (entry, record) }
        guard let variant = try? store.get(Self.variantKey(key, vary: varied(record, by: request))),
              let variantRecord = HTTPCacheRecord(decoding: variant.meta),
              variantRecord.matches(requestValue: { requestValue($0, of: request) })
        else { return nil }
        return (variant, variantRecord)
    }

    /// `Loader.read` for the http loader: an entry without a record of this
    /// loader's is left to the load's ages.
    func readEntry(_ entry: CacheEntry, store: any CacheStore, key: [UInt8],
                   request: [UInt8], freshMs: UInt64, nowMs: UInt64) -> CacheReading? {
        guard HTTPCacheRecord(decoding: entry.meta) != nil else { return nil }
        guard let decoded = HTTPRequest(decoding: request), Self.readsCache(decoded.method),
              !askedControl(decoded).noStore,
              let (stored, record) = storedEntry(entry, store: store, key: key, request: decoded),
              let (status, lines) = HTTPRevalidation.parts(of: stored.value)
        else { return CacheReading(judgement: .unusable) }
        // A range request is answered from a stored complete 200 when it
        // asks one range the body holds; otherwise by the server.
        var range: Range<Int>?
        if let asked = requestValue(Array("range".utf8), of: decoded) {
            guard status == 200,
                  let bytes = HTTPServedResponse.byteRange(asked, length: stored.value.count - lines.upperBound)
            else { return CacheReading(judgement: .unusable) }
            range = bytes
        }
        let verdict = record.verdict(storedAtMs: stored.storedAtMs, nowMs: nowMs, asked: askedControl(decoded),
                                     heuristics: decoded.heuristicFreshness, freshMs: freshMs)
        let notModified = verdict.judgement == .fresh
            && Self.meetsCondition(of: decoded, stored: HTTPHeaderLines(stored.value[lines]))
        let head = decoded.method.uppercased() == "HEAD"
        let render = {
            HTTPServedResponse.make(
                from: stored.value, record: record, ageMs: verdict.ageMs,
                status: .hit(ttlSeconds: HTTPServedResponse.seconds(verdict.ttlMs), detail: verdict.detail.rawValue),
                head: head, notModified: notModified, range: notModified ? nil : range)
        }
        let shownStatus: Int32 = notModified ? 304 : range != nil ? 206 : status
        guard !(200..<300).contains(shownStatus) else {
            return CacheReading(judgement: verdict.judgement, render: render, storedAtMs: stored.storedAtMs)
        }
        // A stored failure (or the cache's 304) is shown as the error it is.
        let shown = render()
        var reading = CacheReading(judgement: verdict.judgement, render: { shown }, storedAtMs: stored.storedAtMs)
        if let response = HTTPResponse(decoding: shown) {
            reading.error = LoadError(domain: .http, code: shownStatus,
                                      message: "HTTP \(shownStatus) from \(decoded.url) (from the cache)",
                                      underlying: HTTPStatusError(response: response))
        }
        return reading
    }

    /// Whether the request's own condition is met by a stored response
    /// with these header lines, so that the cache answers 304 (RFC 9110
    /// sections 13.1.2 and 13.1.3, 13.2.2): `If-None-Match` lists a tag that
    /// matches its `ETag` weakly (or is `*`); without `If-None-Match`,
    /// `If-Modified-Since` is no earlier than its `Last-Modified` (or its
    /// `Date`).
    static func meetsCondition(of request: HTTPRequest, stored: HTTPHeaderLines) -> Bool {
        var noneMatch: [UInt8]?
        var modifiedSince: [UInt8]?
        for line in request.headers {
            let bytes = Array(line.utf8)
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let value = Array(HTTPHeaderLines.trimmed(bytes[(colon + 1)...]))
            if HTTPHeaderLines.equalsIgnoringCase(bytes[..<colon], Array("if-none-match".utf8)) {
                noneMatch = (noneMatch.map { $0 + Array(", ".utf8) } ?? []) + value
            } else if HTTPHeaderLines.equalsIgnoringCase(bytes[..<colon], Array("if-modified-since".utf8)) {
                modifiedSince = modifiedSince ?? value
            }
        }
        if let noneMatch {
            guard let etag = stored.first("etag") else { return false }
            let own = weak(Array(etag))
            var met = false
            HTTPCacheControl.directives(noneMatch[...]) { tag, argument in
                // Tags are not directives, but they split the same way at commas outside quotes.
                let whole = argument == nil ? Array(tag) : Array(tag) + [UInt8(ascii: "=")] + Array(argument ?? [])
                if whole == [UInt8(ascii: "*")] || weak(whole) == own { met = true }
            }
            return met
        }
        guard let modifiedSince, let since = HTTPDate.secondsSinceEpoch(modifiedSince),
              let modified = (stored.first("last-modified") ?? stored.first("date"))
                .flatMap({ HTTPDate.secondsSinceEpoch(Array($0)) })
        else { return false }
        return modified <= since
    }

    /// An entity tag for the weak comparison: without `W/` and quotes.
    private static func weak(_ tag: [UInt8]) -> [UInt8] {
        var t = tag[...]
        if t.count >= 2, HTTPHeaderLines.lower(t[t.startIndex]) == UInt8(ascii: "w"), t[t.startIndex + 1] == UInt8(ascii: "/") {
            t = t.dropFirst(2)
        }
        if t.count >= 2, t.first == UInt8(ascii: "\""), t.last == UInt8(ascii: "\"") { t = t.dropFirst().dropLast() }
        return Array(t)
    }

    /// What a final response of `status` with these header lines, received
    /// now for `request` (a load of cache key `key`), does to the cache
    /// (RFC 9111 sections 3 and 4.4):
    /// - to an unsafe method, a 2xx or 3xx removes the entries of the key
    ///   (and its variants) and, when the key is the request's URL, those of
    ///   its same-origin `Location` and `Content-Location`;
    /// - a GET's response is stored when its status may be (2xx but 206,
    ///   or one cacheable by default, or any other with explicit freshness
    ///   or `public`; `must-understand` with an unknown status never),
    ///   unless `no-store` (response or request) forbids it: then any older
    ///   entry under the key is dropped; with `Vary`, under its variant's
    ///   key too;
    /// - other methods' responses are not stored.
    func cacheWrite(for headers: HTTPHeaderLines, status: Int32, request: HTTPRequest, key: [UInt8],
                    followsRules: Bool, nowMs: UInt64) -> CacheWrite {
        let control = HTTPCacheControl(headers.values("cache-control"))
        let record = HTTPCacheRecord(headers: headers, control: control, status: status, nowMs: nowMs) {
            requestValue($0, of: request)
        }
        guard followsRules else {
            return CacheWrite(entry: (200..<300).contains(status) ? .store : .keep, meta: record.encoded())
        }
        let method = request.method.uppercased()
        var write = CacheWrite(entry: .keep, meta: record.encoded())
        if !Self.isSafe(method) {
            guard (200..<400).contains(status) else { return write }
            invalidate(&write, key: key, request: request, headers: headers)
            // A POST's answer with explicit freshness whose Content-Location
            // is the request's own URL stands for a later GET of it (RFC
            // 9110 section 9.3.3), when the load keys by URL.
            if method == "POST", (200..<300).contains(status), status != 206, !control.noStore,
               control.maxAgeSeconds != nil || headers.first("expires") != nil, key == Array(request.url.utf8),
               let location = headers.first("content-location"),
               HTTPURL.resolve(String(decoding: location, as: UTF8.self), against: request.url) == request.url {
                write.entry = .store
            }
            return write
        }
        guard method == "GET", request.body.isEmpty else { return write }
        let understood = [200, 203, 204, 300, 301, 302, 303, 307, 308, 404, 405, 410, 414, 501].contains(status)
            || (200..<300).contains(status) && status != 206
        if control.mustUnderstand && !understood { return CacheWrite(entry: .remove, meta: write.meta) }
        let noStore = (control.noStore && !(control.mustUnderstand && understood)) || askedControl(request).noStore
        if noStore {
            write.entry = .remove
            return write
        }
        let storable = status != 206 && status >= 200
            && ((200..<300).contains(status) || HTTPCacheRecord.isHeuristicallyCacheable(status)
                || control.isPublic || control.maxAgeSeconds != nil || headers.first("expires") != nil)
        guard storable else { return write }
        write.entry = .store
        if !record.vary.isEmpty && !record.varyAll {
            write.alsoStoredUnder = [Self.variantKey(key, vary: record.vary)]
        }
        return write
    }

    /// Adds to `write` the removals an unsafe method's success makes.
    private func invalidate(_ write: inout CacheWrite, key: [UInt8], request: HTTPRequest, headers: HTTPHeaderLines) {
        write.removes.append(key)
        write.removesPrefixes.append(key + [0])
        guard key == Array(request.url.utf8) else { return }
        for name in ["location", "content-location"] {
            guard let value = headers.first(name),
                  let target = HTTPURL.resolve(String(decoding: value, as: UTF8.self), against: request.url),
                  HTTPURL.origin(of: target) == HTTPURL.origin(of: request.url)
            else { continue }
            let targetKey = Array(target.utf8)
            write.removes.append(targetKey)
            write.removesPrefixes.append(targetKey + [0])
        }
    }
}
