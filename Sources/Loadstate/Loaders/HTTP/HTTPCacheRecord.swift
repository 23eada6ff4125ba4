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
    /// The request header fields `Vary` named (lower case) and the values
    /// the stored request had for them (nil: it had none).
    var vary: [Varied] = []

    struct Varied: Equatable {
        var name: [UInt8]
        var value: [UInt8]?
    }

    private enum Tag: UInt8 {
        case etag = 1, lastModified, lifetime, initialAge, flags, staleWhileRevalidate, staleIfError, varied
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

    /// Everything a response received at `nowMs` says: its validators, its
    /// freshness, and the values `requestValue` gives for the fields its
    /// `Vary` names.
    init(headers: HTTPHeaderLines, control: HTTPCacheControl, nowMs: UInt64,
         requestValue: ([UInt8]) -> [UInt8]?) {
        self.init(headers: headers)
        let date = headers.first("date").flatMap { HTTPDate.secondsSinceEpoch(Array($0)) }.map(Self.ms)
        let apparentAge = date.map { nowMs > $0 ? nowMs - $0 : 0 } ?? 0
        let ageHeader = headers.first("age").flatMap(RetryAfter.digits)
            .map { Self.ms(min($0, HTTPCacheControl.deltaSecondsMax)) } ?? 0
        initialAgeMs = max(apparentAge, ageHeader)
        if let maxAge = control.maxAgeSeconds {
            lifetimeMs = Self.ms(maxAge)
        } else if let expires = headers.first("expires") {
            // An Expires that does not parse ("0", garbage) is in the past
            // (RFC 9111 section 5.3).
            let at = HTTPDate.secondsSinceEpoch(Array(expires)).map(Self.ms) ?? 0
            let base = date ?? nowMs
            lifetimeMs = at > base ? at - base : 0
        }
        noCache = control.noCache
        mustRevalidate = control.mustRevalidate
        staleWhileRevalidateMs = control.staleWhileRevalidateSeconds.map(Self.ms) ?? 0
        staleIfErrorMs = control.staleIfErrorSeconds.map(Self.ms) ?? 0
        for value in headers.values("vary") {
            HTTPCacheControl.directives(value) { name, _ in
                let lower = name.map(HTTPHeaderLines.lower)
                if lower == [UInt8(ascii: "*")] {
                    varyAll = true
                } else if !vary.contains(where: { $0.name == lower }) {
                    vary.append(Varied(name: lower, value: requestValue(lower)))
                }
            }
        }
    }

    private static func validator(_ value: ArraySlice<UInt8>) -> [UInt8]? {
        value.count <= validatorMax && HTTPHeaderLines.isSendable(value) ? Array(value) : nil
    }

    /// Seconds as milliseconds, saturated.
    private static func ms(_ seconds: UInt64) -> UInt64 {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return overflow ? .max : product
    }

    /// Whether there is something to revalidate with.
    var hasValidators: Bool { etag != nil || lastModified != nil }

    /// The request header lines that ask the server to answer 304 when
    /// the stored response is still current.
    var conditionalHeaders: [String] {
        var lines: [String] = []
        if let etag { lines.append("If-None-Match: " + String(decoding: etag, as: UTF8.self)) }
        if let lastModified { lines.append("If-Modified-Since: " + String(decoding: lastModified, as: UTF8.self)) }
        return lines
    }

    /// Whether a later request, whose values for header fields
    /// `requestValue` gives, is answered by this response (RFC 9111 section 4.1).
    func matches(requestValue: ([UInt8]) -> [UInt8]?) -> Bool {
        !varyAll && vary.allSatisfy { requestValue($0.name) == $0.value }
    }

    /// The response's age at `nowMs` when it was stored at `storedAtMs`.
    func age(storedAtMs: UInt64, nowMs: UInt64) -> UInt64 {
        let resident = nowMs > storedAtMs ? nowMs - storedAtMs : 0
        let (sum, overflow) = resident.addingReportingOverflow(initialAgeMs)
        return overflow ? .max : sum
    }

    /// How the stored response serves a load at `nowMs`; nil when it gave
    /// no explicit lifetime (the load's own fresh time decides).
    func judgement(storedAtMs: UInt64, nowMs: UInt64) -> CacheJudgement? {
        if noCache { return .stale }
        guard let lifetimeMs else { return nil }
        let age = age(storedAtMs: storedAtMs, nowMs: nowMs)
        if age < lifetimeMs { return .fresh }
        if !mustRevalidate && age - lifetimeMs < staleWhileRevalidateMs { return .staleWhileRevalidate }
        return .stale
    }

    /// Whether the stored response may stand in for a failed load at
    /// `nowMs` (`stale-if-error`, unless `no-cache` or `must-revalidate`
    /// forbid serving it stale).
    func servesOnError(storedAtMs: UInt64, nowMs: UInt64) -> Bool {
        guard staleIfErrorMs > 0, !noCache, !mustRevalidate, let lifetimeMs else { return false }
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
        let flags = (noCache ? 1 : 0) | (mustRevalidate ? 2 : 0) | (varyAll ? 4 : 0)
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
            case nil: continue
            }
        }
    }
}
