/// What the http loader keeps beside a response it stores in a cache
/// (`CacheEntry.meta`): the validators it revalidates the entry with, and
/// what the response's `Cache-Control`, `Expires`, `Date`, `Age` and
/// `Vary` said about its use (RFC 9111, as a private cache).
///
/// Encoded as "LHC1", then items: a tag byte, a u32 length (little-endian)
/// and that many bytes. Readers skip items whose tag they do not know, so
/// later versions may add items; a record that does not parse counts as
/// none (the stored headers are read for validators instead, and the
/// load's own ages decide freshness).
struct HTTPCacheRecord: Equatable {
    /// The response's `ETag`, sent back as `If-None-Match`.
    var etag: [UInt8]?
    /// The response's `Last-Modified`, sent back as `If-Modified-Since`.
    var lastModified: [UInt8]?
    /// How long the response is fresh (`max-age`, else `Expires` minus
    /// `Date`); nil when it gave no explicit lifetime.
    var lifetimeMs: UInt64?
    /// Its age when it was stored (RFC 9111 section 4.2.3: the larger of
    /// `Age` and the time since its `Date`).
    var initialAgeMs: UInt64 = 0
    /// `no-cache`: it must be revalidated before every use.
    var noCache = false
    /// `must-revalidate`: once stale, it is never served without the server.
    var mustRevalidate = false
    /// `stale-while-revalidate` and `stale-if-error`, in ms (0: none).
    var staleWhileRevalidateMs: UInt64 = 0
    var staleIfErrorMs: UInt64 = 0
    /// `Vary: *`: no later request matches it.
    var varyAll = false
    /// The lifetime is a guess from `Last-Modified` (RFC 9111 section 4.2.2).
    var isHeuristic = false
    /// `no-cache="a, b"`: fields (lower case) not served from the cache.
    var noCacheFields: [[UInt8]] = []
    /// The request header fields `Vary` named (lower case) and the values
    /// the stored request had for them (nil: it had none).
    var vary: [Varied] = []

    struct Varied: Equatable {
        var name: [UInt8]
        var value: [UInt8]?
    }

    private enum Tag: UInt8 {
        case etag = 1, lastModified, lifetime, initialAge, flags, staleWhileRevalidate, staleIfError, varied
        case noCacheField
    }

    private static let magic = Array("LHC1".utf8)
    /// Validators longer than this are not kept (a header line is at most
    /// `HTTPLoader.headersMax` anyway).
    static let validatorMax = 8 << 10

    init(etag: [UInt8]? = nil, lastModified: [UInt8]? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// The validators of a response's header lines: each kept only when it
    /// can be sent back as it is (no control character, at most
    /// `validatorMax` bytes).
    init(headers: HTTPHeaderLines) {
        etag = headers.first("etag").flatMap(Self.validator)
        lastModified = headers.first("last-modified").flatMap(Self.validator)
    }

    /// Everything a response of `status` received at `nowMs` says: its
    /// validators, its freshness (explicit, or guessed from
    /// `Last-Modified`, see `heuristicLifetimeMs`), and the values
    /// `requestValue` gives for the fields its `Vary` names (normalised,
    /// see `normalised`).
    init(headers: HTTPHeaderLines, control: HTTPCacheControl, status: Int32 = 200, nowMs: UInt64,
         requestValue: ([UInt8]) -> [UInt8]?) {
        self.init(headers: headers)
        let date = headers.first("date").flatMap { HTTPDate.secondsSinceEpoch(Array($0)) }.map(Self.ms)
        let apparentAge = date.map { nowMs > $0 ? nowMs - $0 : 0 } ?? 0
        let ageHeader = headers.first("age").flatMap(Self.ageSeconds).map(Self.ms) ?? 0
        initialAgeMs = max(apparentAge, ageHeader)
        if let maxAge = control.maxAgeSeconds {
            lifetimeMs = Self.ms(maxAge)
        } else if let expires = headers.first("expires") {
            // An Expires that does not parse ("0", garbage), or that comes
            // more than once, is in the past (RFC 9111 section 5.3).
            let at = headers.values("expires").count == 1
                ? HTTPDate.secondsSinceEpoch(Array(expires)).map(Self.ms) ?? 0 : 0
            let base = date ?? nowMs
            lifetimeMs = at > base ? at - base : 0
        } else if let modified = lastModified.flatMap(HTTPDate.secondsSinceEpoch).map(Self.ms),
                  Self.isHeuristicallyCacheable(status) || control.isPublic {
            let base = date ?? nowMs
            lifetimeMs = min((base > modified ? base - modified : 0) / 10, Self.heuristicLifetimeMaxMs)
            isHeuristic = true
        }
        noCache = control.noCache
        mustRevalidate = control.mustRevalidate || control.proxyRevalidate
        staleWhileRevalidateMs = control.staleWhileRevalidateSeconds.map(Self.ms) ?? 0
        staleIfErrorMs = control.staleIfErrorSeconds.map(Self.ms) ?? 0
        noCacheFields = control.noCacheFields
        for value in headers.values("vary") {
            HTTPCacheControl.directives(value) { name, _ in
                let lower = name.map(HTTPHeaderLines.lower)
                if lower == [UInt8(ascii: "*")] {
                    varyAll = true
                } else if !vary.contains(where: { $0.name == lower }) {
                    vary.append(Varied(name: lower, value: requestValue(lower).map { Self.normalised($0, of: lower) }))
                }
            }
        }
    }

    /// The heuristic freshness lifetime (RFC 9111 section 4.2.2) of a
    /// response with `Last-Modified` and no explicit lifetime is a tenth of
    /// the time since that modification (measured at `Date`, or arrival),
    /// at most this long: a day.
    static let heuristicLifetimeMaxMs: UInt64 = 24 * 3600 * 1000

    /// The statuses a cache may store and reuse with a heuristic lifetime
    /// (RFC 9110 section 15.1: "heuristically cacheable").
    static func isHeuristicallyCacheable(_ status: Int32) -> Bool {
        [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501].contains(status)
    }

    /// An `Age` value: the first member of the first line, its digits up to
    /// any parameters (`7200;foo=bar` is 7200); nil when that member is
    /// not digits (`-1`, `7200.0`, `abc`: the field is ignored). Saturated
    /// at 2^31 seconds.
    static func ageSeconds(_ value: ArraySlice<UInt8>) -> UInt64? {
        var member = value.prefix { $0 != UInt8(ascii: ",") }
        member = member.prefix { $0 != UInt8(ascii: ";") }
        return RetryAfter.digits(HTTPHeaderLines.trimmed(member)).map { min($0, HTTPCacheControl.deltaSecondsMax) }
    }

    /// A request field's value as `Vary` compares it (RFC 9111 section
    /// 4.1): list members trimmed and joined by ","; for the fields whose
    /// members are case-insensitive tokens in no order (`Accept-Language`,
    /// `Accept-Encoding`, `Accept-Charset`), also in lower case and sorted.
    static func normalised(_ value: [UInt8], of name: [UInt8]) -> [UInt8] {
        var members: [[UInt8]] = []
        HTTPCacheControl.directives(value[...]) { item, argument in
            var member = Array(item)
            if let argument {
                member.append(UInt8(ascii: "="))
                member.append(contentsOf: argument)
            }
            // Whitespace around `;` inside a member (`en; q=0.5`).
            member = member.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
                .map { Array(HTTPHeaderLines.trimmed($0[...])) }
                .joined(separator: [UInt8(ascii: ";")]).map { $0 }
            members.append(member)
        }
        if unorderedFields.contains(name) {
            members = members.map { $0.map(HTTPHeaderLines.lower) }.sorted { $0.lexicographicallyPrecedes($1) }
        }
        return Array(members.joined(separator: [UInt8(ascii: ",")]))
    }

    private static let unorderedFields = ["accept-language", "accept-encoding", "accept-charset"].map { Array($0.utf8) }

    private static func validator(_ value: ArraySlice<UInt8>) -> [UInt8]? {
        value.count <= validatorMax && HTTPHeaderLines.isSendable(value) ? Array(value) : nil
    }

    /// Seconds as milliseconds, saturated.
    private static func ms(_ seconds: UInt64) -> UInt64 {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? .max : product
    }

    /// Whether a response with these header lines (a HEAD's answer) is of
    /// the same representation (RFC 9111 section 4.3.5): its `ETag` and
    /// `Last-Modified`, where both have one, are the stored ones.
    func agrees(with headers: HTTPHeaderLines) -> Bool {
        let tag = headers.first("etag").map(Array.init)
        let modified = headers.first("last-modified").map(Array.init)
        if let etag, let tag, etag != tag { return false }
        if let lastModified, let modified, lastModified != modified { return false }
        return true
    }

    /// Whether there is something to revalidate with.
    var hasValidators: Bool { etag != nil || lastModified != nil }

    /// The request header lines that ask the server to answer 304 when
    /// the stored response is still current.
    var conditionalHeaders: [String] {
        var lines: [String] = []
        if let etag {
            // An entity tag the server sent without its quotes goes back
            // with them (RFC 9110 section 8.8.3).
            let tag = String(decoding: etag, as: UTF8.self)
            let quoted = tag.hasSuffix("\"") && (tag.hasPrefix("\"") || tag.hasPrefix("W/\"")) && tag.count >= 2
            lines.append("If-None-Match: " + (quoted ? tag : "\"" + tag + "\""))
        }
        if let lastModified { lines.append("If-Modified-Since: " + String(decoding: lastModified, as: UTF8.self)) }
        return lines
    }

    /// Whether a later request, whose values for header fields
    /// `requestValue` gives, is answered by this response (RFC 9111
    /// section 4.1), values compared normalised.
    func matches(requestValue: ([UInt8]) -> [UInt8]?) -> Bool {
        !varyAll && vary.allSatisfy { varied in
            requestValue(varied.name).map { Self.normalised($0, of: varied.name) } == varied.value
        }
    }

    /// The response's age at `nowMs` when it was stored at `storedAtMs`.
    func age(storedAtMs: UInt64, nowMs: UInt64) -> UInt64 {
        let resident = nowMs > storedAtMs ? nowMs - storedAtMs : 0
        let (sum, overflow) = resident.addingReportingOverflow(initialAgeMs)
        return overflow ? .max : sum
    }

    /// How the stored response serves a request.
    struct Verdict: Equatable {
        var judgement: CacheJudgement
        /// What the cache tells of it (`Cache-Status`'s detail).
        var detail: Detail
        /// Its age.
        var ageMs: UInt64
        /// Its lifetime less its age: how long it stays fresh (negative: stale).
        var ttlMs: Int64

        enum Detail: String {
            case fresh, heuristic, stale
        }
    }

    /// How the stored response serves a request that asks `asked` (its own
    /// `Cache-Control`) at `nowMs` (RFC 9111 sections 4.2, 4.2.4 and
    /// 5.2.1). Without a lifetime of its own (or a heuristic one, when
    /// `heuristics` is off), it is fresh while it was stored less than
    /// `freshMs` ago (the load's own fresh time).
    func verdict(storedAtMs: UInt64, nowMs: UInt64, asked: HTTPCacheControl = HTTPCacheControl(),
                 heuristics: Bool = true, freshMs: UInt64 = 0) -> Verdict {
        let age = age(storedAtMs: storedAtMs, nowMs: nowMs)
        let lifetime: UInt64
        var detail = Verdict.Detail.fresh
        var ownAge = age
        if let lifetimeMs, heuristics || !isHeuristic {
            lifetime = lifetimeMs
            if isHeuristic { detail = .heuristic }
        } else {
            lifetime = freshMs
            ownAge = nowMs > storedAtMs ? nowMs - storedAtMs : 0
        }
        let ttl = lifetime >= ownAge ? Int64(clamping: lifetime - ownAge) : -Int64(clamping: ownAge - lifetime)
        var verdict = Verdict(judgement: .stale, detail: .stale, ageMs: age, ttlMs: ttl)
        var fresh = ownAge < lifetime
        if let maxAge = asked.maxAgeSeconds, age > Self.ms(maxAge) { fresh = false }
        if let minFresh = asked.minFreshSeconds, fresh, lifetime - ownAge < Self.ms(minFresh) { fresh = false }
        if noCache || asked.noCache { return verdict }
        if fresh {
            verdict.judgement = .fresh
            verdict.detail = detail
            return verdict
        }
        if mustRevalidate { return verdict }
        let staleness = ownAge > lifetime ? ownAge - lifetime : 0
        if let maxStale = asked.maxStaleSeconds, asked.maxAgeSeconds == nil || age <= Self.ms(asked.maxAgeSeconds ?? 0),
           staleness <= Self.ms(maxStale) {
            // The client accepts it stale (max-stale): served as it is.
            verdict.judgement = .fresh
            return verdict
        }
        if staleness < staleWhileRevalidateMs { verdict.judgement = .staleWhileRevalidate }
        return verdict
    }

    /// Whether the stored response may stand in for a failed load at
    /// `nowMs`: within its `stale-if-error` time after it turned stale, or,
    /// when `disconnected` (the server could not be reached or closed the
    /// connection without an answer, RFC 9111 section 4.2.4), however
    /// stale; never when `no-cache`, `must-revalidate` or
    /// `proxy-revalidate` forbid serving it stale.
    func servesOnError(storedAtMs: UInt64, nowMs: UInt64, disconnected: Bool = false) -> Bool {
        guard !noCache, !mustRevalidate else { return false }
        if disconnected { return true }
        guard staleIfErrorMs > 0, let lifetimeMs else { return false }
        let age = age(storedAtMs: storedAtMs, nowMs: nowMs)
        return age < lifetimeMs || age - lifetimeMs < staleIfErrorMs
    }

    func encoded() -> [UInt8] {
        var bytes = Self.magic
        func item(_ tag: Tag, _ value: [UInt8]?) {
            guard let value else { return }
            bytes.append(tag.rawValue)
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: value.count).littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: value)
        }
        func number(_ tag: Tag, _ value: UInt64?) {
            item(tag, value.map { v in withUnsafeBytes(of: v.littleEndian) { Array($0) } })
        }
        item(.etag, etag)
        item(.lastModified, lastModified)
        number(.lifetime, lifetimeMs)
        if initialAgeMs > 0 { number(.initialAge, initialAgeMs) }
        let flags = (noCache ? 1 : 0) | (mustRevalidate ? 2 : 0) | (varyAll ? 4 : 0) | (isHeuristic ? 8 : 0)
        if flags != 0 { number(.flags, UInt64(flags)) }
        if staleWhileRevalidateMs > 0 { number(.staleWhileRevalidate, staleWhileRevalidateMs) }
        if staleIfErrorMs > 0 { number(.staleIfError, staleIfErrorMs) }
        for varied in vary {
            // The name's length, the name, then the value (absent: no bytes and a 0 marker).
            var v: [UInt8] = []
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: varied.name.count).littleEndian) { v.append(contentsOf: $0) }
            v.append(contentsOf: varied.name)
            v.append(varied.value == nil ? 0 : 1)
            v.append(contentsOf: varied.value ?? [])
            item(.varied, v)
        }
        for field in noCacheFields { item(.noCacheField, field) }
        return bytes
    }

    /// Nil when `bytes` is not a record (empty metadata, another format, cut short).
    init?<C: Collection<UInt8>>(decoding bytes: C) where C.Index == Int {
        let b = ArraySlice(bytes)
        guard b.starts(with: Self.magic) else { return nil }
        var at = b.startIndex + Self.magic.count
        func u32(_ s: ArraySlice<UInt8>, _ from: Int) -> Int {
            var n = 0
            for i in 0..<4 { n |= Int(s[from + i]) << (8 * i) }
            return n
        }
        while at < b.endIndex {
            guard b.endIndex - at >= 5 else { return nil }
            let tag = b[at]
            let length = u32(b, at + 1)
            at += 5
            guard b.endIndex - at >= length else { return nil }
            let value = b[at..<(at + length)]
            at += length
            var number: UInt64? {
                guard value.count == 8 else { return nil }
                return value.reversed().reduce(0) { $0 << 8 | UInt64($1) }
            }
            switch Tag(rawValue: tag) {
            case .etag?: etag = Self.validator(value)
            case .lastModified?: lastModified = Self.validator(value)
            case .lifetime?: lifetimeMs = number
            case .initialAge?: initialAgeMs = number ?? 0
            case .flags?:
                let flags = number ?? 0
                noCache = flags & 1 != 0
                mustRevalidate = flags & 2 != 0
                varyAll = flags & 4 != 0
                isHeuristic = flags & 8 != 0
            case .staleWhileRevalidate?: staleWhileRevalidateMs = number ?? 0
            case .staleIfError?: staleIfErrorMs = number ?? 0
            case .varied?:
                guard value.count >= 5 else { return nil }
                let nameLength = u32(value, value.startIndex)
                guard value.count - 4 >= nameLength + 1 else { return nil }
                let nameStart = value.startIndex + 4
                let name = Array(value[nameStart..<(nameStart + nameLength)])
                let present = value[nameStart + nameLength] != 0
                vary.append(Varied(name: name, value: present ? Array(value[(nameStart + nameLength + 1)...]) : nil))
            case .noCacheField?: noCacheFields.append(Array(value))
            case nil: continue
            }
        }
    }
}
