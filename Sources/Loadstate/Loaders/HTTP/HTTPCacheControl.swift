/// The `Cache-Control` directives (RFC 9111 section 5.2) the http loader
/// acts on, read from every `Cache-Control` line of a message: a
/// response's (section 5.2.2) or a request's own (section 5.2.1).
///
/// Parsing is strict where a loose reading would reuse a response its
/// sender did not mean to be reused, and bounded:
/// - directives are split at commas outside quoted strings; names compare
///   without regard to case;
/// - a directive with whitespace around its `=` (`max-age = 60`) is not
///   one: it is ignored;
/// - a delta-seconds argument is read from its leading ASCII digits
///   (`3600`, `003600`, and `3600.5` or `100a` as 3600 and 100), with or
///   without quotes, saturated at 2^31 seconds (RFC 9111 section 1.2.2);
///   an argument that does not begin with a digit (`-1`, `a3600`,
///   `'3600'`) makes the directive count as absent, but for `max-age`,
///   whose malformed value makes the response stale (section 4.2.1);
/// - when a directive comes more than once, its first occurrence counts
///   (section 4.2.1).
struct HTTPCacheControl: Equatable {
    /// `max-age`: in a response, its freshness lifetime; in a request, the
    /// oldest response the client accepts. 0 when it is given but does not
    /// parse (a stale response, RFC 9111 section 4.2.1).
    var maxAgeSeconds: UInt64?
    var staleWhileRevalidateSeconds: UInt64?
    var staleIfErrorSeconds: UInt64?
    var noStore = false
    /// `no-cache` without field names: revalidate before every use.
    var noCache = false
    /// `no-cache="a, b"`: the response may be used without revalidation,
    /// but the fields named (lower case) must not: the cache does not
    /// store them (RFC 9111 section 5.2.2.4).
    var noCacheFields: [[UInt8]] = []
    var mustRevalidate = false
    /// `proxy-revalidate`: for shared caches; a private cache refuses to
    /// serve such a response stale all the same (the cautious reading).
    var proxyRevalidate = false
    /// `must-understand`: store only responses of a status the cache
    /// understands, whatever `no-store` says (RFC 9111 section 5.2.2.3).
    var mustUnderstand = false
    /// `public`: cacheable whatever its status (section 5.2.2.9).
    var isPublic = false
    // Request directives (section 5.2.1).
    /// `max-stale`: a stale response is accepted, by at most this many
    /// seconds (`UInt64.max` when it gives no number).
    var maxStaleSeconds: UInt64?
    /// `min-fresh`: a response must stay fresh this much longer.
    var minFreshSeconds: UInt64?
    /// `only-if-cached`: never ask the server.
    var onlyIfCached = false

    /// RFC 9111 section 1.2.2: delta-seconds past 2^31 count as 2^31.
    static let deltaSecondsMax: UInt64 = 1 << 31

    init() {}

    init(_ values: [ArraySlice<UInt8>]) {
        var seen: [String] = []
        for value in values {
            Self.directives(value, strict: true) { name, argument in
                let lower = String(decoding: name.map(HTTPHeaderLines.lower), as: UTF8.self)
                guard !seen.contains(lower) else { return }
                seen.append(lower)
                apply(lower, argument)
            }
        }
    }

    private mutating func apply(_ name: String, _ argument: ArraySlice<UInt8>?) {
        let seconds = argument.flatMap(Self.deltaSeconds)
        switch name {
        case "max-age": maxAgeSeconds = seconds ?? 0
        case "stale-while-revalidate": staleWhileRevalidateSeconds = seconds
        case "stale-if-error": staleIfErrorSeconds = seconds
        case "no-store": noStore = true
        case "no-cache":
            if let argument, !argument.isEmpty {
                Self.directives(argument, strict: false) { field, _ in
                    noCacheFields.append(field.map(HTTPHeaderLines.lower))
                }
            } else {
                noCache = true
            }
        case "must-revalidate": mustRevalidate = true
        case "proxy-revalidate": proxyRevalidate = true
        case "must-understand": mustUnderstand = true
        case "public": isPublic = true
        case "max-stale": maxStaleSeconds = argument == nil ? .max : seconds
        case "min-fresh": minFreshSeconds = seconds
        case "only-if-cached": onlyIfCached = true
        default: break
        }
    }

    /// The leading ASCII digits of an argument, saturated at
    /// `deltaSecondsMax`; nil when it does not begin with one.
    static func deltaSeconds(_ argument: ArraySlice<UInt8>) -> UInt64? {
        let digits = argument.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return RetryAfter.digits(digits).map { min($0, deltaSecondsMax) }
    }

    /// Calls `body` with the name and argument (quotes removed) of each
    /// directive of one header value. `strict`: a directive with
    /// whitespace before or after its `=` is skipped (RFC 9110 section
    /// 5.6.2 tokens); otherwise that whitespace is trimmed.
    static func directives(_ value: ArraySlice<UInt8>, strict: Bool = false,
                           _ body: (_ name: ArraySlice<UInt8>, _ argument: ArraySlice<UInt8>?) -> Void) {
        var start = value.startIndex
        while start < value.endIndex {
            // The end of this directive: the next comma outside quotes.
            var end = start
            var quoted = false
            while end < value.endIndex {
                let c = value[end]
                if c == UInt8(ascii: "\"") { quoted.toggle() }
                if c == UInt8(ascii: "\\") && quoted && end + 1 < value.endIndex { end += 1 }
                if c == UInt8(ascii: ",") && !quoted { break }
                end += 1
            }
            let item = HTTPHeaderLines.trimmed(value[start..<min(end, value.endIndex)])
            if !item.isEmpty {
                if let equals = item.firstIndex(of: UInt8(ascii: "=")) {
                    let rawName = item[..<equals]
                    let rawArgument = item[(equals + 1)...]
                    let name = HTTPHeaderLines.trimmed(rawName)
                    var argument = HTTPHeaderLines.trimmed(rawArgument)
                    let spaced = name.count != rawName.count || argument.count != rawArgument.count
                    if argument.count >= 2, argument.first == UInt8(ascii: "\""), argument.last == UInt8(ascii: "\"") {
                        argument = argument.dropFirst().dropLast()
                    }
                    if !(strict && spaced) { body(name, argument) }
                } else {
                    body(item, nil)
                }
            }
            start = end < value.endIndex ? end + 1 : end
        }
    }
}
